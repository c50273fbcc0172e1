"""Helpers that the corpus calls across a module boundary (loops and branches inside)."""
import numpy as np

DECAY = 0.9


def softplus(x):
    return np.log1p(np.exp(x))


def square(x):
    return x * x


def layer(h, w, b):
    return np.tanh(h * w + b)


def repeat_tanh(x, n):
    y = x
    for _ in range(n):
        y = np.tanh(y) + 0.1 * x
    return y


def split_stats(x):
    m = np.mean(x)
    return m, np.sum((x - m) ** 2)


def scaled(x, scale=2.0, shift=0.0):
    return x * scale + shift


def clip_norm(x, limit):
    norm = np.sqrt(np.sum(x * x))
    if norm > limit:
        return x * (limit / norm)
    return x


def decay(h):
    return h * DECAY


def chain_outer(x):
    return chain_inner(x) * 2.0


def chain_inner(x):
    return np.sin(x) + square(x)


def softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def smooth_step(x):
    # a helper with a branch on a run-time value and an early return
    s = np.sum(x)
    if s < 0:
        return np.zeros_like(x) + 0.5 * np.exp(s)
    return x * 0.25 + 0.5
