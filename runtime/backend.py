"""Array namespaces: numpy always, cupy only when cupy arrays are actually passed.

`get_xp(*arrays)` returns the module whose functions should run on the given arrays.
cupy is imported lazily, the first time a cupy array is seen, so numpy users never
pay for it.
"""
from __future__ import annotations

import numpy

__all__ = ["get_xp", "is_array", "numpy"]


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


def get_xp(*arrays):
    """The array module (numpy or cupy) for these arguments; numpy for Python scalars."""
    for a in arrays:
        if _is_cupy(a):
            import cupy

            return cupy
    return numpy


def is_array(a) -> bool:
    """True for numpy and cupy arrays (not for Python scalars)."""
    return isinstance(a, numpy.ndarray) or _is_cupy(a)
