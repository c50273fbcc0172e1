"""Code generation stays sound where the optimizer rewrote values or the IR's dtype facts
are weak:

- the value checked for a scalar shape is an output like any other: simplified
  (`a + a` -> `2 * a`), written in place or merged from branches, it is still checked;
- an index part written where it is used (`a[:, :H]`) is also written where it is read as
  a value;
- `a op= b` is written only when the result keeps `a`'s dtype at run time (integer arrays
  from arange, integer parameters and module arrays become floats when mixed with floats).
"""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad

rng = np.random.default_rng(11)
A = rng.normal(size=(4, 5))
K = np.arange(20)  # a module-level integer array, read by name


def twice(a):
    return a + a


def list_of_numbers_and_a_value(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1]


def list_read_twice(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1] + x[2] * a


def sin_of_columns(a, H):
    return np.sum(np.sin(a[:, :H]))


def rows_and_step(a, H):
    return np.sum(np.sin(a[1:H, ::2]))


def column_and_block(a, H):
    return np.sum(a[:, H] ** 2) + np.sum(np.cos(a[:, :H]))


def slice_in_loop(a, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(np.sin(a[:, i:i + 1]))
    return s


def same_slice_twice(a, H):
    b = a[:, :H]
    c = a[:, :H]
    return np.sum(b * c)


def times_one(a):
    return a * 1.0


def updated_then_returned(a):
    y = a * 2.0
    y = y + 1.0
    return y


def returned_from_branches(a):
    if np.sum(a) > 0:
        return a * 2.0
    return a * 3.0


SCALAR_CASES = [
    (twice, (0.7,)), (twice, (np.array(0.7),)), (list_of_numbers_and_a_value, (0.7,)),
    (list_read_twice, (0.7,)), (times_one, (0.5,)), (updated_then_returned, (0.5,)),
    (returned_from_branches, (0.5,)), (returned_from_branches, (-0.5,)),
]


@pytest.mark.parametrize("fn, args", SCALAR_CASES,
                         ids=[f"{c[0].__name__}-{type(c[1][0]).__name__}"
                              for c in SCALAR_CASES])
def test_scalar_output_after_rewrites(fn, args):
    check_grad(fn, args, compiled=srcgrad.grad(fn, cache=False))


@pytest.mark.parametrize("fn", [twice, times_one, updated_then_returned,
                                returned_from_branches])
def test_array_output_refused_however_it_is_written(fn):
    with pytest.raises(TypeError, match="scalar-output"):
        srcgrad.grad(fn, cache=False)(A)


@pytest.mark.parametrize("fn, n", [(sin_of_columns, 2), (rows_and_step, 3),
                                   (column_and_block, 2), (slice_in_loop, 3),
                                   (same_slice_twice, 3)])
def test_slice_bound_from_an_argument(fn, n):
    check_grad(fn, (A, n), compiled=srcgrad.grad(fn, cache=False))


def arange_scaled(x):
    return np.sum((np.arange(3) * 2 + 0.5) * x)


def int_parameter_plus_float(x, n):
    t = n * 3
    t = t + 0.5
    return np.sum(t * x)


def int_global_divided(x):
    t = K * 2
    t = t / 3
    return np.sum(t * x)


def int_global_minus_float(x):
    t = K * x[0]
    u = K * 2
    u = u - t
    return np.sum(u * x)


def int_literal_array(x):
    t = np.array([1, 2, 3]) * 4
    t = t * 0.25
    return np.sum(t * x)


def int_sqrt(x):
    t = np.arange(3) + 1
    t = np.sqrt(t)
    t = t + 1
    return np.sum(t * x)


@pytest.mark.parametrize("fn, args", [
    (arange_scaled, (rng.normal(size=3),)),
    (int_parameter_plus_float, (rng.normal(size=3), np.arange(3))),
    (int_global_divided, (rng.normal(size=20),)),
    (int_global_minus_float, (rng.normal(size=20),)),
    (int_literal_array, (rng.normal(size=3),)),
    (int_sqrt, (rng.normal(size=3),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_in_place_keeps_the_dtype(fn, args):
    check_grad(fn, args, compiled=srcgrad.grad(fn, cache=False))


def linear(x):
    a = 2 * x
    return a + 0.5 * x * 3


def test_jvp_with_integer_tangent():
    x = rng.normal(size=3)
    t = np.ones(3, dtype=int)
    out, tan = srcgrad.jvp(linear, (x,), (t,))
    eps = 1e-6
    fd = (linear(x + eps * t) - linear(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(out, linear(x))
    np.testing.assert_allclose(tan, fd, rtol=1e-6)


def float32_update(x):
    a = x * 2.0
    a = a + 1.5
    return np.sum(a * x)


def test_in_place_still_used_for_floats():
    """Soundness costs nothing where the dtype is known: float updates stay in place."""
    g = srcgrad.grad(float32_update, cache=False)
    assert "+= 1.5" in g.source
    x = rng.normal(size=4)
    check_grad(float32_update, (x,), compiled=g)
    got = g(x.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, g(x), rtol=1e-5)


def scaled_by_rank(x, n):
    return np.sum(x) * np.ndim(n) + np.size(n) * (np.shape(n) == (2, 2))


@pytest.mark.parametrize("n", [2.0, np.ones((2, 2)), np.ones(3)])
def test_rank_and_size_of_a_python_number(n):
    # `n` may be a Python number at run time: ndim, size and shape are written as np.ndim(n),
    # np.size(n) and np.shape(n), which a float has, not as n.ndim...
    x = np.ones(3)
    got = srcgrad.grad(scaled_by_rank)(x, n)
    np.testing.assert_allclose(got, np.full(3, float(np.ndim(n))))
    assert srcgrad.value_and_grad(scaled_by_rank)(x, n)[0] == scaled_by_rank(x, n)


def weighted_by_ranks(x, n, m):
    return np.sum(x) * len(np.shape(n)) + len(np.shape(m)) * np.sum(x ** 2)


@pytest.mark.parametrize("n,m", [(2.0, np.ones((2, 3))), (np.ones(3), 1.5),
                                 (np.ones((1, 1, 2)), np.ones(4))])
def test_len_of_a_shape_known_only_at_run_time(n, m):
    # len() of a shape tuple is the number of its entries (it used to be written as the
    # tuple's first entry, `np.shape(n).shape[0]`, which a tuple does not have)
    check_grad(weighted_by_ranks, [np.array([0.5, -1.0, 2.0]), n, m], tape=False)
