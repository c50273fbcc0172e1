"""A nested def's or lambda's default values are those of where it is defined, and a
lambda made in a comprehension reads the comprehension's names (Python's late binding).
Defaults were evaluated where the function was called (`def act(z, s=scale)` took the
scale assigned after it), and lambdas of a comprehension read the enclosing function's
name of the same name: both silently wrong gradients."""
import functools

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad, finite_differences

import local_functions_user as U

X = np.array([0.4, -0.9, 1.3])


@pytest.mark.parametrize("fn", [U.bound_scale, U.keyword_default, U.powers_with_defaults,
                                U.late_binding, U.called_inside])
def test_local_function(fn):
    value, grad = srcgrad.value_and_grad(fn)(X)
    np.testing.assert_allclose(value, fn(X), rtol=1e-12)
    np.testing.assert_allclose(grad, finite_differences(fn, (X,), 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fn", [U.partial_of_a_run_time_value, U.partials_in_a_comprehension,
                                U.partial_of_a_lambda_and_of_numpy,
                                U.partial_of_a_partial_of_a_method])
def test_a_partial_made_in_the_function(fn):
    check_grad(fn, (X,))  # (the tape, finite differences, the specialized variant)


def test_a_partial_made_in_the_function_and_read_by_a_statement_run_as_written():
    def f(x):
        g = functools.partial(U.loss_with, scale=2.0)
        print(g)
        return g(x)

    with pytest.raises(srcgrad.SrcgradError, match="functools.partial made in the function"):
        srcgrad.grad(f)(X)


def test_a_partial_as_the_function_says_what_to_do():
    def base(x, w):
        return np.sum(w * x ** 2)

    with pytest.raises(srcgrad.SrcgradError, match="functools.partial.*argnums"):
        srcgrad.grad(functools.partial(base, w=3.0))(X)


def _dot(z, a):
    return np.sum(z * a)


def _partial_then_update(x):
    a = x * 2.0
    f = functools.partial(_dot, a=a)
    a *= 3.0  # the partial holds this array: it sees the update
    return f(x)


def _partial_then_write(x):
    a = np.zeros(3)
    f = functools.partial(_dot, a=a)
    a[0] = 5.0
    return f(x)


def _default_then_update(x):
    a = x * 2.0
    f = lambda z, a=a: _dot(z, a)  # noqa: E731
    a *= 3.0  # the default is this array: it sees the update
    return f(x)


def _partial_in_a_dict_then_update(x):
    d = {"a": x * 2.0}
    f = functools.partial(_dot, a=d["a"])
    d["a"] += 1.0
    return f(x)


@pytest.mark.parametrize("fn", [_partial_then_update, _partial_then_write,
                                _default_then_update, _partial_in_a_dict_then_update])
def test_an_array_a_partial_or_a_default_holds_changed_in_place_is_refused(fn):
    """Python's partial and a default value hold the array itself, so an update in place
    after they were made reaches them; srcgrad rebinds names, which cannot reach them: the
    gradient used the value before the update (a silent wrong gradient, for defaults
    before partials compiled)."""
    with pytest.raises(srcgrad.SrcgradError, match="may share its memory with .*(partial|"
                       "function defined in the function)") as info:
        srcgrad.grad(fn)(X)
    assert info.value.lineno is not None and "test_local_functions.py" in str(info.value)
