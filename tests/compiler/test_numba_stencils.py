"""The numba backend's sums of shifted slices (srcgrad.fusion.shifted_sums): the gradient of
code that reads neighbouring elements (finite differences, stencils, smoothness penalties,
total variation) is one loop over the result, cut into pieces where a slice begins or ends.

Checked against the tape engine (an independent implementation) and the numpy backend:
programs written as users write them, then random stencils (hypothesis) of one and two
axes, in both of the backend's forms (compiled whole, and loops only for large arrays).
Skipped where numba is not installed.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from compiler_helpers import tape_grads
from srcgrad import jit
from srcgrad.fusion import segments

numba = pytest.importorskip("numba")

import numba_user as U  # noqa: E402
from stencil_programs import load, stencils  # noqa: E402
from test_numba import compiled_without_warning  # noqa: E402

PLACED = "placed in slices of it"


def _check(fn, wrt, args, got):
    got = got if isinstance(got, tuple) else (got,)
    indices = wrt if isinstance(wrt, tuple) else (wrt,)
    want = srcgrad.grad(fn, wrt=wrt, specialize=False)(*args)
    want = want if isinstance(want, tuple) else (want,)
    for k, (a, t, w) in enumerate(zip(got, tape_grads(fn, args, indices), want)):
        scale = 1.0 + float(np.max(np.abs(t)))
        np.testing.assert_allclose(a, t, rtol=1e-9, atol=1e-9 * scale,
                                   err_msg=f"{fn.__name__}: gradient {k} against the tape")
        np.testing.assert_allclose(a, w, rtol=1e-10, atol=1e-10 * scale,
                                   err_msg=f"{fn.__name__}: gradient {k} against numpy")


def _programs(n):
    rng = np.random.default_rng(n)
    side = int(np.sqrt(n)) + 2
    return [
        ("rosenbrock", U.rosenbrock, 0, (rng.uniform(-1.5, 1.5, n),)),
        ("smoothness", U.smoothness, 0, (rng.standard_normal(n),)),
        ("total_variation", U.total_variation, 0, (rng.standard_normal((side, side + 1)),)),
        ("trapezoid", U.trapezoid_energy, (0, 1),
         (rng.standard_normal(n), np.cumsum(rng.uniform(0.1, 1.0, n)))),
        # a term of the whole array (2 x) beside the shifted ones: one loop still
        ("penalized", U.penalized, 0, (rng.standard_normal(n),)),
    ]


@pytest.mark.parametrize("large", [False, True], ids=["whole", "loops"])
@pytest.mark.parametrize("k", range(5), ids=[p[0] for p in _programs(10)])
def test_cotangents_of_shifted_slices_are_one_loop(k, large):
    """Each program's cotangents placed into shifted slices are summed in one loop (no
    zeros, no scatter, no add), and the gradient is the tape's."""
    n = jit.LARGE + 3 if large else 12
    name, fn, wrt, args = _programs(n)[k]
    got, src = compiled_without_warning(srcgrad.grad(fn, wrt=wrt, backend="numba"), *args)
    assert PLACED in src and "scatter_add(" not in src, name
    assert ("loops compiled by numba" in src) == large
    _check(fn, wrt, args, got)


def test_large_pieces_run_in_parallel_threads():
    x = np.linspace(-1.2, 1.3, 300_001)
    got, src = compiled_without_warning(srcgrad.grad(U.rosenbrock, backend="numba"), x)
    # the middle piece, where both terms are summed, in threads; the ends one element each
    assert "for i in prange(299999):" in src and src.count("for i in range(1):") == 2
    _check(U.rosenbrock, 0, (x,), got)


def test_the_pieces_cover_every_element_once():
    shape = (7, 5)
    places = [((1, 0), (7, 4)), ((0, 0), (6, 5)), ((2, 1), (5, 3)), ((0, 0), (7, 5))]
    pieces = segments(places, shape)
    covered = np.zeros(shape, int)
    for lo, hi, terms in pieces:
        covered[tuple(slice(a, b) for a, b in zip(lo, hi))] += 1
        for t, (plo, phi) in enumerate(places):
            inside = all(pa <= a and b <= pb for a, b, pa, pb in zip(lo, hi, plo, phi))
            apart = any(b <= pa or pb <= a for a, b, pa, pb in zip(lo, hi, plo, phi))
            assert inside == (t in terms) and (inside or apart)  # (a term covers all or none)
    assert (covered == 1).all()


# ---- random stencils ------------------------------------------------------------------------

# numba compiles each program for a second or more: few by default, more in the deep profile
_N = 6 if settings.default.max_examples < 1000 else 150


@pytest.fixture(scope="module")
def stencil_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("stencils")


@settings(max_examples=_N)
@given(stencils(), st.booleans(), st.integers(0, 2**32 - 1))
def test_random_stencils(stencil_dir, program, large, seed):
    source, shape = program
    fn = load(source, stencil_dir)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    old = jit.LARGE
    jit.LARGE = 1 if large else old  # the loops-only form, at a small size
    try:
        got, src = compiled_without_warning(srcgrad.grad(fn, backend="numba"), x)
    finally:
        jit.LARGE = old
    try:
        _check(fn, 0, (x,), got)
    except AssertionError:
        print(source, file=sys.stderr)
        raise
