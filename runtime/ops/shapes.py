"""Shape primitives: reshape, transpose, broadcasting, joining, indexing, and array creation.

`sum_to` undoes broadcasting (its VJP is `broadcast_to`, and the other way round).
`getitem` covers basic slices, integer arrays and boolean masks; its VJP `scatter_add`
accumulates repeated indices (numpy's `add.at`).
"""
from __future__ import annotations

import numpy

from ..backend import get_xp
from .core import call, defop, fmt

__all__ = [
    "shape", "ndim", "reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "sum_to", "concatenate", "stack", "flip", "getitem", "scatter_add",
    "zeros_like", "ones_like", "cast_like", "astype", "zeros", "ones", "full", "eye",
    "arange", "broadcast_shapes", "concat_index", "is_basic_index", "to_device", "stop_gradient",
    "to_float",
]


def _shape_of(x):
    s = getattr(x, "shape", None)
    return numpy.shape(x) if s is None else s


# ---- meta: shapes as values ------------------------------------------------------------------

shape = defop("shape", _shape_of, meta=True, zero_grad=True, spell=fmt("{0}.shape"))
ndim = defop("ndim", lambda x: len(_shape_of(x)), meta=True, zero_grad=True, spell=fmt("{0}.ndim"))


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


def _sum_to(x, newshape):
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
    elif xp is numpy:
        numpy.add.at(z, idx, v)
    else:
        import cupyx

        cupyx.scatter_add(z, idx, v)
    return z


def _cast_like(x, like):
    try:
        if x.dtype is like.dtype or x.dtype == like.dtype:  # the common case first
            return x
    except AttributeError:
        pass
    dt = getattr(like, "dtype", None)
    if dt is None or getattr(x, "dtype", None) == dt:
        return x
    return get_xp(x).asarray(x, dtype=dt)


def _astype(x, dtype):
    return get_xp(x).asarray(x, dtype=dtype)


def _zeros_like(x):
    return get_xp(x).zeros_like(x)


def _ones_like(x):
    return get_xp(x).ones_like(x)


# ---- the table -------------------------------------------------------------------------------

reshape = defop("reshape", _xp_fn("reshape"), vjp_reshape, nondiff=(1,), reads_inputs=False,
                spell=call("np.reshape"))
transpose = defop("transpose", _xp_fn("transpose"), vjp_transpose, reads_inputs=False,
                  spell=call("np.transpose"), defaults=dict(axes=None))
swapaxes = defop("swapaxes", _xp_fn("swapaxes"), vjp_swapaxes, reads_inputs=False,
                 spell=call("np.swapaxes"))
moveaxis = defop("moveaxis", _xp_fn("moveaxis"), vjp_moveaxis, reads_inputs=False,
                 spell=call("np.moveaxis"))
expand_dims = defop("expand_dims", _xp_fn("expand_dims"), vjp_expand_dims,
                    reads_inputs=False, spell=call("np.expand_dims"))
squeeze = defop("squeeze", _xp_fn("squeeze"), vjp_squeeze, reads_inputs=False,
                spell=call("np.squeeze"), defaults=dict(axis=None))
broadcast_to = defop("broadcast_to", _xp_fn("broadcast_to"), vjp_broadcast_to, nondiff=(1,),
                     reads_inputs=False, spell=call("np.broadcast_to"))
sum_to = defop("sum_to", _sum_to, vjp_sum_to, nondiff=(1,), reads_inputs=False,
               spell=call("sum_to"), doc="sum down to a shape: the reverse of broadcasting")
concatenate = defop("concatenate", _concatenate, vjp_concatenate, variadic=True,
                    reads_inputs=False, defaults=dict(axis=0))
concatenate.spell = lambda ins, params, d: (
    f"np.concatenate([{', '.join(ins)}]"
    + ("" if params.get("axis", 0) == 0 else f", axis={params['axis']!r}") + ")")
stack = defop("stack", _stack, vjp_stack, variadic=True, reads_inputs=False,
              defaults=dict(axis=0))
stack.spell = lambda ins, params, d: (
    f"np.stack([{', '.join(ins)}]"
    + ("" if params.get("axis", 0) == 0 else f", axis={params['axis']!r}") + ")")
flip = defop("flip", _xp_fn("flip"), vjp_flip, reads_inputs=False, spell=call("np.flip"),
             defaults=dict(axis=None))
getitem = defop("getitem", _getitem, vjp_getitem, nondiff=(1,), reads_inputs=False,
                spell=fmt("{0}[{1}]"))
scatter_add = defop("scatter_add", _scatter_add, vjp_scatter_add, nondiff=(1, 2),
                    reads_inputs=False, spell=call("scatter_add"),
                    doc="zeros of `newshape` with `v` added at `idx` (repeats accumulate)")
cast_like = defop("cast_like", _cast_like, vjp_cast_like, nondiff=(1,), reads_inputs=False,
                  spell=call("cast_like"), doc="x in the dtype of `like`")
def _casts_to_integers(args, params) -> bool:
    """astype to an integer or boolean dtype is piecewise constant: no derivative."""
    return len(args) > 1 and numpy.dtype(args[1]).kind not in "fc"


astype = defop("astype", _astype, vjp_astype, nondiff=(1,), reads_inputs=False,
               spell=call("np.asarray"), zero_grad=_casts_to_integers)
stop_gradient = defop("stop_gradient", lambda x: x, differentiable=False,
                      spell=call("stop_gradient"),
                      doc="x itself, through which no gradient flows (the tape's detach)")
def _to_float(x):
    # numpy raises for arrays of one or more dimensions, as Python's float() does; the
    # result is a float64 scalar (a Python float that still has .shape and .dtype)
    return numpy.float64(float(x))


def vjp_to_float(g, out, x):
    return g


to_float = defop("to_float", _to_float, vjp_to_float, reads_inputs=False, spell=call("to_float"),
                 doc="Python's float() of a 0-d array (what math.exp(x) and float(x) do)")
zeros_like = defop("zeros_like", _zeros_like, differentiable=False,
                   spell=call("np.zeros_like"))
ones_like = defop("ones_like", _ones_like, differentiable=False, spell=call("np.ones_like"))


def _creator(name):
    def impl(*args, **kw):
        return getattr(numpy, name)(*args, **kw)

    impl.__name__ = name
    return defop(name, impl, differentiable=False, spell=call(f"np.{name}"))


zeros = _creator("zeros")
ones = _creator("ones")
full = _creator("full")
eye = _creator("eye")
arange = _creator("arange")


# ---- devices ---------------------------------------------------------------------------------

def _to_device(x, device, source="cpu"):
    if device == "cpu":
        return x if isinstance(x, numpy.ndarray) else x.get()
    import cupy

    return cupy.asarray(x)


def vjp_to_device(g, out, x, device, source="cpu"):
    return to_device(g, device=source, source=device)


to_device = defop("to_device", _to_device, vjp_to_device, reads_inputs=False,
                  spell=call("to_device"), doc="copy between 'cpu' (numpy) and 'cuda' (cupy)")
