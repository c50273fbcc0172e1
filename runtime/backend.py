"""Array namespaces: numpy always, cupy or dask only when their arrays are actually passed.

`get_xp(*arrays)` returns the namespace whose functions should run on the given arrays:
numpy, cupy, or `runtime.dask_backend.NUMPY_ON_DASK` (numpy's API that keeps dask arrays
lazy). cupy and dask are imported lazily, the first time one of their arrays is seen, so
numpy users never pay for them.
"""
from __future__ import annotations

import numpy

__all__ = ["get_xp", "is_array", "numpy", "scatter_add", "writable_copy"]


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


def _is_dask(a) -> bool:
    return type(a).__module__.startswith("dask.")


def get_xp(*arrays):
    """The array namespace (numpy, cupy, or numpy's API on dask) for these arguments;
    numpy for Python scalars. dask wins over numpy: a dask operand keeps the result lazy."""
    for a in arrays:
        if type(a) is numpy.ndarray:
            continue
        if _is_cupy(a):
            import cupy

            return cupy
        if _is_dask(a):
            from .dask_backend import NUMPY_ON_DASK

            return NUMPY_ON_DASK
    return numpy


def writable_copy(x, v):
    """A copy of `x` that `v` can be written into (`r[idx] = v`): a dask array when either
    is one (a numpy array would compute a dask value written into it)."""
    if _is_dask(v) or _is_dask(x):
        from .dask_backend import NUMPY_ON_DASK, writable

        return writable(NUMPY_ON_DASK.array(x), v)
    xp = get_xp(x)
    # a cotangent may be a numpy scalar (sum_to passes one through): make it an array
    return x.copy() if isinstance(x, xp.ndarray) else xp.array(x)


def scatter_add(z, idx, v):
    """z[idx] += v in place, each repeated index adding its share (numpy.add.at)."""
    if isinstance(z, numpy.ndarray):
        numpy.add.at(z, idx, v)
    elif _is_cupy(z):
        import cupyx

        cupyx.scatter_add(z, idx, v)
    else:
        from .dask_backend import no_equivalent

        raise no_equivalent("scatter_add (numpy.add.at: the gradient of indexing with an "
                            "integer array)", "index with slices instead")


def is_array(a) -> bool:
    """True for numpy and cupy arrays (not for Python scalars)."""
    return isinstance(a, numpy.ndarray) or _is_cupy(a)
