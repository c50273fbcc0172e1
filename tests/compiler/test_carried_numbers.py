"""The gradient of a loop whose carry starts as a Python number: the derivative of its
first step is computed on Python numbers (the saved carry), and must be numpy's (inf for
the square root at 0.0, which the starting constant never receives), not Python's
ZeroDivisionError. Checked against the function's value and finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import assert_close, finite_differences

import carried_numbers_user as U

X = np.array([0.5, 1.25, 2.0, 0.75])
FUNCTIONS = [U.rooted_running, U.python_rooted_running, U.scaled_running, U.accumulated]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_a_derivative_of_python_numbers_is_numpys(fn, specialize):
    want = fn(X.copy())
    fd = finite_differences(fn, (X.copy(),), 0)
    g = srcgrad.value_and_grad(fn, specialize=specialize)
    for _ in range(3):  # (the specialized variant runs from the third call)
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            value, grad = g(X.copy())
        assert_close(value, want, 1e-12, 0.0, f"{fn.__name__}: value")
        assert_close(grad, fd, 1e-6, 1e-8, f"{fn.__name__}: gradient")


def test_the_derivative_is_written_as_numpys_call():
    source = srcgrad.grad(U.rooted_running).source
    assert "np.power(acc_5, -0.5)" in source, source
