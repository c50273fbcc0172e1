"""Constructs outside srcgrad's subset. Each offending line ends with a `# <-` marker that
names what the compiler must refuse there; tests/test_corpus.py reads the marker's line."""
import numpy as np


def uses_try(x):
    try:  # <- try
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def uses_with(x):
    with np.errstate(all="ignore"):  # <- with
        y = np.log(x)
    return np.sum(y)


def generator_statement(x):
    for i in range(3):
        yield np.sum(x * i)  # <- yield


def generator_expression_value(x):
    y = yield x  # <- yield
    return np.sum(y)


def subscript_assignment(x):
    # writes into the caller's array: refused
    x[0] = x[1]  # <- subscript assignment
    return np.sum(x * x)


def subscript_assignment_in_loop(x, n):
    y = x  # the caller's array, under another name
    for i in range(n):
        y[i] = y[i] * 2.0  # <- subscript assignment
    return np.sum(y)


def recursive_power(x, n):
    if n == 0:
        return np.sum(x)
    return recursive_power(x * 2.0, n - 1)  # <- recursive call


def recursive_in_loop(x, n):
    total = 0.0
    for _ in range(n):
        total = total + recursive_in_loop(x, 0)  # <- recursive call
    return total + np.sum(x)


def return_in_nested_loops(x):
    for i in range(3):
        for j in range(3):
            x = x * 1.1 + 0.1 * np.cos(x)
            if i == 1 and j == 1:
                return np.sum(x ** 2)  # <- nested return
    return np.sum(x)
