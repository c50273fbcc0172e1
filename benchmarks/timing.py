"""Timing and memory measurements.

- `compare`: interleaved rounds of `timeit` batches, the number of calls per batch scaled
  automatically to a target batch duration, the warm-up excluded; per-call median.
  The garbage collector stays enabled while timing (timeit turns it off by default): an
  engine that leaves reference cycles behind pays for collecting them, as it would in a
  real training loop, and its cyclic garbage cannot pile up during a batch.
- `peak_memory`: the peak of traced allocations (numpy reports its buffers to tracemalloc)
  during one call, above what was allocated before the call, the result included (also
  a result written into memory kept from an earlier call).
- `overhead`: the minimum over interleaved batches, for nanosecond-scale differences.
"""
from __future__ import annotations

import gc
import statistics
import timeit
import tracemalloc

_SETUP = "gc.enable()"


def _timer(fn):
    return timeit.Timer("fn()", setup=_SETUP, globals={"fn": fn, "gc": gc})


def calibrate(timer: timeit.Timer, target: float) -> int:
    """The number of calls that makes one batch last about `target` seconds."""
    n = 1
    while True:
        dt = timer.timeit(n)
        if dt >= 0.2 * target or n >= 10 ** 7:
            break
        n *= 10 if dt < 0.02 * target else 2
    return max(1, round(n * target / max(dt, 1e-9)))


def compare(fns: dict, repeats: int, target: float) -> dict:
    """{name: median seconds per call}, from `repeats` interleaved rounds; in each round
    every function runs one batch, the order rotating from round to round."""
    timers = {k: _timer(f) for k, f in fns.items()}
    for f in fns.values():           # warm-up, excluded
        f()
    numbers = {k: calibrate(t, target) for k, t in timers.items()}
    samples = {k: [] for k in fns}
    order = list(fns)
    for r in range(repeats):
        s = r % len(order)
        for k in order[s:] + order[:s]:
            samples[k].append(timers[k].timeit(numbers[k]) / numbers[k])
    return {k: statistics.median(v) for k, v in samples.items()}


def overhead(fns: dict, repeats: int, target: float) -> dict:
    """{name: minimum seconds per call} over interleaved batches (for tiny calls)."""
    timers = {k: timeit.Timer("fn(*args)", globals={"fn": f, "args": a})
              for k, (f, a) in fns.items()}
    numbers = {k: calibrate(t, target) for k, t in timers.items()}
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, t in timers.items():
            best[k] = min(best[k], t.timeit(numbers[k]) / numbers[k])
    return best


def _array_bytes(tree) -> int:
    if isinstance(tree, dict):
        return sum(_array_bytes(v) for v in tree.values())
    if isinstance(tree, (tuple, list)):
        return sum(_array_bytes(v) for v in tree)
    return int(getattr(tree, "nbytes", 0) or 0)


def peak_memory(fn) -> int:
    """Bytes: the traced peak during one call of `fn`, above the memory before the call,
    the result included: a result written into memory kept from an earlier call (srcgrad
    reuses a large result's array once its caller has dropped it) counts as if the call
    had allocated it, since that memory is held for it between calls."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        fn()                          # a traced warm-up: lazily built caches are not counted
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        now, peak = tracemalloc.get_traced_memory()
        kept = max(0, _array_bytes(result) - (now - base))  # (the result not allocated now)
        del result
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return peak - base + kept
