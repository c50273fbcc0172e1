"""`while` loops whose trip count depends on the data; break, continue and returns in them."""
import numpy as np


def grow_until(x):
    s = x
    while np.sum(s) < 10.0:
        s = s * 1.5
    return np.sum(s * s)


def counter_while(x, n):
    i = 0
    y = x
    while i < n:
        y = np.sin(y) + x
        i += 1
    return np.sum(y)


def newton_sqrt(a):
    y = a
    while np.max(np.abs(y * y - a)) > 1e-3:
        y = 0.5 * (y + a / y)
    return np.sum(y)


def while_true_break(x):
    y = x
    while True:
        y = y * 0.5 + 0.1 * np.sin(y)
        if np.sum(y * y) < 1.0:
            break
    return np.sum(y)


def while_continue(x, n):
    i = 0
    y = x
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        y = y * np.cos(y) + 0.5
    return np.sum(y)


def halve_until_small(x):
    y = x
    while np.max(np.abs(y)) > 1.0:
        y = y / 2.0
    return np.sum(np.exp(y))


def two_conditions(x, n):
    i = 0
    y = x
    while i < n and np.sum(y) < 50.0:
        y = y * 1.3 + 0.1
        i = i + 1
    return np.sum(y)


def fibonacci_like(x, n):
    a, b = x, x * 0.5
    k = 0
    while k < n:
        a, b = b, a * 0.5 + b * 0.7
        k += 1
    return np.sum(a * b)


def countdown_parameter(x, n):
    y = x
    while n > 0:
        y = np.tanh(y * n)
        n = n - 1
    return np.sum(y)


def scalar_while(x):
    t = 0.0
    v = np.sum(x * x)
    while t < 3.0:
        v = v * 0.9 + np.sin(v)
        t = t + 1.0
    return v


def while_break_data(x, limit):
    y = x
    i = 0
    while i < 20:
        y = y * 1.2
        if np.sum(y) > limit:
            break
        i += 1
    return np.sum(y ** 2)


def while_return(x):
    y = x
    while np.sum(y) < 100.0:
        if np.max(y) > 8.0:
            return np.sum(y)
        y = y * 2.0
    return np.sum(y) * 0.5
