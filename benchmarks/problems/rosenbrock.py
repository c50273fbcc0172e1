"""rosenbrock: the n-dimensional Rosenbrock function (neighbouring coordinates coupled).

Hand-written gradients (all timed; the suite takes the fastest in each run as the reference),
with d = x[1:] - x[:-1]^2, g[:-1] = (2 - 400 d) x[:-1] - 2 and g[1:] += 200 d:
- `grad_hand`: that formula in few numpy calls (the fastest for small n),
- "blocked": the same in blocks of BLOCK elements, in place in the result with scratch
  arrays of one block, so a large x is read once and no temporary the size of x is made
  (the fastest for large n),
- "simple": the straightforward form, -400 x0 d - 2 (1 - x0) with a temporary for each
  operation.
"""
import numpy as np

WRT = ("x",)
SIZES = {"tiny": {"n": 6}, "small": {"n": 10}, "large": {"n": 1_000_000}}


def describe(n):
    return f"n={n:.0e}" if n >= 1000 else f"n={n}"


def make_inputs(rng, n):
    return (rng.uniform(-1.5, 1.5, n),)


def loss(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


BLOCK = 65536


def grad_hand(x):
    x0 = x[:-1]
    d = x[1:] - x0 * x0
    g = np.empty_like(x)
    g[:-1] = (2.0 - 400.0 * d) * x0 - 2.0
    g[-1] = 0.0
    g[1:] += 200.0 * d
    return (g,)


def grad_hand_blocked(x):
    n = x.shape[0]
    g = np.empty_like(x)
    d = np.empty_like(x, shape=(max(1, min(BLOCK, n - 1)),))
    mul, sub = np.multiply, np.subtract
    carry = 0.0                         # 200 d of the previous block's last element
    for s in range(0, n - 1, BLOCK):
        e = min(s + BLOCK, n - 1)
        x0, dd, gs = x[s:e], d[:e - s], g[s:e]
        mul(x0, x0, out=dd)
        sub(x[s + 1:e + 1], dd, out=dd)     # d = x1 - x0^2
        mul(dd, -400.0, out=gs)
        gs += 2.0
        gs *= x0
        gs -= 2.0                           # (2 - 400 d) x0 - 2
        gs[0] += carry
        dd *= 200.0
        gs[1:] += dd[:-1]
        carry = dd[-1]
    g[-1] = carry
    return (g,)


def grad_hand_simple(x):
    x0 = x[:-1]
    d = x[1:] - x0 * x0
    g = np.empty_like(x)
    g[:-1] = -400.0 * x0 * d - 2.0 * (1.0 - x0)
    g[-1] = 0.0
    g[1:] += 200.0 * d
    return (g,)


HAND_VARIANTS = {"blocked": grad_hand_blocked, "simple": grad_hand_simple}


def make_torch_loss(torch):
    def loss_torch(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return loss_torch
