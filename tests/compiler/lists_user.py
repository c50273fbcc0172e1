"""Lists grown in loops and read from the end, the way recurrent code is written, for
tests/compiler/test_list_positions.py."""
import numpy as np


def rnn_states(W, x):
    hs = [x]
    for _ in range(4):
        hs.append(np.tanh(hs[-1] @ W))
    return np.sum(hs[-1]) + 0.5 * np.sum(np.stack(hs) ** 2)


def second_order(a, x0, x1):
    xs = [x0, x1]
    for _ in range(5):
        xs.append(a * xs[-1] - 0.5 * xs[-2])
    return np.sum(xs[2] * xs[-3]) + np.sum(xs[-1] ** 2)


def lagged(W, x, lag):
    hs = [x]
    for t in range(6):
        back = hs[-lag] if len(hs) >= lag else hs[0]
        hs.append(np.sin(back @ W) + 0.1 * hs[-1])
    return np.sum(hs[3] * hs[-1])


def too_far_back(x):
    hs = [x]
    for _ in range(2):
        hs.append(hs[-3] * 2.0)
    return np.sum(hs[-1])


def growing_items(x, n):
    hs = [x, x * 0.5]
    outs = []
    for t in range(n):
        hs.append(np.tanh(hs[-1]) + np.ones(3) * t)
        outs.append(hs[-1] * 2.0)
    return np.sum(np.stack(outs))
