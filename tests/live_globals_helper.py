"""A module of its own for tests/compiler/test_live_globals.py: its functions read its own global
arrays, `W` among them (a name the test module uses for another array)."""
import numpy as np

W = np.linspace(-1.0, 1.0, 5)
BIG = np.linspace(0.0, 2.0, 40)


def weighted(x):
    return np.sum(np.sin(x) * W)


def weighted_big(x):
    return np.sum(np.cos(x) * BIG[:x.shape[0]])


def make_scaled(scale):
    """A function whose array lives in a closure cell of this module's function."""

    def scaled(x):
        return np.sum(x * x * scale)

    return scaled
