"""The adjoint of a loop that carries a state and adds a row of an argument at each step
(`acc = acc * 0.5 + X[t]`): each step's cotangent must be stored into the argument's
gradient before the carried cotangent is updated. The specialized variants (from the third
call) and the numba backend stored the updated one (every row's gradient off by a factor
of 0.5, without a word). Checked on every call, against finite differences."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import carry_user as U

RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 3)) * 0.5

CASES = [
    (U.ema, 0, lambda: (X,)),
    (U.ema_reversed, 0, lambda: (X,)),
    (U.ema_counting_down, 0, lambda: (X,)),
    (U.decay, (0, 1), lambda: (0.7, X)),
    (U.tanh_recurrence, 0, lambda: (RNG.normal(size=4) * 0.5,)),
    (U.rectified, 0, lambda: (X,)),
    (U.rnn_cell, (0, 1), lambda: (RNG.normal(size=(3, 3)) * 0.5, X)),
    (U.rnn_projected, (0, 1), lambda: (RNG.normal(size=(3, 3)) * 0.5, X)),
    (U.two_statements, 0, lambda: (X,)),
    (U.augmented, 0, lambda: (X,)),
    (U.from_an_argument, (0, 1), lambda: (RNG.normal(size=3) * 0.5, X)),
    (U.sum_of_squares_from_int, 0, lambda: (RNG.normal(size=4),)),
    (U.weighted_while_from_int, 0, lambda: (RNG.normal(size=4),)),
]


@pytest.mark.parametrize("fn", [U.sum_of_squares_from_int, U.weighted_while_from_int])
def test_an_accumulator_started_at_int_zero_is_data(fn):
    """`s = 0` then `s += x[i] ** 2` in a loop: the carry is data from the first step on
    (it was taken for an int from its start, and grad refused the return as 'an integer
    or shape'); value_and_grad and hvp too."""
    x = RNG.normal(size=4)
    value, (gx,) = srcgrad.value_and_grad(fn, wrt=(0,), cache=False)(x)
    np.testing.assert_allclose(value, fn(x), rtol=1e-13)
    np.testing.assert_allclose(gx, finite_differences(fn, (x,), 0), rtol=1e-6, atol=1e-8)
    v = np.linspace(0.5, -0.5, 4)
    hv = srcgrad.hvp(fn, cache=False)(x, v)
    g = srcgrad.grad(fn, cache=False)
    fd = (g(x + 1e-6 * v) - g(x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def _check(g, fn, wrt, args):
    for _ in range(4):  # the general code, then the specialized variant
        got = g(*args)
        got = got if isinstance(got, tuple) else (got,)
        for k, i in enumerate(wrt if isinstance(wrt, tuple) else (wrt,)):
            np.testing.assert_allclose(got[k], finite_differences(fn, args, i), rtol=1e-6,
                                       atol=1e-8, err_msg=f"{fn.__name__}: gradient {k}")


@pytest.mark.parametrize("fn,wrt,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_carried_state_plus_a_row(fn, wrt, make):
    _check(srcgrad.grad(fn, wrt=wrt, cache=False), fn, wrt, make())


@pytest.mark.parametrize("fn,wrt,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_carried_state_plus_a_row_numba(fn, wrt, make):
    pytest.importorskip("numba")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a fallback to numpy warns: the answer is checked)
        _check(srcgrad.grad(fn, wrt=wrt, cache=False, backend="numba"), fn, wrt, make())
