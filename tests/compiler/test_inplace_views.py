"""In-place updates in generated code never touch an array that a live view (a slice,
.T, reshape, expand_dims, a broadcast gradient...) or an alias still reads."""
import numpy as np
import pytest

import inplace_views_functions as F
import srcgrad
from compiler_helpers import check_grad, finite_differences

rng = np.random.default_rng(5)

CASES = [
    (F.transpose_then_update, [rng.normal(size=(3, 4))], (0,)),
    (F.ravel_then_update, [rng.normal(size=(2, 3))], (0,)),
    (F.reduce_then_update, [rng.normal(size=(3, 2))], (0,)),
    (F.concat_then_update, [rng.normal(size=3), rng.normal(size=2)], (0, 1)),
    (F.slice_view_in_forward, [rng.normal(size=6)], (0,)),
    (F.expand_view_in_forward, [rng.normal(size=4)], (0,)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_with_views_and_in_place_candidates(fn, args, wrt):
    before = [a.copy() for a in args]
    check_grad(fn, args, wrt)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # the inputs are left alone too


# -- views held where no name can be made unreadable (found by an adversarial hunt: each
# gave a wrong value and gradient without a word) ----------------------------------------

_W43 = np.arange(12.0).reshape(4, 3)


def _swap_rows(x):
    y = x.copy()
    y[0], y[1] = y[1], y[0]  # numpy: no swap (y[0] is a view of the new row 0)
    return np.sum(y * _W43)


def _swap_columns(x):
    y = x * 1.0
    y[:, 0], y[:, 2] = y[:, 2], y[:, 0]
    return np.sum(y * _W43)


def _views_in_a_tuple(x):
    y = x.copy()
    pair = (y[0], y[1])
    y[0] = 2.0 * y[1]
    return np.sum(pair[0] * _W43[0])


def _views_in_a_list(x):
    y = x.copy()
    rows = [y[i] for i in range(2)]
    y[0] = 2.0 * y[1]
    return np.sum(np.stack(rows) * _W43[:2])


@pytest.mark.parametrize("fn", [_views_in_a_tuple, _views_in_a_list])
def test_a_write_while_a_view_is_held_in_a_container(fn):
    with pytest.raises(srcgrad.SrcgradError, match="while a view of it may be held"):
        srcgrad.value_and_grad(fn, cache=False)(np.random.default_rng(1).normal(size=(4, 3)))


def _swap_elements(v):
    y = v.copy()
    y[0], y[3] = y[3], y[0]  # elements are numbers: a real swap
    return np.sum(y * np.arange(4.0) ** 2)


def _swap_halves(v):
    y = v * 1.0
    y[:2], y[2:] = y[2:], y[:2]  # numpy: y[2:] gets the new y[:2] (no swap)
    return np.sum(y * np.arange(4.0) ** 2)


def _swap_in_a_loop(v):
    y = v.copy()
    for i in range(3):
        y[i], y[i + 1] = y[i + 1], y[i]  # (a bubble of the first element to the end)
    return np.sum(y * np.arange(4.0) ** 2)


@pytest.mark.parametrize("fn, shape", [(_swap_rows, (4, 3)), (_swap_columns, (4, 3)),
                                       (_swap_elements, (4,)), (_swap_halves, (4,)),
                                       (_swap_in_a_loop, (4,))])
@pytest.mark.parametrize("specialize", [False, True])
def test_a_tuple_assignment_reads_its_later_views_as_numpy_shows_them(fn, shape, specialize):
    """A view taken for a later target of the same tuple assignment shows the earlier
    writes, as numpy's does (rows are not swapped); an element is a number (elements
    are). Which it is, with integer indexes, depends on the array's dimensions: decided
    when the code runs (the same code for 1-d and 2-d arrays)."""
    x = np.random.default_rng(1).normal(size=shape)
    vg = srcgrad.value_and_grad(fn, cache=False, specialize=specialize)
    for _ in range(4):  # (the specialized variant from the fourth call)
        value, g = vg(x)
    np.testing.assert_allclose(value, fn(x), rtol=1e-12)
    np.testing.assert_allclose(g, finite_differences(fn, (x,), 0), rtol=1e-6, atol=1e-8)


def _swap_copies(x):
    y = x.copy()
    y[0], y[1] = y[1].copy(), y[0].copy()  # a real swap
    return np.sum(y * _W43)


def test_a_swap_of_copies_compiles():
    x = np.random.default_rng(2).normal(size=(4, 3))
    value, g = srcgrad.value_and_grad(_swap_copies, cache=False)(x)
    np.testing.assert_allclose(value, _swap_copies(x), rtol=1e-12)
    np.testing.assert_allclose(g, finite_differences(_swap_copies, (x,), 0), rtol=1e-6,
                               atol=1e-8)
