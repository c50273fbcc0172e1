"""Softplus, log(1 + e^u), written the ways users write it: a logistic regression class with
its parameters in a dict, binary cross-entropy on logits, a softplus hidden layer. For
tests/compiler/test_softplus.py."""
import numpy as np


class LogisticRegression:
    def __init__(self, l2=0.01):
        self.l2 = l2

    def loss(self, params, X, y):
        """y in {-1, +1}."""
        margins = y * (X @ params["w"] + params["b"])
        return np.mean(np.log1p(np.exp(-margins))) + 0.5 * self.l2 * np.sum(params["w"] ** 2)


def bce_with_logits(logits, targets):
    """targets in {0, 1}: -t log s(z) - (1 - t) log(1 - s(z)) = log(1 + e^z) - t z."""
    return np.sum(np.log1p(np.exp(logits)) - targets * logits) / logits.shape[0]


def softplus_net(W1, W2, X):
    h = np.log1p(np.exp(X @ W1))
    return np.sum((h @ W2) ** 2)


def make_data(n=20, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.normal(size=n) > 0, 1.0, -1.0)
    return {"w": rng.normal(size=d), "b": np.array(0.2)}, X, y
