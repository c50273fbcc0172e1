"""Each primitive's output shape from its operands' shapes (`Primitive.out_shape`).

An operand is described by what is known of it: its value (a number, a shape tuple, an
index, a small array), a `Shaped` (an array whose shape is known but not its values), or
`UNKNOWN`. The rule comes from what the op declares: elementwise ops broadcast their
operands, a reduction drops (or keeps as 1) the axes in `axis`, `shape_arg` / `shape_like`
name the operand that is the shape or has it, `shape_rule` is an op's own rule (the
creators: np.zeros(shape)...). Any other op is evaluated on arrays that hold no memory
(`np.broadcast_to(np.zeros((), dtype), shape)`), once filled with zeros and once with
ones: a shape that depends on the values (`x[mask]`) differs between the two and is not
told. None means "cannot tell"; `ShapeMismatch` means the operands cannot go together
(shapes that do not broadcast).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

import numpy

from .core import set_stager

__all__ = ["Shaped", "UNKNOWN", "ShapeMismatch", "out_shape", "shape_of", "creator_shape",
           "eye_shape", "arange_shape"]

# an abstract evaluation runs only on operands of at most this many elements in all (its
# results, matmul's say, may allocate)
_EVAL_LIMIT = 1 << 12


class Shaped:
    """An array operand of known shape (and dtype, float64 when not known), values unknown."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype=None):
        self.shape = tuple(shape)
        self.dtype = numpy.dtype(dtype if dtype is not None else numpy.float64)

    def __repr__(self):
        return f"Shaped({self.shape}, {self.dtype})"


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"


#: an operand nothing is known of
UNKNOWN = _Unknown()


class ShapeMismatch(ValueError):
    """The operands' shapes cannot go together under the op's declared rule."""


def shape_of(a) -> Optional[tuple]:
    """The shape of an operand description, or None when unknown."""
    if a is UNKNOWN:
        return None
    if isinstance(a, Shaped):
        return a.shape
    if isinstance(a, (int, float, complex, bool, numpy.generic)):
        return ()
    if isinstance(a, numpy.ndarray):
        return a.shape
    return None


def out_shape(prim, args: Sequence[Any], params: Optional[dict] = None) -> Optional[tuple]:
    """`prim`'s output shape for these operand descriptions (see the module docstring)."""
    params = {**prim.defaults, **(params or {})}
    if prim.structured or prim.meta or prim.kind in ("list", "shape_of") or prim.custom:
        return None  # not an array, or not the op set's to evaluate
    if prim.shape_rule is not None:
        return _told(prim.shape_rule, args, params)
    if prim.shape_arg is not None:
        return _shape_operand(args, prim.shape_arg)
    if prim.shape_like is not None:
        return shape_of(args[prim.shape_like]) if prim.shape_like < len(args) else None
    if prim.kind == "elementwise":
        return _broadcast(args)
    if prim.kind == "reduction":
        return _reduced(args, params)
    return _evaluated(prim, args, params)


def _told(rule, args, params):
    try:
        return rule(args, params)
    except (TypeError, ValueError, IndexError):
        return None


def _shape_operand(args, i) -> Optional[tuple]:
    """The output shape named by operand i (reshape's may hold one -1)."""
    if i >= len(args):
        return None
    s = _as_shape(args[i])
    if s is None or -1 not in s:
        return s
    x = shape_of(args[0])
    if x is None or s.count(-1) != 1:
        return None
    known = math.prod(d for d in s if d != -1)
    if known == 0 or math.prod(x) % known:
        raise ShapeMismatch(f"cannot reshape {x} into {s}")
    return tuple(math.prod(x) // known if d == -1 else d for d in s)


def _as_shape(v) -> Optional[tuple]:
    """A shape value (an int or a tuple of ints) as a tuple, or None when it is not one."""
    if isinstance(v, (int, numpy.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)) and all(
            isinstance(d, (int, numpy.integer)) and not isinstance(d, bool) for d in v):
        return tuple(int(d) for d in v)
    return None


def _broadcast(args) -> Optional[tuple]:
    shapes = [shape_of(a) for a in args if a is not None]
    if any(s is None for s in shapes):
        return None
    try:
        return tuple(numpy.broadcast_shapes(*shapes))
    except ValueError as err:
        raise ShapeMismatch(f"shapes {shapes} do not broadcast") from err


def _reduced(args, params) -> Optional[tuple]:
    x = shape_of(args[0]) if args else None
    axis = params.get("axis")
    if x is None or not (axis is None or isinstance(axis, (int, tuple))):
        return None
    keep = bool(params.get("keepdims"))
    if axis is None:
        return (1,) * len(x) if keep else ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    try:
        axes = {operator.index(a) % len(x) if -len(x) <= a < len(x) else None for a in axes}
    except (TypeError, ZeroDivisionError):
        return None
    if None in axes:
        raise ShapeMismatch(f"axis {axis} is out of range for {len(x)} dimensions")
    return tuple(1 if i in axes else d for i, d in enumerate(x) if keep or i not in axes)


def _evaluated(prim, args, params) -> Optional[tuple]:
    """The shape of `prim.impl` run on arrays that hold no memory, when the same for two
    fillings (a shape read from the values is not told)."""
    if prim.impl is None or not prim.pure or any(a is UNKNOWN for a in args):
        return None
    size = sum(math.prod(a.shape) for a in args if isinstance(a, Shaped))
    size += sum(a.size for a in args if isinstance(a, numpy.ndarray))
    if size > _EVAL_LIMIT and not _a_view(prim, args):
        return None
    shapes = set()
    # an implementation that calls other primitives must not stage them into a graph
    # this thread is compiling
    prev = set_stager(None)
    try:
        for fill in (0, 1):
            shapes.add(_run_on(prim, args, params, fill))
    finally:
        set_stager(prev)
    return shapes.pop() if len(shapes) == 1 and None not in shapes else None


#: ops that give a view of their operand: on the memoryless operands they cost nothing
#: at any size
_VIEWS = frozenset({"transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
                    "diagonal", "flip"})


def _a_view(prim, args) -> bool:
    """x[basic index], x.T and the like: a view of the memoryless operand, made at no cost
    at any size."""
    from .shapes import is_basic_index

    if prim.subscript:
        return len(args) == 2 and is_basic_index(args[1])
    return prim.name in _VIEWS


def matmul_shape(args, params) -> Optional[tuple]:
    """a @ b: numpy's rule (a vector operand gets a 1 dimension, dropped again; the
    stacking dimensions broadcast)."""
    a, b = (shape_of(x) for x in args[:2])
    if a is None or b is None:
        return None
    if not a or not b:
        raise ShapeMismatch("matmul: an operand is 0-d")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeMismatch(f"matmul: {a} and {b} do not match in their core dimension")
    try:
        stack = tuple(numpy.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError as err:
        raise ShapeMismatch(f"matmul: stacks {a[:-2]} and {b[:-2]} do not broadcast") from err
    return stack + a2[-2:-1] * (len(a) > 1) + b2[-1:] * (len(b) > 1)


def _run_on(prim, args, params, fill) -> Optional[tuple]:
    """The shape of `prim.impl` on the operands, each `Shaped` one all `fill`."""
    operands = [numpy.broadcast_to(numpy.full((), fill, a.dtype), a.shape)
                if isinstance(a, Shaped) else a for a in args]
    try:
        with numpy.errstate(all="ignore"):
            r = prim.impl(*operands, **params)
    except Exception:  # the op refuses these operands: nothing is told
        return None
    if not isinstance(r, (numpy.ndarray, numpy.generic, int, float, complex, bool)):
        return None
    return tuple(numpy.shape(r))


# ---- the creators' own rules (declared as `shape_rule` where they are defined) -----------

def creator_shape(args, params) -> Optional[tuple]:
    """np.zeros(shape), np.ones(shape), np.full(shape, fill): operand 0 is the shape."""
    return _as_shape(args[0] if args else params.get("shape"))


def eye_shape(args, params) -> Optional[tuple]:
    """np.eye(N, M=None, k=0)."""
    n = args[0] if args else params.get("N")
    m = args[1] if len(args) > 1 else params.get("M")
    m = n if m is None else m
    if _as_shape(n) is None or _as_shape(m) is None or isinstance(n, tuple) or \
            isinstance(m, tuple):
        return None
    return (int(n), int(m))


def arange_shape(args, params) -> Optional[tuple]:
    """np.arange(stop), (start, stop) or (start, stop, step), passed by position: numpy's
    length, ceil((stop - start) / step), at least 0."""
    if any(k in params for k in ("start", "stop", "step")) or not 1 <= len(args) <= 3 or \
            not all(isinstance(b, (int, float, numpy.integer, numpy.floating)) and
                    not isinstance(b, bool) for b in args):
        return None
    start, stop, step = (0, *args, 1) if len(args) == 1 else (*args, 1) if len(args) == 2 \
        else args
    if step == 0:
        return None
    if all(isinstance(b, (int, numpy.integer)) for b in args):
        return (len(range(int(start), int(stop), int(step))),)  # exact for big ints
    return (max(0, math.ceil((stop - start) / step)),)
