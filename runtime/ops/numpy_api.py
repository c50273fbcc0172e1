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
import functools
import sys
import threading
import types

import numpy

from . import elementwise as E
from . import linalg as L
from . import reduce as R
from . import shapes as S

__all__ = ["NUMPY", "METHODS", "ATTRIBUTES", "BOUND_METHODS", "spelling", "lookup",
           "public_names", "UnsupportedArgument"]

NUMPY: dict = {}
METHODS: dict = {}
#: array attributes that are computed values: x.T, x.shape, x.ndim, x.size
ATTRIBUTES: dict = {}
#: (type of the object, method name) -> adapter, for methods of objects such as scipy.stats'
#: distributions (`scipy.stats.norm.logpdf` is a new bound method at each attribute access)
BOUND_METHODS: dict = {}
#: public name -> the primitive it calls, where the function object's own name differs
#: (scipy.special.psi is digamma), or "-" for a composition of ops; for `srcgrad ops`
OP_NAMES: dict = {}


def lookup(f):
    """The adapter for the function object `f` (a numpy or scipy function, or a bound
    method such as `scipy.stats.norm.logpdf`), or None. Every reader of the tables goes
    through here: scipy's spellings (runtime.ops.scipy_api) are registered the first time
    a lookup misses after the program has imported scipy, so `import srcgrad` never
    imports scipy."""
    try:
        adapter = NUMPY.get(f)
    except TypeError:  # unhashable
        return None
    if adapter is not None:
        return adapter
    if isinstance(f, types.MethodType):
        adapter = BOUND_METHODS.get((type(f.__self__), f.__func__.__name__))
        if adapter is not None:
            if getattr(adapter, "binds_self", False):  # reads the object (a frozen density)
                return functools.partial(adapter, f.__self__)
            return adapter
    if _load_scipy():
        return lookup(f)
    return None


#: the parts of scipy whose spellings are registered
_SCIPY_LOADED: set = set()
_SCIPY_PARTS = ("special", "linalg", "stats")
_scipy_lock = threading.Lock()


def _load_scipy(force=False) -> bool:
    """Register the spellings of each part of scipy (special, linalg, stats) that the program
    has imported (with `force`, that is installed); True if a part was new."""
    if not force and "scipy" not in sys.modules:
        return False
    new = [p for p in _SCIPY_PARTS if p not in _SCIPY_LOADED and
           (force or f"scipy.{p}" in sys.modules)]
    if not new:
        return False
    with _scipy_lock:
        from . import scipy_api

        added = False
        for part in new:
            if part in _SCIPY_LOADED:
                continue
            try:
                scipy_api.register(part)
            except ImportError:  # scipy absent (with force) or broken
                pass
            _SCIPY_LOADED.add(part)
            added = True
        return added


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
    numpy.bitwise_and: E.bitwise_and, numpy.bitwise_or: E.bitwise_or,
    numpy.bitwise_xor: E.bitwise_xor, numpy.invert: E.invert,
    numpy.remainder: E.remainder, numpy.fmod: E.fmod, numpy.floor_divide: E.floor_divide,
    numpy.floor: E.floor, numpy.ceil: E.ceil, numpy.trunc: E.trunc,
    numpy.arcsinh: E.arcsinh, numpy.arccosh: E.arccosh, numpy.arctanh: E.arctanh,
    numpy.arctan2: E.arctan2, numpy.hypot: E.hypot, numpy.log2: E.log2, numpy.log10: E.log10,
    numpy.exp2: E.exp2, numpy.logaddexp: E.logaddexp, numpy.logaddexp2: E.logaddexp2,
    numpy.fabs: E.fabs, numpy.rint: E.rint, numpy.fmax: E.fmax, numpy.fmin: E.fmin,
    numpy.cbrt: E.cbrt, numpy.copysign: E.copysign, numpy.heaviside: E.heaviside,
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
        if len(args) > ufunc.nin:  # np.exp(x, buf): numpy writes the result into buf
            raise UnsupportedArgument(f"numpy.{ufunc.__name__}(): an output array given "
                                      "by position (out) is not supported; use the "
                                      "returned array")
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


@spelling(numpy.angle)
def angle(z, deg=False):
    """The argument of a real number, as numpy computes it (arctan2(0, x): 0 for x >= 0, pi
    for x < 0 and for -0.0), with a zero derivative: it is piecewise constant."""
    _refuse_complex("numpy.angle", z)
    r = S.stop_gradient(E.arctan2(0.0, z))
    return E.multiply(r, 180.0 / numpy.pi) if deg else r


@spelling(numpy.real_if_close)
def real_if_close(a, tol=100):
    """A real array is returned as it is (the same array, as numpy returns it)."""
    _refuse_complex("numpy.real_if_close", a)
    return a


def _conjugate(x):
    _refuse_complex("numpy.conjugate", x)
    return E.copy(x)  # real input: a new array with the same values, as numpy gives


def _conjugate_method(x):
    _refuse_complex("ndarray.conj", x)
    return x  # real input: `a.conj()` is `a` itself in numpy (a write into it changes a)


NUMPY[numpy.conjugate] = _ufunc_adapter(numpy.conjugate, _conjugate)
METHODS["conj"] = METHODS["conjugate"] = _conjugate_method
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
                   (numpy.min, R.min, "min"), (numpy.any, R.any, "any"),
                   (numpy.all, R.all, "all")):
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


@spelling(numpy.ravel, method="ravel")
def ravel(a, order="C"):
    if order != "C":
        raise UnsupportedArgument("ravel(): only order='C' is supported")
    return S.reshape(a, (-1,))


def _flatten_method(a, order="C"):
    return E.copy(ravel(a, order))  # a new array, unlike ravel's view


METHODS["flatten"] = _flatten_method


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


def _casting(casting):
    """numpy's default casting ("same_kind") is what the op does; any other is refused."""
    return None if casting == "same_kind" else casting


@spelling(numpy.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _refuse("numpy.concatenate", out=out, dtype=dtype, casting=_casting(casting))
    if axis is None:
        return S.concatenate(*[S.reshape(a, (-1,)) for a in arrays], axis=0)
    return S.concatenate(*arrays, axis=axis)


@spelling(numpy.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _refuse("numpy.stack", out=out, dtype=dtype, casting=_casting(casting))
    return S.stack(*arrays, axis=axis)


@spelling(numpy.vstack)
def vstack(tup, dtype=None, casting="same_kind"):
    _refuse("numpy.vstack", dtype=dtype, casting=_casting(casting))
    return S.concatenate(*[_atleast(a, 2) for a in tup], axis=0)


if hasattr(numpy, "row_stack"):  # vstack's older name (deprecated in numpy 2.0)
    spelling(numpy.row_stack)(vstack)


@spelling(numpy.hstack)
def hstack(tup, dtype=None, casting="same_kind"):
    _refuse("numpy.hstack", dtype=dtype, casting=_casting(casting))
    arrs = list(tup)
    ranks = [_known_rank(a) for a in arrs]
    if None not in ranks:
        arrs = [S.reshape(a, (1,)) if r == 0 else a for a, r in zip(arrs, ranks)]
        return S.concatenate(*arrs, axis=0 if all(r <= 1 for r in ranks) else 1)
    # ranks known only at run time (the compiler's values): join each operand as a 2-D
    # array along axis 1 and reshape, which is np.hstack for every rank
    shapes = [S.shape(a) for a in arrs]
    parts = [S.reshape(a, S.hstack_part_shape(s)) for a, s in zip(arrs, shapes)]
    return S.reshape(S.concatenate(*parts, axis=1), S.hstack_shape(*shapes))


def _known_rank(a):
    try:
        return builtins.len(S.shape(a))
    except Exception:  # the compiler's values
        return None


_RANK_HINTS = {
    "numpy.linalg.norm": "pass axis= (an int for a vector norm, a pair for a matrix norm)",
    "numpy.rollaxis": "use a non-negative axis and start, or numpy.moveaxis",
    "numpy.rot90": "give both axes with the same sign",
    "numpy.gradient": "pass axis= (axis=0 for a 1-d array: one axis gives one array)",
}


def _rank(a, fname):
    """The number of dimensions of `a`, which these adapters need as a Python int."""
    try:
        return builtins.len(S.shape(a))
    except Exception:  # the compiler's values: their rank is not known at compile time
        hint = _RANK_HINTS.get(fname, "use numpy.concatenate or numpy.stack with an explicit "
                                      "axis")
        raise UnsupportedArgument(
            f"{fname}() needs the number of dimensions of its arguments, which is only known "
            f"at run time here; {hint}") from None


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


class DtypeOf:
    """`a.dtype` of an array known only when the code runs (a staged value): a dtype
    argument (`np.zeros(n, dtype=x.dtype)`, `y.astype(x.dtype)`) that casts the result
    like `a`. It is nothing else: comparing it or taking its attributes is refused, since
    its value is not known when the code is written."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def _refuse(self, *_):
        raise UnsupportedArgument(
            "an array's .dtype is known only when the code runs: it can be passed as a "
            "dtype (np.zeros(n, dtype=x.dtype), y.astype(x.dtype)), but not compared, "
            "hashed or inspected (to branch on a dtype, pass it as an argument)")

    __eq__ = __ne__ = __bool__ = __getattr__ = _refuse
    __hash__ = None

    def __repr__(self):
        return f"{self.array!r}.dtype"


def _dtype_of(a):
    return DtypeOf(a) if _symbolic(a) else numpy.asarray(a).dtype


ATTRIBUTES["dtype"] = _dtype_of


def _as_dtype(r, dtype):
    """`r` in `dtype` (None: as it is; an array's run-time dtype: cast like that array)."""
    if dtype is None:
        return r
    if isinstance(dtype, DtypeOf):
        return S.convert_like(r, dtype.array)
    return S.astype(r, _dtype_name(dtype))


@spelling(numpy.asarray, numpy.asanyarray)
def asarray(a, dtype=None, order=None, **kw):
    if not _symbolic(a):  # (a Python number becomes a 0-d array: float64, not weak)
        return numpy.asarray(a, dtype=dtype)
    return _as_dtype(a, dtype)


def _astype_method(a, dtype, copy=True):
    # x.astype(d) is a new array (x's own where copy=False and d is x's dtype): one the
    # function may update in place (`z = x.astype(float); z += y`)
    r = _as_dtype(a, dtype)
    return E.copy(r) if copy else r


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
            return _as_dtype(r, dtype)
        return numpy.array(elems, dtype=dtype)
    if _symbolic(obj):  # a new array (numpy's copy=True), which the caller may write into
        r = _as_dtype(obj, dtype)
        return E.copy(r) if copy else r
    return numpy.array(obj, dtype=dtype)


# ---- creation (no gradient) --------------------------------------------------------------------

def _new_in(dtype, like_made, made):
    """A new array (which the caller may write into): `like_made` (made in a's dtype)
    for no dtype, `made(dtype name)` for a dtype, `like_made` converted for another
    array's run-time dtype."""
    if dtype is None:
        return like_made()
    if isinstance(dtype, DtypeOf):
        return S.astype_of(like_made(), dtype.array)
    return made(_dtype_name(dtype))


@spelling(numpy.zeros_like)
def zeros_like(a, dtype=None, **kw):
    return _new_in(dtype, lambda: S.zeros_like(a), lambda d: S.zeros(S.shape(a), dtype=d))


@spelling(numpy.empty_like)
def empty_like(a, dtype=None, **kw):
    # the contents of np.empty_like are unspecified: zeros are one valid choice, and they
    # keep a gradient computed from an element the function forgot to fill finite
    return zeros_like(a, dtype)


@spelling(numpy.ones_like)
def ones_like(a, dtype=None, **kw):
    return _new_in(dtype, lambda: S.ones_like(a), lambda d: S.ones(S.shape(a), dtype=d))


@spelling(numpy.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    _refuse("numpy.full_like", shape=shape)
    if not _symbolic(fill_value):  # a new array, which the caller may write into
        # numpy casts the fill value to a's dtype (full_like(int array, 2.5) holds 2s)
        return _new_in(DtypeOf(a) if dtype is None else dtype,
                       lambda: S.full(S.shape(a), fill_value),
                       lambda d: S.full(S.shape(a), fill_value, dtype=d))
    r = E.add(S.zeros_like(a), fill_value)
    return S.convert_like(r, a) if dtype is None else _as_dtype(r, dtype)


def _dt(dtype):
    return {} if dtype is None else {"dtype": _dtype_name(dtype)}


def _created(make, dtype, *args):
    """`make(*args, dtype=...)`, or, for an array's run-time dtype, made in the default
    dtype and cast like that array."""
    if isinstance(dtype, DtypeOf):  # a new array (which numpy writes into in place)
        return S.astype_of(make(*args), dtype.array)
    return make(*args, **_dt(dtype))


@spelling(numpy.zeros)
def zeros(shape, dtype=float, order="C"):
    return _created(S.zeros, dtype, _shape_tuple(shape))


@spelling(numpy.empty)
def empty(shape, dtype=float, order="C"):
    return zeros(shape, dtype, order)  # unspecified contents: zeros are one valid choice


@spelling(numpy.ones)
def ones(shape, dtype=None, order="C"):
    return _created(S.ones, dtype, _shape_tuple(shape))


@spelling(numpy.full)
def full(shape, fill_value, dtype=None, order="C"):
    if _symbolic(fill_value):  # differentiable in fill_value
        r = S.broadcast_to(fill_value, _shape_tuple(shape))
        return _as_dtype(r, dtype)
    return _created(lambda **kw: S.full(_shape_tuple(shape), fill_value, **kw), dtype)


@spelling(numpy.eye)
def eye(N, M=None, k=0, dtype=float):
    kw = {}
    if M is not None:
        kw["M"] = M
    if k:
        kw["k"] = k
    return _created(lambda **d: S.eye(N, **kw, **d), dtype)


@spelling(numpy.arange)
def arange(*args, dtype=None, **kw):
    return _created(lambda **d: S.arange(*args, **kw, **d), dtype)


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



# ---- scans, differences ------------------------------------------------------------------------

def _scan(prim, fname):
    def adapter(a, axis=None, dtype=None, out=None):
        _refuse(fname, dtype=dtype, out=out)
        if axis is None:  # numpy's: the flattened array
            return prim(S.reshape(a, (-1,)), axis=0)
        return prim(a, axis=_int_arg(axis, fname, "axis"))

    adapter.__name__ = prim.name
    return adapter


spelling(numpy.cumsum, method="cumsum")(_scan(R.cumsum, "numpy.cumsum"))
spelling(numpy.cumprod, method="cumprod")(_scan(R.cumprod, "numpy.cumprod"))


def _int_arg(v, fname, what):
    if _symbolic(v):
        raise UnsupportedArgument(
            f"{fname}(): {what}= must be an integer known when the function is compiled "
            "(a constant), not a value computed at run time (a shape, in code made for "
            "every shape)")
    if isinstance(v, (bool, numpy.bool_)) or not isinstance(v, (int, numpy.integer)):
        raise UnsupportedArgument(f"{fname}(): {what}= must be an integer, got {v!r:.40}")
    return int(v)


def _along(axis, part):
    """An index that applies `part` to axis `axis` and keeps the others (any rank)."""
    if axis < 0:
        return (Ellipsis, part) + (slice(None),) * (-axis - 1)
    return (slice(None),) * axis + (part,)


_NOTHING = object()


@spelling(numpy.diff)
def diff(a, n=1, axis=-1, prepend=_NOTHING, append=_NOTHING):
    n = _int_arg(n, "numpy.diff", "n")
    axis = _int_arg(axis, "numpy.diff", "axis")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if n == 0:
        return a
    parts = []
    for v in (prepend, a, append):
        if v is _NOTHING:
            continue
        if v is not a and isinstance(v, (int, float)) or (
                isinstance(v, numpy.ndarray) and v.ndim == 0):
            v = S.broadcast_to(v, S.replace_dim(S.shape(a), axis, 1))
        parts.append(v)
    if len(parts) > 1:
        a = S.concatenate(*parts, axis=axis)
    for _ in range(n):
        a = E.subtract(S.getitem(a, _along(axis, slice(1, None))),
                       S.getitem(a, _along(axis, slice(None, -1))))
    return a


# ---- diagonals, triangles ----------------------------------------------------------------------

@spelling(numpy.diag)
def diag(v, k=0):
    k = _int_arg(k, "numpy.diag", "k")
    return S.diag(v, k=k) if k else S.diag(v)


@spelling(numpy.diagonal, method="diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    params = {k: _int_arg(v, "numpy.diagonal", k) for k, v in
              (("offset", offset), ("axis1", axis1), ("axis2", axis2))
              if v != {"offset": 0, "axis1": 0, "axis2": 1}[k]}
    return S.diagonal(a, **params)


@spelling(numpy.tril)
def tril(m, k=0):
    k = _int_arg(k, "numpy.tril", "k")
    return S.tril(m, k=k) if k else S.tril(m)


@spelling(numpy.triu)
def triu(m, k=0):
    k = _int_arg(k, "numpy.triu", "k")
    return S.triu(m, k=k) if k else S.triu(m)


# ---- repeats, tiles, pads, rolls, rotations ----------------------------------------------------

def _int_tuple(v, fname, what):
    """A constant int or sequence of ints as an int or a tuple of Python ints."""
    if _symbolic(v):
        raise UnsupportedArgument(f"{fname}(): {what} must be known when the function is "
                                  "compiled (a constant), not an array computed at run time")
    if isinstance(v, (int, numpy.integer)) and not isinstance(v, (bool, numpy.bool_)):
        return int(v)
    arr = numpy.asarray(v)
    if arr.dtype.kind not in "iu" and arr.size:
        raise UnsupportedArgument(f"{fname}(): {what} must be integers, got {v!r:.40}")
    if arr.ndim == 0:
        return int(arr)
    return tuple(int(x) for x in arr.reshape(-1)) if arr.ndim == 1 else \
        tuple(tuple(int(x) for x in row) for row in arr.reshape(arr.shape[0], -1))


@spelling(numpy.repeat, method="repeat")
def repeat(a, repeats, axis=None):
    r = _int_tuple(repeats, "numpy.repeat", "repeats")
    if isinstance(r, tuple) and r and isinstance(r[0], tuple):
        raise ValueError("repeats must be an int or a 1-D sequence")
    if axis is None:
        return S.repeat(S.reshape(a, (-1,)), repeats=r, axis=0)
    return S.repeat(a, repeats=r, axis=_int_arg(axis, "numpy.repeat", "axis"))


@spelling(numpy.tile)
def tile(A, reps):
    return S.tile(A, reps=_int_tuple(reps, "numpy.tile", "reps"))


_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")


@spelling(numpy.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    pw = _int_tuple(pad_width, "numpy.pad", "pad_width")
    if isinstance(pw, tuple) and pw and not isinstance(pw[0], tuple):
        pw = (pw,)  # (before, after) for every axis
    if mode == "constant":
        extra = set(kwargs) - {"constant_values"}
        if extra:
            raise UnsupportedArgument(f"numpy.pad(): {', '.join(sorted(extra))} not supported "
                                      "in mode 'constant'")
        cv = kwargs.get("constant_values", 0)
        if _symbolic(cv) or not isinstance(cv, (int, float, numpy.integer, numpy.floating)):
            raise UnsupportedArgument("numpy.pad(): constant_values must be one constant "
                                      "number here (not per-axis values or an array)")
        params = {"constant_values": cv.item() if hasattr(cv, "item") else cv} if cv else {}
        return S.pad(array, pad_width=pw, **params)
    if mode in _GATHER_MODES:
        if kwargs and not (mode in ("reflect", "symmetric") and
                           kwargs == {"reflect_type": "even"}):
            raise UnsupportedArgument(f"numpy.pad(): {', '.join(sorted(kwargs))} not "
                                      f"supported in mode {mode!r}")
        return S.getitem(array, S.pad_gather_index(S.shape(array), pw, mode))
    raise UnsupportedArgument(f"numpy.pad(): mode {mode!r} is not supported (constant, "
                              f"{', '.join(_GATHER_MODES)} are)")


@spelling(numpy.roll)
def roll(a, shift, axis=None):
    shift = _int_tuple(shift, "numpy.roll", "shift")
    if axis is not None:
        axis = _int_tuple(axis, "numpy.roll", "axis")
    elif isinstance(shift, tuple):
        raise UnsupportedArgument("numpy.roll(): several shifts need an axis for each")
    return S.roll(a, shift=shift, axis=axis) if axis is not None else S.roll(a, shift=shift)


@spelling(numpy.rollaxis)
def rollaxis(a, axis, start=0):
    axis = _int_arg(axis, "numpy.rollaxis", "axis")
    start = _int_arg(start, "numpy.rollaxis", "start")
    if axis < 0 or start < 0:
        n = _rank(a, "numpy.rollaxis")
        if not -n <= axis < n:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {n}")
        if not -n <= start <= n:
            raise ValueError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} "
                             "was passed in")
        axis, start = axis % n, (start + n if start < 0 else start)
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return S.moveaxis(a, source=axis, destination=start)


@spelling(numpy.rot90)
def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(_int_tuple(axes, "numpy.rot90", "axes"))
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = axes
    if (a0 < 0) != (a1 < 0):  # equal axes (0 and -2 of a matrix) are numpy's error
        n = _rank(m, "numpy.rot90")
        a0, a1 = a0 % n, a1 % n
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = _int_arg(k, "numpy.rot90", "k") % 4
    if k == 0:
        return m
    if k == 2:
        return S.flip(S.flip(m, axis=a0), axis=a1)
    if k == 1:
        return S.swapaxes(S.flip(m, axis=a1), axis1=a0, axis2=a1)
    return S.flip(S.swapaxes(m, axis1=a0, axis2=a1), axis=a1)


# ---- gathers -----------------------------------------------------------------------------------

def _index_arg(indices):
    if isinstance(indices, (list, tuple)):
        return numpy.asarray(indices)
    return indices


@spelling(numpy.take, method="take")
def take(a, indices, axis=None, out=None, mode="raise"):
    _refuse("numpy.take", out=out)
    if mode != "raise":
        raise UnsupportedArgument(f"numpy.take(): mode={mode!r} is not supported (only "
                                  "'raise', numpy's default)")
    indices = _index_arg(indices)
    if axis is None:
        return S.getitem(S.reshape(a, (-1,)), indices)
    return S.getitem(a, _along(_int_arg(axis, "numpy.take", "axis"), indices))


@spelling(numpy.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    indices = _index_arg(indices)
    if axis is None:
        return S.getitem(S.reshape(arr, (-1,)), indices)
    axis = _int_arg(axis, "numpy.take_along_axis", "axis")
    return S.getitem(arr, S.along_axis_index(S.shape(arr), indices, axis))


@spelling(numpy.argsort, method="argsort")
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _refuse("numpy.argsort", order=order)
    kind = _sort_kind(kind, stable)
    if axis is None:
        return S.argsort(S.reshape(a, (-1,)), axis=0, **kind)
    return S.argsort(a, axis=_int_arg(axis, "numpy.argsort", "axis"), **kind)


def _sort_kind(kind, stable):
    if stable:
        return {"kind": "stable"}
    return {"kind": kind} if kind is not None else {}


@spelling(numpy.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """The sorted values: x gathered by argsort, so the gradient follows the permutation
    (between equal values, the one argsort puts first gets the first slot's gradient)."""
    _refuse("numpy.sort", order=order)
    if axis is None:
        a, axis = S.reshape(a, (-1,)), 0
    axis = _int_arg(axis, "numpy.sort", "axis")
    perm = S.argsort(a, axis=axis, **_sort_kind(kind, stable))
    return S.getitem(a, S.along_axis_index(S.shape(a), perm, axis))


@spelling(numpy.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """A partition of `a` around `kth`: the sorted values, which are one (numpy leaves the
    order inside each part unspecified, so the items other than the kth ones may come in
    another order than numpy's); the gradient follows the permutation, as sort's."""
    _refuse("numpy.partition", order=order)
    shape = S.shape(a)
    if isinstance(shape, tuple) and axis is not None:  # numpy's check of kth, where known
        n = shape[axis] if shape else 0
        for k in numpy.atleast_1d(kth):
            if not -n <= int(k) < n:
                raise ValueError(f"kth(={int(k)}) out of bounds ({n})")
    return sort(a, axis=axis)


def _gradient_along(f, axis, h):
    g = S.moveaxis(f, source=axis, destination=0)
    inner = E.divide(E.subtract(S.getitem(g, slice(2, None)), S.getitem(g, slice(None, -2))),
                     E.multiply(2.0, h))
    # one-sided at the edges; an integer index raises where the axis has fewer than 2 items
    first = E.divide(E.subtract(S.getitem(g, 1), S.getitem(g, 0)), h)
    last = E.divide(E.subtract(S.getitem(g, -1), S.getitem(g, -2)), h)
    out = S.concatenate(S.expand_dims(first, axis=0), inner, S.expand_dims(last, axis=0),
                        axis=0)
    return S.moveaxis(out, source=0, destination=axis)


@spelling(numpy.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy's gradient with uniform spacing (a number per axis, default 1): central
    differences inside, one-sided ones at the edges (edge_order=1). A linear map of f, so
    every derivative order. Spacing given as coordinates (arrays) and edge_order=2 are not
    supported; in compiled code, where the number of dimensions is known only at run time,
    `axis=` must be given."""
    if edge_order != 1:
        raise UnsupportedArgument("numpy.gradient(): only edge_order=1 is supported")
    if axis is None:
        axes = tuple(builtins.range(_rank(f, "numpy.gradient")))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(varargs) > 1 and len(varargs) != len(axes):
        raise TypeError("numpy.gradient(): invalid number of arguments")
    spacing = list(varargs) if len(varargs) > 1 else [varargs[0] if varargs else 1.0] * len(axes)
    for h in spacing:
        if _symbolic(h) or numpy.ndim(h) != 0:
            raise UnsupportedArgument("numpy.gradient(): spacing must be a number known when "
                                      "the function is compiled (coordinates as arrays are "
                                      "not supported)")
    outs = [_gradient_along(f, ax, h) for ax, h in zip(axes, spacing)]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _arg_reduction(prim, fname):
    def adapter(a, axis=None, out=None, *, keepdims=False):
        _refuse(fname, out=out)
        params = {}
        if axis is not None:
            params["axis"] = _int_arg(axis, fname, "axis")
        if keepdims:
            params["keepdims"] = True
        return prim(a, **params)

    return adapter


spelling(numpy.argmax, method="argmax")(_arg_reduction(S.argmax, "numpy.argmax"))
spelling(numpy.argmin, method="argmin")(_arg_reduction(S.argmin, "numpy.argmin"))


@spelling(numpy.choose, method="choose")
def choose(a, choices, out=None, mode="raise"):
    """Differentiable in the choices (a holds indices). Where `a` is known only at run
    time, mode='raise' reports an index out of range as take_along_axis does (IndexError)
    rather than numpy's ValueError."""
    _refuse("numpy.choose", out=out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if isinstance(choices, (list, tuple)):
        cs = list(choices)
    elif not _symbolic(choices):
        cs = list(numpy.asarray(choices))
    else:
        raise UnsupportedArgument("numpy.choose(): pass the choices as a list (or tuple) of "
                                  "arrays; an array of choices is supported when constant")
    n = len(cs)
    if not n:
        raise ValueError("0-length sequence.")
    if not _symbolic(a):
        a = numpy.asarray(a)
        if a.dtype.kind not in "iub":
            raise TypeError("numpy.choose(): a must hold integers")
        if mode == "wrap":
            a = a % n
        elif mode == "clip":
            a = numpy.clip(a, 0, n - 1)
        elif a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = E.remainder(a, n)
    elif mode == "clip":
        a = E.clip(a, 0, n - 1)
    else:  # a negative index must not wrap: make it one past the end, which take refuses
        a = E.where(E.less(a, 0), n, a)
    full = S.broadcast_shapes(S.shape(a), *[S.shape(c) for c in cs])
    stacked = S.stack(*[S.broadcast_to(c, full) for c in cs], axis=0)
    picked = take_along_axis(stacked, S.expand_dims(S.broadcast_to(a, full), axis=0), axis=0)
    return S.squeeze(picked, axis=0)


@spelling(numpy.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    out = default
    for c, v in zip(reversed(list(condlist)), reversed(list(choicelist))):
        out = E.where(c, v, out)  # the first condition that holds wins
    return out


# ---- joining and splitting ---------------------------------------------------------------------

def _atleast(a, n):
    if not _symbolic(a):
        return (numpy.atleast_1d, numpy.atleast_2d, numpy.atleast_3d)[n - 1](a)
    return S.reshape(a, S.atleast_shape(S.shape(a), n))


def _atleast_adapter(n):
    def adapter(*arys):
        res = tuple(_atleast(a, n) for a in arys)
        return res[0] if len(res) == 1 else res

    adapter.__name__ = f"atleast_{n}d"
    return adapter


spelling(numpy.atleast_1d)(_atleast_adapter(1))


def _in_layout(fn):
    def in_layout(a, dtype=None, *, like=None):
        """The array in the memory layout asked for, of at least one axis: numpy returns
        `a` itself where its layout already is that one, else a copy. Which one is known
        only at run time, so the result is a view of `a` (a write into it is refused)."""
        if like is not None:
            raise UnsupportedArgument(f"numpy.{fn.__name__}(): like= is not supported")
        if not _symbolic(a):
            return fn(a, dtype=dtype)
        return _atleast(_as_dtype(a, dtype), 1)

    in_layout.__name__ = fn.__name__
    return spelling(fn)(in_layout)


ascontiguousarray = _in_layout(numpy.ascontiguousarray)
asfortranarray = _in_layout(numpy.asfortranarray)


def _view_method(a, dtype=None, type=None):
    """`a.view()`: a new array object on a's memory (a write into it changes a); a view
    as another dtype or array type reinterprets the bytes, which has no derivative."""
    if dtype is not None or type is not None:
        raise UnsupportedArgument("ndarray.view(): a view as another dtype or type is not "
                                  "supported (it reinterprets the bytes)")
    return S.reshape(a, S.shape(a)) if _symbolic(a) else a.view()


METHODS["view"] = _view_method
spelling(numpy.atleast_2d)(_atleast_adapter(2))
spelling(numpy.atleast_3d)(_atleast_adapter(3))


@spelling(numpy.dstack)
def dstack(tup):
    return S.concatenate(*[_atleast(a, 3) for a in tup], axis=2)


@spelling(numpy.column_stack)
def column_stack(tup):
    return S.concatenate(*[S.reshape(a, S.column_shape(S.shape(a))) if _symbolic(a) else
                           numpy.asarray(a).reshape(S.column_shape(numpy.shape(a)))
                           for a in tup], axis=1)


def r_items(items):
    """`np.r_[a, b, ...]` of arrays and numbers (no slices, no string directives): each
    item at least 1-d, joined along the first axis."""
    return S.concatenate(*[_atleast(a, 1) for a in items], axis=0)


def c_items(items):
    """`np.c_[a, b, ...]` of arrays and numbers: each item as column_stack makes it (a
    number or a 1-d array becomes a column), joined along the last axis."""
    return S.concatenate(*[S.reshape(a, S.column_shape(S.shape(a))) if _symbolic(a) else
                           numpy.asarray(a).reshape(S.column_shape(numpy.shape(a)))
                           for a in items], axis=-1)


@spelling(numpy.append)
def append(arr, values, axis=None):
    if axis is None:
        return S.concatenate(S.reshape(arr, (-1,)), S.reshape(values, (-1,)), axis=0)
    return S.concatenate(arr, values, axis=_int_arg(axis, "numpy.append", "axis"))


def _sections(v, fname):
    s = _int_tuple(v, fname, "indices_or_sections")
    if isinstance(s, tuple) and s and isinstance(s[0], tuple):
        raise ValueError(f"{fname}(): indices must be a 1-D sequence")
    return s


def _split(ary, sections, axis, fname, equal, min_ndim=0):
    sections = _sections(sections, fname)
    if axis != "h":
        axis = _int_arg(axis, fname, "axis")
    count = sections if isinstance(sections, int) else len(sections) + 1
    if isinstance(sections, int) and sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    checked = S.split_check(S.shape(ary), sections, axis, equal=equal, min_ndim=min_ndim,
                            fname=fname.split(".")[-1])
    return [S.getitem(ary, S.split_index(checked, sections, axis, i)) for i in range(count)]


@spelling(numpy.split)
def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, "numpy.split", True)


@spelling(numpy.array_split)
def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, "numpy.array_split", False)


@spelling(numpy.hsplit)
def hsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, "h", "numpy.hsplit", True)


@spelling(numpy.vsplit)
def vsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 0, "numpy.vsplit", True, min_ndim=2)


@spelling(numpy.dsplit)
def dsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 2, "numpy.dsplit", True, min_ndim=3)


# ---- statistics with weights or NaNs -----------------------------------------------------------

@spelling(numpy.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    axis = _axis(axis)
    keepdims = bool(keepdims)
    if weights is None:
        avg = R.mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        return avg, E.multiply(R.reduced_size(a, axis=axis), 1.0)
    w = S.reshape(weights, S.weights_shape(S.shape(a), S.shape(weights), axis))
    # numpy sums the weights broadcast to a's shape, and refuses a zero sum
    scl = S.nonzero_divisor(R.sum(S.broadcast_to(w, S.shape(a)), axis=axis,
                                  keepdims=keepdims))
    avg = E.divide(R.sum(E.multiply(a, w), axis=axis, keepdims=keepdims), scl)
    if not returned:
        return avg
    return avg, E.copy(S.broadcast_to(scl, S.shape(avg)))


def _nan_reduction_args(fname, dtype, out, kw):
    _refuse(fname, dtype=dtype, out=out)
    if kw.get("initial") is not None or kw.get("where") not in (None, True):
        raise UnsupportedArgument(f"{fname}(): initial= and where= are not supported")


@spelling(numpy.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _nan_reduction_args("numpy.nansum", dtype, out, kw)
    return R.sum(E.where(E.isnan(a), 0, a), axis=_axis(axis), keepdims=bool(keepdims))


@spelling(numpy.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _nan_reduction_args("numpy.nanmean", dtype, out, kw)
    keep = E.logical_not(E.isnan(a))
    total = R.sum(E.where(keep, a, 0), axis=_axis(axis), keepdims=bool(keepdims))
    return E.divide(total, R.sum(keep, axis=_axis(axis), keepdims=bool(keepdims)))


# ---- grids -------------------------------------------------------------------------------------

@spelling(numpy.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    _refuse("numpy.linspace", device=device)
    axis = _int_arg(axis, "numpy.linspace", "axis")
    if _symbolic(num) and not (_symbolic(start) or _symbolic(stop) or retstep):
        # a number of samples known at run time only (`x.shape[0]`): numpy makes them
        y = S.linspace(start, stop, num, endpoint=bool(endpoint), axis=axis)
        return _as_dtype(y, dtype)
    num = _int_arg(num, "numpy.linspace", "num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    if not (_symbolic(start) or _symbolic(stop)):
        y = S.linspace(start, stop, num, endpoint=bool(endpoint), axis=axis)
        y = _as_dtype(y, dtype)
        if retstep:
            return y, (numpy.divide(numpy.subtract(stop, start), div) if div > 0 else
                       numpy.nan)
        return y
    # differentiable in start and stop: numpy's own arithmetic, with the samples on a new
    # last axis (no rank needed) that then moves to `axis`
    delta = E.subtract(stop, start)
    t = numpy.arange(num, dtype=numpy.float64)
    step = E.divide(delta, div) if div > 0 else None
    y = E.multiply(S.expand_dims(step if step is not None else delta, axis=-1), t)
    y = E.add(y, S.expand_dims(start, axis=-1))
    if endpoint and num > 1:
        last = numpy.arange(num) == num - 1
        y = E.where(last, S.expand_dims(S.broadcast_to(stop, S.shape(delta)), axis=-1), y)
    if axis != -1:
        y = S.moveaxis(y, source=-1, destination=axis)
    y = _as_dtype(y, dtype)
    if retstep:
        return y, (step if step is not None else numpy.nan)
    return y


@spelling(numpy.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    shapes = [(1,) * i + (-1,) + (1,) * (nd - i - 1) for i in range(nd)]
    if indexing == "xy" and nd > 1:
        shapes[0] = (1, -1) + (1,) * (nd - 2)
        shapes[1] = (-1, 1) + (1,) * (nd - 2)
    out = [S.reshape(x, s) for x, s in zip(xi, shapes)]
    if not sparse:
        full = S.broadcast_shapes(*[S.shape(o) for o in out])
        out = [S.broadcast_to(o, full) for o in out]
    if copy:
        out = [E.copy(o) for o in out]
    return tuple(out)


# ---- linear algebra: products ------------------------------------------------------------------

@spelling(numpy.kron)
def kron(a, b):
    return L.kron(a, b)


@spelling(numpy.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is None:
        if not axisa == axisb == axisc:
            raise UnsupportedArgument("numpy.cross(): different axisa, axisb, axisc are not "
                                      "supported; vectors along one axis (axis=) are")
        axis = axisa
    axis = _int_arg(axis, "numpy.cross", "axis")
    return L.cross(a, b, axis=axis) if axis != -1 else L.cross(a, b)


def _einsum_output(inputs: str) -> str:
    """numpy's implicit output: '...' first, then the letters used once, sorted."""
    letters = inputs.replace("...", "").replace(",", "")
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ("..." if "..." in inputs else "") + "".join(once)


@spelling(numpy.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    _refuse("numpy.einsum", out=out)
    if kwargs:
        raise UnsupportedArgument(f"numpy.einsum(): {', '.join(sorted(kwargs))} not supported")
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedArgument("numpy.einsum(): only the subscripts-string form "
                                  "einsum('ij,jk->ik', a, b) is supported")
    subscripts, ops = operands[0].replace(" ", ""), operands[1:]
    if "->" not in subscripts:
        subscripts = f"{subscripts}->{_einsum_output(subscripts)}"
    ins = subscripts.split("->")[0].split(",")
    if len(ins) != len(ops):
        raise ValueError(f"numpy.einsum(): {len(ins)} operands in the subscripts, "
                         f"{len(ops)} given")
    if not any(_symbolic(o) for o in ops):
        return numpy.einsum(subscripts, *ops, optimize=optimize)
    params = {"subscripts": subscripts}
    if optimize:
        params["optimize"] = optimize if isinstance(optimize, (bool, str)) else True
    return L.einsum(*ops, **params)


# ---- linear algebra: matrix functions ----------------------------------------------------------

_SLOGDET = type(numpy.linalg.slogdet(numpy.eye(1)))
_EIGH = type(numpy.linalg.eigh(numpy.eye(1)))
_SVD = type(numpy.linalg.svd(numpy.eye(1)))
_QR = type(numpy.linalg.qr(numpy.eye(1)))


@spelling(numpy.linalg.inv)
def inv(a):
    return L.inv(a)


@spelling(numpy.linalg.det)
def det(a):
    return L.det(a)


@spelling(numpy.linalg.slogdet)
def slogdet(a):
    return _SLOGDET(L.slogdet_sign(a), L.logabsdet(a))


@spelling(numpy.linalg.solve)
def solve(a, b):
    return L.solve(a, b)


@spelling(numpy.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    if upper:  # numpy reads the upper triangle then: U = cholesky(a.T).T
        return S.swapaxes(L.cholesky(S.swapaxes(a, axis1=-1, axis2=-2)), axis1=-1, axis2=-2)
    return L.cholesky(a)


def _uplo(UPLO, fname):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{fname}(): UPLO argument must be 'L' or 'U'")
    return {} if UPLO == "L" else {"UPLO": "U"}


@spelling(numpy.linalg.eigh)
def eigh(a, UPLO="L"):
    kw = _uplo(UPLO, "numpy.linalg.eigh")
    return _EIGH(L.eigvalsh(a, **kw), L.eigh_vectors(a, **kw))


@spelling(numpy.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    return L.eigvalsh(a, **_uplo(UPLO, "numpy.linalg.eigvalsh"))


@spelling(numpy.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise UnsupportedArgument("numpy.linalg.svd(): hermitian=True is not supported")
    if not compute_uv:
        return L.svdvals(a)
    if full_matrices:
        raise UnsupportedArgument(
            "numpy.linalg.svd(): the gradient is defined for the reduced SVD only; pass "
            "full_matrices=False (or compute_uv=False for the singular values)")
    return _SVD(L.svd_u(a), L.svdvals(a), L.svd_vh(a))


if hasattr(numpy.linalg, "svdvals"):
    @spelling(numpy.linalg.svdvals)
    def svdvals(x, /):
        return L.svdvals(x)


@spelling(numpy.linalg.qr)
def qr(a, mode="reduced"):
    if mode == "r":
        return L.qr_r(a)
    if mode != "reduced":
        raise UnsupportedArgument(f"numpy.linalg.qr(): mode={mode!r} is not supported "
                                  "('reduced' and 'r' are)")
    return _QR(L.qr_q(a), L.qr_r(a))


@spelling(numpy.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    _refuse("numpy.linalg.pinv", rcond=rcond, rtol=rtol)
    if hermitian:
        raise UnsupportedArgument("numpy.linalg.pinv(): hermitian=True is not supported")
    return L.pinv(a)


@spelling(numpy.linalg.matrix_power)
def matrix_power(a, n):
    n = _int_arg(n, "numpy.linalg.matrix_power", "n")
    if n == 0:  # the identity, of a's shape and dtype
        eye = S.eye(S.getitem(S.shape(a), -1))
        return S.cast_like(S.broadcast_to(eye, S.shape(a)), a)
    if n < 0:
        a, n = L.inv(a), -n
    result, z = None, a
    while True:  # binary powering, as numpy does
        if n & 1:
            result = z if result is None else L.matmul(result, z)
        n >>= 1
        if not n:
            return result
        z = L.matmul(z, z)


@spelling(numpy.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    keepdims = bool(keepdims)
    if isinstance(axis, (list, tuple)) or axis is None:
        axis = None if axis is None else tuple(_int_arg(a, "numpy.linalg.norm", "axis")
                                               for a in axis)
    else:
        axis = _int_arg(axis, "numpy.linalg.norm", "axis")
    if ord is None and (axis is None or isinstance(axis, int) or len(axis) <= 2):
        return R.norm(x, axis=axis, keepdims=keepdims)  # 2-norm / Frobenius
    if axis is None:
        nd = _rank(x, "numpy.linalg.norm")
        axis = (0,) if nd == 1 else (0, 1) if nd == 2 else None
        if axis is None:
            raise ValueError("Improper number of dimensions to norm.")
    if isinstance(axis, int):
        axis = (axis,)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    red = dict(axis=axis, keepdims=keepdims)
    if ord == numpy.inf:
        return R.max(E.absolute(x), **red)
    if ord == -numpy.inf:
        return R.min(E.absolute(x), **red)
    if ord == 0:  # the count of nonzero entries: no gradient
        return R.sum(S.cast_like(E.not_equal(x, 0), E.multiply(x, 1.0)), **red)
    if ord == 1:
        return R.sum(E.absolute(x), **red)
    if ord == 2:
        return R.norm(x, **red)
    return E.power(R.sum(E.power(E.absolute(x), ord), **red), 1.0 / ord)


def _matrix_norm(x, ord, axis, keepdims):
    row, col = axis
    if (row < 0) != (col < 0):
        nd = _rank(x, "numpy.linalg.norm")
        row, col = row % nd, col % nd
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (2, -2, "nuc"):
        s = L.svdvals(S.moveaxis(x, source=(row, col), destination=(-2, -1)))
        r = R.max(s, axis=-1) if ord == 2 else R.min(s, axis=-1) if ord == -2 else \
            R.sum(s, axis=-1)
    elif ord in (1, -1, numpy.inf, -numpy.inf):
        # sum |x| over one axis, then the max (min) over the other, whose index shifts
        # when the summed axis came before it
        first, then = (row, col) if ord in (1, -1) else (col, row)
        if then >= 0 and then > first:
            then -= 1
        elif then < 0 and then < first:
            then += 1
        sums = R.sum(E.absolute(x), axis=first)
        r = R.max(sums, axis=then) if ord in (1, numpy.inf) else R.min(sums, axis=then)
    elif ord == "fro":
        r = R.norm(x, axis=(row, col))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        r = S.expand_dims(r, axis=(row, col))
    return r


# the argument helpers runtime.ops.scipy_api shares (by public names)
refuse_args = _refuse
axis_arg = _axis
int_arg = _int_arg
is_symbolic = _symbolic
ufunc_adapter = _ufunc_adapter


def public_names(scipy=None) -> dict:
    """Public name (np.x or np.linalg.x) -> object, for every numpy callable mapped in
    NUMPY (a callable reached under several names is listed under each), and the scipy
    ones (scipy.special.x, scipy.linalg.x, scipy.stats.dist.method): with scipy=True when
    scipy is installed (it is imported), by default when the program has imported it."""
    found = {}
    if scipy or (scipy is None and "scipy" in sys.modules):
        _load_scipy(force=bool(scipy))
        from . import scipy_api

        found.update(scipy_api.public_names())
    for prefix, mod in (("np", numpy), ("np.linalg", numpy.linalg)):
        for name in dir(mod):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type):
                try:
                    if obj in NUMPY:
                        found[f"{prefix}.{name}"] = obj
                except TypeError:  # unhashable
                    pass
    return found
