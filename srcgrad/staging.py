"""Staging: where primitive calls land while the compiler builds IR.

`Builder` collects equations. While a `staging(builder)` context is active in a thread,
every primitive called by that thread (by the lowerer, by a VJP or JVP rule, by an
optimizer pass) is handed to `Builder.stage`, which folds it when all inputs are
constants, or appends an equation and labels its result with what is known about it: its
kind (array, meta, list), its shape and dtype classes (see `ir.Var`), which values it may
share memory with. Input: primitive calls. Output: a list of `ir.Eqn`.

The compiler's own meta primitives (pack, make_slice, len, int, is_none) are declared
here; control-flow primitives are in `ir`, list primitives in `runtime.ops.lists`.
"""
from __future__ import annotations

import functools
import numbers
import types

import numpy

from runtime import ops
from runtime.ops import core as opcore
from runtime.ops.core import Primitive, call

from .guards import Reads
from .ir import SCALAR, Eqn, Loc, StaticValueNeeded, Var, has_var, set_builder

__all__ = ["Builder", "staging", "written_as_operator", "keeps_numbers", "numpy_made", "floating_dclass", "known", "known_shape", "dtype_class", "known_out_shape", "number_spread", "PACK", "MAKE_SLICE", "LEN", "INT", "INT_VALUED",
           "CHECK_SCALAR", "IS_NONE", "holds_array", "as_array"]


# ---- compiler-internal meta primitives (not part of the op set: no derivatives) --------------

def _pack(*items):
    return tuple(items)


def _make_slice(start, stop, step):
    return slice(start, stop, step)


PACK = Primitive("pack", _pack, meta=True, inline=True,
                 use_text="a tuple or index built from it", spell=lambda i, p, d: (
    f"({i[0]},)" if len(i) == 1 else f"({', '.join(i)})"))
MAKE_SLICE = Primitive("make_slice", _make_slice, meta=True, spell=call("slice"), inline=True,
                       use_text="a slice bound computed from it")
LEN = Primitive("len", len, meta=True, zero_grad=True, spell=call("len"), inline=True)
INT = Primitive("int", int, meta=True, spell=call("int"), use_text="int() of it")
CHECK_SCALAR = Primitive("check_scalar", None, meta=True, spell=call("check_scalar"))
IS_NONE = Primitive("is_none", lambda v, negate=False: (v is None) != negate,
                    differentiable=False, zero_grad=True,
                    spell=lambda i, p, d: f"{i[0]} is {'not ' if p.get('negate') else ''}None")


class staging:
    """Context: route every primitive call made by this thread to `builder`."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.prev_builder = set_builder(self.builder)
        self.prev_stager = opcore.set_stager(self.builder.stage)
        return self.builder

    def __exit__(self, *exc):
        opcore.set_stager(self.prev_stager)
        set_builder(self.prev_builder)
        return False


def holds_array(seq) -> bool:
    """Whether a (nested) list or tuple holds an array value of the IR."""
    return any(holds_array(v) if isinstance(v, (tuple, list)) else
               isinstance(v, Var) and v.kind == "array" for v in seq)


def as_array(seq):
    """A list or tuple of arrays, as numpy takes it where it wants an array: stacked."""
    from runtime.ops.numpy_api import array

    return array(seq)


class Builder:
    """Collects equations. `loc`, `phase` and `hint` label what is staged next."""

    def __init__(self):
        self.eqns: list[Eqn] = []
        self.loc: Loc | None = None
        self.phase = "fwd"
        self.hint = "t"
        self.shape_source: dict[int, Var] = {}  # id of a `shape(v)` result -> v
        self.named: set[int] = set()  # Vars bound to a user's variable name
        # id of a staged result -> its primitive ("cond"/"loop" for a fresh region result)
        self.made_by: dict[int, "Primitive | str"] = {}
        self.inputs: set[int] = set()  # ids of the function's parameters
        self.escaped: set[int] = set()  # ids of arrays put into run-time lists
        # id of a value a statement that runs as written bound -> the arrays folded at
        # compile time that it may share memory with (`y = unknown_fn(z)`)
        self.folded: dict[int, list] = {}
        # ids of values a statement run as written made: of unknown type (srcgrad.verbatim)
        self.opaque: set[int] = set()
        # values statements run as written bind to an object of a class of the user's
        # (`t = Scale(2.0)`): id -> class name
        self.instances: dict[int, str] = {}
        self.frozen: set[int] = set()  # ids of the containers the arguments came in
        self.view_base: dict[int, Var] = {}  # id of a view op's result -> the array it views
        self.carry_why: dict[int, str] = {}  # id of a loop carry -> what its start shares
        self.reads = Reads()  # what the function reads from outside it (srcgrad.guards)
        # id -> ids of the values it may share memory with directly: a view and what it
        # views, a branch result and the values it may be (see `sharing`)
        self.links: dict[int, set[int]] = {}
        # ids of values that are numpy's at run time (arrays, numpy scalars), never Python
        # numbers: see `numpy_made`
        self.numpy_made: set[int] = set()

    def link(self, a, b):
        """Record that Vars `a` and `b` may share memory."""
        self.links.setdefault(a.id, set()).add(b.id)
        self.links.setdefault(b.id, set()).add(a.id)

    def same_array(self, new, old):
        """`new` is the array `old` is, changed in place by a statement that runs as
        written: where old is one an op made (or a view of one), so is new."""
        made = self.made_by.get(old.id)
        if made is None:
            return
        self.made_by[new.id] = made
        if old.id in self.view_base:
            self.view_base[new.id] = self.view_base[old.id]
        self.link(new, old)

    def sharing(self, v) -> set:
        """Ids of every value that may share memory with `v` (itself included)."""
        seen, todo = {v.id}, [v.id]
        while todo:
            for o in self.links.get(todo.pop(), ()):
                if o not in seen:
                    seen.add(o)
                    todo.append(o)
        return seen

    def shared_why(self, v) -> "str | None":
        """What array `v` may share its memory with that an in-place update of it would
        change behind srcgrad's back; None for a fresh array this function made."""
        if v.id in self.inputs:
            return "the caller's argument"
        if v.const_name is not None:
            return "a module-level array"
        if v.id in self.escaped:
            return "an item of a list"
        made = self.made_by.get(v.id)
        if made is None and v.id in self.carry_why:
            return self.carry_why[v.id]
        if made is None:
            return "a value of unknown origin (a loop or branch result)"
        if getattr(made, "view", False):  # declared by the op (runtime.ops.core.Primitive)
            return f"the array it is a view of ({made.name})"
        if getattr(made, "custom", False):  # (whatever it declares: `return z[::1]`)
            return f"what it was given ({made.name} is a user's op, which may return a view)"
        return None

    def may_view(self, w, x) -> bool:
        """May `w` (another value than `x`) share memory with array `x`, so that a write
        into `x` shows through `w`? Follows views back to their base; a branch or loop
        result of unknown origin may be anything made before it."""
        while True:
            if w is x:
                return True
            if isinstance(w, numpy.ndarray):  # a constant srcgrad folded (or a view of one)
                return isinstance(x, numpy.ndarray) and numpy.may_share_memory(w, x)
            if not isinstance(w, Var) or w.kind != "array":
                return False
            if w.id in self.view_base:
                w = self.view_base[w.id]
                continue
            if self.made_by.get(w.id) is not None or w.id in self.inputs or \
                    w.const_name is not None:
                return False
            # of unknown origin: anything but an array made after it (a loop's carry is no
            # view of an array the iteration makes anew: `lap = np.zeros(n)` in the body)
            made = self.made_by.get(x.id) if isinstance(x, Var) else None
            # (a user's op may return a view of what it is given, whatever it declares)
            return not (isinstance(made, Primitive) and not made.view and not made.custom and
                        x.id > w.id)

    def push_block(self):
        self._outer = getattr(self, "_outer", [])
        self._outer.append(self.eqns)
        self.eqns = []

    def pop_block(self) -> list:
        eqns, self.eqns = self.eqns, self._outer.pop()
        return eqns

    def structured(self, prim, ins, outs, params):
        """Append a control-flow equation (cond, for, while, stack ops)."""
        e = Eqn(prim, list(ins), list(outs), params, self.loc, self.phase)
        self.eqns.append(e)
        return e

    def stage(self, prim: Primitive, args, params):
        """Fold the call when its inputs are all constants, else append its equation and
        return its result, a Var labelled with what is known of it."""
        for k, v in params.items():
            if has_var(v):
                raise StaticValueNeeded(f"the {k}= argument of {prim.name} (it must be a "
                                        "constant at compile time)", v)
        args = [self.reads.as_var(a) if type(a) is numpy.ndarray else a for a in args]
        for i, a in enumerate(args):
            if isinstance(a, (tuple, list)) and i not in prim.nondiff and holds_array(a):
                args[i] = as_array(a)  # np.sum([a, b]) sums every element, as numpy does
            elif isinstance(a, (tuple, slice)) and has_var(a):
                args[i] = self.index_value(a)
        if not any(isinstance(a, Var) for a in args) and not prim.creator and \
                prim.pure and not number_spread(prim, args):  # an impure op is called every run
            result = prim.impl(*args, **params)
            if not isinstance(result, numpy.ndarray) or result.size <= 16:
                return result  # constant folding
        for a in args:
            if isinstance(a, Var) and a.id in self.instances and not prim.kind == "list":
                raise TypeError(
                    f"{prim.name}() of `{a.hint}`, a {self.instances[a.id]} object made "
                    "when the function runs: an op of srcgrad's takes arrays and numbers "
                    "(its own operators would apply, and they have no derivative here); "
                    "make the object outside the function")
            if _foreign(a):  # (the generated code could not spell it)
                raise TypeError(f"{prim.name}() of a {type(a).__name__} object: an op of "
                                "srcgrad's takes arrays and numbers (an object's own "
                                "operators and methods apply to objects known at compile "
                                "time only)")
        if prim.meta and prim.zero_grad and any(known_shape(a) is not None for a in args):
            folded = _shape_only(prim, args, params)
            if folded is not _UNFOLDED:
                return folded  # shape, ndim... of an array whose shape a variant knows
        hint = f"{args[0].hint}_shape" if prim.kind == "shape_of" and isinstance(args[0], Var) \
            else self.hint
        out = Var(hint, kind=self._kind(prim, args))
        self.classify(prim, args, params, out)
        self.eqns.append(Eqn(prim, args, [out], dict(params), self.loc, self.phase))
        self._record(prim, args, out)
        return out

    def _record(self, prim, args, out):
        """What the new result may share memory with, and whose shape it is."""
        self.made_by[out.id] = prim
        if out.kind == "array" and numpy_made(prim, args, self.numpy_made):
            self.numpy_made.add(out.id)
        if prim.view:
            for a in args[:1] if prim.subscript else args:  # (x[idx] is never idx)
                if isinstance(a, Var) and a.kind == "array":
                    self.link(out, a)
            if args and isinstance(args[0], (Var, numpy.ndarray)):
                self.view_base[out.id] = args[0]
        if prim.kind == "list" and not prim.meta:  # list_from, list_append: items escape
            self.escaped.update(a.id for a in args if isinstance(a, Var))
        if prim.kind == "shape_of" and isinstance(args[0], Var):
            self.shape_source[out.id] = args[0]

    def index_value(self, idx):
        """An index (tuple or slice) with run-time parts as a Var built by pack/make_slice."""
        if isinstance(idx, slice):
            if not has_var(idx):
                return idx
            return self.stage(MAKE_SLICE, [idx.start, idx.stop, idx.step], {})
        if isinstance(idx, tuple) and has_var(idx):
            return self.stage(PACK, [self.index_value(i) for i in idx], {})
        return idx

    @staticmethod
    def _kind(prim, args):
        if prim.kind == "list":
            return "list"
        if prim.meta:
            return "meta"
        if prim.creator or any(isinstance(a, Var) and a.kind == "array" for a in args):
            return "array"
        # arithmetic on shapes and ints (n // 2, x.shape[0]) stays meta; anything else made
        # from them (broadcast_to(1.0, shape), reshape...) is an array
        return "meta" if prim.on_meta else "array"

    def classify(self, prim, args, params, out):
        """Label `out`, the result of `prim(*args, **params)`, with its shape and dtype
        classes: the facts the primitive declares, and its known shape where its operands'
        are known (a specialized variant's)."""
        self._classes(prim, args, params, out)
        args = _int_index_as_zero(prim, args)
        if out.kind == "array" and (prim.shape_arg is not None or
                                    all(_shape_told(a) for a in args)):
            _known_class(prim, args, params, out)

    def _classes(self, prim, args, params, out):
        """Propagate same-shape / same-dtype facts (see ir.Var) from what the primitive
        declares (runtime.ops.core.Primitive: kind, dtype, shape_arg, shape_like...)."""
        arrays = [a for a in args if isinstance(a, Var) and a.kind == "array"]
        if prim.shape_arg is not None:  # broadcast_to(x, shape(y)) has y's shape
            self._classes_to_shape(prim, args, out)
        elif prim.elementwise and arrays and _scalar_operands(args):
            if len({a.sclass for a in arrays}) == 1:
                out.sclass = arrays[0].sclass
            out.dclass = _elementwise_dclass(prim, args, out, params)
        else:
            out.sclass = _shape_class(prim, args, params, arrays, out.sclass)
            out.dclass = _dtype_class(prim, args, out)
        if prim.positional_dtype is not None:
            made = _created_dclass(prim, args, params)
            if made is not None:
                out.dclass = made
        elif prim is ops.astype and len(args) > 1 and isinstance(args[1], str):
            out.dclass = dtype_class(args[1])  # x.astype(np.float64): float64

    def _classes_to_shape(self, prim, args, out):
        src = args[prim.shape_arg]
        if isinstance(src, Var) and src.id in self.shape_source:
            out.sclass = self.shape_source[src.id].sclass
        x = args[0]
        if isinstance(x, Var) and (prim.dtype == "same" or floating_dclass(x.dclass)):
            out.dclass = x.dclass
        elif type(x) is float:
            out.dclass = dtype_class(numpy.float64)  # np.broadcast_to(1.0, s): float64


# ---- which values may be Python numbers at run time (numpy's functions give numpy's) ----

_KEEPS: dict = {}


def keeps_numbers(prim) -> bool:
    """May `prim` give a Python number when its operands are Python numbers? Where it is
    written as a Python operator (`a * b`), returns an operand as it is (a view, sum_to,
    cast_like...), makes one (to_float), or reads a run-time list; numpy's functions
    (np.exp, np.sum...) give numpy's scalars."""
    found = _KEEPS.get(prim)
    if found is None:
        found = _KEEPS[prim] = prim is not ops.as_numpy and (
            prim.kind == "list" or prim.custom or  # (a rule of the user's may return one)
            prim.name in ("python", "sum_to", "to_float", "cast_into", "cast_like",
                          "convert_like") or (prim.view and not prim.fresh) or
            (prim.elementwise and written_as_operator(prim)))
    return found


def written_as_operator(prim) -> bool:
    """Is `prim` written as a Python operator (`{0} * {1}`, `-{0}`, `{0} @ {1}`)?"""
    try:
        text = prim.spell(["a0", "a1", "a2"], {}, prim.defaults)
    except Exception:  # (a spelling that needs parameters: not an operator)
        return False
    head = text.split("(", 1)[0]
    return "(" not in text or not head.replace(".", "").replace("_", "").isalnum()


def numpy_made(prim, args, made: set) -> bool:
    """Is the result of `prim(*args)` numpy's at run time, never a Python number? (`made`:
    the ids of values known to be numpy's)."""
    if prim.custom or prim.name in ("to_float", "python"):
        return False  # (what they return is not known from what they are given)
    return not keeps_numbers(prim) or any(
        (isinstance(a, Var) and a.kind == "array" and a.id in made) or
        isinstance(a, (numpy.ndarray, numpy.generic)) for a in args)


# ---- shapes known at compile time (a variant specialized to its arguments' shapes) --------

def known(shape: tuple) -> tuple:
    """The shape class of values of this one shape (`SCALAR` for 0-d)."""
    return SCALAR if shape == () else ("k", tuple(shape))


def dtype_class(dtype) -> tuple:
    """The dtype class of values of this one dtype (floating ones marked as such)."""
    try:
        return _dtype_class_of(dtype)
    except TypeError:  # (unhashable: numpy's own error, or a class made of it)
        return _dtype_class_of.__wrapped__(dtype)


@functools.lru_cache(maxsize=512)
def _dtype_class_of(dtype) -> tuple:
    # (asked for each op of every function compiled: numpy.dtype() costs a microsecond)
    dtype = numpy.dtype(dtype)
    return ("f" if dtype.kind == "f" else "k", dtype.str)


def known_shape(v) -> "tuple | None":
    """The shape of array Var `v` where its class tells it (a `known` class), else None."""
    if isinstance(v, Var) and v.kind == "array" and v.const_name is None:
        c = v.sclass
        if c[0] == "k":
            return c[1]
        if c == SCALAR:
            return ()
    return None


def number_spread(prim, args) -> bool:
    """A number broadcast to a shape: kept as it is (not folded into an array constant),
    so that numpy broadcasts the number where the result meets an array."""
    return prim.shape_arg is not None and \
        isinstance(args[0], numbers.Number) and args[prim.shape_arg] != ()


#: the dtype class of a meta value that is a Python int at every call (a loop's counter
#: over a range)
INT_VALUED = ("int",)


def _int_index_as_zero(prim, args):
    """`x[t]` with `t` an int of unknown value has the shape of `x[0]` (or raises at run
    time, as numpy would): its shape rule is told 0."""
    if prim.name == "getitem" and len(args) == 2 and isinstance(args[1], Var) and \
            args[1].kind == "meta" and args[1].dclass == INT_VALUED:
        return [args[0], 0]
    return args


def _shape_told(a) -> bool:
    """Is what a shape rule needs of operand `a` known: a constant, or an array of a known
    class (SCALAR or `known`)?"""
    if not isinstance(a, Var):
        return not isinstance(a, (list, tuple)) or not has_var(a)
    return a.kind == "array" and a.const_name is None and \
        (a.sclass == SCALAR or a.sclass[0] == "k")


def _described(a):
    from runtime.ops.shape_rules import UNKNOWN, Shaped

    if not isinstance(a, Var):
        return a
    if a.kind == "array" and a.sclass == SCALAR and a.const_name is None:
        return Shaped(())
    shape = known_shape(a)
    return UNKNOWN if shape is None else Shaped(shape)


_UNFOLDED = object()


def _shape_only(prim, args, params):
    """A shape-only primitive (shape, ndim, reduced_size, len) of arrays of known shapes,
    evaluated now on arrays that hold no memory; `_UNFOLDED` where an operand is not
    known."""
    vals = []
    for a in args:
        if isinstance(a, Var):
            if a.kind != "array" or a.const_name is not None:
                return _UNFOLDED
            shape = () if a.sclass == SCALAR else known_shape(a)
            if shape is None:
                return _UNFOLDED
            a = numpy.broadcast_to(numpy.zeros(()), shape)
        vals.append(a)
    return prim.impl(*vals, **params)


def known_out_shape(prim, args, params) -> "tuple | None":
    """The shape of `prim(*args, **params)` where every operand's shape is known (a
    constant, or an array of a known class), else None."""
    from runtime.ops.shape_rules import ShapeMismatch

    if not all(_shape_told(a) for a in args):
        return None
    try:
        return prim.out_shape([_described(a) for a in args], params)
    except ShapeMismatch:
        return None


def _known_class(prim, args, params, out):
    """Give `out` the `known` class of its shape where its operands' shapes are known
    (a specialized variant's): the primitive's shape rule tells it."""
    from runtime.ops.shape_rules import ShapeMismatch

    try:
        shape = prim.out_shape([_described(a) for a in args], params)
    except ShapeMismatch:
        return  # the call raises at run time, as numpy says
    if shape is not None:
        out.sclass = known(shape)


def _shape_class(prim, args, params, arrays, sclass):
    """The shape class of a result that is not elementwise (`sclass`: its own)."""
    if prim.shape_like is not None and arrays and len(arrays) == len(args):
        sclass = args[prim.shape_like].sclass
    if prim.kind == "reduction" and params.get("axis") is None and \
            not params.get("keepdims"):
        sclass = SCALAR  # a full reduction: a 0-d result at every call
    if prim.shape_key is not None and arrays and isinstance(args[0], Var):
        key = prim.shape_key(args[1])
        if key is not None:  # x[1:] and x[:-1] have one shape, whatever x's is
            sclass = ("slice", args[0].sclass, key)
    return sclass


def _dtype_class(prim, args, out):
    """The dtype class of a result that is not elementwise, from the op's dtype fact."""
    dtype = prim.dtype
    if prim in (ops.any, ops.all):
        return ("bool",)  # (numpy's any and all give bools, of any operand)
    if isinstance(dtype, tuple):  # ("like", i)
        src = args[dtype[1]]
        if isinstance(src, Var) and src.kind == "array" and not (
                _ints(src.dclass) and prim.name.endswith(_PRODUCT_HELPERS)):
            return src.dclass  # (of integers, a product's helper gives numpy's int64)
        return out.dclass
    # (the operands: not an index, a shape, a mask, whose dtypes are not the result's)
    arrays = [a for i, a in enumerate(args) if i not in prim.nondiff and
              isinstance(a, Var) and a.kind == "array"]
    if dtype is not None and arrays and len({a.dclass for a in arrays}) == 1:
        d = arrays[0].dclass
        strong, unsure = _constant_dtypes(prim, args)
        if (strong or unsure) and (dtype == "same" or floating_dclass(d)):
            # (a constant of numpy's dtype among the operands, a folded cotangent
            # `np.array([[2.0, 2.0]]) / s` of a float32 s: numpy's promotion decides)
            if not unsure and len(d) == 2 and isinstance(d[1], str):
                return dtype_class(numpy.result_type(numpy.dtype(d[1]), *strong))
            return ("f", out.id) if floating_dclass(d) else out.dclass
        if (dtype == "same" and not (_ints(d) and prim.name.endswith(_PRODUCT_HELPERS))) \
                or floating_dclass(d):
            return d  # (of integers, a product's helper gives numpy's int64)
        if dtype == "float":
            return ("f", out.id)  # float64 for integers
    return out.dclass


def _ints(dclass) -> bool:
    """Is `dclass` the class of an integer or bool dtype (known, or bool)?"""
    return dclass == ("bool",) or (len(dclass) == 2 and dclass[0] == "k" and
                                  isinstance(dclass[1], str) and
                                  numpy.dtype(dclass[1]).kind in "iub")


# the derivatives of products (`matmul_grad_a`...): of integers, numpy's int64
_PRODUCT_HELPERS = ("_grad_a", "_grad_b")


@functools.lru_cache(maxsize=512)
def _known_dtype(dclass):
    """The numpy dtype of a dtype class that names one, else None."""
    if dclass == ("bool",):
        return numpy.dtype(bool)
    if isinstance(dclass, tuple) and len(dclass) == 2 and isinstance(dclass[1], str):
        return numpy.dtype(dclass[1])
    return None


def _operand_key(a, floating=None):
    """What decides the dtype an elementwise op gives of operand `a`, hashable: its dtype
    (an array: `floating`, where given, for one of an unknown floating dtype), or its type
    and value (a Python number: weak, NEP 50, and numpy refuses one out of an integer
    dtype's range), or None where that is not known."""
    if isinstance(a, Var):
        if a.kind == "meta":
            return ("py", "int", 1)  # (an int known when the code runs: a size, an index)
        dt = _known_dtype(a.dclass) if a.kind == "array" else None
        if dt is None and floating is not None and a.kind == "array" and \
                floating_dclass(a.dclass):
            dt = _known_dtype(("k", floating))
        return None if dt is None else ("array", dt.str)
    if type(a) in (int, float, bool):
        return ("py", type(a).__name__, a)
    if isinstance(a, (numpy.ndarray, numpy.generic)) and a.dtype.kind in "biufc":
        return ("array" if isinstance(a, numpy.ndarray) else "scalar", a.dtype.str)
    return None


@functools.lru_cache(maxsize=1024)
def _asked(prim, keys: tuple, params: tuple):
    """The dtype `prim` gives of operands described by `keys` (`_operand_key`), asked of
    its own implementation on one-element arrays: exact by construction, for numpy's
    ufuncs and scipy.special's alike (scipy's xlogy of a float32 array and a Python float
    is float64, numpy's multiply float32). None where the call fails (numpy refuses the
    operands: the program's own call fails the same way)."""
    reps = []
    for k in keys:
        if k[0] == "py":
            reps.append(k[2])
        elif k[0] == "scalar":
            reps.append(numpy.ones((), numpy.dtype(k[1]))[()])
        else:
            reps.append(numpy.ones(1, numpy.dtype(k[1])))
    import warnings

    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            made = prim.impl(*reps, **dict(params))
        except Exception:  # noqa: BLE001 (no claim: numpy decides at run time)
            return None
    dt = getattr(made, "dtype", None)
    return dt if isinstance(dt, numpy.dtype) and dt.kind in "biufc" else None


def _asked_dclass(prim, args, params, floating=None):
    """The dtype class of `prim(*args, **params)` asked of the op (`_asked`), where every
    operand's dtype is known (with `floating`: an operand of an unknown floating dtype
    taken as that one) and one at least is an array; else None."""
    keys = tuple(_operand_key(a, floating) for a in args)
    if None in keys or not any(k[0] == "array" for k in keys):
        return None
    try:
        ps = tuple(sorted(params.items()))
        hash(ps)
    except TypeError:
        return None
    dt = _asked(prim, keys, ps)
    if dt is None:
        return None
    return ("bool",) if dt.kind == "b" else dtype_class(dt)


def _constant_dtypes(prim, args) -> tuple:
    """(the dtypes of the operands that are numpy's arrays and scalars, which numpy's
    promotion takes as they are; whether a Python number is an operand too). A ufunc takes
    a Python number as weak (NEP 50: `x * 2.0` keeps x's dtype, see `_elementwise_dclass`);
    a function that makes an array of it first (`np.dot(1.0, x)`: float64 with a float32 x)
    does not, and a derivative's helper (`dot_grad_a(1.0, a, b)`) takes the other
    operand's: which, the op table does not say, so no dtype is claimed."""
    strong, unsure = [], False
    for i, a in enumerate(args):
        if i in prim.nondiff:  # (an index, a shape, an axis, a mask: not an operand)
            continue
        if isinstance(a, (numpy.ndarray, numpy.generic)):
            strong.append(a.dtype)
        elif type(a) in (float, int, bool, complex):
            unsure = True
    return strong, unsure


def _created_dclass(prim, args, params):
    """The dtype class of a new array (np.zeros, np.full...) whose dtype the call names by
    a constant (`dtype=np.float32`, `'float64'`) or leaves to numpy's default (float64, or
    a Python fill value's type), else None (another array's dtype, read at run time)."""
    i, default = prim.positional_dtype
    dt = params.get("dtype", args[i] if len(args) > i else None)
    if dt is None and default == "float":
        dt = numpy.float64
    elif dt is None and isinstance(default, tuple) and len(args) > default[1]:
        fill = args[default[1]]  # np.full(shape, 2.5): float64; np.full(shape, 3): int
        dt = type(fill) if type(fill) in (float, int, bool) else None
    if dt is None or isinstance(dt, Var) or not isinstance(dt, (str, type, numpy.dtype)):
        return None
    try:
        return dtype_class(numpy.dtype(dt))
    except TypeError:
        return None


def _scalar_operands(args) -> bool:
    """Are the operands that are not arrays unable to change a broadcast's shape: numbers,
    ints known only at run time? (A list, say `x + hs`, is an array with one more axis.)"""
    return all((isinstance(a, Var) and a.kind == "meta") or isinstance(a, numbers.Number) or
               a is None for a in args if not (isinstance(a, Var) and a.kind == "array"))


def floating_dclass(dclass) -> bool:
    """Whether values of this dtype class are known to be floating point: made by an op
    with a floating result, or the fast path's `wrt` arguments (float arrays by guard)."""
    return dclass == ("same",) or dclass[0] == "f"


# numpy's functions that make an array of their first operand before their ufunc runs:
# a Python number there is float64, not weak (np.clip(1.5, lo, hi) of float32 bounds)
_ARRAY_FIRST = frozenset({"clip"})


def _elementwise_dclass(prim, args, out, params=None):
    """The dtype class of an elementwise result. Where its arrays' dtype is one and every
    operand's is known (a specialized variant's), numpy's own answer (`_asked_dclass`).
    Otherwise the operands'
    class only when the op keeps that dtype: a floating dtype with Python scalars (weak,
    NEP 50), where the op does so for float32 and float64 alike (numpy's ufuncs do;
    scipy's xlogy of a float32 array and a Python float is float64), or any dtype for ops
    that keep it with no scalar in the way; `2 * n` for an int array n is an int array but
    `n / 3` is float64, so claiming n's class would let codegen write `n /= 3`.

    (Complexity about 26: numpy's promotion rules, case by case; kept in one place.)"""
    if not prim.differentiable and prim.dtype is None:  # (a predicate)
        return ("bool",)
    params = params or {}
    # (operands of one dtype, and Python numbers: a product of arrays of two dtypes keeps
    # no claim, so that a rewrite may still fold a number spread into a product, see
    # optimize._forgets_dtype)
    if len({a.dclass for i, a in enumerate(args) if isinstance(a, Var) and
            a.kind == "array" and not (i in prim.nondiff and a.dclass == ("bool",))}) == 1:
        asked = _asked_dclass(prim, args, params)
        if asked is not None:
            return asked
    # where's condition (an input with no derivative) gives the result no dtype
    operands = [a for i, a in enumerate(args) if i not in prim.nondiff]
    data = [a for a in operands if isinstance(a, Var) and a.kind == "array"]
    scalars = [a for a in operands if not (isinstance(a, Var) and a.kind == "array")]
    # (an operand with no derivative takes part in numpy's promotion, the sign of
    # copysign; but a mask, where's condition, widens no dtype)
    others = [a for i, a in enumerate(args) if i in prim.nondiff and
              not (isinstance(a, Var) and a.dclass == ("bool",)) and type(a) is not bool]
    if data and len({a.dclass for a in data}) == 1 and not others:
        d = data[0].dclass
        weak = all(type(a) in (int, float, bool) or (isinstance(a, Var) and a.kind == "meta")
                   for a in scalars) and not (prim.name in _ARRAY_FIRST and args and
                                              not isinstance(args[0], Var))
        if weak and floating_dclass(d) and all(
                _asked_dclass(prim, args, params, w) == dtype_class(w)
                for w in ("float32", "float64")):
            return d
        if not scalars and prim.dtype == "same" and not _ints(d):
            return d
    if prim.dtype == "float" or any(
            type(a) is float or (isinstance(a, Var) and a.kind == "array" and
                                 floating_dclass(a.dclass)) for a in operands):
        # floating (numpy promotes anything with a float to a float), of a dtype numpy
        # picks from the operands'
        return ("f", out.id)
    return out.dclass


def _foreign(v) -> bool:
    """An object of a class of the user's (or a library's) as an op's input: neither a
    value of numpy's or the builtins' nor a run-time value."""
    if isinstance(v, (Var, numbers.Number, numpy.ndarray, numpy.generic, str, bytes,
                      tuple, list, slice, type(None), type(Ellipsis), numpy.dtype, type,
                      types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                      types.ModuleType)):
        return False
    mod = str(getattr(type(v), "__module__", ""))
    return not mod.startswith(("numpy", "builtins", "runtime", "srcgrad", "functools",
                               "scipy"))
