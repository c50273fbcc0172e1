"""A nested def's or lambda's default values are those of where it is defined, and a
lambda made in a comprehension reads the comprehension's names (Python's late binding).
Defaults were evaluated where the function was called (`def act(z, s=scale)` took the
scale assigned after it), and lambdas of a comprehension read the enclosing function's
name of the same name: both silently wrong gradients."""
import functools

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import local_functions_user as U

X = np.array([0.4, -0.9, 1.3])


@pytest.mark.parametrize("fn", [U.bound_scale, U.keyword_default, U.powers_with_defaults,
                                U.late_binding, U.called_inside])
def test_local_function(fn):
    value, grad = srcgrad.value_and_grad(fn)(X)
    np.testing.assert_allclose(value, fn(X), rtol=1e-12)
    np.testing.assert_allclose(grad, finite_differences(fn, (X,), 0), rtol=1e-6, atol=1e-9)


def test_a_partial_as_the_function_says_what_to_do():
    def base(x, w):
        return np.sum(w * x ** 2)

    with pytest.raises(srcgrad.SrcgradError, match="functools.partial.*argnums"):
        srcgrad.grad(functools.partial(base, w=3.0))(X)
