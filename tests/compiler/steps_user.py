"""Loops over time written as people write them, for tests/compiler/test_steps.py."""
import numpy as np


def rnn(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def gru_like(Wz, Wh, X, h0):
    """Two gates' worth of saved values per step, a product of two of them."""
    h = h0
    for t in range(X.shape[0]):
        z = 1.0 / (1.0 + np.exp(-(X[t] @ Wz + h @ Wh)))
        c = np.tanh(X[t] @ Wh + h)
        h = z * h + (1.0 - z) * c
    return np.sum(h ** 2)


def decayed_sum(w, X):
    """A forward loop whose elementwise work on X[t] is the same at every step."""
    s = np.zeros_like(w)
    for t in range(X.shape[0]):
        s = 0.9 * s + np.exp(-X[t] ** 2) * w
    return np.sum(s * s)


def rnn_break(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        if np.max(h) > 10.0:                     # never true: the loop's length is not known
            break
    return np.sum(h * h)


def rnn_branch(Wx, Wh, b, X, h0):
    """A value saved in one branch of the step only."""
    h = h0
    for t in range(X.shape[0]):
        a = X[t] @ Wx + h @ Wh + b
        if t % 2 == 0:
            h = np.tanh(a)
        else:
            h = np.sin(a)
    return np.sum(h * h)


def rnn_nested(Wx, Wh, b, X, h0):
    h = h0
    for epoch in range(2):
        for t in range(X.shape[0]):
            h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def rnn_logged(Wx, Wh, b, X, h0):
    """A statement that runs as written in the step (it reads a value, changes nothing)."""
    h = h0
    norms = []
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        norms.append(float(np.linalg.norm(h)))
    return np.sum(h * h)


def rnn_from_one(Wx, Wh, b, X, h0):
    """Steps 1..T-1 only: the first slot of each array of steps is never written."""
    h = h0
    for t in range(1, X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def rnn_every_state(Wx, Wh, b, X, h0):
    """Every state in the loss, kept in a preallocated array as well as carried."""
    T = X.shape[0]
    H = np.zeros((T,) + h0.shape)
    h = h0
    for t in range(T):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        H[t] = h
    return np.sum(H ** 2) + np.sum(h * X[0][:, :1])


def rnn_twice(Wx, Wh, b, X, h0):
    """Two passes over the same inputs, the second starting where the first ended."""
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    g = h
    for t in range(X.shape[0]):
        g = np.tanh(X[t] @ Wx + g @ Wh) * h
    return np.sum(g * g) + np.sum(h)


def rnn_broadcast_step(w, X, h0):
    """The state (2, 4) times a cotangent of one row per step: the product broadcasts."""
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] * w + h[:1] * 0.5) * h
    return np.sum(h * h)


def decayed_from_one(w, X):
    """decayed_sum over steps 1..T-1 only."""
    s = np.zeros_like(w)
    for t in range(1, X.shape[0]):
        s = 0.9 * s + np.exp(-X[t] ** 2) * w
    return np.sum(s * s)


def weighted_steps(w, X):
    """A weight array of the user's own, made before the loop and read at each step."""
    W = np.cos(X) * 2.0
    s = np.zeros_like(w)
    for t in range(X.shape[0]):
        s = 0.5 * s + np.sin(X[t] * w) * W[t]
    return np.sum(s * s) + np.sum(W[0])


def ema_tanh(alpha, x):
    """Exponential smoothing of a 1-d signal: each step of x is a number."""
    s = 0.0 * alpha
    for t in range(x.shape[0]):
        s = alpha * s + np.tanh(x[t])
    return s * s


def rnn_pooled(Wx, Wh, b, X, h0):
    """The states summed over the batch and the steps as the loop goes."""
    h = h0
    pooled = np.zeros_like(b)
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        pooled = pooled + np.sum(h, axis=0)
    return np.sum(pooled ** 2) + np.sum(h)


def rnn_pooled_feedback(Wx, Wh, b, X, h0):
    """rnn_pooled, each step reading the running sum: it is needed at every step."""
    h = h0
    pooled = np.zeros_like(b)
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b + 0.1 * pooled)
        pooled = pooled + np.sum(h, axis=0)
    return np.sum(pooled ** 2)


def projected_then_scanned(W, X):
    """X @ W made once, before the loop (its adjoint multiplies by W.T outside any loop)."""
    Y = X @ W
    s = np.zeros(W.shape[1])
    for t in range(X.shape[0]):
        s = np.tanh(s + Y[t])
    return np.sum(s ** 2)


def rnn_inputs(T=6, batch=2, d_in=3, d_hidden=4, dtype=np.float64):
    rng = np.random.default_rng(7)
    return tuple(a.astype(dtype) for a in (
        rng.normal(0.0, 0.5, (d_in, d_hidden)), rng.normal(0.0, 0.4, (d_hidden, d_hidden)),
        rng.normal(0.0, 0.1, d_hidden), rng.normal(size=(T, batch, d_in)),
        rng.normal(0.0, 0.1, (batch, d_hidden))))


def gru_inputs(T=5, batch=2, d=3):
    rng = np.random.default_rng(8)
    return (rng.normal(0.0, 0.5, (d, d)), rng.normal(0.0, 0.5, (d, d)),
            rng.normal(size=(T, batch, d)), rng.normal(0.0, 0.1, (batch, d)))
