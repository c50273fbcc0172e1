"""np.logaddexp of two equal infinities (the -inf edge of a log-space table) has the
derivative share 1/2 each, the limit along x == y, not exp(-inf - -inf) = nan: the nan
reached the gradient of a forbidden transition's log-probability (where the right value
is 0), and an hvp through a zero tangent (soft-DTW's was all nan). Checked against finite
differences, the tape's double backward, and the same recursion started from a large
finite number instead of infinity."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad

import log_space_user as U

RNG = np.random.default_rng(3)
X, Y = RNG.normal(size=4), RNG.normal(size=3)
V = RNG.normal(size=4)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_soft_dtw_hvp_is_finite_and_matches_finite_differences(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    g = srcgrad.grad(U.soft_dtw)
    eps = 1e-5
    want = (g(X + eps * V, Y) - g(X - eps * V, Y)) / (2 * eps)
    h = srcgrad.hvp(U.soft_dtw, backend=backend)
    for k in range(3):
        got = h(X.copy(), Y, V.copy())
        assert np.all(np.isfinite(got)), f"call {k + 1}: {got}"
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_soft_dtw_gradient():
    # (not against the tape: its Tensor written into the numpy table R becomes a float,
    # without its derivative, as PyTorch's does)
    check_grad(U.soft_dtw, (X.copy(), Y.copy()), 0, tape=False)


def test_a_forbidden_transition_has_a_zero_gradient_not_nan():
    S = 3
    log_init = np.array([0.0, -np.inf, -np.inf])  # (the chain starts in its first state)
    log_emit = np.log(RNG.uniform(0.2, 0.9, (4, S)))
    with np.errstate(divide="ignore"):
        log_trans = np.log(np.array([[0.6, 0.4, 0.0], [0.0, 0.7, 0.3], [0.0, 0.0, 1.0]]))
    g = srcgrad.grad(U.forward_algorithm, wrt=(1, 2))
    for _ in range(3):
        d_trans, d_emit = g(log_init, log_trans, log_emit)
        assert np.all(np.isfinite(d_trans)) and np.all(np.isfinite(d_emit)), d_trans
        forbidden = np.isinf(log_trans)
        np.testing.assert_array_equal(d_trans[forbidden], 0.0)
        # the allowed entries against central differences
        eps = 1e-6
        for idx in zip(*np.nonzero(~forbidden)):
            hi, lo = log_trans.copy(), log_trans.copy()
            hi[idx] += eps
            lo[idx] -= eps
            fd = (U.forward_algorithm(log_init, hi, log_emit) -
                  U.forward_algorithm(log_init, lo, log_emit)) / (2 * eps)
            np.testing.assert_allclose(d_trans[idx], fd, rtol=1e-5, atol=1e-8)
