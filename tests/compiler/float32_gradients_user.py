"""Losses on float32 arrays whose gradient meets a constant of numpy's own dtype: a seed
folded into an array (the derivative of a reduction over every axis, of a trace), a
product whose function makes an array of a Python float (np.dot, np.inner,
np.tensordot of a 0-d result). Their gradient must be float32, as the argument is."""
import numpy as np


def max_over_axis(x):
    return np.sum(np.max(x, axis=0))


def amax_over_all_axes(X):
    return np.amax(X, axis=(0, 1)) * 2.0


def product_over_none(X):
    return np.sum(np.prod(X, axis=None))


def min_over_all_axes(X):
    return np.min(X, axis=(0, 1)) - 1.0


def trace_of_sine(X):
    return np.trace(np.sin(X))


def traces(X):
    return np.trace(X, offset=1) + np.trace(X * X)


def dotted(a):
    return np.dot(a, a[::-1] * 0.5)


def inner(a):
    return np.sum(np.inner(a, a + 1.0))


def contracted(X):
    return np.tensordot(X, X, axes=2)


def kron_sum(X):
    return np.sum(np.kron(X, X[:1]) ** 2)


def tiny_scale(x):
    return np.sum(np.exp(x) * 1e-300)  # (float32: exp(800) is inf, 1e-300 is 0: nan)
