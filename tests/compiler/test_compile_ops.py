"""Every differentiable primitive, reached through its ordinary numpy spelling in a user
function, compiled with @srcgrad.grad and checked against the tape engine (the same
function run on runtime.Tensor) and float64 central finite differences.

Also the ways user code names things: module-level constant arrays, `from numpy import
sin`, `import numpy`, math.* on scalars, builtins, keyword arguments and defaults,
docstrings, calls to other user functions and nested defs.
"""
from __future__ import annotations

import math
from math import exp as math_exp

import numpy
import numpy as np
import pytest
import scipy.linalg
import scipy.special
from numpy import cos, sin
from numpy import sum as npsum

import srcgrad
from compiler_helpers import check_grad, finite_differences, tape_grads

rng = np.random.default_rng(1234)


def real(*shape):
    return rng.uniform(-1.5, 1.5, shape)


def pos(*shape):
    return rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    return rng.uniform(-0.8, 0.8, shape)


def distinct(*shape):
    """Values far apart (max/min/sort-like ops have no ties), away from 0."""
    n = int(np.prod(shape))
    v = (np.arange(n) + 1.0) * 0.37 * rng.choice([-1.0, 1.0], n)
    return rng.permutation(v).reshape(shape)


X34, Y4, Y34, Z134 = real(3, 4), real(4), real(3, 4), real(1, 3, 4)
P34, U34 = pos(3, 4), unit(3, 4)
M44, V3, B234, B245 = real(4, 4), real(3), real(2, 3, 4), real(2, 4, 5)
D34 = distinct(3, 4)

# module-level constants: big ones are referenced by name in the generated code, small
# ones are written into it
BIG = np.linspace(-1.0, 1.0, 48).reshape(4, 12)
SMALL = np.array([0.5, -1.0, 2.0, 0.25])
SCALE = 3.0
IDX = np.array([2, 0, 2])


# ---- elementwise ----------------------------------------------------------------------------

def f_trig(x):
    return np.sum(np.sin(x) * np.cos(x) + np.tan(x / 4))


def f_hyperbolic(x):
    return np.sum(np.tanh(x) + np.sinh(x) * np.cosh(x) / 10)


def f_inverse_trig(x):
    return np.sum(np.arcsin(x) + np.arccos(x) * 2 + np.arctan(3 * x))


def f_exp_log(x):
    return np.sum(np.exp(x) * np.log(x) + np.log1p(x) - np.expm1(-x))


def f_roots_powers(x):
    return np.sum(np.sqrt(x) + np.square(x) + np.reciprocal(x) + x ** 3 + x ** -0.5 + 2.0 ** x)


def f_abs_sign(x):
    return np.sum(np.abs(x) * 2 + np.absolute(x) ** 3 + abs(x) + np.sign(x) * x)


def f_abs(x):
    return np.sum(np.abs(x) * np.sin(x)) + np.sum(np.absolute(x) ** 3) + np.sum(abs(x) * x)


def f_sign(x):
    return np.sum(np.sign(x) * x ** 2)


def f_negative(x):
    return np.sum(-x * np.negative(x) + (+x))


def f_arith_broadcast(x, y):
    return np.sum(x + y) + np.sum(x * y) - np.sum(y / (x * x + 1)) + np.sum(np.subtract(y, x))


def f_power_both(x, y):
    return np.sum(x ** y + np.power(x, 2) * y)


def f_ufunc_names(x, y):
    return np.sum(np.add(x, y) * np.multiply(x, 2) / np.divide(y, 4) + np.true_divide(x, 3))


def f_maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) * 2 + np.minimum(x, 0.1) + np.maximum(0.0, y))


def f_where_compare(x, y):
    a = np.where(x > 0.2, x ** 2, -x)
    b = np.where(np.logical_and(x < y, x > -1.0), y, 0.5 * x)
    c = np.where(np.logical_or(x >= 1.0, y <= -1.0), np.sin(x), y)
    d = np.where(x != y, 1.0, 0.0) * x
    return np.sum(a + b + c + d)


def f_bitwise_logic(x, y):
    return np.sum(np.where((x < y) & (x > -1.0) | ~(y > 0.5), y, 0.5 * x))


def f_where_chained(x):
    inside = np.logical_and(-0.5 < x, x < 0.5)
    return np.sum(np.where(inside, x ** 2, x) + np.where(np.logical_not(inside), 0.0, x))


def f_clip(x):
    return np.sum(np.clip(x, -0.5, 0.7) ** 2 + x.clip(-1.0, None) + np.clip(x, a_min=None,
                                                                           a_max=0.3))


def f_clip_keywords(x):
    return np.sum(np.clip(x, min=-0.25, max=0.5) * x)


def f_remainders(x, y):
    """%, mod, remainder, fmod and // on arrays: d(x % y)/dy = -floor(x / y)."""
    return np.sum(x % y * 2 + np.mod(x, y) ** 2 + np.remainder(x, 0.75) + np.fmod(x, y) * x
                  + (x // y) * y + np.floor(x) * x + np.ceil(x) + np.trunc(x * y))


def f_python_floats(x):
    """float() and math functions of a 0-d value."""
    s = np.sum(x)
    return float(s) ** 2 + math.exp(s / 10) + math.sin(float(x[0, 0]))


def f_tensor_methods(x):
    """Primitives that numpy spells nowhere, reached as methods: x.relu(), x.sigmoid()..."""
    return np.sum(x.relu() * 2 + x.sigmoid() + x.softplus())


def f_more_math(x):
    return np.sum(np.arcsinh(x) + np.arccosh(x + 1.0) * 2 + np.arctanh(x / 3) + np.log2(x)
                  * np.log10(x) + np.exp2(x) + np.sinc(x) + np.fabs(x) * x)


def f_rounding(x):
    """rint and round are piecewise constant: their gradient is 0 (x stays away from the
    jumps)."""
    return np.sum(np.rint(x) * x + np.round(x, 1) * x ** 2 + np.around(x) + x.round() * x)


def f_two_argument_math(x, y):
    return np.sum(np.arctan2(x, y) + np.hypot(x, y) * 2 + np.logaddexp(x, y) ** 2 +
                  np.logaddexp2(y, x) + np.fmax(x, y) * x + np.fmin(x, 0.1))


def f_signs_and_roots(x, y):
    """cbrt (an odd root: negative x too), copysign (|x| with y's sign: no gradient to y),
    heaviside (piecewise constant)."""
    return np.sum(np.cbrt(x) * y + np.copysign(x, y) ** 2 + np.copysign(x * y, -1.0) +
                  np.heaviside(x, 0.5) * x)


def f_angles(x):
    return np.sum(np.deg2rad(x) + np.radians(x) ** 2 + np.rad2deg(x) * x + np.degrees(x))


def f_nan_to_num(x):
    """log of the negative entries is NaN, 1 / 0 is inf: nan_to_num replaces them, with
    no gradient there."""
    y = np.log(x)
    z = 1.0 / np.where(x > 0.0, x, 0.0)
    return np.sum(np.nan_to_num(z, posinf=3.0) * x + np.nan_to_num(y, nan=-1.0) * x
                  + np.nan_to_num(x) ** 2)


def f_real_parts(x):
    """real, imag, conj of real arrays: x itself, zeros and a copy."""
    return np.sum(np.real(x) * 2 + np.imag(x) + np.conj(x) * x + np.conjugate(x) + x.real
                  + x.imag * x + x.conj() + np.copy(x) ** 2 + x.copy())


def f_copy_then_update(x):
    y = np.copy(x)
    y += 1.0  # the copy changes, x does not
    return np.sum(x * y)


ELEMENTWISE = [
    (f_trig, [X34]), (f_hyperbolic, [X34]), (f_inverse_trig, [U34]), (f_exp_log, [P34]),
    (f_roots_powers, [P34]), (f_abs, [D34]), (f_sign, [D34]), (f_negative, [X34]),
    (f_abs_sign, [D34]),
    (f_bitwise_logic, [D34, distinct(3, 1) * 0.8], (0, 1)),
    (f_arith_broadcast, [X34, Y4], (0, 1)), (f_arith_broadcast, [Z134, V3[:, None]], (0, 1)),
    (f_power_both, [P34, Y4], (0, 1)), (f_ufunc_names, [X34, pos(4)], (0, 1)),
    (f_maximum_minimum, [D34, distinct(4) * 0.9], (0, 1)),
    (f_where_compare, [D34, distinct(3, 1) * 0.8], (0, 1)), (f_where_chained, [D34 / 4]),
    (f_clip, [D34 / 2]), (f_clip_keywords, [D34 / 3]),
    # float() of a Tensor is a plain number on the tape: finite differences only
    (f_python_floats, [X34], 0, False, True),
    # x / y and x / 0.75 stay 0.2 away from integers, so finite differences are valid
    (f_remainders, [np.array([[0.5, 1.6, -1.4, 2.45], [-2.5, 0.4, 1.55, -0.6],
                              [2.6, -1.45, 0.55, 1.4]]),
                    np.array([1.02, -0.97, 0.98, 1.01])], (0, 1)),
    # numpy arrays have no .relu(): the tape (on Tensors) is the reference
    (f_tensor_methods, [D34], 0, True, False),
    (f_more_math, [P34]), (f_two_argument_math, [D34, distinct(4) * 0.9], (0, 1)),
    (f_signs_and_roots, [D34, distinct(4) * 0.9], (0, 1)),
    (f_angles, [X34]), (f_real_parts, [X34]), (f_copy_then_update, [X34]),
    # halfway between tenths: away from every jump of rint and round(x, 1)
    (f_rounding, [np.round(X34, 1) + 0.025]),
    pytest.param(f_nan_to_num, [X34], marks=pytest.mark.filterwarnings(
        "ignore:.*encountered:RuntimeWarning")),
]


# ---- reductions -------------------------------------------------------------------------------

def f_sum_axes(x):
    return np.sum(x / x.sum(axis=1, keepdims=True)) + np.sum(np.sum(x, axis=0) ** 2) + \
        np.sum(x.sum(axis=(0, 2)) ** 3) + x.sum() ** 2


def f_mean(x):
    return np.sum(np.mean(x, axis=-1) ** 2) + x.mean() + np.sum(x.mean(axis=(0, 1),
                                                                        keepdims=True) ** 2)


def f_prod(x):
    return np.prod(x[0]) + np.sum(np.prod(x, axis=1) ** 2) + np.sum(x.prod(axis=0,
                                                                          keepdims=True))


def f_max_min(x):
    return np.max(x) + np.sum(np.min(x, axis=1)) + np.sum(x.max(axis=0, keepdims=True) ** 2) \
        + np.amax(x) * np.amin(x) + x.min()


def f_var_std(x):
    return np.var(x) + np.std(x, axis=0).sum() + np.sum(x.var(axis=1, keepdims=True) ** 2) \
        + x.std(ddof=1) + np.var(x, axis=-1, ddof=1).sum()


def f_logsumexp(x):
    return scipy.special.logsumexp(x) + np.sum(scipy.special.logsumexp(x, axis=1) ** 2) + \
        np.sum(scipy.special.logsumexp(x, axis=0, keepdims=True))


def f_logsumexp_by_hand(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0])


REDUCTIONS = [
    (f_sum_axes, [B234]), (f_mean, [B234]), (f_prod, [distinct(3, 4) / 3]),
    (f_max_min, [D34]), (f_var_std, [X34]), (f_logsumexp, [X34], 0, False),
    (f_logsumexp_by_hand, [X34]),
]


# ---- shapes and indexing -------------------------------------------------------------------------

def f_transpose(x):
    return np.sum(x.T @ x) + np.sum(np.transpose(x) * np.arange(12.0).reshape(4, 3))


def f_transpose_axes(x):
    return np.sum(np.transpose(x, (2, 0, 1)) * np.arange(24.0).reshape(4, 2, 3)) + \
        np.sum(x.transpose(1, 2, 0)[0] ** 2) + np.sum(x.mT[0] * np.arange(12.0).reshape(4, 3))


def f_reshape(x):
    return np.sum(x.reshape(2, 6) ** 2 * np.arange(6.0)) + np.sum(x.reshape((4, 3))[0]) + \
        np.sum(np.reshape(x, (-1,)) * np.arange(12.0)) + np.sum(x.reshape(x.shape[0], -1)[1])


def f_ravel(x):
    return np.sum(np.ravel(x) * np.arange(12.0)) + np.sum(x.flatten()[:5] ** 2) + \
        np.sum(x.ravel()[::2])


def f_axes_moves(x):
    return np.sum(np.swapaxes(x, 0, 2)[0] ** 2) + np.sum(x.swapaxes(1, 2)[:, 0] * 3) + \
        np.sum(np.moveaxis(x, 0, -1)[..., 1] ** 2)


def f_expand_squeeze(x):
    y = np.expand_dims(x, 0) * np.ones((2, 1, 1))
    z = np.squeeze(x[:, :1], axis=1)
    return np.sum(y ** 2) + np.sum(z ** 3) + np.sum(np.squeeze(x[None]) * x) + \
        np.sum(x[:, None, :] * x[:, :, None])


def f_broadcast_to(x):
    return np.sum(np.broadcast_to(x, (2, 3, 4)) * np.arange(24.0).reshape(2, 3, 4))


def f_slicing(x):
    return np.sum(x[1:, ::2] * 3) + x[0, 1] ** 2 + np.sum(x[-1]) * x[-2, -1] + \
        np.sum(x[..., 1:3] ** 2) + np.sum(x[:, ::-1][0] * np.arange(4.0))


def f_slicing_runtime_bounds(x):
    n = x.shape[0]
    return np.sum(x[: n - 1] ** 2) + np.sum(x[len(x) // 2:]) + np.sum(x[1: x.shape[1]])


def f_int_array_index(x):
    return np.sum(x[np.array([0, 2, 2])] ** 2) + np.sum(x[:, IDX] * 2) + \
        np.sum(x[[1, 0]][:, 0] ** 3) + np.sum(x[np.array([0, 1]), np.array([3, 3])])


def f_bool_mask(x):
    return np.sum(x[x > 0] ** 2) + np.sum(x[np.abs(x) < 1.0]) + np.sum(x[:, 0][x[:, 1] < 0])


def f_concatenate(x, y):
    return np.sum(np.concatenate([x, x * 2], axis=0) ** 2) + \
        np.sum(np.concatenate((x, y[None]), axis=0) * np.arange(16.0).reshape(4, 4)) + \
        np.sum(np.concatenate([x, x], axis=None) ** 2) + \
        np.sum(np.concatenate([x.T, np.sin(x).T], axis=1) ** 3)


def f_stack(x, y):
    return np.sum(np.stack([y, y ** 2]) ** 2) + np.sum(np.stack([x, 2 * x], axis=-1) ** 2) + \
        np.sum(np.stack((x, x * y), axis=1) * np.arange(8.0).reshape(2, 4))



def f_flip(x):
    w = np.arange(12.0).reshape(3, 4)
    return np.sum(np.flip(x) * w) + np.sum(np.flip(x, axis=1) * w ** 2) + \
        np.sum(np.fliplr(x) * w + np.flipud(x) * w)


def f_astype(x):
    return np.sum(x.astype(np.float64) ** 2) + np.sum(x.astype(float) * x)


def f_astype_float32(x):
    return np.sum(x.astype("float32").astype(float) * x)


def f_asarray(x):
    return np.sum(np.asarray(x) * 2) + np.sum(np.asarray(x, dtype=np.float64) ** 2)


def f_scans(x):
    return np.sum(np.cumsum(x) * np.arange(12.0)) + np.sum(np.cumsum(x, axis=1) ** 2) + \
        np.sum(x.cumsum(axis=0) * x) + np.sum(np.cumprod(x, axis=1)) + \
        np.sum(x.cumprod() ** 2 * 0.01)


def f_diff(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, n=2, axis=0) * 3) + \
        np.sum(np.diff(x, axis=0, prepend=0.5) ** 2) + np.sum(np.diff(x[0], append=x[1, :2]))


def f_diagonals(x):
    return np.sum(np.diag(x) ** 2) + np.sum(np.diag(x, k=1) * 3) + \
        np.sum(np.diag(np.diag(x), k=-1)[1:, :4] @ x) + np.sum(np.diagonal(x, offset=-1) ** 3) + \
        np.sum(x.diagonal() * np.arange(4.0)) + np.trace(x, offset=2)


def f_triangles(x):
    return np.sum(np.tril(x) ** 2) + np.sum(np.triu(x, k=1) * np.arange(4.0)) + \
        np.sum(np.tril(x[0], k=-1) * x)


def f_repeat_tile(x):
    return np.sum(np.repeat(x, 2) * np.arange(24.0)) + np.sum(np.repeat(x, [2, 0, 1], axis=0)
                                                           ** 2) + \
        np.sum(x.repeat(3, axis=1) ** 3) + np.sum(np.tile(x, 2) ** 2) + \
        np.sum(np.tile(x[0], (3, 1)) * np.arange(12.0).reshape(3, 4))


def f_pad(x):
    w = np.arange(30.0).reshape(5, 6)
    return np.sum(np.pad(x, 1) * w) + np.sum(np.pad(x, ((0, 1), (2, 0)), constant_values=2.0)
                                             ** 2) + \
        np.sum(np.pad(x, 1, mode="reflect") * w) + np.sum(np.pad(x, (1, 2), mode="edge") ** 2) \
        + np.sum(np.pad(x, 2, mode="wrap") ** 3) + np.sum(np.pad(x, 1, mode="symmetric") * w)


def f_roll_rotate(x):
    w = np.arange(12.0).reshape(3, 4)
    return np.sum(np.roll(x, 1) * w) + np.sum(np.roll(x, (1, -2), axis=(0, 1)) * w) + \
        np.sum(np.rot90(x) * w.T) + np.sum(np.rot90(x, 2) * w) + np.sum(np.rot90(x, -1) ** 3) \
        + np.sum(np.fliplr(x) * np.flipud(x))


def f_rollaxis(x):
    return np.sum(np.rollaxis(x, 2)[0] ** 2) + np.sum(np.rollaxis(x, 1, 3)[..., 0] * 2) + \
        np.sum(np.rollaxis(x, 0, 2)[0] ** 3)


def f_take(x):
    return np.sum(np.take(x, [0, 5, 5, 11]) ** 2) + np.sum(np.take(x, IDX, axis=0) * 3) + \
        np.sum(x.take([1, -1], axis=1) ** 3)


def f_sort(x):
    s = np.sort(x)
    order = np.argsort(x, axis=0)
    return np.sum(s * np.arange(4.0)) + np.sum(np.sort(x, axis=0)[0] ** 2) + \
        np.sum(np.sort(x, axis=None) * np.arange(12.0)) + \
        np.sum(np.take_along_axis(x, order, axis=0) * np.arange(12.0).reshape(3, 4)) + \
        np.sum(x[np.argmax(x, axis=0), np.arange(4)] ** 2) + x.ravel()[np.argmin(x)]


def f_select(x):
    return np.sum(np.select([x > 0.5, x < -0.5], [x ** 2, -x], default=0.1 * x))


def f_joining(x, y):
    return np.sum(np.vstack([x, y]) ** 2) + np.sum(np.dstack([x, x * 2]) ** 2) + \
        np.sum(np.column_stack([y, x.T]) * 3) + np.sum(np.append(x, y) ** 2) + \
        np.sum(np.append(x, x, axis=1) ** 3) + np.sum(np.atleast_2d(y) * np.atleast_3d(x)[0])


def f_atleast(x):
    a = np.atleast_1d(np.sum(x))
    b, c = np.atleast_2d(x[0], x)
    return np.sum(a ** 2) + np.sum(b * 3) + np.sum(c ** 2) + np.sum(np.atleast_3d(x[0]) ** 3)


def f_splits(x):
    a, b = np.split(x, 2, axis=1)
    c = np.array_split(x, 3, axis=1)
    d = np.split(x, [1, 2])
    e, f = np.hsplit(x, 2)
    g = np.vsplit(x, [2])
    return np.sum(a * b) + np.sum(c[0] ** 2) + np.sum(c[2] * 3) + np.sum(d[1] ** 2) + \
        np.sum(e - f ** 2) + np.sum(g[0] ** 3)


def f_average(x, w):
    return np.average(x) + np.sum(np.average(x, axis=0) ** 2) + \
        np.sum(np.average(x, axis=1, weights=w) ** 2) + np.average(x, weights=x * x + 1) + \
        np.sum(np.average(x, axis=1, weights=w, keepdims=True) * x)


def f_nan_reductions(x):
    y = np.where(x > 1.0, np.nan, x)
    return np.nansum(y) + np.sum(np.nansum(y, axis=0) ** 2) + np.sum(np.nanmean(y, axis=1) ** 2)\
        + np.nanmean(y)


def f_linspace(x):
    t = np.linspace(0.0, 1.0, 4)
    s = np.linspace(x[0, 0], x[0, 1], 5)
    r = np.linspace(x[0], x[1], 3)
    return np.sum(x * t) + np.sum(s ** 2) + np.sum(r ** 2 * np.arange(3.0)[:, None])


def f_meshgrid(x, y):
    a, b = np.meshgrid(x, y)
    c, d = np.meshgrid(x, y, indexing="ij", sparse=True)
    return np.sum(a * b ** 2) + np.sum(c * d)


def f_full_like(x):
    return np.sum(np.full_like(x, 2.0) * x) + np.sum(np.full_like(x, x[0, 0]) * x)


def f_item_assignment(x):
    y = np.tanh(x)
    y[1, :] = x[0] ** 2
    y[:, 2] += x[2, :3]
    return np.sum(y * y)


SHAPES = [
    (f_item_assignment, [X34]),
    (f_transpose, [X34]), (f_transpose_axes, [B234]), (f_reshape, [X34]), (f_ravel, [X34]),
    (f_axes_moves, [B234]), (f_expand_squeeze, [X34]), (f_broadcast_to, [real(3, 1)]),
    (f_broadcast_to, [real(4)]), (f_slicing, [X34]), (f_slicing_runtime_bounds, [X34]),
    (f_int_array_index, [X34]), (f_bool_mask, [D34]), (f_concatenate, [X34, Y4], (0, 1)),
    (f_stack, [X34, Y4], (0, 1)), (f_flip, [X34]), (f_astype, [X34]),
    # np.asarray(Tensor) gives the Tensor's data (numpy offers no dispatch hook for it), so
    # the tape sees a constant: finite differences only
    (f_asarray, [X34], 0, False),
    # a float32 round trip is below the resolution of finite differences: the tape only
    (f_astype_float32, [X34], 0, True, False),
    (f_scans, [X34 / 2]), (f_diff, [X34]), (f_diagonals, [M44]), (f_triangles, [M44]),
    (f_repeat_tile, [X34]), (f_pad, [X34]), (f_roll_rotate, [X34]), (f_rollaxis, [B234]),
    (f_take, [X34]), (f_sort, [D34]), (f_select, [D34]), (f_joining, [X34, Y4], (0, 1)),
    (f_atleast, [X34]), (f_splits, [real(4, 4)]), (f_average, [X34, pos(4)], (0, 1)),
    (f_nan_reductions, [X34]), (f_meshgrid, [Y4, V3], (0, 1)),
    # np.linspace and np.full_like of run-time values: numpy gives Tensors no hook for
    # them, so the tape cannot follow; finite differences only
    (f_linspace, [X34], 0, False), (f_full_like, [X34], 0, False),
]


# ---- linear algebra ------------------------------------------------------------------------------

def f_matmul_1d(x, y):
    return x @ y


def f_matmul_vec_mat(x, m):
    return x @ m @ x


def f_matmul_2d(a, b):
    return np.sum((a @ b) ** 2) + np.sum(np.matmul(a, b))


def f_matmul_batched(a, b):
    return np.sum(np.sin(a @ b)) + np.sum((a @ b[0]) ** 2)


def f_matmul_mixed(a, v):
    return np.sum(a @ v) + np.sum(v @ a.T) + np.sum((a @ v) ** 2)


def f_dot(a, b):
    return np.sum(np.dot(a, b) ** 2) + np.dot(b, b) + a.dot(b).sum() + np.sum(np.dot(2.0, a))


def f_inner_outer(a, b):
    return np.inner(b, b) + np.sum(np.inner(a, b) ** 2) + np.sum(np.outer(b, b) ** 2) + \
        np.sum(np.outer(a[0], b) * np.arange(16.0).reshape(4, 4))


def f_tensordot(a, b):
    return np.sum(np.tensordot(a, b, axes=([2], [0])) ** 2) + \
        np.sum(np.tensordot(a[0], a[1], axes=2)) + np.tensordot(a, a, axes=3) + \
        np.sum(np.tensordot(a, b, axes=1))


def f_tensordot_unsorted(a, b):
    return np.sum(np.tensordot(a, b, axes=([2, 1], [0, 1])) ** 2)


def f_trace(x):
    return np.trace(x @ x.T) + np.trace(x, offset=1) ** 2 + x.trace() + \
        np.sum(np.trace(np.stack([x, x * 2]), axis1=1, axis2=2) ** 2)


def f_kron_cross(a, b):
    return np.sum(np.kron(a, b) ** 2) + np.sum(np.kron(b, a[0]) * 3) + \
        np.sum(np.cross(a[:, :3], b[:3]) ** 2) + np.sum(np.cross(a[:, :3], a[:, 1:], axis=1))


def f_einsum(a, b):
    return np.einsum("ij,j->", a, b) + np.sum(np.einsum("ij,kj->ik", a, a) ** 2) + \
        np.sum(np.einsum("ii->i", a[:, :3]) ** 3) + np.einsum("ij,ij", a, a) + \
        np.sum(np.einsum("...j,j->...", a, b) ** 2) + np.sum(np.einsum("i,j", b, b) ** 2)


def f_matrix_functions(m, b):
    s = m @ m.T + 4.0 * np.eye(4)
    sign, logdet = np.linalg.slogdet(m)
    return np.sum(np.linalg.inv(m) ** 2) + np.linalg.det(m) + logdet * sign + \
        np.sum(np.linalg.solve(m, b) ** 2) + np.sum(np.linalg.cholesky(s) ** 2) + \
        np.linalg.slogdet(s).logabsdet + np.sum(np.linalg.matrix_power(m, 3)) + \
        np.sum(np.linalg.matrix_power(m, -1) * 2) + np.sum(np.linalg.matrix_power(m, 0) * m)


def f_decompositions(m):
    s = m + m.T + np.diag(np.arange(4.0) * 2)
    w, v = np.linalg.eigh(s)
    u, sv, vh = np.linalg.svd(m[:, :3], full_matrices=False)
    q, r = np.linalg.qr(m[:, :3])
    return np.sum(w ** 2) + np.sum(v[0] ** 2 * v[1]) + np.sum(np.linalg.eigvalsh(s) * 3) + \
        np.sum(sv) + np.sum((u * u[0]) ** 2) + np.sum(vh[:, 0] ** 4) + \
        np.sum(np.linalg.svd(m, compute_uv=False) ** 2) + np.sum(q[:, 0] * q[:, 1] ** 2) + \
        np.sum(r ** 2) + np.sum(np.linalg.pinv(m[:, :3]) ** 2)


def f_norms(x, v):
    return np.linalg.norm(x) + np.sum(np.linalg.norm(x, axis=1) ** 2) + \
        np.linalg.norm(v, ord=1, axis=0) + np.linalg.norm(v, ord=np.inf, axis=-1) + \
        np.linalg.norm(v, 3, 0) + np.linalg.norm(v, ord=0, axis=0) * np.sum(v) + \
        np.linalg.norm(x, "fro", (0, 1)) + np.linalg.norm(x, "nuc", (0, 1)) + \
        np.linalg.norm(x, ord=2, axis=(0, 1)) + np.linalg.norm(x, ord=1, axis=(1, 0)) + \
        np.linalg.norm(x, ord=-np.inf, axis=(-2, -1)) + \
        np.sum(np.linalg.norm(x, axis=0, keepdims=True) * x)


LINALG = [
    (f_matmul_1d, [Y4, real(4)], (0, 1)), (f_matmul_vec_mat, [Y4, M44], (0, 1)),
    (f_matmul_2d, [X34, real(4, 5)], (0, 1)), (f_matmul_batched, [B234, B245], (0, 1)),
    (f_matmul_batched, [real(3, 4), B245], (0, 1)), (f_matmul_mixed, [X34, Y4], (0, 1)),
    (f_dot, [X34, Y4], (0, 1)), (f_inner_outer, [X34, Y4], (0, 1)),
    (f_tensordot, [B234, real(4, 5)], (0, 1)), (f_tensordot_unsorted, [B234, real(4, 3, 2)],
                                                (0, 1)),
    (f_trace, [M44]), (f_kron_cross, [X34, Y4], (0, 1)), (f_einsum, [X34, Y4], (0, 1)),
    (f_matrix_functions, [M44 + 3 * np.eye(4), real(4, 2)], (0, 1)),
    (f_decompositions, [M44]), (f_norms, [D34, distinct(4)], (0, 1)),
]


# ---- building arrays -------------------------------------------------------------------------

def f_creators(x):
    return np.sum(np.full((3, 4), 2.0) * x + np.zeros_like(x) + np.ones_like(x) * x) + \
        np.sum(np.zeros((3, 4)) + np.ones(4) * x ** 2 + np.eye(4)[0] * x) + \
        np.sum(np.full_like(x, 3.0) * x + np.arange(4) * x)


def f_full_of_value(x):
    return np.sum(np.full((3, 4), x[0, 0]) * x)


def f_array_of_scalars(x):
    a = np.sum(x)
    b = np.max(x)
    return np.sum(np.array([a, b, 1.0]) ** 2) + np.sum(np.array([[a, b], [b, a]]) @ x[:2, :2])


def f_hstack(x, y):
    h = np.hstack([x, y])
    return np.sum(h ** 2 * np.arange(1.0, 1.0 + h.size).reshape(h.shape))


def f_choose(x, y, z):
    a = np.array([[0, 1, 2, 1], [2, 1, 0, 0], [1, 1, 2, 0]])
    return np.sum(np.choose(a, [x, y, z]) ** 2) + \
        np.sum(np.choose(a + 1, (x, 2.0, z), mode="wrap") * x) + \
        np.sum(np.choose(a + 1, [x, y, z], mode="clip") ** 3)


def f_choose_method(x, y):
    a = np.array([[0, 1, 1, 0], [1, 0, 0, 1], [1, 1, 0, 0]])
    return np.sum(a.choose([x, y]) ** 2)


def f_special(x, y):
    # every scipy.special primitive (tests/test_scipy_ops.py checks each spelling)
    return np.sum(scipy.special.gammaln(x) * scipy.special.digamma(x) +
                  scipy.special.polygamma(2, x) + scipy.special.erf(y) +
                  scipy.special.erfc(y) * scipy.special.erfinv(y / 2) +
                  scipy.special.ndtr(y) + scipy.special.log_ndtr(y) +
                  scipy.special.xlogy(y, x) + scipy.special.xlog1py(x, y / 2))


def f_solve_triangular(a, b):
    return np.sum(scipy.linalg.solve_triangular(a + 3 * np.eye(4), b, lower=True) ** 2)


BUILDERS = [
    (f_hstack, [real(3), real(2)], (0, 1)), (f_hstack, [real(2, 3), real(2, 1)], (0, 1)),
    (f_hstack, [real(2, 3, 2), real(2, 1, 2)], (0, 1)),
    (f_choose, [X34, real(4), real(3, 1)], (0, 1, 2)),
    # the tape cannot follow an ndarray method given Tensors (a.choose(tensors))
    (f_choose_method, [X34, real(4)], (0, 1), False),
    # scipy.special.polygamma is a Python function, which reads a Tensor as an array
    (f_special, [X34 ** 2 + 0.5, X34 / 2], (0, 1), False),
    (f_solve_triangular, [real(4, 4), real(4, 2)], (0, 1), False),
    (f_creators, [X34]),
    # np.full and np.array are not dispatched to Tensors (numpy gives them no hook), so the
    # tape cannot follow them: finite differences only
    (f_full_of_value, [X34], 0, False), (f_array_of_scalars, [D34], 0, False),
]


# ---- how user code names things ---------------------------------------------------------------

def f_module_constants(w):
    return np.sum((w @ BIG) ** 2) + np.sum(w * SMALL) * SCALE + np.sum(w[IDX])


def f_from_numpy_import(x):
    return npsum(sin(x) * cos(x))


def f_import_numpy(x):
    return numpy.sum(numpy.exp(numpy.sin(x))) + numpy.mean(numpy.tanh(x) * x)


def f_math_scalars(x, y):
    return math.sin(x) * math.exp(y) + math.log(x * x + 1) + math.sqrt(y * y + 1) + \
        math.tanh(x) + math.cos(y) ** 2 + math_exp(x) / 3 + math.pow(y, 2) + math.pi * x + \
        math.atan(x) + math.fabs(y) + math.log1p(x * x)


def f_builtins(x, y):
    n = len(x)
    a = float(n) * np.sum(x ** 2)
    b = abs(y) + pow(y, 3) + max(y, 0.5 * y) + min(y, 2.0)
    c = sum([np.sum(x), np.sum(x ** 2), y])
    d = max(np.sum(x), np.sum(np.sin(x))) + min(x[0], x[1], x[2])
    return a + b + c + d


def f_builtins_float(x):
    return float(np.sum(x ** 2)) * 2


def f_keywords(x, scale=2.0, *, power=3, shift=0.5):
    return np.sum(scale * (x + shift) ** power)


def f_call_keywords(x):
    return f_keywords(x, power=2) + f_keywords(x, 0.5, shift=-1.0, power=3)


def f_docstring(x):
    """A docstring is ignored by the compiler.

    It may span lines and hold code-like text: x = y ** 2.
    """
    'a bare string statement is ignored too'
    return np.sum(x ** 2)


def _helper_square(v):
    return v * v


def _helper_layer(v, w, bias=0.0):
    h = v @ w + bias
    return np.tanh(h) + _helper_square(h) * 0.1


def f_calls_user_functions(x, w):
    h = _helper_layer(x, w, bias=0.5)
    return np.sum(_helper_square(h)) + np.sum(_helper_layer(h, w.T))


def f_nested_def(x, y):
    k = 3.0

    def inner(v, power=2):
        return k * v ** power + y

    def twice(v):
        return inner(inner(v), power=1)

    return np.sum(twice(x) + inner(x, power=3))


def f_assignments(x):
    a = x * 2
    a += x
    a *= 0.5
    a -= np.sin(x)
    a /= 2.0
    a **= 2
    b: np.ndarray = a + 1
    c, (d, e) = b, (a, x)
    c = c * d
    return np.sum(c + e)


def f_shape_arithmetic(x):
    n, m = x.shape
    scale = 1.0 / (n * m)
    return np.sum(x ** 2) * scale + np.sum(x) / x.size + x.ndim * np.sum(x[n - 1])


def f_reuse_and_rebind(x):
    y = np.sin(x)
    y = y * y + x
    z = y
    y = np.exp(-y * y)
    return np.sum(y * z + x)


def f_unused_code(x, y):
    dead = np.exp(y) * 3  # never reaches the output  # noqa: F841
    also_dead = x ** 5  # noqa: F841
    return np.sum(x ** 2)


def f_python_constants(x):
    items = [1.0, 2.0, 3.0]
    table = {"a": 0.5, "b": 2.0}
    total = 0.0
    total = total + np.sum(x) * items[1] + table["b"] * np.sum(x ** 2)
    return total * len(items) + (x[0, 0] if 2 > 1 else x[1, 1])


NAMING = [
    (f_module_constants, [real(3, 4)]), (f_from_numpy_import, [X34]),
    (f_import_numpy, [X34]), (f_math_scalars, [0.7, -0.4], (0, 1), False),
    (f_builtins, [real(3), 0.8], (0, 1)), (f_builtins_float, [X34], 0, False),
    (f_keywords, [X34]), (f_call_keywords, [X34]), (f_docstring, [X34]),
    (f_calls_user_functions, [X34, real(4, 4) / 2], (0, 1)),
    (f_nested_def, [X34, Y4], (0, 1)), (f_assignments, [X34]),
    (f_shape_arithmetic, [X34]), (f_reuse_and_rebind, [X34]),
    (f_unused_code, [X34, Y4], (0, 1)), (f_python_constants, [X34]),
]

ALL = ELEMENTWISE + REDUCTIONS + SHAPES + LINALG + BUILDERS + NAMING


def _case_id(case):
    if hasattr(case, "values"):  # pytest.param
        case = case.values
    fn, args = case[0], case[1]
    shapes = "-".join("x".join(map(str, np.shape(a))) or "s" for a in args)
    return f"{fn.__name__}[{shapes}]"


def _as_param(case):
    if hasattr(case, "values"):
        return pytest.param(*_pad(case.values), marks=case.marks, id=_case_id(case))
    return pytest.param(*_pad(case), id=_case_id(case))


def _pad(case):
    """(fn, args, wrt=0, tape=True, fd=True)"""
    defaults = (None, None, 0, True, True)
    return tuple(case) + defaults[len(case):]


@pytest.mark.parametrize("fn, args, wrt, tape, fd", [_as_param(c) for c in ALL])
def test_grad_matches_tape_and_finite_differences(fn, args, wrt, tape, fd):
    check_grad(fn, args, wrt, tape=tape, fd=fd)


#: differentiable primitives that user code does not spell: cotangent helpers the VJP rules
#: use, and device copies
NOT_SPELLED = {"sum_to", "scatter_add", "cast_like", "like_arg", "trace_transpose", "to_device", "diag_grad",
               "diagonal_grad", "repeat_grad", "tile_grad", "einsum_grad", "float_gate"}


def test_every_spelled_differentiable_primitive_is_covered():
    """Each differentiable primitive of the op set appears in the forward IR of some case
    above (a new primitive needs a case here)."""
    from runtime.ops import PRIMITIVES
    from srcgrad.lower import lower

    seen = set()

    def walk(eqns):
        for e in eqns:
            seen.add(e.prim.name)
            for b in e.blocks():
                walk(b.eqns)

    for case in ALL:
        fn = (case.values if hasattr(case, "values") else case)[0]
        walk(lower(fn)[0].eqns)
    wanted = {name for name, p in PRIMITIVES.items() if p.differentiable and not
              name.endswith(("_grad_a", "_grad_b")) and name not in NOT_SPELLED and
              not getattr(p, "custom", False)}
    assert wanted - seen == set()


# ---- specific values and conventions -----------------------------------------------------------

def test_sign_has_zero_gradient():
    def f(x):
        return np.sum(np.sign(x) * 3.0)

    g = srcgrad.grad(f)(real(5))
    assert np.array_equal(g, np.zeros(5))


def test_abs_at_zero_and_relu_at_zero_are_zero():
    def f(x):
        return np.sum(np.abs(x) + np.maximum(x, 0.0) * 0)

    g = srcgrad.grad(f)(np.array([0.0, 1.0, -2.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, -1.0])


def test_maximum_tie_splits_the_gradient():
    def f(x, y):
        return np.sum(np.maximum(x, y))

    gx, gy = srcgrad.grad(f, wrt=(0, 1))(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    np.testing.assert_array_equal(gx, [0.5, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 0.0])
    tx, ty = tape_grads(f, [np.array([1.0, 2.0]), np.array([1.0, 0.0])], [0, 1])
    np.testing.assert_array_equal(gx, tx)
    np.testing.assert_array_equal(gy, ty)


def test_max_reduction_of_broadcast_copies_matches_finite_differences():
    # ties between broadcast copies of one value: the split shares add back up to 1
    def f(x):
        return np.sum(np.max(np.broadcast_to(x, (3, 4)), axis=0))

    check_grad(f, [real(4)])


def test_mean_of_empty_mask_has_zero_gradient_in_sum():
    def f(x):
        return np.sum(x[x > 100.0]) + np.sum(x ** 2)

    g = check_grad(f, [X34])[0]
    np.testing.assert_allclose(g, 2 * X34)


def test_repeated_integer_index_accumulates():
    def f(x):
        return np.sum(x[np.array([1, 1, 1, 0])])

    np.testing.assert_array_equal(srcgrad.grad(f)(np.zeros(3)), [1.0, 3.0, 0.0])


def test_prod_with_a_zero():
    def f(x):
        return np.prod(x)

    g = srcgrad.grad(f)(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 6.0, 0.0])
    g = srcgrad.grad(f)(np.array([0.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


def test_std_of_constant_row_has_zero_gradient():
    def f(x):
        return np.sum(np.std(x, axis=1))

    x = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
    g = srcgrad.grad(f)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(g[0], 0.0)
    np.testing.assert_allclose(g[1], finite_differences(f, [x], 0)[1], atol=1e-6)


def test_scalar_output_matmul_seed():
    # the gradient of a 0-d matmul output is seeded with a Python float: the cotangent
    # helpers must accept it (this used to fail with "'float' object is not subscriptable")
    v, m = real(4), real(4, 4)
    gv, gm = check_grad(f_matmul_vec_mat, [v, m], (0, 1))
    np.testing.assert_allclose(gv, (m + m.T) @ v)
    np.testing.assert_allclose(gm, np.outer(v, v))


def test_scalar_output_matmul_seed_float32():
    v, m = real(4).astype(np.float32), real(4, 4).astype(np.float32)
    gv, gm = srcgrad.grad(f_matmul_vec_mat, wrt=(0, 1))(v, m)
    assert gv.dtype == np.float32 and gm.dtype == np.float32
    np.testing.assert_allclose(gv, (m + m.T) @ v, rtol=1e-5)


def test_augmented_assignment_of_the_argument_is_refused():
    """numpy's `y += 1` changes the caller's array through the alias `y = x`: srcgrad
    refuses it at the line rather than differentiate other semantics."""
    def f(x):
        y = x
        y += 1.0
        return np.sum(y ** 2)

    x = np.array([1.0, 2.0])
    with pytest.raises(srcgrad.SrcgradError, match="in place"):
        srcgrad.grad(f, cache=False)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_method_of_constant_array():
    def f(x):
        return np.sum(x * SMALL.sum()) + np.sum(x * SMALL.reshape(2, 2).T.ravel())

    check_grad(f, [real(4)])


def _del_before_inlined_shape(x):
    v = np.expand_dims(x, 0)
    w = v[0]
    return np.sum(w) + np.sum(v)


def test_del_before_an_inlined_shape_use():
    # `del v` must come after the last use of v, also one written inline (`v.shape`)
    check_grad(_del_before_inlined_shape, [real(3)])


def _where_on_a_scalar(x, y):
    return np.sum(np.where(x > 0, x, y))


def test_where_condition_smaller_than_the_result():
    # x is a scalar, the result of where has y's shape (3,): the gradient must be summed
    # back to a scalar (srcgrad returned [1., 1., 1.] instead of 3.0)
    g = check_grad(_where_on_a_scalar, [0.7, real(3)], (0, 1))
    assert np.shape(g[0]) == () and float(g[0]) == 3.0


def f_hstack_plain(x, y):
    return np.sum(np.hstack((x, y)) ** 2)


def f_choose_of(x, y, a):
    return np.sum(np.choose(a, [x, y]) ** 2)


def test_hstack_and_choose_keep_numpy_errors_in_compiled_code():
    g = srcgrad.grad(f_hstack_plain, cache=False)
    for x, y in ((np.ones(3), np.ones((1, 3))), (np.ones((2, 3, 2)), np.ones((2, 1, 3))),
                 (np.ones((2, 3)), np.ones((3, 3)))):
        with pytest.raises(ValueError) as want:
            np.hstack((x, y))
        with pytest.raises(ValueError) as got:
            g(x, y)
        assert str(got.value) == str(want.value)
    # an index out of range is refused, a negative one too (numpy does not wrap it)
    gc = srcgrad.grad(f_choose_of, cache=False)
    np.testing.assert_array_equal(gc(np.ones(3), np.ones(3), np.array([0, 1, 0])),
                                  [2.0, 0.0, 2.0])
    for bad in ([0, 2, 1], [0, -1, 1]):
        with pytest.raises((IndexError, ValueError)):
            gc(np.ones(3), np.ones(3), np.array(bad))
        with pytest.raises(ValueError, match="invalid entry"):
            np.choose(np.array(bad), [np.ones(3), np.ones(3)])
