"""Functions the numba backend tests compile, written as users write them."""
import math

import numpy as np

from specialize_user import mlp_inputs, mlp_loss  # noqa: F401 (the same user code)

LAM = 0.01


def logreg(w, b, X, y):
    m = y * (X @ w + b)
    return np.mean(np.log1p(np.exp(-m))) + 0.5 * LAM * np.sum(w * w)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def elementwise(x, y):
    a = np.sin(x) * np.cos(y)
    b = np.exp(-a * a) + np.sqrt(x * x + 1.0)
    return np.sum(b * np.tanh(y) - np.log1p(x * x))


def reductions(x):
    m = np.max(x, axis=0, keepdims=True)
    n = np.min(x, axis=1)
    s = np.mean(x * x, axis=(0, 1))
    return np.sum(np.exp(x - m)) + np.sum(n * n) + s


def with_sort(x):
    # np.sort's gradient is a gather by argsort: not something the loops take
    return np.sum(np.sort(x) * np.arange(x.shape[0]))


def two_shapes(a, b):
    return np.sum(a * a) + np.sum(np.sin(b))


class Model:
    def __init__(self):
        self.scale = 2.0

    def loss(self, w, x):
        return np.sum(np.tanh(w * x) * self.scale)


def least_squares(w, X, y):
    r = X @ w - y
    return np.sum(r * r)


W_GLOBAL = np.linspace(-1.0, 1.0, 6).reshape(3, 2)


def reads_a_global(x):
    return np.sum(np.tanh(x @ W_GLOBAL) ** 2)


class Layer:
    """A model object: its weights are attributes, read at each call."""

    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.sum(np.tanh(x @ self.W) ** 2)


# numpy's meaning, where numba's own differs


def row_energy(W, i):
    return np.sum(np.tanh(W[i]) ** 2)            # i out of range: IndexError


def embedding(E, tokens):
    s = 0.0
    for t in tokens:
        s = s + np.sum(E[t] ** 2)
    return s


def ratio(x, y):
    return np.sum(x / y)                         # y = 0: inf, not ZeroDivisionError


def distance(p, q):
    return np.sqrt(np.sum((p - q) ** 2))         # p == q: nan gradient, as numpy


def scaled_counts(x, k):
    return np.sum(x * (k * 3))                   # an int8 k wraps in int8


def shifted_counts(x, k):
    return np.sum(x * (k - 5))                   # a uint8 k wraps in uint8


def dropout(x):
    mask = np.random.rand(*x.shape) > 0.5        # numpy's global generator
    return np.sum(x * mask)


def squared_mean(x):
    return np.mean(x) ** 2


def small_products(w, V, X):
    a = X @ w                                    # matrix @ vector
    b = a @ X                                    # vector @ matrix
    c = X.T @ (X * V)                            # matrix @ matrix, a transposed view
    return np.sum(np.tanh(a)) + np.sum(b * w) + np.sum(c * c)


def floored_to_a_tie(x):
    return np.sum(np.maximum(x, 0.1)) + np.sum(x * (x // 0.1))


def loss_and_stats(x):
    return np.sum(x * x), {"m": np.mean(x), "n": x.shape[0]}


def cumulative_energy(x):
    y = np.tanh(x) * x + 1.0
    return np.sum(np.cumsum(y) ** 2)


# neighbouring elements: finite differences, stencils, smoothness penalties

def total_variation(img, eps=1e-6):
    dx = img[1:, :-1] - img[:-1, :-1]
    dy = img[:-1, 1:] - img[:-1, :-1]
    return np.sum(np.sqrt(dx ** 2 + dy ** 2 + eps))


def smoothness(x, lam=0.5):
    curvature = x[2:] - 2.0 * x[1:-1] + x[:-2]
    return lam * np.sum(curvature ** 2) + np.sum(np.diff(x) ** 2)


def heat_steps(u, k):
    u = u.copy()
    for _ in range(3):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] = u[1:-1] + k * lap
    return np.sum(u ** 2 * np.sin(u))


def trapezoid_energy(y, t):
    dt = t[1:] - t[:-1]
    return np.sum(0.5 * dt * (y[1:] ** 2 + y[:-1] ** 2))


def penalized(x, lam=0.5):
    return np.sum(x ** 2) + lam * np.sum((x[1:] - x[:-1]) ** 2)


def normalized_energy(x, lam=0.25):
    s = float(np.sum(x * x))
    return np.sum(x * math.sqrt(lam)) + s * math.log1p(lam)


def exp_of_an_element(x):
    s = math.exp(x[1])  # a Python float (float64) in numpy, of any x's dtype
    return s + 0.0, s


def squared_count(x, n):
    return np.sum(x) * ((n * n) % 7)  # Python: exact; numba's int64 wraps past 2**63


def halved_by_index(x, i):
    return np.sum(x) * 2 ** -i  # Python: a float; numba's int power: 0


def by_count(x, n):
    return np.sum(x) * float(n // 3 + n % 5 - 1)  # (numba's // and % of ints are Python's)


def weighted_rows(M):
    total = 0.0
    for i in range(M.shape[0]):
        total = total + np.sum(M[i] ** 2) * (i + 1)  # (a loop index: a sum, never past 2**63)
    return abs(total)


def gated_softplus(x, y):
    s = np.tanh(x) * np.exp(-0.5 * x * x)
    return np.sum(s * y + np.log1p(np.exp(-np.abs(x))))


class Waves:
    """A sum of damped waves fitted to samples: the parameters as attributes."""

    def __init__(self, freq, phase):
        self.freq = freq
        self.phase = phase

    def loss(self, t, amp):
        arg = self.freq * t + self.phase
        model = amp * np.sin(arg) + 0.5 * np.cos(arg) * np.cos(t)
        return np.sum(model * model * np.exp(-0.01 * t * t))


WAVES = Waves(3.0, 0.25)


def sine_of_flag(x, flag):
    t = np.sin(flag)  # (numpy: float16 of a bool)
    return np.sum(np.sin(x * t))


def truncated_scale(x, s):
    k = int(s)
    return np.sum(x * k)


def scaled_sines(x, n):
    return np.sum(np.sin(x) * n)


def cubic_first(x):
    """A sum of squares with a cubic penalty on the first coordinate."""
    return np.sum(x ** 2) + x[0] ** 3


def corner_terms(x):
    return np.sum(np.sin(x)) + x[1, 2] ** 3 + np.exp(x[0, 0]) * x[2, 1]


def gated(x, y):
    """Masks combined with numpy's operators, as users write them."""
    inside = (x > 0.3) & (y < 1.0)
    outside = ~inside
    flip = (x < 0.5) ^ (y > 0.0)
    return np.sum(np.where(inside, x * y, 0.0)) + np.sum(np.where(outside | flip, y * y, x))


def relu_mask(x):
    m = (x > 0).astype(float)
    return np.sum(m * x * x)


def counts_as_floats(x, k):
    return np.sum(x * k.astype(np.float64)) + np.sum(x * np.asarray(k, dtype=np.float64))
