"""scipy's functions on the tape (`runtime.special`, `runtime.stats`, `runtime.linalg`) and
frozen distributions (`scipy.stats.norm(loc, scale).logpdf(x)`) in compiled code.

- the tape's spellings are generated from runtime.ops.scipy_api's tables (every mapped
  name is there) and `import runtime` does not import scipy;
- values against scipy, first derivatives with runtime.gradcheck, second derivatives with
  backward(create_graph=True) (a Hessian-vector product in every differentiated argument
  at once) against finite differences of the tape's gradient;
- frozen distributions compiled, against finite differences, the tape and (second order)
  finite differences of the compiled gradient; what is refused, and where;
- the error of a Tensor handed to scipy's own functions names the tape's spellings.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import runtime as rt
import srcgrad
from compiler_helpers import check_grad, check_hessian, run_python
from runtime import Tensor
from runtime.ops import scipy_api

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
needs_scipy = pytest.mark.skipif(not HAVE_SCIPY, reason="scipy is not installed")
if HAVE_SCIPY:
    import scipy.linalg as sl
    import scipy.special as sp
    import scipy.stats as st

rng = np.random.default_rng(17)


def test_import_runtime_and_its_scipy_namespaces_do_not_import_scipy():
    code = ("import sys, numpy as np, runtime\n"
            "from runtime.special import logsumexp\n"
            "assert callable(runtime.special.gammaln) and callable(runtime.stats.norm.logpdf)\n"
            "assert callable(runtime.linalg.solve_triangular)\n"
            "x = runtime.tensor(np.array([0.5, 1.5]), requires_grad=True)\n"
            "y = runtime.stats.norm(0.2, 1.5).logpdf(x) + runtime.special.softmax(x)\n"
            "runtime.sum(y + logsumexp(x)).backward()\n"
            "print('scipy' in sys.modules, x.grad.shape)\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "(2,)"]


def test_the_namespaces_are_generated_from_scipy_apis_tables():
    assert set(rt.special.__all__) == set(scipy_api.special_adapters())
    assert set(scipy_api.SPECIAL_UFUNCS) | set(scipy_api.SPECIAL_FUNCTIONS) <= \
        set(dir(rt.special))
    for dist, method in scipy_api.STATS:
        assert method in getattr(rt.stats, dist).methods
        assert getattr(getattr(rt.stats, dist), method).__wrapped__ is \
            scipy_api.STATS[(dist, method)]
    for name in scipy_api.LINALG:
        if name != "cholesky":
            assert getattr(rt.linalg, name).__wrapped__ is scipy_api.LINALG[name]
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    # runtime.linalg.cholesky stays numpy's: lower (scipy's default is upper)
    np.testing.assert_allclose(rt.linalg.cholesky(a).data, np.linalg.cholesky(a))
    assert rt.special.gammaln.__module__ == "runtime.special"
    assert rt.stats.norm.logpdf.__qualname__ == "stats.norm.logpdf"


# ---- checks on the tape --------------------------------------------------------------------------

def _floats(args, wrt):
    return [np.array(a, dtype=float) if i in wrt else a for i, a in enumerate(args)]


def _tape_grads(fn, args, wrt, shift=None):
    leaves = {i: Tensor(np.array(args[i], dtype=float) + (0 if shift is None else shift[i]),
                        requires_grad=True) for i in wrt}
    out = fn(*[leaves.get(i, a) for i, a in enumerate(args)])
    rt.sum(out).backward()
    return {i: np.zeros(np.shape(args[i])) if leaves[i].grad is None else leaves[i].grad.data
            for i in wrt}


def tape_check(fn, args, wrt, rtol=1e-5, atol=1e-6):
    """gradcheck, then the Hessian-vector product in all of `wrt` at once (backward with
    create_graph) against central differences of the tape's gradient along the vector."""
    args = _floats(args, wrt)
    assert rt.gradcheck(fn, [Tensor(a, requires_grad=True) if i in wrt else a
                             for i, a in enumerate(args)])
    vec = {i: rng.normal(size=np.shape(args[i])) for i in wrt}
    leaves = {i: Tensor(args[i].copy(), requires_grad=True) for i in wrt}
    rt.sum(fn(*[leaves.get(i, a) for i, a in enumerate(args)])).backward(create_graph=True)
    grads = {i: leaves[i].grad for i in wrt}
    assert all(g is not None and g.requires_grad for g in grads.values())
    total = sum(rt.sum(grads[i] * vec[i]) for i in wrt)
    for leaf in leaves.values():
        leaf.grad = None
    total.backward()
    eps = 1e-5
    up = _tape_grads(fn, args, wrt, {i: eps * v for i, v in vec.items()})
    down = _tape_grads(fn, args, wrt, {i: -eps * v for i, v in vec.items()})
    for i in wrt:
        hv = np.zeros(np.shape(args[i])) if leaves[i].grad is None else leaves[i].grad.data
        np.testing.assert_allclose(hv, (up[i] - down[i]) / (2 * eps), rtol=rtol, atol=atol,
                                   err_msg=f"second derivative, input {i}")


def _pos(*shape):
    return rng.uniform(0.5, 3.0, shape)


def _real(*shape):
    return rng.normal(size=shape)


def _unit(*shape):
    return rng.uniform(0.05, 0.95, shape)


#: runtime.special name -> (args, differentiated argument indices, keyword arguments)
SPECIAL_CASES = {
    "gammaln": ([_pos(2, 3)], (0,), {}), "digamma": ([_pos(4)], (0,), {}),
    "psi": ([_pos(4)], (0,), {}), "erf": ([_real(2, 3)], (0,), {}),
    "erfc": ([_real(4)], (0,), {}), "erfinv": ([_unit(4) * 1.6 - 0.8], (0,), {}),
    "ndtr": ([_real(4)], (0,), {}), "log_ndtr": ([_real(4) * 3], (0,), {}),
    "expit": ([_real(4)], (0,), {}), "logit": ([_unit(4)], (0,), {}),
    "xlogy": ([_real(2, 3), _pos(3)], (0, 1), {}),
    "xlog1py": ([_real(3), _unit(2, 3) - 0.5], (0, 1), {}),
    "polygamma": ([2, _pos(4)], (1,), {}),
    "softmax": ([_real(2, 3)], (0,), {"axis": 1}),
    "log_softmax": ([_real(2, 3)], (0,), {"axis": 0}),
    "logsumexp": ([_real(2, 3)], (0,), {"axis": 1, "keepdims": True}),
}


def test_every_special_name_has_a_case():
    assert set(SPECIAL_CASES) == set(rt.special.__all__)


@needs_scipy
@pytest.mark.parametrize("name", sorted(SPECIAL_CASES))
def test_special_values_first_and_second_derivatives(name):
    args, wrt, kw = SPECIAL_CASES[name]
    fn = getattr(rt.special, name)
    got = fn(*[Tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kw)
    assert isinstance(got, Tensor)
    np.testing.assert_allclose(got.data, getattr(sp, name)(*args, **kw), rtol=1e-12,
                               atol=1e-14)
    tape_check(lambda *a: fn(*a, **kw), args, wrt)


def test_special_takes_pytorchs_dim_and_keepdim():
    x = _real(2, 3)
    a = rt.special.logsumexp(Tensor(x), dim=1, keepdim=True).data
    b = rt.special.logsumexp(Tensor(x), axis=1, keepdims=True).data
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 1)
    with pytest.raises(TypeError, match="runtime.special.softmax"):
        rt.special.softmax(Tensor(x), dim=1, axis=1)


XS = _unit(5)
V = _real(5)
MVN_X = _real(4, 3)
MEAN = _real(3) * 0.3
COV_A = _real(3, 3)
COV = COV_A @ COV_A.T + 3 * np.eye(3)
ALPHA = np.array([1.5, 2.0, 0.8])
DIR_X = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])

#: (dist, method, [x, *parameters], differentiated argument indices)
STATS_CASES = [
    ("norm", "logpdf", [V, 0.3, 1.7], (0, 1, 2)),
    ("norm", "pdf", [V, 0.3, 1.7], (0, 1, 2)),
    ("norm", "cdf", [V, 0.3, 1.7], (0, 1, 2)),
    ("norm", "logcdf", [V * 3, 0.3, 1.7], (0, 1, 2)),
    ("t", "logpdf", [V, 3.5, 0.2, 1.3], (0, 1, 2, 3)),
    ("gamma", "logpdf", [_pos(5), 2.5, 0.1, 1.5], (0, 1, 2, 3)),
    ("beta", "logpdf", [XS, 2.5, 1.5], (0, 1, 2)),
    ("poisson", "logpmf", [np.array([0.0, 1.0, 3.0, 7.0]), 2.3], (1,)),
    ("multivariate_normal", "logpdf", [MVN_X, MEAN, COV], (0, 1, 2)),
    ("dirichlet", "logpdf", [DIR_X, ALPHA], (0, 1)),
]


def test_every_mapped_distribution_method_has_a_case():
    assert {(d, m) for d, m, _, _ in STATS_CASES} == set(scipy_api.STATS)


def _case_id(case):
    return f"{case[0]}.{case[1]}"


def _tensors(args):
    return [Tensor(a) if isinstance(a, np.ndarray) else a for a in args]


@needs_scipy
@pytest.mark.parametrize("dist, method, args, wrt", STATS_CASES,
                         ids=[_case_id(c) for c in STATS_CASES])
def test_stats_values_first_and_second_derivatives(dist, method, args, wrt):
    want = getattr(getattr(st, dist), method)(*args)
    fn = getattr(getattr(rt.stats, dist), method)
    got = fn(*_tensors(args))
    assert isinstance(got, Tensor)
    np.testing.assert_allclose(got.data, want, rtol=1e-12, atol=1e-12)
    # frozen: the parameters passed after x
    frozen = getattr(getattr(rt.stats, dist)(*_tensors(args[1:])), method)
    np.testing.assert_allclose(frozen(Tensor(args[0])).data, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(getattr(getattr(st, dist)(*args[1:]), method)(args[0]), want,
                               rtol=1e-12, atol=1e-12)
    tape_check(fn, args, wrt)
    # the same through the frozen distribution, its parameters differentiated too
    tape_check(lambda x, *params: getattr(getattr(rt.stats, dist)(*params), method)(x),
               args, wrt)


@needs_scipy
def test_frozen_distribution_keywords_and_refusals():
    x = Tensor(V, requires_grad=True)
    scale = Tensor(np.array(1.5), requires_grad=True)
    y = rt.sum(rt.stats.gamma(2.5, loc=-3.0, scale=scale).logpdf(x))
    y.backward()
    z = (V + 3.0) / 1.5
    np.testing.assert_allclose(x.grad.data, (1.5 / (V + 3.0) - 1.0 / 1.5), rtol=1e-12)
    np.testing.assert_allclose(scale.grad.data, np.sum(z / 1.5 - 2.5 / 1.5), rtol=1e-12)
    with pytest.raises(AttributeError, match=r"runtime.stats.norm\(...\) has no method "
                                             r"'logpmf'"):
        rt.stats.norm(0.0, 1.0).logpmf
    with pytest.raises(AttributeError, match="'rvs'"):
        rt.stats.norm(0.0, 1.0).rvs


@needs_scipy
def test_solve_triangular_and_cholesky_solves_on_the_tape():
    a = np.tril(_real(3, 3)) + 3 * np.eye(3)
    b = _real(3, 2)
    for lower, trans in ((True, 0), (True, 1), (False, 0), (False, "T")):
        m = a if lower else a.T
        got = rt.linalg.solve_triangular(Tensor(m), Tensor(b), lower=lower, trans=trans)
        np.testing.assert_allclose(got.data, sl.solve_triangular(m, b, lower=lower,
                                                                 trans=trans), rtol=1e-12)
        tape_check(lambda m_, b_, lw=lower, tr=trans: rt.linalg.solve_triangular(
            m_, b_, lower=lw, trans=tr), [m, b], (0, 1))

    spd = COV

    def chol_solve(s, rhs, lower):
        c = rt.linalg.cho_factor(s, lower=lower)
        return rt.linalg.cho_solve(c, rhs)

    for lower in (False, True):
        c, low = rt.linalg.cho_factor(Tensor(spd), lower=lower)
        assert isinstance(c, Tensor) and low is lower
        np.testing.assert_allclose(chol_solve(Tensor(spd), Tensor(b), lower).data,
                                   np.linalg.solve(spd, b), rtol=1e-12)
        # differentiated through the factor (symmetrised: cho_factor reads one triangle)
        tape_check(lambda s, rhs, lw=lower: chol_solve((s + rt.transpose(s)) / 2, rhs, lw),
                   [spd, b], (0, 1))


# ---- frozen distributions in compiled code -------------------------------------------------------

def frozen_norm(x, loc, scale):
    return np.sum(st.norm(loc, scale).logpdf(x))


def frozen_norm_pdf(x, loc, scale):
    return np.sum(st.norm(loc, scale).pdf(x))


def frozen_norm_cdf(x, loc, scale):
    d = st.norm(loc=loc, scale=scale)
    return np.sum(d.cdf(x))


def frozen_norm_logcdf(x, loc, scale):
    return np.sum(st.norm(loc, scale).logcdf(x))


def frozen_t(x, df, loc, scale):
    return np.sum(st.t(df, loc, scale).logpdf(x))


def frozen_gamma(x, a, loc, scale):
    return np.sum(st.gamma(a, loc=loc, scale=scale).logpdf(x))


def frozen_beta(x, a, b):
    return np.sum(st.beta(a, b).logpdf(x))


def frozen_poisson(k, mu):
    return np.sum(st.poisson(mu).logpmf(k))


def frozen_mvn(x, mean, cov):
    return np.sum(st.multivariate_normal(mean, cov).logpdf(x))


def frozen_dirichlet(x, alpha):
    return np.sum(st.dirichlet(alpha).logpdf(x))


#: compiled function -> the STATS_CASES entry whose arguments it takes
FROZEN = {frozen_norm: ("norm", "logpdf"), frozen_norm_pdf: ("norm", "pdf"),
          frozen_norm_cdf: ("norm", "cdf"), frozen_norm_logcdf: ("norm", "logcdf"),
          frozen_t: ("t", "logpdf"), frozen_gamma: ("gamma", "logpdf"),
          frozen_beta: ("beta", "logpdf"), frozen_poisson: ("poisson", "logpmf"),
          frozen_mvn: ("multivariate_normal", "logpdf"),
          frozen_dirichlet: ("dirichlet", "logpdf")}


def test_every_mapped_distribution_method_is_compiled_frozen():
    assert set(FROZEN.values()) == set(scipy_api.STATS)


def _frozen_case(fn):
    (case,) = [c for c in STATS_CASES if (c[0], c[1]) == FROZEN[fn]]
    return case[2], case[3]


@needs_scipy
@pytest.mark.parametrize("fn", list(FROZEN), ids=[f.__name__ for f in FROZEN])
def test_frozen_compiled_against_finite_differences_and_the_tape(fn):
    args, wrt = _frozen_case(fn)
    dist, method = FROZEN[fn]
    args = _floats(args, wrt)
    # dirichlet: scipy refuses an x off the simplex, so x is not taken by finite differences
    fd_wrt = tuple(i for i in wrt if not (dist == "dirichlet" and i == 0))
    check_grad(fn, args, fd_wrt if len(fd_wrt) > 1 else fd_wrt[0], tape=False)
    compiled = srcgrad.grad(fn, wrt=wrt, cache=False)(*args)
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    tape = _tape_grads(lambda x, *p: getattr(getattr(rt.stats, dist)(*p), method)(x), args,
                       wrt)
    for c, i in zip(compiled, wrt):
        np.testing.assert_allclose(c, tape[i], rtol=1e-9, atol=1e-12, err_msg=f"input {i}")


@needs_scipy
@pytest.mark.parametrize("fn", [frozen_norm, frozen_t, frozen_gamma, frozen_mvn,
                                frozen_poisson], ids=lambda f: f.__name__)
def test_frozen_compiled_second_derivative(fn):
    """The compiled Hessian of each argument against finite differences of the compiled
    gradient."""
    args, wrt = _frozen_case(fn)
    args = _floats(args, wrt)
    check_hessian(fn, args, wrt)


def frozen_in_a_loop(x, loc):
    total = 0.0
    for i in range(3):
        d = st.norm(loc + i, 2.0)
        total = total + d.logpdf(x[i])
    return total


if HAVE_SCIPY:
    GLOBAL_GAMMA = st.gamma(2.0, scale=1.5)
    GLOBAL_MVN = st.multivariate_normal(np.zeros(3), 2.0 * np.eye(3))


def frozen_outside(x):
    return np.sum(GLOBAL_GAMMA.logpdf(x)) + GLOBAL_MVN.logpdf(x)


@needs_scipy
def test_frozen_in_a_loop_and_scipys_frozen_objects_built_outside():
    check_grad(frozen_in_a_loop, [V[:3], np.array(0.4)], (0, 1), tape=False)
    # a frozen object from outside the function: compiled code reads its parameters
    check_grad(frozen_outside, [_pos(3)], 0, tape=False)


def frozen_unmapped_method(x, loc):
    return np.sum(st.norm(loc, 1.0).logpmf(x))


def frozen_sampling(x):
    e = st.norm(0.0, 1.0).rvs(size=2, random_state=0)
    return np.sum(x * e)


def frozen_unmapped_distribution(x, loc):
    return np.sum(st.expon(loc).logpdf(x))


@needs_scipy
def test_frozen_refusals_are_errors_not_wrong_gradients():
    x, loc = V[:2], np.array(0.3)
    with pytest.raises(srcgrad.SrcgradError, match=r"scipy.stats.norm\(...\).logpmf\(\) is "
                                                   "not differentiated") as e:
        srcgrad.grad(frozen_unmapped_method, cache=False)(x, loc)
    assert "test_tape_scipy.py" in str(e.value)
    with pytest.raises(srcgrad.SrcgradError, match="no attribute 'rvs'") as e:
        srcgrad.grad(frozen_sampling, cache=False)(x)
    assert "test_tape_scipy.py" in str(e.value)
    # a distribution that is not mapped: refused (inside scipy's source, as before)
    with pytest.raises(srcgrad.SrcgradError, match="rv_continuous_frozen"):
        srcgrad.grad(frozen_unmapped_distribution, wrt=(0, 1), cache=False)(x, loc)


# ---- the error of a Tensor handed to scipy itself ------------------------------------------------

@needs_scipy
def test_a_tensor_in_scipys_own_functions_points_at_the_tapes_spellings():
    t = Tensor(V, requires_grad=True)
    with pytest.raises(TypeError, match="requires grad cannot become a numpy array.*use "
                                        "runtime.special"):
        sp.logsumexp(t)
    with pytest.raises(TypeError, match="use runtime.stats"):
        st.norm.logpdf(t, 0.0, 1.0)
    with pytest.raises(TypeError, match="use runtime.stats"):
        st.norm(0.0, 1.0).logpdf(t)
    with pytest.raises(TypeError, match="runtime.linalg"):
        sl.solve_triangular(np.eye(5), t)
    with pytest.raises(TypeError) as e:
        np.asarray(t)
    assert "runtime.special" not in str(e.value)
