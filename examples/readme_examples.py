"""The functions whose generated code README.md shows (tests/test_readme.py keeps the
README's listings equal to what srcgrad generates for them)."""
import numpy as np


def f(x, y):
    z = np.log(3 * x ** 2 + 5 * x * y)
    return np.sum(z)


def rnn(W, U, xs, h):
    for t in range(len(xs)):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def energy(x):
    return np.sum(np.log(1 + x ** 2))


def mlp(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


class Model:
    """README.md, "Methods, lambdas, and what the function reads"."""

    def __init__(self):
        self.W = np.ones((3, 2))
        self.cfg = {"l2": 1e-2}

    def loss(self, x, y):
        r = np.tanh(x @ self.W) - y
        return np.mean(r ** 2) + self.cfg["l2"] * np.sum(self.W ** 2)


def noisy_loss(x, seed):
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=x.shape)
    print("evaluating at", x)
    return np.sum((x + 0.1 * noise) ** 2)
