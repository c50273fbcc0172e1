"""Findings on comprehensions, items of run-time lists and item assignment into dicts and
lists the function builds. Each test asserts the correct behaviour: a gradient that
matches finite differences, or a located refusal (srcgrad.SrcgradError) where srcgrad
cannot follow numpy's semantics."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

X = np.array([0.3, -0.7, 1.1])


def _grad_or_refusal(f, args, i=0):
    """srcgrad's gradient, or None when srcgrad refuses the function (a SrcgradError)."""
    try:
        return srcgrad.grad(f, wrt=i)(*args)
    except srcgrad.SrcgradError:
        return None


def _check(f, args):
    g = _grad_or_refusal(f, args)
    if g is not None:
        np.testing.assert_allclose(g, finite_differences(f, args, 0), rtol=1e-5, atol=1e-7)


# `d["a"] *= 2.0` on a dict item is numpy's in-place update: every name bound to the same
# array sees it. The compile-time item assignment (static_item) rebinds only the dict
# item, so `v` keeps the old value: grad 1 instead of 2, silently. A plain name
# (`b = d["a"]; b *= 2`) is refused for exactly this reason; the item form is not.
def test_inplace_update_of_a_dict_item_shared_with_a_name():
    def f(x):
        v = x * 1.0
        d = {"a": v}
        d["a"] *= 2.0
        return np.sum(v)

    _check(f, [X])


# Same with a list the function builds: `ys[0] *= 3` changes the one array that ys[0] and
# ys[1] both are. srcgrad gives d/dx sum(ys[1]) = 2 (ys[1] unchanged) instead of 6.
def test_inplace_update_of_a_list_item_that_is_also_another_item():
    def f(x):
        y = x * 2
        ys = [y, y]
        ys[0] *= 3.0
        return np.sum(ys[1])

    _check(f, [X])

    def g(x):  # the same through a comprehension
        y = x * 2
        ys = [y for _ in range(3)]
        ys[0] *= 3.0
        return np.sum(ys[1])

    _check(g, [X])


# `cache[k] += x` where cache["a"] is the caller's x itself: numpy updates x in place, so
# the second `+= x` adds the doubled x (cache["a"] ends as 4x). srcgrad rebinds the item to
# a new array (3x) and never changes the caller's array: the gradient is 18x, not 32x.
# `x += ...` on a parameter is refused as an update of the caller's argument; the item
# form slips through.
def test_inplace_update_of_a_dict_item_that_is_the_callers_argument():
    def f(x):
        cache = {"a": x}
        for k in ["a", "a"]:
            cache[k] += x
        return np.sum(cache["a"] ** 2)

    _check(f, [X])


# A list of Python floats read with a run-time index (`lrs[epoch]`, `ws[np.argmax(x)]`):
# the generated gradient code calls `.shape` on the float and crashes with AttributeError
# instead of giving the gradient (or refusing at compile time).
def test_float_item_of_a_list_read_with_a_run_time_index():
    def f(x):
        ws = [0.5, 1.5, 2.5]
        k = np.argmax(x)
        return np.sum(x * ws[k] + 1.0)

    _check(f, [X])

    def g(x, n):  # a list of floats grown in a run-time loop
        cs = []
        for t in range(n):
            cs.append(0.5 * t)
        return np.sum(cs[-1] * x + 1.0)

    _check(g, [X, 3])


# A static list of arrays of different shapes indexed by a run-time integer: the backward
# pass scatters the item's cotangent into an array shaped like np.stack(list), which does
# not exist for items of different shapes; the generated code fails with a numpy
# ValueError (broadcast (2,) with (3,)) instead of a gradient or a located refusal.
def test_run_time_index_into_a_list_of_arrays_of_different_shapes():
    def f(x):
        layers = [x[:2], x, x[1:] * 3]
        k = np.argmax(x)
        return np.sum(layers[k] ** 2)

    _check(f, [X])
    _check(f, [np.array([2.0, 0.1, 0.3])])


# A generator expression is consumed by its first use; Python's second sum over it is 0.
# srcgrad makes a generator expression a list, so the second sum counts the terms again:
# value and gradient twice the true ones, silently.
def test_generator_expression_consumed_twice():
    def f(x):
        terms = (np.sin(x * k) for k in range(3))
        a = sum(np.sum(t) for t in terms)
        b = sum(np.sum(t) for t in terms)  # empty in Python
        return a + b

    g = _grad_or_refusal(f, [X])
    if g is not None:
        np.testing.assert_allclose(g, finite_differences(f, [X], 0), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(srcgrad.value_and_grad(f)(X)[0], f(X), rtol=1e-12)
