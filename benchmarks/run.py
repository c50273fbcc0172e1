"""Run the benchmark suite: `python -m benchmarks` or `python benchmarks/run.py`.

    python -m benchmarks                      # everything, writes BENCHMARKS.md
    python -m benchmarks --quick              # few repeats: a smoke test, prints only
    python -m benchmarks --problems mlp,rnn --sizes large --out /tmp/b.md

srcgrad's disk cache is a fresh temporary directory for the run (SRCGRAD_CACHE_DIR).
Every gradient is checked against the hand-written numpy gradient (rtol 1e-6) before it
is timed; a wrong or failing implementation is marked FAIL and not timed. Times are
medians of interleaved timeit batches (warm-up excluded, float64), given for the
hand-written gradient and as ratios to it for everything else.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

if __package__ in (None, ""):          # run as a script: python benchmarks/run.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from benchmarks import impls, latency, problems, report, timing  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "BENCHMARKS.md")

#: (repeats, seconds per timed batch) by mode and size
SETTINGS = {"full": {"small": (21, 0.03), "large": (11, 0.1)},
            "quick": {"small": (3, 0.005), "large": (2, 0.005)}}
MEMORY_KINDS = ("hand", "srcgrad", "tape")


def _csv(s):
    return [x.strip() for x in s.split(",") if x.strip()]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="few repeats and short batches (a smoke test); does not write "
                         "BENCHMARKS.md unless --out is given")
    ap.add_argument("--problems", type=_csv, default=list(problems.NAMES),
                    help=f"comma-separated subset of {','.join(problems.NAMES)}")
    ap.add_argument("--sizes", type=_csv, default=list(problems.SIZE_NAMES),
                    help="comma-separated subset of small,large")
    ap.add_argument("--impls", type=_csv, default=list(impls.KINDS),
                    help=f"comma-separated subset of {','.join(impls.KINDS)} (hand is "
                         "always run: it is the reference)")
    ap.add_argument("--out", default=None,
                    help="Markdown output file (default BENCHMARKS.md at the repository "
                         "root; '' writes nothing)")
    ap.add_argument("--no-latency", action="store_true",
                    help="skip the first-call, cache-hit and dispatch measurements")
    args = ap.parse_args(argv)
    for p in args.problems:
        if p not in problems.NAMES:
            ap.error(f"unknown problem {p!r}")
    for s in args.sizes:
        if s not in problems.SIZE_NAMES:
            ap.error(f"unknown size {s!r}")
    for k in args.impls:
        if k not in impls.KINDS:
            ap.error(f"unknown implementation {k!r}")
    if args.out is None:
        args.out = "" if args.quick else DEFAULT_OUT
    return args


def _short(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:200] if msg else ''}"


def bench_one(problem, size, kinds, mode, log):
    """One row: check every implementation against the hand-written gradient, time the
    ones that agree, measure peak memory. With several hand-written variants the fastest
    is the reference ("hand" in the row)."""
    args = problem.inputs(size)
    row = {"problem": problem.name, "size": size, "desc": problem.describe(size),
           "times": {}, "errors": {}, "mem": {}, "max_err": {}, "hand_label": "",
           "hand_times": {}}
    hand = impls.build("hand", problem, args)
    ref = impls.to_numpy("hand", hand())
    fns = {"hand": hand}
    variants = [f"hand:{v}" for v in problem.hand_variants if v]
    for kind in variants + [k for k in kinds if k != "hand"]:
        try:
            fn = impls.build(kind, problem, args)
            err = impls.max_error(impls.to_numpy(kind, fn()), ref)
        except Exception as e:  # keep going: the table marks it
            row["errors"][kind] = _short(e)
            log(f"  {kind}: FAILED {_short(e)}")
            if os.environ.get("BENCH_TRACEBACK"):
                traceback.print_exc()
            continue
        row["max_err"][kind] = err
        if err > 1.0:
            row["errors"][kind] = (f"wrong gradient: max |got - hand| is {err:.3g} times "
                                   "the tolerance (rtol 1e-6)")
            log(f"  {kind}: WRONG gradient ({err:.3g} x tolerance)")
            continue
        fns[kind] = fn
    repeats, target = SETTINGS[mode][size]
    times = timing.compare(fns, repeats, target)
    hands = [k for k in ["hand"] + variants if k in times]
    best = min(hands, key=times.get)
    if len(hands) > 1:
        row["hand_times"] = {impls.label(k): times[k] for k in hands}
        row["hand_label"] = best[len("hand:"):] if best != "hand" else ""
    fns["hand"], t_best = fns[best], times[best]
    for k in hands:
        del times[k]
    times["hand"] = t_best
    row["times"] = times
    for kind in MEMORY_KINDS:
        if kind in fns:
            row["mem"][kind] = timing.peak_memory(fns[kind])
    return row


def bench_latency(problem, mode):
    reps = 1 if mode == "quick" else 3
    d = {}
    try:
        d.update(latency.fresh_process(problem, reps))
        d["first_warm"], d["first_warm_cpu"] = latency.first_call_warm(
            problem, 3 if mode == "quick" else 7)
        d.update(latency.dispatch(problem, 3 if mode == "quick" else 15,
                                  0.005 if mode == "quick" else 0.02))
    except Exception as e:
        d = {"error": _short(e)}
    return d


def gpu_section() -> list:
    """BENCHMARKS.md's GPU section: the last table `python -m benchmarks.gpu` wrote on a
    machine with a GPU (benchmarks/GPU.md), measured separately from the rest."""
    from .gpu import DEFAULT_OUT

    try:
        with open(DEFAULT_OUT, encoding="utf-8") as f:
            body = f.read().split("\n", 1)[1].strip()  # (without its title)
    except (OSError, IndexError):
        return []
    from .gpu import GPU_SIZES
    from .problems import get

    sizes = ", ".join(f"{name} {get(name).module.describe(**size)}"
                      for name, size in GPU_SIZES.items())
    return ["", "## GPU", "", "Measured separately, on a machine with a GPU (this run "
            "measures none; benchmarks/GPU.md holds the last table), at the sizes "
            f"{sizes}:", "", body]


def render(rows, lat, kinds, mode, argv, elapsed, start=None):
    h1, b1 = report.speed_table(rows, kinds)
    h2, b2 = report.latency_table(lat)
    tg = report.targets(rows, lat)
    md = ["# srcgrad benchmarks", ""]
    md.append(f"Generated by `python -m benchmarks{' ' + ' '.join(argv) if argv else ''}`"
              f" ({mode} mode, {elapsed:.0f} s). Re-run it to refresh this file.")
    md += ["", "## Machine", ""]
    md += [f"- {k}: {v}" for k, v in report.machine(kinds, start)]
    md += ["", "## Gradient time and memory", "",
           "Each gradient is first checked against the hand-written numpy gradient "
           "(rtol 1e-6); FAIL marks an error or a wrong gradient (listed below), which is "
           "then not timed. `hand-written` is the median time of one call of the "
           "hand-written gradient; the other columns are median times as multiples of it "
           "(lower is better), measured in the same run, interleaved, float64, warm-up "
           "excluded, the garbage collector enabled. srcgrad is the cached generated "
           "gradient called through its transformed object (compiled by the current "
           "compiler into a private temporary disk cache); the tape and PyTorch create "
           "their leaf tensors (a copy of the parameters) in each call; JAX is "
           "`jax.jit(jax.grad(loss))` on device arrays, with `block_until_ready`. Peak "
           "memory is the tracemalloc peak of one call above the memory before it, "
           "result included (only numpy-based implementations can be traced).", ""]
    md.append(report.md_table(h1, b1))
    hv = report.hand_variants(rows)
    if hv:
        md += ["", "Problems with several hand-written gradients are timed with all of "
               "them; the fastest is the reference (named in the table when it is not "
               "`grad_hand`):", ""] + [f"- {x}" for x in hv]
    if lat:
        md += ["", "## srcgrad's fixed costs", "",
               "First call with the disk cache off (`SRCGRAD_CACHE_DIR=\"\"`): the whole "
               "pipeline and one call on the small inputs, in a fresh process (median of "
               "fresh processes) and in a warm process (a new transformed object after "
               "others were compiled). Wall time, with the process's CPU time after "
               "the slash (where other processes compete for the cores, the wall time "
               "also counts waiting for one). Disk-cache hit: one process fills a temporary "
               "cache directory, a fresh process times its first call. All three "
               "include one run of the gradient on the small inputs; `call (small)` is "
               "that run's steady time (the generated function alone). Dispatch overhead: "
               "calling the transformed object whose generated function (`_call`) was "
               "replaced by a stub that returns at once, minus calling the stub; the last "
               "column is the plain difference between calling the transformed object and "
               "its generated function on the small inputs (the same overhead, but within "
               "the noise of the gradient's own time). Minimum over interleaved batches.",
               ""]
        md.append(report.md_table(h2, b2, 1))
    if tg:
        md += ["", "## Targets", "", "| target | worst measured | where | met |",
               "|---|---:|---|---|"]
        md += [f"| {t} | {w} | {p} | {'yes' if ok else '**no**'} |" for t, w, p, ok in tg]
    fails = report.failures(rows, lat)
    if fails:
        md += ["", "## Failures", ""] + [f"- {f}" for f in fails]
    md += gpu_section()
    text = ["", report.text_table(h1, b1)]
    if lat:
        text += ["", report.text_table(h2, b2, 1)]
    if tg:
        text += ["", report.text_table(["target", "worst", "where", "met"],
                                       [[t, w, p, "yes" if ok else "NO"]
                                        for t, w, p, ok in tg], 1)]
    if fails:
        text += ["", "failures:"] + [f"  {f}" for f in fails]
    return "\n".join(md) + "\n", "\n".join(text)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    mode = "quick" if args.quick else "full"
    kinds = ["hand"] + [k for k in impls.KINDS if k != "hand" and k in args.impls
                        and impls.available(k)]
    missing = [k for k in args.impls if k not in kinds and k != "hand"]

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if missing:
        log(f"not installed, skipped: {', '.join(missing)}")
    start = report.start_state()
    t0 = time.perf_counter()
    old_cache = os.environ.get("SRCGRAD_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="srcgrad-bench-") as cache:
        # a private disk cache: what is timed is what the current compiler generates,
        # never a module another version left in ~/.cache/srcgrad
        os.environ["SRCGRAD_CACHE_DIR"] = os.path.join(cache, "cache")
        try:
            rows, lat = _run(args, kinds, mode, log)
        finally:
            if old_cache is None:
                os.environ.pop("SRCGRAD_CACHE_DIR", None)
            else:
                os.environ["SRCGRAD_CACHE_DIR"] = old_cache
    md, text = render(rows, lat, kinds, mode, argv, time.perf_counter() - t0, start)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
        log(f"wrote {args.out}")
    return 0


def _run(args, kinds, mode, log):
    rows = []
    for p in problems.all_problems(args.problems):
        for size in args.sizes:
            log(f"{p.name} {size} ({p.describe(size)})")
            rows.append(bench_one(p, size, kinds, mode, log))
    lat = {}
    if not args.no_latency and "srcgrad" in kinds:
        for p in problems.all_problems(args.problems):
            log(f"{p.name}: first call, cache hit, dispatch")
            lat[p.name] = bench_latency(p, mode)
    return rows, lat


if __name__ == "__main__":
    sys.exit(main())
