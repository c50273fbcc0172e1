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
]


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
