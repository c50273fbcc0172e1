"""`np.any` and `np.all` (and the methods `a.any()`, `a.all()`, with axis and keepdims):
booleans with no derivative, in guards (`if np.any(...)`), masks and counts, compiled by
every path (the polymorphic code, its specialized variant, numba where installed, and
higher derivatives), each checked against finite differences."""
from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import truth_user as U

RNG = np.random.default_rng(5)
BACKENDS = ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_truth_tests_in_guards_masks_and_counts(backend):
    W = RNG.normal(size=(3, 4))
    for scale in (0.1, 3.0):  # both sides of the `np.any(h > 3)` guard
        x = RNG.normal(size=(5, 3)) * scale
        x[0] = np.abs(x[0]) + 0.1  # one row with all(x > 0)
        g = srcgrad.grad(U.clipped_loss, wrt=(0, 1), cache=False, backend=backend)
        with warnings.catch_warnings():
            # numba has no axis= for np.all: that variant runs the numpy code, with a warning
            warnings.simplefilter("error" if backend == "numpy" else "ignore")
            for _ in range(3):  # the first call, then the specialized variant
                gx, gW = g(x, W)
                np.testing.assert_allclose(gx, finite_differences(U.clipped_loss, (x, W), 0),
                                           rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(gW, finite_differences(U.clipped_loss, (x, W), 1),
                                           rtol=1e-6, atol=1e-7)


def test_method_truth_tests_in_a_callable_object():
    gate = U.Gate(0.2)
    for x in (RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)) * 0.01):
        g = srcgrad.grad(gate, cache=False)
        for _ in range(3):
            np.testing.assert_allclose(g(x), finite_differences(gate, (x,), 0), rtol=1e-6,
                                       atol=1e-8)


def test_second_derivatives_through_a_truth_test():
    for x in (np.array([0.5, -1.0, 2.0]), np.zeros(3)):
        H = srcgrad.hessian(U.cubic_if_any)(x)
        want = np.diag(6 * x) if x.any() else np.zeros((3, 3))
        np.testing.assert_allclose(H, want, atol=1e-12)
