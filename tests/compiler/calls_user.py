"""Functions for tests/compiler/test_call_findings.py: defaults, *args of arrays of
several shapes, reshapes of strided views."""
import numpy as np


def with_default(x, c=2.0):
    return np.sum(np.sin(x)) * c


def with_kwdefault(x, *, c=2.0):
    return np.sum(np.cos(x)) * c


def layers(x, *Ws):
    h = x
    for W in Ws:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def first_and_count(x, *rest):
    return np.sum(x * rest[0]) + len(rest) * np.sum(x ** 2)


def reshape_then_transpose(A, W):
    return np.sum(A.reshape(2, 6).T * W)


def transpose_then_reshape(A):
    B = A.T.reshape(2, 6)
    return np.sum(B ** 2 * np.arange(6.0))


class Model:
    """A model called as a function (`model(x)`), its weights and scale attributes."""

    def __init__(self, W, scale):
        self.W = W
        self.scale = scale

    def __call__(self, x):
        return np.sum(np.tanh(x @ self.W) * self.scale)


class SineModel(Model):
    def __call__(self, x):
        return np.sum(np.sin(x @ self.W))


class ConfiguredModel:
    """Models that compare (and hash) by their configuration, a common pattern."""

    def __init__(self, scale, W):
        self.scale, self.W = scale, W

    def __eq__(self, other):
        return isinstance(other, ConfiguredModel) and self.scale == other.scale

    def __hash__(self):
        return hash(self.scale)

    def __call__(self, x):
        return np.sum(np.tanh(x @ self.W) ** 2) * self.scale


class Unhashable:
    __hash__ = None

    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.sum(np.sin(x @ self.W))


def with_power(x, *, p=2.0):
    return np.sum(np.abs(x) ** p)


def weighted_by_position(x, ws, n):
    s = 0.0
    for i, w in enumerate(ws, start=1):          # a list argument (its leaves)
        s = s + i * np.sum(w * x) ** 2
    for i, xi in enumerate(x, start=2):          # an array's rows
        s = s + i * xi ** 2
    for i, k in enumerate(range(n), start=-1):   # a run-time range
        s = s + i * k * np.sum(x ** 2)
    return s
