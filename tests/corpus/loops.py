"""`for` loops: range with int arguments, zip, enumerate, reversed, rows of an array;
break and continue; loop-carried scalars, arrays and tuples; the list-and-stack pattern;
returns inside loops."""
import numpy as np


def range_n(x, n):
    total = 0.0
    for i in range(n):
        total = total + np.sum(x * i)
    return total


def range_start_stop(x, a, b):
    y = x
    for i in range(a, b):
        y = y * 1.1 + i
    return np.sum(y * y)


def range_step(x, a, b, step):
    y = x
    for i in range(a, b, step):
        y = np.sin(y) * i
    return np.sum(y)


def range_negative_step(x, n):
    y = x
    for i in range(n, 0, -1):
        y = y + np.cos(y) / i
    return np.sum(y)


def power_loop(x, n):
    y = np.ones_like(x)
    for _ in range(n):
        y = y * x
    return np.sum(y)


def zip_arrays(xs, ys):
    total = 0.0
    for a, b in zip(xs, ys):
        total = total + np.dot(a, b) ** 2
    return total


def enumerate_rows(X):
    total = 0.0
    for i, row in enumerate(X):
        total = total + i * np.sum(row ** 2)
    return total


def enumerate_start(X, w):
    total = 0.0
    for k, row in enumerate(X, 1):
        total = total + np.sum(np.tanh(row * w)) / k
    return total


def reversed_range(x, n):
    y = x
    for i in reversed(range(n)):
        y = np.sin(y) + i * y
    return np.sum(y)


def reversed_rows(X, h):
    for row in reversed(X):
        h = np.tanh(h + row)
    return np.sum(h)


def rows_loop(X):
    total = 0.0
    for row in X:
        total += np.sum(row ** 2)
    return total


def augassign_loop(x, n):
    y = x
    total = np.zeros_like(x)
    for i in range(n):
        y = y * 0.5
        total += y * i
    return np.sum(total)


def tuple_state(x, n):
    h, c = x, x * 0.5
    for _ in range(n):
        h, c = np.tanh(c) + h * 0.5, c * 0.9 + np.sin(h)
    return np.sum(h * c)


def rnn_cell(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h ** 2)


def rnn_batched(W, U, b, xs, h0):
    h = h0
    for t in range(len(xs)):
        h = np.tanh(h @ W + xs[t] @ U + b)
    return np.mean(h ** 2)


def lstm_like(X, Wf, Wc):
    h = np.zeros(Wf.shape[0])
    c = np.zeros(Wf.shape[0])
    for x in X:
        z = np.concatenate([h, x])
        f = 1.0 / (1.0 + np.exp(-(Wf @ z)))
        c = f * c + (1.0 - f) * np.tanh(Wc @ z)
        h = np.tanh(c) * f
    return np.sum(h) + np.sum(c ** 2)


def break_loop(x, n):
    y = x
    for _ in range(n):
        if np.sum(y) > 10.0:
            break
        y = y * 2.0
    return np.sum(y)


def continue_loop(X):
    total = 0.0
    for row in X:
        if row.sum() < 0:
            continue
        total = total + np.sum(np.sin(row))
    return total


def break_and_continue(X, limit):
    total = 0.0
    for row in X:
        if row[0] < 0:
            continue
        total = total + np.sum(row * row)
        if total > limit:
            break
    return total


def nested_for(X, n):
    total = 0.0
    for i in range(n):
        for row in X:
            total = total + np.sum(row) * (i + 1)
    return total ** 2


def triangular_loops(x, n):
    total = 0.0
    for i in range(n):
        for j in range(i):
            total = total + np.sum(x ** 2) * (i - j)
    return total


def loop_scalar_state(x, n):
    a = 1.0
    for _ in range(n):
        a = a * 0.5 + np.sum(x) * a
    return a


def zero_trip_possible(x, n):
    total = 0.0
    for i in range(n):
        total += np.sum(x) * (i + 1)
    return total


def index_with_loop_variable(x):
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] * x[i] * (i + 1)
    return total


def neighbour_differences(x):
    total = 0.0
    for i in range(1, len(x)):
        total = total + (x[i] - x[i - 1]) ** 2
    return total


def python_tuple_loop(x):
    y = x
    for k in (1.0, 2.0, 3.0):
        y = np.sin(y * k)
    return np.sum(y)


def zip_range_rows(X, n):
    total = 0.0
    for i, row in zip(range(n), X):
        total = total + np.sum(row) * i
    return total


def list_then_stack(x, n):
    hs = []
    h = x
    for _ in range(n):
        h = np.tanh(h * 1.5)
        hs.append(h)
    H = np.stack(hs)
    return np.sum(H ** 2)


def rnn_hidden_states(W, xs, h0):
    hs = []
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    H = np.stack(hs)
    return np.sum(H[-1]) + np.sum(H * H)


def list_stack_weighted(X):
    outs = []
    for i, row in enumerate(X):
        outs.append(np.sin(row) * (i + 1))
    return np.sum(np.stack(outs, axis=0) ** 2)


def return_inside_loop(x, n):
    for _ in range(n):
        if np.sum(x) > 3.0:
            return np.sum(x * x)
        x = x * 2.0
    return np.sum(x)


def return_first_big_row(X):
    for row in X:
        if np.max(row) > 1.0:
            return np.sum(row ** 2)
    return np.sum(X)
