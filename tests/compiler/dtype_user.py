"""Functions that mix boolean and integer arrays into a float computation, the way users
write masks and parity tests, for tests/compiler/test_dtype_soundness.py."""
import math

import numpy as np


def even_rows(x, idx):
    """The lowest bit of an integer index: `idx & 1` is 0 or 1, not a truth value."""
    even = (idx & 1) == 0
    return np.sum(np.where(even, x * x, 3.0 * x))


def inverted_ints(x, k):
    """`~k` of an integer array is -k - 1."""
    return np.sum(x * ~k)


def xor_mask(x, k):
    a, b = k > 0, k % 3 == 0
    return np.sum(x * (a ^ b) + x * (a | b) - x * (a & ~b))


def doubled_mask(x, k):
    m = k > 0
    return np.sum(x * (m + m))          # m + m is m | m on booleans: 0 or 1


def mask_plus_zero_inverted(x, k):
    m = k > 0
    return np.sum(x * ~(m + 0))         # m + 0 is an int array: ~1 is -2


def mask_times_one_inverted(x, k):
    m = k > 0
    return np.sum(x * ~(m * 1))


def int8_divided_by_one(x, k8):
    return np.sum(x * ((k8 / 1) * 100))  # k8 / 1 is float64: no int8 wrap-around


def int_power_one(x, k):
    return np.sum(x * (k ** 1 // 2))


# ---- another array's dtype: `dtype=k.dtype`, `x.astype(k.dtype)` ---------------------------

def shifted_in_preallocated(x, k):
    out = np.zeros(x.shape, dtype=x.dtype)  # preallocated like the input, then filled
    out[1:] = x[:-1] * 2.0
    return np.sum(out * x) + np.sum(x * np.ones(x.shape, k.dtype))


def filled_like_counts(s, k):
    return np.sum(np.full_like(k, s) * 1.5)  # full_like of ints truncates s: no derivative


def converted_like(x, k):
    return np.sum(x.astype(k.dtype) * x) + np.sum(np.asarray(x * 2.7, dtype=k.dtype))


def made_in_dtype_of(x, k):
    z = np.zeros(x.shape[0], dtype=k.dtype) + np.full(x.shape[0], 2.5, dtype=k.dtype)
    e = np.eye(x.shape[0], dtype=k.dtype) + np.arange(2, dtype=k.dtype)[1]
    return np.sum(x * z) + np.sum(e @ x) + np.sum(np.zeros_like(x, dtype=k.dtype) + x)


def branch_on_dtype(x, k):
    if k.dtype == np.float64:
        return np.sum(x * k)
    return np.sum(x)


def written_into_new_arrays(x, k):
    out = np.zeros_like(x, dtype=k.dtype)        # new arrays: written into in place
    out[1:] = x[:-1] * 2.0
    acc = np.full_like(x, 2.0)
    acc[0] = x[1]
    ones = np.ones_like(x, dtype=np.float32)
    ones[2] = 3.0
    return np.sum(out * x) + np.sum(acc * x) + np.sum(ones * x)


# constants the optimizer folds into one, times an array of a narrow dtype: numpy converts
# each constant to that dtype (NEP 50), so the folded one must fit it too


def scaled_twice(w, k):
    return np.sum(w * (300.0 * (300.0 * k)))      # 90000 overflows float16


def scalings_multiplied(w, k):
    return np.sum(w * ((300.0 * k) * (300.0 * (k + 1.0))))


def negated_scaling(w, k):
    return np.sum(w * -(2 * k))                    # -2 is no uint8


def negated_ratio(w, k):
    return np.sum(w * -((2 / (k + 1)) * k))


def int_scaled_twice(w, k):
    return np.sum(w * (100 * (100 * k)))           # 10000 is no int8


def scaled_square(k):
    return np.sum(300.0 * (300.0 * k) * k)


def accumulated_in_float32(x):
    acc = np.zeros(x.shape[1], dtype=np.float32)     # `+=` keeps float32, as in numpy
    for t in range(x.shape[0]):
        acc += x[t]
    return np.sum(acc.astype(np.float64) * x[0]), acc


def scaled_in_an_int_array(x):
    z = np.full(x.shape, 3)                          # int: `z *= x` is numpy's TypeError
    z *= x
    return np.sum(z)


def scaled_with_defaults(x, lam=0.5, k=3):
    # Python scalars: weak, the array's dtype stays (numpy 2)
    y = x * lam + lam * lam
    z = np.maximum(y, lam) * k
    return np.sum(z * z), z


def scaled_by_math(x, lam=0.25):
    # math.sqrt and float() give Python floats: weak, the array's dtype stays
    s = float(np.sum(x * x))
    return np.sum(x * math.sqrt(lam) + x * s), x * math.log(lam)


def updated_python_floats(x):
    s = float(x[0])
    s += 1.0
    t = math.sin(x[1])
    t += x[2]
    return s * x[1] + t * t


def scaled_by_a_0d_array(x):
    """np.asarray(0.5) is a 0-d float64 array: not weak like the Python float 0.5."""
    return np.sum(x * np.asarray(0.5)) * 2.0 + np.sum(x * 0.25)


def squared_masks(x):
    """np.square of a bool mask is int8 (True**2 counts as 1): the sum of two is 2."""
    m = x > 0.5
    return np.sum(x * (np.square(m) + np.square(m)))


def sines_of_counts(x, k):
    return np.sum(np.sin(k) * x + np.sqrt(k) * x * x)


def scaled_xlogy(x):
    """scipy.special.xlogy of a float32 array and a Python float is float64 (scipy's
    promotion, not numpy's weak scalar): 1e40 fits."""
    import scipy.special

    y = scipy.special.xlogy(x, 3.0) * 1e30 * 1e10
    return np.sum(np.log(y[1:] + y[:-1]))


def scaled_copysign(x, s):
    """np.copysign of a float32 x and a float64 sign is float64."""
    y = np.copysign(x, s) * 1e30 * 1e10
    return np.sum(np.log(y[1:] + y[:-1]))


def trigamma_sum(x):
    import scipy.special

    return np.sum(scipy.special.polygamma(1, x) * 2.0)


def any_plus_all(x, m):
    """np.any(m) + np.all(m) is numpy's bool True: x times 1."""
    return np.sum(x * (m.any() + m.all()))


def product_of_two_counts(x, k):
    return np.sum(x * (k[0] * k[1]))


def sum_of_two_flags(x, m):
    return np.sum(x * (m[0] + m[1]))


def squared_largest(x, k):
    return np.sum(x * (k.max() * k.max()))


def smallest_plus_100(x, k):
    return np.sum(x * (k.min() + 100))


def difference_of_counts(x, k):
    return np.sum(x * (k[0] - k[1]))


def running_product(x, k):
    acc = k[0]
    for i in range(1, 5):
        acc = acc * k[i]
    return np.sum(x * acc)
