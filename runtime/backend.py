"""Array namespaces: numpy always, cupy or dask only when their arrays are actually passed.

`get_xp(*arrays)` returns the namespace whose functions should run on the given arrays:
numpy, `runtime.cupy_backend.namespace()` (numpy's API on cupy arrays), or
`runtime.dask_backend.NUMPY_ON_DASK` (numpy's API that keeps dask arrays lazy). cupy and
dask are imported lazily, the first time one of their arrays is seen, so numpy users
never pay for them.
"""
from __future__ import annotations

import contextvars

import numpy

__all__ = ["get_xp", "helpers_on", "is_array", "numpy", "run_on", "scatter_add",
           "writable_copy"]

#: the namespace of the arrays made from numbers alone (None: numpy), set while a helper of
#: a generated module bound to cupy runs (`helpers_on`): a cotangent that is still a
#: Python number, spread to a shape, goes to the device
_DEFAULT: contextvars.ContextVar = contextvars.ContextVar("srcgrad_array_namespace",
                                                          default=None)


class Namespace:
    """numpy's API over another array library (cupy's, dask's): each name is resolved by
    the subclass's `_resolve` at its first use, then kept as an attribute."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._resolve(name)
        setattr(self, name, value)  # resolved once
        return value


def run_on(xp, fn, args, kwargs):
    """fn(*args, **kwargs) with `xp` the namespace of arrays made from numbers alone."""
    token = _DEFAULT.set(xp)
    try:
        return fn(*args, **kwargs)
    finally:
        _DEFAULT.reset(token)


def _on(xp, fn):
    def call(*args, **kwargs):
        return run_on(xp, fn, args, kwargs)

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "helper")
    call.__wrapped__ = fn
    return call


def helpers_on(xp, ns: dict) -> None:
    """In the namespace `ns` of a generated module bound to `xp` (cupy's), the helpers
    of pure primitives (`sum_to`, `scatter_add`, the matmul cotangents...) made to create
    on `xp` the arrays they make from numbers alone (a cotangent that is still the number
    1.0, spread to a shape). Only while one of them runs: the user's own code (a custom
    primitive, a statement run as written) never sees `xp` as its default."""
    from .ops.core import PRIMITIVES

    pure = {id(p.impl) for p in PRIMITIVES.values()
            if p.pure and not p.custom and p.impl is not None}
    for name, value in list(ns.items()):
        if callable(value) and id(value) in pure:
            ns[name] = _on(xp, value)


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


def _is_dask(a) -> bool:
    return type(a).__module__.startswith("dask.")


def get_xp(*arrays):
    """The array namespace (numpy, cupy, or numpy's API on dask) for these arguments;
    for numbers alone, numpy, or the namespace set by `run_on` (`helpers_on`).
    dask wins over numpy: a dask operand keeps the result lazy."""
    host = False
    for a in arrays:
        if type(a) is numpy.ndarray:
            host = True
            continue
        if _is_cupy(a):
            from .cupy_backend import namespace

            return namespace()
        if _is_dask(a):
            from .dask_backend import NUMPY_ON_DASK

            return NUMPY_ON_DASK
    return numpy if host else (_DEFAULT.get() or numpy)  # numbers alone: see `run_on`


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
        import cupy

        at = getattr(cupy.add, "at", None)  # (cupyx.scatter_add before cupy 13)
        if at is None:
            import cupyx

            at = cupyx.scatter_add
        at(z, idx, v)
    else:
        from .dask_backend import no_equivalent

        raise no_equivalent("scatter_add (numpy.add.at: the gradient of indexing with an "
                            "integer array)", "index with slices instead")


def is_array(a) -> bool:
    """True for numpy and cupy arrays (not for Python scalars)."""
    return isinstance(a, numpy.ndarray) or _is_cupy(a)
