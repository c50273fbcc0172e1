"""The derivative of softplus, log1p(exp(u)): n e^u / (1 + e^u), is written n / (1 + e^-u)
by the optimizer where nothing else reads e^u (optimize._logistic): of u = -m that is one
exp(m), two passes fewer, and where e^u overflows it is the function's limit, not inf / inf."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad, finite_differences
from srcgrad import optimize as optimize_module

import softplus_user as U


def _body(src):
    return [ln.strip() for ln in src.split("def ", 1)[1].splitlines()[1:]
            if not ln.lstrip().startswith("#")]


def test_logistic_regressions_gradient_is_one_exp_of_the_margins():
    model = U.LogisticRegression()
    params, X, y = U.make_data()
    g = srcgrad.grad(model.loss, cache=False)
    got = g(params, X, y)
    for k in ("w", "b"):
        want = finite_differences(lambda p: model.loss(dict(params, **{k: p}), X, y),
                                  [params[k]], 0)
        np.testing.assert_allclose(got[k], want, rtol=1e-7, atol=1e-9)
    body = _body(g.source)
    exps = [ln for ln in body if "np.exp(" in ln]
    assert len(exps) == 1 and "np.exp(margins)" in exps[0], body
    assert not any(ln.startswith("out_1 = -margins") for ln in body), body
    # the product that it replaces is gone
    assert not any("* out_2" in ln for ln in body), body


@pytest.mark.parametrize("fn,args", [
    (U.bce_with_logits, (np.random.default_rng(1).normal(size=(6, 2)) * 3,
                         np.random.default_rng(2).integers(0, 2, (6, 2)).astype(float))),
    (U.softplus_net, (np.random.default_rng(3).normal(size=(3, 4)),
                      np.random.default_rng(4).normal(size=(4, 2)),
                      np.random.default_rng(5).normal(size=(5, 3)))),
])
def test_softplus_gradients_against_the_tape_and_finite_differences(fn, args):
    wrt = (0,) if fn is U.bce_with_logits else (0, 1)
    g = srcgrad.grad(fn, wrt=wrt, cache=False)
    for _ in range(3):  # (the general code, then the specialized variant)
        check_grad(fn, args, wrt, compiled=g)


def test_value_and_grad_keeps_the_exp_its_loss_reads():
    model = U.LogisticRegression()
    params, X, y = U.make_data()
    vg = srcgrad.value_and_grad(model.loss, cache=False)
    value, grads = vg(params, X, y)
    assert np.isclose(value, model.loss(params, X, y), rtol=1e-14)
    np.testing.assert_allclose(grads["w"], srcgrad.grad(model.loss, cache=False)(
        params, X, y)["w"], rtol=1e-12)
    exps = [ln for ln in _body(vg.source) if "np.exp(" in ln]
    assert len(exps) == 1, exps  # (e^-m, read by the loss and the derivative alike)


def test_where_the_exponential_overflows_the_gradient_is_the_limit_not_nan():
    model = U.LogisticRegression(l2=0.0)
    params, X, y = U.make_data()
    X = X * 5000.0  # margins of thousands: e^-m overflows for the misclassified points
    g = srcgrad.grad(model.loss, cache=False)
    with np.errstate(over="ignore"):
        m = y * (X @ params["w"] + params["b"])
        s = -y / (len(y) * (1.0 + np.exp(m)))  # d loss / d(Xw + b), its exact limit
        assert (np.abs(m) > 710).any() and (m < -710).any()
        for _ in range(3):  # (the general code, then the specialized variant)
            got = g(params, X, y)
            np.testing.assert_allclose(got["w"], s @ X, rtol=1e-12)
            np.testing.assert_allclose(got["b"], s.sum(), rtol=1e-12)
    # (without the rewrite, e^-m / (1 + e^-m) is inf / inf: nan)
    with pytest.MonkeyPatch.context() as mp, np.errstate(all="ignore"):
        mp.setattr(optimize_module, "_logistic", lambda c, a, b: None)
        old = srcgrad.grad(model.loss, cache=False, specialize=False)(params, X, y)
    assert np.isnan(old["w"]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_dtype_and_the_values_of_float32(dtype):
    params, X, y = U.make_data(n=9)
    params = {k: v.astype(dtype) for k, v in params.items()}
    X, y = X.astype(dtype), y.astype(dtype)
    model = U.LogisticRegression()
    g = srcgrad.grad(model.loss, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            got = g(params, X, y)
    assert got["w"].dtype == dtype and np.shape(got["b"]) == ()
    want = srcgrad.grad(model.loss, cache=False)(
        {k: v.astype(np.float64) for k, v in params.items()}, X.astype(np.float64),
        y.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got["w"], want["w"], rtol=tol, atol=tol)
