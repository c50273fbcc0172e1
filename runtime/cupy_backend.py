"""numpy's API over cupy arrays, for the generated code and the ops' implementations.

A compiled gradient called with cupy arrays runs its generated source with `np` bound to
`namespace()`, and `runtime.backend.get_xp` returns it for cupy operands. cupy follows
numpy's API on its own arrays, but not on the Python numbers and shapes that generated
code also passes to numpy's functions: `cupy.broadcast_to(1.0, shape)` and an
`ElementwiseKernel` whose inputs are all numbers raise, and `cupy.minimum(n, m)` of two
ints makes a device array that `range` refuses. Each name resolves once, by what numpy's
object is:
- dtypes, constants and classes: numpy's own, except `ndarray`, which is cupy's;
- ufuncs: cupy's when a cupy array is among the operands, numpy's otherwise (numbers stay
  numbers on the host);
- the creators of data-sized arrays from shapes and numbers (`CREATORS`): always cupy's,
  `broadcast_to` also accepting a number;
- any other function: cupy's when a cupy array is among its arguments (or in a list or
  tuple among them), numpy's otherwise; an array numpy makes from numbers alone is moved
  to the device (a 0-d integer result stays a number: it is a size or an index);
- a name numpy lacks (`asnumpy`, `cuda`, `ElementwiseKernel`): cupy's.
Submodules (`linalg`, `fft`) resolve the same way against cupy's.

cupy is imported the first time `namespace()` is asked for, which happens only after a
cupy array was seen.
"""
from __future__ import annotations

import sys
import types

import numpy

from .backend import Namespace

__all__ = ["namespace", "has_cupy", "kernel", "to_device"]

#: numpy functions that make arrays as large as the data from shapes and numbers: on the
#: device (a host array would be copied over at its first use with a device array, or
#: refused)
CREATORS = frozenset({"zeros", "ones", "empty", "full", "eye", "identity", "arange",
                      "linspace", "broadcast_to"})


def has_cupy(nd, args, kwargs=None) -> bool:
    """Whether an `nd` (cupy.ndarray) is among `args` (or in a list/tuple among them) or
    kwargs."""
    for a in args:
        if isinstance(a, nd):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(x, nd) for x in a):
            return True
    return bool(kwargs) and has_cupy(nd, kwargs.values())


def _on_device(cp, r):
    """A numpy result of numbers alone, as the device value the code goes on with."""
    if isinstance(r, numpy.ndarray):
        if r.ndim == 0 and r.dtype.kind in "biu":
            return r[()]
        return cp.asarray(r)
    if isinstance(r, tuple):
        items = [_on_device(cp, x) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)  # (namedtuples)
    return r


def _either(cp, name, np_fun, cp_fun):
    nd = cp.ndarray

    def call(*args, **kwargs):
        if has_cupy(nd, args, kwargs):
            return cp_fun(*args, **kwargs)
        return _on_device(cp, np_fun(*args, **kwargs))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"cupy.{name} when an argument is a cupy array, else numpy.{name}"
    return call


class _Ufunc:
    """A ufunc: cupy's for cupy operands, numpy's for numbers (its methods are cupy's)."""

    __slots__ = ("_nd", "_np", "_cp", "__name__")

    def __init__(self, nd, np_ufunc, cp_ufunc):
        self._nd, self._np, self._cp, self.__name__ = nd, np_ufunc, cp_ufunc, np_ufunc.__name__

    def __call__(self, *args, **kwargs):
        if has_cupy(self._nd, args, kwargs):
            return self._cp(*args, **kwargs)
        return self._np(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._cp, name)


def kernel(cp, reference, spec):
    """A fused region's `cupy.ElementwiseKernel` (spec: in_params, out_params, body, name)
    that runs its numpy reference when no input is a cupy array (a kernel's size comes
    from its array inputs: a region of numbers alone has none). Its parameters share one
    type T: inputs of several dtypes (a float64 number's cotangent beside float32 arrays)
    are first converted to the dtype numpy's operations would compute in."""
    ins, outs, body, name = spec
    k = cp.ElementwiseKernel(ins, outs, body, name)
    nd = cp.ndarray
    typed = (nd, numpy.generic)
    # the inputs of type T (the others are typed in the spec: a `bool` mask)
    of_t = [i for i, p in enumerate(ins.split(",")) if p.split()[0] == "T"]

    def run(*args):
        dtype = None
        for i in of_t:
            a = args[i]
            if isinstance(a, typed):
                if dtype is None:
                    dtype = a.dtype
                elif a.dtype != dtype:  # one type T: numpy's promotion first
                    return run(*_promoted(args, of_t, typed))
        if dtype is not None and dtype.kind not in "fc":
            # (T an integer or bool type: CUDA's operators would compute in it where numpy
            # gives floats, `n / 2`, `sin(n)`; numpy's own statements are right)
            return reference(*args)
        for a in args:
            if isinstance(a, nd):
                return k(*args)
        return reference(*args)

    run.__name__ = run.__qualname__ = name
    run.kernel = k
    return run


def _promoted(args, of_t, typed):
    """`args` with the inputs of type T (positions `of_t`) in the dtype numpy's operations
    on them compute in."""
    dtype = numpy.result_type(*[args[i].dtype for i in of_t if isinstance(args[i], typed)])
    out = list(args)
    for i in of_t:
        a = args[i]
        if isinstance(a, typed) and a.dtype != dtype:
            out[i] = dtype.type(a) if isinstance(a, numpy.generic) else a.astype(dtype)
    return out


def to_device(cp, v):
    """An array read from the user's namespaces (a module or closure array) for a call on
    cupy arrays: numpy arrays copied to the device (at each call: a rebound or changed
    array is seen), lists and tuples of them item by item."""
    if isinstance(v, numpy.ndarray):
        return cp.asarray(v)
    if type(v) in (list, tuple):  # (a new container only where an item moves: the
        items = [to_device(cp, x) for x in v]  # user's own list is read, not copied)
        if any(a is not b for a, b in zip(items, v)):
            return type(v)(items)
    return v


class NumpyOnCupy(Namespace):
    """A namespace with numpy's names (see the module docstring for how each resolves)."""

    def __init__(self, cp, np_module=numpy, cp_module=None, prefix="numpy"):
        self._cp = cp  # the cupy package
        self._np = np_module
        self._cpm = cp if cp_module is None else cp_module  # its counterpart of np_module
        self._prefix = prefix

    def _resolve(self, name):
        cp, top = self._cp, self._np is numpy
        cv = getattr(self._cpm, name, None) if self._cpm is not None else None
        nv = getattr(self._np, name, None)
        if top and name == "ndarray":
            return cp.ndarray
        if top and name == "broadcast_to":
            return lambda x, shape, subok=False: cp.broadcast_to(
                x if isinstance(x, cp.ndarray) else cp.asarray(x), shape)
        if nv is None:
            if cv is None:
                raise AttributeError(f"{self._prefix}.{name}")
            return cv
        if isinstance(nv, types.ModuleType):
            return NumpyOnCupy(cp, nv, cv if isinstance(cv, types.ModuleType) else None,
                               f"{self._prefix}.{name}")
        if isinstance(nv, type) or not callable(nv) or cv is None:
            return nv  # (a numpy function cupy lacks: cupy arrays reach cupy's
            #             __array_function__, which says so)
        if isinstance(nv, numpy.ufunc):
            return _Ufunc(cp.ndarray, nv, cv)
        if top and name in CREATORS:
            return cv
        return _either(cp, name, nv, cv)

    def __repr__(self):
        return f"<{self._prefix} on cupy arrays>"


_NAMESPACES: dict = {}


def namespace(cp=None) -> NumpyOnCupy:
    """numpy's API on the arrays of `cp` (the cupy package, imported when not given)."""
    if cp is None:
        cp = sys.modules.get("cupy")
        if cp is None:
            import cupy as cp
    found = _NAMESPACES.get(id(cp))
    if found is None or found._cp is not cp:
        found = _NAMESPACES[id(cp)] = NumpyOnCupy(cp)
    return found
