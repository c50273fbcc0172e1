"""Findings of an adversarial hunt over the API, each a class closed:

- a custom op's derivative rule is staged on the compiler's values: array methods
  (`.reshape`, `.astype`, `.copy`, `.sum(axis=)`, `.dot`) work there as on the tape's
  arrays (they crashed the compiler);
- a decorator's wrapper inlined where it is called binds the wrapper's own parameters
  and defaults (inspect.signature reports the wrapped function's: `n=5.0` for the
  wrapper's `n=3.0`, a silently wrong value and gradient), also for `grad(wrapper, wrt=
  "y")` and keyword calls; `functools.lru_cache`'s wrapper differentiates its function
  (it crashed);
- a module that takes numpy by `from helpers import *` is not taken for an edited file;
- `a, *rest = xs` of a list or tuple is Python's unpacking;
- the numba backend's signed zeros and ties are numpy's (`np.abs`'s gradient at -0.0,
  `np.maximum(-0.0, 0.0)`);
- jvp's tangent of a scalar function is a numpy scalar, as its value is.
Gradients are checked against central finite differences, or the tape.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import srcgrad
from srcgrad.errors import UnsupportedSyntaxError

import api_findings_user as U

X = np.array([0.3, -1.2, 2.0])


def finite_differences(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def test_a_derivative_rule_may_use_array_methods():
    t = rt.tensor(X, requires_grad=True)
    U.uses_softexp(t).backward()
    g = srcgrad.grad(U.uses_softexp)
    for _ in range(4):
        np.testing.assert_allclose(g(X), t.grad.data if hasattr(t.grad, "data") else t.grad,
                                   rtol=1e-12)
    np.testing.assert_allclose(g(X), 2.0 * np.exp(X), rtol=1e-12)


def test_lru_cached_function():
    for _ in range(4):
        assert srcgrad.grad(U.cube)(0.5) == pytest.approx(0.75)


@pytest.mark.parametrize("fn", [U.scaled_loss, U.calls_scaled, U.renamed_loss,
                                U.calls_renamed, U.calls_doubled_any])
def test_a_wrapper_runs_with_its_own_parameters(fn):
    vg = srcgrad.value_and_grad(fn)
    for _ in range(4):
        v, g = vg(X)
        assert v == pytest.approx(fn(X), rel=1e-12)
        np.testing.assert_allclose(g, finite_differences(fn, X), rtol=1e-6)


def test_a_wrapper_of_star_args_itself_is_refused_by_its_parameters():
    # (its code takes *a: what it is called with is known only at run time; inlined
    # where it is called, it is compiled, above)
    with pytest.raises(srcgrad.errors.WrtError, match=r"\*args/\*\*kwargs parameter"):
        srcgrad.grad(U.doubled_any_loss)(X)


def test_a_wrappers_parameters_by_name():
    v, g = srcgrad.value_and_grad(U.scaled_loss)(X, n=7.0)
    assert v == pytest.approx(U.scaled_loss(X, n=7.0))
    np.testing.assert_allclose(g, 14.0 * X)
    np.testing.assert_allclose(srcgrad.grad(U.renamed_loss, wrt="y")(X), 4.0 * X)
    np.testing.assert_allclose(srcgrad.grad(U.renamed_loss)(y=X), 4.0 * X)


def test_a_star_imported_numpy_is_no_edited_file():
    np.testing.assert_allclose(srcgrad.grad(U.vectorized_sqrt)(X), np.full(3, 2.0))


def test_starred_unpacking_of_a_list():
    assert srcgrad.grad(U.head_and_rest)([1.0, 2.0, 5.0]) == [3.0, 1.0, 1.0]
    assert srcgrad.grad(U.head_and_rest)((1.0, 2.0)) == (3.0, 1.0)
    xs = [X, X * 2.0, X * 3.0, X * 4.0]
    g = srcgrad.grad(U.ends_and_middle)(xs)
    np.testing.assert_allclose(g[0], xs[3])
    np.testing.assert_allclose(g[1], 2.0 * xs[1])
    np.testing.assert_allclose(g[2], 2.0 * xs[2])
    np.testing.assert_allclose(g[3], xs[0])
    with pytest.raises(UnsupportedSyntaxError, match="known only at run time"):
        srcgrad.grad(U.unpacks_an_array)(X)


def test_jvp_of_numbers_gives_numpy_scalars():
    for primals, kind in (((0.5, 2.0), np.float64),
                          ((np.float32(0.5), np.float32(2.0)), np.float32),
                          ((np.array(0.5), 2.0), np.float64)):
        out, tangent = srcgrad.jvp(U.sine_times, primals, tuple(type(p)(1.0) if not
                                   isinstance(p, np.ndarray) else np.ones_like(p)
                                   for p in primals))
        assert type(out) is kind and type(tangent) is kind
        assert tangent == pytest.approx(np.cos(0.5) * 2.0 + np.sin(0.5), rel=1e-6)
    out, tangent = srcgrad.jvp(U.sine_times, (X, 2.0), (np.ones(3), 0.0))
    assert type(tangent) is np.ndarray and tangent.shape == (3,)


def _signs(a):
    return np.signbit(np.asarray(a, dtype=float)).tolist()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_signed_zeros_and_ties_are_numpys(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    x = np.array([0.0, -0.0, 1.0])
    g = srcgrad.grad(U.total_magnitude, backend=backend)
    want = srcgrad.grad(U.total_magnitude, specialize=False)(x)
    for _ in range(4):
        got = g(x)
        np.testing.assert_array_equal(got, want)
        assert _signs(got) == _signs(want)
    vg = srcgrad.value_and_grad(U.largest_of_maximum, backend=backend)
    a, b = np.array([-0.0]), np.array([0.0])
    for _ in range(4):
        v, _ = vg(a, b)
        assert _signs(v) == _signs(U.largest_of_maximum(a, b))
    r = srcgrad.value_and_grad(U.relu_sum, backend=backend)
    z = np.array([-0.0, 0.0, -1.0, 2.0])
    for _ in range(4):
        v, _ = r(z)
        assert _signs(v) == _signs(U.relu_sum(z))
