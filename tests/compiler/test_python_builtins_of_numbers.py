"""Python's abs(), max() and min() of Python numbers give Python's values in the generated
code.

The op set stages them as numpy's absolute, maximum and minimum, which on Python numbers
give numpy's: an int64 that wraps at 2**63 (`abs(n) ** 40`, silently a different value),
an int64 that refuses a negative power (`2 ** -abs(i)`), nan for max(1.0, nan) where
Python gives 1.0. Each function is checked against itself (value and type) and finite
differences (the gradient); the class is closed by running each of the three on every
kind of Python number."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import assert_close, finite_differences, module_from_source

import python_builtins_user as U

X = np.array([0.5, -1.25, 2.0, 0.75])

CASES = [  # (function, the other arguments)
    (U.power_of_count, (-3,)),
    (U.power_of_count, (5,)),
    (U.floored_setting, (float("nan"),)),
    (U.floored_setting, (2.5,)),
    (U.halved_by_distance, (0,)),
    (U.halved_by_distance, (4,)),
    (U.capped_count, (3,)),
    (U.clamped, (0, 10, 2 ** 70)),
    (U.clamped, (0.0, 1.0, float("nan"))),
    (U.widest, (1, 2.5, True)),
    (U.absolute_total, ()),
    (U.running_max, ()),
    (U.larger_of_halves, ()),
    (U.scheduled, (1,)),
    (U.scheduled, (7,)),
    (U.mean_of_first, ()),
    (U.weighted_by_count, ([1, 2],)),
    (U.scaled_by_length, ()),
    (U.power_of_length, ()),
    (U.larger_total, (np.array([0.1, -0.4, 0.3, 0.4]),)),
]


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("fn,rest", CASES,
                         ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(CASES)])
def test_value_and_gradient_are_pythons(fn, rest):
    args = (X.copy(),) + rest
    want = fn(*args)
    fd = _quiet(finite_differences, fn, args, 0)
    for specialize in (False, True):
        g = srcgrad.value_and_grad(fn, wrt=0, specialize=specialize)
        for _ in range(3):  # (the specialized variant runs from the third call)
            value, grad = g(*args)
            np.testing.assert_array_equal(value, want, err_msg=fn.__name__)
            assert_close(grad, fd, 1e-6, 1e-8, f"{fn.__name__}: gradient")
    out, pullback = srcgrad.vjp(fn, *args, wrt=0)
    np.testing.assert_array_equal(out, want)
    assert_close(pullback(1.0), fd, 1e-6, 1e-8, f"{fn.__name__}: vjp")


def test_a_call_of_numbers_is_written_as_pythons():
    source = srcgrad.grad(U.power_of_count, wrt=0).source
    assert "abs(" in source and "np.abs" not in source, source


def test_a_call_of_arrays_stays_numpys():
    """A differentiated operand is numpy's: the call is numpy's maximum, with its
    gradient."""
    source = srcgrad.value_and_grad(U.larger_of_halves).source
    assert "np.maximum(" in source, source


def test_a_derivative_goes_through_numpys_maximum():
    """Python's max() or min() of values that carry a derivative is numpy's maximum or
    minimum, whose gradient rule agrees with its value: nan wins (Python's max(a, nan)
    is a, which maximum's rule would give no gradient)."""
    x = np.array([0.5, -1.25, 2.0, 0.75])
    y = np.array([0.1, np.nan, 0.3, 0.4])
    value, grad = srcgrad.value_and_grad(U.larger_total)(x, y)
    assert np.isnan(value) and np.all(grad == 0.0), (value, grad)
    source = srcgrad.value_and_grad(U.larger_total).source
    assert "np.maximum(" in source and "builtins_max" not in source, source


NUMBERS = [0, -3, 2 ** 62, -(2 ** 63), 2 ** 70, True, False, 0.0, -0.0, -2.5, 1e308,
           float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("builtin", ["abs", "max", "min"])
def test_each_builtin_gives_pythons_result_on_numbers(builtin, tmp_path):
    """The value and its type are Python's, for ints past int64, bools, signed zeros,
    infinities and nans, in either order."""
    params = "a" if builtin == "abs" else "a, b"
    mod = module_from_source(tmp_path / f"builtin_{builtin}.py",
                             "import numpy as np\n\n\n"
                             f"def f(x, {params}):\n"
                             f"    v = {builtin}({params})\n"
                             "    return np.sum(x), v\n")
    compiled = srcgrad.value_and_grad(mod.f, wrt=0, has_aux=True)
    x = np.array([1.0, 2.0])
    pairs = [(a,) for a in NUMBERS] if builtin == "abs" else \
        [(a, b) for a in NUMBERS for b in NUMBERS[::3]]
    for operands in pairs:
        _, want = mod.f(x, *operands)
        (_, got), _ = _quiet(compiled, x, *operands)
        assert type(got) is type(want), (builtin, operands, got, want)
        assert got == want or (math.isnan(got) and math.isnan(want)), \
            (builtin, operands, got, want)
        assert math.copysign(1, got) == math.copysign(1, want), (builtin, operands)
