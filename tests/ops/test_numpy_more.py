"""np.gradient, np.partition, np.row_stack, np.angle and np.real_if_close: compiled and on
the tape, against numpy's values and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import srcgrad
from compiler_helpers import check_grad, finite_differences

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # np.row_stack

X = np.array([0.3, 1.2, -0.5, 2.0, 0.7, -1.1])
M = np.random.default_rng(3).normal(size=(4, 5))


def grad_1d(x):
    return np.sum(np.gradient(x, axis=0) ** 2)


def grad_spacing(x):
    return np.sum(np.gradient(x, 0.5, axis=0) * np.cos(x))


def grad_2d_axis1(m):
    return np.sum(np.gradient(m, 2.0, axis=1) ** 3)


def grad_2d_both(m):
    gy, gx = np.gradient(m, 1.0, 0.25, axis=(0, 1))
    return np.sum(gy * gx)


def grad_no_axis(x):
    return np.sum(np.gradient(x) ** 2)


def part(x):
    p = np.partition(x, 2)
    return np.sum(p[:3] ** 2) + 3 * p[2]


def row_stack(x):
    return np.sum(np.row_stack([x, x * 2]) ** 2)


def angle(x):
    return np.sum(np.angle(x) * x) + np.sum(np.angle(x, deg=True))


def real_if_close(x):
    return np.sum(np.real_if_close(x) ** 2)


@pytest.mark.parametrize("f,arg", [(grad_1d, X), (grad_spacing, X), (grad_2d_axis1, M),
                                   (grad_2d_both, M), (part, X), (row_stack, X),
                                   (angle, X), (real_if_close, X)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_compiled_gradient_against_finite_differences_and_the_tape(f, arg):
    check_grad(f, (arg,))


def test_values_are_numpys():
    np.testing.assert_allclose(np.gradient(rt.Tensor(X)).numpy(), np.gradient(X))
    ty, tx = np.gradient(rt.Tensor(M), 1.0, 0.25)
    gy, gx = np.gradient(M, 1.0, 0.25)
    np.testing.assert_allclose(ty.numpy(), gy)
    np.testing.assert_allclose(tx.numpy(), gx)
    z = np.array([-2.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(np.angle(rt.Tensor(z)).numpy(), np.angle(z))


def test_partition_is_a_partition_around_kth():
    x = np.random.default_rng(0).normal(size=9)
    p = np.partition(rt.Tensor(x), 4).numpy()
    assert p[4] == np.partition(x, 4)[4]
    assert np.all(p[:4] <= p[4]) and np.all(p[5:] >= p[4])
    with pytest.raises(ValueError, match="out of bounds"):
        np.partition(rt.Tensor(x), 9)


def _tape_grad(x):
    t = rt.Tensor(x, requires_grad=True)
    (np.gradient(t) ** 3).sum().backward()
    return t.grad.numpy()


def test_gradient_second_order_on_the_tape():
    """A Hessian-vector product through np.gradient (create_graph) against finite
    differences of the tape's own gradient."""
    v = np.linspace(-1, 1, X.size)
    t = rt.Tensor(X, requires_grad=True)
    (np.gradient(t) ** 3).sum().backward(create_graph=True)
    g = t.grad
    t.grad = None
    (g * rt.Tensor(v)).sum().backward()
    eps = 1e-6
    fd = (_tape_grad(X + eps * v) - _tape_grad(X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_a_too_short_axis_is_an_error_as_in_numpy():
    with pytest.raises((IndexError, ValueError)):
        srcgrad.grad(grad_1d)(np.array([1.0]))


def test_gradient_without_axis_is_refused_in_compiled_code_with_a_hint():
    with pytest.raises(srcgrad.SrcgradError, match="pass axis="):
        srcgrad.grad(grad_no_axis)(X)


def test_edge_order_2_and_coordinates_are_refused():
    with pytest.raises(TypeError, match="edge_order"):
        np.gradient(rt.Tensor(X), edge_order=2)
    with pytest.raises(TypeError, match="spacing"):
        np.gradient(rt.Tensor(X), np.arange(6.0))


W = np.arange(3.0)


def resized(x):
    r = np.resize(W, x.shape[0])  # runs as written: a numpy function named like a method
    return np.sum(x * r)


def test_a_numpy_function_named_like_a_mutating_method_does_not_change_numpy():
    """`np.resize(W, n)` runs as written; it once counted as changing `np` (ndarray.resize
    changes its array), and the next read of `np` was refused as stale."""
    x = np.ones(5)
    np.testing.assert_allclose(srcgrad.grad(resized)(x), np.resize(W, 5))
    np.testing.assert_allclose(finite_differences(resized, (x,), 0), np.resize(W, 5), atol=1e-6)


def r_join(x):
    return np.sum(np.r_[x, x * 2, 3.0] ** 2)


def c_join(x):
    return np.sum(np.c_[x, x * 2] ** 2 * np.arange(2.0))


def c_of_numbers(x):
    # np.c_ of two numbers is 1x2: its row 0 is both of them
    return np.sum(np.c_[x[0], x[1]][0] * x[:2]) + np.sum(np.column_stack([x[2], x[0]])[0] ** 3)


def r_of_matrices(m):
    return np.sum(np.r_[m, m * 3] ** 2 * np.arange(m.shape[1] * 1.0))


@pytest.mark.parametrize("f,arg", [(r_join, X), (c_join, X), (c_of_numbers, X),
                                   (r_of_matrices, M)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_r_and_c_of_run_time_arrays(f, arg):
    value, _ = srcgrad.value_and_grad(f)(arg)
    np.testing.assert_allclose(value, f(arg))
    check_grad(f, (arg,), tape=False)  # the tape refuses np.r_ (numpy converts its items)


def r_with_slice(x):
    return np.sum(np.r_[x, 0:3])


def test_r_with_a_slice_is_refused_with_a_hint():
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="np.concatenate"):
        srcgrad.grad(r_with_slice)(X)
