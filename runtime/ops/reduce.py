"""Reductions over `axis` (None, an int or a tuple of ints) with `keepdims`.

Conventions:
- max and min split the gradient evenly among tied maxima (minima): with k ties each
  receives g / k.
- prod's gradient is exact where x contains zeros (the product of the other elements).
- logsumexp is computed in the stable form m + log(sum(exp(x - m))).
- var and std take numpy's `ddof`.
- std's gradient is 0 where std is 0 (PyTorch's choice; std is constant along a length-1
  axis).
- norm (the 2-norm over `axis`) has gradient 0 where the norm is 0.
- cumsum and cumprod run along one axis (numpy's axis=None, the flattened array, is a
  reshape first); cumprod's gradient is exact where x has zeros.
"""
from __future__ import annotations

from ..backend import get_xp
from .core import call, defop, method
from .elementwise import add, divide, equal, exp, logical_and, multiply, subtract, where
from .shapes import broadcast_to, expand_dims, flip, ones_like, shape

__all__ = ["sum", "mean", "prod", "max", "min", "var", "std", "any", "all", "logsumexp",
           "reduced_size", "unreduce", "norm", "cumsum", "cumprod"]

_RED = dict(axis=None, keepdims=False)


def _norm_axis(axis):
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def reduced_size_impl(x, axis=None):
    """How many elements each reduced output element summarizes (a Python int)."""
    s = get_xp(x).shape(x) if not hasattr(x, "shape") else x.shape
    if axis is None:
        n = 1
        for d in s:
            n *= d
        return n
    axes = axis if isinstance(axis, tuple) else (axis,)
    n = 1
    for a in axes:
        n *= s[a]
    return int(n)


def _spell_reduced_size(ins, params, defaults):
    if params.get("axis") is None:
        return f"{ins[0]}.size"
    return call("reduced_size")(ins, params, defaults)


def _spell_reduced_size_py(ins, params, defaults):
    if params.get("axis") is None:  # a Python number has no .size
        return f"np.size({ins[0]})"
    return call("reduced_size")(ins, params, defaults)


reduced_size = defop("reduced_size", reduced_size_impl, meta=True, zero_grad=True,
                     spell=_spell_reduced_size, defaults=dict(axis=None), fresh=True,
                     py_spell=_spell_reduced_size_py, inline=True)


def unreduce(g, x, axis, keepdims):
    """Broadcast a reduced cotangent `g` back to the shape of `x`."""
    if axis is not None and not keepdims:
        g = expand_dims(g, axis=axis)
    return broadcast_to(g, shape(x))


# ---- rules ----------------------------------------------------------------------------------

def vjp_sum(g, out, x, axis=None, keepdims=False):
    return unreduce(g, x, axis, keepdims)


def vjp_mean(g, out, x, axis=None, keepdims=False):
    return divide(unreduce(g, x, axis, keepdims), reduced_size(x, axis=axis))


def vjp_prod(g, out, x, axis=None, keepdims=False):
    # d prod / d x_i = product of the others; exact also where x has zeros.
    zero = equal(x, 0)
    nonzero_prod = prod(where(zero, 1.0, x), axis=axis, keepdims=True)
    zeros = sum(where(zero, ones_like(x), 0.0), axis=axis, keepdims=True)
    others = where(zero, where(equal(zeros, 1), nonzero_prod, 0.0),
                   divide(unreduce(out, x, axis, keepdims), where(zero, 1.0, x)))
    return multiply(unreduce(g, x, axis, keepdims), others)


def vjp_max(g, out, x, axis=None, keepdims=False):
    tie = equal(x, unreduce(out, x, axis, keepdims))
    count = sum(where(tie, ones_like(x), 0.0), axis=axis, keepdims=True)
    return where(tie, divide(unreduce(g, x, axis, keepdims), count), 0.0)


def vjp_var(g, out, x, axis=None, keepdims=False, ddof=0):
    centered = subtract(x, mean(x, axis=axis, keepdims=True))
    scale = divide(2.0, subtract(reduced_size(x, axis=axis), ddof))
    return multiply(unreduce(g, x, axis, keepdims), multiply(centered, scale))


def vjp_std(g, out, x, axis=None, keepdims=False, ddof=0):
    # Where std is 0 (all values equal, e.g. a length-1 axis) the gradient is 0. The
    # denominator is made safe too, so that 0/0 reaches neither this rule nor its derivative.
    centered = subtract(x, mean(x, axis=axis, keepdims=True))
    n = subtract(reduced_size(x, axis=axis), ddof)
    spread = unreduce(out, x, axis, keepdims)
    flat = equal(spread, 0)
    return where(flat, 0.0, divide(multiply(unreduce(g, x, axis, keepdims), centered),
                                   multiply(where(flat, 1.0, spread), n)))


def vjp_logsumexp(g, out, x, axis=None, keepdims=False):
    return multiply(unreduce(g, x, axis, keepdims), exp(subtract(x, unreduce(out, x, axis,
                                                                            keepdims))))


# ---- forward implementations ----------------------------------------------------------------

def _method(name):
    def impl(x, axis=None, keepdims=False, **kw):
        return getattr(get_xp(x), name)(x, axis=_norm_axis(axis), keepdims=keepdims, **kw)

    impl.__name__ = name
    return impl


def _logsumexp(x, axis=None, keepdims=False):
    xp = get_xp(x)
    axis = _norm_axis(axis)
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    r = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else xp.squeeze(r, axis=axis)


def _reduction(name, impl, rule=None, extra=None, **kw):
    defaults = dict(_RED, **(extra or {}))
    return defop(name, impl, rule, defaults=defaults, kind="reduction",
                 spell=call(f"np.{name}" if name != "logsumexp" else "logsumexp"),
                 array_spell=method(name) if name in _ARRAY_METHODS else None, **kw)


_ARRAY_METHODS = {"sum", "mean", "prod", "max", "min", "var", "std", "any", "all"}


sum = _reduction("sum", _method("sum"), vjp_sum, reads_inputs=False, dtype="same_if_float")
mean = _reduction("mean", _method("mean"), vjp_mean, reads_inputs=False, dtype="float")
prod = _reduction("prod", _method("prod"), vjp_prod, reads_out=True,
                  convention="exact at zeros", dtype="same_if_float")
max = _reduction("max", _method("max"), vjp_max, reads_out=True,
                 convention="ties share the gradient evenly", dtype="same")
min = _reduction("min", _method("min"), vjp_max, reads_out=True,
                 convention="ties share the gradient evenly", dtype="same")
var = _reduction("var", _method("var"), vjp_var, extra=dict(ddof=0), dtype="float")
std = _reduction("std", _method("std"), vjp_std, extra=dict(ddof=0), reads_out=True,
                  convention="0 where std is 0", dtype="float")
#: truth tests (booleans: no derivative; the compiler treats their results as constants)
any = _reduction("any", _method("any"), differentiable=False, zero_grad=True)
all = _reduction("all", _method("all"), differentiable=False, zero_grad=True)
logsumexp = _reduction("logsumexp", _logsumexp, vjp_logsumexp, reads_out=True,
                       convention="stable form", dtype="float")



# ---- the 2-norm over axes ---------------------------------------------------------------------

def _norm(x, axis=None, keepdims=False):
    xp = get_xp(x)
    return xp.sqrt(xp.sum(xp.square(x), axis=_norm_axis(axis), keepdims=keepdims))


def vjp_norm(g, out, x, axis=None, keepdims=False):
    # x / norm, and 0 where the norm is 0 (the denominator made safe as in std)
    n = unreduce(out, x, axis, keepdims)
    flat = equal(n, 0)
    return where(flat, 0.0, divide(multiply(unreduce(g, x, axis, keepdims), x),
                                   where(flat, 1.0, n)))


norm = _reduction("norm", _norm, vjp_norm, reads_out=True, convention="0 where the norm is 0")
norm.spell = call("norm")


# ---- scans along one axis -----------------------------------------------------------------------

def _cumsum(x, axis):
    return get_xp(x).cumsum(x, axis=axis)


def _cumprod(x, axis):
    return get_xp(x).cumprod(x, axis=axis)


def _reverse_cumsum(g, axis):
    """sum_{j >= i} g_j along axis: the transpose of cumsum."""
    return flip(cumsum(flip(g, axis=axis), axis=axis), axis=axis)


def vjp_cumsum(g, out, x, axis):
    return _reverse_cumsum(g, axis)


def _first_zero(x, axis):
    """(x == 0, the first zero along the axis)."""
    zero = equal(x, 0)
    return zero, logical_and(zero, equal(cumsum(where(zero, 1.0, 0.0), axis=axis), 1))


def vjp_cumprod(g, out, x, axis):
    # d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k: out_j / x_k where x_k != 0
    # (0 from the first zero on, with the derivative the zero's own); at the first zero z,
    # the running product with x_z taken as 1. (Second derivatives are exact except
    # between two zeros of one lane.)
    zero, first = _first_zero(x, axis)
    at_first = _reverse_cumsum(multiply(g, cumprod(where(first, 1.0, x), axis=axis)), axis)
    return where(first, at_first,
                 divide(_reverse_cumsum(multiply(g, out), axis), where(zero, 1.0, x)))


cumsum = defop("cumsum", _cumsum, vjp_cumsum, reads_inputs=False, spell=call("np.cumsum"))
cumprod = defop("cumprod", _cumprod, vjp_cumprod, reads_out=True, spell=call("np.cumprod"),
                convention="exact at zeros")


def jvp_cumprod(tangents, out, x, axis):
    (t,) = tangents
    # the VJP's cases, forward: out_j * sum_{k <= j, x_k != 0} t_k / x_k, plus t_z times the
    # running product with x_z taken as 1 from the first zero z on
    zero, first = _first_zero(x, axis)
    rel = cumsum(where(zero, 0.0, divide(t, where(zero, 1.0, x))), axis=axis)
    at_first = multiply(cumsum(where(first, t, 0.0), axis=axis),
                        cumprod(where(first, 1.0, x), axis=axis))
    return add(multiply(out, rel), at_first)


cumprod.jvp = jvp_cumprod
