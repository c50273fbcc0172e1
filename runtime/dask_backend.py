"""numpy's API over dask arrays, for the generated code and the ops' implementations.

`runtime.backend.get_xp` returns `NUMPY_ON_DASK` when an argument is a dask array, and a
compiled gradient called with dask arrays runs its generated source with `np` bound to
it. Each name resolves once, by what numpy's object is:
- ufuncs, dtypes, classes and constants: numpy's own (numpy's ufuncs already hand dask
  arrays to dask, and keep numpy operands eager);
- a function dask.array also has: dask's when an argument is a dask array, numpy's
  otherwise (small parameter arithmetic stays numpy; data stays lazy);
- the creators of data-sized arrays (`CREATORS`: zeros, ones, empty, full,
  broadcast_to): always dask's, see `CREATORS`;
- a function that only reads shapes and dtypes (`METADATA`): numpy's;
- any other function: numpy's for numpy arguments, and `NoDaskEquivalent` (a TypeError
  that names the function) for dask arguments. numpy's own fallback would silently compute
  the whole array in one process, which on data larger than memory is the failure this
  module exists to prevent.
Submodules (`linalg`, `fft`, `random`) resolve the same way against dask's.

dask is imported only when a dask array has been seen (this module is imported lazily).
"""
from __future__ import annotations

import contextvars
import types

import numpy
import dask.array as _da

from .backend import Namespace

__all__ = ["NUMPY_ON_DASK", "NoDaskEquivalent", "has_dask", "is_dask", "writable"]

#: numpy functions that read only shapes and dtypes (safe on a lazy array)
METADATA = frozenset({"shape", "ndim", "size", "result_type", "broadcast_shapes",
                      "isscalar", "iterable", "can_cast", "promote_types", "min_scalar_type",
                      "iscomplexobj", "isrealobj", "issubdtype", "dtype", "finfo", "iinfo"})


#: numpy functions that make arrays as large as the data from small inputs: they make dask
#: arrays (a numpy array that a dask value is later written into would compute it; a numpy
#: broadcast of a mean's cotangent to the data's shape would be sent whole to the cluster)
CREATORS = frozenset({"zeros", "ones", "empty", "full", "broadcast_to"})


class NoDaskEquivalent(TypeError):
    """A numpy function (or an op built on one) that dask.array does not implement was
    called on a dask array."""


def is_dask(a) -> bool:
    return isinstance(a, _da.Array)


def has_dask(args, kwargs=None) -> bool:
    """Whether a dask array is among `args` (or in a list/tuple among them) or kwargs."""
    for a in args:
        if isinstance(a, _da.Array):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(x, _da.Array) for x in a):
            return True
    return bool(kwargs) and has_dask(kwargs.values())


def no_equivalent(what: str, hint: str = "") -> NoDaskEquivalent:
    return NoDaskEquivalent(
        f"{what} has no dask.array equivalent, and running it would compute the whole "
        f"dask array in one process{'; ' + hint if hint else ''}. Keep this value a numpy "
        "array, or rewrite the step with operations dask.array implements")


def _either(name, np_fun, da_fun):
    def call(*args, **kwargs):
        if has_dask(args, kwargs):
            return da_fun(*args, **kwargs)
        return np_fun(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"numpy.{name}, or dask.array.{name} when an argument is a dask array"
    return call


def _numpy_only(qualname, np_fun):
    def call(*args, **kwargs):
        if has_dask(args, kwargs):
            raise no_equivalent(qualname)
        return np_fun(*args, **kwargs)

    call.__name__ = call.__qualname__ = qualname.rsplit(".", 1)[-1]
    return call


def _array(x, dtype=None, copy=True, **kw):
    """numpy.array for dask arrays: a new dask array object (a later `y[i] = v` on it
    leaves `x` alone), converted to `dtype`."""
    if not is_dask(x):
        return numpy.array(x, dtype=dtype, copy=copy, **kw)
    y = x.astype(dtype) if dtype is not None and x.dtype != dtype else x
    return y.copy() if copy or y is x else y


def _copy(x, **kw):
    return x.copy() if is_dask(x) else numpy.copy(x, **kw)


#: the chunks of the dask arrays passed to the running call, by axis length: arrays the
#: code creates at the data's size are chunked the same way (one chunk of the whole data
#: would put it all in one worker, and every operation with the data would rechunk it)
_CHUNKS: contextvars.ContextVar = contextvars.ContextVar("srcgrad_dask_chunks", default=None)


def chunks_of(args, kwargs=None) -> dict:
    """{axis length: that axis's chunks} over the dask arrays among the arguments."""
    hints = {}
    for a in list(args) + list((kwargs or {}).values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, _da.Array):
                for n, c in zip(x.shape, x.chunks):
                    if len(c) > 1:
                        hints.setdefault(n, c)
    return hints


def chunked_like(args, kwargs=None):
    """Set the chunk hints for a call with these arguments; returns the token to reset."""
    return _CHUNKS.set(chunks_of(args, kwargs))


def reset_chunks(token) -> None:
    _CHUNKS.reset(token)


def _chunks_for(shape, like=()):
    """Chunks for a new array of `shape` from the call's hints; None without hints. With
    `like` (the shape of the array broadcast_to spreads), its own axes longer than 1 stay
    one chunk, as a numpy operand's are."""
    hints = _CHUNKS.get()
    if not hints:
        return None
    shape = tuple(shape) if numpy.iterable(shape) else (shape,)
    lead = len(shape) - len(like)
    return tuple((n,) if i >= lead and like[i - lead] != 1 else hints.get(n, (n,))
                 for i, n in enumerate(shape))


def _created(name):
    fun = getattr(_da, name)
    spread = name == "broadcast_to"
    at = 1 if spread else 0  # where the shape is

    def create(*args, **kwargs):
        kwargs.pop("order", None)  # memory layout: dask chooses its chunks
        kwargs.pop("subok", None)
        shape = args[at] if len(args) > at else kwargs.get("shape")
        if "chunks" not in kwargs and shape is not None and \
                not (spread and args and is_dask(args[0])):
            chunks = _chunks_for(shape, numpy.shape(args[0]) if spread and args else ())
            if chunks is not None:
                kwargs["chunks"] = chunks
        return fun(*args, **kwargs)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"dask.array.{name}, chunked like the running call's dask arguments"
    return create


def writable(x, like):
    """`x` as an array that `like`'s values can be written into: a dask array when `like`
    is one (written into numpy, a dask value would be computed)."""
    return _da.asarray(x) if isinstance(like, _da.Array) and not is_dask(x) else x


_OVERRIDES = {"array": _array, "copy": _copy, **{n: _created(n) for n in CREATORS}}


class NumpyOnDask(Namespace):
    """A namespace with numpy's names (see the module docstring for how each resolves)."""

    def __init__(self, np_module=numpy, da_module=_da, prefix="numpy"):
        self._np, self._dam, self._prefix = np_module, da_module, prefix

    def _resolve(self, name):
        if self._np is numpy and name in _OVERRIDES:
            return _OVERRIDES[name]
        nv = getattr(self._np, name)  # AttributeError for names numpy lacks
        dv = getattr(self._dam, name, None) if self._dam is not None else None
        if isinstance(nv, types.ModuleType):
            return NumpyOnDask(nv, dv if isinstance(dv, types.ModuleType) else None,
                               f"{self._prefix}.{name}")
        if isinstance(nv, (numpy.ufunc, type)) or not callable(nv) or name in METADATA:
            return nv
        if callable(dv):
            return _either(name, nv, dv)
        return _numpy_only(f"{self._prefix}.{name}", nv)

    def __repr__(self):
        return f"<{self._prefix} on dask arrays>"


#: numpy's API with dask arrays kept lazy
NUMPY_ON_DASK = NumpyOnDask()
