"""The cost of a Hessian-vector product against a gradient, both as srcgrad generated code.

`srcgrad.hvp` is forward mode over the gradient's graph (no Hessian is formed), so one
call should cost a small constant times one gradient (about 2x to 4x: the gradient's
work plus a tangent for each of its values). Each problem's hvp is first checked against
finite differences of the gradient, then both are timed with `benchmarks.timing.compare`
(interleaved batches, per-call medians).

    python -m benchmarks.hvp_vs_grad [--repeats 15] [--target 0.05]
"""
from __future__ import annotations

import argparse
import platform

import numpy as np

import srcgrad
from benchmarks.problems import mlp, rosenbrock
from benchmarks.timing import compare


def _problems(rng):
    """(name, loss, args, wrt) for each timed case."""
    out = []
    for n in (1_000, 100_000):
        out.append((f"rosenbrock n={n}", rosenbrock.loss, (rng.uniform(-1.5, 1.5, n),), 0))
    for size in ("small", "large"):
        dims = mlp.SIZES[size]
        args = mlp.make_inputs(rng, **dims)
        out.append((f"mlp {mlp.describe(**dims)}, wrt W1", mlp.loss, args, "W1"))
    return out


def _check(args, wrt_index, g, h, rng, eps=1e-6):
    """hvp(x, v) against central differences of grad along v (a relative error)."""
    x = args[wrt_index]
    v = rng.standard_normal(x.shape)

    def at(xx):
        a = list(args)
        a[wrt_index] = xx
        return g(*a)

    num = (at(x + eps * v) - at(x - eps * v)) / (2 * eps)
    got = h(*args, v)
    return float(np.max(np.abs(got - num)) / (1e-12 + np.max(np.abs(num)))), v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--target", type=float, default=0.05, help="seconds per timed batch")
    opts = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}; medians of {opts.repeats} interleaved batches")
    print(f"{'problem':42s} {'grad':>11s} {'hvp':>11s} {'hvp/grad':>9s}  check")
    for name, loss, args, wrt in _problems(rng):
        g = srcgrad.grad(loss, wrt=wrt, cache=False)
        h = srcgrad.hvp(loss, wrt=wrt, cache=False)
        wrt_index = g.wrt_index[0]
        err, v = _check(args, wrt_index, g, h, rng)
        t = compare({"grad": lambda: g(*args), "hvp": lambda: h(*args, v)},
                    opts.repeats, opts.target)
        print(f"{name:42s} {t['grad'] * 1e6:9.1f}us {t['hvp'] * 1e6:9.1f}us "
              f"{t['hvp'] / t['grad']:8.2f}x  rel.err {err:.1e}")


if __name__ == "__main__":
    main()
