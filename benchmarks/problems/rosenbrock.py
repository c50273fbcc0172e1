"""rosenbrock: the n-dimensional Rosenbrock function (neighbouring coordinates coupled)."""
import numpy as np

WRT = ("x",)
SIZES = {"tiny": {"n": 6}, "small": {"n": 10}, "large": {"n": 1_000_000}}


def describe(n):
    return f"n={n:.0e}" if n >= 1000 else f"n={n}"


def make_inputs(rng, n):
    return (rng.uniform(-1.5, 1.5, n),)


def loss(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def grad_hand(x):
    x0 = x[:-1]
    d = x[1:] - x0 * x0
    g = np.empty_like(x)
    g[:-1] = -400.0 * x0 * d - 2.0 * (1.0 - x0)
    g[-1] = 0.0
    g[1:] += 200.0 * d
    return (g,)


def make_torch_loss(torch):
    def loss_torch(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return loss_torch
