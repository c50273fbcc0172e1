"""Shape primitives: reshape, transpose, broadcasting, joining, indexing, and array creation.

`sum_to` undoes broadcasting (its VJP is `broadcast_to`, and the other way round).
`getitem` covers basic slices, integer arrays and boolean masks; its VJP `scatter_add`
accumulates repeated indices (numpy's `add.at`). `setitem` is `x[idx] = v` as a function:
a new array, x itself is left as it was (the compiler rebinds the user's name to it).
"""
from __future__ import annotations

import builtins

import numpy

from ..backend import get_xp
from ..backend import scatter_add as backend_scatter_add
from ..backend import writable_copy
from .core import call, defop, fmt, literal
from .shape_rules import arange_shape, creator_shape, eye_shape

__all__ = [
    "shape", "ndim", "reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "sum_to", "concatenate", "stack", "flip", "getitem", "scatter_add",
    "setitem", "zeros_like", "ones_like", "cast_like", "like_arg", "cast_into", "convert_like", "float_gate", "astype",
    "astype_of", "zeros", "ones", "full", "eye",
    "arange", "broadcast_shapes", "concat_index", "is_basic_index", "to_device", "stop_gradient",
    "to_float", "as_numpy", "numpy_operand", "python_operand", "diag", "diag_grad", "diagonal",
    "diagonal_grad", "tril", "triu", "repeat",
    "repeat_grad", "tile", "tile_grad", "pad", "crop_index", "pad_gather_index", "roll",
    "split_index", "split_check", "along_axis_index", "atleast_shape", "column_shape",
    "argsort", "argmax", "argmin", "replace_dim", "weights_shape", "linspace",
    "nonzero_divisor", "hstack_part_shape", "hstack_shape",
]

builtins_max = builtins.max


def _shape_of(x):
    s = getattr(x, "shape", None)
    return numpy.shape(x) if s is None else s


# ---- meta: shapes as values ------------------------------------------------------------------

shape = defop("shape", _shape_of, meta=True, zero_grad=True, spell=fmt("{0}.shape"), kind="shape_of", fresh=True,
              py_spell=fmt("np.shape({0})"), inline=True)
ndim = defop("ndim", lambda x: len(_shape_of(x)), meta=True, zero_grad=True, spell=fmt("{0}.ndim"), fresh=True,
             py_spell=fmt("np.ndim({0})"), inline=True)


def _concat_index(*shapes, index, axis):
    start = 0
    for s in shapes[:index]:
        start += s[axis]
    part = slice(start, start + shapes[index][axis])
    if axis < 0:
        return (Ellipsis, part) + (slice(None),) * (-axis - 1)
    return (slice(None),) * axis + (part,)


def _broadcast_shapes(*shapes):
    """numpy's broadcasting rule on shape tuples, in plain Python (numpy.broadcast_shapes
    builds arrays to find out, which costs more than the arithmetic it saves)."""
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, n - len(s)):
            if d != 1:
                if out[i] != 1 and out[i] != d:
                    raise ValueError(f"shapes {shapes} cannot be broadcast together")
                out[i] = d
    return tuple(out)


broadcast_shapes = defop("broadcast_shapes", _broadcast_shapes, meta=True,
                         spell=call("broadcast_shapes"),
                         doc="the shape numpy broadcasting gives these shapes")
concat_index = defop("concat_index", _concat_index, meta=True, spell=call("concat_index"),
                     doc="the index of input `index` inside a concatenation along `axis`")


# ---- rules -----------------------------------------------------------------------------------

def vjp_reshape(g, out, x, newshape):
    return reshape(g, shape(x))


def vjp_transpose(g, out, x, axes=None):
    if axes is None:
        return transpose(g)
    n = len(axes)
    inverse = [0] * n
    for i, a in enumerate(axes):
        inverse[a % n] = i
    return transpose(g, axes=tuple(inverse))


def vjp_swapaxes(g, out, x, axis1, axis2):
    return swapaxes(g, axis1=axis1, axis2=axis2)


def vjp_moveaxis(g, out, x, source, destination):
    return moveaxis(g, source=destination, destination=source)


def vjp_expand_dims(g, out, x, axis):
    return squeeze(g, axis=axis)


def vjp_squeeze(g, out, x, axis=None):
    return reshape(g, shape(x))


def vjp_broadcast_to(g, out, x, newshape):
    return sum_to(g, shape(x))


def vjp_sum_to(g, out, x, newshape):
    return broadcast_to(g, shape(x))


def vjp_concatenate(g, out, *xs, index, axis=0):
    return getitem(g, concat_index(*[shape(x) for x in xs], index=index, axis=axis))


def vjp_stack(g, out, *xs, index, axis=0):
    if axis < 0:
        idx = (Ellipsis, index) + (slice(None),) * (-axis - 1)
    else:
        idx = (slice(None),) * axis + (index,)
    return getitem(g, idx)


def vjp_flip(g, out, x, axis=None):
    return flip(g, axis=axis)


def vjp_getitem(g, out, x, idx):
    return scatter_add(g, idx, shape(x))


def vjp_scatter_add(g, out, v, idx, newshape):
    return getitem(g, idx)


def vjp_setitem_x(g, out, x, idx, v):
    # the overwritten elements of x do not reach the output
    return setitem(g, idx, 0.0)


def vjp_setitem_v(g, out, x, idx, v):
    # v may broadcast into the slot (`x[:, 0] = 1.0`, a row into every row): sum it back
    return sum_to(getitem(g, idx), shape(v))


def vjp_cast_like(g, out, x, like):
    return cast_like(g, x)


def vjp_astype(g, out, x, dtype):
    return cast_like(g, x)


# ---- forward implementations -----------------------------------------------------------------

def _xp_fn(name):
    def impl(x, *args, **kw):
        return getattr(get_xp(x), name)(x, *args, **kw)

    impl.__name__ = name
    return impl


def sum_to_impl(x, newshape):
    """Sum `x` down to `newshape` (the reverse of broadcasting)."""
    xs = getattr(x, "shape", None)
    if xs == newshape:  # the common case first: nothing to do
        return x
    if xs is None:
        xs = numpy.shape(x)
    newshape = tuple(newshape)
    if xs == newshape:
        return x
    xp = get_xp(x)
    lead = len(xs) - len(newshape)
    if lead < 0:
        if all(d == 1 for d in newshape[:-lead]):
            # a value of shape (1, 1) written into x[0] of shape (2,): numpy drops its
            # leading 1s, so its cotangent is summed to (1,) and given them back
            return xp.reshape(sum_to_impl(x, newshape[-lead:]), newshape)
        return xp.broadcast_to(x, newshape)
    kept = tuple(i + lead for i, d in enumerate(newshape) if d == 1 and xs[i + lead] != 1)
    if not kept:  # only leading axes to drop (a bias): one reduction, no reshape
        return xp.sum(x, axis=tuple(range(lead))) if lead else x
    r = xp.sum(x, axis=tuple(range(lead)) + kept, keepdims=True)
    return xp.reshape(r, newshape)


def _concatenate(*xs, axis=0):
    return get_xp(*xs).concatenate(xs, axis=axis)


def _stack(*xs, axis=0):
    return get_xp(*xs).stack(xs, axis=axis)


def _getitem(x, idx):
    return x[idx]


def is_basic_index(idx) -> bool:
    """True when `idx` holds only ints, slices, None and Ellipsis (no arrays, no lists)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, numpy.integer))
               for i in items)


def _scatter_add(v, idx, newshape):
    xp = get_xp(v)
    z = xp.zeros(newshape, dtype=getattr(v, "dtype", numpy.float64))
    if is_basic_index(idx):
        z[idx] = v  # no repeats possible: plain assignment is exact and fast
    else:
        backend_scatter_add(z, idx, v)
    return z


def _index_repeats(shape_, idx) -> bool:
    """Does the index select some element of an array of this shape more than once?"""
    if is_basic_index(idx):
        return False
    items = idx if isinstance(idx, tuple) else (idx,)
    arrays = [getattr(i, "dtype", None) for i in items if not isinstance(i, (slice, int))
              and i is not None and i is not Ellipsis]
    if all(d is not None and d.kind == "b" for d in arrays):
        return False  # boolean masks select each element at most once
    pos = numpy.arange(int(numpy.prod(shape_, dtype=numpy.int64))).reshape(shape_)[
        _to_numpy_index(idx)]
    return numpy.unique(pos).size != pos.size


def _to_numpy_index(idx):
    def one(i):
        return i.get() if hasattr(i, "get") and not isinstance(i, numpy.ndarray) else i

    return tuple(one(i) for i in idx) if isinstance(idx, tuple) else one(idx)


def _setitem(x, idx, v):
    if _index_repeats(numpy.shape(x), idx):
        raise ValueError("x[idx] = v with an index that selects some element more than once "
                         "is not supported: numpy keeps only the last of the writes to it, "
                         "and srcgrad's gradient would count every one; use unique indices")
    if getattr(getattr(x, "dtype", None), "kind", "f") in "biu" and type(v) not in (
            bool, int, float) and getattr(getattr(v, "dtype", None), "kind", "") in "fc":
        # numpy truncates; srcgrad's gradient of v would not see the truncation (its
        # derivative is zero), so this is refused rather than differentiated wrongly
        raise TypeError(f"writing floating values into an array of dtype {x.dtype} "
                        "truncates them, which srcgrad cannot differentiate; make the array "
                        "floating (np.zeros(n) is float64) or cast the value first "
                        "(v.astype(int), which has no gradient)")
    r = writable_copy(x, v)
    r[idx] = v
    return r


def _cast_like(x, like):
    try:
        if x.dtype is like.dtype or x.dtype == like.dtype:  # the common case first
            return x
    except AttributeError:
        pass
    dt = getattr(like, "dtype", None)
    if dt is None or getattr(x, "dtype", None) == dt:
        return x
    if isinstance(like, numpy.generic) and isinstance(x, (numpy.ndarray, numpy.generic)) and \
            x.ndim == 0:
        return dt.type(x)  # (a numpy scalar's: a numpy scalar, as numpy's arithmetic gives)
    return get_xp(x).asarray(x, dtype=dt)


def _cast_into(x, like):
    """x in like's dtype, as numpy's `a op= b` stores its result into a: where numpy's
    `same_kind` rule allows it (float64 into float32), else numpy's TypeError (a float
    result into an int array)."""
    dt = getattr(like, "dtype", None)
    xd = getattr(x, "dtype", None)
    if dt is None or xd is None or xd == dt or isinstance(like, numpy.generic):
        return x  # (a numpy scalar is immutable: `s += b` binds s to the sum, as it is)
    if not numpy.can_cast(xd, dt, "same_kind"):
        raise TypeError(f"Cannot cast an in-place operation's result from dtype('{xd}') to "
                        f"dtype('{dt}') with casting rule 'same_kind' (numpy refuses "
                        "`a += b` here: write `a = a + b` for a new array)")
    return get_xp(x).asarray(x, dtype=dt)


def _astype(x, dtype):
    return get_xp(x).asarray(x, dtype=dtype)


def _zeros_like(x):
    return get_xp(x).zeros_like(x)


def _ones_like(x):
    return get_xp(x).ones_like(x)


def slice_shape_key(idx):
    """A key equal for constant basic indices that give the same shape from any array
    (None when not sure): per axis, slice(k, None) and slice(None, -k) both keep n - k
    elements, slice(None) keeps n; an int drops the axis. Other forms get no key."""
    items = idx if isinstance(idx, tuple) else (idx,)
    key = []
    for it in items:
        if isinstance(it, (int, numpy.integer)) and not isinstance(it, bool):
            key.append("drop")
        elif isinstance(it, slice) and it.step in (None, 1):
            a, b = it.start, it.stop
            if a is None and b is None:
                key.append(("n", 0))
            elif isinstance(a, int) and a >= 0 and b is None:
                key.append(("n", -a))
            elif a is None and isinstance(b, int) and b < 0:
                key.append(("n", b))
            else:
                return None
        else:
            return None
    return tuple(key)


# ---- the table -------------------------------------------------------------------------------

reshape = defop("reshape", _xp_fn("reshape"), vjp_reshape, nondiff=(1,), view=True, reads_inputs=False,
                spell=call("np.reshape"), kind="movement", dtype="same", shape_arg=1)
def _spell_transpose_array(ins, params, defaults):
    axes = params.get("axes")
    return f"{ins[0]}.T" if axes is None else f"{ins[0]}.transpose({literal(tuple(axes))})"


transpose = defop("transpose", _xp_fn("transpose"), vjp_transpose, view=True, reads_inputs=False,
                  spell=call("np.transpose"), array_spell=_spell_transpose_array,
                  defaults=dict(axes=None), kind="movement", dtype="same")
swapaxes = defop("swapaxes", _xp_fn("swapaxes"), vjp_swapaxes, view=True, reads_inputs=False,
                 spell=call("np.swapaxes"), kind="movement", dtype="same")
moveaxis = defop("moveaxis", _xp_fn("moveaxis"), vjp_moveaxis, view=True, reads_inputs=False,
                 spell=call("np.moveaxis"), kind="movement", dtype="same")
expand_dims = defop("expand_dims", _xp_fn("expand_dims"), vjp_expand_dims,
                    view=True, reads_inputs=False, spell=call("np.expand_dims"), kind="movement", dtype="same")
squeeze = defop("squeeze", _xp_fn("squeeze"), vjp_squeeze, view=True, reads_inputs=False,
                spell=call("np.squeeze"), defaults=dict(axis=None), kind="movement", dtype="same")
broadcast_to = defop("broadcast_to", _xp_fn("broadcast_to"), vjp_broadcast_to, nondiff=(1,),
                     view=True, reads_inputs=False, spell=call("np.broadcast_to"), kind="movement", dtype="same", shape_arg=1, readonly=True)
sum_to = defop("sum_to", sum_to_impl, vjp_sum_to, nondiff=(1,), view=True, reads_inputs=False,
               spell=call("sum_to"), doc="sum down to a shape: the reverse of broadcasting", dtype="same_if_float", shape_arg=1)
concatenate = defop("concatenate", _concatenate, vjp_concatenate, variadic=True,
                    reads_inputs=False, defaults=dict(axis=0), kind="movement", dtype="same", fresh=True)
concatenate.spell = lambda ins, params, d: (  # (a tuple: numba takes one, not a list)
    f"np.concatenate(({', '.join(ins)}{',' if len(ins) == 1 else ''})"
    + ("" if params.get("axis", 0) == 0 else f", axis={params['axis']!r}") + ")")
stack = defop("stack", _stack, vjp_stack, variadic=True, reads_inputs=False,
              defaults=dict(axis=0), kind="movement", dtype="same", fresh=True)
stack.spell = lambda ins, params, d: (
    f"np.stack([{', '.join(ins)}]"
    + ("" if params.get("axis", 0) == 0 else f", axis={params['axis']!r}") + ")")
flip = defop("flip", _xp_fn("flip"), vjp_flip, view=True, reads_inputs=False, spell=call("np.flip"),
             defaults=dict(axis=None), kind="movement", dtype="same")
getitem = defop("getitem", _getitem, vjp_getitem, nondiff=(1,), view=True, reads_inputs=False,
                spell=fmt("{0}[{1}]"), kind="movement", dtype="same", shape_key=slice_shape_key, on_meta=True,
                subscript=True, use_text="indexing with it")
scatter_add = defop("scatter_add", _scatter_add, vjp_scatter_add, nondiff=(1, 2),
                    reads_inputs=False, spell=call("scatter_add"),
                    doc="zeros of `newshape` with `v` added at `idx` (repeats accumulate)", dtype="same", shape_arg=2, fresh=True,
                    adds_at=1)
setitem = defop("setitem", _setitem, vjp_setitem_x, None, vjp_setitem_v, nondiff=(1,),
                reads_inputs=False, spell=call("setitem"),
                doc="a copy of x with x[idx] = v: numpy's item assignment, without mutation", fresh=True)
cast_like = defop("cast_like", _cast_like, vjp_cast_like, nondiff=(1,), view=True, reads_inputs=False,
                  spell=call("cast_like"), doc="x in the dtype of `like`", dtype=("like", 1), shape_like=0)


def _like_arg(g, x):
    """g, the gradient with respect to argument x, in x's dtype and of x's kind: an array
    for an array of one or more dimensions, a numpy float64 scalar for a Python number, a numpy
    scalar of x's dtype for a numpy scalar or a 0-d array (a scalar argument's derivative
    is a numpy scalar at every order). A zero gradient made by np.zeros_like, a 0-d array,
    or a Python float the computation made would otherwise leak out."""
    t = type(x)
    if t is numpy.ndarray:
        if x.ndim:
            return _cast_like(g, x)
        t = x.dtype.type
    elif t is float:
        t = numpy.float64
    elif not isinstance(x, numpy.generic):
        return _cast_like(g, x)  # (another array library's array)
    if type(g) is t:
        return g
    if not isinstance(g, (numpy.ndarray, numpy.generic, float, int)):
        # (a cupy or dask value stays on its device, or lazy: in x's dtype)
        return _cast_like(g, x if t is not numpy.float64 or type(x) is not float
                          else numpy.float64(x))
    return t(g)


def vjp_like_arg(g, out, x, like):
    return cast_like(g, x)


like_arg = defop("like_arg", _like_arg, vjp_like_arg, nondiff=(1,), reads_inputs=False,
                 spell=call("like_arg"), shape_like=0, dtype=("like", 1), view=True,
                 doc="a gradient in the dtype and kind of its argument `like`: an array's "
                     "an array, "
                     "a scalar's (a Python number, numpy scalar or 0-d array) a numpy scalar")


def _casts_to_integers(args, params) -> bool:
    """astype to an integer or boolean dtype is piecewise constant: no derivative."""
    return len(args) > 1 and numpy.dtype(args[1]).kind not in "fc"


astype = defop("astype", _astype, vjp_astype, nondiff=(1,), view=True, reads_inputs=False,
               spell=call("np.asarray"), zero_grad=_casts_to_integers)
def vjp_cast_into(g, out, x, like):
    # g as it comes (like's dtype): the cotangents of what made x take their own inputs'
    # dtypes; reading x's dtype would make a loop save x at every step
    return g


cast_into = defop("cast_into", _cast_into, vjp_cast_into, nondiff=(1,), view=True,
                  reads_inputs=False, spell=call("cast_into"), dtype=("like", 1), shape_like=0,
                  doc="x in the dtype of the array `like` that `like op= ...` updates in "
                      "place (numpy's same_kind casting)")


def _float_gate(g, like):
    """g where `like` is of a floating dtype, else zeros like g: a conversion to an integer
    or boolean dtype is piecewise constant (its derivative is zero)."""
    dt = getattr(like, "dtype", None)
    if dt is not None and dt.kind in "fc" or dt is None and isinstance(like, float):
        return g
    return get_xp(g).zeros_like(g)


def vjp_float_gate(g, out, x, like):
    return float_gate(g, like)


float_gate = defop("float_gate", _float_gate, vjp_float_gate, nondiff=(1,), view=True,
                   reads_inputs=False, spell=call("float_gate"), dtype="same", shape_like=0,
                   doc="g where `like` is floating, else zeros: the derivative of a "
                   "conversion to like's dtype, known only when the code runs")


def vjp_convert_like(g, out, x, like):
    return cast_like(float_gate(g, like), x)


def jvp_convert_like(tangents, out, x, like):
    # (the tangent keeps its floating dtype: zeros where like is not floating)
    return None if tangents[0] is None else float_gate(tangents[0], like)


convert_like = defop("convert_like", _cast_like, vjp_convert_like, nondiff=(1,), view=True,
                     reads_inputs=False, spell=call("cast_like"), dtype=("like", 1),
                     shape_like=0, doc="x in the dtype of `like`, an array of any dtype "
                     "(x.astype(like.dtype)): no derivative where that dtype is not floating")
convert_like.jvp = jvp_convert_like
astype_of = defop("astype_of", lambda x, like: x.astype(like.dtype), differentiable=False,
                  creator=True, spell=fmt("{0}.astype({1}.dtype)"), dtype=("like", 1),
                  shape_like=0, doc="a new array: x (made without a derivative: np.zeros(n, "
                  "dtype=like.dtype)) in like's dtype")
stop_gradient = defop("stop_gradient", lambda x: x, view=True, differentiable=False,
                      spell=call("stop_gradient"),
                      doc="x itself, through which no gradient flows (the tape's detach)")
def _to_float(x):
    # numpy raises for arrays of one or more dimensions, as Python's float() does; the
    # result is a Python float, as float() and math.sqrt() give it: a weak scalar to numpy
    # (float32 array * it stays float32), where a numpy float64 would make float64
    return float(x)


def vjp_to_float(g, out, x):
    return g


to_float = defop("to_float", _to_float, vjp_to_float, reads_inputs=False, spell=call("to_float"),
                 doc="Python's float() of a 0-d array (what math.exp(x) and float(x) do)")


def _as_numpy(x):
    return get_xp(x).asarray(x)


def vjp_as_numpy(g, out, x):
    return g


# np.asarray(x) of a Python number is a 0-d array: the generated code writes it `x` where
# it knows x is an array, `np.asarray(x)` where x may be a number
as_numpy = defop("as_numpy", _as_numpy, vjp_as_numpy, view=True, reads_inputs=False,
                 dtype="same", shape_like=0, spell=fmt("{0}"), py_spell=call("np.asarray"),
                 doc="x as numpy holds it: a Python number becomes a 0-d array "
                 "(what np.asarray(x) gives); an array is itself")
# numpy's function of Python numbers gives numpy's scalar, where the Python operator it is
# written with (`a * b`) gives Python's: a float with no `[None]` or `.item()`, a
# ZeroDivisionError for numpy's inf, an int that does not wrap, -2 for np.invert(True).
# The lowering puts this on an operand of such a call that may be a Python number at run
# time; where it may be one, the generated code writes the call numpy's way
# (`np.multiply(rate, w)`), which also keeps numpy's rule that a Python number is weak (a
# float32 w stays float32; np.asarray(rate) would make it float64).
numpy_operand = defop("numpy_operand", lambda x: x, vjp_as_numpy, view=True,
                      reads_inputs=False, dtype="same", shape_like=0, spell=fmt("{0}"),
                      doc="x itself, an operand of a numpy function of Python numbers: the "
                      "call that reads it is written as numpy's function, not an operator")
# Python's abs(), max() and min() of Python numbers give Python's numbers: an int that
# does not wrap at 2**63 (`abs(n) ** 40`), an int that takes a negative power
# (`2 ** -abs(i)`), max(1.0, nan) = 1.0. The lowering puts this on an operand of such a
# call when no operand is numpy's; where all may be Python numbers at run time, the
# generated code writes the call as the user did (`abs(n)`, `max(a, b)`).
python_operand = defop("python_operand", lambda x: x, vjp_as_numpy, view=True,
                       reads_inputs=False, dtype="same", shape_like=0, spell=fmt("{0}"),
                       doc="x itself, an operand of Python's abs(), max() or min() that may "
                       "be a Python number: the call that reads it is written as Python's")
zeros_like = defop("zeros_like", _zeros_like, differentiable=False, creator=True,
                   spell=call("np.zeros_like"), dtype="same", shape_like=0)
ones_like = defop("ones_like", _ones_like, differentiable=False, creator=True,
                  spell=call("np.ones_like"), dtype="same", shape_like=0)


def _creator(name, **facts):
    def impl(*args, **kw):
        return getattr(numpy, name)(*args, **kw)

    impl.__name__ = name
    return defop(name, impl, differentiable=False, creator=True, spell=call(f"np.{name}"),
                 **facts)


# numpy's signatures: zeros(shape, dtype=float), full(shape, fill_value, dtype=None),
# eye(N, M=None, k=0, dtype=float)
zeros = _creator("zeros", positional_dtype=(1, "float"), shape_rule=creator_shape)
ones = _creator("ones", positional_dtype=(1, "float"), shape_rule=creator_shape)
full = _creator("full", positional_dtype=(2, ("like", 1)), shape_rule=creator_shape)
eye = _creator("eye", positional_dtype=(3, "float"), shape_rule=eye_shape)
arange = _creator("arange", shape_rule=arange_shape)


# ---- devices ---------------------------------------------------------------------------------

def _to_device(x, device, source="cpu"):
    if device == "cpu":
        return x if isinstance(x, numpy.ndarray) else x.get()
    import cupy

    return cupy.asarray(x)


def vjp_to_device(g, out, x, device, source="cpu"):
    return to_device(g, device=source, source=device)


to_device = defop("to_device", _to_device, vjp_to_device, view=True, reads_inputs=False,
                  spell=call("to_device"), doc="copy between 'cpu' (numpy) and 'cuda' (cupy)", dtype="same")


# ---- structure: diagonals, triangles, repeats, tiles, pads, rolls ----------------------------
# Each linear op f comes with its transpose f_grad (or is its own, as tril and roll are), so
# that derivatives of any order stay inside the op set: f's VJP is f_grad and f_grad's VJP is
# f. Shapes that depend on the rank (unknown to the compiler until run time) are worked out
# inside the forward implementations, or by a meta op that turns a shape into an index.

def _norm_ax(axis, nd):
    return axis + nd if axis < 0 else axis


def _diag(x, k=0):
    xp = get_xp(x)
    if len(_shape_of(x)) not in (1, 2):
        raise ValueError("numpy.diag() takes a 1-D or 2-D array")
    return xp.diag(x, k)


def _diag_grad(g, newshape, k=0):
    """The transpose of diag: the diagonal of g for a 1-D input, g on the k-th diagonal
    of a zero matrix of the input's shape for a 2-D one."""
    xp = get_xp(g)
    if len(newshape) == 1:
        return xp.diagonal(g, k).copy()
    z = xp.zeros(newshape, dtype=getattr(g, "dtype", numpy.float64))
    n = min(newshape[0], newshape[1] - k) if k >= 0 else min(newshape[0] + k, newshape[1])
    i = xp.arange(max(n, 0))
    z[i + max(-k, 0), i + max(k, 0)] = g
    return z


def vjp_diag(g, out, x, k=0):
    return diag_grad(g, shape(x), k=k)


def vjp_diag_grad(c, out, g, newshape, k=0):
    return diag(c, k=k)


_DIAG = dict(k=0)
diag = defop("diag", _diag, vjp_diag, view=True, reads_inputs=False, spell=call("np.diag"),
             defaults=_DIAG)
diag_grad = defop("diag_grad", _diag_grad, vjp_diag_grad, nondiff=(1,), reads_inputs=False,
                  spell=call("diag_grad"), defaults=_DIAG,
                  doc="the transpose of diag (see diag's rules)")


def _diagonal(x, offset=0, axis1=0, axis2=1):
    return get_xp(x).diagonal(x, offset=offset, axis1=axis1, axis2=axis2)


def _diagonal_grad(g, newshape, offset=0, axis1=0, axis2=1):
    """Zeros of `newshape` with g written on the diagonal that diagonal() reads."""
    xp = get_xp(g)
    z = xp.zeros(newshape, dtype=getattr(g, "dtype", numpy.float64))
    zm = xp.moveaxis(z, (axis1, axis2), (-2, -1))  # a view: writes land in z
    n = g.shape[-1] if hasattr(g, "shape") and len(g.shape) else 0
    i = xp.arange(n)
    zm[..., i + max(-offset, 0), i + max(offset, 0)] = g
    return z


def vjp_diagonal(g, out, x, offset=0, axis1=0, axis2=1):
    return diagonal_grad(g, shape(x), offset=offset, axis1=axis1, axis2=axis2)


def vjp_diagonal_grad(c, out, g, newshape, offset=0, axis1=0, axis2=1):
    return diagonal(c, offset=offset, axis1=axis1, axis2=axis2)


_DIAGONAL = dict(offset=0, axis1=0, axis2=1)
diagonal = defop("diagonal", _diagonal, vjp_diagonal, view=True, reads_inputs=False,
                 spell=call("np.diagonal"), defaults=_DIAGONAL)
diagonal_grad = defop("diagonal_grad", _diagonal_grad, vjp_diagonal_grad, nondiff=(1,),
                      reads_inputs=False, spell=call("diagonal_grad"), defaults=_DIAGONAL,
                      doc="the transpose of diagonal: g written on a diagonal of zeros")


def vjp_tril(g, out, x, k=0):
    # a 1-D x is broadcast to a matrix by numpy: its cotangent sums the rows
    return sum_to(tril(g, k=k), shape(x))


def vjp_triu(g, out, x, k=0):
    return sum_to(triu(g, k=k), shape(x))


tril = defop("tril", _xp_fn("tril"), vjp_tril, reads_inputs=False, spell=call("np.tril"),
             defaults=dict(k=0))
triu = defop("triu", _xp_fn("triu"), vjp_triu, reads_inputs=False, spell=call("np.triu"),
             defaults=dict(k=0))


def _repeat(x, repeats, axis):
    return get_xp(x).repeat(x, repeats, axis=axis)


def _repeat_grad(g, newshape, repeats, axis):
    """Sum the repeated copies back: the transpose of repeat along `axis`."""
    xp = get_xp(g)
    nd = len(newshape)
    ax = _norm_ax(axis, nd)
    n = newshape[ax]
    gm = xp.moveaxis(xp.asarray(g), ax, 0)
    if isinstance(repeats, int):
        r = gm.reshape((n, repeats) + gm.shape[1:]).sum(axis=1)
    else:
        owner = numpy.repeat(numpy.arange(n), numpy.broadcast_to(numpy.asarray(repeats), (n,)))
        r = xp.zeros((n,) + gm.shape[1:], dtype=gm.dtype)
        backend_scatter_add(r, owner if xp is numpy else xp.asarray(owner), gm)
    return xp.moveaxis(r, 0, ax)


def vjp_repeat(g, out, x, repeats, axis):
    return repeat_grad(g, shape(x), repeats=repeats, axis=axis)


def vjp_repeat_grad(c, out, g, newshape, repeats, axis):
    return repeat(c, repeats=repeats, axis=axis)


repeat = defop("repeat", _repeat, vjp_repeat, reads_inputs=False, spell=call("np.repeat"))
repeat_grad = defop("repeat_grad", _repeat_grad, vjp_repeat_grad, nondiff=(1,),
                    reads_inputs=False, spell=call("repeat_grad"),
                    doc="the transpose of repeat: copies summed back")


def _tile_layout(xshape, reps):
    """(x's shape and reps padded to one length): numpy's rule for np.tile."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    d = builtins_max(len(reps), len(xshape))
    return (1,) * (d - len(xshape)) + tuple(xshape), (1,) * (d - len(reps)) + reps


def _tile(x, reps):
    return get_xp(x).tile(x, reps)


def _tile_grad(g, newshape, reps):
    xp = get_xp(g)
    s, r = _tile_layout(newshape, reps)
    inter = []
    for ri, si in zip(r, s):
        inter += [ri, si]
    summed = xp.asarray(g).reshape(inter).sum(axis=tuple(range(0, 2 * len(s), 2)))
    return summed.reshape(newshape)


def vjp_tile(g, out, x, reps):
    return tile_grad(g, shape(x), reps=reps)


def vjp_tile_grad(c, out, g, newshape, reps):
    return tile(c, reps=reps)


tile = defop("tile", _tile, vjp_tile, reads_inputs=False, spell=call("np.tile"))
tile_grad = defop("tile_grad", _tile_grad, vjp_tile_grad, nondiff=(1,), reads_inputs=False,
                  spell=call("tile_grad"), doc="the transpose of tile: tiles summed back")


def _pad_widths(pad_width, nd):
    """numpy's pad_width forms as ((before, after),) * nd."""
    pw = numpy.asarray(pad_width, dtype=numpy.int64)
    if pw.size and pw.min() < 0:
        raise ValueError("index can't contain negative values")
    return [tuple(int(v) for v in row) for row in numpy.broadcast_to(pw, (nd, 2))]


def _pad(x, pad_width, constant_values=0):
    return get_xp(x).pad(x, pad_width, mode="constant", constant_values=constant_values)


def _crop_index(xshape, pad_width):
    return tuple(slice(b, b + n) for n, (b, _) in zip(xshape, _pad_widths(pad_width,
                                                                           len(xshape))))


def _pad_gather_index(xshape, pad_width, mode):
    """An index that gathers np.pad(x, pad_width, mode) from x (edge, reflect, symmetric,
    wrap: each axis's padding repeats entries of that axis, so the result is x indexed
    with one integer array per axis)."""
    rows = []
    for n, (b, a) in zip(xshape, _pad_widths(pad_width, len(xshape))):
        if n == 0 and b + a:
            raise ValueError("can't extend empty axis using modes other than 'constant'")
        rows.append(numpy.pad(numpy.arange(n), (b, a), mode=mode))
    return numpy.ix_(*rows) if rows else ()


def vjp_pad(g, out, x, pad_width, constant_values=0):
    return getitem(g, crop_index(shape(x), pad_width))


pad = defop("pad", _pad, vjp_pad, reads_inputs=False, spell=call("np.pad"),
            defaults=dict(constant_values=0),
            doc="np.pad in 'constant' mode (the fill has no gradient)")


def jvp_pad(tangents, out, x, pad_width, constant_values=0):
    # affine in x: the fill is a constant, its tangent 0
    return pad(tangents[0], pad_width=pad_width)


pad.jvp = jvp_pad
crop_index = defop("crop_index", _crop_index, meta=True, spell=call("crop_index"),
                   doc="the slices of a padded array that hold the original")
pad_gather_index = defop("pad_gather_index", _pad_gather_index, meta=True,
                         spell=call("pad_gather_index"),
                         doc="integer arrays that gather np.pad(x, mode=...) from x")


def _roll(x, shift, axis=None):
    return get_xp(x).roll(x, shift, axis=axis)


def vjp_roll(g, out, x, shift, axis=None):
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return roll(g, shift=back, axis=axis)


roll = defop("roll", _roll, vjp_roll, reads_inputs=False, spell=call("np.roll"),
             defaults=dict(axis=None))


# ---- meta: indices and shapes computed at run time -------------------------------------------

def _split_axis(xshape, axis):
    """The axis a split runs along: "h" is np.hsplit's (1, or 0 for a 1-D array)."""
    if axis == "h":
        return 1 if len(xshape) > 1 else 0
    ax = _norm_ax(axis, len(xshape))
    if not 0 <= ax < len(xshape):
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension "
                         f"{len(xshape)}")
    return ax


def _split_index(xshape, sections, axis, index):
    """The slice of piece `index` of np.array_split(x, sections, axis)."""
    ax = _split_axis(xshape, axis)
    n = xshape[ax]
    if isinstance(sections, int):
        base, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + base + (i < extra))
    else:
        bounds = [0] + list(sections) + [n]
    part = slice(bounds[index], bounds[index + 1])
    return (slice(None),) * ax + (part,)


def _split_check(xshape, sections, axis, equal=False, min_ndim=0, fname="split"):
    """xshape, once np.split's conditions hold: at least `min_ndim` dimensions (hsplit,
    vsplit, dsplit) and, for `equal` splits into a number of sections, an equal division."""
    if len(xshape) < min_ndim or (axis == "h" and not xshape):
        raise ValueError(f"{fname} only works on arrays of {builtins_max(min_ndim, 1)} or "
                         "more dimensions")
    if isinstance(sections, int):
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and xshape[_split_axis(xshape, axis)] % sections:
            raise ValueError("array split does not result in an equal division")
    return xshape


def _along_axis_index(xshape, indices, axis):
    """The index that np.take_along_axis(x, indices, axis) reads x with (numpy's own)."""
    nd = len(xshape)
    if getattr(getattr(indices, "dtype", None), "kind", "i") not in "iu":
        raise IndexError("`indices` must be an integer array")
    if len(_shape_of(indices)) != nd:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = _norm_ax(axis, nd)
    xp = get_xp(indices)
    return tuple(indices if d == ax else
                 xp.arange(n).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1))
                 for d, n in enumerate(xshape))


def _atleast_shape(xshape, ndim):
    """The shape np.atleast_{1,2,3}d gives an array of shape `xshape`."""
    s = tuple(xshape)
    if len(s) >= ndim:
        return s
    if ndim == 1:
        return (1,)
    if ndim == 2:
        return (1,) * (2 - len(s)) + s
    return {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]


def _column_shape(xshape):
    """np.column_stack's shape: a number becomes a 1x1 array, a 1-D array a column, others
    stay."""
    if len(xshape) == 0:
        return (1, 1)
    return (tuple(xshape) + (1,)) if len(xshape) < 2 else tuple(xshape)


split_index = defop("split_index", _split_index, meta=True, spell=call("split_index"),
                    doc="the slice of one piece of np.array_split")
split_check = defop("split_check", _split_check, meta=True, spell=call("split_check"),
                    defaults=dict(equal=False, min_ndim=0, fname="split"),
                    doc="the shape, once np.split's conditions are checked")


def _replace_dim(xshape, axis, n):
    s = list(xshape)
    s[axis] = n
    return tuple(s)


def _weights_shape(ashape, wshape, axis):
    """The shape np.average gives its weights before it multiplies (numpy's checks)."""
    ashape, wshape = tuple(ashape), tuple(wshape)
    if ashape == wshape:
        return wshape
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    if not isinstance(axis, int):
        raise TypeError("numpy.average(): weights of another shape than a need an integer "
                        "axis here")
    if len(wshape) != 1:
        raise TypeError("1D weights expected when shapes of a and weights differ.")
    ax = _norm_ax(axis, len(ashape))
    if wshape[0] != ashape[ax]:
        raise ValueError("Length of weights not compatible with specified axis.")
    return tuple(n if d == ax else 1 for d, n in enumerate(ashape))


replace_dim = defop("replace_dim", _replace_dim, meta=True, spell=call("replace_dim"),
                    doc="a shape with one dimension replaced")
weights_shape = defop("weights_shape", _weights_shape, meta=True, spell=call("weights_shape"),
                      doc="the shape np.average reshapes its weights to")
along_axis_index = defop("along_axis_index", _along_axis_index, meta=True,
                         spell=call("along_axis_index"),
                         doc="the index np.take_along_axis reads with")
def _hstack_part_shape(xshape):
    """The 2-D shape np.hstack joins an operand as, along axis 1: (1, n) for a 1-D (or
    0-d) array, (s0, s1 * s2 * ...) for one of two or more dimensions (its rows keep their
    order, so joining these and reshaping to `hstack_shape` is np.hstack)."""
    s = tuple(xshape)
    if len(s) < 2:
        return (1, s[0] if s else 1)
    rest = 1
    for d in s[1:]:
        rest *= d
    return (s[0], rest)


def _hstack_shape(*shapes):
    """The shape np.hstack gives, with numpy's checks (equal ranks, equal sizes off the
    joined axis)."""
    shapes = [tuple(s) or (1,) for s in shapes]
    if not shapes:
        raise ValueError("need at least one array to concatenate")
    if all(len(s) == 1 for s in shapes):
        return (sum(s[0] for s in shapes),)
    first = shapes[0]
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(first):
            raise ValueError(
                f"all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {len(first)} dimension(s) and the array at index {i} has "
                f"{len(s)} dimension(s)")
        for d in range(len(s)):
            if d != 1 and s[d] != first[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{first[d]} and the array at index {i} has size {s[d]}")
    return (first[0], sum(s[1] for s in shapes)) + first[2:]


hstack_part_shape = defop("hstack_part_shape", _hstack_part_shape, meta=True,
                          spell=call("hstack_part_shape"),
                          doc="the 2-D shape np.hstack joins an operand as")
hstack_shape = defop("hstack_shape", _hstack_shape, meta=True, spell=call("hstack_shape"),
                     doc="the shape np.hstack gives, once numpy's conditions are checked")
atleast_shape = defop("atleast_shape", _atleast_shape, meta=True, spell=call("atleast_shape"),
                      doc="the shape np.atleast_{1,2,3}d gives")
column_shape = defop("column_shape", _column_shape, meta=True, spell=call("column_shape"),
                     doc="the shape np.column_stack gives each operand")


# ---- sorting: integer results, no gradient -----------------------------------------------------

def _argsort(x, axis=-1, kind=None):
    return get_xp(x).argsort(x, axis=axis, kind=kind)


def _argmax(x, axis=None, keepdims=False):
    return get_xp(x).argmax(x, axis=axis, keepdims=keepdims)


def _argmin(x, axis=None, keepdims=False):
    return get_xp(x).argmin(x, axis=axis, keepdims=keepdims)


argsort = defop("argsort", _argsort, differentiable=False, spell=call("np.argsort"),
                defaults=dict(axis=-1, kind=None))
argmax = defop("argmax", _argmax, differentiable=False, spell=call("np.argmax"),
               defaults=dict(axis=None, keepdims=False))
argmin = defop("argmin", _argmin, differentiable=False, spell=call("np.argmin"),
               defaults=dict(axis=None, keepdims=False))



def _linspace(start, stop, num, endpoint=True, axis=0):
    return numpy.linspace(start, stop, num, endpoint=endpoint, axis=axis)


linspace = defop("linspace", _linspace, differentiable=False, spell=call("np.linspace"),
                 defaults=dict(endpoint=True, axis=0))


def _nonzero_divisor(x):
    if get_xp(x).any(x == 0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    return x


def vjp_nonzero_divisor(g, out, x):
    return g


nonzero_divisor = defop("nonzero_divisor", _nonzero_divisor, vjp_nonzero_divisor,
                        view=True, reads_inputs=False, spell=call("nonzero_divisor"),
                        doc="x itself, once no entry is 0 (np.average's check on its weights)")
