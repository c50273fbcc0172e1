"""A run-time loop's own variable holds, after the loop, the last item it took (or the one
a `break` left), as in Python: it was left at its value before the loop, a silently wrong
gradient (`x[i]` after `for i in range(n)` read x[0]). One first bound by the loop is
refused where it is read (a loop that runs no time leaves it unbound)."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad
from srcgrad.errors import SrcgradError

import loop_variables_user as U

X = np.array([0.5, 2.0, 3.0, 0.7])


@pytest.mark.parametrize("fn,args", [
    (U.last_index, (X,)), (U.last_item, (X,)), (U.first_above, (X, 1.0)),
    (U.first_above, (X, 10.0)), (U.last_pair, (X,)),
    (U.last_cell, (np.array([[0.5, 1.0], [3.0, 0.2], [0.1, 0.4]]),)),
], ids=["last-index", "last-item", "break", "no-break", "enumerate", "nested-break"])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_loop_variable_after_the_loop_is_pythons(fn, args, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    g = srcgrad.grad(fn, backend=backend)
    def copies():
        return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)

    check_grad(fn, copies(), 0, tape=fn is not U.last_cell, compiled=g)
    for _ in range(2):  # (the specialized variant's calls)
        check_grad(fn, copies(), 0, tape=False, compiled=g)


def test_a_variable_the_loop_binds_first_is_refused_where_it_is_read():
    with pytest.raises(SrcgradError, match="may be undefined here") as info:
        srcgrad.grad(U.unbound_after)(X.copy())
    assert "loop_variables_user.py" in str(info.value)
