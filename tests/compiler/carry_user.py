"""Loops that carry a state and add a row of an argument at each step, as people write
them (exponential averages, recurrences, RNN cells): the adjoint loop accumulates each
step's cotangent into the argument's gradient while it carries the state's."""
import numpy as np


def ema(X):
    acc = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        acc = acc * 0.5 + X[t]
    return np.sum(acc ** 2)


def ema_reversed(X):
    acc = np.zeros(X.shape[1])
    for t in reversed(range(X.shape[0])):
        acc = acc * 0.5 + X[t]
    return np.sum(acc ** 2)


def ema_counting_down(X):
    acc = np.zeros(X.shape[1])
    for t in range(X.shape[0] - 1, -1, -1):
        acc = acc * 0.5 + X[t]
    return np.sum(acc ** 2)


def decay(a, X):
    s = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        s = a * s + X[t]
    return np.sum(s ** 2)


def tanh_recurrence(x):
    acc = 0.1 * np.ones(1)
    for i in range(x.shape[0]):
        acc = np.tanh(acc) + x[i]
    return np.sum(acc ** 2)


def rectified(X):
    h = np.ones(X.shape[1])
    for t in range(X.shape[0]):
        h = np.maximum(h - 0.3, 0.0) + X[t]
    return np.sum(h ** 2)


def rnn_cell(Wh, X):
    h = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        h = np.tanh(h @ Wh) + X[t]
    return np.sum(h ** 2)


def rnn_projected(Wh, X):
    h = np.zeros(Wh.shape[1])
    for t in range(X.shape[0]):
        h = np.tanh(h @ Wh) + X[t] @ Wh
    return np.sum(h ** 2)


def two_statements(X):
    s = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        s = s * 0.5
        s = s + X[t]
    return np.sum(s ** 2)


def augmented(X):
    s = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        s *= 0.5
        s += X[t]
    return np.sum(s ** 2)


def from_an_argument(h0, X):
    h = h0
    for t in range(0, X.shape[0], 2):
        h = np.exp(-h) + X[t]
    return np.sum(h ** 2)


def sum_of_squares_from_int(x):
    s = 0  # (a Python int: data from the first step on)
    for i in range(len(x)):
        s += x[i] ** 2
    return s


def weighted_while_from_int(x):
    s, i = 0, 0
    while i < 3:
        s = s + np.sum(np.sin(x)) * i
        i += 1
    return s
