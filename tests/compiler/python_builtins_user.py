"""Functions that call Python's abs(), max() and min() on Python numbers (a count, an
index, a setting) next to numpy code that is differentiated: the way such code is
written, not the way srcgrad would like it."""
import numpy as np


def power_of_count(x, n):
    return np.sum(x) * (abs(n) ** 40 % 7)  # a Python int does not wrap at 2**63


def floored_setting(x, level):
    return np.sum(x) * max(1.0, level)  # Python: max(1.0, nan) is 1.0


def halved_by_distance(x, i):
    return np.sum(x) * 2 ** -abs(i - 1)  # a Python int takes a negative power


def capped_count(x, n):
    return np.sum(x) * (max(n, 2) ** 40 % 7)


def clamped(x, lo, hi, v):
    return np.sum(x) * min(max(lo, v), hi)


def widest(x, a, b, c):
    w = max(a, b, c)
    return np.sum(x * w) + min(a, b, c)


def absolute_total(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * x[i] - 1.0
    return abs(acc)  # (a carry from a Python float: the derivative flows through abs)


def running_max(x):
    best = 0.0
    for i in range(x.shape[0]):
        best = max(best, x[i])
    return best * np.sum(x)


def larger_of_halves(x):
    h = x.shape[0] // 2
    return max(np.sum(x[:h] ** 2), np.sum(x[h:] ** 2))


class Schedule:
    def __init__(self, warmup):
        self.warmup = warmup

    def rate(self, step):
        return min(1.0, (step + 1) / self.warmup) * 2 ** -max(0, step - self.warmup)


def scheduled(x, step):
    return np.sum(x ** 2) * Schedule(3).rate(step)


def mean_of_first(x):
    n = min(x.shape[0], 3)  # (a shape's int: Python's min, whose result has no .shape)
    return np.sum(x[:3] / n)


def weighted_by_count(x, items):
    return np.sum(x * (1.0 / max(len(items), 1)))


def scaled_by_length(x):
    return np.sum(x * abs(x.shape[0] - 6))


def power_of_length(x):
    return np.sum(x) * (abs(x.shape[0] - 10) ** 40 % 7) * 2 ** -abs(x.shape[0] - 10)


def larger_total(x, y):
    a = 0.0
    b = 0.0
    for i in range(x.shape[0]):
        a = a + x[i]
        b = b + y[i]
    return max(a, b) + min(a, b) * 3.0  # (carries of derivatives: numpy's maximum)
