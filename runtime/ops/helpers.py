"""Array-level functions that generated code imports by name.

Generated gradients call numpy (or cupy) directly where numpy has the function; the
ops numpy lacks (`sum_to`, `scatter_add`, `relu`, `logsumexp`, the matmul cotangents...)
are imported from here. Each is the primitive's forward implementation: it picks numpy or
cupy from its arguments, so the same generated source runs on both.
"""
from .core import PRIMITIVES

#: helper name -> function, for every primitive spelled as a bare call (no `np.` prefix)
HELPERS = {}
for _p in PRIMITIVES.values():
    HELPERS[_p.name] = _p.impl
globals().update(HELPERS)
__all__ = sorted(HELPERS)


from numpy import ndarray as _ndarray  # noqa: E402


def as_float(x):
    """A `wrt` argument as a floating value: Python numbers become numpy float64 scalars
    (which numpy 2 treats as strong: `a * x` of a Python float `a` and a float32 `x` is
    float64 here, float32 in the user's function; a Python float would not do either, as
    the generated code writes `np.add(a, b)` as `a + b`, a Python float where numpy's
    ufunc gives a numpy scalar); integer or boolean arrays are refused (their gradient
    would be meaningless)."""
    if type(x) is _ndarray and x.dtype.kind == "f":  # the common case first
        return x
    dt = getattr(x, "dtype", None)
    if dt is None:
        if isinstance(x, (bool, complex)) or not isinstance(x, (int, float)):
            raise TypeError(f"gradients need floating inputs, got {type(x).__name__} "
                            f"{x!r:.60}")
        import numpy

        return numpy.float64(x)
    if dt.kind == "c":
        raise TypeError(f"gradients need real floating inputs, got an array of dtype {dt}: "
                        "srcgrad differentiates real functions (split a complex value into "
                        "its real and imaginary parts)")
    if dt.kind != "f":
        raise TypeError(f"gradients need floating inputs, got an array of dtype {dt}; "
                        "convert it with x.astype(float)")
    return x


def check_scalar(out):
    """Refuse a non-scalar output: the gradient of a vector function is not defined."""
    shape = getattr(out, "shape", ())
    kind = getattr(getattr(out, "dtype", None), "kind", "f")
    if kind in "bcOSUV" or isinstance(out, (bool, complex, str)):
        raise TypeError(f"Gradient only defined for real scalar-output functions; the "
                        f"output is {type(out).__name__} of dtype "
                        f"{getattr(out, 'dtype', type(out).__name__)}.")
    if shape != ():
        raise TypeError(
            "Gradient only defined for scalar-output functions. Output had shape: "
            f"{tuple(shape)}. For array outputs use srcgrad.vjp (or jacobian).")
    return out


def take_scratch(pool, new):
    """A set of scratch arrays from `pool` (a list of them), else `new()`: each call in
    progress holds a set of its own, and hands it back to `pool` when it returns. (One
    `pop`, not a test then a pop: another thread may take the last set in between.)"""
    try:
        return pool.pop()
    except IndexError:
        return new()


from sys import getrefcount as _getrefcount  # noqa: E402
from weakref import getweakrefcount as _getweakrefcount  # noqa: E402

#: how many of a result's past arrays a pool tracks: in a loop that keeps the last
#: gradient while it asks for the next (`g = grad_f(w)`), the one before it is free
RESULTS_KEPT = 2


def _first_refs(pool):
    """The reference count of `pool`'s first array, read as `_free_in` reads it (the
    same loop: an interpreter may borrow a loop's references and count fewer)."""
    for a in pool:
        return _getrefcount(a)


def _calibrated() -> "int | None":
    """The reference count `_free_in` reads for an array that only its pool holds,
    measured, not assumed; None where that count does not tell a held array from a free
    one (a build without the global interpreter lock): then no result is reused."""
    import sys

    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    import numpy

    pool = [numpy.empty(1)]
    alone = _first_refs(pool)
    held = pool[0]
    ok = _first_refs(pool) == alone + 1
    del held
    return alone if ok and _first_refs(pool) == alone else None


_ALONE = _calibrated()


def _free_in(pool, shape, dtype):
    """An array of `pool` that nothing else references (no name, view, container or
    weak reference reaches it: no one can see it change), of `shape` and `dtype`,
    contiguous and writeable; else None."""
    for a in pool:
        if _getrefcount(a) == _ALONE and not _getweakrefcount(a) and a.shape == shape and \
                a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable:
            return a
    return None


def reuse_result(pool, shape, dtype):
    """The array for a large result of a specialized gradient: one this result's `pool`
    holds that the caller has dropped (`_free_in`), else a new one, which the pool then
    tracks (its last `RESULTS_KEPT`). numpy would free the dropped array and allocate a
    new one, whose pages the system faults in and zeroes again: for arrays of megabytes,
    most of what an elementwise gradient costs."""
    a = _free_in(pool, shape, dtype) if _ALONE is not None else None
    if a is None:
        import numpy

        a = numpy.empty(shape, dtype)
        pool.append(a)
        if len(pool) > RESULTS_KEPT:
            del pool[0]
    return a


def divide_numbers(a, b):
    """`a / b` of Python numbers (a shape's int among them), as Python divides them, but
    numpy's inf or nan where Python raises ZeroDivisionError: a derivative's scale
    `1.0 / x.size` of an empty array (whose gradient is empty all the same), or
    `2.0 / (n - ddof)` of a variance over n = ddof elements (a nan gradient, as the tape's).
    Quietly: the function itself warned (a mean of an empty slice, no degrees of freedom),
    and a gradient must not raise under `np.errstate` where the function does not. The
    result stays a Python float (a numpy scalar would make a float32 gradient float64)."""
    try:
        return a / b
    except ZeroDivisionError:
        import numpy

        with numpy.errstate(divide="ignore", invalid="ignore"):
            return float(numpy.divide(numpy.float64(a), b))


from .lists import LIST_POS as _LIST_POS  # noqa: E402  (a run-time list's item position)
from .lists import LIST_STACKED_ZEROS as _STACKED_ZEROS  # noqa: E402

HELPERS["as_float"] = as_float
HELPERS["list_pos"] = list_pos = _LIST_POS.impl
HELPERS["stacked_zeros"] = stacked_zeros = _STACKED_ZEROS.impl
HELPERS["check_scalar"] = check_scalar
HELPERS["take_scratch"] = take_scratch
HELPERS["reuse_result"] = reuse_result
HELPERS["divide_numbers"] = divide_numbers
# numpy's, bound once: a specialized variant's results of one number each (np.empty(1)
# and one store, where the attribute lookup is a third of the cost)
HELPERS["empty"] = empty = __import__("numpy").empty


def _errstate():
    """(numpy_errstate, NUMPY_ERRSTATE): `numpy_errstate.get() is NUMPY_ERRSTATE` exactly
    while numpy's floating-point error handling is its default (warn on overflow, division
    by zero and invalid operations, ignore underflow, no error callback): 40 ns a test with
    numpy 2's context variable. Where numpy has none, or its handling was not the default
    when this module was imported, the test asks `numpy.geterr()` (half a microsecond)."""
    import numpy

    default = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}

    def is_default() -> bool:
        return numpy.geterr() == default and numpy.geterrcall() is None

    try:
        from numpy._core.umath import _extobj_contextvar as var
    except ImportError:
        var = None
    if var is not None and is_default():
        return var, var.get()
    marker = object()

    class Asked:
        def get(self):
            return marker if is_default() else None

    return Asked(), marker


numpy_errstate, NUMPY_ERRSTATE = _errstate()
HELPERS["numpy_errstate"] = numpy_errstate
HELPERS["NUMPY_ERRSTATE"] = NUMPY_ERRSTATE
__all__ = sorted(HELPERS)
