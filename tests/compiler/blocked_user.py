"""Functions on large arrays written the way users write them, for
tests/compiler/test_blocked.py (blocked regions of specialized numpy variants)."""
import numpy as np


def softplus_energy(x, y):
    """An elementwise chain: sines, exponentials and a log, summed."""
    s = np.sin(x) * np.cos(y)
    e = np.exp(0.5 * s)
    return np.sum(np.log1p(e) + np.tanh(x * y) ** 2)


def dense_layer(X, w, b):
    """A row vector and a (1, m) bias broadcast against an (n, m) batch."""
    h = np.tanh(X * w + b)
    return np.mean(h * h)


def column_scaled(X, c):
    """A column (n, 1) against an (n, m) batch: the column is cut into blocks too."""
    return np.sum(np.exp(-X * c) * X)


def leaky(x, slope):
    """A comparison (a boolean array) and np.where inside the chain."""
    y = np.where(x > 0.0, x, slope * x)
    return np.sum(y * y + np.abs(x))


class Oscillator:
    """A method with parameters on the instance and a loop over steps, its body elementwise
    on large arrays."""

    def __init__(self, damping, steps):
        self.damping = damping
        self.steps = steps

    def energy(self, q, p):
        for _ in range(self.steps):
            p = p - 0.1 * np.sin(q) - self.damping * p
            q = q + 0.1 * p
        return np.sum(0.5 * p * p + (1.0 - np.cos(q)))


def rosenbrock(x):
    """Shifted slices of one array."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def energy_and_field(x):
    """Two outputs of one region."""
    u = np.exp(-x * x)
    return np.sum(u * np.cos(3.0 * x)), u


def smoothness(x, lam=0.5):
    curvature = x[2:] - 2.0 * x[1:-1] + x[:-2]
    return lam * np.sum(curvature ** 2) + np.sum(np.diff(x) ** 2) + np.sum(x * x)


def path_curvature(u):
    """A path of points in rows: its second differences, under a robust penalty."""
    d = u[2:] - 2.0 * u[1:-1] + u[:-2]
    return np.sum(np.log1p(d * d))


def long_chain(x):
    a = np.sin(x)
    b = np.cos(x)
    c = np.exp(a * b)
    d = np.tanh(c) + a
    e = np.sin(d * x)
    f = np.log(e * e + 1.0) * b
    g = np.tanh(f) + c
    h = np.exp(0.5 * g) - d
    k = np.sin(h) * e
    m = np.tanh(k + e)
    return np.sum(np.sqrt(m * m + 2.0) * a)


def repeated_term(x, w=0.7):
    """The same term twice (t0 and t2 are one value): two equal terms of the sum of
    shifted slices its gradient is."""
    u, v = x, x
    t0 = np.tanh(u - w * v)
    u, v = x[:-1], x[:-1]
    t1 = u * v
    u, v = x, x
    t2 = np.tanh(u - w * v)
    return np.sum(t0) + np.sum(t1) + np.sum(t2)
