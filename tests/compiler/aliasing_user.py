"""Programs for test_aliasing.py: Python's own aliasing (a list two names hold, a branch
result that is one of its values, max() of arrays), written as people write them."""
import numpy as np

W = np.array([[1.0, 0.5], [-0.3, 0.8]])


def model(x):
    return np.tanh(W @ x)


def softmax_model(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


# -- max() and min() with a key -------------------------------------------------------------

def max_by_magnitude(a, b):
    return max(a, b, key=abs) ** 2


def smaller_sum(x):
    a, b = np.sin(x), np.cos(x)
    best = min([a, b], key=lambda c: np.sum(c))
    return np.sum(best * x)


def last_named_layer(x):
    layers = [("a", x * 2.0), ("c", x * 3.0), ("b", x * 4.0)]
    name, w = max(layers, key=lambda kv: kv[0])  # known when compiling: "c"
    return np.sum(w * x) + len(name)


# -- in-place operators of lists, dicts and sets -------------------------------------------

def collect(acc, v):
    acc += [v]


def features_by_helper(x):
    feats = [x ** 2]
    collect(feats, np.sin(x))
    return np.sum(feats[-1] * x) + len(feats)


def aliased_containers(x):
    feats = [x ** 2]
    alias = feats
    feats += [np.sin(x)]
    feats *= 2
    d = {"a": x}
    e = d
    d |= {"a": x ** 3}
    return np.sum(alias[-1] * x) + len(alias) + np.sum(e["a"])


def grows_callers_dict(x, log):
    log |= {"last": 1.0}
    return np.sum(x * x)


def appends_to_callers_list(x, params):
    params.append(x)
    return np.sum(params[0] * x)


# -- writes into a value that may be another ---------------------------------------------

def write_through_branch(x, c):
    y = np.sin(x)
    z = y if c > 0 else np.cos(x)
    z[0] = 0.0
    return np.sum(y * x)


def write_under_branch(x, c):
    y = np.sin(x)
    z = y if c > 0 else np.cos(x)
    y[0] = 0.0
    return np.sum(z * x)


def write_through_loop(x, n):
    y = np.sin(x)
    z = y * 2
    for _ in range(n):
        z = y
    z[0] = 5.0
    return np.sum(y * x)


def write_through_if_statement(x, c):
    y = np.sin(x)
    if c > 0:
        z = y
    else:
        z = y * 2
    z[1] = 3.0
    return np.sum(y * x)


def write_into_branch_result_alone(x, c):
    y = np.sin(x)
    z = y if c > 0 else np.cos(x)
    z[0] = 0.0
    return np.sum(z * x)  # y is not read again: the write is fine


def write_into_loop_state(x, n):
    h = np.zeros_like(x)
    for _ in range(n):
        h = np.tanh(h + x)
    h[0] = 0.0
    return np.sum(h * x)


def update_max_of_arrays(x):
    a = x * 1.0
    b = x * 2.0
    m = max(a, b)
    m += 1.0
    return np.sum(a * b)
