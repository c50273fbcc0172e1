"""Programs for test_api_findings.py, written as people write them."""
import functools

import srcgrad
from star_imported_helpers import *  # noqa: F403 (np and math, as some projects do)


# -- a derivative rule written with array methods -------------------------------------------

@srcgrad.primitive
def softexp(x):
    return np.exp(x)  # noqa: F405


@softexp.defvjp
def _softexp_vjp(g, out, x):
    # array methods, as the tape gives them arrays: reshape, astype, copy, sum, dot
    full = (g * out).reshape(np.shape(x)).astype(np.float64).copy()  # noqa: F405
    return (full + 0.0 * full.sum(axis=-1, keepdims=True) + 0.0 * full.dot(full),)


def uses_softexp(x):
    return np.sum(softexp(x) * 2.0)  # noqa: F405


# -- decorators ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def cube(x):
    return x ** 3


def scaled(f):
    @functools.wraps(f)
    def wrapper(x, n=3.0):  # its own default, not the wrapped function's
        return n * f(x)
    return wrapper


@scaled
def scaled_loss(x, n=5.0):
    return np.sum(x ** 2) + n  # noqa: F405


def calls_scaled(x):
    return scaled_loss(x)


def renamed(f):
    @functools.wraps(f)
    def wrapper(y):
        return 2.0 * f(y)
    return wrapper


@renamed
def renamed_loss(x):
    return np.sum(x ** 2)  # noqa: F405


def calls_renamed(x):
    return renamed_loss(x)


def doubled_any(f):
    @functools.wraps(f)
    def wrapper(*a, **k):
        return 2.0 * f(*a, **k)
    return wrapper


@doubled_any
def doubled_any_loss(x):
    return np.sum(np.sin(x) * x)  # noqa: F405


def calls_doubled_any(x):
    return doubled_any_loss(x)


# -- a star import, and starred unpacking ---------------------------------------------------

def vectorized_sqrt(x):
    return np.sum(x * np.vectorize(math.sqrt)(4.0))  # noqa: F405


def head_and_rest(xs):
    a, *rest = xs
    return a * 3.0 + sum(rest)


def ends_and_middle(xs):
    first, *middle, last = xs
    return np.sum(first * last) + len(middle) + sum(np.sum(m ** 2) for m in middle)  # noqa: F405


def unpacks_an_array(x):
    a, *rest = x
    return np.sum(a)  # noqa: F405


# -- signed zeros and ties ------------------------------------------------------------------

def total_magnitude(x):
    return np.sum(np.abs(x))  # noqa: F405


def largest_of_maximum(x, y):
    return np.max(np.maximum(x, y))  # noqa: F405


def relu_sum(x):
    return np.sum(np.maximum(x, 0.0) * 3.0)  # noqa: F405


def sine_times(x, y):
    return np.sin(x) * y  # noqa: F405
