"""if/elif/else on run-time conditions, conditional expressions, and/or/not, returns in
branches."""
import numpy as np


def sign_branch(x):
    if x.sum() > 0:
        y = np.sin(x)
    else:
        y = np.cos(x) * 2.0
    return np.sum(y)


def elif_chain(x):
    s = np.sum(x)
    if s > 2.0:
        y = x ** 2
    elif s > -2.0:
        y = np.tanh(x) * s
    else:
        y = np.exp(x)
    return np.sum(y)


def int_threshold(x, n):
    if n > 3:
        y = x ** 3
    else:
        y = x * n
    return np.sum(y)


def nested_if(x, y):
    if x.sum() > 0:
        if y.sum() > 0:
            z = x * y
        else:
            z = x - y
    else:
        if y.mean() > 0:
            z = np.sin(x) + y
        else:
            z = x * x * y
    return np.sum(z)


def cond_expr(x):
    y = x * 2.0 if x.mean() > 0 else -x
    return np.sum(y ** 2)


def cond_expr_nested(x, a):
    z = np.exp(x) if a > 1 else (np.sin(x) if a > 0 else x ** 3)
    return np.sum(z)


def cond_expr_in_call(x):
    return np.sum(np.tanh(x if x.max() > 1.0 else 3.0 * x))


def and_condition(x, y):
    if x.sum() > 0 and y.sum() > 0:
        out = np.sum(x * y)
    else:
        out = np.sum(x) - np.sum(y)
    return out


def or_condition(x, y):
    if x.max() > 2.0 or y.min() < -2.0:
        out = np.sum(np.tanh(x + y))
    else:
        out = np.sum(x ** 2 + y)
    return out


def not_condition(x):
    if not x.max() > 1.0:
        x = x * 3.0
    return np.sum(np.sin(x))


def mixed_bool(x, n, flag):
    if (n > 2 and x.sum() > 0) or not flag:
        y = np.exp(-x * x)
    else:
        y = x * 0.5
    return np.sum(y)


def chained_compare(x):
    s = x.sum()
    if -1.0 < s < 1.0:
        y = x * s
    else:
        y = x / s
    return np.sum(y)


def early_return(x):
    if np.max(x) > 2.0:
        return np.sum(x)
    y = np.tanh(x)
    return np.sum(y * y)


def return_both_sides(x, y):
    if np.dot(x, y) > 0:
        return np.sum(x * y)
    else:
        return np.sum(x) * np.sum(y)


def return_in_elif(x, n):
    if n == 0:
        return np.sum(x)
    elif n == 1:
        return np.sum(x ** 2)
    elif n == 2:
        return np.sum(np.sin(x))
    return np.sum(x) * n


def branch_on_other_arg(x, w):
    if w.sum() > 0:
        y = x * w
    else:
        y = np.exp(x) - w
    return np.sum(y)


def branch_tuple_values(x):
    if x[0] > 0:
        a, b = x, x * 2.0
    else:
        a, b = x * 3.0, np.sin(x)
    return np.sum(a * b)


def branch_if_without_else(x):
    y = np.sin(x)
    if y.sum() < 0:
        y = y * y
    return np.sum(y + x)


def branch_constant_values(x):
    scale = 2.0 if x.sum() > 0 else 0.5
    return scale * np.sum(x ** 2)


def branch_on_shape(x):
    if x.shape[0] > 3:
        y = x[:3] * x[1:4]
    else:
        y = x * x
    return np.sum(y)


def branch_on_len_parity(x):
    if len(x) % 2 == 0:
        y = np.cos(x)
    else:
        y = np.sin(x)
    return np.sum(y)


def branch_absolute_value(x, y):
    d = np.sum(x - y)
    if d < 0:
        d = -d
    return d * np.sum(x)


def branch_output_independent(x, n):
    if n > 0:
        return np.sum(x * x)
    return 0.0


def branch_nested_returns(x, n):
    if x.sum() > 0:
        if n > 1:
            return np.sum(x) * n
        return np.sum(np.exp(x))
    if n > 1:
        return np.sum(x ** 2)
    return np.sum(x)


def branch_after_branch(x):
    if x[0] > 0:
        x = x * 2.0
    if x[1] > 0:
        x = np.sin(x)
    else:
        x = x - 1.0
    return np.sum(x * x)
