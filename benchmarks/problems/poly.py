"""poly: z = sum(log(3 x^2 + 5 x y)), the README's example, on vectors of n elements.

Hand-written gradients (all timed; the suite takes the fastest in each run as the reference):
- `grad_hand`: the simplified form dz/dy = 1 / (0.6 x + y), dz/dx = (1.2 + y / x) dz/dy:
  six numpy calls, and for large n no temporary beyond the two results (numpy reuses a
  temporary operand in place); writing the same with `out=`, or in cache-sized blocks,
  was no faster at either size,
- "simple": the direct form, r = 1 / (3x^2 + 5xy), (6x + 5y) r and 5x r (twelve calls,
  a temporary array for each).
"""
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
    gy = 1.0 / (x * 0.6 + y)           # 5 / (3x + 5y)
    return (y / x + 1.2) * gy, gy      # (6x + 5y) / (3x^2 + 5xy)


def grad_hand_simple(x, y):
    r = 1.0 / (3.0 * x * x + 5.0 * x * y)
    return (6.0 * x + 5.0 * y) * r, 5.0 * x * r


HAND_VARIANTS = {"simple": grad_hand_simple}


def make_torch_loss(torch):
    def loss_torch(x, y):
        return torch.sum(torch.log(3 * x ** 2 + 5 * x * y))
    return loss_torch
