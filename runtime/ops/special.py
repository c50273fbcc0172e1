"""Special functions (scipy.special): gammaln, digamma, polygamma, erf, erfc, erfinv, ndtr,
log_ndtr, xlogy, xlog1py.

The forward runs scipy.special on numpy arrays and cupyx.scipy.special on cupy arrays, each
imported the first time a function runs (so importing the op set never imports scipy). The
VJP rules call primitives of the set, among them these ones (gammaln' = digamma,
digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .)), so every derivative
order stays inside the op set.

Conventions:
- xlogy(x, y) = x * log(y), and 0 where x == 0 (scipy's value, also for y == 0). Its
  derivative in x is log(y), and 0 where x == 0 and y <= 0; in y it is x / y, and 0 where
  x == 0.
- xlog1py(x, y) = x * log1p(y), likewise: d/dx = log1p(y), 0 where x == 0 and y <= -1;
  d/dy = x / (1 + y), 0 where x == 0.
- log_ndtr'(x) = exp(-x**2 / 2 - log_ndtr(x)) / sqrt(2 pi), computed in that form, so it
  stays finite and accurate for very negative x (where ndtr(x) underflows to 0): about
  eps * x**2 relative error (5e-9 at x = -1e4). Its own derivative, -R (x + R) with R the
  first, cancels in x + R for very negative x: 6 digits at x = -200, none left near -1e4.
- erfinv'(+-1) = inf, gammaln, digamma and polygamma have poles at 0, -1, -2... (inf or
  nan there, as scipy gives the values).
"""
from __future__ import annotations

import math

from .core import call, defop, takes_operands
from .elementwise import (add, divide, equal, exp, less_equal, log, log1p, logical_and,
                          multiply, negative, square, subtract, where)

__all__ = ["gammaln", "digamma", "polygamma", "erf", "erfc", "erfinv", "ndtr", "log_ndtr",
           "xlogy", "xlog1py"]

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _special_module(args):
    for a in args:
        if type(a).__module__.startswith("cupy"):
            import cupyx.scipy.special

            return cupyx.scipy.special
    import scipy.special

    return scipy.special


def _special(name, nin=1):
    """Forward implementation: scipy.special.`name` (cupyx.scipy.special on cupy arrays)."""

    def impl(*args):
        # (of Python numbers, scipy's numpy float64: not a weak Python float, which would
        # let `erf(a) * x32` compute in float32 where scipy's gives float64)
        return getattr(_special_module(args), name)(*args)

    impl.__name__ = name
    return takes_operands(impl, nin)


def _polygamma(x, n=1):
    return _special_module((x,)).polygamma(n, x)


# ---- rules ------------------------------------------------------------------------------------

def vjp_gammaln(g, out, x):
    return multiply(g, digamma(x))


def vjp_digamma(g, out, x):
    return multiply(g, polygamma(x, n=1))


def vjp_polygamma(g, out, x, n=1):
    return multiply(g, polygamma(x, n=n + 1))


def vjp_erf(g, out, x):
    return multiply(g, multiply(_TWO_OVER_SQRT_PI, exp(negative(square(x)))))


def vjp_erfc(g, out, x):
    return multiply(g, multiply(-_TWO_OVER_SQRT_PI, exp(negative(square(x)))))


def vjp_erfinv(g, out, x):
    return multiply(g, multiply(_SQRT_PI_OVER_2, exp(square(out))))


def vjp_ndtr(g, out, x):
    return multiply(g, divide(exp(multiply(-0.5, square(x))), _SQRT_2PI))


def vjp_log_ndtr(g, out, x):
    # the density over the cdf, as one exponential: no 0 / 0 where ndtr(x) underflows
    return multiply(g, divide(exp(subtract(multiply(-0.5, square(x)), out)), _SQRT_2PI))


def _masked(g, term, zero):
    return where(zero, 0.0, multiply(g, term))


def vjp_xlogy_x(g, out, x, y):
    zero = logical_and(equal(x, 0), less_equal(y, 0))
    return _masked(g, log(where(zero, 1.0, y)), zero)


def vjp_xlogy_y(g, out, x, y):
    zero = equal(x, 0)
    return _masked(g, divide(x, where(zero, 1.0, y)), zero)


def vjp_xlog1py_x(g, out, x, y):
    zero = logical_and(equal(x, 0), less_equal(y, -1))
    return _masked(g, log1p(where(zero, 0.0, y)), zero)


def vjp_xlog1py_y(g, out, x, y):
    zero = equal(x, 0)
    return _masked(g, divide(x, add(where(zero, 0.0, y), 1.0)), zero)


def _unary(name, vjp, **kw):
    return defop(name, _special(name), vjp, spell=call(name), elementwise=True, **kw)


gammaln = _unary("gammaln", vjp_gammaln,
                 doc="log|Gamma(x)| (scipy.special.gammaln)",
                 convention="poles at 0, -1, -2...")
digamma = _unary("digamma", vjp_digamma, doc="Gamma'(x) / Gamma(x) (scipy.special.digamma)",
                 convention="poles at 0, -1, -2...")
polygamma = defop("polygamma", _polygamma, vjp_polygamma, spell=call("polygamma"),
                  elementwise=True, defaults=dict(n=1),
                  doc="the n-th derivative of digamma (n a static int)",
                  convention="poles at 0, -1, -2...; n is a constant")
erf = _unary("erf", vjp_erf)
erfc = _unary("erfc", vjp_erfc)
erfinv = _unary("erfinv", vjp_erfinv, reads_inputs=False, reads_out=True,
                convention="erfinv'(+-1) = inf")
ndtr = _unary("ndtr", vjp_ndtr, doc="the standard normal cdf")
log_ndtr = _unary("log_ndtr", vjp_log_ndtr, reads_out=True,
                  doc="log of the standard normal cdf, accurate for very negative x",
                  convention="derivative exp(-x**2/2 - log_ndtr(x)) / sqrt(2 pi): finite "
                             "and accurate for very negative x (its own derivative loses "
                             "digits below x = -200)")
xlogy = defop("xlogy", _special("xlogy", 2), vjp_xlogy_x, vjp_xlogy_y, spell=call("xlogy"),
              broadcasts=True, elementwise=True,
              convention="xlogy(0, y) = 0; d/dx = log(y), 0 where x == 0 and y <= 0; "
                         "d/dy = x / y, 0 where x == 0")
xlog1py = defop("xlog1py", _special("xlog1py", 2), vjp_xlog1py_x, vjp_xlog1py_y,
                spell=call("xlog1py"), broadcasts=True, elementwise=True,
                convention="xlog1py(0, y) = 0; d/dx = log1p(y), 0 where x == 0 and "
                           "y <= -1; d/dy = x / (1 + y), 0 where x == 0")
