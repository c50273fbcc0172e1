"""A loop's variable after the loop, as C-style and search code reads it: the last index,
the last item, the index a `break` stopped at, the pair `enumerate` gave last."""
import numpy as np


def last_index(x):
    i = 0
    for i in range(x.shape[0]):
        pass
    return x[i] * 2.0


def last_item(x):
    v = 0.0
    for v in x:
        pass
    return v * 3.0


def first_above(x, level):
    k = 0
    for k in range(x.shape[0]):
        if x[k] > level:
            break
    return x[k] * 2.0 + np.sum(x[:k] ** 2)


def last_pair(x):
    i, v = 0, 0.0
    for i, v in enumerate(x):
        if v > 2.5:
            break
    return v * i


def last_cell(X):
    i = j = 0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] > 2.5:
                break
    return X[i, j] ** 2


def unbound_after(x):
    for i in range(x.shape[0]):
        pass
    return x[i]
