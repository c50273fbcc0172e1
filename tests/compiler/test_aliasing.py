"""Python's aliasing, kept or refused: never a silently different value or gradient.

- `vjp`'s output is the caller's: `y -= t` on it (a residual, in place) leaves the
  pullback's gradient alone;
- `max()`/`min()` with a `key`: the key's comparisons inlined where known when compiling,
  refused where known only at run time (they were dropped: the elementwise extreme);
- `L += [v]`, `L *= 2`, `d |= {...}`, `s |= {...}` change the object itself: every name and
  helper holding it sees the change (they rebound the name only); on the caller's
  argument they are refused, as `list.append` on it is (the caller's list kept its items);
- a write into a branch's, a loop's or max()'s result, or into a value it may be: a name
  bound to the other may show the write, so reading it is refused (it was silently the
  value before the write).
Each gradient is checked against central finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedSyntaxError

import aliasing_user as U

X = np.array([0.3, -1.2, 2.0])


def finite_differences(f, x, *rest, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * eps)
    return g


def check(f, x, *rest, calls=4):
    vg = srcgrad.value_and_grad(f)
    for _ in range(calls):  # (from the third call: the specialized variant)
        v, g = vg(x.copy(), *rest)
        np.testing.assert_allclose(v, f(x.copy(), *rest), rtol=1e-12)
        np.testing.assert_allclose(g, finite_differences(f, x, *rest), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [U.model, U.softmax_model])
def test_changing_vjps_output_in_place_leaves_the_pullback_alone(fn):
    x, t = np.array([0.5, -0.2]), np.array([1.0, 0.0])
    for _ in range(4):
        y, pullback = srcgrad.vjp(fn, x)
        want = y - t
        y -= t  # the residual, in place
        got = pullback(y)
        np.testing.assert_allclose(got, srcgrad.vjp(fn, x)[1](want), rtol=1e-12)
        _, pb = srcgrad.vjp(fn, x)
        np.testing.assert_allclose(pb(want), finite_differences(lambda z: np.dot(fn(z), want), x),
                                   rtol=1e-6)


def test_max_and_min_with_a_run_time_key_are_refused():
    for fn, args in ((U.max_by_magnitude, (1.0, -3.0)), (U.smaller_sum, (X,))):
        with pytest.raises(UnsupportedSyntaxError, match="known only at run time, with a key"):
            srcgrad.grad(fn)(*args)


def test_max_with_a_key_known_when_compiling_is_pythons():
    check(U.last_named_layer, X)


def test_in_place_operators_of_containers_change_the_object():
    check(U.features_by_helper, X)
    check(U.aliased_containers, X)


def test_changing_the_callers_containers_is_refused():
    log = {}
    with pytest.raises(UnsupportedSyntaxError, match="caller's argument"):
        srcgrad.grad(U.grows_callers_dict)(X, log)
    assert log == {}
    params = [X * 1.0]
    with pytest.raises(UnsupportedSyntaxError, match="changes the caller's list"):
        srcgrad.grad(U.appends_to_callers_list)(X, params)
    assert len(params) == 1


@pytest.mark.parametrize("fn, args, shown", [
    (U.write_through_branch, (1.0,), "`y` may be `z` itself"),
    (U.write_through_branch, (-1.0,), "`y` may be `z` itself"),
    (U.write_under_branch, (1.0,), "`z` may be `y` itself"),
    (U.write_through_loop, (2,), "`y` may be `z` itself"),
    (U.write_through_loop, (0,), "`y` may be `z` itself"),
    (U.write_through_if_statement, (1.0,), "`y` may be `z` itself"),
    (U.update_max_of_arrays, (), "may share its memory with `a`"),
])
def test_reading_what_a_write_may_have_changed_is_refused(fn, args, shown):
    x = X[:1].copy() if fn is U.update_max_of_arrays else X
    with pytest.raises(UnsupportedSyntaxError, match=shown.replace("(", r"\(")):
        srcgrad.grad(fn)(x, *args)


@pytest.mark.parametrize("fn, args", [
    (U.write_into_branch_result_alone, (1.0,)), (U.write_into_branch_result_alone, (-1.0,)),
    (U.write_into_loop_state, (3,)), (U.write_into_loop_state, (0,)),
])
def test_a_write_nothing_else_may_show_is_compiled(fn, args):
    check(fn, X, *args)
