"""srcgrad.jit_math: the exp, tanh, log, log1p, sin and cos a numba loop calls (vectorized:
no C library call).

Each is checked, over wide random samples and the edges (the ends of exp's finite range,
its subnormal results, tanh's switch between its two forms, signed zeros, infinities,
nan), against Python's math module (the C library's, within 1 ulp of the exact value):
within 2 ulp, the same special values and signs. Skipped where numba is not installed.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from srcgrad.jit_math import (TRIG_FAR, trig_far, vector_cos, vector_exp, vector_log,  # noqa: E402
                              vector_log1p, vector_sin, vector_tanh)


def _loop(fn):
    """A numba loop that calls `fn` on each element (vectorized by LLVM, as srcgrad's are)."""
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return loop


_exp_loop, _tanh_loop, _log_loop, _log1p_loop, _sin_loop, _cos_loop = map(
    _loop, (vector_exp, vector_tanh, vector_log, vector_log1p, vector_sin, vector_cos))


def _run(loop, xs):
    out = np.empty_like(xs)
    loop(xs, out)
    return out


def _ulps(got, want):
    """|got - want| in units of the spacing at want (the smallest subnormal for 0)."""
    spacing = np.where(want == 0, 5e-324, np.spacing(np.abs(want)))
    return np.abs(got - want) / spacing


def _samples(rng, lo, hi, n):
    return np.concatenate([rng.uniform(lo, hi, n), rng.uniform(-1.0, 1.0, n),
                           np.sign(rng.uniform(-1, 1, n)) * 10.0 ** rng.uniform(-320, 2.8, n)])


def test_vector_exp_is_within_two_ulp_of_the_c_librarys():
    rng = np.random.default_rng(0)
    xs = _samples(rng, -745.5, 710.0, 20000)
    xs = xs[(xs > -745.2) & (xs < 709.78)]
    # results that are subnormal, and the last finite ones
    xs = np.concatenate([xs, rng.uniform(-745.13, -708.3, 5000), rng.uniform(700.0, 709.78, 2000)])
    want = np.array([math.exp(v) for v in xs])
    got = _run(_exp_loop, xs)
    assert np.all(np.isfinite(got))
    worst = _ulps(got, want).max()
    assert worst <= 2.0, (worst, xs[np.argmax(_ulps(got, want))])


def test_vector_exp_at_its_edges_is_numpys():
    big, small = 709.782712893384, -745.1332191019412
    xs = np.array([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e-300, big, np.nextafter(big, 800),
                   710.0, 1e300, np.inf, small, np.nextafter(small, -800), -746.0, -1e300,
                   -np.inf, np.nan, -708.39641853226408, -708.4, -744.4])
    got = _run(_exp_loop, xs)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(xs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_array_equal(got == 0, want == 0)
    finite = np.isfinite(want)
    assert _ulps(got[finite], want[finite]).max() <= 2.0


def test_vector_tanh_is_within_two_ulp_of_the_c_librarys():
    rng = np.random.default_rng(1)
    xs = np.concatenate([_samples(rng, -30.0, 30.0, 20000),
                         rng.uniform(0.45, 0.7, 5000), -rng.uniform(0.45, 0.7, 5000),
                         10.0 ** rng.uniform(-12, 0, 5000)])
    want = np.array([math.tanh(v) for v in xs])
    got = _run(_tanh_loop, xs)
    worst = _ulps(got, want).max()
    assert worst <= 2.0, (worst, xs[np.argmax(_ulps(got, want))])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_vector_tanh_at_its_edges_is_numpys():
    xs = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-200, 0.55, -0.55,
                   np.nextafter(0.55, 0), 19.0, 19.1, -20.0, 354.0, 355.0, 710.0, -1e300,
                   np.inf, -np.inf, np.nan])
    got = _run(_tanh_loop, xs)
    want = np.tanh(xs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    ok = ~np.isnan(want)
    assert _ulps(got[ok], want[ok]).max() <= 2.0
    np.testing.assert_array_equal(got[np.abs(xs) >= 20], want[np.abs(xs) >= 20])  # +-1
    np.testing.assert_array_equal(got[np.abs(xs) < 1e-150], xs[np.abs(xs) < 1e-150])


def test_vector_log_is_within_two_ulp_of_the_c_librarys():
    rng = np.random.default_rng(2)
    xs = np.concatenate([10.0 ** rng.uniform(-323.5, 308.2, 20000), rng.uniform(0.5, 2.0, 20000),
                         1.0 + rng.uniform(-1e-6, 1e-6, 5000),
                         [5e-324, 1e-310, 2.2250738585072014e-308, 1.0, np.nextafter(1.0, 0.0),
                          np.nextafter(1.0, 2.0), np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 0.0),
                          1.7976931348623157e308]])
    want = np.array([math.log(v) for v in xs])
    worst = _ulps(_run(_log_loop, xs), want).max()
    assert worst <= 2.0, worst


def test_vector_log1p_is_within_two_ulp_of_the_c_librarys():
    rng = np.random.default_rng(3)
    xs = np.concatenate([10.0 ** rng.uniform(-320, 300, 20000), -10.0 ** rng.uniform(-320, -1e-4, 20000),
                         rng.uniform(-0.5, 1.0, 20000), rng.uniform(-1e-8, 1e-8, 2000),
                         [5e-324, -5e-324, 1e-16, -1e-16, 2.0 ** -53, -(2.0 ** -54), 1e16,
                          2.0 ** 53, 2.0 ** 54, 1e300, 1.7976931348623157e308]])
    want = np.array([math.log1p(v) for v in xs])
    got = _run(_log1p_loop, xs)
    worst = _ulps(got, want).max()
    assert worst <= 2.0, worst
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("loop, fn, xs", [
    (_log_loop, np.log, [0.0, -0.0, -1.0, -5e-324, np.inf, -np.inf, np.nan]),
    (_log1p_loop, np.log1p, [0.0, -0.0, -1.0, -1.0000000001, -5.0, np.inf, -np.inf, np.nan]),
])
def test_vector_log_at_its_edges_is_numpys(loop, fn, xs):
    xs = np.array(xs)
    got = _run(loop, xs)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = fn(xs)
    np.testing.assert_array_equal(got, want)  # (nan where numpy's is: equal_nan)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


def _near_multiples_of_half_pi(rng):
    """The floats nearest k pi/2 and their neighbours (sin or cos of them is tiny: where the
    reduction x - k pi/2 cancels most), for small k and random k up to TRIG_FAR's."""
    ks = np.concatenate([np.arange(1.0, 2000.0), rng.integers(1, 667_000, 2000).astype(float)])
    # k pi/2 to 106 bits: k (hi + lo), hi + lo = pi/2 as two floats
    hi, lo = 1.5707963267948966, 6.123233995736766e-17
    near = ks * hi + ks * lo
    xs = np.concatenate([near, np.nextafter(near, 0.0), np.nextafter(near, np.inf)])
    return np.concatenate([xs, -xs])


@pytest.mark.parametrize("loop, fn", [(_sin_loop, math.sin), (_cos_loop, math.cos)],
                         ids=["sin", "cos"])
def test_vector_sin_and_cos_are_within_two_ulp_of_the_c_librarys(loop, fn):
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.uniform(-4.0, 4.0, 20000), rng.uniform(-100.0, 100.0, 20000),
                         rng.uniform(-TRIG_FAR, TRIG_FAR, 20000),
                         np.sign(rng.uniform(-1, 1, 5000)) * 10.0 ** rng.uniform(-320, 6, 5000),
                         _near_multiples_of_half_pi(rng),
                         [TRIG_FAR, -TRIG_FAR, np.nextafter(TRIG_FAR, 0.0), 7.450580596923828e-09,
                          np.nextafter(7.450580596923828e-09, 1.0)]])
    want = np.array([fn(v) for v in xs])
    got = _run(loop, xs)
    worst = _ulps(got, want)
    assert worst.max() <= 2.0, (worst.max(), xs[np.argmax(worst)])
    np.testing.assert_array_equal(np.signbit(got[want != 0]), np.signbit(want[want != 0]))


def test_vector_sin_and_cos_past_their_range_are_nan_and_trig_far_says_so():
    """Past TRIG_FAR they are nan (never a wrong number), and `trig_far` is 1 exactly there,
    for finite arguments: infinities and nan give nan, as numpy's, and count 0 (the C
    library's sin would give the same nan)."""
    xs = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-300, TRIG_FAR, -TRIG_FAR,
                   np.nextafter(TRIG_FAR, np.inf), -np.nextafter(TRIG_FAR, np.inf), 3e6, 1e300,
                   np.inf, -np.inf, np.nan])
    sin, cos = _run(_sin_loop, xs), _run(_cos_loop, xs)
    with np.errstate(invalid="ignore"):
        want_sin, want_cos = np.sin(xs), np.cos(xs)
    inside = np.abs(xs) <= TRIG_FAR
    assert _ulps(sin[inside], want_sin[inside]).max() <= 2.0
    assert _ulps(cos[inside], want_cos[inside]).max() <= 2.0
    np.testing.assert_array_equal(sin[:5], xs[:5])  # (signed zeros, subnormals: x)
    np.testing.assert_array_equal(np.signbit(sin[inside]), np.signbit(want_sin[inside]))
    np.testing.assert_array_equal(cos[:5], 1.0)
    assert np.all(np.isnan(sin[~inside])) and np.all(np.isnan(cos[~inside]))

    @numba.njit
    def far_of(x, out):
        for i in range(x.size):
            out[i] = trig_far(x[i])

    far = _run(far_of, xs)
    np.testing.assert_array_equal(far, (~inside & np.isfinite(xs)).astype(float))


def test_without_a_fused_multiply_add_they_are_as_accurate(monkeypatch):
    """On a CPU without FMA a polynomial's step is a product and a sum (`_mul_add`): the
    same accuracy (checked here by compiling new loops with FMA off)."""
    import srcgrad.jit_math as jm

    monkeypatch.setattr(jm, "FMA", False)
    rng = np.random.default_rng(5)
    xs = np.concatenate([rng.uniform(-700.0, 700.0, 5000), rng.uniform(-4.0, 4.0, 5000)])
    for fn, ref in ((vector_exp, math.exp), (vector_sin, math.sin), (vector_tanh, math.tanh)):
        loop = _loop(fn)
        got = _run(loop, xs)
        assert "llvm.fma" not in loop.inspect_llvm(loop.signatures[0])  # (with FMA: there)
        want = np.array([ref(v) for v in xs])
        assert _ulps(got, want).max() <= 2.0, fn
