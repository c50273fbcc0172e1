"""runtime's functions under PyTorch's names (runtime/functional.py): made from the op set's
tables, numpy's values, PyTorch's keywords, gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import Tensor, functional
from runtime.ops import PRIMITIVES
from runtime.ops.numpy_api import NUMPY, public_names

from compiler_helpers import run_python

FIRST_NAMES = ["log", "exp", "sin", "cos", "tanh", "sqrt", "abs", "sum", "mean", "matmul",
               "zeros", "ones", "zeros_like", "ones_like", "randn", "rand", "arange", "cat",
               "stack", "where", "maximum", "minimum", "clamp", "softmax", "log_softmax",
               "relu", "sigmoid"]


def _x(shape=(3, 4), seed=0, positive=False):
    a = np.random.default_rng(seed).normal(size=shape)
    return np.abs(a) + 0.5 if positive else a


def test_the_first_names_a_pytorch_user_types_are_there_and_return_tensors():
    for name in FIRST_NAMES:
        assert callable(getattr(rt, name)), name
    x = rt.tensor(_x(positive=True), requires_grad=True)
    for name in ["log", "exp", "sin", "cos", "tanh", "sqrt", "abs", "relu", "sigmoid"]:
        out = getattr(rt, name)(x)
        assert isinstance(out, Tensor) and out.requires_grad, name


def test_every_mapped_numpy_function_and_elementwise_op_is_generated():
    """Nothing is written out name by name: a numpy function the op set maps, or an
    elementwise primitive with no numpy spelling, is a runtime function."""
    for public, obj in public_names(scipy=False).items():
        prefix, _, short = public.rpartition(".")
        fn = getattr(rt, short) if prefix == "np" else getattr(rt.linalg, short)
        wrapped = getattr(fn, "__wrapped__", None)
        # creation functions are rewrapped to take requires_grad= (and zeros/ones *sizes)
        assert wrapped is NUMPY[obj] or short in functional.FUNCTIONS, public
    for name, prim in PRIMITIVES.items():
        if prim.elementwise and not prim.custom:
            assert name in functional.FUNCTIONS, name


@pytest.mark.parametrize("name", ["log", "exp", "sin", "cos", "tanh", "sqrt", "abs",
                                  "square", "log1p", "arctan"])
def test_elementwise_values_are_numpys_and_gradients_match_finite_differences(name):
    a = _x(positive=True)
    out = getattr(rt, name)(a)  # arrays in: a Tensor out that requires no grad
    assert isinstance(out, Tensor) and not out.requires_grad
    np.testing.assert_allclose(out.data, getattr(np, name)(a), rtol=1e-15)
    assert rt.gradcheck(getattr(rt, name), [Tensor(a, requires_grad=True)])


def test_relu_and_sigmoid_values_and_gradients():
    a = _x(seed=1)
    np.testing.assert_allclose(rt.relu(a).data, np.maximum(a, 0))
    np.testing.assert_allclose(rt.sigmoid(a).data, 1 / (1 + np.exp(-a)), rtol=1e-14)
    for f in (rt.relu, rt.sigmoid):
        assert rt.gradcheck(f, [Tensor(a, requires_grad=True)])


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var"])
def test_reductions_take_numpys_axis_and_pytorchs_dim(name):
    a = _x(shape=(2, 3, 4))
    ref = getattr(np, name)
    fn = getattr(rt, name)
    np.testing.assert_allclose(fn(a).data, ref(a), rtol=1e-13)
    np.testing.assert_allclose(fn(a, dim=1).data, ref(a, axis=1), rtol=1e-13)
    np.testing.assert_allclose(fn(a, axis=(0, 2)).data, ref(a, axis=(0, 2)), rtol=1e-13)
    out = fn(a, dim=-1, keepdim=True)
    assert out.shape == (2, 3, 1)
    np.testing.assert_allclose(out.data, ref(a, axis=-1, keepdims=True), rtol=1e-13)
    with pytest.raises(TypeError, match="both dim= and axis="):
        fn(a, dim=0, axis=0)
    assert rt.gradcheck(lambda t: fn(t, dim=1), [Tensor(a, requires_grad=True)])


def test_matmul_maximum_minimum_where_clamp_and_their_gradients():
    a, b = _x((3, 4), 2), _x((4, 2), 3)
    np.testing.assert_allclose(rt.matmul(a, b).data, a @ b, rtol=1e-14)
    assert rt.gradcheck(rt.matmul, [Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)])
    c = _x((3, 4), 4)
    np.testing.assert_array_equal(rt.maximum(a, c).data, np.maximum(a, c))
    np.testing.assert_array_equal(rt.minimum(a, c).data, np.minimum(a, c))
    np.testing.assert_array_equal(rt.where(a > c, a, c).data, np.where(a > c, a, c))
    np.testing.assert_array_equal(rt.clamp(a, min=-0.5, max=0.5).data, np.clip(a, -0.5, 0.5))
    np.testing.assert_array_equal(rt.clamp(a, -0.5).data, np.maximum(a, -0.5))
    for f in (rt.maximum, rt.minimum, lambda x, y: rt.where(x > y, x * y, x - y)):
        assert rt.gradcheck(f, [Tensor(a, requires_grad=True), Tensor(c, requires_grad=True)])
    assert rt.gradcheck(lambda x: rt.clamp(x, min=-0.5, max=0.5),
                        [Tensor(a, requires_grad=True)])


def test_cat_and_stack_take_dim_and_route_gradients_back():
    a, b = _x((2, 3), 5), _x((2, 3), 6)
    np.testing.assert_array_equal(rt.cat([a, b], dim=1).data, np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(rt.cat([a, b]).data, np.concatenate([a, b]))
    np.testing.assert_array_equal(rt.stack([a, b], dim=2).data, np.stack([a, b], axis=2))
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    w = np.arange(12.0).reshape(2, 6)
    rt.sum(rt.cat([ta, tb], dim=1) * w).backward()
    np.testing.assert_array_equal(ta.grad.data, w[:, :3])
    np.testing.assert_array_equal(tb.grad.data, w[:, 3:])
    assert rt.gradcheck(lambda x, y: rt.stack([x, y * x], dim=0),
                        [Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)])


def _np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax(dim):
    a = _x((3, 5), 7) * 3
    np.testing.assert_allclose(rt.softmax(a, dim).data, _np_softmax(a, dim), rtol=1e-13)
    np.testing.assert_allclose(rt.log_softmax(a, dim=dim).data, np.log(_np_softmax(a, dim)),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rt.softmax(a, dim).data.sum(axis=dim), 1.0, rtol=1e-14)
    w = _x((3, 5), 8)  # a weighted sum, so that the gradient is not zero
    for f in (rt.softmax, rt.log_softmax):
        assert rt.gradcheck(lambda t: f(t, dim) * w, [Tensor(a, requires_grad=True)])


def test_log_softmax_is_stable_where_the_naive_formula_overflows():
    a = np.array([[1000.0, 0.0, -1000.0]])
    out = rt.log_softmax(a, dim=1).data
    assert np.all(np.isfinite(out)) and out[0, 0] == 0.0 and out[0, 1] == -1000.0
    assert np.all(np.isfinite(rt.softmax(a, dim=1).data))


def test_softmax_needs_a_dim_like_pytorchs():
    with pytest.raises(TypeError):
        rt.softmax(np.ones(3))


def test_creation_from_sizes_with_requires_grad():
    for make in (rt.zeros, rt.ones, rt.randn, rt.rand):
        for args in ((2, 3), ((2, 3),), ([2, 3],)):
            t = make(*args)
            assert isinstance(t, Tensor) and t.shape == (2, 3) and t.dtype == np.float64
            assert t.is_leaf and not t.requires_grad
        t = make(4, requires_grad=True)
        assert t.shape == (4,) and t.requires_grad and t.is_leaf
        (t * t).sum().backward()
        np.testing.assert_array_equal(t.grad.data, 2 * t.data)
        assert make(2, dtype=np.float32).dtype == np.float32
    assert rt.zeros(size=(2, 1)).shape == (2, 1)
    np.testing.assert_array_equal(rt.zeros(2, 3).data, 0.0)
    np.testing.assert_array_equal(rt.ones(3).data, 1.0)
    with pytest.raises(TypeError):
        rt.zeros(2, bogus=1)


def test_creation_like_and_arange():
    x = rt.randn(2, 3, requires_grad=True)
    for make, value in ((rt.zeros_like, 0.0), (rt.ones_like, 1.0)):
        t = make(x)
        assert t.shape == x.shape and t.is_leaf and not t.requires_grad
        np.testing.assert_array_equal(t.data, value)
        assert make(x, requires_grad=True).requires_grad
    np.testing.assert_array_equal(rt.arange(5).data, np.arange(5))
    np.testing.assert_array_equal(rt.arange(1.0, 2.0, 0.25).data, np.arange(1.0, 2.0, 0.25))
    t = rt.arange(0.0, 3.0, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        rt.arange(3, requires_grad=True)  # integers cannot require grad, as in PyTorch


def test_random_draws_follow_manual_seed_and_their_distributions():
    rt.manual_seed(3)
    a = rt.randn(1000)
    rt.manual_seed(3)
    np.testing.assert_array_equal(rt.randn(1000).data, a.data)
    assert abs(float(a.data.mean())) < 0.15 and 0.85 < float(a.data.std()) < 1.15
    u = rt.rand(1000)
    assert float(u.data.min()) >= 0.0 and float(u.data.max()) < 1.0
    assert 0.4 < float(u.data.mean()) < 0.6
    g = np.random.default_rng(5)
    np.testing.assert_array_equal(rt.rand(3, generator=g).data,
                                  np.random.default_rng(5).random(3))


def test_functions_compose_into_a_model_whose_gradient_matches_finite_differences():
    X, W = _x((5, 3), 9), _x((3, 4), 10)
    y = np.eye(4)[[0, 3, 1, 1, 2]]

    def loss(w):
        logits = rt.matmul(rt.tanh(X), w)
        return -rt.mean(rt.sum(rt.log_softmax(logits, dim=1) * y, dim=1))

    assert rt.gradcheck(loss, [Tensor(W, requires_grad=True)])


def test_non_array_results_stay_as_numpy_gives_them():
    x = rt.randn(2, 3)
    assert rt.shape(x) == (2, 3) and rt.ndim(x) == 2
    parts = rt.split(rt.arange(6.0), 3)
    assert isinstance(parts, list) and all(isinstance(p, Tensor) for p in parts)


def test_linalg_functions_are_under_runtime_linalg():
    a = _x((3, 3), 11)
    np.testing.assert_allclose(rt.linalg.norm(a).data, np.linalg.norm(a), rtol=1e-14)
    np.testing.assert_allclose(rt.linalg.inv(a).data, np.linalg.inv(a), rtol=1e-12)
    assert rt.gradcheck(rt.linalg.det, [Tensor(a, requires_grad=True)])


def test_the_generated_names_leave_runtimes_own_names_alone():
    assert rt.tensor is __import__("runtime.tensor", fromlist=["tensor"]).tensor
    assert rt.Tensor is Tensor and rt.no_grad.__module__ == "runtime.mode"
    assert "sum" not in rt.__all__  # a star import does not shadow builtins


def test_runtime_imports_after_scipy_and_keeps_to_numpy_names():
    """A program that imported scipy first: the generated functions are numpy's names only
    (scipy's spellings are registered lazily, and are no numpy functions)."""
    pytest.importorskip("scipy")
    code = ("import scipy.stats, scipy.special, runtime; "
            "assert not hasattr(runtime.linalg, 'logpdf'); print(runtime.exp.__name__)")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "exp"


def test_r_and_c_on_the_tape_to_second_order():
    """runtime.r_ / runtime.c_: numpy's index tricks on Tensors (np.r_ itself converts
    its items to arrays, which a Tensor on the tape refuses, naming these)."""
    x = np.array([0.5, -1.0, 2.0])

    def f(t):
        return (rt.r_[t, t * 2, 3.0] ** 3).sum() + (rt.c_[t, t ** 2] ** 2).sum()

    def grad_at(v):
        t = Tensor(v, requires_grad=True)
        f(t).backward()
        return t.grad.numpy()

    def value(v):
        return float(np.sum(np.r_[v, v * 2, 3.0] ** 3) + np.sum(np.c_[v, v ** 2] ** 2))

    eps = 1e-6
    fd = np.array([(value(x + eps * e) - value(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(grad_at(x), fd, rtol=1e-6)
    t = Tensor(x, requires_grad=True)
    f(t).backward(create_graph=True)
    g = t.grad
    t.grad = None
    g.sum().backward()
    fd2 = np.array([(grad_at(x + eps * e) - grad_at(x - eps * e)).sum() / (2 * eps)
                    for e in np.eye(3)])
    np.testing.assert_allclose(t.grad.numpy(), fd2, rtol=1e-5)
    assert rt.c_[1.0, 2.0].shape == (1, 2)
    with pytest.raises(TypeError, match="runtime.r_"):
        np.r_[Tensor(x, requires_grad=True), 1.0]
