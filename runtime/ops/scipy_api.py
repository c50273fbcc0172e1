"""The scipy spellings the op set answers to: scipy.special, scipy.linalg and the log
densities of scipy.stats that models are written with.

scipy is optional. `numpy_api.lookup` calls `register(part)` the first time a lookup misses
after the program has imported `scipy.<part>`, so importing srcgrad never imports scipy.
Adapters only call primitives, like numpy's, so they run on arrays, on the tape's Tensors
and on the compiler's values. The tables below (SPECIAL_UFUNCS, SPECIAL_FUNCTIONS, LINALG,
STATS) are the one list of what is mapped: the compiler reads them through `register`, the
tape's spellings (`runtime.special`, `runtime.stats`, `runtime.linalg`) are generated from
them. scipy.special's ufuncs reach the tape through `__array_ufunc__` too; scipy's Python
functions (softmax, polygamma, the distributions' methods...) convert a Tensor to an array,
so the tape runs them through these adapters.

A mapped distribution called with its parameters (`scipy.stats.norm(loc, scale)`, frozen)
gives a `FrozenDistribution` whose mapped methods take x only (`.logpdf(x)`), in compiled
code and on the tape; its other methods (`rvs`, `ppf`, `mean`...) are not there.

Conventions of the distributions (the formulas are scipy's):
- invalid parameters (scale <= 0, df <= 0, a <= 0, b <= 0, mu < 0, alpha <= 0) give nan, as
  scipy does; a point outside the support gives -inf (log densities) or 0 (pdf);
- poisson.logpmf is differentiable in mu (and loc, k are counts: no derivative);
- multivariate_normal.logpdf: cov is a matrix, a 1-D diagonal or a number, as in scipy;
  x's last axis is the dimension, and a result of size 1 is squeezed to a scalar like
  scipy's; scipy's other reading of x (a 1-D x as samples of a 1-dimensional normal) and
  allow_singular=True are not supported; a covariance that is not positive definite raises
  numpy's LinAlgError (scipy raises its own error);
- dirichlet.logpdf: x of shape (K,) or (K, N) as scipy reads it; x's values are checked
  (inside (0, 1), summing to 1) only where x is a constant array; scipy's x with K - 1
  entries is not supported.
"""
from __future__ import annotations

import math
import numbers

import numpy

from . import elementwise as E
from . import linalg as L
from . import reduce as R
from . import shapes as S
from . import special as P
from .numpy_api import (BOUND_METHODS, NUMPY, OP_NAMES, UnsupportedArgument, cholesky,
                        logsumexp)
from .numpy_api import axis_arg as _axis
from .numpy_api import int_arg as _int_arg
from .numpy_api import is_symbolic as _symbolic
from .numpy_api import refuse_args as _refuse
from .numpy_api import ufunc_adapter as _ufunc_adapter

__all__ = ["register", "public_names", "special_adapters", "SPECIAL_UFUNCS",
           "SPECIAL_FUNCTIONS", "LINALG", "STATS", "FrozenDistribution", "freeze"]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)

#: public name -> (module path, attribute path) of each registered spelling
_NAMES: dict = {}


# ---- scipy.special ----------------------------------------------------------------------------

def _logit(p):
    return E.subtract(E.log(p), E.log1p(E.negative(p)))


def _polygamma_adapter(n, x):
    if _symbolic(n) or isinstance(n, numpy.ndarray) and n.ndim:
        raise UnsupportedArgument("scipy.special.polygamma(): n must be a constant integer "
                                  "(one order for the whole array)")
    n = _int_arg(n, "scipy.special.polygamma", "n")
    if n < 0:
        raise ValueError("scipy.special.polygamma(): n must be non-negative")
    return P.digamma(x) if n == 0 else P.polygamma(x, n=n)


def _softmax(x, axis=None):
    axis = _axis(axis)
    return E.exp(E.subtract(x, R.logsumexp(x, axis=axis, keepdims=True)))


def _log_softmax(x, axis=None):
    axis = _axis(axis)
    return E.subtract(x, R.logsumexp(x, axis=axis, keepdims=True))


def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    _refuse("scipy.special.logsumexp", b=b)
    if return_sign:
        raise UnsupportedArgument("scipy.special.logsumexp(): return_sign=True is not "
                                  "supported")
    return logsumexp(a, axis=axis, keepdims=keepdims)


#: scipy.special's ufuncs: name -> the primitive (or composition) it is
SPECIAL_UFUNCS = {"gammaln": P.gammaln, "digamma": P.digamma, "psi": P.digamma, "erf": P.erf,
                  "erfc": P.erfc, "erfinv": P.erfinv, "ndtr": P.ndtr, "log_ndtr": P.log_ndtr,
                  "xlogy": P.xlogy, "xlog1py": P.xlog1py, "expit": E.sigmoid, "logit": _logit}
#: scipy.special's Python functions: name -> adapter (scipy's signature)
SPECIAL_FUNCTIONS = {"polygamma": _polygamma_adapter, "softmax": _softmax,
                     "log_softmax": _log_softmax, "logsumexp": _logsumexp}


class _Named:
    """A stand-in for a ufunc where only its name and how many operands it takes are
    needed (the adapter's messages; a further operand is numpy's `out`)."""

    def __init__(self, name, nin):
        self.__name__ = name
        self.nin = nin


def special_adapters() -> dict:
    """name -> adapter with scipy.special's signature, for every mapped scipy.special
    name; needs no scipy (the primitives import it when they run)."""
    found = {name: _ufunc_adapter(_Named(name, 2 if name in ("xlogy", "xlog1py") else 1), fn)
             for name, fn in SPECIAL_UFUNCS.items()}
    found.update(SPECIAL_FUNCTIONS)
    return found


def _register_special():
    import scipy.special as sp

    for name, fn in SPECIAL_UFUNCS.items():
        uf = getattr(sp, name)
        NUMPY[uf] = _ufunc_adapter(uf, fn)
        _NAMES[f"scipy.special.{name}"] = ("scipy.special", name)
        OP_NAMES[f"scipy.special.{name}"] = getattr(fn, "name", name)
    for name, fn in SPECIAL_FUNCTIONS.items():
        NUMPY[getattr(sp, name)] = fn
        _NAMES[f"scipy.special.{name}"] = ("scipy.special", name)


# ---- scipy.linalg -----------------------------------------------------------------------------

_TRANS = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}  # real matrices: 'C' is 'T'


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                      check_finite=True):
    if unit_diagonal:
        raise UnsupportedArgument("scipy.linalg.solve_triangular(): unit_diagonal=True is "
                                  "not supported")
    if isinstance(trans, (bool, numpy.bool_)) or trans not in _TRANS:
        raise ValueError(f"scipy.linalg.solve_triangular(): invalid trans {trans!r}")
    params = {k: v for k, v in (("lower", bool(lower)), ("trans", _TRANS[trans])) if v}
    return L.solve_triangular(a, b, **params)


def _cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """(L L^T)^-1 b (or (U^T U)^-1 b) as two triangular solves, as LAPACK's potrs does."""
    c, lower = c_and_lower
    lower = bool(lower)
    if lower:
        y = L.solve_triangular(c, b, lower=True)
        return L.solve_triangular(c, y, lower=True, trans=1)
    y = L.solve_triangular(c, b, trans=1)
    return L.solve_triangular(c, y)


def _cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    return cholesky(a, upper=not lower)


def _cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    # scipy leaves arbitrary values in the other triangle; cho_solve reads only this one
    return _cholesky(a, lower=lower), bool(lower)


#: scipy.linalg: name -> adapter (scipy's signature; cholesky is upper by default, as scipy's)
LINALG = {"solve_triangular": _solve_triangular, "cho_solve": _cho_solve,
          "cho_factor": _cho_factor, "cholesky": _cholesky}


def _register_linalg():
    import scipy.linalg as sl

    for name, fn in LINALG.items():
        NUMPY[getattr(sl, name)] = fn
        _NAMES[f"scipy.linalg.{name}"] = ("scipy.linalg", name)
        OP_NAMES[f"scipy.linalg.{name}"] = name if name == "solve_triangular" else "-"


# ---- scipy.stats ------------------------------------------------------------------------------

def _nan_unless(ok, value):
    """`value`, and nan where the condition `ok` on the parameters fails (scipy's value
    for invalid parameters). A Python number is checked here, at no run-time cost."""
    if ok is True:
        return value
    if ok is False:
        return E.add(E.multiply(value, 0.0), numpy.nan)
    return E.where(ok, value, numpy.nan)


def _positive(*params):
    """The condition p > 0 for every parameter (True when all are positive numbers)."""
    cond = True
    for p in params:
        if isinstance(p, numbers.Real) and not _symbolic(p):
            if not p > 0:
                return False
            continue
        c = E.greater(p, 0)
        cond = c if cond is True else E.logical_and(cond, c)
    return cond


def _inside(cond, z, safe, value_fn, outside):
    """value_fn(z) where `cond` holds and `outside` elsewhere; z is replaced by `safe`
    outside, so that neither the value nor its derivatives see a point off the support."""
    zs = E.where(cond, z, safe)
    return E.where(cond, value_fn(zs), outside)


def _standardize(x, loc, scale):
    return E.divide(E.subtract(x, loc), scale)


def norm_logpdf(x, loc=0, scale=1):
    z = _standardize(x, loc, scale)
    val = E.subtract(E.multiply(E.square(z), -0.5), E.add(E.log(scale), 0.5 * _LOG_2PI))
    return _nan_unless(_positive(scale), val)


def norm_pdf(x, loc=0, scale=1):
    return E.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0, scale=1):
    return _nan_unless(_positive(scale), P.ndtr(_standardize(x, loc, scale)))


def norm_logcdf(x, loc=0, scale=1):
    return _nan_unless(_positive(scale), P.log_ndtr(_standardize(x, loc, scale)))


def t_logpdf(x, df, loc=0, scale=1):
    z = _standardize(x, loc, scale)
    half = E.multiply(E.add(df, 1.0), 0.5)
    val = E.subtract(P.gammaln(half), P.gammaln(E.multiply(df, 0.5)))
    val = E.subtract(val, E.multiply(E.add(E.log(df), _LOG_PI), 0.5))
    val = E.subtract(val, E.log(scale))
    val = E.subtract(val, E.multiply(half, E.log1p(E.divide(E.square(z), df))))
    return _nan_unless(_positive(df, scale), val)


def gamma_logpdf(x, a, loc=0, scale=1):
    z = _standardize(x, loc, scale)

    def density(zs):
        v = E.subtract(P.xlogy(E.subtract(a, 1.0), zs), zs)
        return E.subtract(E.subtract(v, P.gammaln(a)), E.log(scale))

    val = _inside(E.greater_equal(z, 0), z, 1.0, density, -numpy.inf)
    return _nan_unless(_positive(a, scale), val)


def _betaln(a, b):
    return E.subtract(E.add(P.gammaln(a), P.gammaln(b)), P.gammaln(E.add(a, b)))


def beta_logpdf(x, a, b, loc=0, scale=1):
    z = _standardize(x, loc, scale)

    def density(zs):
        v = E.add(P.xlogy(E.subtract(a, 1.0), zs), P.xlog1py(E.subtract(b, 1.0),
                                                              E.negative(zs)))
        return E.subtract(E.subtract(v, _betaln(a, b)), E.log(scale))

    ok = E.logical_and(E.greater_equal(z, 0), E.less_equal(z, 1))
    val = _inside(ok, z, 0.5, density, -numpy.inf)
    return _nan_unless(_positive(a, b, scale), val)


def poisson_logpmf(k, mu, loc=0):
    k = E.subtract(k, loc)
    count = E.logical_and(E.greater_equal(k, 0), E.equal(E.floor(k), k))

    def mass(ks):
        return E.subtract(E.subtract(P.xlogy(ks, mu), P.gammaln(E.add(ks, 1.0))), mu)

    val = _inside(count, k, 0.0, mass, -numpy.inf)
    if isinstance(mu, numbers.Real) and not _symbolic(mu):
        return _nan_unless(bool(mu >= 0), val)
    return _nan_unless(E.greater_equal(mu, 0), val)


def mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    if allow_singular:
        raise UnsupportedArgument("scipy.stats.multivariate_normal.logpdf(): "
                                  "allow_singular=True is not supported")
    diff = x if mean is None else E.subtract(x, mean)
    d = S.getitem(S.shape(diff), -1)
    # scipy's covariances, in one formula that needs no rank: a number c (c I), a 1-D
    # array (its diagonal) or a matrix. As a 2-D array c2 (1 x 1, 1 x d or d x d), the
    # matrix is c2 * I plus the off-diagonal part of c2, which is zero unless c2 is d x d.
    c2 = S.reshape(cov, S.atleast_shape(S.shape(cov), 2))
    own_eye = S.eye(S.getitem(S.shape(c2), -2))
    full = E.add(E.multiply(c2, S.eye(d)), E.subtract(c2, E.multiply(c2, own_eye)))
    chol = L.cholesky(full)
    z = L.solve_triangular(chol, S.expand_dims(diff, axis=-1), lower=True)
    maha = R.sum(E.square(z), axis=(-2, -1))
    logdet = E.multiply(R.sum(E.log(S.diagonal(chol, axis1=-2, axis2=-1)), axis=-1), 2.0)
    val = E.multiply(E.add(E.add(maha, logdet), E.multiply(d, _LOG_2PI)), -0.5)
    return S.squeeze(val)


def dirichlet_logpdf(x, alpha):
    if not _symbolic(x):  # scipy's checks, where x is known
        xa = numpy.asarray(x)
        if not _symbolic(alpha) and xa.shape[:1] != numpy.shape(alpha):
            raise UnsupportedArgument("scipy.stats.dirichlet.logpdf(): x must have as many "
                                      "entries (along its first axis) as alpha")
        if numpy.min(xa) < 0:
            raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
        if numpy.max(xa) > 1:
            raise ValueError("Each entry in 'x' must be smaller or equal to one.")
        if not _symbolic(alpha) and numpy.any((xa == 0).T & (numpy.asarray(alpha) < 1)):
            raise ValueError("Each entry in 'x' must be greater than zero if its alpha is "
                             "less than one.")
        if (numpy.abs(numpy.sum(xa, axis=0) - 1.0) > 10e-10).any():
            raise ValueError("The input vector 'x' must lie within the normal simplex. but "
                             "np.sum(x, 0) - 1.0 = {}.".format(numpy.sum(xa, axis=0) - 1.0))
    lnb = E.subtract(R.sum(P.gammaln(alpha)), P.gammaln(R.sum(alpha)))
    terms = S.transpose(P.xlogy(E.subtract(alpha, 1.0), S.transpose(x)))
    val = E.subtract(R.sum(terms, axis=0), lnb)
    return _nan_unless(_positive_all(alpha), val)


def _positive_all(alpha):
    if not _symbolic(alpha):
        return bool(numpy.all(numpy.asarray(alpha) > 0))
    return E.greater(R.min(alpha), 0)


#: (distribution, method) -> adapter
STATS = {
    ("norm", "logpdf"): norm_logpdf, ("norm", "pdf"): norm_pdf, ("norm", "cdf"): norm_cdf,
    ("norm", "logcdf"): norm_logcdf, ("t", "logpdf"): t_logpdf,
    ("gamma", "logpdf"): gamma_logpdf, ("beta", "logpdf"): beta_logpdf,
    ("poisson", "logpmf"): poisson_logpmf, ("multivariate_normal", "logpdf"): mvn_logpdf,
    ("dirichlet", "logpdf"): dirichlet_logpdf,
}
#: every method name of STATS
STATS_METHODS = tuple(sorted({m for _, m in STATS}))


def stats_methods(dist: str) -> tuple:
    """The mapped methods of scipy.stats.`dist`."""
    return tuple(m for d, m in STATS if d == dist)


class FrozenDistribution:
    """`scipy.stats.<dist>(*args, **kwds)` as the op set reads it: the distribution's name
    and its parameters (arrays, Tensors or the compiler's values), which each method passes
    after x, as scipy's frozen distributions do (`norm(loc, scale).logpdf(x)` is
    `norm.logpdf(x, loc, scale)`). Compiled code builds one where the program freezes a
    mapped distribution; `runtime.stats.<dist>(...)` builds one on the tape."""

    __slots__ = ("dist", "args", "kwds")

    def __init__(self, dist, args=(), kwds=None):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds or {})

    def __repr__(self):
        return f"<frozen scipy.stats.{self.dist}>"


def frozen_method(frozen, method, x, *more, **kw):
    """`frozen.method(x)`: the adapter of (dist, method) with the frozen parameters."""
    fn = STATS.get((frozen.dist, method))
    if fn is None:
        have = ", ".join(stats_methods(frozen.dist))
        raise UnsupportedArgument(f"scipy.stats.{frozen.dist}(...).{method}() is not "
                                  f"differentiated (mapped: {have})")
    if more or kw:
        raise UnsupportedArgument(f"scipy.stats.{frozen.dist}(...).{method}() takes x only "
                                  "(the parameters are frozen)")
    return fn(x, *frozen.args, **frozen.kwds)


def _frozen_method_of(method):
    def call(self, x, *more, **kw):
        return frozen_method(self, method, x, *more, **kw)

    call.__name__ = call.__qualname__ = method
    return call


def _frozen_adapter(method):
    """BOUND_METHODS' adapter of `FrozenDistribution.method` (numpy_api.lookup passes the
    object first)."""
    def adapter(frozen, x, *more, **kw):
        return frozen_method(frozen, method, x, *more, **kw)

    adapter.binds_self = True
    adapter.__name__ = method
    return adapter


for _m in STATS_METHODS:
    setattr(FrozenDistribution, _m, _frozen_method_of(_m))


def freeze(dist):
    """The adapter of the call `scipy.stats.<dist>(*args, **kwds)`."""
    def adapter(*args, **kwds):
        return FrozenDistribution(dist, args, kwds)

    adapter.__name__ = dist
    return adapter


def _register_stats():
    import scipy.stats as st

    for (dist, method), fn in STATS.items():
        obj = getattr(st, dist)
        BOUND_METHODS[(type(obj), method)] = fn
        _NAMES[f"scipy.stats.{dist}.{method}"] = ("scipy.stats", f"{dist}.{method}")
    for dist in sorted({d for d, _ in STATS}):
        # a frozen distribution, `scipy.stats.norm(loc, scale).logpdf(x)`
        NUMPY[getattr(st, dist)] = freeze(dist)
        _NAMES[f"scipy.stats.{dist}(...)"] = ("scipy.stats", dist)
        OP_NAMES[f"scipy.stats.{dist}(...)"] = "-"
    for method in STATS_METHODS:
        BOUND_METHODS[(FrozenDistribution, method)] = _frozen_adapter(method)


_PARTS = {"special": _register_special, "linalg": _register_linalg, "stats": _register_stats}


def register(part: str) -> None:
    """Register the spellings of scipy.`part` (imports it)."""
    _PARTS[part]()


def public_names() -> dict:
    """Public name -> object, for the registered scipy spellings."""
    import importlib

    found = {}
    for public, (mod, path) in _NAMES.items():
        obj = importlib.import_module(mod)
        for part in path.split("."):
            obj = getattr(obj, part)
        found[public] = obj
    return found
