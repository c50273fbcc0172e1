"""numpy's functions of Python numbers give numpy's values in the generated code.

The op set writes np.multiply(a, b) as `a * b`, np.invert(a) as `~a`, np.asarray(a) as `a`:
on Python numbers those compute in Python, so the generated code returned a Python float
(no `[None]`, no `.item()`), raised ZeroDivisionError for numpy's inf, made a complex
number for numpy's nan, did not wrap an int64 and took np.invert(True) to be -2: a
crash, or a silently different value and gradient. Each function is checked against
itself (the value) and finite differences (the gradient), and the class is closed by
running every ufunc of the op set on Python numbers."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import assert_close, finite_differences, module_from_source
from runtime.ops.numpy_api import NUMPY

import numpy_of_numbers_user as U

X = np.array([0.5, -1.25, 2.0])

CASES = [  # (function, the other arguments)
    (U.scaled_by_squared_rate, (-1.8959903697874951,)),
    (U.damped, (1.0,)),
    (U.root_of_setting, (-8.0,)),
    (U.root_of_setting, (9.0,)),
    (U.wrapped_count, (2 ** 40,)),
    (U.flagged, (True,)),
    (U.flagged, (False,)),
    (U.item_of, (0.75,)),
    (U.asarray_of, (1.5,)),
    (U.compared, (1.0,)),
    (U.of_length, ()),
    (U.of_shape, ()),
    (U.grown, (3,)),
    (U.product_of_arrays, (np.array([1.0, 2.0, -3.0]),)),
    (U.squared_running, (3,)),  # (the marked carry is saved for the gradient, then rebound)
    (U.scaled_by_global, (1.5,)),
    (U.scaled_by_float32_setting, (1.5,)),
    (U.scaled_by_root_two, ()),
]


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("fn,rest", CASES, ids=[f"{f.__name__}-{r[:1]}" for f, r in CASES])
def test_value_and_gradient_are_numpys(fn, rest):
    args = (X.copy(),) + rest
    want = _quiet(fn, *args)
    value, grad = _quiet(srcgrad.value_and_grad(fn, wrt=0), *args)
    assert_close(value, want, 1e-12, 0.0, f"{fn.__name__}: value")
    fd = _quiet(finite_differences, fn, args, 0)
    assert_close(grad, fd, 1e-6, 1e-8, f"{fn.__name__}: gradient")
    out, pullback = _quiet(lambda: srcgrad.vjp(fn, *args, wrt=0))
    assert_close(out, want, 1e-12, 0.0, f"{fn.__name__}: vjp's value")
    assert_close(pullback(1.0), fd, 1e-6, 1e-8, f"{fn.__name__}: vjp")


def test_a_numpy_function_of_arrays_costs_nothing_more():
    """Operands that are arrays go as they are: no np.asarray in the generated code."""
    source = srcgrad.grad(U.product_of_arrays, wrt=0).source
    assert "asarray" not in source, source


def test_a_call_of_numbers_is_written_as_numpys_function():
    source = srcgrad.grad(U.scaled_by_squared_rate, wrt=0).source
    assert "np.multiply(" in source and "rate * rate" not in source, source


U8 = np.array([1, 2, 3], np.uint8)
W32 = np.array([0.1, -0.7, 0.3], np.float32)
DTYPE_CASES = [  # (function, arguments): the value is the function's, in its type
    (U.shifted_bytes, (X, 1, U8)),
    (U.step_of, (X.astype(np.float32), 0.1, W32)),
    (U.step_of, (X, 0.1, W32)),
    (U.counted, (X, W32)),
    (U.counted, (X.astype(np.float32), W32)),
    (U.inverted_constant, (X,)),
    (U.inverted_branch, (X, 1.0)),
    (U.inverted_branch, (X, -1.0)),
    (U.mean_by_size, (X.astype(np.float32),)),
    (U.divided_by_global, (X.astype(np.float32),)),
    # (identities the optimizer knows, x * 1 and -(-x), of numpy's values of numbers)
    (U.times_one, (X.astype(np.float32), 0.7, W32)),
    (U.negated_twice, (X.astype(np.float32), 0.7, W32)),
    (U.plus_zero_indexed, (X.astype(np.float32), 0.7)),
    (U.times_numpy_one, (X.astype(np.float32), 0.7)),
    (U.custom_then_numpy, (X, 3.0)),  # (a custom op's result may be a Python number)
]


@pytest.mark.parametrize("fn,args", DTYPE_CASES,
                         ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(DTYPE_CASES)])
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_numbers_combine_with_arrays_as_in_numpy(fn, args, specialize):
    """A Python number is weak to numpy (`np.subtract(1, w)` of a uint8 w wraps in uint8,
    `np.multiply(0.1, w)` of a float32 w is float32), numpy's scalars are not; a folded
    numpy call of numbers is numpy's (~np.less(1, 2) is False). Exactly the function's
    value and gradient, from the first call to the specialized variant's."""
    want = _quiet(fn, *args)
    fd = _quiet(finite_differences, fn, args, 0)
    g = srcgrad.value_and_grad(fn, wrt=0, specialize=specialize)
    for _ in range(4):  # (the specialized variant runs from the third call)
        value, grad = _quiet(g, *args)
        assert np.asarray(value).dtype == np.asarray(want).dtype, (value, want)
        assert value == want, (value, want)
        assert_close(grad, fd, 1e-4 if args[0].dtype == np.float32 else 1e-6, 1e-6,
                     f"{fn.__name__}: gradient")


def _operators():
    out = []
    for f in sorted({f for f in NUMPY if isinstance(f, np.ufunc)}, key=lambda f: f.__name__):
        if not isinstance(f, np.ufunc) or f is np.matmul:
            continue  # (matmul takes no numbers, in numpy either)
        ints = f.__name__.startswith(("bitwise", "invert"))
        out.append((f, ints))
    return out


OPERANDS = {False: [(2.5, -1.5), (-8.0, 0.5), (3.0, 0.0), (0.0, 0.0), (-2.0, 3.0)],
            True: [(True, False), (5, 3), (2 ** 40, 7), (True, True)]}


@pytest.mark.parametrize("ufunc,ints", _operators(), ids=lambda v: getattr(v, "__name__", "ints" if v else "floats"))
def test_every_ufunc_gives_numpys_result_on_numbers(ufunc, ints, tmp_path):
    """The result's type and value are numpy's for Python numbers: it indexes as numpy's
    does, and its value multiplies the gradient."""
    params = ", ".join(f"a{k}" for k in range(ufunc.nin))
    mod = module_from_source(tmp_path / f"op_{ufunc.__name__}.py",
                             "import numpy as np\n\n\n"
                             f"def f(x, {params}):\n"
                             f"    v = np.{ufunc.__name__}({params})\n"
                             "    return np.sum(x * v[None])\n")
    compiled = srcgrad.value_and_grad(mod.f, wrt=0)
    x = np.array([1.0, 2.0])
    for operands in OPERANDS[ints]:
        operands = operands[:ufunc.nin]
        try:
            want = _quiet(mod.f, x, *operands)
        except (TypeError, ValueError):
            continue  # (numpy refuses these operands too)
        value, grad = _quiet(compiled, x, *operands)
        v = _quiet(ufunc, *operands)
        assert isinstance(v, np.generic)
        np.testing.assert_array_equal(value, want, err_msg=f"{ufunc.__name__}{operands}")
        np.testing.assert_array_equal(grad, np.broadcast_to(np.asarray(v, float), x.shape),
                                      err_msg=f"{ufunc.__name__}{operands}: gradient")


@pytest.mark.parametrize("fn,rest", [(U.scaled_by_float32_setting, (1.5,)),
                                     (U.scaled_by_root_two, ()), (U.scaled_by_global, (1.5,))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_numpy_scalar_constants_keep_their_type(fn, rest):
    """A numpy scalar (a module's np.float64, np.sqrt(2.0) of a constant) is numpy's in the
    generated code too: not a Python float, which numpy takes as weak (a float32 array
    stays float32) and which is not indexable. The value is the function's own, exactly
    and in its dtype."""
    for x in (X.astype(np.float32), X):
        want = fn(x, *rest)
        value, grad = srcgrad.value_and_grad(fn, wrt=0)(x, *rest)
        assert np.asarray(value).dtype == np.asarray(want).dtype, (x.dtype, value, want)
        assert value == want, (x.dtype, value, want)
        assert grad.dtype == x.dtype
