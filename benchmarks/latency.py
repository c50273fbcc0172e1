"""srcgrad's fixed costs: first call (the whole pipeline), disk-cache hit, dispatch.

- first call, disk cache off (`SRCGRAD_CACHE_DIR=""`): parse + lower + reverse + optimize
  + codegen + exec of the generated module, then one call on the small inputs. Measured
  in a fresh process (what a user sees the first time) and in a warm process (a new
  transformed object in a process that has compiled before: the pipeline's own cost).
- disk-cache hit: one process fills a temporary cache directory (it calls the gradient a
  few times, as a training loop does: the variant specialized to the small inputs'
  shapes is stored with the shape-polymorphic module), a new process times its first
  call (hash of the sources, file checks, exec of the cached modules, one call of the
  variant).
- dispatch: calling the transformed object minus calling the generated function it calls
  (its `_call`: the variant specialized to the small inputs) directly, on the small
  inputs; also with `_call` replaced by a stub, which isolates the overhead from the
  noise of the gradient itself.

Each is wall time; the process's CPU time is recorded beside it (on a machine whose cores
are shared with other processes, the wall time also holds the time spent waiting for a
core). The fresh-process measurements run this module as a child:
`python -m benchmarks.latency MODE PROBLEM` prints one JSON line.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(mode: str, name: str) -> None:
    sys.path.insert(0, ROOT)
    import srcgrad

    from benchmarks.problems import get

    p = get(name)
    args = p.inputs("small")
    g = srcgrad.grad(p.loss, wrt=p.wrt)
    c0, t0 = time.process_time(), time.perf_counter()
    g(*args)
    t1, c1 = time.perf_counter(), time.process_time()
    if mode == "fill":  # as a training loop leaves the cache: its variant built and stored
        for _ in range(srcgrad.specialize.HOT_CALLS):
            g(*args)
    print(json.dumps({"mode": mode, "seconds": t1 - t0, "cpu": c1 - c0,
                      "compile_count": g.compile_count}))


def _run_child(mode: str, name: str, cache_dir: str) -> dict:
    env = dict(os.environ)
    env["SRCGRAD_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.latency", mode, name],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"latency child {mode} {name} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fresh_process(problem, repeats: int) -> dict:
    """Median seconds (wall, and the process's CPU time) of the first call in a fresh
    process: without a disk cache, and hitting a disk cache filled by another process
    (`hit_compiles` must be 0)."""
    nocache = [_run_child("nocache", problem.name, "") for _ in range(repeats)]
    with tempfile.TemporaryDirectory(prefix="srcgrad-bench-") as d:
        cache = os.path.join(d, "cache")
        filled = _run_child("fill", problem.name, cache)
        hits = [_run_child("hit", problem.name, cache) for _ in range(repeats)]
    return {"first_fresh": statistics.median(c["seconds"] for c in nocache),
            "first_fresh_cpu": statistics.median(c["cpu"] for c in nocache),
            "hit_cpu": statistics.median(h["cpu"] for h in hits),
            "fill_compiles": filled["compile_count"],
            "hit": statistics.median(h["seconds"] for h in hits),
            "hit_compiles": max(h["compile_count"] for h in hits)}


def first_call_warm(problem, repeats: int) -> tuple:
    """Median seconds (wall, CPU) of the first call of a new transformed object, disk
    cache off, in this (already warm) process."""
    import srcgrad

    args = problem.inputs("small")
    old = os.environ.get("SRCGRAD_CACHE_DIR")
    os.environ["SRCGRAD_CACHE_DIR"] = ""
    try:
        times, cpu = [], []
        for _ in range(repeats):
            g = srcgrad.grad(problem.loss, wrt=problem.wrt)
            c0, t0 = time.process_time(), time.perf_counter()
            g(*args)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            assert g.compile_count == 1
    finally:
        if old is None:
            del os.environ["SRCGRAD_CACHE_DIR"]
        else:
            os.environ["SRCGRAD_CACHE_DIR"] = old
    return statistics.median(times), statistics.median(cpu)


def dispatch(problem, repeats: int, target: float) -> dict:
    """Seconds per call, small inputs, minimum over interleaved batches, of
    - the transformed object and the generated function it calls (`_call`: after a few
      calls with these shapes, the variant specialized to them), and their difference
      ("end_to_end": the brief's measure; a few hundred ns of it are within the noise of
      a gradient call of tens of µs),
    - the transformed object whose `_call` was replaced by a stub that returns at once,
      minus the stub ("dispatch": the same overhead, without the gradient's noise)."""
    import srcgrad

    from .timing import overhead

    args = problem.inputs("small")
    g = srcgrad.grad(problem.loss, wrt=problem.wrt)
    for _ in range(4):
        g(*args)
    impl = g._call
    best = overhead({"transformed": (g, args), "generated": (impl, args)}, repeats, target)
    best["end_to_end"] = best["transformed"] - best["generated"]
    sentinel = object()

    def stub(*a, **k):
        return sentinel

    g._call = stub
    try:
        if g(*args) is not sentinel:
            raise RuntimeError("the transformed object does not call its _call")
        stubbed = overhead({"transformed": (g, args), "stub": (stub, args)}, repeats, target)
    finally:
        g._call = impl
    best["dispatch"] = stubbed["transformed"] - stubbed["stub"]
    return best


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
