"""Assignment into arrays inside differentiated code: `x[i] = v`, `x[i] += v`,
`x[mask] = v`, `x[:, j] = col`, and arrays preallocated with np.zeros / np.empty /
np.zeros_like and filled in static and run-time loops (a naive convolution, max-pool, an
RNN keeping its states in a preallocated array).

srcgrad lowers `x[idx] = v` as `x = setitem(x, idx, v)`, a new array, and rebinds every
name bound to x. Each gradient is checked against finite differences and against the tape
engine (runtime.Tensor implements `__setitem__`, so the unmodified function runs on it).
Where the array may share memory with what srcgrad cannot rebind (the caller's argument, a
module array, a view), the assignment is refused with an error located at the user's line.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad, finite_differences
from srcgrad.errors import UnsupportedSyntaxError

RNG = np.random.default_rng(0)
MODULE_ARRAY = np.ones(4)


# ---- the constructs, one at a time ---------------------------------------------------------

def set_an_item(x, w):
    y = x * 2.0
    y[0] = w[1] * 3.0
    y[-1] = 7.0  # a constant overwrites: no gradient reaches x[-1]
    return np.sum(y * y * x)


def add_into_a_slice(x, w):
    y = np.sin(x)
    y[1:3] += w[:2] ** 2
    y[::2] *= w[2]
    return np.sum(y * y)


def set_a_mask(x, w):
    y = x * w[0]
    m = y > 1.0
    y[m] = 0.5 * y[m] ** 2
    y[~m] = w[1]  # a scalar broadcast into every selected element
    return np.sum(y * x)


def set_a_column(a, w):
    b = np.tanh(a)
    b[:, 1] = w  # a column
    b[0, :] = b[0, :] * w[0]
    b[1] += w[:1]  # broadcast along the row
    return np.sum(b ** 3)


def set_with_integer_arrays(a, w):
    b = a * 1.0
    b[[2, 0]] = b[[0, 2]] * w[0]  # swap two rows, scaled
    b[np.array([1, 2]), np.array([0, 2])] = w[:2]
    return np.sum(b * b * a)


def chained_index(a, w):
    b = a + 0.0
    b[1][2] = w[0] * w[1]  # writes through the view b[1]
    b[0][:2] += w[1:]
    return np.sum(np.exp(b))


def alias_sees_the_write(x, w):
    y = x * 2.0
    z = y  # the same array: numpy shows the write through z
    y[1] = w[0] ** 2
    return np.sum(z * x) + np.sum(y)


def write_inside_a_branch(x, w):
    y = x * x
    if np.sum(x) > 0:
        y[0] = w[0]
    else:
        y[1] = w[1]
    return np.sum(y * w[2])


def into_a_zero_d_array(x, w):
    y = np.zeros(())
    y[()] = np.sum(x * x) * w[0]
    y[...] += w[1]
    return y * w[1]


CASES = [
    (set_an_item, [(4,), (3,)]),
    (add_into_a_slice, [(4,), (3,)]),
    (set_a_mask, [(6,), (2,)]),
    (set_a_column, [(3, 3), (3,)]),
    (set_with_integer_arrays, [(3, 3), (3,)]),
    (chained_index, [(2, 3), (3,)]),
    (alias_sees_the_write, [(3,), (1,)]),
    (write_inside_a_branch, [(3,), (3,)]),
    (into_a_zero_d_array, [(3,), (2,)]),
]


# The tape cannot check these: a Tensor written into a plain numpy array (np.zeros(n) is
# one, np.zeros_like(tensor) is a Tensor) loses its graph, a value saved by the tape then
# overwritten trips its version check (as torch's does), and `y[...] += v` on a 0-d Tensor
# goes through numpy's out= (not supported by the tape). Finite differences check them.
NO_TAPE = {"set_a_column", "into_a_zero_d_array", "conv1d_static", "conv1d_runtime",
           "maxpool_runtime", "rnn_states", "copy_first",
           "heat_steps_with_a_new_laplacian",  # (numpy arrays written with tensors)
           "written_through_unary_plus"}  # (the tape's +t is t)


def check(fn, args, wrt=0):
    return check_grad(fn, args, wrt=wrt, tape=fn.__name__ not in NO_TAPE)


def _args(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, s) for s in shapes]


@pytest.mark.parametrize("fn, shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_item_assignment_against_tape_and_finite_differences(fn, shapes):
    args = _args(shapes)
    check(fn, args, wrt=(0, 1))


@pytest.mark.parametrize("fn, shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_compiled_function_leaves_its_arguments_unchanged(fn, shapes):
    args = _args(shapes)
    before = [a.copy() for a in args]
    value = fn(*[a.copy() for a in args])
    srcgrad.grad(fn, wrt=(0, 1))(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    # the forward value is what numpy computes (vjp returns it)
    out, _ = srcgrad.vjp(fn, *args, wrt=(0, 1))
    np.testing.assert_allclose(out, value, rtol=1e-12)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_write_inside_a_branch_takes_both_paths():
    for sign in (1.0, -1.0):
        check_grad(write_inside_a_branch, [sign * np.array([0.5, 0.7, 0.2]),
                                           np.array([0.3, -0.4, 1.2])], wrt=(0, 1))


# ---- preallocated arrays filled in loops ---------------------------------------------------

def conv1d_static(x, k):
    out = np.zeros(4)
    for i in range(4):  # unrolled at compile time
        out[i] = np.sum(x[i:i + 3] * k)
    return np.sum(out ** 2)


def conv1d_runtime(x, k):
    n = x.shape[0] - k.shape[0] + 1
    out = np.empty(n)
    for i in range(n):  # n is known only at run time: a loop carrying `out`
        out[i] = np.sum(x[i:i + 3] * k)
    return np.sum(np.tanh(out) * x[:n])


def maxpool_runtime(x):
    n = x.shape[0] // 2
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.max(x[2 * i:2 * i + 2])
    return np.sum(out * out)


def rnn_states(W, xs):
    T = xs.shape[0]
    H = np.zeros((T + 1, W.shape[0]))
    for t in range(1, T + 1):
        H[t] = np.tanh(W @ H[t - 1] + xs[t - 1])
    return np.sum(H[1:] ** 2)


def rnn_states_static(W, xs):
    H = np.zeros_like(xs)
    h = xs[0]
    for t in range(3):
        h = np.tanh(W @ h + xs[t])
        H[t] = h
    return np.sum(H * H)


def accumulate_columns(a, w):
    acc = np.zeros_like(a)
    for j in range(a.shape[1]):
        acc[:, j] += a[:, j] * w[j]
        acc[0, j] = acc[0, j] ** 2
    return np.sum(acc)


def doubles_a_prefix(x, n):
    y = x * 1.0  # a fresh array: writing into it changes nothing the caller holds
    for i in range(n):
        y[i] = y[i] * 2.0
    return np.sum(y * x)


def view_taken_before_the_loop(x, n):
    y = x * 1.0
    head = y[:2]
    for i in range(n):
        y[i] = y[i] * 2.0  # E
    return np.sum(head)


def test_a_fresh_array_written_in_a_run_time_loop():
    x = RNG.uniform(-1, 1, 5)
    for n in (0, 2, 5):
        check(doubles_a_prefix, [x, n])


def test_a_view_held_across_the_loop_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match="before the loop") as info:
        srcgrad.grad(view_taken_before_the_loop, cache=False)(np.ones(4), 2)
    assert info.value.lineno == _marked_line(view_taken_before_the_loop)


def heat_steps_with_a_new_laplacian(u, n, dt=0.1):
    for _ in range(n):
        lap = np.zeros(u.shape)  # made anew at each step: the carried u is no view of it
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = (u + lap * dt).copy()
    return np.sum(u ** 2)


def write_into_a_carried_buffer(x, n):
    b = x * 1.0
    w = b[::-1]
    for _ in range(n):
        b[0] = 5.0  # w, carried too, may be a view of b (it is: numpy shows the write)
        w = w + 1.0
    return np.sum(w)


def test_a_carry_is_no_view_of_an_array_each_step_makes_anew():
    """A loop's carried value of unknown origin may be a view of anything made before it,
    not of an array made after it in the iteration (it was refused as one)."""
    x = RNG.uniform(-1, 1, 7)
    for n in (0, 1, 3):
        check(heat_steps_with_a_new_laplacian, [x, n])
    with pytest.raises(UnsupportedSyntaxError, match="`b` may share its memory"):
        srcgrad.grad(write_into_a_carried_buffer, cache=False)(np.ones(6), 2)


def written_through_unary_plus(x):
    a = x * 2.0
    t = +a  # a new array in numpy
    t[1] = 5.0
    return np.sum(a * a) + np.sum(t)


@srcgrad.primitive
def same_memory(z):
    return z[::1]  # a view of its input, whatever the op declares


@same_memory.defvjp
def _same_memory_vjp(g, out, z):
    return g


def written_through_a_users_op_in_a_loop(x, c):
    a = x * 2.0
    s = 0.0
    for i in range(2):
        t = same_memory(a)
        t[i] = t[i] * 3.0
        s = s + np.sum(a * a)
        a = a * c
    return s


def test_unary_plus_copies_and_a_users_op_may_return_a_view():
    x = RNG.uniform(-1, 1, 5)
    check(written_through_unary_plus, [x])
    # (what a user's op returns may be a view of what it was given: a write into it is
    # refused, not made behind the given array's back)
    with pytest.raises(UnsupportedSyntaxError, match="a user's op, which may return a view"):
        srcgrad.grad(written_through_a_users_op_in_a_loop, cache=False)(x, 1.0)


def into_a_constant_array(x):
    a = np.array([1.0, 2.0, 3.0])  # a constant srcgrad folds: still the function's own
    b = a
    a[1] = x[0] ** 2
    return np.sum(b * x)


def filled_in_a_while_loop(x):
    out = np.zeros_like(x)
    i = 0
    while True:
        out[i] = x[i] * out[i - 1] + 1.0  # out[-1] is still 0 at i = 0
        i += 1
        if i >= x.shape[0]:
            break
    return np.sum(out)


def tuple_of_item_targets(x):
    a = np.zeros(2)
    a[0], a[1] = x[1] * 2, x[0] ** 3
    return np.sum(a * x)


@pytest.mark.parametrize("fn", [into_a_constant_array, filled_in_a_while_loop,
                                tuple_of_item_targets])
def test_more_places_to_write(fn):
    x = np.array([0.3, 0.5, 0.7])[:2 if fn is tuple_of_item_targets else 3]
    # into np.zeros / np.array (plain numpy arrays) the tape loses the writes
    check_grad(fn, [x], tape=fn is filled_in_a_while_loop)


def test_naive_convolution_unrolled():
    x, k = _args([(6,), (3,)], 1)
    check(conv1d_static, [x, k], wrt=(0, 1))


def test_naive_convolution_in_a_run_time_loop():
    x, k = _args([(7,), (3,)], 2)
    check(conv1d_runtime, [x, k], wrt=(0, 1))
    assert "for i in range(" in srcgrad.grad(conv1d_runtime, wrt=(0, 1)).source
    x2 = RNG.uniform(-1, 1, 10)  # another length: the same code, no recompilation needed
    check(conv1d_runtime, [x2, k], wrt=(0, 1))


def test_max_pool_in_a_run_time_loop():
    x = RNG.permutation(np.linspace(-2.0, 2.0, 8))  # distinct values: max is smooth here
    check(maxpool_runtime, [x])


def test_rnn_storing_states_in_a_preallocated_array():
    W = RNG.uniform(-0.5, 0.5, (3, 3))
    xs = RNG.uniform(-1.0, 1.0, (5, 3))
    check(rnn_states, [W, xs], wrt=(0, 1))
    check(rnn_states_static, [W, xs[:3]], wrt=(0, 1))


def test_columns_accumulated_in_a_run_time_loop():
    a, w = _args([(3, 4), (4,)], 3)
    check(accumulate_columns, [a, w], wrt=(0, 1))


# ---- higher order --------------------------------------------------------------------------

def test_hessian_vector_product_through_a_filled_array():
    W = RNG.uniform(-0.5, 0.5, (3, 3))
    xs = RNG.uniform(-1.0, 1.0, (4, 3))
    v = RNG.uniform(-1.0, 1.0, (3, 3))
    got = srcgrad.hvp(rnn_states, wrt=0)(W, xs, v)
    g = srcgrad.grad(rnn_states, wrt=0)
    eps = 1e-5
    want = (g(W + eps * v, xs) - g(W - eps * v, xs)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def filled_by_a_scalar(s, w):
    y = w * s
    y[1:] = y[1:] * w[:-1] * s
    y[0] += s ** 3
    return np.sum(y ** 2)


def test_grad_of_grad_through_item_assignment():
    s, w = 0.7, RNG.uniform(0.5, 1.5, 4)
    dsw = srcgrad.grad(srcgrad.grad(filled_by_a_scalar, wrt=0), wrt=1)(s, w)
    ds = srcgrad.grad(filled_by_a_scalar, wrt=0)
    want = finite_differences(lambda s_, w_: ds(s_, w_), [s, w], 1)
    np.testing.assert_allclose(dsw, want, rtol=1e-5, atol=1e-6)
    dss = srcgrad.grad(srcgrad.grad(filled_by_a_scalar, wrt=0), wrt=0)(s, w)
    eps = 1e-5
    np.testing.assert_allclose(dss, (ds(s + eps, w) - ds(s - eps, w)) / (2 * eps), rtol=1e-5)


def test_forward_mode_through_item_assignment():
    x, w = _args([(4,), (3,)], 4)
    t = RNG.uniform(-1, 1, 4)
    out, tangent = srcgrad.jvp(add_into_a_slice, (x, w), (t, None))
    eps = 1e-6
    want = (add_into_a_slice(x + eps * t, w) - add_into_a_slice(x - eps * t, w)) / (2 * eps)
    np.testing.assert_allclose(out, add_into_a_slice(x, w), rtol=1e-12)
    np.testing.assert_allclose(tangent, want, rtol=1e-5, atol=1e-7)


# ---- refusals ------------------------------------------------------------------------------

def writes_into_the_argument(x):
    x[0] = 1.0  # E
    return np.sum(x * x)


def writes_into_an_alias_of_the_argument(x):
    y = x
    y[1:] += 1.0  # E
    return np.sum(y * y)


def writes_into_a_module_array(x):
    MODULE_ARRAY[0] = np.sum(x)  # E
    return np.sum(MODULE_ARRAY * x)


def writes_into_a_view(x):
    y = x * 2.0
    r = y[0:2]
    r[0] = 5.0  # E
    return np.sum(y * x)


def reads_a_view_after_the_write(x):
    y = x * 2.0
    r = y[0:2]
    y[0] = 5.0
    return np.sum(r * x[:2])  # E


def reads_a_view_of_a_constant_after_the_write(x):
    a = np.array([1.0, 2.0, 3.0])  # folded to a numpy array at compile time
    r = a[0:2]
    a[0] = x[0] ** 2
    return np.sum(r * x[:2])  # E


def repeated_index_write(x):
    y = x * 1.0
    y[np.array([0, 0])] = x[:2]
    return np.sum(y)


REFUSED = [
    (writes_into_the_argument, "the caller's argument"),
    (writes_into_an_alias_of_the_argument, "`y = y.copy()`"),
    (writes_into_a_module_array, "module-level array"),
    (writes_into_a_view, "the array it is a view of"),
    (reads_a_view_after_the_write, "may be a view of `y`"),
    (reads_a_view_of_a_constant_after_the_write, "may be a view of `a`"),
]


def _marked_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if ln.rstrip().endswith("# E"))


@pytest.mark.parametrize("fn, words", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_refused_with_a_located_error(fn, words):
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcgrad.grad(fn, cache=False)(np.ones(4))
    err = info.value
    assert err.filename == __file__
    assert err.lineno == _marked_line(fn)
    assert words in str(err)


def test_the_refused_function_leaves_the_argument_alone():
    x = np.ones(4)
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.grad(writes_into_the_argument, cache=False)(x)
    np.testing.assert_array_equal(x, np.ones(4))


def test_a_copy_first_makes_it_work():
    def copy_first(x):
        x = x.copy()
        x[0] = np.sum(x ** 2)
        return np.sum(x * x)

    check(copy_first, [RNG.uniform(-1, 1, 4)])


def test_a_repeated_integer_index_is_refused_at_run_time():
    with pytest.raises(ValueError, match="more than once"):
        srcgrad.grad(repeated_index_write, cache=False)(np.ones(4))


def test_floats_written_into_an_integer_array_are_refused():
    # numpy truncates them: the derivative through the write is zero, not v's
    def truncated(x):
        y = np.zeros(3, dtype=int)
        y[0] = x[0] * 10
        return np.sum(y * x)

    def cast_first(x):
        y = np.zeros(3, dtype=int)
        y[0] = (x[0] * 10).astype(int)
        y[1] = 2.0  # a Python number: not differentiated
        return np.sum(y * x)

    x = np.array([0.33, 0.5, 0.7])
    with pytest.raises(TypeError, match="truncates"):
        srcgrad.grad(truncated, cache=False)(x)
    np.testing.assert_allclose(srcgrad.grad(cast_first, cache=False)(x),
                               finite_differences(cast_first, [x], 0), atol=1e-6)


def test_assigning_into_a_python_list_item():
    # a list the function builds is a compile-time container: its items are set then
    def f(x):
        parts = [x, x * 2]
        parts[0] = x * 2
        parts[1] += x  # the function's own array: updated in place
        return np.sum(parts[0] * parts[1])

    np.testing.assert_allclose(srcgrad.grad(f, cache=False)(np.ones(3)), np.full(3, 12.0))

    def g(x):
        parts = [x, x]
        parts[1] += x  # numpy would change the caller's x
        return np.sum(parts[1])

    with pytest.raises(UnsupportedSyntaxError, match="the caller's argument"):
        srcgrad.grad(g, cache=False)(np.ones(3))


def test_assigning_into_a_python_list_item_in_a_run_time_loop_is_refused():
    def f(x):
        parts = [x, x]
        for i in range(x.shape[0]):  # E
            parts[0] = parts[0] * 2
        return np.sum(parts[0])

    with pytest.raises(UnsupportedSyntaxError, match="`parts` is changed inside a loop") \
            as info:
        srcgrad.grad(f, cache=False)(np.ones(3))
    assert info.value.lineno == _marked_line(f)


# ---- writes inside called functions ----------------------------------------------------------

def _fill_first(buf, v):
    buf[0] = v  # the caller's array: numpy changes it, and srcgrad rebinds the caller's names
    return 2.0


def writes_through_a_helper(x):
    b = x * 1.0
    c = b
    r = _fill_first(b, x[1] ** 2)
    return np.sum(c * x) * r


def _fill_if_positive(buf, v):
    if v > 0.1:
        buf[0] = v  # E
    return 1.0


def helper_writes_in_a_branch(x):
    b = x * 1.0
    r = _fill_if_positive(b, x[1] ** 2)
    return np.sum(b * x) * r


def _fill_prefix(buf, v, n):
    for i in range(n):
        buf[i] += v  # E
    return 1.0


def helper_writes_in_a_loop(x, n):
    b = x * 1.0
    r = _fill_prefix(b, x[1] ** 2, n)
    return np.sum(b * x) * r


def _add_n_times(buf, v, n):
    for i in range(n):
        buf += v  # E
    return 1.0


def helper_adds_in_a_loop(x, n):
    b = x * 1.0
    r = _add_n_times(b, x[1] ** 2, n)
    return np.sum(b * x) * r


def test_a_helper_writing_into_the_callers_array():
    check(writes_through_a_helper, [RNG.uniform(-1, 1, 3)])


@pytest.mark.parametrize("fn, helper, args", [
    (helper_writes_in_a_branch, _fill_if_positive, (np.ones(3),)),
    (helper_writes_in_a_loop, _fill_prefix, (np.ones(3), 2)),
    (helper_adds_in_a_loop, _add_n_times, (np.ones(3), 2))])
def test_a_helper_writing_into_the_callers_array_in_a_region_is_refused(fn, helper, args):
    # the branch's or loop's result could not be handed back to the caller's names (`+=`
    # in a helper's loop gave a silent wrong gradient before it was refused)
    with pytest.raises(UnsupportedSyntaxError, match="calling function|caller") as info:
        srcgrad.grad(fn, cache=False)(*args)
    assert info.value.lineno == _marked_line(helper)


def written_with_leading_ones(p0):
    v2 = np.sin(np.sin(p0))
    v3 = v2
    v3[0] = np.sum(v2, keepdims=True)  # (1, 1) written into a row of shape (2,)
    return np.sum(v2) + np.sum(v3)


def test_value_with_more_leading_ones_than_its_target():
    # numpy drops the value's leading 1s when writing it; its cotangent (the target's
    # shape) is summed down and reshaped to the value's shape (this used to crash)
    check_grad(written_with_leading_ones, [np.array([[0.54784675, -0.92085314]])])


# ---- np.add.at: repeats add up ----------------------------------------------------------------

def segment_energy(x, seg):
    out = np.zeros(3)
    np.add.at(out, seg, x * x)            # a repeated index adds again
    return np.sum(out ** 2)


def rows_into_rows(w, idx):
    h = np.zeros((4, 2))
    np.add.at(h, idx, w)
    h2 = h                                 # another name for the same array sees it
    return np.sum(np.tanh(h2) * h)


def a_number_into_slots(x):
    out = np.zeros(3)
    np.add.at(out, [0, 0, 2], x[0])
    return np.sum(out * out)


def into_a_viewed_array(x, seg):
    out = np.zeros(3)
    head = out[:2]                         # numpy would change it too
    np.add.at(out, seg, x)
    return np.sum(out) + np.sum(head)


@pytest.mark.parametrize("fn,args", [
    (segment_energy, (np.array([0.5, -1.0, 2.0, 0.3]), np.array([0, 2, 0, 0]))),
    (rows_into_rows, (np.arange(6.0).reshape(3, 2) / 5, np.array([1, 3, 1]))),
    (a_number_into_slots, (np.array([0.5, -1.0, 2.0]),)),
], ids=["segments", "rows", "number"])
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_add_at_into_the_functions_own_array(fn, args, specialize):
    """np.add.at(a, idx, v) was refused (a call srcgrad did not differentiate): it is
    `a = a + scatter_add(v, idx, a.shape)`, a repeated index adding again."""
    g = srcgrad.value_and_grad(fn, cache=False, specialize=specialize)
    want = finite_differences(fn, args, 0)
    for _ in range(4):
        value, grad = g(*args)
        assert value == fn(*args)
        np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)


def test_add_at_into_an_array_a_view_shows_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match=r"np.add.at\(out, \.\.\.\)") as err:
        srcgrad.grad(into_a_viewed_array, cache=False)(np.ones(3), np.array([0, 1, 0]))
    assert err.value.lineno == inspect.getsourcelines(into_a_viewed_array)[1] + 3


def update_a_converted_copy(x, y):
    z = x.astype(np.float64)               # astype copies (numpy's default copy=True)
    z += y
    w = x.astype(np.float32).astype(np.float64)
    w *= y
    return np.sum(z ** 2) + np.sum(w)


def test_an_astype_result_is_a_new_array():
    """`z = x.astype(float); z += y` was refused as an update of a view of x: astype
    copies unless told not to. The caller's x stays unchanged."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    x0 = x.copy()
    g = srcgrad.grad(update_a_converted_copy, wrt=1, cache=False)
    for _ in range(4):
        np.testing.assert_allclose(g(x, y), finite_differences(update_a_converted_copy,
                                                               (x, y), 1), rtol=1e-5)
    np.testing.assert_array_equal(x, x0)
