"""Tensor semantics: textbook gradients with exact values, then the PyTorch-style contract
(errors, grad mode, in-place versions, deep graphs, numpy dispatch, gradcheck, to_dot,
and the conventions where a derivative is undefined)."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import runtime as rt
from runtime import Tensor, enable_grad, no_grad, ops, set_grad_enabled, tensor
from runtime.ops.core import Primitive
from runtime.tape import AccumulateGrad


def value(t):
    return np.asarray(t.data).tolist() if isinstance(t, Tensor) else t


# ---- textbook cases ------------------------------------------------------------------------

def test_polynomial():
    x = tensor(2.0, requires_grad=True)
    y = 3 * x ** 2 + 2 * x + 1
    assert float(y) == 17.0
    y.backward()
    assert float(x.grad) == 14.0  # 6x + 2


def test_linear_model_and_an_input_that_does_not_require_grad():
    x = tensor(3.0)
    w = tensor(4.0, requires_grad=True)
    b = tensor(5.0, requires_grad=True)
    y = w * x + b
    assert float(y) == 17.0
    y.backward()
    assert float(w.grad) == 3.0
    assert float(b.grad) == 1.0
    assert x.grad is None


def test_shared_input():
    a = tensor(2.0, requires_grad=True)
    b = tensor(1.0, requires_grad=True)
    e = (a + b) * (b + 1)
    assert float(e) == 6.0
    e.backward()
    assert float(a.grad) == 2.0  # b + 1
    assert float(b.grad) == 5.0  # (b + 1) + (a + b)


def _log_expression():
    x = tensor(2.0, requires_grad=True)
    y = tensor(3.0, requires_grad=True)
    a = x ** 2
    b = 3 * a
    c = x * y
    d = 5 * c
    e = b + d
    z = e.log()
    for t in (a, b, c, d, e, z):
        t.retain_grad()
    return x, y, dict(a=a, b=b, c=c, d=d, e=e, z=z)


def test_log_expression_with_retained_intermediate_grads():
    # z = log(3x^2 + 5xy) at x=2, y=3: e = 42, dz/dx = (6x + 5y)/e = 27/42, dz/dy = 5x/e
    x, y, mid = _log_expression()
    mid["z"].backward()
    assert round(float(x.grad), 4) == 0.6429
    assert round(float(y.grad), 4) == 0.2381
    expected = dict(a=0.0714, b=0.0238, c=0.1190, d=0.0238, e=0.0238, z=1.0)
    for name, want in expected.items():
        assert round(float(mid[name].grad), 4) == want, name
    np.testing.assert_allclose(float(x.grad), 27 / 42, rtol=1e-15)
    np.testing.assert_allclose(float(y.grad), 10 / 42, rtol=1e-15)


def test_two_backward_calls_with_retain_graph_accumulate():
    x, y, mid = _log_expression()
    mid["z"].backward(retain_graph=True)
    mid["z"].backward()
    assert round(float(x.grad), 4) == 1.2857
    assert round(float(y.grad), 4) == 0.4762
    assert float(mid["z"].grad) == 2.0


def test_sum_of_powers():
    x = tensor(np.ones(3), requires_grad=True)
    r = (x ** 2 + x ** 3).sum()
    assert float(r) == 6.0
    r.backward()
    assert value(x.grad) == [5.0, 5.0, 5.0]


def test_one_sgd_step():
    x, y = tensor(1.0), tensor(2.0)
    w = tensor(1.0, requires_grad=True)
    loss = (w * x - y) ** 2
    assert float(loss) == 1.0
    loss.backward()
    assert float(w.grad) == -2.0
    with no_grad():
        w -= 0.01 * w.grad
    assert float(w) == pytest.approx(1.02, abs=1e-15)
    assert w.is_leaf and w.requires_grad


# ---- repr, requires_grad, leaves ------------------------------------------------------------

def test_repr():
    x = tensor([0.5, 1.0], requires_grad=True)
    assert repr(x) == "Tensor([0.5, 1. ], requires_grad=True)"
    assert repr(x * 2) == "Tensor([1., 2.], grad_fn=<MulBackward>)"
    assert repr(x + x) == "Tensor([1., 2.], grad_fn=<AddBackward>)"
    assert repr(tensor([1.0, 2.0])) == "Tensor([1., 2.])"
    assert repr(tensor(3.0, requires_grad=True) * 1) == "Tensor(3., grad_fn=<MulBackward>)"
    assert repr(x.sum()) == "Tensor(1.5, grad_fn=<SumBackward>)"
    assert repr(x[0]) == "Tensor(0.5, grad_fn=<IndexBackward>)"
    assert repr(x.detach()) == "Tensor([0.5, 1. ])"


def test_requires_grad_needs_a_float_dtype():
    with pytest.raises(RuntimeError, match="floating point"):
        tensor([1, 2, 3], requires_grad=True)
    t = tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad = True
    assert not t.requires_grad


def test_requires_grad_can_only_change_on_leaves():
    x = tensor(1.0, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables"):
        y.requires_grad = False
    z = tensor(1.0)
    assert z.requires_grad_() is z and z.requires_grad


def test_ops_on_tensors_that_do_not_require_grad_record_nothing():
    a = tensor([1.0, 2.0])
    b = a * 3 + 1
    assert not b.requires_grad and b.grad_fn is None and b.is_leaf
    assert value(b) == [4.0, 7.0]


# ---- backward errors -----------------------------------------------------------------------

def test_backward_on_a_non_scalar_needs_a_gradient():
    x = tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        y.backward()
    y.backward(np.array([1.0, 10.0]))
    assert value(x.grad) == [2.0, 20.0]


def test_backward_gradient_shape_must_match():
    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape "
                                           r"of \(3,\) and output\[0\] has a shape of \(2,\)"):
        (x * 2).backward(np.ones(3))


def test_second_backward_without_retain_graph_raises():
    x = tensor(2.0, requires_grad=True)
    y = (x * x).log()
    y.backward()
    assert float(x.grad) == 1.0  # d log(x^2) / dx = 2 / x
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time.*Specify retain_graph=True"):
        y.backward()
    assert float(x.grad) == 1.0  # nothing was accumulated by the failed call


def test_backward_on_a_tensor_that_does_not_require_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        tensor(1.0).backward()
    x = tensor(1.0)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        (x * 2).backward()


def test_backward_on_a_leaf():
    x = tensor(3.0, requires_grad=True)
    x.backward()
    assert float(x.grad) == 1.0


# ---- grad mode -----------------------------------------------------------------------------

def test_no_grad_context_manager():
    x = tensor(1.0, requires_grad=True)
    assert rt.is_grad_enabled()
    with no_grad():
        assert not rt.is_grad_enabled()
        y = x * 2
        with enable_grad():
            assert rt.is_grad_enabled()
            z = x * 3
        assert not rt.is_grad_enabled()
    assert rt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn.name() == "MulBackward"
    z.backward()
    assert float(x.grad) == 3.0


def test_no_grad_and_enable_grad_decorators():
    x = tensor(1.0, requires_grad=True)

    @no_grad()
    def frozen(t):
        return t * 2, rt.is_grad_enabled()

    @enable_grad()
    def recorded(t):
        return t * 2

    y, enabled = frozen(x)
    assert not enabled and not y.requires_grad and float(y) == 2.0
    assert frozen.__name__ == "frozen"
    with no_grad():
        z = recorded(x)
    assert z.requires_grad
    assert rt.is_grad_enabled()


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            1 / 0
    assert rt.is_grad_enabled()
    with set_grad_enabled(False):
        assert not rt.is_grad_enabled()
    assert rt.is_grad_enabled()


# ---- in-place operations and versions ------------------------------------------------------

def test_inplace_ops_bump_the_version_and_change_the_data():
    t = tensor([1.0, 2.0])
    assert t._version == 0
    t.add_(1.0)
    assert t._version == 1 and value(t) == [2.0, 3.0]
    t.mul_(tensor([2.0, 3.0]))
    assert t._version == 2 and value(t) == [4.0, 9.0]
    t.sub_(1.0)
    assert t._version == 3 and value(t) == [3.0, 8.0]
    t += 1.0
    assert t._version == 4 and value(t) == [4.0, 9.0]
    t.zero_()
    assert t._version == 5 and value(t) == [0.0, 0.0]


def test_backward_through_a_saved_then_modified_tensor_raises():
    x = tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a * a  # MulBackward saves a at version 0
    a.add_(1.0)
    a.mul_(2.0)
    a += 1.0
    assert a._version == 3
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[Tensor of "
                                           r"shape \(2,\)\].* is at version 3; expected "
                                           r"version 0 instead"):
        b.sum().backward()


def test_gradient_flows_through_inplace_ops():
    x = tensor([1.0, 2.0], requires_grad=True)
    s = tensor([3.0, 4.0], requires_grad=True)
    a = x * 2
    a.add_(1.0)  # a = 2x + 1
    a.mul_(s)  # a = (2x + 1) s
    assert a.grad_fn.name() == "MulBackward"
    (a * a).sum().backward()  # d/dx a^2 = 2a * 2s ; d/ds a^2 = 2a (2x + 1)
    assert value(x.grad) == [2 * 9 * 2 * 3, 2 * 20 * 2 * 4]
    assert value(s.grad) == [2 * 9 * 3, 2 * 20 * 5]


def test_inplace_on_an_output_that_its_node_reads():
    # exp's rule reads its output; the in-place add must not change what it reads
    x = tensor(0.0, requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    assert float(y) == 2.0
    y.backward()
    assert float(x.grad) == 1.0  # d/dx (e^x + 1) at 0


def test_zero_inplace_blocks_the_gradient():
    x = tensor([1.0, 2.0], requires_grad=True)
    a = x * 3
    a.zero_()
    (a + x).sum().backward()
    assert value(x.grad) == [1.0, 1.0]


def test_inplace_on_a_leaf_that_requires_grad_raises():
    w = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w += 1.0
    assert value(w) == [1.0, 2.0] and w._version == 0
    with no_grad():
        w.mul_(2.0)
    assert value(w) == [2.0, 4.0] and w._version == 1 and w.is_leaf


def test_detach_shares_data_and_version_but_not_the_graph():
    x = tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.data, x.data)
    (d * x).sum().backward()
    assert value(x.grad) == [1.0, 2.0]  # d is a constant
    y = x * 1.0
    z = y * y
    y.detach().add_(1.0)  # shares y's version counter
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        z.sum().backward()


# ---- deep graphs and higher derivatives ------------------------------------------------------

def test_a_chain_of_100000_ops_backwards_without_recursion():
    x = tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.00001
    y.backward()
    np.testing.assert_allclose(float(x.grad), math.exp(100_000 * math.log1p(1e-5)),
                               rtol=1e-9)
    del y
    gc.collect()


def test_second_and_third_derivative_of_a_cube():
    x = tensor(2.0, requires_grad=True)
    (x ** 3).backward(create_graph=True)
    g = x.grad
    assert float(g) == 12.0 and g.requires_grad
    x.grad = None
    g.backward(create_graph=True)
    h = x.grad
    assert float(h) == 12.0  # 6x
    x.grad = None
    h.backward()
    assert float(x.grad) == 6.0


def test_create_graph_through_a_composite():
    # f = sin(x) * y ; d2f/dx dy = cos(x)
    x = tensor(0.5, requires_grad=True)
    y = tensor(2.0, requires_grad=True)
    (x.sin() * y).backward(create_graph=True)
    gx = x.grad
    x.grad = y.grad = None
    gx.backward()
    np.testing.assert_allclose(float(x.grad), -2.0 * math.sin(0.5), rtol=1e-15)
    np.testing.assert_allclose(float(y.grad), math.cos(0.5), rtol=1e-15)


# ---- accumulation, retain_grad, graph structure ---------------------------------------------

def test_grad_accumulates_across_backward_calls_until_zeroed():
    x = tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert value(x.grad) == [2.0, 4.0]
    (x * 3).sum().backward()
    assert value(x.grad) == [5.0, 7.0]
    x.zero_grad()
    assert x.grad is None
    (x * 3).sum().backward()
    assert value(x.grad) == [3.0, 3.0]


def test_retain_grad():
    x = tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = h * h
    y.sum().backward()
    assert h.grad is None  # non-leaf grads are not kept by default
    x.grad = None
    h = x * 3
    h.retain_grad()
    assert h.retains_grad
    (h * h).sum().backward()
    assert value(h.grad) == [6.0, 12.0]
    assert value(x.grad) == [18.0, 36.0]
    x.retain_grad()  # a no-op on leaves
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        tensor(1.0).retain_grad()


def test_grad_fn_and_next_functions():
    x = tensor(3.0)
    w = tensor(4.0, requires_grad=True)
    b = tensor(5.0, requires_grad=True)
    y = w * x + b
    assert y.grad_fn.name() == "AddBackward"
    mul, acc_b = y.grad_fn.next_functions
    assert mul.name() == "MulBackward"
    assert isinstance(acc_b, AccumulateGrad) and acc_b.variable is b
    acc_w, none = mul.next_functions
    assert acc_w.name() == "AccumulateGrad" and acc_w.variable is w
    assert none is None  # x does not require grad
    assert w.grad_fn is None


def test_to_dot_names_the_nodes():
    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sin().sum()
    dot = rt.to_dot(y)
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    for name in ("SumBackward", "SinBackward", "MulBackward", "AccumulateGrad\\n(2,)"):
        assert name in dot, name
    assert dot.count("->") == 4  # out -> sum -> sin -> mul -> x
    assert "(no grad)" in rt.to_dot(tensor(1.0))


# ---- numpy dispatch ---------------------------------------------------------------------------

def test_numpy_ufuncs_and_functions_record_the_tape():
    x = tensor([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]], requires_grad=True)
    y = np.sin(x)
    assert isinstance(y, Tensor) and y.grad_fn.name() == "SinBackward"
    s = np.sum(y, axis=0)
    assert s.grad_fn.name() == "SumBackward" and s.shape == (3,)
    np.testing.assert_allclose(s.data, np.sin(x.data).sum(axis=0))
    s.backward(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.grad.data, np.cos(x.data) * [1.0, 2.0, 3.0])


def test_numpy_matmul_transpose_and_mean():
    a = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tensor([[0.5], [-1.0]], requires_grad=True)
    m = np.matmul(a, b)
    assert m.grad_fn.name() == "MatMulBackward"
    at = a.T
    assert at.grad_fn.name() == "TransposeBackward"
    loss = np.mean(m * m) + np.mean(at)
    loss.backward()
    # d mean(m^2)/da = (2m/2) b^T ; d mean(a^T)/da = 1/4
    mv = a.data @ b.data
    np.testing.assert_allclose(a.grad.data, mv @ b.data.T + 0.25)
    np.testing.assert_allclose(b.grad.data, a.data.T @ mv)


def test_numpy_where_concatenate_and_stack():
    x = tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = tensor([10.0, 20.0, 30.0], requires_grad=True)
    w = np.where(x.data > 0, x, y)
    assert value(w) == [1.0, 20.0, 3.0]
    c = np.concatenate([x, y])
    assert c.grad_fn.name() == "ConcatenateBackward" and c.shape == (6,)
    s = np.stack([x, y], axis=1)
    assert s.grad_fn.name() == "StackBackward" and s.shape == (3, 2)
    (w.sum() + (c * np.arange(6.0)).sum() + (s[:, 1] * 2).sum()).backward()
    assert value(x.grad) == [1.0 + 0.0, 0.0 + 1.0, 1.0 + 2.0]
    assert value(y.grad) == [0.0 + 3.0 + 2.0, 1.0 + 4.0 + 2.0, 0.0 + 5.0 + 2.0]


def test_an_unmodified_numpy_function_on_tensors_matches_finite_differences():
    def model(w, x):
        h = np.tanh(x @ w)
        return np.mean(np.maximum(h, 0.0) ** 2) + 0.1 * np.sum(np.exp(-w * w))

    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    assert rt.gradcheck(model, [Tensor(w, requires_grad=True), Tensor(x)])
    out = model(Tensor(w), x)
    np.testing.assert_allclose(float(out), model(w, x), rtol=1e-15)


def test_unsupported_numpy_functions_raise_type_error_naming_them():
    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"numpy\.convolve"):
        np.convolve(x, x)
    with pytest.raises(TypeError, match=r"numpy\.fft\.fft\b"):
        np.fft.fft(x)
    with pytest.raises(TypeError, match=r"numpy\.add\.reduce"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match="out="):
        np.sum(x, out=np.zeros(()))


def test_tensor_methods():
    x = tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    assert value(x.sum(axis=0)) == [4.0, -6.0]
    assert value(x.reshape(4)) == [1.0, -2.0, 3.0, -4.0]
    assert value(x.relu()) == [[1.0, 0.0], [3.0, 0.0]]
    assert value(abs(x).max()) == 4.0
    (x.relu().sum() + x.mean()).backward()
    assert value(x.grad) == [[1.25, 0.25], [1.25, 0.25]]


# ---- gradcheck ------------------------------------------------------------------------------

def test_gradcheck_passes_on_correct_rules():
    rng = np.random.default_rng(1)
    x = Tensor(rng.uniform(0.5, 2.0, (3, 2)), requires_grad=True)
    y = Tensor(rng.standard_normal((2,)), requires_grad=True)
    assert rt.gradcheck(lambda a, b: (a * b).log1p().sum(axis=1) / b.exp().sum(), [x, y])
    assert rt.gradcheck(lambda a: (a ** 2.5).sum(), [x])
    # written with numpy functions only, on plain arrays
    assert rt.gradcheck(lambda a: np.sum(np.sin(a) * a), [x.data.copy()])


def test_gradcheck_and_finite_differences_of_a_transposed_input():
    """A Fortran-ordered input (a.T): the differences must perturb the array they read."""
    from compiler_helpers import finite_differences

    a = np.tril(np.random.default_rng(2).normal(size=(3, 3))) + 3 * np.eye(3)
    assert rt.gradcheck(lambda m: np.linalg.inv(m), [Tensor(a.T, requires_grad=True)])
    got = finite_differences(lambda m: np.sum(m * np.arange(9.0).reshape(3, 3)), [a.T], 0)
    np.testing.assert_allclose(got, np.arange(9.0).reshape(3, 3), rtol=1e-8)


def test_gradcheck_catches_a_wrong_rule():
    def vjp_wrong_sin(g, out, x):
        return ops.multiply(g, ops.sin(x))  # should be cos

    wrong_sin = Primitive("wrong_sin", np.sin, vjps=(vjp_wrong_sin,))  # not in the table
    x = Tensor(np.array([0.3, 1.2]), requires_grad=True)
    with pytest.raises(AssertionError, match="gradcheck failed for input 0"):
        rt.gradcheck(wrong_sin, [x])
    assert rt.gradcheck(ops.sin, [x])


# ---- conventions where a derivative is undefined ------------------------------------------

def test_maximum_and_minimum_split_ties():
    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = tensor([1.0, 1.0, 5.0], requires_grad=True)
    np.maximum(x, y).sum().backward()
    assert value(x.grad) == [0.5, 1.0, 0.0]
    assert value(y.grad) == [0.5, 0.0, 1.0]
    x.grad = y.grad = None
    np.minimum(x, y).sum().backward()
    assert value(x.grad) == [0.5, 0.0, 1.0]
    assert value(y.grad) == [0.5, 1.0, 0.0]


def test_max_reduction_splits_ties_evenly():
    x = tensor([[2.0, 7.0, 7.0], [7.0, 7.0, 7.0]], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.data, [[0, 0.2, 0.2], [0.2, 0.2, 0.2]])
    x.grad = None
    x.max(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.data, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


def test_kinks_at_zero():
    x = tensor([-1.0, 0.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    assert value(x.grad) == [0.0, 0.0, 1.0]
    x.grad = None
    abs(x).sum().backward()
    assert value(x.grad) == [-1.0, 0.0, 1.0]


def test_sqrt_derivative_at_zero_is_inf():
    x = tensor([0.0, 4.0], requires_grad=True)
    with np.errstate(divide="ignore"):
        x.sqrt().sum().backward()
    assert value(x.grad) == [math.inf, 0.25]


def test_clip_passes_the_gradient_on_the_bounds():
    x = tensor([-2.0, -1.0, 0.0, 1.0, 2.0], requires_grad=True)
    np.clip(x, -1.0, 1.0).sum().backward()
    assert value(x.grad) == [0.0, 1.0, 1.0, 1.0, 0.0]
    lo = tensor(-1.0, requires_grad=True)
    hi = tensor(1.0, requires_grad=True)
    x.grad = None
    ops.clip(x, lo, hi).sum().backward()
    assert value(x.grad) == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert float(lo.grad) == 1.0 and float(hi.grad) == 1.0


def test_power_at_zero_to_the_zero():
    x = tensor(0.0, requires_grad=True)
    y = tensor(0.0, requires_grad=True)
    z = x ** y
    assert float(z) == 1.0
    z.backward()
    assert (float(x.grad), float(y.grad)) == (0.0, 0.0)
    # and the neighbouring cases: d/dx x^y at x=0, y=2 is 0; d/dy at x=2, y=0 is log 2
    x, y = tensor(0.0, requires_grad=True), tensor(2.0, requires_grad=True)
    (x ** y).backward()
    assert (float(x.grad), float(y.grad)) == (0.0, 0.0)
    x, y = tensor(2.0, requires_grad=True), tensor(0.0, requires_grad=True)
    (x ** y).backward()
    assert (float(x.grad), float(y.grad)) == (0.0, math.log(2.0))


def test_power_second_derivatives_at_zero_to_the_zero_are_finite():
    # both first derivatives are 0 along the lines y == 0 and x == 0 (the convention), so
    # differentiating the rules again must not produce 0 * inf = nan from the masked branch
    x = tensor(0.0, requires_grad=True)
    y = tensor(0.0, requires_grad=True)
    (x ** y).backward(create_graph=True)
    gx, gy = x.grad, y.grad
    x.grad = y.grad = None
    (gx + gy).backward()
    assert (float(x.grad), float(y.grad)) == (0.0, 0.0)


@pytest.mark.parametrize("fn", [
    lambda x: (x * x).sum(),
    lambda x: (x.exp() / 3.0).sum(),
    lambda x: x.sqrt().mean(),
    lambda x: (x.sigmoid() * np.tanh(x)).sum(),
    lambda x: np.maximum(x, 1.0).max(axis=0).sum(),
    lambda x: (x @ x.T).std(),
    lambda x: x.reshape(-1)[np.array([0, 0, 3])].sum(),
    lambda x: np.concatenate([x, x ** 2]).var(),
    lambda x: (x * np.ones((2, 2))).logsumexp(axis=1).sum(),
], ids=["mul", "exp-div", "sqrt-mean", "sigmoid-tanh", "max", "matmul-std", "index",
        "concat-var", "logsumexp-broadcast"])
def test_float32_inputs_give_float32_grads(fn):
    x32 = tensor(np.array([[0.5, 1.0], [1.5, 2.0]], dtype=np.float32), requires_grad=True)
    fn(x32).backward()
    assert x32.grad.dtype == np.float32
    x64 = tensor(x32.data.astype(np.float64), requires_grad=True)
    fn(x64).backward()
    np.testing.assert_allclose(x32.grad.data, x64.grad.data, rtol=1e-5, atol=1e-6)


def test_float32_leaves_keep_float32_grads_with_create_graph():
    x = tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (x * np.array([3.0, 4.0])).sum().backward(create_graph=True)  # float64 constant
    assert x.grad.dtype == np.float32
    assert value(x.grad) == [3.0, 4.0]
    x.grad = None
    (x * x * np.float64(1.5)).sum().backward(create_graph=True)
    g = x.grad
    assert g.dtype == np.float32 and g.requires_grad
    x.grad = None
    g.sum().backward()  # d/dx sum(3x) = 3
    assert x.grad.dtype == np.float32 and value(x.grad) == [3.0, 3.0]


def test_views_share_the_version_counter_of_their_base():
    # a[0:2] is a view of a's memory: writing through it changes the a that b saved
    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    b = a * a
    v = a[0:2]
    v.add_(10.0)
    assert value(a) == [11.0, 12.0, 3.0]
    assert a._version == 1 and v._version == 1
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        b.sum().backward()
    t = tensor(np.zeros(4))
    r = t.reshape(2, 2)
    r += 1.0
    assert t._version == 1 and value(t) == [1.0, 1.0, 1.0, 1.0]
    # a fresh result does not share: in-place on it leaves its input's version alone
    c = x * 2.0
    d = c + 1.0
    d.add_(1.0)
    assert c._version == 0


def test_numpy_cannot_turn_a_tensor_on_the_tape_into_an_array():
    a = np.arange(6.0).reshape(2, 3)
    w = rt.tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(TypeError, match="requires grad cannot become a numpy array"):
        a.dot(w)  # ndarray.dot would compute on w's values and drop it from the tape
    out = np.dot(a, w)  # dispatches to the tape
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad), a.sum(0)[:, None] * np.ones((3, 2)))
    with rt.no_grad():
        np.testing.assert_allclose(np.asarray(w), np.ones((3, 2)))
    np.testing.assert_allclose(np.asarray(w.detach()), np.ones((3, 2)))
