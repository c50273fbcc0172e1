"""Functions that call numpy's functions on Python numbers (a setting passed as a float, a
counter, a length, a flag) and then use the result as numpy's: the way such code is
written, not the way srcgrad would like it."""
import numpy as np

import srcgrad


def scaled_by_squared_rate(x, rate):
    r2 = np.multiply(rate, rate)
    weights = r2[None]  # a numpy float64 indexes like a 0-d array
    return np.sum(x * weights)


def damped(x, gain):
    factor = np.divide(gain, 0.0)  # numpy: inf (and a warning), not ZeroDivisionError
    return np.sum(x) * (2.0 if np.isinf(factor) else factor)


def root_of_setting(x, level):
    root = np.power(level, 0.5)  # numpy: nan for a negative level, not a complex number
    return np.sum(x) + (0.0 if np.isnan(root) else root)


def wrapped_count(x, n):
    big = np.multiply(n, n)  # numpy's int64 wraps where a Python int would not
    return np.sum(x) * float(big % 7)


def flagged(x, clip):
    if np.invert(clip):  # numpy: False for True (Python's ~True is -2, which is true)
        return np.sum(x * x)
    return np.sum(np.minimum(x, 1.0) ** 2)


def item_of(x, shift):
    s = np.negative(shift)
    return np.sum(x + s.item())


def asarray_of(x, scale):
    return np.sum(x * np.asarray(scale)[None])


def compared(x, threshold):
    above = np.less(threshold, 2.0)
    return np.sum(x * above[None])


def of_length(x):
    n = np.multiply(len(x), 2)
    return np.sum(x) * n[None][0]


def of_shape(x):
    padded = np.add(x.shape, 1)  # an array [n + 1], where a tuple + 1 raises
    return np.sum(x) * np.sum(padded)


def grown(x, steps):
    c = 1.0
    for _ in range(steps):
        c = np.multiply(c, 1.5)
    return np.sum(x) * c[None][0]


def product_of_arrays(x, y):
    return np.sum(np.multiply(x, y) + np.add(x, 1.0))


SCALE = np.float64(2.0)  # a module-level numpy scalar
TENTH32 = np.float32(0.1)


def scaled_by_global(x, rate):
    v = rate * SCALE  # numpy's float64, not a Python float
    return np.sum(x * v[None])


def scaled_by_float32_setting(x, rate):
    return np.sum(x) * (rate * TENTH32)  # float32 arithmetic, as numpy does it


def scaled_by_root_two(x):
    return np.sum(x * np.sqrt(2.0))  # numpy's float64: a float32 x gives float64


def shifted_bytes(x, s, w):
    return np.sum(x * np.subtract(s, w))  # a Python int is weak: uint8 arithmetic wraps


def step_of(x, lr, w):
    return np.sum(x * np.multiply(lr, w))  # a Python float is weak: float32 w stays float32


def counted(x, w):
    out = 0.0
    for i in range(3):
        out = out + np.multiply(i, w)
    return np.sum(x * out)


def inverted_constant(x):
    return np.sum(x * ~np.less(1, 2))  # numpy's False: ~True would be -2


def inverted_branch(x, s):
    flag = np.True_ if s > 0 else np.False_
    return np.sum(x * ~flag)


def mean_by_size(x):
    return np.sum(x) / np.prod(x.shape)  # numpy's int64: a float32 sum becomes float64


N64 = np.int64(3)


def divided_by_global(x):
    return np.sum(x / N64)


ONE = np.float64(1.0)


def times_one(x, rate, w):
    return np.sum(x * (np.multiply(rate, 1.0) * w))  # numpy's float64 times w: float64


def negated_twice(x, rate, w):
    return np.sum(x * (np.negative(np.negative(rate)) * w))


def plus_zero_indexed(x, rate):
    return np.sum(x * np.add(rate, 0.0)[None])


def times_numpy_one(x, rate):
    return np.sum(x * (rate * ONE)[None])  # rate * np.float64(1.0) is numpy's, not rate


@srcgrad.primitive
def halved(s):
    return float(s) / 2  # a rule of the user's that returns a Python float


@halved.defvjp
def _halved_vjp(g, out, s):
    return g / 2


def custom_then_numpy(x, s):
    v = np.multiply(halved(s), 2.0)  # numpy's float64 of the Python float
    return np.sum(x * v[None])


def squared_running(x, n):
    acc = 0.0  # a Python number first, then numpy's
    for i in range(n):
        acc = np.multiply(acc, acc) + x[i]
    return acc
