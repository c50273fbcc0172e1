"""The machine description, the result tables (terminal and Markdown) and the targets."""
from __future__ import annotations

import datetime
import os
import platform
import sys

import numpy as np

from . import impls

#: the performance targets of srcgrad this suite checks
TARGETS = {
    "large_time": 1.05,     # srcgrad / hand-written time, large sizes
    "large_mem": 1.10,      # srcgrad / hand-written peak memory, large sizes
    "small_time": 1.20,     # srcgrad / hand-written time, small sizes
    "dispatch": 1e-6,       # seconds
    "first_call": 30e-3,    # seconds, disk cache off
    "cache_hit": 3e-3,      # seconds, fresh process
    "tape_vs_torch": 2.0,   # tape / PyTorch eager time, small sizes
    # the numba backend's (srcgrad's numba / reference time)
    "numba_small": 0.5,     # ... / hand-written, small sizes
    "numba_vs_jax": 1.0,    # ... / JAX jit: small sizes, and the elementwise problems large
    "numba_large": 1.0,     # ... / hand-written, the problems with matmuls, large sizes
}
#: the elementwise problems (the others' time goes mostly to matmuls)
ELEMENTWISE = ("poly", "rosenbrock", "chain")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:
        return "?"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _revision() -> str:
    """The repository's commit (and whether srcgrad/ or runtime/ differ from it)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "srcgrad", "runtime"],
                               cwd=root, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    if not rev:
        return "?"
    return rev + (" with uncommitted changes in srcgrad/ or runtime/" if dirty else "")


def start_state() -> dict:
    """What is recorded when the run starts: the load and the commit measured."""
    return {"load": load_average(), "revision": _revision()}


def machine(kinds, start=None) -> list:
    """(label, value) pairs describing where and with what the suite ran; `start` is
    `start_state()` taken when the run began."""
    start = start or {}
    load = start.get("load")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    rows = [
        ("date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")),
        ("CPU", _cpu_model()),
        ("cores", f"{os.cpu_count()} ({usable} usable by this process)"),
        ("OS", platform.platform()),
        ("Python", sys.version.split()[0]),
        ("numpy", f"{np.__version__}, BLAS: {_blas()}"),
        ("commit", start.get("revision") or _revision()),
    ]
    env = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                           "OMP_NUM_THREADS", "MKL_NUM_THREADS")
           if k in os.environ]
    rows.append(("environment", ", ".join(env) if env else
                 "OPENBLAS_CORETYPE and the thread-count variables unset"))
    end = load_average()
    if load is not None and end is not None:
        rows.append(("load average (1 min)", f"{load:.2f} at the start, {end:.2f} at the end "
                     "(other processes share the cores: a load above the core count "
                     "means the timings were taken on a busy machine)"))
    peers = [f"{impls.LABELS[k]} {impls.version(k)}" for k in kinds
             if k in impls.PEERS + impls.OPTIONAL]
    rows.append(("peers", ", ".join(peers) if peers
                 else "none run (not installed or not asked for)"))
    return rows


# ---- formatting ------------------------------------------------------------------------------

def fmt_time(s) -> str:
    if s is None:
        return "-"
    if s < 0:
        return "-" + fmt_time(-s)
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(b) -> str:
    if b is None:
        return "-"
    if b < 1024:
        return f"{b} B"
    if b < 1024 ** 2:
        return f"{b / 1024:.1f} KiB"
    return f"{b / 1024 ** 2:.1f} MiB"


def fmt_ratio(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _cell(row, kind):
    if kind in row["errors"]:
        return "FAIL"
    t, ref = row["times"].get(kind), row["times"].get("hand")
    if t is None or not ref:
        return "-"
    return fmt_ratio(t / ref)


def _mem_ratio(row, kind):
    m, ref = row["mem"].get(kind), row["mem"].get("hand")
    if kind in row["errors"]:
        return "FAIL"
    if m is None or not ref:
        return "-"
    return fmt_ratio(m / ref)


def speed_table(rows, kinds):
    """(header, body rows) of the main table."""
    others = [k for k in kinds if k != "hand"]
    header = (["problem", "size", "hand-written"] + [impls.LABELS[k] for k in others]
              + ["peak mem: hand-written", "srcgrad / hand", "tape / hand"])
    body = []
    for r in rows:
        hand = fmt_time(r["times"].get("hand"))
        if r.get("hand_label"):
            hand += f" ({r['hand_label']})"
        body.append([r["problem"], f"{r['size']} ({r['desc']})", hand]
                    + [_cell(r, k) for k in others]
                    + [fmt_bytes(r["mem"].get("hand")), _mem_ratio(r, "srcgrad"),
                       _mem_ratio(r, "tape")])
    return header, body


def latency_table(lat):
    header = ["problem", "first call, fresh process", "first call, warm process",
              "disk-cache hit, fresh process", "call (small)", "dispatch overhead",
              "transformed − generated (end to end)"]
    body = []
    for name, d in lat.items():
        if "error" in d:
            body.append([name] + ["FAIL"] * 3 + ["-"] * 3)
            continue
        hit = (f"{fmt_time(d['hit'])} / {fmt_time(d['hit_cpu'])}"
               + ("" if d["hit_compiles"] == 0 else " (recompiled!)"))
        body.append([name, f"{fmt_time(d['first_fresh'])} / {fmt_time(d['first_fresh_cpu'])}",
                     f"{fmt_time(d['first_warm'])} / {fmt_time(d['first_warm_cpu'])}", hit,
                     fmt_time(d["generated"]), fmt_time(d["dispatch"]),
                     fmt_time(d["end_to_end"])])
    return header, body


def targets(rows, lat) -> list:
    """(target, worst measured, where, met) for each srcgrad target."""
    out = []

    def ratio_check(label, size, kind, ref_kind, key, limit, field="times", problems=None):
        worst, where, failed = None, "-", []
        for r in rows:
            if r["size"] != size or (problems is not None and r["problem"] not in problems):
                continue
            if kind in r["errors"]:
                failed.append(r["problem"])
                continue
            a, b = r[field].get(kind), r[field].get(ref_kind)
            if a is None or not b:
                continue
            x = a / b
            if worst is None or x > worst:
                worst, where = x, r["problem"]
        if failed:
            out.append((label, "FAIL", ", ".join(failed), False))
        elif worst is not None:
            out.append((label, fmt_ratio(worst), where, worst <= limit))

    T = TARGETS
    ratio_check(f"large sizes: srcgrad time <= {T['large_time']}x hand-written", "large",
                "srcgrad", "hand", "large_time", T["large_time"])
    ratio_check(f"large sizes: srcgrad peak memory <= {T['large_mem']}x hand-written",
                "large", "srcgrad", "hand", "large_mem", T["large_mem"], field="mem")
    ratio_check(f"small sizes: srcgrad time <= {T['small_time']}x hand-written", "small",
                "srcgrad", "hand", "small_time", T["small_time"])
    ratio_check(f"small sizes: tape time <= {T['tape_vs_torch']}x PyTorch eager", "small",
                "tape", "torch", "tape_vs_torch", T["tape_vs_torch"])
    ratio_check(f"small sizes: srcgrad numba time <= {T['numba_small']}x hand-written",
                "small", "numba", "hand", "numba_small", T["numba_small"])
    ratio_check(f"small sizes: srcgrad numba time <= {T['numba_vs_jax']}x JAX jit", "small",
                "numba", "jax", "numba_vs_jax", T["numba_vs_jax"])
    ratio_check(f"large sizes, elementwise: srcgrad numba time <= {T['numba_vs_jax']}x JAX "
                "jit", "large", "numba", "jax", "numba_vs_jax", T["numba_vs_jax"],
                problems=ELEMENTWISE)
    ratio_check(f"large sizes, matmuls: srcgrad numba time <= {T['numba_large']}x "
                "hand-written", "large", "numba", "hand", "numba_large", T["numba_large"],
                problems=[r["problem"] for r in rows if r["problem"] not in ELEMENTWISE])
    ok = {k: v for k, v in lat.items() if "error" not in v}
    for label, key, limit in (
            (f"dispatch overhead < {fmt_time(T['dispatch'])}", "dispatch", T["dispatch"]),
            (f"first call, fresh process < {fmt_time(T['first_call'])}", "first_fresh",
             T["first_call"]),
            (f"first call, warm process < {fmt_time(T['first_call'])}", "first_warm",
             T["first_call"]),
            (f"disk-cache hit, fresh process < {fmt_time(T['cache_hit'])}", "hit",
             T["cache_hit"])):
        if ok:
            where = max(ok, key=lambda k: ok[k][key])
            worst = ok[where][key]
            shown = fmt_time(worst)
            if key + "_cpu" in ok[where]:
                shown += f" (CPU {fmt_time(ok[where][key + '_cpu'])})"
            out.append((label, shown, where, worst < limit))
    return out


def text_table(header, body, text_columns: int = 2) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    sep = "  ".join("-" * w for w in widths)
    rows = ["  ".join(str(c).rjust(w) if i >= text_columns else str(c).ljust(w)
                      for i, (c, w) in enumerate(zip(r, widths))) for r in body]
    return "\n".join([line, sep] + rows)


def md_table(header, body, text_columns: int = 2) -> str:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join(["---"] * text_columns + ["---:"] * (len(header) - text_columns))
           + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def hand_variants(rows) -> list:
    """One line per row timed with several hand-written gradients."""
    out = []
    for r in rows:
        if r.get("hand_times"):
            parts = ", ".join(f"{k} {fmt_time(t)}" for k, t in r["hand_times"].items())
            out.append(f"{r['problem']} {r['size']}: {parts}")
    return out


def failures(rows, lat) -> list:
    out = []
    for r in rows:
        for k, msg in r["errors"].items():
            out.append(f"{r['problem']} {r['size']}, {impls.label(k)}: {msg}")
    for name, d in lat.items():
        if "error" in d:
            out.append(f"{name}, latency: {d['error']}")
    return out
