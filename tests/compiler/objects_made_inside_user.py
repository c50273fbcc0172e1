"""Objects a loss makes for itself (a counter, an accumulator) and changes through their
methods, in loops and branches: srcgrad runs that code as written. A name whose object a
loop carries or a branch merges is that object still; its methods are its class's, never
numpy's functions of the same name (`c.add()`, `c.mean()`)."""
import numpy as np


class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k=1):
        self.n += k
        return self

    def mean(self):  # (a name numpy's arrays have too)
        return self.n


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v
        return self.total


def counted_loss(x):
    c = Counter()
    total = 0.0
    for v in x:
        c.add()
        total = total + np.sin(v)
    return total * 2.0


def rebound_counter(x):
    c = Counter()
    for v in x:
        c = c.add(2)
    return np.sum(x ** 2)


def branch_counter(x, flag):
    if flag > 0:
        c = Counter()
    else:
        c = Counter().add(3)
    c.add()
    return np.sum(np.cos(x))


def counter_scale(x):
    c = Counter()
    for v in x:
        c = c.add()
    return np.sum(x) * c.mean()


def accumulated_in_a_loop(x):
    a = Accumulator()
    s = 0.0
    for v in x:
        s = a.add(v * v)
    return s


def accumulated_total(x):
    a = Accumulator()
    a.add(1.0)
    return a.total + np.sum(x)


class Shift:
    """An argument's object whose methods have numpy's names: `add` (which arrays lack)
    and `__add__`, which numpy's add of it would call instead."""

    def __init__(self, c):
        self.c = c

    def add(self, x):
        return x + self.c

    def __add__(self, x):
        return x * 0.0 + 100.0

    __radd__ = __add__


def made_and_called(x, scale=2.0):
    return Shift(scale).add(x).sum()


def shifted_loss(model, x):
    return np.sum(model.add(x) ** 2)


def clipped_loss(x):
    return np.sum(x.clip(-1.0, 1.5) ** 2) + np.sum(x.cumsum())


def scaled_by_int8_max(x):
    return np.sum(x * np.iinfo(np.int8).max)


def shifted_by_int16_range(x):
    info = np.iinfo(np.int16)
    return np.sum(x * info.max + info.min)


def scaled_by_a_numpy_scalar_made_here(x):
    s = np.float64(2.5)
    return np.sum(x * s) + np.float32(1.5) * np.sum(x)
