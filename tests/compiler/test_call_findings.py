"""Findings of hunts for wrong, stale or crashing gradients in ordinary calls, each a test
that failed before its fix: a function's defaults replaced after it was compiled, *args of
arrays of several shapes (len() of them, a loop over them), a reshape of a strided view in
code numba compiled."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import calls_user as U

RNG = np.random.default_rng(13)


@pytest.mark.parametrize("specialize", [False, True])
def test_replaced_defaults_are_read_again(specialize):
    x = RNG.normal(size=4)
    for fn, attr, new in ((U.with_default, "__defaults__", (5.0,)),
                          (U.with_kwdefault, "__kwdefaults__", {"c": 5.0})):
        old = getattr(fn, attr)
        try:
            g = srcgrad.grad(fn, cache=False, specialize=specialize)
            for _ in range(4):
                g(x)
            setattr(fn, attr, new)
            np.testing.assert_allclose(g(x), finite_differences(fn, (x,), 0), rtol=1e-6,
                                       err_msg=attr)
        finally:
            setattr(fn, attr, old)


@pytest.mark.parametrize("specialize", [False, True])
def test_star_args_of_several_shapes(specialize):
    x = RNG.normal(size=4)
    W1, W2 = RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=(2, 3)) * 0.5
    for fn, args in ((U.layers, (x, W1, W2)), (U.first_and_count, (x, 2 * x, W1))):
        g = srcgrad.grad(fn, cache=False, specialize=specialize)
        for _ in range(4):
            got = g(*args)
        np.testing.assert_allclose(got, finite_differences(fn, args, 0), rtol=1e-6,
                                   atol=1e-9, err_msg=fn.__name__)


def test_numba_reshape_of_a_strided_view_runs_numpy():
    pytest.importorskip("numba")
    A, W = RNG.normal(size=(3, 4)), RNG.normal(size=(6, 2))
    for fn, args, wrt in ((U.reshape_then_transpose, (A, W), (0, 1)),
                          (U.transpose_then_reshape, (A,), (0,))):
        want = srcgrad.grad(fn, wrt=wrt, cache=False, specialize=False)(*args)
        g = srcgrad.grad(fn, wrt=wrt, cache=False, backend="numba")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for _ in range(4):
                got = g(*args)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=fn.__name__)


@pytest.mark.parametrize("specialize", [False, True])
def test_an_object_called_as_a_function(specialize):
    """grad(model) of an object whose class defines __call__: its bound __call__, whose
    attribute reads are checked at each call like any method's."""
    x = RNG.normal(size=(4, 3))
    model = U.Model(RNG.normal(size=(3, 2)), 2.0)
    g = srcgrad.grad(model, cache=False, specialize=specialize)
    for scale, W in ((2.0, model.W), (5.0, model.W), (5.0, model.W * 2)):
        model.scale, model.W = scale, W
        for _ in range(3):
            np.testing.assert_allclose(g(x), finite_differences(model, (x,), 0), rtol=1e-6,
                                       atol=1e-9)
    value, _ = srcgrad.value_and_grad(model, cache=False)(x)
    assert value == model(x)


def test_an_object_whose_class_or_call_changes_runs_the_new_call():
    """obj(x) runs type(obj).__call__ of the moment: a class swapped or its __call__
    replaced after the gradient was compiled compiles again (it gave the old gradient);
    an instance attribute __call__ does not count, as in Python."""
    x = RNG.normal(size=(4, 3))
    model = U.Model(RNG.normal(size=(3, 2)), 1.0)
    g = srcgrad.grad(model, cache=False)
    for _ in range(3):
        np.testing.assert_allclose(g(x), finite_differences(model, (x,), 0), rtol=1e-6)
    original = U.Model.__call__
    try:
        model.__class__ = U.SineModel
        for _ in range(3):
            np.testing.assert_allclose(g(x), finite_differences(model, (x,), 0), rtol=1e-6)
        model.__class__ = U.Model
        U.Model.__call__ = lambda self, x: np.sum(np.exp(x @ self.W))
        for _ in range(3):
            np.testing.assert_allclose(g(x), finite_differences(model, (x,), 0), rtol=1e-6)
    finally:
        U.Model.__call__ = original
    model.__call__ = lambda x: np.sum(x)  # not what model(x) runs
    np.testing.assert_allclose(srcgrad.grad(model, cache=False)(x),
                               finite_differences(model, (x,), 0), rtol=1e-6)


def test_jvp_and_vjp_keep_equal_objects_apart():
    """jvp(f, ...) and vjp(f, ...) keep what they compiled per function by identity: two
    models that compare equal (same configuration, other weights) gave the first one's
    value and derivatives to the second; an unhashable one raised."""
    x, v = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    W = RNG.normal(size=(3, 2))
    models = [U.ConfiguredModel(1.0, W), U.ConfiguredModel(1.0, W * 5), U.Unhashable(W)]
    for m in models:
        for _ in range(2):
            out, t = srcgrad.jvp(m, (x,), (v,))
            assert out == pytest.approx(m(x), rel=1e-12)
            assert t == pytest.approx(np.sum(finite_differences(m, (x,), 0) * v), rel=1e-6)
            out, pullback = srcgrad.vjp(m, x)
            assert out == pytest.approx(m(x), rel=1e-12)
            np.testing.assert_allclose(pullback(1.0), finite_differences(m, (x,), 0),
                                       rtol=1e-6, atol=1e-9)


def test_jvp_of_a_function_with_keyword_only_parameters_says_what_to_write():
    with pytest.raises(TypeError, match=r"keyword-only or variadic.*lambda"):
        srcgrad.jvp(U.with_power, (np.ones(3),), (np.ones(3),))


def test_enumerate_with_a_start_keyword():
    """`enumerate(it, start=1)` was refused (a keyword made the loop's plan be skipped)."""
    x = RNG.normal(size=3)
    ws = [RNG.normal(size=3), RNG.normal(size=3)]
    g = srcgrad.grad(U.weighted_by_position, cache=False)
    for _ in range(3):
        np.testing.assert_allclose(g(x, ws, 4),
                                   finite_differences(U.weighted_by_position, (x, ws, 4), 0),
                                   rtol=1e-6, atol=1e-9)
