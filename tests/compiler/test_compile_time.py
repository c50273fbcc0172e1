"""Long programs compile in time about linear in their length, and stay right.

Compile time once grew exponentially with the length of a straight-line program (each
copy of a shape equation was rewritten on its own, one step per optimizer sweep), so ten
statements took minutes. These tests compile programs far longer than that and check
their gradients against the tape and finite differences: an exponential regression shows
up as a test that does not finish. No test times anything; the growth is checked on
deterministic counts instead (how many rewrites the optimizer tries, how many shapes it
tracks), and `python -m benchmarks.compile_time` measures the time.

The programs come from `benchmarks.compile_time` (the shapes the benchmark measures). The
last tests check the dtype classes the optimizer and codegen rely on with integer arrays.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import srcgrad
import srcgrad.optimize as optimize_module
from compiler_helpers import assert_close, check_grad, finite_differences

from paths import ROOT  # noqa: E402  (tests/paths.py)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.compile_time import SHAPES, main, program  # noqa: E402

rng = np.random.default_rng(7)


def _args(x_shape=(3,), y_shape=(3,), k=0.7):
    # positive x keeps every `np.sum(z) > 0` of the branch program true (and `< 0` false),
    # far from flipping under a finite-difference step
    return [rng.uniform(0.5, 1.5, x_shape), rng.uniform(0.5, 1.5, y_shape), k]


def test_200_statement_straight_line_program(tmp_path):
    f = program("straight", 200, str(tmp_path))
    check_grad(f, _args(), wrt=(0, 1, 2))


def test_30_branches_in_a_row(tmp_path):
    f = program("branches", 30, str(tmp_path))
    check_grad(f, _args(), wrt=(0, 1, 2))


@pytest.mark.parametrize("shape, n", [("loop", 40), ("calls", 40), ("uses", 150)])
def test_other_long_programs(tmp_path, shape, n):
    f = program(shape, n, str(tmp_path))
    check_grad(f, _args(), wrt=(0, 1))


@pytest.mark.parametrize("shape", ["straight", "loop", "branches"])
def test_long_programs_with_broadcasting_inputs(tmp_path, shape):
    """x (3, 1), y (4,) and k (1, 4): every statement broadcasts, so the gradients need
    their sum_to's; a shape class claimed equal where shapes differ would drop one."""
    f = program(shape, 24, str(tmp_path))
    args = [rng.uniform(0.5, 1.5, (3, 1)), rng.uniform(0.5, 1.5, (4,)),
            rng.uniform(0.2, 0.9, (1, 4))]
    check_grad(f, args, wrt=(0, 1, 2))


def test_hvp_of_a_long_chain(tmp_path):
    f = program("straight", 40, str(tmp_path))
    x, y, k = _args()
    v = rng.normal(size=3)
    got = srcgrad.hvp(f, wrt=0)(x, y, k, v)
    g = srcgrad.grad(f, wrt=0)
    eps = 1e-6
    num = (g(x + eps * v, y, k) - g(x - eps * v, y, k)) / (2 * eps)
    assert_close(got, num, 1e-5, 1e-7, "hvp vs differences of the gradient")


def test_grad_of_grad_of_a_long_chain(tmp_path):
    f = program("straight", 40, str(tmp_path))
    x, y, k = _args()
    d2 = srcgrad.grad(srcgrad.grad(f, wrt=2), wrt=2)
    g = srcgrad.grad(f, wrt=2)
    num = finite_differences(lambda kk: g(x, y, kk), [k], 0)
    assert_close(d2(x, y, k), num, 1e-5, 1e-7, "second derivative vs differences")


def test_benchmark_command_line_runs(capsys):
    main(["--sizes", "3,6", "--shapes", ",".join(SHAPES)])
    rows = capsys.readouterr().out.splitlines()[2:]
    assert [r.split()[0] for r in rows] == list(SHAPES)


# ---- deterministic growth: the optimizer's work and tables -------------------------------

def _optimizer_counts(monkeypatch, f):
    """(rewrites tried, largest shape-alias table, sweeps) while compiling grad(f)."""
    counts = {"simplify": 0, "alias": 0, "sweeps": 0}
    simplify, run_init = optimize_module._simplify, optimize_module._Run.__init__
    tables = []  # the shape-alias table of each sweep (one per optimize call, shared)

    def counting_simplify(e, ctx):
        counts["simplify"] += 1
        return simplify(e, ctx)

    def counting_init(self, *a, **k):
        counts["sweeps"] += 1
        run_init(self, *a, **k)
        tables.append(self.shape_alias)

    monkeypatch.setattr(optimize_module, "_simplify", counting_simplify)
    monkeypatch.setattr(optimize_module._Run, "__init__", counting_init)
    srcgrad.grad(f, wrt=(0, 1), cache=False).source  # noqa: B018 (compiles)
    monkeypatch.undo()
    counts["alias"] = max((len(t) for t in tables), default=0)
    return counts


@pytest.mark.parametrize("shape", ["straight", "loop", "branches", "uses"])
def test_optimizer_work_grows_linearly(tmp_path, monkeypatch, shape):
    """Doubling the program at most about doubles the rewrites tried and the shapes
    tracked, and the number of sweeps does not grow (it once grew by six a statement,
    and the shape table doubled a statement)."""
    small = _optimizer_counts(monkeypatch, program(shape, 10, str(tmp_path)))
    large = _optimizer_counts(monkeypatch, program(shape, 40, str(tmp_path)))
    assert large["simplify"] <= 4.5 * small["simplify"], (small, large)
    assert large["alias"] <= 4.5 * max(small["alias"], 1), (small, large)
    assert large["sweeps"] == small["sweeps"] <= 8, (small, large)


# ---- dtype classes: equal only where numpy keeps the dtype -------------------------------

# a module-level integer array: referenced by name in the generated code (more than 16
# elements: smaller constants are folded at compile time)
N = np.arange(20)


def int_array_then_division(x):
    a = N * 2  # an int array...
    o = a / 3  # ...and a float64 one: `a /= 3` would fail (or truncate)
    return np.sum(x * o)


def arange_offset_scaled(x):
    w = np.arange(x.shape[0]) + 1
    w = w / x.shape[0]
    return np.sum(np.sin(x) * w)


def int_array_plus_float_array(x):
    a = N * 2
    u = N * 0.5  # float64, while N * 2 is int64
    return np.sum(x * (a + u))


def mean_of_int_array(x):
    m = np.mean(N * 3)  # float64 even though N * 3 is an int array
    s = np.sum(N * 3)
    return np.sum(x * (s / m))


@pytest.mark.parametrize("fn", [int_array_then_division, arange_offset_scaled,
                                int_array_plus_float_array, mean_of_int_array])
def test_integer_arrays_are_not_updated_in_place_with_floats(fn):
    x = rng.normal(size=20)
    check_grad(fn, [x])
