"""exp, tanh, log, log1p, sin and cos of float64 numbers that numba's loops vectorize, for
the numba backend.

numba compiles `np.exp(v)` and `np.tanh(v)` of a number to a call of the C library's
`exp` and `tanh` per element (about 10 and 20 ns here), which no loop around it can
vectorize; numpy's own loops over arrays are vectorized (1.5 ns). A fused loop that calls
these instead is vectorized by LLVM (4 elements at a time with AVX2): they are arithmetic
and selects only, no call and no branch, their polynomials' steps fused multiply-adds
where the CPU has them (`FMA`: exp 2, tanh 3.6, sin 3.6 ns per element here, one thread;
without, exp and tanh take twice that). Each is checked against the C library's (Python's
math module) in tests/compiler/test_jit_math.py.

- `vector_exp(x)`: x = k ln 2 + r, |r| <= ln 2 / 2 (ln 2 in two parts, so that k ln 2 is
  exact to 1e-29), e^r by its Taylor polynomial of degree 13 (truncation error below
  2e-18, relative), times 2^k as two powers of two (each a normal number, so that results
  down to the smallest subnormal round once). inf above 709.78..., 0 below -745.13...,
  nan for nan. Within 1.1 ulp of the exact value where numpy's is within 0.66
  (tests/compiler/test_jit_math.py, against 120-bit arithmetic).
- `vector_tanh(x)`: for |x| < 0.55, x + x^3 P(x^2) with 19 Taylor coefficients
  (truncation below 1e-17, relative); above, 1 - 2 / (e^(2|x|) + 1) with the sign of x,
  which has no cancellation there (the result is at least 0.5). Within 1.5 ulp; -0.0,
  infinities and nan as numpy gives them.
- `vector_log(x)`: x = 2^k (1 + f) with sqrt(1/2) <= 1 + f < sqrt(2) (read from x's bits;
  a subnormal x is scaled by 2^52 first), log(1 + f) = 2 atanh(f / (2 + f)) by its Taylor
  series (10 terms), plus k ln 2 in two parts. Within 1 ulp of the C library's.
- `vector_log1p(x)`: the same of u = 1 + x, plus the part of x the sum lost, divided by u
  (exact to first order); x itself for |x| < 1e-300. Within 1 ulp of the C library's.
- `vector_sin(x)`, `vector_cos(x)`: x = k pi/2 + r, |r| <= pi/4 + 1e-16 (pi/2 in four
  parts, the first three of 33 bits, so that k pi/2 is exact to 1e-25 for |k| < 2^20; r
  as a pair of floats, the subtraction's rounding error kept), sin r and cos r by their
  Taylor polynomials (to r^17 and r^18: truncation below 1e-19, relative), the pair's low
  part added to first order, and the quadrant k mod 4 picks +-sin r or +-cos r. For
  |x| <= 2^20 (`TRIG_FAR`) only: nan above (`trig_far(x)` is 1 there, and the numba
  backend runs such a loop again with the C library's sin and cos: see
  codegen._emit_loops); nan for infinities and nan. Within 1 ulp of the C library's.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["vector_exp", "vector_tanh", "vector_log", "vector_log1p", "vector_sin",
           "vector_cos", "trig_far", "TRIG_FAR"]


@intrinsic
def _float_of_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 `bits` (a bitcast: one vector move)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_of_float(typingctx, x):
    """The IEEE bits of the float64 `x`, as an int64."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


def _has_fma() -> bool:
    try:
        from llvmlite import binding
        return bool(binding.get_host_cpu_features().get("fma"))
    except Exception:  # noqa: BLE001 (then a product and a sum)
        return False


#: whether this CPU has a fused multiply-add instruction (numba compiles for the CPU it
#: runs on, and its cache tells CPUs apart)
FMA = _has_fma()


@intrinsic
def _mul_add(typingctx, a, b, c):
    """a * b + c of float64 numbers: one fused multiply-add (rounded once: exact IEEE
    arithmetic, not a fast-math licence) where the CPU has one (`FMA`), else a product and
    a sum. A polynomial's step: FMA halves the instructions of a vectorized loop of them."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        if FMA:
            return builder.fma(*args)
        return builder.fadd(builder.fmul(args[0], args[1]), args[2])

    return types.float64(types.float64, types.float64, types.float64), codegen


# 1/ln 2; ln 2 = _LN2_HI + _LN2_LO, _LN2_HI with 32 bits of mantissa (k * _LN2_HI is exact
# for |k| < 2^20)
_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_EXP_MAX = 709.782712893384     # the largest x whose exp is finite
_EXP_MIN = -745.1332191019412   # below this, exp rounds to 0


@njit(inline="always", error_model="numpy")
def vector_exp(x):
    c = min(max(x, -746.0), 710.0)  # (k stays in range; the ends are set below)
    k = np.floor(c * _LOG2E + 0.5)
    r = (c - k * _LN2_HI) - k * _LN2_LO
    # e^r = sum r^j / j!, j = 0..13 (the coefficients are 1 / j!)
    p = 1.6059043836821613e-10
    p = _mul_add(p, r, 2.08767569878681e-09)
    p = _mul_add(p, r, 2.505210838544172e-08)
    p = _mul_add(p, r, 2.755731922398589e-07)
    p = _mul_add(p, r, 2.7557319223985893e-06)
    p = _mul_add(p, r, 2.48015873015873e-05)
    p = _mul_add(p, r, 0.0001984126984126984)
    p = _mul_add(p, r, 0.001388888888888889)
    p = _mul_add(p, r, 0.008333333333333333)
    p = _mul_add(p, r, 0.041666666666666664)
    p = _mul_add(p, r, 0.16666666666666666)
    p = _mul_add(p, r, 0.5)
    p = _mul_add(p, r, 1.0)
    p = _mul_add(p, r, 1.0)
    n = int(k)
    half = n >> 1
    y = p * _float_of_bits((half + 1023) << 52) * _float_of_bits((n - half + 1023) << 52)
    y = 0.0 if x < _EXP_MIN else y
    y = np.inf if x > _EXP_MAX else y
    return x if x != x else y


@njit(inline="always", error_model="numpy")
def vector_tanh(x):
    a = abs(x)
    e = vector_exp(2.0 * a)
    large = 1.0 - 2.0 / (e + 1.0)
    large = -large if x < 0.0 else large
    z = x * x
    # tanh x = x + x^3 (sum c_j z^j), z = x^2: c_j = 2^2n (2^2n - 1) B_2n / (2n)!, n = j + 2
    p = -2.859136662305254e-08
    p = _mul_add(p, z, 7.054636946400968e-08)
    p = _mul_add(p, z, -1.7406618963571648e-07)
    p = _mul_add(p, z, 4.294911078273806e-07)
    p = _mul_add(p, z, -1.0597268320104654e-06)
    p = _mul_add(p, z, 2.6147711512907546e-06)
    p = _mul_add(p, z, -6.451689215655431e-06)
    p = _mul_add(p, z, 1.5918905069328964e-05)
    p = _mul_add(p, z, -3.927832388331683e-05)
    p = _mul_add(p, z, 9.691537956929451e-05)
    p = _mul_add(p, z, -0.00023912911424355248)
    p = _mul_add(p, z, 0.000590027440945586)
    p = _mul_add(p, z, -0.0014558343870513183)
    p = _mul_add(p, z, 0.003592128036572481)
    p = _mul_add(p, z, -0.008863235529902197)
    p = _mul_add(p, z, 0.021869488536155203)
    p = _mul_add(p, z, -0.05396825396825397)
    p = _mul_add(p, z, 0.13333333333333333)
    p = _mul_add(p, z, -0.3333333333333333)
    small = x + x * z * p
    small = x if z == 0.0 else small  # (-0.0 stays -0.0)
    return small if a < 0.55 else large


_SQRT2 = 1.4142135623730951
_TINY = 2.2250738585072014e-308  # the smallest normal float64


@njit(inline="always", error_model="numpy")
def _log_parts(u):
    """(k, f) with u = 2^k (1 + f), sqrt(1/2) <= 1 + f < sqrt(2), for a finite u > 0."""
    sub = u < _TINY
    v = u * 4503599627370496.0 if sub else u  # (a subnormal, times 2^52)
    bits = _bits_of_float(v)
    k = (bits >> 52) - 1023 - (52 if sub else 0)
    m = _float_of_bits((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)  # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    k = k + 1 if big else k
    return float(k), m - 1.0


@njit(inline="always", error_model="numpy")
def _log1p_of(f):
    """log(1 + f) for sqrt(1/2) - 1 <= f < sqrt(2) - 1: with s = f / (2 + f) and
    z = s^2, log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R(z))),
    R(z) = sum_j 2 z^j / (2j + 1), j = 1..10 (z <= 0.0295: truncation below 1e-17)."""
    s = f / (2.0 + f)
    z = s * s
    r = 2.0 / 21.0
    r = _mul_add(r, z, 2.0 / 19.0)
    r = _mul_add(r, z, 2.0 / 17.0)
    r = _mul_add(r, z, 2.0 / 15.0)
    r = _mul_add(r, z, 2.0 / 13.0)
    r = _mul_add(r, z, 2.0 / 11.0)
    r = _mul_add(r, z, 2.0 / 9.0)
    r = _mul_add(r, z, 2.0 / 7.0)
    r = _mul_add(r, z, 2.0 / 5.0)
    r = _mul_add(r, z, 2.0 / 3.0)
    r = r * z
    hfsq = 0.5 * f * f
    return f - (hfsq - s * (hfsq + r))


@njit(inline="always", error_model="numpy")
def vector_log(x):
    finite = x > 0.0 and x < np.inf
    k, f = _log_parts(x if finite else 1.0)
    y = k * _LN2_HI + (_log1p_of(f) + k * _LN2_LO)
    y = -np.inf if x == 0.0 else y
    y = np.inf if x == np.inf else y
    return y if finite or x == 0.0 or x == np.inf else np.nan


@njit(inline="always", error_model="numpy")
def vector_log1p(x):
    u = 1.0 + x
    finite = u > 0.0 and u < np.inf
    k, f = _log_parts(u if finite else 1.0)
    # u rounded 1 + x: c = (1 + x) - u, the part of x it lost, adds c / u
    c = ((x - (u - 1.0)) if k < 54.0 else 0.0) / (u if finite else 1.0)
    y = k * _LN2_HI + (_log1p_of(f) + (k * _LN2_LO + c))
    y = x if abs(x) < 1e-300 else y  # (-0.0 stays -0.0; subnormals are x)
    y = -np.inf if x == -1.0 else y
    y = np.inf if x == np.inf else y
    return y if finite or x == -1.0 or x == np.inf else np.nan


#: vector_sin and vector_cos's largest argument (k pi/2 is exact to 1e-25 for |k| < 2^20)
TRIG_FAR = 1048576.0
_TWO_OVER_PI = 0.6366197723675814
# pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 + _PIO2_4 to 1e-47; the first three with 33 bits of
# mantissa (k times each is exact for |k| < 2^20)
_PIO2_1 = 1.5707963267341256
_PIO2_2 = 6.077100506303966e-11
_PIO2_3 = 2.0222662487111665e-21
_PIO2_4 = 8.4784276603689e-32


@njit(inline="always", error_model="numpy")
def trig_far(x):
    """1 where vector_sin and vector_cos of x are nan for want of range (a finite x over
    TRIG_FAR), else 0."""
    a = abs(x)
    return 1 if (a > TRIG_FAR) & (a < np.inf) else 0


@njit(inline="always", error_model="numpy")
def _sincos_parts(x):
    """(sin r, cos r, k mod 4) with x = k pi/2 + r, |r| <= pi/4 + 1e-16, for |x| <= TRIG_FAR
    (0.0 stands for any other x)."""
    c = x if abs(x) <= TRIG_FAR else 0.0
    k = np.floor(c * _TWO_OVER_PI + 0.5)
    t = c - k * _PIO2_1  # (exact: k * _PIO2_1 is, and t is the difference of close numbers)
    w = k * _PIO2_2      # (exact)
    hi = t - w
    # the rounding error of t - w (Knuth's two-sum), less k (_PIO2_3 + _PIO2_4)
    back = hi - t
    lo = ((t - (hi - back)) - (w + back)) - k * _PIO2_3 - k * _PIO2_4
    r = hi + lo
    lo = (hi - r) + lo  # r + lo is x - k pi/2 to 1e-30 (relative)
    z = r * r
    # sin r = r + r z S(z), S's coefficients (-1)^j / (2j + 1)!, j = 1..8
    p = 2.8114572543455206e-15
    p = _mul_add(p, z, -7.647163731819816e-13)
    p = _mul_add(p, z, 1.6059043836821613e-10)
    p = _mul_add(p, z, -2.505210838544172e-08)
    p = _mul_add(p, z, 2.755731922398589e-06)
    p = _mul_add(p, z, -0.0001984126984126984)
    p = _mul_add(p, z, 0.008333333333333333)
    p = _mul_add(p, z, -0.16666666666666666)
    # cos r = 1 - z/2 + z^2 C(z), C's coefficients (-1)^j / (2j + 4)!, j = 0..7
    q = -1.5619206968586225e-16
    q = _mul_add(q, z, 4.779477332387385e-14)
    q = _mul_add(q, z, -1.1470745597729725e-11)
    q = _mul_add(q, z, 2.08767569878681e-09)
    q = _mul_add(q, z, -2.755731922398589e-07)
    q = _mul_add(q, z, 2.48015873015873e-05)
    q = _mul_add(q, z, -0.001388888888888889)
    q = _mul_add(q, z, 0.041666666666666664)
    half = 0.5 * z
    one = 1.0 - half
    cos_r = one + (((1.0 - one) - half) + z * z * q)
    sin_r = r + r * z * p
    # sin(r + lo) = sin r + lo cos r, cos(r + lo) = cos r - lo sin r (to first order)
    return sin_r + lo * cos_r, cos_r - lo * sin_r, int(k) & 3


@njit(inline="always", error_model="numpy")
def vector_sin(x):
    s, c, n = _sincos_parts(x)
    y = c if n & 1 else s
    y = -y if n & 2 else y
    y = x if abs(x) < 7.450580596923828e-09 else y  # (2^-27: sin x rounds to x; -0.0)
    return y if abs(x) <= TRIG_FAR else np.nan


@njit(inline="always", error_model="numpy")
def vector_cos(x):
    s, c, n = _sincos_parts(x)
    y = s if n & 1 else c
    y = -y if (n + 1) & 2 else y
    return y if abs(x) <= TRIG_FAR else np.nan
