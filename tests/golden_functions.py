"""The functions whose generated gradient source is kept in tests/golden/ (one file each).

Keep this module stable: the generated source quotes its lines (`(golden_functions.py:12)`),
so an edit here changes every golden file. Regenerate them with

    SRCGRAD_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_golden.py
"""
import numpy as np


def poly(x, y):
    z = np.log(3 * x ** 2 + 5 * x * y)
    return np.sum(z)


def logistic_regression(W, b, X, y):
    """Mean negative log-likelihood with an L2 penalty."""
    z = X @ W + b
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    return nll + 0.01 * np.sum(W ** 2)


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return 0.5 * np.mean((out - Y) ** 2)


def softmax_cross_entropy(W, X, labels):
    logits = X @ W
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    picked = log_probs[np.arange(X.shape[0]), labels]
    return -np.mean(picked)


def indexing(x, idx):
    head = x[:2, 1:]
    rows = x[idx]
    return np.sum(head ** 2) + np.sum(rows * x[-1]) + x[0, 0]


def branch(x, y):
    if np.sum(x) > 0:
        z = np.sin(x) * y
    else:
        z = np.cos(x) + y
    return np.sum(z * z)


def rnn_loop(W, U, xs, h):
    for t in range(len(xs)):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def while_break(x, limit):
    s = x
    n = 0
    while np.sum(s * s) < limit:
        s = s * 1.5 + 0.1
        n = n + 1
        if n >= 20:
            break
    return np.sum(np.sin(s))


def rosenbrock(x):
    # the product rule's terms share x[:-1]: the gradient takes it out once
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
