"""Nested functions and lambdas as people write them: defaults bound where they are
defined, a list of lambdas made by a comprehension."""
import functools
from functools import partial

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


# functools.partial made in the function (it was run as written, an opaque object: its
# call on a differentiated value was refused)

class Layer:
    def __init__(self):
        self.W = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]])

    def forward(self, x, act):
        return act(self.W @ x)


LAYER = Layer()


def loss_with(x, scale, power=1.0):
    return np.sum(np.sin(x) * scale) ** power


def partial_of_a_run_time_value(x):
    f = functools.partial(loss_with, scale=x[0], power=2.0)  # x[0] as it is now
    return f(x)


def partials_in_a_comprehension(x):
    fs = [partial(loss_with, scale=k) for k in (1.0, -2.0)]
    return sum(f(x) for f in fs)


def partial_of_a_lambda_and_of_numpy(x):
    dot = lambda z, a: np.sum(z * a)  # noqa: E731
    total = partial(dot, a=x * 2.0)(x)
    return total + partial(np.sum, axis=0)(x * x)


def partial_of_a_partial_of_a_method(x):
    layer = functools.partial(LAYER.forward, act=np.tanh)
    out = functools.partial(layer, x)()
    return np.sum(out ** 2)
