"""Nested functions and lambdas as people write them: defaults bound where they are
defined, a list of lambdas made by a comprehension."""
import numpy as np


def bound_scale(x):
    scale = 2.0

    def act(z, s=scale):  # s is 2.0: a default is evaluated at the def
        return np.tanh(s * z)

    scale = 0.5
    return np.sum(act(x) * scale)


def keyword_default(x):
    shift = 1.0

    def f(z, *, c=shift):
        return (z - c) ** 2

    shift = -3.0
    return np.sum(f(x)) + shift


def powers_with_defaults(x):
    terms = [lambda z, p=p: z ** p for p in (1, 2, 3)]
    return sum(np.sum(t(x)) for t in terms)


def late_binding(x):
    p = 5  # not what the lambdas read: theirs is the comprehension's p, 3 at its end
    terms = [lambda z: z ** p for p in (1, 2, 3)]
    return sum(np.sum(t(x)) for t in terms) + p


def called_inside(x):
    return sum([(lambda z: z ** p)(x).sum() for p in (1, 2, 3)])
