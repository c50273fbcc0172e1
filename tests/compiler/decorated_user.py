"""Functions under decorators, as libraries and training scripts write them: wrappers that
change the value (a scale), wrappers that pass everything on (timing, a pass-through),
and functools.lru_cache on a helper of numbers."""
import functools
import time

import numpy as np


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


def doubled_any(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        wrapper.elapsed = time.perf_counter() - start
        return out
    return wrapper


def passed_on(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@doubled
def doubled_square(x):
    return x ** 2


def uses_doubled(x):
    return np.sum(doubled_square(x))


@doubled
def doubled_loss(x):
    return np.sum(np.sin(x) * x)


@doubled_any
def doubled_any_loss(x):
    return np.sum(x ** 2)


@passed_on
def sine(x):
    return np.sin(x) * 2.0


def uses_passed_on(x):
    return np.sum(sine(x) ** 2)


@timed
def timed_loss(x):
    return np.sum(np.tanh(x) ** 2)


@functools.lru_cache(maxsize=None)
def weight(n):
    return 1.0 / (n + 1)


def uses_cached(x):
    return np.sum(x ** 2) * weight(3)


@passed_on
def weighted_loss(x, weight=1.5):
    return np.sum(x ** 2) * weight
