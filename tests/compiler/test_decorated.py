"""A decorated function is the decorator's wrapper: srcgrad compiles the wrapper's own
code (`2.0 * fn(x)`), and follows `__wrapped__` only where the wrapper passes its
arguments on and returns the wrapped function's result untouched (scopes.transparent),
or is not written in Python (functools.lru_cache). It once always followed `__wrapped__`:
a wrapper that scales its function's value had the gradient of the unscaled function."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad
from srcgrad.errors import SrcgradError

import decorated_user as U

X = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("fn", [U.uses_doubled, U.doubled_loss, U.uses_passed_on,
                                U.timed_loss, U.uses_cached],
                         ids=lambda f: f.__name__)
def test_the_gradient_is_the_decorated_functions(fn):
    check_grad(fn, (X.copy(),), 0)


def test_a_scaling_wrapper_of_any_arguments_is_refused_not_unwrapped():
    """`2.0 * fn(*args, **kwargs)` is not transparent, and srcgrad does not compile a
    call with *args of run-time arrays: a clear refusal, never fn's own gradient."""
    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(U.doubled_any_loss)(X.copy())
    assert "decorated_user.py" in str(info.value)


def test_which_wrappers_are_transparent():
    from srcgrad.scopes import transparent, unwrap

    assert transparent(U.sine, U.sine.__wrapped__)
    assert transparent(U.timed_loss, U.timed_loss.__wrapped__)
    assert not transparent(U.doubled_any_loss, U.doubled_any_loss.__wrapped__)
    assert not transparent(U.doubled_loss, U.doubled_loss.__wrapped__)
    assert unwrap(U.doubled_loss) is U.doubled_loss
    assert unwrap(U.sine) is U.sine.__wrapped__


def test_a_transparent_wrappers_function_keeps_its_default_arguments():
    g = srcgrad.grad(U.weighted_loss)
    for _ in range(3):
        np.testing.assert_allclose(g(X.copy()), 3.0 * X)
        np.testing.assert_allclose(g(X.copy(), 0.5), 1.0 * X)
