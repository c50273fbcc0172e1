"""poly: z = sum(log(3 x^2 + 5 x y)), the README's example, on vectors of n elements."""
import numpy as np

WRT = ("x", "y")
SIZES = {"tiny": {"n": 5}, "small": {"n": 1}, "large": {"n": 1_000_000}}


def describe(n):
    return f"n={n:.0e}" if n >= 1000 else f"n={n}"


def make_inputs(rng, n):
    # positive inputs keep the log's argument positive
    return rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)


def loss(x, y):
    z = np.log(3 * x ** 2 + 5 * x * y)
    return np.sum(z)


def grad_hand(x, y):
    r = 1.0 / (3.0 * x * x + 5.0 * x * y)
    return (6.0 * x + 5.0 * y) * r, 5.0 * x * r


def make_torch_loss(torch):
    def loss_torch(x, y):
        return torch.sum(torch.log(3 * x ** 2 + 5 * x * y))
    return loss_torch
