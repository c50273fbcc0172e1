"""Functions that mix boolean and integer arrays into a float computation, the way users
write masks and parity tests, for tests/compiler/test_dtype_soundness.py."""
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
