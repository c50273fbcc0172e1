"""Functions whose gradients tempt an in-place update of an array that a view still reads."""
import numpy as np


def transpose_then_update(x):
    a = x.T
    b = a * a
    a = a + b
    return np.sum(a * x.T)


def ravel_then_update(x):
    a = np.ravel(x)
    a = a + a * a
    return np.sum(a * np.ravel(x))


def reduce_then_update(x):
    s = np.sum(x, axis=0)
    s = s + s * s
    return np.sum(s * np.sum(x, axis=0))


def concat_then_update(x, y):
    c = np.concatenate([x, y])
    c = c + c * c
    return np.sum(c * np.concatenate([x, y]))


def slice_view_in_forward(x):
    a = x * 2.0
    v = a[1:]
    b = a + 1.0
    return np.sum(v * b[1:])


def expand_view_in_forward(x):
    a = x * 2.0
    v = np.expand_dims(a, 0)
    b = a + 1.0
    return np.sum(v * b)
