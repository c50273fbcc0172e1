"""The constructs mixed: branches in loops, loops in branches, early exits, nested loops,
calls inside loops, small models written with loops."""
import numpy as np

from .helpers_other_module import softmax, square


def branch_in_loop(X):
    total = 0.0
    for row in X:
        if row.sum() > 0:
            total = total + np.sum(row ** 2)
        else:
            total = total - np.sum(np.sin(row))
    return total


def loop_in_branch(x, n):
    if x.sum() > 0:
        y = x
        for _ in range(n):
            y = np.sin(y) + x
    else:
        y = x * 2.0
    return np.sum(y * y)


def loops_in_both_branches(x, n):
    y = x
    if n % 2 == 0:
        for i in range(n):
            y = y * 0.9 + i
    else:
        while np.sum(y * y) < 20.0:
            y = y * 1.5
    return np.sum(y)


def loop_in_elif(x, n):
    s = np.sum(x)
    if s > 1.0:
        y = x * 2.0
    elif s > -1.0:
        y = np.zeros_like(x)
        for i in range(n):
            y = y + np.cos(x * i)
    else:
        y = x
        while np.sum(y * y) > 1.0:
            y = y * 0.5
    return np.sum(y)


def rows_loop_in_branch(X, w):
    if np.sum(w) > 0:
        acc = 0.0
        for row in X:
            acc = acc + np.tanh(np.dot(row, w))
        return acc
    return np.sum(X * w)


def rnn_with_gate(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        if t % 2 == 0:
            h = np.tanh(W @ h + xs[t])
        else:
            h = h * 0.5 + xs[t]
    return np.sum(h ** 2)


def mlp_layers(x, Ws, n_hidden):
    h = x
    for i, W in enumerate(Ws):
        h = W @ h
        if i < n_hidden:
            h = np.tanh(h)
    return np.sum(h ** 2)


def unrolled_descent(x, target, n, lr):
    for _ in range(n):
        x = x - lr * 2.0 * (x - target)
    return np.sum(x ** 3)


def early_exit_accumulate(X, threshold):
    acc = np.zeros(X.shape[1])
    for row in X:
        if np.max(row) > threshold:
            break
        acc = acc + row * row
    return np.sum(np.sqrt(acc + 1.0))


def nested_loops_inner_break(X, limit):
    total = 0.0
    for row in X:
        partial = 0.0
        for j in range(row.shape[0]):
            partial = partial + row[j] ** 2
            if partial > limit:
                break
        total = total + partial
    return total


def while_in_for(X):
    total = 0.0
    for row in X:
        y = row
        while np.sum(np.abs(y)) > 1.0:
            y = y * 0.5
        total = total + np.sum(y)
    return total


def for_in_while(x, n):
    y = x
    k = 0
    while np.sum(y) < 20.0 and k < 10:
        for i in range(n):
            y = y + 0.1 * np.exp(-y * i)
        k = k + 1
    return np.sum(y)


def calls_in_nested_loops(X, n):
    total = 0.0
    for _ in range(n):
        for row in X:
            total = total + np.sum(square(np.sin(row)))
    return total


def attention(Q, K, V):
    total = 0.0
    for q in Q:
        w = softmax(K @ q)
        out = V.T @ w
        total = total + np.sum(out ** 2)
    return total


def horner(coeffs, x):
    y = np.zeros_like(x)
    for c in reversed(coeffs):
        y = y * x + c
    return np.sum(y)


def running_product(x):
    p = x[0]
    for i in range(1, len(x)):
        p = p * x[i]
    return p


def piecewise_schedule(x, n, k):
    y = x
    for i in range(n):
        lr = 0.1 if i < k else 0.01
        y = y - lr * np.sin(y)
    return np.sum(y * y)


def euler_ode(y0, k, n):
    y = y0
    dt = 1.0 / n
    for _ in range(n):
        y = y + dt * (-k * y + np.sin(y))
    return np.sum(y)


def masked_accumulate(X, w):
    total = 0.0
    count = 0
    for row in X:
        score = np.dot(row, w)
        if score < 0:
            continue
        total = total + score ** 2
        count = count + 1
    return total / (count + 1)


def gated_branches_in_while(x):
    y = x
    i = 0
    while i < 6:
        if np.sum(y) > 0:
            y = y - 0.3 * np.tanh(y)
        else:
            y = y + 0.2 * y * y
        i += 1
    return np.sum(y)


def loop_branch_return_after(X, n):
    best = 0.0
    for i in range(n):
        s = np.sum(X[i] ** 2)
        if s > best:
            best = s
    if best > 4.0:
        return best
    return best * 2.0


def seq2one_with_list(W, xs, h0):
    hs = []
    h = h0
    for x in xs:
        h = np.tanh(W @ h + x)
        if np.sum(h) > 0:
            hs.append(h)
        else:
            hs.append(-h)
    return np.sum(np.stack(hs) ** 2)


def stateful_pair_with_break(x, n):
    h, c = x, np.zeros_like(x)
    for t in range(n):
        c = c + np.tanh(h) * (t + 1)
        h = h * 0.8 + 0.1 * c
        if np.sum(c) > 30.0:
            break
    return np.sum(h) + np.sum(c)


def loop_return_from_branch_in_while(x):
    y = x
    k = 0
    while k < 10:
        k = k + 1
        if np.sum(y * y) > 50.0:
            return np.sum(y) * k
        y = y * 1.5 + 0.1
    return np.sum(y)
