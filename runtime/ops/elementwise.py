"""Elementwise primitives: arithmetic, math functions, comparisons, where/clip.

Conventions where a derivative is undefined (PyTorch's documented choices):
- relu'(0) = 0, abs'(0) = 0, sign' = 0 everywhere
- maximum/minimum at ties: the gradient is split 0.5 / 0.5
- clip passes the gradient to x when x lies on a bound (lo <= x <= hi)
- sqrt'(0) = inf
- d(x**y): at x == 0 the x-derivative is 0 where y == 0 and the y-derivative is 0
  (the limit of x**y * log(x)); for x < 0, log(x) is nan like numpy
- log of a negative number is nan, as numpy gives it
- hypot and arctan2 have gradient 0 at the origin (where both inputs are 0)
- fmax/fmin: like maximum/minimum at ties; a NaN operand passes the gradient to the other
  (where both are NaN neither gets one)
- sinc'(0) = 0; its rule's own derivative at exactly 0 is 0 (not -pi**2 / 3)
- nan_to_num passes the gradient where x is finite, 0 where it replaced a value
- round, rint (like floor and sign) have a zero gradient everywhere
"""
from __future__ import annotations

import math
import numbers

import numpy

from ..backend import get_xp
from .core import call, defop, fmt, takes_operands

__all__ = [
    "add", "subtract", "multiply", "divide", "negative", "power", "exp", "log", "log1p",
    "expm1", "sqrt", "square", "reciprocal", "sin", "cos", "tan", "tanh", "sinh", "cosh",
    "arcsin", "arccos", "arctan", "absolute", "sign", "maximum", "minimum", "where", "clip",
    "relu", "sigmoid", "softplus", "less", "less_equal", "greater", "greater_equal", "equal",
    "not_equal", "logical_and", "logical_or", "logical_not", "isfinite", "remainder", "fmod",
    "floor_divide", "floor", "ceil", "trunc", "arcsinh", "arccosh", "arctanh", "arctan2",
    "hypot", "log2", "log10", "exp2", "logaddexp", "logaddexp2", "sinc", "fabs", "rint",
    "round_", "fmax", "fmin", "nan_to_num", "copy", "isnan", "isinf", "bitwise_and",
    "bitwise_or", "bitwise_xor", "invert", "cbrt", "copysign", "heaviside",
]


_PYTHON_SCALARS = (int, float, bool)


def _ufunc(name, nin=None):
    """Forward implementation that calls numpy's (or cupy's) function `name`, of `nin`
    operands (a ufunc's own count by default)."""
    f_np = getattr(numpy, name)

    def impl(*args):
        for a in args:
            if type(a).__module__.startswith("cupy"):
                return getattr(get_xp(a), name)(*args)
        r = f_np(*args)
        if isinstance(r, numpy.generic) and all(type(a) in _PYTHON_SCALARS for a in args):
            return r.item()  # shape arithmetic stays in Python ints and floats
        return r

    impl.__name__ = name
    nin = getattr(f_np, "nin", None) if nin is None else nin
    return impl if nin is None else takes_operands(impl, nin)


def _unary(name, *vjps, np_name=None, **kw):
    np_name = np_name or name
    return defop(name, _ufunc(np_name), *vjps, spell=call(f"np.{np_name}"), elementwise=True,
                 **kw)


def _binary(name, *vjps, np_name=None, spell=None, **kw):
    np_name = np_name or name
    return defop(name, _ufunc(np_name), *vjps, spell=spell or call(f"np.{np_name}"),
                 broadcasts=True, elementwise=True, **kw)


# ---- arithmetic ---------------------------------------------------------------------------

def vjp_add(g, out, x, y):
    return g


def vjp_subtract_y(g, out, x, y):
    return negative(g)


def vjp_multiply_x(g, out, x, y):
    return multiply(g, y)


def vjp_multiply_y(g, out, x, y):
    return multiply(g, x)


def vjp_divide_x(g, out, x, y):
    return divide(g, y)


def vjp_divide_y(g, out, x, y):
    return negative(divide(multiply(g, out), y))


def vjp_negative(g, out, x):
    return negative(g)


def vjp_power_x(g, out, x, y):
    if isinstance(y, numbers.Real):
        # constant exponent: the common case, kept readable (g * 2 * x)
        if y == 0:
            return None
        if y == 1:
            return g
        if y == 2:
            return multiply(g, multiply(2, x))
        return multiply(g, multiply(y, power(x, y - 1)))
    # the exponent is made safe where y == 0 (as log's input is in vjp_power_y), so that
    # 0 ** -1 = inf never enters the masked branch or its derivative
    zero = equal(y, 0)
    safe_y = where(zero, 1.0, y)
    return multiply(g, where(zero, 0.0, multiply(y, power(x, subtract(safe_y, 1)))))


def vjp_power_y(g, out, x, y):
    zero = equal(x, 0)
    return multiply(g, where(zero, 0.0, multiply(out, log(where(zero, 1.0, x)))))


add = _binary("add", vjp_add, vjp_add, spell=fmt("{0} + {1}"), reads_inputs=False, dtype="same",
              inplace_op="+")
subtract = _binary("subtract", vjp_add, vjp_subtract_y, spell=fmt("{0} - {1}"),
                   reads_inputs=False, dtype="same", inplace_op="-")
multiply = _binary("multiply", vjp_multiply_x, vjp_multiply_y, spell=fmt("{0} * {1}"), dtype="same",
                   inplace_op="*")
divide = _binary("divide", vjp_divide_x, vjp_divide_y, np_name="true_divide",
                 spell=fmt("{0} / {1}"), reads_out=True, dtype="float", inplace_op="/")
power = _binary("power", vjp_power_x, vjp_power_y, spell=fmt("{0} ** {1}"), reads_out=True,
                convention="d/dx at y == 0 is 0; d/dy at x == 0 is 0")
negative = _unary("negative", vjp_negative, reads_inputs=False, dtype="same")
negative.spell = fmt("-{0}")


# ---- math functions -----------------------------------------------------------------------

def vjp_exp(g, out, x):
    return multiply(g, out)


def vjp_log(g, out, x):
    return divide(g, x)


def vjp_log1p(g, out, x):
    return divide(g, add(x, 1.0))


def vjp_expm1(g, out, x):
    return multiply(g, add(out, 1.0))


def vjp_sqrt(g, out, x):
    return divide(g, multiply(2.0, out))


def vjp_square(g, out, x):
    return multiply(g, multiply(2.0, x))


def vjp_reciprocal(g, out, x):
    return negative(multiply(g, square(out)))


def vjp_sin(g, out, x):
    return multiply(g, cos(x))


def vjp_cos(g, out, x):
    return negative(multiply(g, sin(x)))


def vjp_tan(g, out, x):
    return multiply(g, add(1.0, square(out)))


def vjp_tanh(g, out, x):
    return multiply(g, subtract(1.0, square(out)))


def vjp_sinh(g, out, x):
    return multiply(g, cosh(x))


def vjp_cosh(g, out, x):
    return multiply(g, sinh(x))


def vjp_arcsin(g, out, x):
    return divide(g, sqrt(subtract(1.0, square(x))))


def vjp_arccos(g, out, x):
    return negative(divide(g, sqrt(subtract(1.0, square(x)))))


def vjp_arctan(g, out, x):
    return divide(g, add(1.0, square(x)))


def vjp_absolute(g, out, x):
    return multiply(g, sign(x))


def vjp_relu(g, out, x):
    return where(greater(x, 0), g, 0.0)


def vjp_sigmoid(g, out, x):
    return multiply(g, multiply(out, subtract(1.0, out)))


def vjp_softplus(g, out, x):
    return multiply(g, sigmoid(x))


def _relu(x):
    return get_xp(x).maximum(x, 0)


def _sigmoid(x):
    xp = get_xp(x)
    # exp of a non-positive number only: no overflow for large |x|
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x):
    xp = get_xp(x)
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


exp = _unary("exp", vjp_exp, reads_inputs=False, reads_out=True, dtype="float")
log = _unary("log", vjp_log, convention="log of a negative number is nan", dtype="float")
log1p = _unary("log1p", vjp_log1p, dtype="float")
expm1 = _unary("expm1", vjp_expm1, reads_inputs=False, reads_out=True, dtype="float")
sqrt = _unary("sqrt", vjp_sqrt, reads_inputs=False, reads_out=True,
              convention="sqrt'(0) = inf", dtype="float")
square = _unary("square", vjp_square, dtype="same")
reciprocal = _unary("reciprocal", vjp_reciprocal, reads_inputs=False, reads_out=True)
sin = _unary("sin", vjp_sin, dtype="float")
cos = _unary("cos", vjp_cos, dtype="float")
tan = _unary("tan", vjp_tan, reads_inputs=False, reads_out=True, dtype="float")
tanh = _unary("tanh", vjp_tanh, reads_inputs=False, reads_out=True, dtype="float")
sinh = _unary("sinh", vjp_sinh, dtype="float")
cosh = _unary("cosh", vjp_cosh, dtype="float")
arcsin = _unary("arcsin", vjp_arcsin, dtype="float")
arccos = _unary("arccos", vjp_arccos, dtype="float")
arctan = _unary("arctan", vjp_arctan, dtype="float")
absolute = _unary("absolute", vjp_absolute, np_name="abs", convention="abs'(0) = 0", dtype="same")
sign = _unary("sign", None, zero_grad=True, convention="zero gradient everywhere", dtype="same")
floor = _unary("floor", None, zero_grad=True, convention="zero gradient everywhere")
ceil = _unary("ceil", None, zero_grad=True, convention="zero gradient everywhere")
trunc = _unary("trunc", None, zero_grad=True, convention="zero gradient everywhere")
relu = defop("relu", _relu, vjp_relu, spell=call("relu"), elementwise=True,
             convention="relu'(0) = 0")
sigmoid = defop("sigmoid", _sigmoid, vjp_sigmoid, spell=call("sigmoid"), elementwise=True,
                reads_inputs=False, reads_out=True, dtype="float")
softplus = defop("softplus", _softplus, vjp_softplus, spell=call("softplus"),
                 elementwise=True, doc="log(1 + exp(x)), computed without overflow", dtype="float")


# ---- remainders: x % y = x - floor(x / y) * y, fmod(x, y) = x - trunc(x / y) * y ----------

def vjp_remainder_y(g, out, x, y):
    return negative(multiply(g, floor_divide(x, y)))


def vjp_fmod_y(g, out, x, y):
    return negative(multiply(g, trunc(divide(x, y))))


floor_divide = _binary("floor_divide", None, None, spell=fmt("{0} // {1}"), zero_grad=True,
                       convention="zero gradient everywhere (piecewise constant)")
remainder = _binary("remainder", vjp_add, vjp_remainder_y, spell=fmt("{0} % {1}"),
                    convention="d/dx = 1, d/dy = -floor(x / y), away from the jumps")
fmod = _binary("fmod", vjp_add, vjp_fmod_y,
               convention="d/dx = 1, d/dy = -trunc(x / y), away from the jumps")


# ---- maximum / minimum / where / clip -------------------------------------------------------

def vjp_maximum_x(g, out, x, y):
    return where(greater(x, y), g, where(equal(x, y), multiply(g, 0.5), 0.0))


def vjp_maximum_y(g, out, x, y):
    return where(less(x, y), g, where(equal(x, y), multiply(g, 0.5), 0.0))


def vjp_where_x(g, out, c, x, y):
    return where(c, g, 0.0)


def vjp_where_y(g, out, c, x, y):
    return where(c, 0.0, g)


def vjp_clip_x(g, out, x, lo, hi):
    inside = None
    if lo is not None:
        inside = greater_equal(x, lo)
    if hi is not None:
        below = less_equal(x, hi)
        inside = below if inside is None else logical_and(inside, below)
    return g if inside is None else where(inside, g, 0.0)


def vjp_clip_lo(g, out, x, lo, hi):
    return where(less(x, lo), g, 0.0)


def vjp_clip_hi(g, out, x, lo, hi):
    return where(greater(x, hi), g, 0.0)


def _clip(x, lo, hi):
    return get_xp(x, lo, hi).clip(x, lo, hi)


maximum = _binary("maximum", vjp_maximum_x, vjp_maximum_y,
                  convention="ties split the gradient 0.5 / 0.5", dtype="same")
minimum = _binary("minimum", vjp_maximum_y, vjp_maximum_x,
                  convention="ties split the gradient 0.5 / 0.5", dtype="same")
where = defop("where", _ufunc("where", nin=3), None, vjp_where_x, vjp_where_y, nondiff=(0,),
              broadcasts=True, elementwise=True, spell=call("np.where"), dtype="same",
              updatable=False)
clip = defop("clip", _clip, vjp_clip_x, vjp_clip_lo, vjp_clip_hi, broadcasts=True,
             elementwise=True, spell=call("np.clip"),
             convention="on a bound the gradient goes to x", dtype="same")


# ---- more math functions ----------------------------------------------------------------------

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def vjp_arcsinh(g, out, x):
    return divide(g, sqrt(add(square(x), 1.0)))


def vjp_arccosh(g, out, x):
    return divide(g, sqrt(subtract(square(x), 1.0)))


def vjp_arctanh(g, out, x):
    return divide(g, subtract(1.0, square(x)))


def vjp_log2(g, out, x):
    return divide(g, multiply(x, _LN2))


def vjp_log10(g, out, x):
    return divide(g, multiply(x, _LN10))


def vjp_exp2(g, out, x):
    return multiply(g, multiply(out, _LN2))


def _safe_ratio(g, num, den):
    """g * num / den, and 0 where den == 0 (the denominator made safe as well, so that
    0/0 reaches neither the rule nor its derivative)."""
    zero = equal(den, 0)
    return where(zero, 0.0, divide(multiply(g, num), where(zero, 1.0, den)))


def vjp_arctan2_y(g, out, y, x):
    return _safe_ratio(g, x, add(square(x), square(y)))


def vjp_arctan2_x(g, out, y, x):
    return _safe_ratio(g, negative(y), add(square(x), square(y)))


def vjp_hypot_x(g, out, x, y):
    return _safe_ratio(g, x, out)


def vjp_hypot_y(g, out, x, y):
    return _safe_ratio(g, y, out)


def _sum_share(x, y, out, power):
    """x's share of the sum that `out` = log(power(x) + power(y)) is the log of:
    power(x - out). Where x and out are the same infinity (-inf and -inf, the log of a zero
    probability in a forward algorithm; or x = +inf) x - out is nan, which would reach the
    gradient, and its derivative (an hvp) through a zero tangent: there the limit, 1/2 for
    x == y, else 1 (x the larger). Where an operand is a finite number (softplus,
    logaddexp(0, x)) out is never -inf: the one-line form."""
    if any(isinstance(v, numbers.Real) and math.isfinite(v) for v in (x, y)):
        return power(subtract(x, out))
    same = logical_and(isinf(out), equal(x, out))
    share = power(where(same, 0.0, subtract(x, out)))
    return where(logical_and(same, equal(x, y)), 0.5, share)


def vjp_logaddexp_x(g, out, x, y):
    return multiply(g, _sum_share(x, y, out, exp))


def vjp_logaddexp_y(g, out, x, y):
    return multiply(g, _sum_share(y, x, out, exp))


def vjp_logaddexp2_x(g, out, x, y):
    return multiply(g, _sum_share(x, y, out, exp2))


def vjp_logaddexp2_y(g, out, x, y):
    return multiply(g, _sum_share(y, x, out, exp2))


def vjp_sinc(g, out, x):
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x == 0
    return _safe_ratio(g, subtract(cos(multiply(x, math.pi)), out), x)


def _number(v) -> bool:
    """A Python number that is not NaN (the common constant operand: no mask needed)."""
    return isinstance(v, numbers.Real) and v == v


def _nan_passes(winner, x, y):
    """`winner`, or where only the other operand `x` is NaN: fmax/fmin's choice of y."""
    if _number(x):
        return winner
    other = isnan(x) if _number(y) else logical_and(isnan(x), logical_not(isnan(y)))
    return logical_or(winner, other)


def _tie_split(g, x, y, wins):
    return where(wins, g, where(equal(x, y), multiply(g, 0.5), 0.0))


def vjp_fmax_x(g, out, x, y):
    return _tie_split(g, x, y, _nan_passes(greater(x, y), y, x))


def vjp_fmax_y(g, out, x, y):
    return _tie_split(g, x, y, _nan_passes(less(x, y), x, y))


def vjp_fmin_x(g, out, x, y):
    return _tie_split(g, x, y, _nan_passes(less(x, y), y, x))


def vjp_fmin_y(g, out, x, y):
    return _tie_split(g, x, y, _nan_passes(greater(x, y), x, y))


def vjp_nan_to_num(g, out, x, nan=0.0, posinf=None, neginf=None):
    return where(isfinite(x), g, 0.0)


def vjp_copy(g, out, x):
    return g


def _round(x, decimals=0):
    return get_xp(x).round(x, decimals=decimals)


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return get_xp(x).nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _copy(x):
    return get_xp(x).array(x, copy=True)


arcsinh = _unary("arcsinh", vjp_arcsinh)
arccosh = _unary("arccosh", vjp_arccosh)
arctanh = _unary("arctanh", vjp_arctanh)
log2 = _unary("log2", vjp_log2)
log10 = _unary("log10", vjp_log10)
exp2 = _unary("exp2", vjp_exp2, reads_inputs=False, reads_out=True)
sinc = _unary("sinc", vjp_sinc, reads_out=True, convention="sinc'(0) = 0")
fabs = _unary("fabs", vjp_absolute, convention="fabs'(0) = 0")
rint = _unary("rint", None, zero_grad=True, convention="zero gradient everywhere")
round_ = defop("round", _round, None, zero_grad=True, elementwise=True,
               spell=call("np.round"), defaults=dict(decimals=0),
               convention="zero gradient everywhere")
nan_to_num = defop("nan_to_num", _nan_to_num, vjp_nan_to_num, elementwise=True,
                   spell=call("np.nan_to_num"),
                   defaults=dict(nan=0.0, posinf=None, neginf=None),
                   convention="the gradient passes where x is finite, 0 elsewhere")
copy = defop("copy", _copy, vjp_copy, elementwise=True, reads_inputs=False,
             spell=call("np.copy"), doc="a new array with x's values")
arctan2 = _binary("arctan2", vjp_arctan2_y, vjp_arctan2_x,
                  convention="gradient 0 at the origin")
hypot = _binary("hypot", vjp_hypot_x, vjp_hypot_y, reads_out=True,
                convention="gradient 0 at the origin")
logaddexp = _binary("logaddexp", vjp_logaddexp_x, vjp_logaddexp_y, reads_out=True)
logaddexp2 = _binary("logaddexp2", vjp_logaddexp2_x, vjp_logaddexp2_y, reads_out=True)
fmax = _binary("fmax", vjp_fmax_x, vjp_fmax_y,
               convention="ties split the gradient 0.5 / 0.5; NaN passes it to the other")
fmin = _binary("fmin", vjp_fmin_x, vjp_fmin_y,
               convention="ties split the gradient 0.5 / 0.5; NaN passes it to the other")


def vjp_cbrt(g, out, x):
    return divide(g, multiply(3.0, square(out)))


def vjp_copysign_x(g, out, x, y):
    # |x| with y's sign: d/dx is sign(x) times y's sign (its own sign for -0.0); 0 at x == 0
    return multiply(g, multiply(sign(x), copysign(1.0, y)))


cbrt = _unary("cbrt", vjp_cbrt, reads_inputs=False, reads_out=True,
              convention="cbrt'(0) = inf", dtype="float")
copysign = _binary("copysign", vjp_copysign_x, None, nondiff=(1,),
                   convention="d/dx = sign(x) * sign of y (0 at x == 0); d/dy = 0 (y gives "
                   "only a sign)")
heaviside = _binary("heaviside", None, None, zero_grad=True,
                    convention="zero gradient everywhere (piecewise constant)")


# ---- comparisons and logic: boolean outputs, no gradient ------------------------------------

def _predicate(name, spell):
    return defop(name, _ufunc(name), differentiable=False, elementwise=True,
                 spell=fmt(spell) if "{" in spell else call(spell))


less = _predicate("less", "{0} < {1}")
less_equal = _predicate("less_equal", "{0} <= {1}")
greater = _predicate("greater", "{0} > {1}")
greater_equal = _predicate("greater_equal", "{0} >= {1}")
equal = _predicate("equal", "{0} == {1}")
not_equal = _predicate("not_equal", "{0} != {1}")
logical_and = _predicate("logical_and", "np.logical_and")
logical_or = _predicate("logical_or", "np.logical_or")
logical_not = _predicate("logical_not", "np.logical_not")
isfinite = _predicate("isfinite", "np.isfinite")
isnan = _predicate("isnan", "np.isnan")
isinf = _predicate("isinf", "np.isinf")


# ---- bitwise operators: `&`, `|`, `^`, `~` on booleans (masks) and integers ----------------
# (on booleans they are the logical operators; on integers numpy's bitwise ones: `k & 1` is
# k's lowest bit, `~k` is -k - 1, never a truth value)

def _bitwise(name, spell):
    return defop(name, _ufunc(name), differentiable=False, elementwise=True, zero_grad=True,
                 dtype="same", spell=fmt(spell))


bitwise_and = _bitwise("bitwise_and", "{0} & {1}")
bitwise_or = _bitwise("bitwise_or", "{0} | {1}")
bitwise_xor = _bitwise("bitwise_xor", "{0} ^ {1}")
invert = _bitwise("invert", "~{0}")
