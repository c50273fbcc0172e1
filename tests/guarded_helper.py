"""A module of its own for tests/compiler/test_guards.py: values the test changes between calls,
reached as `guarded_helper.NAME` from the test module."""
import numpy as np

SCALE = 2.0
PARAMS = {"W": np.linspace(0.5, 1.5, 4), "b": 0.25}


def f(x):
    return np.sin(x) * SCALE


def g(x):
    return np.cos(x)
