"""The disk cache keys a module by what the compiler read, by value: slices, enum members
and dtypes compiled in whole were keyed by their type alone, so a gradient compiled for
another value was loaded from disk (`slice(1, 3)` got `slice(0, 2)`'s gradient, Mode.CUBE
Mode.SQUARE's), without a word. Each test has its own cache directory (conftest)."""
import numpy as np

import srcgrad
from compiler_helpers import finite_differences

import cache_values_user as U

X = np.array([0.3, -0.7, 1.1])


def check(g, fn):
    np.testing.assert_allclose(g(X), finite_differences(fn, (X,), 0), rtol=1e-6, atol=1e-9)


def test_enum_members_in_a_closure():
    for mode in (U.Mode.SQUARE, U.Mode.CUBE, U.Mode.SQUARE):
        fn = U.make_loss(mode)
        check(srcgrad.grad(fn), fn)


def test_a_module_slice_changed_between_calls(monkeypatch):
    g = srcgrad.grad(U.window_loss)
    check(g, U.window_loss)
    for win in (slice(1, 3), slice(None, None, 2), slice(0, 2)):
        monkeypatch.setattr(U, "WIN", win)
        check(g, U.window_loss)
        check(srcgrad.grad(U.window_loss), U.window_loss)


def test_a_dict_of_slices_and_dtypes_changed(monkeypatch):
    g = srcgrad.grad(U.configured_loss)
    check(g, U.configured_loss)
    for win, dt in ((np.s_[:-1], "float64"), (np.s_[::2], "float32"), (np.s_[1:], "float64")):
        monkeypatch.setitem(U.CFG, "win", win)
        monkeypatch.setitem(U.CFG, "dtype", np.dtype(dt))
        got = g(X)
        want = np.zeros(3)
        want[win] = 3.0 * X[win] ** 2  # (finite differences of float32 values: too coarse)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-6 if dt == "float32" else 1e-12)


def test_numpy_functions_in_a_dict_changed(monkeypatch):
    # every ufunc was keyed as a numpy.ufunc and every dispatcher (np.sum, np.mean) as
    # one: the recompile after the guard failed loaded the old function's module
    g = srcgrad.grad(U.activation_loss)
    for act, reduce in ((np.tanh, np.sum), (np.sin, np.sum), (np.sin, np.mean),
                        (np.exp, np.mean), (np.tanh, np.sum)):
        monkeypatch.setitem(U.ACT, "act", act)
        monkeypatch.setitem(U.ACT, "reduce", reduce)
        for _ in range(2):
            check(g, U.activation_loss)
        check(srcgrad.grad(U.activation_loss), U.activation_loss)


def test_an_object_whose_getattr_raises_a_key_error(monkeypatch):
    # the disk cache's key looked for a custom op's attributes with getattr, and the
    # object's __getattr__ raised a KeyError out of srcgrad
    g = srcgrad.grad(U.params_loss)
    check(g, U.params_loss)
    monkeypatch.setitem(U.PARAMS.values, "scale", -3.0)
    check(g, U.params_loss)
    check(srcgrad.grad(U.params_loss), U.params_loss)
