"""No silent wrong gradient: each case once gave a wrong, zero or crashing gradient.

Every gradient is checked against finite differences (and the tape where it can follow);
constructs srcgrad refuses must raise a located SrcgradError instead.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import srcgrad
from runtime.ops import PRIMITIVES
from srcgrad.errors import NotDifferentiableError, OutputTypeError, SrcgradError
from runtime.ops.lists import LIST_APPEND, LIST_FROM, STACK_LIST
from srcgrad.staging import INT, LEN, MAKE_SLICE, PACK

from compiler_helpers import check_grad, finite_differences

X = np.array([0.3, 2.7, -4.2])
Y = np.array([1.1, 1.3, 1.7])
CONST = np.array([1.0, 2.0])


# ---- the soundness invariant on the op table --------------------------------------------------

def test_every_primitive_input_has_a_rule_or_a_declared_zero():
    """An active value may enter an input only where a VJP rule covers it or a zero
    derivative is declared; a differentiable op with an uncovered input is a table bug."""
    for name, p in PRIMITIVES.items():
        if not p.differentiable or getattr(p, "custom", False):
            continue
        n = 1 if p.variadic else max(len(p.vjps), 1)
        for i in range(n):
            assert p.sound_input(i, (), {}), f"{name} input {i}: no rule, no declared zero"


def test_meta_ops_never_silently_accept_active_values():
    """Compiler-internal meta ops (tuple packing, slices, int()) have no derivative and
    declare none: an active value reaching them is a compile-time error, not a zero."""
    for p in (PACK, MAKE_SLICE, INT):
        assert not p.sound_input(0, (), {}), p.name
    assert LEN.sound_input(0, (), {})  # structural: a length carries no derivative
    for p in (LIST_FROM, LIST_APPEND, STACK_LIST):
        assert p.sound_input(0, (), {}) and p.rule(0) is not None, p.name


def test_apply_vjp_refuses_a_missing_rule():
    from runtime.ops.core import Primitive, apply_vjp

    p = Primitive("nodiff", lambda x: x * 2)
    with pytest.raises(TypeError, match="no VJP rule for 'nodiff'"):
        apply_vjp(p, 1.0, 2.0, [1.0], {}, [True])


# ---- remainders, integer casts, Python floats -------------------------------------------------

def mod_op(x, y):
    return np.sum(x % y * x)


def mod_funcs(x, y):
    return np.sum(np.mod(x, y) + np.remainder(y, 0.7) * 2 + np.fmod(x, y) ** 2 + x // y)


@pytest.mark.parametrize("fn", [mod_op, mod_funcs])
def test_remainders_differentiate(fn):
    check_grad(fn, [X, Y], (0, 1))


def astype_int(x):
    return np.sum(x.astype(int) * x)


def astype_float32(x):
    return np.sum(x.astype(np.float32) * x)


def test_astype_to_integers_has_zero_derivative():
    (g,) = check_grad(astype_int, [X], 0)
    np.testing.assert_array_equal(g, np.trunc(X))  # d/dx of trunc(x) * x away from jumps
    g32 = srcgrad.grad(astype_float32, cache=False)(X)  # d/dx float32(x) * x ~ 2x
    np.testing.assert_allclose(g32, 2 * X, rtol=1e-6)


def python_floats(x):
    s = np.sum(x)
    return float(s) * 2 + math.exp(s / 10)


def math_of_array(x):
    return np.sum(math.exp(x))


def test_float_and_math_of_0d_values():
    g = srcgrad.grad(python_floats, cache=False)(X)
    np.testing.assert_allclose(g, finite_differences(python_floats, [X], 0), rtol=1e-6)


def test_math_of_an_array_raises_as_numpy_does():
    with pytest.raises(TypeError, match="0-dimensional"):
        math_of_array(X)
    with pytest.raises(TypeError, match="0-dimensional"):
        srcgrad.grad(math_of_array, cache=False)(X)


# ---- np.r_ / np.c_ ----------------------------------------------------------------------------

def r_concat(x):
    return np.sum(np.r_[x, CONST] ** 2)


def c_concat(x):
    return np.sum(np.c_[x, x * 2] ** 2)


@pytest.mark.parametrize("fn", [r_concat, c_concat])
def test_index_tricks_of_run_time_arrays_differentiate(fn):
    """np.r_/np.c_ of run-time arrays: joined rank-free (they once gave a zero gradient,
    then were refused), checked against finite differences."""
    check_grad(fn, (X,), tape=False)


# ---- lists --------------------------------------------------------------------------------------

def two_lists(x, n):
    a = []
    b = []
    for i in range(n):
        a.append(x)
        b.append(x * 2.0)
    return np.sum(np.stack(a) * np.stack(b))


def list_read_in_loop(x, n):
    h = [x]
    for t in range(n):
        h.append(np.tanh(h[t]) * 1.5)
    return np.sum(np.stack(h) ** 2)


def list_and_state(x, n):
    h = x
    hs = [x]
    for t in range(n):
        h = np.tanh(h) * 1.5
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def test_reading_a_run_time_list_while_it_grows():
    for n in (1, 3):
        np.testing.assert_allclose(srcgrad.grad(list_read_in_loop, cache=False)(X, n),
                                   finite_differences(list_read_in_loop, [X, n], 0),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [two_lists, list_and_state])
def test_lists_grown_in_loops(fn):
    for n in (1, 3):
        out, g = srcgrad.value_and_grad(fn, cache=False)(X, n)
        assert out == pytest.approx(fn(X, n))
        np.testing.assert_allclose(g, finite_differences(fn, [X, n], 0), rtol=1e-6,
                                   atol=1e-8)


# ---- and / or on run-time values ---------------------------------------------------------------

def or_default(x):
    s = np.sum(x) * 0.0
    return (s or 1.0) * np.sum(x ** 2)


def and_or(x):
    s = np.sum(x)
    return (s < 0 and s * 2) or s * 3


def and_chain(x):
    s = np.sum(x ** 2)
    return (s > 1 and s < 100 and s * 2) + s


@pytest.mark.parametrize("fn", [or_default, and_or, and_chain])
@pytest.mark.parametrize("scale", [1.0, -1.0, 0.05])
def test_and_or_give_python_values(fn, scale):
    x = X * scale
    out, g = srcgrad.value_and_grad(fn, cache=False)(x)
    assert out == pytest.approx(fn(x))
    np.testing.assert_allclose(g, finite_differences(fn, [x], 0), rtol=1e-6, atol=1e-8)


# ---- outputs that are not real scalars -----------------------------------------------------------

def returns_tuple(x):
    return np.sum(x), 1.0


def returns_bool(x):
    return np.sum(x) > 0


def returns_string(x):
    return "a"


def returns_none(x):
    y = x * 2


@pytest.mark.parametrize("fn", [returns_tuple, returns_bool, returns_string, returns_none])
def test_non_scalar_outputs_are_refused(fn):
    with pytest.raises(OutputTypeError) as info:
        srcgrad.grad(fn, cache=False)(X)
    assert info.value.filename == __file__ and info.value.lineno is not None


def square_sum(x):
    return np.sum(x * x)


def test_complex_inputs_are_refused():
    with pytest.raises(TypeError, match="real"):
        srcgrad.grad(square_sum, cache=False)(X + 1j)


# ---- the checker refuses what has no derivative --------------------------------------------------

def slice_bound_from_active(x):
    return np.sum(x[:np.sum(x) * 0 + 2])


def test_a_derivative_is_never_dropped_silently():
    """An active float reaching an op with no rule (a slice bound computed from it) is
    refused at the user's line."""
    with pytest.raises(SrcgradError):
        srcgrad.grad(slice_bound_from_active, cache=False)(X)


# ---- numpy aliasing: `a += b` updates the array every alias sees ------------------------------

def alias_of_fresh(x):
    y = x * 1.0
    v = y
    v += 1.0
    return np.sum(x * y)  # y changed with v: d/dx of x * (x + 1)


def bump(v):
    v += 1.0
    return v


def callee_updates_caller(x):
    y = x * 2.0
    z = bump(y)
    return np.sum(y * x) + np.sum(z)  # y is z: both 2x + 1


def accumulate(x, n):
    h = np.zeros(3)
    for i in range(n):
        h += x * i
    return np.sum(h * x)


@pytest.mark.parametrize("fn", [alias_of_fresh, callee_updates_caller])
@pytest.mark.parametrize("x", [X, 0.3])
def test_in_place_update_of_a_value_another_name_holds_is_refused(fn, x):
    """numpy changes the other name too where the value is an array, and not where it is
    a Python or numpy scalar (immutable: `+=` rebinds): which one it is is known only when
    the function runs, and srcgrad once rebound both names, wrong for scalars."""
    with pytest.raises(SrcgradError, match="in place") as info:
        srcgrad.grad(fn, cache=False)(x)
    assert info.value.filename == __file__


def view_then_update(x):
    v = np.sin(x)
    w = v.T
    v *= x
    return np.sum(w * w)


def alias_in_a_branch(x):
    v = np.sin(x)
    if np.sum(x) > 10.0:
        w = v * 1.0
    else:
        w = v
    v *= x
    return np.sum(w * w)


@pytest.mark.parametrize("fn", [view_then_update, alias_in_a_branch])
def test_in_place_update_after_a_view_or_a_branch_alias_is_refused(fn):
    """A view taken before the update (or a branch result that may be the array) changes
    with it in numpy; srcgrad once left it as it was: a wrong gradient."""
    with pytest.raises(SrcgradError, match="in place") as info:
        srcgrad.grad(fn, cache=False)(np.array([[0.4, -0.7], [0.3, 0.9]]))
    assert info.value.filename == __file__


@pytest.mark.parametrize("fn,args", [(accumulate, (X, 3))])
def test_in_place_updates_reach_every_alias(fn, args):
    out, g = srcgrad.value_and_grad(fn, cache=False)(*args)
    assert out == pytest.approx(fn(*[a.copy() if isinstance(a, np.ndarray) else a
                                     for a in args]))
    ref = finite_differences(lambda *a: fn(*[b.copy() if isinstance(b, np.ndarray) else b
                                             for b in a]), list(args), 0)
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-8)


def update_argument(x):
    v = x
    v += 1.0
    return np.sum(x * v)


def update_view(a):
    v = a[1:]
    v *= 2.0
    return np.sum(a ** 2)


def update_aliased_carry(x, n):
    h = x * 1.0
    a = h
    for i in range(n):
        h += x
    return np.sum(a * h)


@pytest.mark.parametrize("fn,args", [(update_argument, (X,)), (update_view, (X,)),
                                     (update_aliased_carry, (X, 2))])
def test_in_place_updates_of_shared_arrays_are_refused(fn, args):
    with pytest.raises(SrcgradError, match="in place") as info:
        srcgrad.grad(fn, cache=False)(*args)
    assert info.value.filename == __file__


# ---- functions srcgrad cannot compile are refused, never mis-indexed ---------------------------

class Model:
    a = 2.0

    def g(self, x, y):
        return np.sum(x * y * self.a)


@pytest.mark.parametrize("kw", [{}, {"wrt": "y"}, {"wrt": 1}, {"wrt": ("x", "y")}])
def test_bound_methods_count_wrt_from_the_bound_signature(kw):
    """wrt once counted from the bound signature while the compiled one had `self`, so
    wrt="y" gave the gradient for x."""
    m = Model()
    check_grad(m.g, (X, Y), kw.get("wrt", 0), compiled=srcgrad.grad(m.g, cache=False, **kw))


def test_an_unexpected_failure_inside_the_compiler_is_reported_at_the_function(monkeypatch):
    from srcgrad import api
    from srcgrad.errors import InternalError

    def broken(*a, **k):
        raise KeyError("internal")

    monkeypatch.setattr(api, "optimize", broken)
    with pytest.raises(InternalError, match="bug in srcgrad") as info:
        srcgrad.grad(square_sum, cache=False)(X)
    assert info.value.filename == __file__
    assert info.value.lineno == square_sum.__code__.co_firstlineno


def update_diagonal(x):
    d = np.diagonal(x)
    d += 1.0
    return np.sum(d * x[0])


def test_in_place_update_of_a_view_made_by_any_view_op_is_refused():
    """The aliasing check reads the op's declared `view`, not a list of names: np.diagonal
    (numpy's read-only view) was once let through."""
    with pytest.raises(SrcgradError, match="in place") as info:
        srcgrad.grad(update_diagonal, cache=False)(np.ones((3, 3)))
    assert info.value.filename == __file__


# ---- tangents and cotangents must have their primal's shape (no silent broadcasting) ----------

def sin2(x):
    return np.sin(x) * 2


@pytest.mark.parametrize("bad", [np.ones(1), np.ones((2, 3)), 1.0])
def test_tangent_and_cotangent_shapes_are_checked(bad):
    x = np.ones(3)
    with pytest.raises(ValueError, match="shape"):
        srcgrad.hvp(square_sum, cache=False)(x, bad)
    with pytest.raises(ValueError, match="shape"):
        srcgrad.jvp(square_sum, (x,), (bad,))
    out, pullback = srcgrad.vjp(sin2, x)
    with pytest.raises(ValueError, match="shape"):
        pullback(bad)
    np.testing.assert_allclose(pullback(np.ones(3)), 2 * np.cos(x))


def none_index_of_a_sum(x):
    v = np.sum(x)
    w = v[None]
    return np.sum(np.tanh(w)) + v ** 3


def test_adjoint_of_an_index_valid_on_0d_values_is_not_written_in_place():
    """`dv[None] += dw` once crashed: dv was a numpy scalar, which has no items."""
    check_grad(none_index_of_a_sum, (np.array([0.1, 0.2]),))


def iterate_grown_list(x):
    a = []
    for i in range(3):
        a.append(x * i)
    s = 0.0
    for v in a:
        s = s + np.sum(v ** 2)
    return s


def test_iterating_over_a_grown_list_is_refused_at_its_line():
    """It once crashed in the generated code (a list has no shape)."""
    with pytest.raises(SrcgradError, match="iterating over a list") as info:
        srcgrad.grad(iterate_grown_list, cache=False)(np.ones(2))
    assert info.value.filename == __file__


def stack_times_len(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    return np.sum(np.stack(a)) * len(a)


def test_len_of_a_grown_list_works_as_the_message_says():
    check_grad(stack_times_len, (np.array([0.3, -0.2]), 3), tape=False)


G_FLOAT = 0.5


def method_of_a_folded_number(x):
    v = np.sin(G_FLOAT)
    return v.sum() + np.sum(x * v)


def test_array_methods_of_a_number_computed_at_compile_time():
    """np.sin of a Python float is a numpy scalar in numpy; srcgrad folded it to a Python
    float and refused `.sum()` on it (found by the generator)."""
    check_grad(method_of_a_folded_number, (np.array([0.3, 0.4]),))
