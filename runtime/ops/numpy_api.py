"""The numpy spellings each primitive answers to.

`NUMPY[f]` maps a numpy function object (`numpy.sin`, `numpy.sum`, `numpy.linalg.norm`...)
to an adapter with numpy's signature that calls primitives. `METHODS[name]` does the same
for array methods (`x.sum(axis=0)`, with `x` passed first). Both engines use these tables:
the tape through `__array_ufunc__`/`__array_function__`, the compiler when it resolves a
name in user code. Because adapters only call primitives, they work on arrays, Tensors and
the compiler's symbolic values alike. numpy arguments the op set cannot honour (`out=`,
`where=`, a `dtype=` on a reduction...) raise TypeError instead of being ignored.
"""
from __future__ import annotations

import builtins

import numpy

from . import elementwise as E
from . import linalg as L
from . import reduce as R
from . import shapes as S

__all__ = ["NUMPY", "METHODS", "ATTRIBUTES", "spelling", "UnsupportedArgument"]

NUMPY: dict = {}
METHODS: dict = {}
#: array attributes that are computed values: x.T, x.shape, x.ndim, x.size
ATTRIBUTES: dict = {}


class UnsupportedArgument(TypeError):
    """A numpy argument that the op set does not implement (out=, where=, ...)."""


def spelling(*funcs, method=None):
    """Register `adapter` for numpy function objects `funcs` and array method `method`."""

    def deco(adapter):
        for f in funcs:
            NUMPY[f] = adapter
        if method:
            for m in (method,) if isinstance(method, str) else method:
                METHODS[m] = adapter
        return adapter

    return deco


def _refuse(fname, **kw):
    for k, v in kw.items():
        if v is not None:
            raise UnsupportedArgument(f"{fname}(): the argument {k}= is not supported")


def _axis(axis):
    if isinstance(axis, list):
        return tuple(axis)
    return axis


# ---- elementwise: ufuncs answer to themselves --------------------------------------------------

_UFUNCS = {
    numpy.add: E.add, numpy.subtract: E.subtract, numpy.multiply: E.multiply,
    numpy.true_divide: E.divide, numpy.negative: E.negative, numpy.power: E.power,
    numpy.exp: E.exp, numpy.log: E.log, numpy.log1p: E.log1p, numpy.expm1: E.expm1,
    numpy.sqrt: E.sqrt, numpy.square: E.square, numpy.reciprocal: E.reciprocal,
    numpy.sin: E.sin, numpy.cos: E.cos, numpy.tan: E.tan, numpy.tanh: E.tanh,
    numpy.sinh: E.sinh, numpy.cosh: E.cosh, numpy.arcsin: E.arcsin, numpy.arccos: E.arccos,
    numpy.arctan: E.arctan, numpy.absolute: E.absolute, numpy.sign: E.sign,
    numpy.maximum: E.maximum, numpy.minimum: E.minimum, numpy.less: E.less,
    numpy.less_equal: E.less_equal, numpy.greater: E.greater,
    numpy.greater_equal: E.greater_equal, numpy.equal: E.equal, numpy.not_equal: E.not_equal,
    numpy.logical_and: E.logical_and, numpy.logical_or: E.logical_or,
    numpy.logical_not: E.logical_not, numpy.isfinite: E.isfinite, numpy.matmul: L.matmul,
    numpy.remainder: E.remainder, numpy.fmod: E.fmod, numpy.floor_divide: E.floor_divide,
    numpy.floor: E.floor, numpy.ceil: E.ceil, numpy.trunc: E.trunc,
    numpy.arcsinh: E.arcsinh, numpy.arccosh: E.arccosh, numpy.arctanh: E.arctanh,
    numpy.arctan2: E.arctan2, numpy.hypot: E.hypot, numpy.log2: E.log2, numpy.log10: E.log10,
    numpy.exp2: E.exp2, numpy.logaddexp: E.logaddexp, numpy.logaddexp2: E.logaddexp2,
    numpy.fabs: E.fabs, numpy.rint: E.rint, numpy.fmax: E.fmax, numpy.fmin: E.fmin,
    numpy.isnan: E.isnan, numpy.isinf: E.isinf,
}
#: ufunc -> primitive, for `__array_ufunc__`
UFUNCS = dict(_UFUNCS)


def _ufunc_adapter(ufunc, prim):
    def adapter(*args, out=None, where=None, dtype=None, **kw):
        if kw:
            raise UnsupportedArgument(f"numpy.{ufunc.__name__}(): arguments "
                                      f"{', '.join(kw)} are not supported")
        _refuse(f"numpy.{ufunc.__name__}", out=out, where=where, dtype=dtype)
        return prim(*args)

    adapter.__name__ = ufunc.__name__
    return adapter


for _uf, _prim in _UFUNCS.items():
    NUMPY[_uf] = _ufunc_adapter(_uf, _prim)

# numpy.abs is numpy.absolute, numpy.divide is numpy.true_divide, numpy.mod is
# numpy.remainder: same objects, already in.


def _scaled(factor):
    def scale(x):
        return E.multiply(x, factor)

    return scale


# ufuncs that are a product with a constant (numpy computes them the same way)
for _uf, _fn in ((numpy.deg2rad, _scaled(numpy.pi / 180.0)),
                 (numpy.radians, _scaled(numpy.pi / 180.0)),
                 (numpy.rad2deg, _scaled(180.0 / numpy.pi)),
                 (numpy.degrees, _scaled(180.0 / numpy.pi))):
    NUMPY[_uf] = _ufunc_adapter(_uf, _fn)


def _is_complex(a) -> bool:
    return getattr(getattr(a, "dtype", None), "kind", "") == "c" or isinstance(a, complex)


def _refuse_complex(fname, a):
    if _is_complex(a):
        raise UnsupportedArgument(f"{fname}(): complex arrays are not supported (srcgrad "
                                  "differentiates real functions)")


@spelling(numpy.real)
def real(val):
    """The real part: the array itself for real input (numpy returns a view of it)."""
    _refuse_complex("numpy.real", val)
    return val if _symbolic(val) else numpy.real(val)


@spelling(numpy.imag)
def imag(val):
    """The imaginary part: zeros for real input, with no gradient."""
    _refuse_complex("numpy.imag", val)
    return S.zeros_like(val) if _symbolic(val) else numpy.imag(val)


def _conjugate(x):
    _refuse_complex("numpy.conjugate", x)
    return E.copy(x)  # real input: a new array with the same values, as numpy gives


NUMPY[numpy.conjugate] = _ufunc_adapter(numpy.conjugate, _conjugate)
METHODS["conj"] = METHODS["conjugate"] = _conjugate
ATTRIBUTES["real"] = real
ATTRIBUTES["imag"] = imag


@spelling(numpy.round, numpy.around, method="round")
def round_(a, decimals=0, out=None):
    _refuse("numpy.round", out=out)
    return E.round_(a, decimals=decimals) if decimals else E.round_(a)


@spelling(numpy.sinc)
def sinc(x):
    return E.sinc(x)


@spelling(numpy.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not copy:
        raise UnsupportedArgument("numpy.nan_to_num(): copy=False (an update in place) is not "
                                  "supported; use the returned array")
    params = {}
    if nan != 0.0:
        params["nan"] = float(nan)
    if posinf is not None:
        params["posinf"] = float(posinf)
    if neginf is not None:
        params["neginf"] = float(neginf)
    return E.nan_to_num(x, **params)


@spelling(numpy.copy, method="copy")
def copy(a, order="K", subok=False):
    return E.copy(a)


@spelling(numpy.where)
def where(condition, x=None, y=None):
    if x is None or y is None:
        raise UnsupportedArgument("numpy.where() needs all three arguments (condition, x, y)")
    return E.where(condition, x, y)


@spelling(numpy.clip, method="clip")
def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    _refuse("numpy.clip", out=out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    return E.clip(a, lo, hi)


# ---- reductions --------------------------------------------------------------------------------

def _reduction(prim, fname):
    def adapter(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        _refuse(fname, dtype=dtype, out=out, **{k: v for k, v in kw.items()
                                                if k not in ("initial", "where")})
        if kw.get("initial") is not None or kw.get("where") not in (None, True):
            raise UnsupportedArgument(f"{fname}(): initial= and where= are not supported")
        return prim(a, axis=_axis(axis), keepdims=bool(keepdims))

    adapter.__name__ = prim.name
    return adapter


for _f, _p, _m in ((numpy.sum, R.sum, "sum"), (numpy.mean, R.mean, "mean"),
                   (numpy.prod, R.prod, "prod"), (numpy.max, R.max, "max"),
                   (numpy.min, R.min, "min")):
    spelling(_f, method=_m)(_reduction(_p, f"numpy.{_m}"))
NUMPY[numpy.amax] = NUMPY[numpy.max]
NUMPY[numpy.amin] = NUMPY[numpy.min]


def _moment(prim, fname):
    def adapter(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _refuse(fname, dtype=dtype, out=out)
        params = dict(axis=_axis(axis), keepdims=bool(keepdims))
        if ddof:
            params["ddof"] = ddof
        return prim(a, **params)

    return adapter


spelling(numpy.var, method="var")(_moment(R.var, "numpy.var"))
spelling(numpy.std, method="std")(_moment(R.std, "numpy.std"))


def logsumexp(a, axis=None, keepdims=False):
    """Stable log(sum(exp(a))) over `axis` (also reachable as scipy.special.logsumexp)."""
    return R.logsumexp(a, axis=_axis(axis), keepdims=bool(keepdims))


try:  # scipy is optional: map its logsumexp when it is installed
    import scipy.special as _sps

    NUMPY[_sps.logsumexp] = logsumexp
except Exception:  # pragma: no cover - scipy absent or broken
    pass


# ---- shape -------------------------------------------------------------------------------------

def _shape_arg(args):
    if len(args) == 1:
        s = args[0]
        return tuple(s) if isinstance(s, list) else s
    return tuple(args)


@spelling(numpy.reshape)
def reshape(a, shape=None, order="C", *, newshape=None):
    if order != "C":
        raise UnsupportedArgument("numpy.reshape(): only order='C' is supported")
    s = shape if shape is not None else newshape
    return S.reshape(a, tuple(s) if isinstance(s, list) else s)


def _reshape_method(a, *shape, order="C"):
    if order != "C":
        raise UnsupportedArgument("reshape(): only order='C' is supported")
    return S.reshape(a, _shape_arg(shape))


METHODS["reshape"] = _reshape_method


@spelling(numpy.ravel, method=("ravel", "flatten"))
def ravel(a, order="C"):
    if order != "C":
        raise UnsupportedArgument("ravel(): only order='C' is supported")
    return S.reshape(a, (-1,))


@spelling(numpy.transpose)
def transpose(a, axes=None):
    return S.transpose(a, axes=None if axes is None else tuple(axes))


def _transpose_method(a, *axes):
    if not axes or (len(axes) == 1 and axes[0] is None):
        return S.transpose(a)
    return S.transpose(a, axes=tuple(_shape_arg(axes)))


METHODS["transpose"] = _transpose_method
ATTRIBUTES["T"] = lambda a: S.transpose(a)
ATTRIBUTES["mT"] = lambda a: S.swapaxes(a, axis1=-1, axis2=-2)
ATTRIBUTES["shape"] = lambda a: S.shape(a)
ATTRIBUTES["ndim"] = lambda a: S.ndim(a)
ATTRIBUTES["size"] = lambda a: R.reduced_size(a)


def _symbolic(a):
    return hasattr(type(a), "__op_dispatch__")


@spelling(numpy.swapaxes, method="swapaxes")
def swapaxes(a, axis1, axis2):
    return S.swapaxes(a, axis1=axis1, axis2=axis2)


@spelling(numpy.moveaxis)
def moveaxis(a, source, destination):
    return S.moveaxis(a, source=_axis(source), destination=_axis(destination))


@spelling(numpy.expand_dims)
def expand_dims(a, axis):
    return S.expand_dims(a, axis=_axis(axis))


@spelling(numpy.squeeze, method="squeeze")
def squeeze(a, axis=None):
    return S.squeeze(a, axis=_axis(axis))


@spelling(numpy.broadcast_to)
def broadcast_to(array, shape, subok=False):
    return S.broadcast_to(array, tuple(shape) if isinstance(shape, list) else shape)


@spelling(numpy.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting=None):
    _refuse("numpy.concatenate", out=out, dtype=dtype, casting=casting)
    if axis is None:
        return S.concatenate(*[S.reshape(a, (-1,)) for a in arrays], axis=0)
    return S.concatenate(*arrays, axis=axis)


@spelling(numpy.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting=None):
    _refuse("numpy.stack", out=out, dtype=dtype, casting=casting)
    return S.stack(*arrays, axis=axis)


@spelling(numpy.vstack)
def vstack(tup, dtype=None, casting=None):
    _refuse("numpy.vstack", dtype=dtype, casting=casting)
    return S.concatenate(*[_atleast_2d(a) for a in tup], axis=0)


@spelling(numpy.hstack)
def hstack(tup, dtype=None, casting=None):
    _refuse("numpy.hstack", dtype=dtype, casting=casting)
    arrs = list(tup)
    axis = 0 if all(_rank(a, "numpy.hstack") == 1 for a in arrs) else 1
    return S.concatenate(*arrs, axis=axis)


def _rank(a, fname):
    """The number of dimensions of `a`, which these adapters need as a Python int."""
    try:
        return builtins.len(S.shape(a))
    except Exception:  # the compiler's values: their rank is not known at compile time
        raise UnsupportedArgument(
            f"{fname}() needs the number of dimensions of its arguments, which is only known "
            "at run time here; use numpy.concatenate or numpy.stack with an explicit axis"
        ) from None


def _atleast_2d(a):
    nd = _rank(a, "numpy.vstack")
    if nd == 0:
        return S.reshape(a, (1, 1))
    if nd == 1:
        return S.expand_dims(a, axis=0)
    return a


@spelling(numpy.flip)
def flip(m, axis=None):
    return S.flip(m, axis=_axis(axis))


@spelling(numpy.fliplr)
def fliplr(m):
    return S.flip(m, axis=1)


@spelling(numpy.flipud)
def flipud(m):
    return S.flip(m, axis=0)


@spelling(numpy.shape)
def shape(a):
    return S.shape(a)


@spelling(numpy.ndim)
def ndim(a):
    return S.ndim(a)


@spelling(numpy.size)
def size(a, axis=None):
    return R.reduced_size(a, axis=axis)


@spelling(numpy.asarray, numpy.asanyarray)
def asarray(a, dtype=None, order=None, **kw):
    return a if dtype is None else S.astype(a, _dtype_name(dtype))


def _astype_method(a, dtype, copy=True):
    return S.astype(a, _dtype_name(dtype))


METHODS["astype"] = _astype_method


def _dtype_name(dtype):
    return numpy.dtype(dtype).name


@spelling(numpy.array)
def array(obj, dtype=None, copy=True, **kw):
    """np.array of a (nested) list: differentiable when its elements are."""
    if isinstance(obj, (list, tuple)):
        elems = [array(o) if isinstance(o, (list, tuple)) else o for o in obj]
        if any(_symbolic(e) for e in elems):
            r = S.stack(*elems, axis=0)
            return r if dtype is None else S.astype(r, _dtype_name(dtype))
        return numpy.array(elems, dtype=dtype)
    if _symbolic(obj):
        return obj if dtype is None else S.astype(obj, _dtype_name(dtype))
    return numpy.array(obj, dtype=dtype)


# ---- creation (no gradient) --------------------------------------------------------------------

@spelling(numpy.zeros_like)
def zeros_like(a, dtype=None, **kw):
    r = S.zeros_like(a)
    return r if dtype is None else S.astype(r, _dtype_name(dtype))


@spelling(numpy.ones_like)
def ones_like(a, dtype=None, **kw):
    r = S.ones_like(a)
    return r if dtype is None else S.astype(r, _dtype_name(dtype))


@spelling(numpy.full_like)
def full_like(a, fill_value, dtype=None, **kw):
    r = E.add(S.zeros_like(a), fill_value)
    return r if dtype is None else S.astype(r, _dtype_name(dtype))


def _dt(dtype):
    return {} if dtype is None else {"dtype": _dtype_name(dtype)}


@spelling(numpy.zeros)
def zeros(shape, dtype=float, order="C"):
    return S.zeros(_shape_tuple(shape), **_dt(dtype))


@spelling(numpy.ones)
def ones(shape, dtype=None, order="C"):
    return S.ones(_shape_tuple(shape), **_dt(dtype))


@spelling(numpy.full)
def full(shape, fill_value, dtype=None, order="C"):
    if _symbolic(fill_value):  # differentiable in fill_value
        r = S.broadcast_to(fill_value, _shape_tuple(shape))
        return r if dtype is None else S.astype(r, _dtype_name(dtype))
    return S.full(_shape_tuple(shape), fill_value, **_dt(dtype))


@spelling(numpy.eye)
def eye(N, M=None, k=0, dtype=float):
    kw = _dt(dtype)
    if M is not None:
        kw["M"] = M
    if k:
        kw["k"] = k
    return S.eye(N, **kw)


@spelling(numpy.arange)
def arange(*args, dtype=None, **kw):
    return S.arange(*args, **kw, **_dt(dtype))


def _shape_tuple(s):
    return tuple(s) if isinstance(s, list) else s


# ---- linear algebra ----------------------------------------------------------------------------

@spelling(numpy.dot, method="dot")
def dot(a, b, out=None):
    _refuse("numpy.dot", out=out)
    return L.dot(a, b)


@spelling(numpy.inner)
def inner(a, b):
    return L.inner(a, b)


@spelling(numpy.outer)
def outer(a, b, out=None):
    _refuse("numpy.outer", out=out)
    return L.outer(a, b)


@spelling(numpy.tensordot)
def tensordot(a, b, axes=2):
    if not isinstance(axes, int):
        axes = tuple(tuple(x) if isinstance(x, list) else x for x in axes)
    return L.tensordot(a, b, axes=axes)


@spelling(numpy.trace, method="trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _refuse("numpy.trace", dtype=dtype, out=out)
    return L.trace(a, offset=offset, axis1=axis1, axis2=axis2)

