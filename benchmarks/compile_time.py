"""Compile time against program length: does the pipeline stay (about) linear?

Each shape is a generated program of n statements of the same kind, written to a
temporary .py file (srcgrad reads real source) and compiled with the disk cache off;
the CPU time is that of `.source` (parse, lower, reverse, optimize, codegen). The growth
exponent is the slope of log(time) against log(n) over the two largest sizes: about 1
is linear, 2 quadratic; an exponential blow-up shows as an exponent that grows with n.

- straight: `z = z + 0.01 * np.sin(z * k + x) * y`, n times (grad of x and y)
- loop:     the same n statements as the body of `for _ in range(3)`
- branches: n/4 `if`s in a row on run-time values (`np.sum(z) > 0`)
- calls:    n/4 user functions, each calling the next (inlined n/4 deep)
- uses:     one value (`t = x * k`) read by n statements
- hvp:      hvp of the straight program (forward over reverse)
- gradgrad: grad(grad(f)) of the straight program in the scalar k

    python -m benchmarks.compile_time [--sizes 25,50,100,200] [--shapes straight,loop]
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import os
import platform
import sys
import tempfile
import time

if __package__ in (None, ""):          # run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STEP = "z = z + 0.01 * np.sin(z * k + x) * y"


def _straight(n):
    return ["def f(x, y, k):", "    z = x"] + [f"    {STEP}"] * n + ["    return np.sum(z)"]


def _loop(n):
    return (["def f(x, y, k):", "    z = x", "    for _ in range(3):"] +
            [f"        {STEP}"] * n + ["    return np.sum(z)"])


def _branches(n):
    lines = ["def f(x, y, k):", "    z = x"]
    for i in range(n):
        # alternate the side taken (for positive inputs): both kinds of branch are run
        test = "np.sum(z) > 0.0" if i % 2 == 0 else "np.sum(z) < 0.0"
        lines += [f"    if {test}:", f"        {STEP}", "    else:",
                  "        z = z - 0.02 * np.cos(z * k + y) * x"]
    return lines + ["    return np.sum(z)"]


def _calls(n):
    lines = []
    for i in range(n):
        nxt = f"g{i + 1}(z, x, y, k)" if i + 1 < n else "z"
        lines += [f"def g{i}(z, x, y, k):", f"    {STEP}", f"    return {nxt}", ""]
    return lines + ["def f(x, y, k):", "    return np.sum(g0(x, x, y, k))"]


def _uses(n):
    return (["def f(x, y, k):", "    t = x * k", "    z = y"] +
            [f"    z = z + np.sin(t + {0.01 * i!r}) * y" for i in range(n)] +
            ["    return np.sum(z)"])


#: name -> (program lines of n statements, transformation, n per requested size unit)
SHAPES = {
    "straight": (_straight, "grad", 1),
    "loop": (_loop, "grad", 1),
    # the lowerer recurses once per `if` (it lowers the rest of the block as the if's
    # continuation) and once per inlined call: about 150 ifs in a row or 100 nested
    # calls exhaust Python's recursion limit, so these two run at n/4
    "branches": (_branches, "grad", 0.25),
    "calls": (_calls, "grad", 0.25),
    "uses": (_uses, "grad", 1),
    "hvp": (_straight, "hvp", 1),
    "gradgrad": (_straight, "gradgrad", 1),
}


def program(shape: str, n: int, directory: str):
    """The function `f` of `shape` with n statements, imported from a file in
    `directory` (arguments: x and y arrays, k a scalar)."""
    make = SHAPES[shape][0]
    text = "import numpy as np\n\n\n" + "\n".join(make(n)) + "\n"
    name = f"compile_time_{shape}_{n}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as fh:
        fh.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def transform(shape: str, f):
    """The compiled object the shape is measured on (disk cache off)."""
    import srcgrad

    kind = SHAPES[shape][1]
    if kind == "hvp":
        return srcgrad.hvp(f, wrt=0, cache=False)
    if kind == "gradgrad":
        return srcgrad.grad(srcgrad.grad(f, wrt=2, cache=False), wrt=2, cache=False)
    return srcgrad.grad(f, wrt=(0, 1), cache=False)


def compile_seconds(shape: str, n: int, directory: str) -> tuple:
    """(CPU seconds to compile, lines of generated source). CPU time, not wall time: on
    a machine whose cores are shared the wall time also holds waiting for a core."""
    f = program(shape, n, directory)
    g = transform(shape, f)
    gc.collect()  # garbage of the previous size is not this compilation's cost
    t0 = time.process_time()
    text = g.source
    return time.process_time() - t0, text.count("\n")


def exponent(sizes, seconds) -> float:
    """Slope of log(seconds) against log(n) between the two largest sizes."""
    (n0, t0), (n1, t1) = sorted(zip(sizes, seconds))[-2:]
    if n1 == n0 or min(t0, t1) <= 0:
        return float("nan")  # too small to tell
    return math.log(t1 / t0) / math.log(n1 / n0)


def _csv(s):
    return [x.strip() for x in s.split(",") if x.strip()]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=_csv, default=["25", "50", "100", "200"])
    p.add_argument("--shapes", type=_csv, default=list(SHAPES))
    opts = p.parse_args(argv)
    sizes = [int(s) for s in opts.sizes]
    os.environ["SRCGRAD_CACHE_DIR"] = ""  # compile every time
    print(f"Python {platform.python_version()}, {platform.machine()}; CPU seconds per "
          "compile and lines of generated source, for n statements")
    print(f"{'shape':10s}" + "".join(f"{'n':>6s} {'seconds':>8s} {'lines':>6s}"
                                     for _ in sizes) + "  exponent")
    with tempfile.TemporaryDirectory(prefix="srcgrad-compile-time-") as d:
        for shape in opts.shapes:
            ns = [max(2, round(n * SHAPES[shape][2])) for n in sizes]
            row = [compile_seconds(shape, n, d) for n in ns]
            cells = "".join(f"{n:6d} {t:8.3f} {lines:6d}" for n, (t, lines) in zip(ns, row))
            slope = exponent(ns, [t for t, _ in row]) if len(ns) > 1 else float("nan")
            print(f"{shape:10s}{cells}  {slope:8.2f}", flush=True)


if __name__ == "__main__":
    main()
