"""Loops whose carry starts as a Python number and goes through a function whose
derivative is infinite there (a square root at 0.0): the derivative for the starting
number is never used, but the gradient code computes it on Python numbers, where Python
raises (ZeroDivisionError) where numpy gives inf."""
import numpy as np


def rooted_running(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = np.power(acc, 0.5) + x[i]
    return acc


def python_rooted_running(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc ** 0.5 + x[i]  # (Python's ** of the first, Python, acc)
    return acc


def scaled_running(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = np.sqrt(acc) * 2.0 + x[i] / (1.0 + acc)
    return acc


class Accumulator:
    def __init__(self, power):
        self.power = power

    def total(self, x):
        level = 0.0
        for v in x:
            level = level ** self.power + v
        return level


ROOT = Accumulator(0.5)


def accumulated(x):
    return ROOT.total(x)
