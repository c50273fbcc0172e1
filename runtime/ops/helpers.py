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


from .lists import LIST_POS as _LIST_POS  # noqa: E402  (a run-time list's item position)
from .lists import LIST_STACKED_ZEROS as _STACKED_ZEROS  # noqa: E402

HELPERS["as_float"] = as_float
HELPERS["list_pos"] = list_pos = _LIST_POS.impl
HELPERS["stacked_zeros"] = stacked_zeros = _STACKED_ZEROS.impl
HELPERS["check_scalar"] = check_scalar
HELPERS["take_scratch"] = take_scratch
__all__ = sorted(HELPERS)
