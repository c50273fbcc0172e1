"""Functions whose compiled code depends on what they found, or did not find, on objects
at compile time: an attribute that may be missing (hasattr, getattr with a default), the
class of an object (isinstance), and the protocol methods of a class (__len__, __iter__,
__bool__). Each of these is changed between calls by the tests."""
import numpy as np


class Config:
    pass


CFG = Config()


def optional_cube(x):
    if hasattr(CFG, "cube"):
        return np.sum(x ** 3)
    return np.sum(x ** 2)


def optional_scale(x):
    return np.sum(x ** 2) * getattr(CFG, "scale", 2.0)


class Plain:
    pass


class Special(Plain):
    pass


MODE = Plain()


def by_class(x):
    if isinstance(MODE, Special):
        return np.sum(x ** 3)
    return np.sum(x ** 2)


class Stages:
    def __init__(self, weights):
        self.weights = weights

    def __len__(self):
        return len(self.weights)

    def __iter__(self):
        return iter(self.weights)


class Doubled(Stages):
    def __iter__(self):
        return iter([2.0 * w for w in self.weights])


STAGES = Stages([1.0, 2.0])


def staged(x):
    total = 0.0
    for w in STAGES:
        total = total + w * np.sum(x ** 2)
    return total * len(STAGES)


DEEP = [[[[[[[[[[2.0]]]]]]]]]]  # (per stage, per layer, per head...: ten levels)


def deep_scale(x):
    return np.sum(DEEP[0][0][0][0][0][0][0][0][0][0] * x ** 2)


LOOPED = [3.0]
LOOPED.append(LOOPED)  # (a list that holds itself)


def looped_scale(x):
    return np.sum(LOOPED[1][1][0] * x)
