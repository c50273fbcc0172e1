"""logreg: logistic loss (labels +-1) with an L2 penalty; gradient for weights and bias.

Hand-written gradients (all timed; the suite takes the fastest in each run as the reference):
- `grad_hand`: the margins' cotangent s = -y / (N (1 + exp(y (Xw + b)))) built in place in
  one array, the weight gradient as the vector-matrix product s X (no transpose), the
  products written `a.dot(b)` (the method: half the call cost of `np.dot` or `@`),
- "simple": the same formula with a new array for each operation and X.T @ s.
"""
import numpy as np

WRT = ("w", "b")
SIZES = {"tiny": {"n": 7, "d": 3}, "small": {"n": 10, "d": 5},
         "large": {"n": 1000, "d": 100}}
LAM = 0.01


def describe(n, d):
    return f"{n}x{d}"


def make_inputs(rng, n, d):
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    w = rng.normal(0.0, 0.1, d)
    b = np.array(0.1)
    return w, b, X, y


def loss(w, b, X, y):
    m = y * (X @ w + b)
    return np.mean(np.log1p(np.exp(-m))) + 0.5 * LAM * np.sum(w * w)


def grad_hand(w, b, X, y):
    t = X.dot(w)
    t += b
    t *= y
    np.exp(t, out=t)
    t += 1.0
    t *= -len(y)
    s = y / t                            # d loss / d(Xw + b)
    gw = s.dot(X)
    gw += LAM * w
    return gw, np.add.reduce(s)


def grad_hand_simple(w, b, X, y):
    m = y * (X @ w + b)
    s = y / (-len(y) * (1.0 + np.exp(m)))     # d loss / d(Xw + b)
    return X.T @ s + LAM * w, np.sum(s)


HAND_VARIANTS = {"simple": grad_hand_simple}


def make_torch_loss(torch):
    def loss_torch(w, b, X, y):
        m = y * (X @ w + b)
        return torch.mean(torch.log1p(torch.exp(-m))) + 0.5 * LAM * torch.sum(w * w)
    return loss_torch
