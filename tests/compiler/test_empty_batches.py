"""The gradient of a mean, a variance or a standard deviation over no elements (an empty
batch, a mask that keeps nothing) or over as many elements as the degrees of freedom
removed: the function warns and gives nan, and the gradient is what the tape gives (an
empty array, or nan), never Python's ZeroDivisionError from a derivative's scale
`1.0 / x.size` (runtime.ops.helpers.divide_numbers). Checked against the tape, on the
shape-polymorphic code and on the specialized variant, with both backends, in float64 and
float32, and under `np.errstate(divide="raise")`, where the function does not raise."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import assert_close, tape_grads

import empty_batches_user as U

RNG = np.random.default_rng(5)
X0 = RNG.normal(size=(0, 3))


def _cases():
    reg = U.Regressor(0.5)
    return [
        ("mse, empty batch", U.mse, (np.zeros(0), np.zeros(0)), 0),
        ("mse, one sample", U.mse, (np.ones(1), np.zeros(1)), 0),
        ("method, empty batch", reg.loss, (RNG.normal(size=3), X0, np.zeros(0)), 0),
        ("masked mean, nothing kept", U.masked_mean, (RNG.normal(size=4), np.zeros(4, bool)), 0),
        ("mean over an empty axis", U.per_row_mean, (np.zeros((3, 0)),), 0),
        ("variance over an empty axis", U.per_column_variance, (X0,), 0),
        ("sample variance of one", U.sample_variance, (np.array([1.5]),), 0),
        ("sample std of one", U.sample_std, (np.array([1.5]),), 0),
        ("sample variance of none", U.sample_variance, (np.zeros(0),), 0),
        ("centred energy of none", U.centred_energy, (np.zeros(0),), 0),
    ]


CASES = _cases()
IDS = [c[0] for c in CASES]


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return call()


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, \
        f"{what}: {got.shape} {got.dtype}, want {want.shape} {want.dtype}"
    assert_close(got, want, 1e-12, 0.0, what)  # (nan where the tape has nan)


@pytest.mark.parametrize("name,fn,args,wrt", CASES, ids=IDS)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_gradient_is_the_tapes(name, fn, args, wrt, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    want = _quiet(lambda: tape_grads(fn, args, [wrt]))[0]
    g = srcgrad.grad(fn, wrt=wrt, backend=backend)
    for k in range(3):  # (the specialized variant runs from the third call)
        got = _quiet(lambda: g(*args))
        _same(got, want, f"{name}, call {k + 1}")


@pytest.mark.parametrize("name,fn,args,wrt", CASES[:6], ids=IDS[:6])
def test_float32_stays_float32(name, fn, args, wrt):
    args32 = tuple(a.astype(np.float32) if a.dtype == np.float64 else a for a in args)
    g = srcgrad.grad(fn, wrt=wrt)
    for _ in range(3):
        got = _quiet(lambda: g(*args32))
        assert got.dtype == np.float32 and got.shape == args32[wrt].shape, (got.dtype, got.shape)


@pytest.mark.parametrize("name,fn,args,wrt", CASES, ids=IDS)
def test_no_error_where_the_function_raises_none(name, fn, args, wrt):
    """A mean of nothing is 0/0 (numpy's `invalid`): with only division by zero made an
    error, the function runs, and so must its gradient (the scale 1/0 is not an error of
    the user's code)."""
    with warnings.catch_warnings(), np.errstate(divide="raise"):
        warnings.simplefilter("ignore", RuntimeWarning)
        fn(*args)
        g = srcgrad.grad(fn, wrt=wrt)
        for _ in range(3):
            g(*args)


def test_the_scale_reads_as_a_division():
    source = srcgrad.grad(U.mse).source
    assert "divide_numbers(2.0, " in source or "divide_numbers(1.0, " in source, source


MATRIX_FUNCTIONS = [U.column_sums, U.row_means, U.row_sample_std, U.column_products,
                    U.column_averages, U.running_totals, U.frobenius, U.log_partition,
                    U.nan_column_means, U.diagonal, U.gram, U.projected, U.centred,
                    U.contracted, U.smoothness]


@pytest.mark.parametrize("fn", MATRIX_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (1, 3)], ids=str)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_matrix_with_no_rows_or_columns(fn, shape, backend):
    """Every call, the specialized variant's included, gives the tape's gradient, of x's
    shape (a constant empty gradient was once written `np.array([])`, of shape (0,))."""
    if backend == "numba":
        pytest.importorskip("numba")
    X = RNG.normal(size=shape)
    try:
        with np.errstate(all="ignore"):
            fn(X.copy())
    except (ValueError, ZeroDivisionError):  # (numpy refuses it: nothing to differentiate)
        return
    want = _quiet(lambda: tape_grads(fn, (X,), [0]))[0]
    g = srcgrad.grad(fn, backend=backend)
    for k in range(3):
        _same(_quiet(lambda: g(X.copy())), want, f"{fn.__name__} of {shape}, call {k + 1}")
