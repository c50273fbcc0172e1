"""Items of a list grown in a run-time loop, read at negative or run-time positions
(`hs[-1]` in an RNN's loop): the cotangent of what a read took belongs at the item it read
then, not at the item that position names in the grown list. Checked against finite
differences and the tape engine, polymorphic, specialized and (where installed) compiled
by numba; an index out of range raises IndexError as Python does."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences, tape_grads

import lists_user as U

RNG = np.random.default_rng(5)
W = RNG.normal(size=(3, 3)) * 0.6
CASES = [
    (U.rnn_states, (W, RNG.normal(size=3)), (0, 1)),
    (U.second_order, (0.9, RNG.normal(size=4), RNG.normal(size=4)), (0, 1, 2)),
    (U.lagged, (W, RNG.normal(size=3), 2), (0, 1)),
]


@pytest.mark.parametrize("fn,args,wrt", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("how", ["polymorphic", "specialized", "numba"])
def test_items_read_from_the_end_get_their_cotangents(fn, args, wrt, how):
    if how == "numba":
        pytest.importorskip("numba")
        g = srcgrad.grad(fn, wrt=wrt, cache=False, backend="numba")
    else:
        g = srcgrad.grad(fn, wrt=wrt, cache=False, specialize=how == "specialized")
    tape = tape_grads(fn, args, list(wrt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (numba may fall back to numpy)
        for _ in range(4):  # (a specialized variant runs from the third call)
            got = g(*args)
    for k, i in enumerate(wrt):
        fd = finite_differences(fn, args, i)
        np.testing.assert_allclose(tape[k], fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-8, err_msg=f"{how} {i}")


def test_a_position_out_of_range_raises_like_python():
    x = np.ones(3)
    with pytest.raises(IndexError):
        U.too_far_back(x)
    with pytest.raises(IndexError):
        srcgrad.grad(U.too_far_back, cache=False)(x)


def test_items_of_several_shapes_are_refused_with_what_to_write():
    """The gradient stacks a run-time list's items: items of several shapes (a 0-d start,
    then vectors) are refused with a clear error, not a numpy traceback."""
    x = np.array(0.3)
    with pytest.raises(ValueError, match="different shapes.*np.broadcast_to"):
        srcgrad.grad(U.growing_items, cache=False, specialize=False)(x, 2)
