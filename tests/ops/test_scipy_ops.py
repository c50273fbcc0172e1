"""scipy's spellings: scipy.special, scipy.linalg.solve_triangular / cho_solve and the
scipy.stats log densities.

- every primitive of runtime/ops/special.py and solve_triangular, table-driven with
  tests/test_ops.py's checks (forward against scipy, VJP against finite differences over
  broadcasting shapes, second derivative, rule and JVP consistency);
- every scipy spelling compiled with srcgrad.grad, against the tape engine and finite
  differences, for every float argument; second derivatives of the compiled gradient
  (srcgrad.hessian) against finite differences of it;
- the conventions where a derivative is undefined, and refusals.
"""
from __future__ import annotations

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg as sl  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as st  # noqa: E402

import srcgrad  # noqa: E402
import test_ops as T  # noqa: E402
from compiler_helpers import check_grad, check_hessian, tape_grads  # noqa: E402
from runtime.ops import PRIMITIVES  # noqa: E402
from runtime.ops.numpy_api import UnsupportedArgument, lookup, public_names  # noqa: E402
from runtime.tensor import Tensor  # noqa: E402
from test_ops import SCIPY_PRIMITIVES, A, Spec, pos, real, unit, wellcond  # noqa: E402


# ---- the primitives, table-driven -------------------------------------------------------------

def very_negative(rng, shape):
    """Where ndtr underflows (ndtr(-40) ~ 1e-350): log_ndtr's rule must stay finite."""
    return rng.uniform(-45.0, -25.0, shape)


def above_m1(rng, shape):
    return rng.uniform(-0.5, 2.0, shape)


SPECS: list = []


def spec(prim, args, params=None, **kw):
    SPECS.append(Spec(prim, args, params, **kw))


for _p, _ref, _dom in (("gammaln", sp.gammaln, pos), ("digamma", sp.digamma, pos),
                       ("erf", sp.erf, real), ("erfc", sp.erfc, real),
                       ("erfinv", sp.erfinv, unit), ("ndtr", sp.ndtr, real),
                       ("log_ndtr", sp.log_ndtr, real)):
    for _shape in ((), (3,), (2, 3)):
        spec(_p, [A(_shape, _dom)], ref=_ref)
spec("log_ndtr", [A((4,), very_negative)], ref=sp.log_ndtr)
for _n in (1, 2, 3):
    for _shape in ((), (2, 3)):
        spec("polygamma", [A(_shape, pos)], dict(n=_n), ref=lambda x, n: sp.polygamma(n, x))
for _sx, _sy in T.BROADCAST_PAIRS:
    spec("xlogy", [A(_sx), A(_sy, pos)], ref=sp.xlogy)
    spec("xlog1py", [A(_sx), A(_sy, above_m1)], ref=sp.xlog1py)
spec("xlogy", [2.5, A((3,), pos)], ref=sp.xlogy)


def ref_solve_triangular(a, b, lower=False, trans=0):
    return sl.solve_triangular(a, b, lower=lower, trans=trans)


for _sa, _sb in (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)),
                 ((3, 3), (2, 3, 1)), ((2, 3, 3), (3, 1))):
    for _lower in (False, True):
        for _trans in (0, 1):
            params = {k: v for k, v in (("lower", _lower), ("trans", _trans)) if v}
            spec("solve_triangular", [A(_sa, wellcond), A(_sb)], params,
                 ref=ref_solve_triangular)

DIFF_SPECS = [s for s in SPECS if s.grad and PRIMITIVES[s.prim].differentiable]


def test_every_primitive_here_has_a_spec():
    assert {s.prim for s in SPECS} == set(SCIPY_PRIMITIVES)
    assert set(SCIPY_PRIMITIVES) <= set(PRIMITIVES)


@pytest.mark.parametrize("s", SPECS, ids=lambda s: s.id)
def test_forward(s):
    T.test_forward(s)
    T.test_an_output_sharing_memory_with_an_input_is_declared_a_view(s)


@pytest.mark.parametrize("s", DIFF_SPECS, ids=lambda s: s.id)
def test_vjp_against_finite_differences(s):
    T.test_vjp_against_finite_differences(s)


@pytest.mark.parametrize("s", DIFF_SPECS, ids=lambda s: s.id)
def test_second_derivative(s):
    T.test_second_derivative(s)


@pytest.mark.parametrize("s", DIFF_SPECS, ids=lambda s: s.id)
def test_jvp_rule_matches_finite_differences(s):
    """The forward-mode rule (runtime.ops.jvps or the op's own) along a random tangent."""
    prim = PRIMITIVES[s.prim]
    args, rng = s.materialize()
    slots = [i for i in T._array_slots(s) if prim.is_diff_input(i)]
    u = {i: rng.standard_normal(args[i].shape) for i in slots}
    out = T._call(s, args)
    tangents = [u.get(i) for i in range(len(args))]
    jt = prim.jvp(tangents, out, *args, **s.params)
    T.close(jt, T.directional(lambda a: T._call(s, a), args, u, T.EPS1), "jvp")


# ---- conventions ------------------------------------------------------------------------------

def _grads(fn, *values):
    ts = [Tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in values]
    fn(*ts).sum().backward()
    return [np.zeros(np.shape(v)) if t.grad is None else t.grad.data
            for t, v in zip(ts, values)]


def test_xlogy_at_zero():
    x = np.array([0.0, 0.0, 0.0, 2.0])
    y = np.array([0.0, 2.0, -1.0, 3.0])
    out = sp.xlogy(Tensor(x), Tensor(y)).data
    np.testing.assert_array_equal(out[:2], [0.0, 0.0])
    gx, gy = _grads(sp.xlogy, x, y)
    np.testing.assert_allclose(gx, [0.0, np.log(2.0), 0.0, np.log(3.0)])
    np.testing.assert_allclose(gy, [0.0, 0.0, 0.0, 2.0 / 3.0])
    gx, gy = _grads(sp.xlog1py, x, np.array([-1.0, 1.0, -2.0, 2.0]))
    np.testing.assert_allclose(gx, [0.0, np.log(2.0), 0.0, np.log(3.0)])
    np.testing.assert_allclose(gy, [0.0, 0.0, 0.0, 2.0 / 3.0])


def test_log_ndtr_gradient_stays_accurate_far_in_the_tail():
    x = np.array([-40.0, -200.0, -1e4])
    assert np.all(sp.ndtr(x) == 0.0)  # the naive pdf / cdf would be 0 / 0
    (g,) = _grads(sp.log_ndtr, x)
    # the Mills ratio phi(x) / Phi(x) = -x - 1/x + 2/x**3 - 10/x**5 + ... for x -> -inf
    mills = -x - 1 / x + 2 / x ** 3 - 10 / x ** 5 + 74 / x ** 7
    # (exp(-x**2/2 - log_ndtr(x)) loses about eps * x**2 / 2 relative: 5e-9 at x = -1e4)
    np.testing.assert_allclose(g, mills, rtol=1e-8)
    # d/dx of the ratio R is -R (x + R), about -1 in the tail (x + R cancels: the rule's
    # derivative keeps 6 digits down to x = -200, fewer below; see runtime/ops/special.py)
    x, mills = x[:2], mills[:2]
    h = srcgrad.hessian(lambda v: np.sum(sp.log_ndtr(v)), cache=False)(x)
    np.testing.assert_allclose(np.diag(h), -mills * (x + mills), rtol=1e-6)


def test_polygamma_orders_chain():
    x = np.array([0.7, 1.5, 3.0])
    (g,) = _grads(lambda v: lookup(sp.polygamma)(0, v), x)
    np.testing.assert_allclose(g, sp.polygamma(1, x), rtol=1e-12)
    (g,) = _grads(lambda v: lookup(sp.polygamma)(2, v), x)
    np.testing.assert_allclose(g, sp.polygamma(3, x), rtol=1e-12)
    (g,) = _grads(sp.gammaln, x)
    np.testing.assert_allclose(g, sp.digamma(x), rtol=1e-12)


def test_polygamma_order_must_be_a_constant_integer():
    with pytest.raises(UnsupportedArgument, match="n must be a constant integer"):
        lookup(sp.polygamma)(np.array([1, 2]), np.ones(2))

    def f(x, n):
        return np.sum(sp.polygamma(n, x))

    with pytest.raises(srcgrad.SrcgradError, match="n must be a constant integer"):
        srcgrad.grad(f, cache=False)(np.ones(2), 1.0 * np.ones(()))


# ---- compiled, against the tape and finite differences ---------------------------------------

rng = np.random.default_rng(17)
X = rng.uniform(0.3, 2.0, (3, 4))
V = rng.uniform(-1.5, 1.5, (3, 4))


def f_special_ufuncs(x):
    return np.sum(sp.gammaln(x) + sp.digamma(x) + sp.psi(x) * 0.5 + sp.erf(x - 1) +
                  sp.erfc(x) + sp.ndtr(x - 1) + sp.log_ndtr(x - 2) + sp.expit(x - 1) +
                  sp.logit(x / 3) + sp.erfinv(x / 3))


def f_xlogy(x, y):
    return np.sum(sp.xlogy(x, y) + sp.xlog1py(y, x) * x)


def f_xlogy_broadcast(x, y):
    return np.sum(sp.xlogy(x[:, :1], y) ** 2 + sp.xlog1py(x, y[0]))


def f_polygamma(x):
    return np.sum(sp.polygamma(1, x) + sp.polygamma(3, x) * x + sp.polygamma(0, x))


def f_softmax(x):
    return np.sum(sp.softmax(x, axis=1) ** 2 * x) + np.sum(sp.log_softmax(x, axis=0) ** 2) + \
        np.sum(sp.softmax(x) * x) + sp.logsumexp(x) + np.sum(sp.log_softmax(x) * x)


def f_solve_triangular(a, b):
    m = a @ a.T + 4 * np.eye(4)
    lo = np.linalg.cholesky(m)
    return np.sum(sl.solve_triangular(lo, b, lower=True) ** 2) + \
        np.sum(sl.solve_triangular(lo.T, b[:, 0], trans="T") ** 2) + \
        np.sum(sl.solve_triangular(a + 3 * np.eye(4), b, trans=1, lower=True) * b)


def f_cho_solve(a, b):
    m = a @ a.T + 4 * np.eye(4)
    c = sl.cho_factor(m)
    lo = sl.cholesky(m, lower=True)
    return np.sum(sl.cho_solve(c, b) * b) + np.sum(sl.cho_solve((lo, True), b[:, 1]) ** 2) + \
        np.sum(sl.cho_solve(sl.cho_factor(m, lower=True), b) ** 2)


A4 = rng.uniform(-1, 1, (4, 4))
B42 = rng.uniform(-1, 1, (4, 2))

#: (function, args, wrt, the tape runs it as written)
COMPILED = [
    (f_special_ufuncs, [X], 0, True),
    (f_xlogy, [X / 2, X], (0, 1), True),
    (f_xlogy_broadcast, [X / 2, X], (0, 1), True),
    (f_polygamma, [X], 0, False),
    (f_softmax, [V], 0, False),
    (f_solve_triangular, [A4, B42], (0, 1), False),
    (f_cho_solve, [A4, B42], (0, 1), False),
]


@pytest.mark.parametrize("fn, args, wrt, tape", COMPILED, ids=[c[0].__name__ for c in COMPILED])
def test_compiled_against_tape_and_finite_differences(fn, args, wrt, tape):
    check_grad(fn, args, wrt, tape=tape)


# scipy's Python functions and the distributions' methods read a Tensor as an array, so on
# the tape the same model runs with the adapters themselves (what the compiler calls)

def _model(logdensity, nargs):
    """sum(logdensity(...)) as a function of `nargs` named parameters (srcgrad
    differentiates named parameters, not *args)."""
    if nargs == 1:
        def model(a):
            return np.sum(logdensity(a))
    elif nargs == 2:
        def model(a, b):
            return np.sum(logdensity(a, b))
    elif nargs == 3:
        def model(a, b, c):
            return np.sum(logdensity(a, b, c))
    elif nargs == 4:
        def model(a, b, c, d):
            return np.sum(logdensity(a, b, c, d))
    else:
        def model(a, b, c, d, e):
            return np.sum(logdensity(a, b, c, d, e))
    return model


def _tape_model(method, nargs):
    return _model(lookup(method), nargs)


XS = rng.uniform(0.1, 0.9, (5,))
MVN_X = rng.uniform(-1, 1, (5, 3))
MVN_ONE = rng.uniform(-1, 1, (3,))
MEAN = rng.uniform(-0.5, 0.5, (3,))
COV_A = rng.uniform(-1, 1, (3, 3))
COV = COV_A @ COV_A.T + 3 * np.eye(3)
DIR_X = np.array([0.2, 0.3, 0.5])
DIR_XN = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
ALPHA = np.array([1.5, 2.0, 0.8])

#: (scipy method, args (every float one is differentiated), wrt)
STATS = [
    (st.norm.logpdf, [V, 0.3, 1.7], (0, 1, 2)),
    (st.norm.logpdf, [V[0], V[1], X[2]], (0, 1, 2)),
    (st.norm.pdf, [V, 0.3, 1.7], (0, 1, 2)),
    (st.norm.cdf, [V, 0.3, 1.7], (0, 1, 2)),
    (st.norm.logcdf, [V * 4, 0.3, 1.7], (0, 1, 2)),
    (st.norm.logpdf, [V], 0),
    (st.t.logpdf, [V, 3.5, 0.2, 1.3], (0, 1, 2, 3)),
    (st.t.logpdf, [V, X[0] + 1, 0.2, 1.3], (0, 1, 2, 3)),
    (st.gamma.logpdf, [X, 2.5, 0.1, 1.5], (0, 1, 2, 3)),
    (st.gamma.logpdf, [X, X[0] + 0.5], (0, 1)),
    (st.beta.logpdf, [XS, 2.5, 1.5], (0, 1, 2)),
    (st.beta.logpdf, [XS, 2.5, 1.5, -0.05, 1.1], (0, 1, 2, 3, 4)),
    (st.poisson.logpmf, [np.array([0.0, 1.0, 3.0, 7.0]), 2.3], 1),
    (st.poisson.logpmf, [np.array([0.0, 1.0, 3.0, 7.0]), X[0, :4] * 3], 1),
    (st.multivariate_normal.logpdf, [MVN_X, MEAN, COV], (0, 1, 2)),
    (st.multivariate_normal.logpdf, [MVN_ONE, MEAN, COV], (0, 1, 2)),
    (st.multivariate_normal.logpdf, [MVN_X, MEAN, 1.7], (0, 1, 2)),
    (st.multivariate_normal.logpdf, [MVN_X, MEAN, np.array([1.5, 0.7, 2.0])], (0, 1, 2)),
    (st.multivariate_normal.logpdf, [MVN_X[:1], MEAN, COV], (0, 1, 2)),
    # scipy refuses an x off the simplex, so finite differences of x are taken below
    (st.dirichlet.logpdf, [DIR_X, ALPHA], 1),
    (st.dirichlet.logpdf, [DIR_XN, ALPHA], 1),
]


def _stats_id(case):
    method, args, wrt = case
    shapes = "-".join("x".join(map(str, np.shape(a))) or "s" for a in args)
    return f"{type(method.__self__).__name__[:-4]}.{method.__name__}[{shapes}]"


@pytest.mark.parametrize("method, args, wrt", STATS, ids=[_stats_id(c) for c in STATS])
def test_stats_value_matches_scipy(method, args, wrt):
    want = method(*args)
    got = lookup(method)(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # on Tensors (the tape) too
    t = lookup(method)(*[Tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    np.testing.assert_allclose(np.asarray(getattr(t, "data", t)), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method, args, wrt", STATS, ids=[_stats_id(c) for c in STATS])
def test_stats_compiled_against_tape_and_finite_differences(method, args, wrt):
    fn = _model(method, len(args))
    compiled = check_grad(fn, args, wrt, tape=False)
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    tape = tape_grads(_tape_model(method, len(args)), args, ws)
    for c, t, i in zip(compiled, tape, ws):
        np.testing.assert_allclose(c, t, rtol=1e-9, atol=1e-12, err_msg=f"input {i}")


@pytest.mark.parametrize("method, args, wrt", STATS, ids=[_stats_id(c) for c in STATS])
def test_stats_second_derivative(method, args, wrt):
    """The compiled Hessian of each argument against finite differences of the compiled
    gradient (the rules' own derivatives)."""
    fn = _model(method, len(args))
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    args = [np.array(a, dtype=float) if isinstance(a, float) else a for a in args]
    check_hessian(fn, args, ws)


def test_dirichlet_gradient_in_x():
    """d/dx_i of the log density (the formula, x not constrained) is (alpha_i - 1) / x_i
    (checked against that formula: scipy refuses an x off the simplex, so finite
    differences cannot be taken)."""
    for x in (DIR_X, DIR_XN):
        g = srcgrad.grad(_model(st.dirichlet.logpdf, 2), cache=False)(x, ALPHA)
        want = (ALPHA - 1)[:, None] / x if x.ndim == 2 else (ALPHA - 1) / x
        np.testing.assert_allclose(g, want, rtol=1e-12)
        (t,) = tape_grads(_tape_model(st.dirichlet.logpdf, 2), [x, ALPHA], [0])
        np.testing.assert_allclose(g, t, rtol=1e-12)
        h = srcgrad.hessian(_model(st.dirichlet.logpdf, 2), cache=False)(x, ALPHA)
        np.testing.assert_allclose(np.asarray(h).reshape(x.size, x.size),
                                   np.diag((-(ALPHA - 1)[:, None] / x ** 2 if x.ndim == 2
                                            else -(ALPHA - 1) / x ** 2).reshape(-1)),
                                   rtol=1e-12, atol=1e-12)


def test_stats_invalid_parameters_and_support():
    x = np.array([-0.5, 0.5, 1.5])
    with np.errstate(all="ignore"):
        for method, args in ((st.norm.logpdf, (x, 0.0, -1.0)), (st.t.logpdf, (x, -1.0)),
                             (st.gamma.logpdf, (x, 2.0)), (st.beta.logpdf, (x, 2.0, 3.0)),
                             (st.gamma.logpdf, (x, -2.0)),
                             (st.poisson.logpmf, (np.array([-1.0, 0.5, 2.0]), 1.5)),
                             (st.poisson.logpmf, (np.array([0.0, 2.0]), -1.0))):
            want = method(*args)
            got = lookup(method)(*[Tensor(a) for a in args]).data
            np.testing.assert_array_equal(got, want)
        # the gradient of a point off the support is 0, never nan
        (g,) = _grads(lambda v: lookup(st.gamma.logpdf)(v, 2.0), x)
        np.testing.assert_array_equal(g[:1], [0.0])
        assert np.all(np.isfinite(g))


def test_stats_refusals():
    with pytest.raises(UnsupportedArgument, match="allow_singular"):
        lookup(st.multivariate_normal.logpdf)(MVN_X, MEAN, COV, allow_singular=True)
    with pytest.raises(ValueError, match="simplex"):
        lookup(st.dirichlet.logpdf)(np.array([0.2, 0.2, 0.5]), ALPHA)
    with pytest.raises(UnsupportedArgument, match="unit_diagonal"):
        lookup(sl.solve_triangular)(COV, MEAN, unit_diagonal=True)
    with pytest.raises(UnsupportedArgument, match="return_sign"):
        lookup(sp.logsumexp)(V, return_sign=True)
    with pytest.raises(UnsupportedArgument, match="b="):
        lookup(sp.logsumexp)(V, b=V)


def test_scipys_own_frozen_objects_are_not_in_the_tables():
    """A frozen distribution built outside the function is scipy's object: compiled code
    reads its parameters through scipy's source (tests/test_tape_scipy.py); the call
    `scipy.stats.norm(...)` in compiled code is mapped."""
    assert lookup(st.norm(0.0, 1.0).logpdf) is None
    assert lookup(st.norm) is not None


def test_every_scipy_spelling_is_listed_and_compiled_here():
    names = {n for n in public_names(scipy=True) if n.startswith("scipy.")}
    compiled_src = "\n".join(
        __import__("inspect").getsource(c[0]) for c in COMPILED)
    for n in names:
        if n.endswith("(...)"):  # freezing, scipy.stats.norm(...): its methods are checked
            dist = n[len("scipy.stats."):-len("(...)")]
            assert any(type(c[0].__self__) is type(getattr(st, dist)) for c in STATS), n
        elif n.startswith("scipy.stats."):
            dist, meth = n.split(".")[2:]
            assert any(type(c[0].__self__) is type(getattr(st, dist)) and
                       c[0].__name__ == meth for c in STATS), n
        else:
            short = n.split(".")[-1]
            assert f".{short}(" in compiled_src, n


def test_scipy_spellings_on_cupy():
    """The same compiled gradients on cupy arrays (cupyx.scipy's forwards); skipped where
    CUDA does not work."""
    cp = pytest.importorskip("cupy")
    try:
        ok = cp.is_available()
    except Exception:
        ok = False
    if not ok:
        pytest.skip("no CUDA device")
    pytest.importorskip("cupyx.scipy.special")
    cases = [(f_special_ufuncs, [X], 0), (f_xlogy_broadcast, [X / 2, X], (0, 1)),
             (f_polygamma, [X], 0), (f_softmax, [V], 0),
             (_model(st.norm.logcdf, 3), [V * 4, 0.3, 1.7], (0,)),
             (_model(st.gamma.logpdf, 2), [X, X[0] + 0.5], (0, 1)),
             (_model(st.t.logpdf, 2), [V, X[0] + 1], (0, 1)),
             (_model(st.poisson.logpmf, 2), [np.array([0.0, 1.0, 3.0, 7.0]), X[0, :4] * 3],
              (1,)),
             (f_solve_triangular_2d, [A4, B42], (0, 1))]
    for fn, args, wrt in cases:
        g = srcgrad.grad(fn, wrt=wrt, cache=False)
        want = g(*args)
        got = g(*[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, h in zip(want, got):
            assert isinstance(h, cp.ndarray), fn.__name__
            np.testing.assert_allclose(cp.asnumpy(h), w, rtol=1e-9, atol=1e-12,
                                       err_msg=fn.__name__)


def f_solve_triangular_2d(a, b):
    lo = np.tril(a) + 3 * np.eye(4)
    return np.sum(sl.solve_triangular(lo, b, lower=True) ** 2) + \
        np.sum(sl.solve_triangular(lo, b[:, 0], lower=True, trans=1) * b[:, 1])
