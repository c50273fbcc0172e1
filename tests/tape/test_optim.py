"""runtime.optim: SGD and Adam against reference implementations written from PyTorch's
published update formulas (and against torch itself when it is installed)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt
from runtime.optim import SGD, Adam

STEPS = 6


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(8, 4)), \
        rng.normal(size=(8, 3))


def _loss_and_grads(W, b, X, Y):
    """Loss sum((tanh(X W + b) - Y)^2) / n and its gradient, by hand in numpy."""
    Z = np.tanh(X @ W + b)
    R = Z - Y
    n = X.shape[0]
    dZ = 2 * R / n * (1 - Z ** 2)
    return np.sum(R ** 2) / n, X.T @ dZ, dZ.sum(axis=0)


def _tape_loss(W, b, X, Y):
    return rt.sum((rt.tanh(rt.matmul(X, W) + b) - Y) ** 2) / X.shape[0]


# ---- reference implementations (PyTorch's documented algorithms) --------------------------------

def ref_sgd(params, grads_of, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
            nesterov=False):
    params = [p.copy() for p in params]
    bufs = [None] * len(params)
    history = []
    for _ in range(steps):
        grads = grads_of(*params)
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay:
                g = g + weight_decay * p
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else \
                    momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            params[i] = p - lr * g
        history.append([p.copy() for p in params])
    return history


def ref_adam(params, grads_of, steps, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
             amsgrad=False):
    b1, b2 = betas
    params = [p.copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    vmax = [np.zeros_like(p) for p in params]
    history = []
    for t in range(1, steps + 1):
        grads = grads_of(*params)
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay:
                g = g + weight_decay * p
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat = m[i] / (1 - b1 ** t)
            if amsgrad:
                vmax[i] = np.maximum(vmax[i], v[i])
                v_hat = vmax[i] / (1 - b2 ** t)
            else:
                v_hat = v[i] / (1 - b2 ** t)
            params[i] = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        history.append([p.copy() for p in params])
    return history


def _run(make_opt, steps, seed=0, zero_grad_kw=None):
    W, b, X, Y = _problem(seed)
    tW, tb = rt.tensor(W, requires_grad=True), rt.tensor(b, requires_grad=True)
    opt = make_opt([tW, tb])
    history = []
    for _ in range(steps):
        opt.zero_grad(**(zero_grad_kw or {}))
        _tape_loss(tW, tb, X, Y).backward()
        opt.step()
        history.append([tW.data.copy(), tb.data.copy()])
    return history, (tW, tb)


def _grads_of(seed=0):
    _, _, X, Y = _problem(seed)
    return lambda W, b: _loss_and_grads(W, b, X, Y)[1:]


def _close(history, ref, rtol=1e-12, atol=1e-14):
    assert len(history) == len(ref)
    for got, want in zip(history, ref):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


SGD_CONFIGS = [dict(lr=0.1), dict(lr=0.05, momentum=0.9),
               dict(lr=0.05, momentum=0.9, nesterov=True),
               dict(lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.01),
               dict(lr=0.1, weight_decay=0.1)]
ADAM_CONFIGS = [dict(lr=1e-2), dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6),
                dict(lr=1e-2, weight_decay=0.05), dict(lr=0.02, amsgrad=True)]


@pytest.mark.parametrize("cfg", SGD_CONFIGS, ids=str)
def test_sgd_matches_the_published_formulas(cfg):
    W, b, _, _ = _problem()
    history, _ = _run(lambda ps: SGD(ps, **cfg), STEPS)
    _close(history, ref_sgd([W, b], _grads_of(), STEPS, **cfg))


@pytest.mark.parametrize("cfg", ADAM_CONFIGS, ids=str)
def test_adam_matches_the_published_formulas(cfg):
    W, b, _, _ = _problem()
    history, _ = _run(lambda ps: Adam(ps, **cfg), STEPS)
    _close(history, ref_adam([W, b], _grads_of(), STEPS, **cfg))


def test_the_reference_gradient_is_the_tapes():
    W, b, X, Y = _problem()
    tW, tb = rt.tensor(W, requires_grad=True), rt.tensor(b, requires_grad=True)
    loss = _tape_loss(tW, tb, X, Y)
    loss.backward()
    want_loss, dW, db = _loss_and_grads(W, b, X, Y)
    assert math.isclose(float(loss), want_loss, rel_tol=1e-13)
    np.testing.assert_allclose(tW.grad.data, dW, rtol=1e-12)
    np.testing.assert_allclose(tb.grad.data, db, rtol=1e-12)


def test_adam_first_step_moves_each_coordinate_by_about_lr():
    """The textbook property: m_hat / sqrt(v_hat) = sign(g) on the first step."""
    p = rt.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    opt = Adam([p], lr=0.1)
    (p * rt.tensor(np.array([5.0, -0.01, 100.0]))).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.data, [0.9, -1.9, 2.9], rtol=1e-6)


def test_zero_grad_sets_to_none_by_default_or_zeroes_in_place():
    history, (tW, tb) = _run(lambda ps: SGD(ps, lr=0.1), 1)
    opt = SGD([tW, tb], lr=0.1)
    opt.zero_grad()
    assert tW.grad is None and tb.grad is None
    _, _, X, Y = _problem()
    _tape_loss(tW, tb, X, Y).backward()
    g = tW.grad
    opt.zero_grad(set_to_none=False)
    assert tW.grad is g and np.all(tW.grad.data == 0)
    # and accumulation without zero_grad doubles, as on the tape
    _tape_loss(tW, tb, X, Y).backward()
    once = tW.grad.data.copy()
    _tape_loss(tW, tb, X, Y).backward()
    np.testing.assert_allclose(tW.grad.data, 2 * once)


def test_set_to_none_false_gives_the_same_trajectory():
    a, _ = _run(lambda ps: SGD(ps, lr=0.05, momentum=0.9), STEPS)
    b, _ = _run(lambda ps: SGD(ps, lr=0.05, momentum=0.9), STEPS,
                zero_grad_kw=dict(set_to_none=False))
    _close(a, b, rtol=0, atol=0)


def test_step_updates_in_place_without_recording():
    p = rt.tensor(np.ones(3), requires_grad=True)
    data, version = p.data, p._version
    (p ** 2).sum().backward()
    Adam([p], lr=0.1).step()
    assert p.data is data and p._version > version  # the same storage, a new version
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_parameters_without_a_gradient_are_skipped():
    p, q = rt.tensor(np.ones(2), requires_grad=True), rt.tensor(np.ones(2), requires_grad=True)
    opt = SGD([p, q], lr=0.5, momentum=0.9, weight_decay=0.1)
    (p * 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.data, 1 - 0.5 * (2 + 0.1))
    np.testing.assert_array_equal(q.data, 1.0)  # no grad: not even weight decay


def test_parameter_groups_take_their_own_options():
    p, q = rt.tensor(np.ones(2), requires_grad=True), rt.tensor(np.ones(2), requires_grad=True)
    opt = SGD([{"params": [p]}, {"params": q, "lr": 0.01}], lr=0.5)
    (p + q).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.data, 0.5)
    np.testing.assert_allclose(q.data, 0.99)


def test_closure_recomputes_the_loss():
    p = rt.tensor(np.array([3.0]), requires_grad=True)
    opt = SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    with rt.no_grad():  # the closure records all the same
        loss = opt.step(closure)
    assert float(loss) == 9.0 and float(p.data[0]) == 1.5


def test_bad_arguments_are_refused_as_pytorch_does():
    p = rt.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match="Nesterov"):
        SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="learning rate"):
        Adam([p], lr=-1)
    with pytest.raises(ValueError, match="beta"):
        Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one"):
        SGD([p, p], lr=0.1)


def test_float32_parameters_stay_float32():
    p = rt.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    opt = Adam([p], lr=0.1, weight_decay=0.01)
    for _ in range(3):
        opt.zero_grad()
        (p ** 2).sum().backward()
        opt.step()
    assert p.dtype == np.float32 and opt.state[p]["exp_avg"].dtype == np.float32


@pytest.mark.parametrize("kind", ["sgd", "sgd_nesterov", "adam", "adam_amsgrad"])
def test_against_torch_when_installed(kind):
    torch = pytest.importorskip("torch")
    make = {"sgd": ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
            "sgd_nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
            "adam": ("Adam", dict(lr=0.02, weight_decay=0.01)),
            "adam_amsgrad": ("Adam", dict(lr=0.02, amsgrad=True))}
    name, cfg = make[kind]
    history, _ = _run(lambda ps: getattr(rt.optim, name)(ps, **cfg), STEPS)
    W, b, X, Y = (torch.tensor(a, dtype=torch.float64) for a in _problem())
    W.requires_grad_(True)
    b.requires_grad_(True)
    opt = getattr(torch.optim, name)([W, b], **cfg)
    for got in history:
        opt.zero_grad()
        (((torch.tanh(X @ W + b) - Y) ** 2).sum() / X.shape[0]).backward()
        opt.step()
        np.testing.assert_allclose(got[0], W.detach().numpy(), rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(got[1], b.detach().numpy(), rtol=1e-10, atol=1e-13)


def test_the_readme_training_loop_runs_and_learns():
    import os
    import re

    from paths import ROOT as root
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)\n```", f.read(), re.S)
    loop = [b for b in blocks if "rt.optim.Adam" in b]
    assert len(loop) == 1
    ns = {}
    exec(compile(loop[0], "README.md", "exec"), ns)
    W, b, X, y, loss = ns["W"], ns["b"], ns["X"], ns["y"], ns["loss"]
    assert W.is_leaf and W.requires_grad and W.grad is not None
    pred = (X @ W.data + b.data) > 0
    assert np.mean(pred == (y > 0)) > 0.95 and float(loss) < 0.2
