"""Every primitive's forward-mode (JVP) rule, on plain float64 arrays.

The inputs are those of the spec table in tests/test_ops.py (one `Spec` per case: shapes,
broadcast pairs, axes, indices, input domains away from kinks). For each differentiable
spec, `runtime.ops.apply_jvp(prim, tangents, out, args, params)` is compared with
float64 central finite differences of the primitive's forward along the tangent:
- with a tangent on every differentiable input at once,
- with a tangent on one input only (None elsewhere, as the compiler passes them),
and the rule is tied to the VJP rule by the inner-product identity
<v, J t> == <J^T v, t> (both rules applied through `apply_jvp` / `apply_vjp`).
"""
from __future__ import annotations

import numpy as np
import pytest

import test_ops as T  # the spec table (tests/ is on sys.path, see conftest.py)
from runtime.ops import PRIMITIVES, apply_jvp, apply_vjp
from runtime.ops.jvps import JVP_KIND

EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-6


def _tangent_slots(s):
    """Positions of float array inputs that are differentiable inputs of the primitive."""
    prim = PRIMITIVES[s.prim]
    return [i for i in T._array_slots(s) if prim.is_diff_input(i)]


def _tangents_for(s, args, direction):
    """The `tangents` list apply_jvp takes: one entry per input, None where no tangent."""
    return [direction.get(i) for i in range(len(args))]


def _jvp(s, args, direction):
    prim = PRIMITIVES[s.prim]
    out = T._call(s, args)
    t = apply_jvp(prim, _tangents_for(s, args, direction), out, args, s.params)
    if t is None:  # a structural zero (sign)
        return np.zeros(np.shape(out))
    t = np.asarray(t)
    assert t.shape == np.shape(out), \
        f"tangent of shape {t.shape} for an output of shape {np.shape(out)}"
    assert t.dtype == np.float64, t.dtype
    return t


def _fd(s, args, direction):
    return T.directional(lambda a: T._call(s, a), args, direction, EPS)


JVP_SPECS = [s for s in T.DIFF_SPECS if _tangent_slots(s)]


def _params(specs):
    return [pytest.param(s, id=s.id, marks=())
            for s in specs]


def test_every_differentiable_primitive_has_a_jvp_rule():
    missing = sorted(n for n, p in PRIMITIVES.items() if p.differentiable and p.jvp is None)
    assert not missing, f"differentiable primitives without a JVP rule: {missing}"
    # each was given one by a structural kind, or has an explicit rule of its own
    for name, prim in PRIMITIVES.items():
        if prim.differentiable:
            assert callable(prim.jvp), name
            assert JVP_KIND.get(name) in (None, "elementwise", "linear", "multilinear",
                                          "reduction"), name
    # non-differentiable ones have none, so apply_jvp never runs a stray rule
    assert all(p.jvp is None for p in PRIMITIVES.values() if not p.differentiable)


def test_every_differentiable_primitive_is_checked_here():
    diff = {n for n, p in PRIMITIVES.items() if p.differentiable}
    # the scipy-referenced ones: tests/test_scipy_ops.py checks their JVP rules
    assert diff - {s.prim for s in JVP_SPECS} - T.SCIPY_PRIMITIVES == set()


@pytest.mark.parametrize("s", _params(JVP_SPECS))
def test_jvp_rule_against_finite_differences(s):
    args, rng = s.materialize()
    slots = _tangent_slots(s)
    u = {i: rng.standard_normal(args[i].shape) for i in slots}
    T.close(_jvp(s, args, u), _fd(s, args, u), "J t, all tangents")
    if len(slots) > 1:  # one input at a time: the others' tangents are None
        for i in slots:
            T.close(_jvp(s, args, {i: u[i]}), _fd(s, args, {i: u[i]}), f"J t, input {i} only")


def test_jvp_rule_with_no_tangents_is_a_structural_zero():
    prim = PRIMITIVES["sin"]
    x = np.array([0.1, 0.2])
    assert apply_jvp(prim, [None], np.sin(x), [x], {}) is None


@pytest.mark.parametrize("s", _params(JVP_SPECS))
def test_jvp_rule_is_the_transpose_of_the_vjp_rule(s):
    prim = PRIMITIVES[s.prim]
    args, rng = s.materialize()
    slots = _tangent_slots(s)
    out = T._call(s, args)
    u = {i: rng.standard_normal(args[i].shape) for i in slots}
    v = rng.standard_normal(np.shape(out))
    jt = _jvp(s, args, u)
    needs = [i in slots for i in range(len(args))]
    cts = apply_vjp(prim, v, out, args, s.params, needs)
    lhs = float(np.sum(v * jt))
    rhs = sum(float(np.sum(np.asarray(cts[i]) * u[i])) for i in slots if cts[i] is not None)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10,
                               err_msg="<v, J t> vs <J^T v, t>")


# ---- where derivatives are conventions, forward and reverse make the same choice ---------------
# (so that forward-over-reverse Hessians are symmetric and jacobian(mode="fwd") equals
# jacobian(mode="rev") even at ties, zeros and kinks)

KINKS = [
    ("max", [np.array([1.0, 3.0, 3.0, 3.0])], {}),
    ("min", [np.array([[1.0, 1.0], [0.0, 2.0]])], dict(axis=1)),
    ("prod", [np.array([2.0, 0.0, 3.0])], {}),
    ("prod", [np.array([[0.0, 0.0], [3.0, 4.0]])], dict(axis=1)),
    ("absolute", [np.array([-1.0, 0.0, 2.0])], {}),
    ("relu", [np.array([-1.0, 0.0, 2.0])], {}),
    ("maximum", [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])], {}),
    ("minimum", [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])], {}),
    ("clip", [np.array([-1.0, 0.0, 1.0, 2.0]), -1.0, 1.0], {}),
    ("power", [np.array([0.0, 1.0, 2.0]), np.array([2.0, 0.0, 1.5])], {}),
    ("sqrt", [np.array([1e-3, 1.0])], {}),
    ("hypot", [np.array([0.0, 3.0]), np.array([0.0, 4.0])], {}),
    ("arctan2", [np.array([0.0, 1.0]), np.array([0.0, -2.0])], {}),
    ("sinc", [np.array([0.0, 0.5])], {}),
    ("fmax", [np.array([1.0, np.nan, 2.0, np.nan]), np.array([1.0, 0.5, np.nan, np.nan])], {}),
    ("fmin", [np.array([1.0, np.nan, 2.0]), np.array([1.0, 0.5, np.nan])], {}),
    ("nan_to_num", [np.array([np.nan, np.inf, -np.inf, 1.5])], {}),
]


@pytest.mark.parametrize("name, args, params", KINKS,
                         ids=[f"{n}{i}" for i, (n, _, _) in enumerate(KINKS)])
def test_jvp_and_vjp_rules_agree_at_conventions(name, args, params):
    prim = PRIMITIVES[name]
    rng = np.random.default_rng(0)
    out = prim(*args, **params)
    slots = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    for i in slots:  # each input alone: J e_k column by column against J^T e_j rows
        tangents = [None] * len(args)
        t = rng.standard_normal(args[i].shape)
        tangents[i] = t
        jt = apply_jvp(prim, tangents, out, args, params)
        jt = np.zeros(np.shape(out)) if jt is None else np.asarray(jt)
        assert np.all(np.isfinite(jt)), (name, jt)
        v = rng.standard_normal(np.shape(out))
        needs = [k == i for k in range(len(args))]
        ct = apply_vjp(prim, v, out, args, params, needs)[i]
        ct = np.zeros(args[i].shape) if ct is None else np.asarray(ct)
        np.testing.assert_allclose(float(np.sum(v * jt)), float(np.sum(ct * t)),
                                   rtol=1e-12, atol=1e-12, err_msg=f"{name}, input {i}")


def test_jvp_of_max_splits_ties_evenly():
    x = np.array([1.0, 3.0, 3.0, 3.0])
    t = np.array([10.0, 1.0, 2.0, 6.0])
    got = apply_jvp(PRIMITIVES["max"], [t], np.max(x), [x], {})
    np.testing.assert_allclose(got, 3.0)  # the mean of the tied tangents


def test_jvp_of_sign_is_zero():
    x = np.array([-2.0, 0.0, 3.0])
    got = apply_jvp(PRIMITIVES["sign"], [np.ones(3)], np.sign(x), [x], {})
    assert got is None or not np.any(got)
