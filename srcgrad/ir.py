"""The IR: a flat list of equations in SSA form over the op set, with a printer and a checker.

    Graph(inputs=[x, y], eqns=[Eqn(multiply, [x, y], [z]), ...], outputs=[z])

A `Var` is a value computed at run time; an equation's inputs are Vars or plain constants
(Python scalars, tuples, slices, None, small arrays). `kind` is "array" for values the
gradient can flow through and "meta" for shapes, ints and index tuples. `sclass` and
`dclass` are equivalence classes: two Vars with the same `sclass` are known to have the
same shape, with the same `dclass` the same dtype, at every call. The optimizer uses them
to drop `sum_to`, `broadcast_to` and casts that would do nothing, without fixing shapes:
the emitted code stays shape-polymorphic.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import linecache
import numbers
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from runtime.ops.core import Primitive, literal

from .errors import SrcgradError

__all__ = ["Var", "Eqn", "Graph", "Block", "Loc", "IRError", "free_vars", "iter_vars",
           "unsound_uses", "referenced", "subst", "has_var", "located_error", "block_binders",
           "StaticValueNeeded", "current_builder", "set_builder", "SCALAR",
           "COND", "FOR", "WHILE", "NEWSTACK", "PUSH", "POP", "PYTHON"]

_ids = itertools.count()


class IRError(AssertionError):
    """The IR broke an invariant (a compiler bug, not a user error)."""


@dataclass(frozen=True)
class Loc:
    """Where an equation came from in the user's code."""

    filename: str
    lineno: int
    col: int
    text: str  # the source line, stripped

    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


class StaticValueNeeded(Exception):
    """Python needs a concrete value (a bool, an int, a length) of a run-time value."""

    def __init__(self, what: str, var=None):
        self.what = what
        self.var = var
        super().__init__(what)


# The builder of this thread's compilation (srcgrad.staging.Builder): a primitive called with
# a Var stages an equation into it. Compilations in other threads, and the tape, run beside
# it untouched. It is set by `srcgrad.staging.staging`.
_local = threading.local()


def current_builder():
    b = getattr(_local, "builder", None)
    if b is None:
        raise RuntimeError("a compiler value was used outside of compilation")
    return b


def set_builder(builder):
    """Make `builder` (or None) this thread's builder; returns the previous one."""
    prev = getattr(_local, "builder", None)
    _local.builder = builder
    return prev


#: the shape class of values known to be 0-d
SCALAR = ("scalar",)
# control flow and the reverse pass's stacks (structured equations, see `Block`)
COND = Primitive("cond", None, meta=True, structured=True)
FOR = Primitive("for", None, meta=True, structured=True)
WHILE = Primitive("while", None, meta=True, structured=True)
NEWSTACK = Primitive("newstack", None, meta=True, structured=True)
PUSH = Primitive("push", None, meta=True, structured=True)
POP = Primitive("pop", None, meta=True, structured=True)
#: One statement run as written (srcgrad.verbatim). Not pure (it is never folded, merged or
#: dropped), no derivative rule and no declared zero derivative: a differentiated value
#: reaching an output is refused by the soundness check.
PYTHON = Primitive("python", None, differentiable=False, zero_grad=False, pure=False,
                   structured=True)


def located_error(err: Exception, e: "Eqn") -> SrcgradError:
    """A failure while transforming equation `e` (a custom op without a rule, say) as an
    error at the user's line."""
    if e.loc is None:
        return SrcgradError(str(err))
    return SrcgradError(f"{err} ({e.loc.short()})", e.loc.filename, e.loc.lineno, e.loc.col,
                        linecache.getline(e.loc.filename, e.loc.lineno) or e.loc.text)


def has_var(v) -> bool:
    """Does this value (a Var, or a tuple, list or slice holding one) depend on run time?"""
    if isinstance(v, Var):
        return True
    if isinstance(v, (tuple, list)):
        return any(has_var(x) for x in v)
    if isinstance(v, slice):
        return has_var(v.start) or has_var(v.stop) or has_var(v.step)
    return False


def iter_vars(obj):
    """The Vars in a (nested) output structure: a Var, tuples, lists and dicts of them."""
    if isinstance(obj, Var):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from iter_vars(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from iter_vars(o)


def _ops():
    from runtime import ops

    return ops


class Var:
    """An SSA value. `hint` is the user's variable name it came from (for codegen)."""

    __slots__ = ("id", "hint", "kind", "sclass", "dclass", "const_name", "const_value")

    def __init__(self, hint: str = "t", kind: str = "array", sclass=None, dclass=None):
        self.id = next(_ids)
        self.hint = hint
        self.kind = kind
        self.sclass = sclass if sclass is not None else ("s", self.id)
        self.dclass = dclass if dclass is not None else ("d", self.id)
        self.const_name = None  # set for module-level arrays referenced by name
        self.const_value = None

    def __repr__(self):
        return f"%{self.id}:{self.hint}"

    # The op set dispatches on this hook: a primitive called with a Var stages an equation.
    @staticmethod
    def __op_dispatch__(prim, args, params):
        return current_builder().stage(prim, args, params)

    # Operators and numpy functions on Vars stage primitives too, so code written for
    # arrays (a custom op's derivative rule, say) can be staged as it is.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from runtime.ops.numpy_api import lookup

        adapter = lookup(ufunc) if method == "__call__" else None
        if adapter is None:
            raise TypeError(f"numpy.{ufunc.__name__} has no primitive in the op set")
        return adapter(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from runtime.ops.numpy_api import lookup

        adapter = lookup(func)
        if adapter is None:
            raise TypeError(f"numpy.{func.__name__} has no primitive in the op set")
        return adapter(*args, **kwargs)

    def __getattr__(self, name):
        # ... and so do array methods: `(g * out).reshape(x.shape)`, `g.sum(axis=0)` in a
        # derivative rule (the user's code reads them through lower, the same table)
        if not name.startswith("_"):
            from runtime.ops.numpy_api import METHODS

            method = METHODS.get(name)
            if method is not None:
                return functools.partial(method, self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __add__(self, o):
        return _ops().add(self, o)

    def __radd__(self, o):
        return _ops().add(o, self)

    def __sub__(self, o):
        return _ops().subtract(self, o)

    def __rsub__(self, o):
        return _ops().subtract(o, self)

    def __mul__(self, o):
        return _ops().multiply(self, o)

    def __rmul__(self, o):
        return _ops().multiply(o, self)

    def __truediv__(self, o):
        return _ops().divide(self, o)

    def __rtruediv__(self, o):
        return _ops().divide(o, self)

    def __mod__(self, o):
        return _ops().remainder(self, o)

    def __rmod__(self, o):
        return _ops().remainder(o, self)

    def __floordiv__(self, o):
        return _ops().floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _ops().floor_divide(o, self)

    def __pow__(self, o):
        return _ops().power(self, o)

    def __rpow__(self, o):
        return _ops().power(o, self)

    def __matmul__(self, o):
        return _ops().matmul(self, o)

    def __rmatmul__(self, o):
        return _ops().matmul(o, self)

    def __neg__(self):
        return _ops().negative(self)

    def __lt__(self, o):
        return _ops().less(self, o)

    def __le__(self, o):
        return _ops().less_equal(self, o)

    def __gt__(self, o):
        return _ops().greater(self, o)

    def __ge__(self, o):
        return _ops().greater_equal(self, o)

    def __getitem__(self, idx):
        return _ops().getitem(self, idx)

    @property
    def T(self):
        return _ops().transpose(self)

    @property
    def shape(self):
        return _ops().shape(self)

    # Python-level questions about a run-time value cannot be answered at compile time.
    def _static(self, what):
        raise StaticValueNeeded(what, self)

    def __bool__(self):
        self._static("its truth value")

    def __len__(self):
        self._static("its length")

    def __iter__(self):
        self._static("iteration over it")

    def __index__(self):
        self._static("its integer value")


@dataclass
class Eqn:
    """`outs = prim(*ins, **params)`, from `loc` in the user's code."""

    prim: Primitive
    ins: list
    outs: list
    params: dict = field(default_factory=dict)
    loc: Optional[Loc] = None
    phase: str = "fwd"  # "fwd": the user's computation; "bwd": staged from a VJP rule

    def var_ins(self):
        """Vars this equation reads, including the free Vars of its nested blocks."""
        vs = [v for v in self.ins if isinstance(v, Var)]
        if self.blocks():
            vs += free_vars(self)
        return vs

    def blocks(self):
        return [b for b in self.params.values() if isinstance(b, Block)]

    def lines(self, indent="", types=False) -> list:
        """The equation as text; with `types`, each result with its kind and its shape and
        dtype classes (`%y5: array s=%x0 d=f`, see `Var`), a loop's carries named."""
        outs = ", ".join(_typed(v) if types else _fmt(v) for v in self.outs)
        ins = ", ".join(_fmt(v) for v in self.ins)
        ps = "".join(f", {k}={_fmt(v)}" for k, v in self.params.items()
                     if not isinstance(v, Block))
        where = f"    # {self.loc.short()}" if self.loc else ""
        head = f"{outs} = " if outs else ""
        out = [f"{indent}{head}{self.prim.name}({ins}{ps}){where}"]
        for k, b in self.params.items():
            if isinstance(b, Block):
                out.append(f"{indent}  {k}:")
                for e in b.eqns:
                    out.extend(e.lines(indent + "    ", types))
                out.append(f"{indent}    yield {', '.join(map(_fmt, b.outs))}")
        return out

    def __str__(self):
        return "\n".join(self.lines())


class Block:
    """A nested region (a branch, a loop body, a loop condition): equations in order and
    the values it yields (the new values of the variables it carries or merges)."""

    def __init__(self, eqns=None, outs=None):
        self.eqns = eqns if eqns is not None else []
        self.outs = outs if outs is not None else []

    def __repr__(self):
        return f"<block of {len(self.eqns)} eqns>"


def referenced(eqns, outs=()) -> dict:
    """id -> Var of every Var read by these equations (at any depth) or yielded."""
    seen = {}
    for e in eqns:
        for v in e.ins:
            if isinstance(v, Var):
                seen.setdefault(v.id, v)
        for b in e.blocks():
            seen.update(referenced(b.eqns, b.outs))
    for v in outs:
        if isinstance(v, Var):
            seen.setdefault(v.id, v)
    return seen


def subst(eqns, mapping: dict):
    """Replace Vars (by id) in place, in these equations and their nested blocks."""
    for e in eqns:
        e.ins = [mapping.get(v.id, v) if isinstance(v, Var) else v for v in e.ins]
        for b in e.blocks():
            subst(b.eqns, mapping)
            b.outs = [mapping.get(v.id, v) if isinstance(v, Var) else v for v in b.outs]


def free_vars(e: "Eqn") -> list:
    """Vars read inside e's nested blocks but defined outside them."""
    seen = {}

    def walk(block, bound):
        bound = set(bound)
        for q in block.eqns:
            for v in q.ins:
                if isinstance(v, Var) and v.id not in bound and v.const_name is None:
                    seen.setdefault(v.id, v)
            blocks = q.blocks()
            if blocks:  # (a copy of `bound` per equation would be quadratic)
                inner = bound | {x.id for x in block_binders(q)}
                for b in blocks:
                    walk(b, inner)
            bound.update(o.id for o in q.outs)
        for v in block.outs:
            if isinstance(v, Var) and v.id not in bound and v.const_name is None:
                seen.setdefault(v.id, v)

    binders = {x.id for x in block_binders(e)}
    for b in e.blocks():
        walk(b, binders)
    return list(seen.values())


def _fmt(v: Any) -> str:
    if isinstance(v, Var):
        return f"%{v.hint}{v.id}" if v.const_name is None else v.const_name
    if isinstance(v, list) and any(isinstance(x, Var) for x in v):  # a loop's carries
        return f"[{', '.join(map(_fmt, v))}]"
    try:
        return literal(v)
    except TypeError:
        return f"<{type(v).__name__}>"


def _class(c, own: int) -> str:
    """A shape or dtype class as text: `-` when it is the value's own (nothing known),
    else what it is shared with or known to be."""
    if not isinstance(c, tuple) or not c:
        return "?"
    if c[-1] == own and len(c) == 2:
        return c[0] if c[0] not in ("s", "d") else "-"
    if len(c) == 2 and isinstance(c[1], int):
        return f"{c[0]}{c[1]}"
    return ":".join(_class(x, own) if isinstance(x, tuple) else str(x) for x in c)


def _typed(v) -> str:
    if not isinstance(v, Var):
        return _fmt(v)
    return f"{_fmt(v)}: {v.kind} s={_class(v.sclass, v.id)} d={_class(v.dclass, v.id)}"


@dataclass
class Graph:
    """A function body: named inputs, equations in order, outputs."""

    inputs: list
    eqns: list
    outputs: list
    name: str = "f"
    named: set = field(default_factory=set)  # ids of Vars bound to the user's names

    def pretty(self) -> str:
        """The graph with each value's kind and classes: what `srcgrad show --ir` prints."""
        head = f"{self.name}({', '.join(_typed(v) for v in self.inputs)}):"
        body = [ln for e in self.eqns for ln in e.lines("  ", types=True)]
        outs = ", ".join(_fmt(o) if isinstance(o, Var) else repr(o) for o in self.outputs)
        return "\n".join([head, *body, f"  return {outs}"])

    def __str__(self):
        head = f"{self.name}({', '.join(map(_fmt, self.inputs))}):"
        body = [ln for e in self.eqns for ln in e.lines("  ")]
        outs = ", ".join(_fmt(o) if isinstance(o, Var) else repr(o) for o in self.outputs)
        return "\n".join([head, *body, f"  return {outs}"])

    def check(self, extra_inputs=()) -> "Graph":
        """Verify SSA: every Var is defined once, before its uses. Raises IRError."""
        defined = {v.id for v in self.inputs} | {v.id for v in extra_inputs}
        _check_eqns(self.eqns, defined, set())
        stack = list(self.outputs)
        while stack:
            o = stack.pop()
            if isinstance(o, (tuple, list)):
                stack.extend(o)
            elif isinstance(o, dict):
                stack.extend(o.values())
            elif isinstance(o, Var) and o.id not in defined and o.const_name is None:
                raise IRError(f"output {o!r} is never defined")
        return self

    def check_types(self) -> "Graph":
        """Verify what each equation's primitive declares (runtime.ops.core.Primitive):
        one output for an op (control flow and statements may have any number), as many
        operands (and params) as the op's implementation takes, results of the kind the
        op makes (a list op makes a list, a creator an array...), shape and dtype classes
        of the right form, and shapes where they are known (`_ShapeCheck`). Raises
        IRError. Run after every pass when SRCGRAD_CHECK_IR is set (the test suite sets
        it)."""
        _check_types(self.eqns, _ShapeCheck())
        return self


#: whether every pass checks its result (`Graph.check` and `Graph.check_types`): set for
#: the test suite, off for users (it costs a walk over the IR per pass)
CHECK_EACH_PASS = bool(os.environ.get("SRCGRAD_CHECK_IR"))


def checked(graph: "Graph", stage: str, extra_inputs=None) -> "Graph":
    """`graph`, verified when CHECK_EACH_PASS is on (its SSA order too when the inputs
    it may read besides its own are known); an IRError names the stage."""
    if CHECK_EACH_PASS:
        try:
            if extra_inputs is not None:
                graph.check(extra_inputs)
            graph.check_types()
        except IRError as e:
            raise IRError(f"after {stage}: {e}") from None
    return graph


_VAR_KINDS = {"array", "meta", "list", "stack"}


def _check_types(eqns, shapes: "_ShapeCheck"):
    for e in eqns:
        p = e.prim
        if not isinstance(p, Primitive):
            raise IRError(f"not a primitive: {p!r} in {e.lines()[0]}")
        where = _Where(e)
        for o in e.outs:
            if o.kind not in _VAR_KINDS:
                raise IRError(f"{o!r} has kind {o.kind!r}: {where}")
            if not (isinstance(o.sclass, tuple) and o.sclass and
                    isinstance(o.dclass, tuple) and o.dclass):
                raise IRError(f"{o!r} has malformed classes {o.sclass!r} {o.dclass!r}: {where}")
        if not p.structured:
            if len(e.outs) != 1:
                raise IRError(f"{p.name} has {len(e.outs)} outputs, not 1: {where}")
            _check_arity(e, where)
            _check_kind(e, where)
            if e.outs[0].kind == "array":
                shapes.check(e, where)
        if p in (FOR, WHILE):
            _check_carries(e, where)
        for b in e.blocks():
            _check_types(b.eqns, shapes)


def _check_carries(e: "Eqn", where):
    """A carried value of a known shape or dtype class (one shape, one dtype: lowering
    assumes it where the initial value has it) has it at the start of every iteration:
    its initial value and its value at the end of an iteration have it too, and so does
    the loop's result."""
    inits = e.ins[3:] if e.prim is FOR else e.ins
    for c, i, n, o in zip(e.params["carry"], inits, e.params["body"].outs, e.outs):
        for cls in ("sclass", "dclass"):
            k = getattr(c, cls)
            if not (k == SCALAR or k[0] == "k" or (len(k) == 2 and k[0] == "f" and
                                                    isinstance(k[1], str))):
                continue
            for what, v in (("initial value", i), ("next value", n), ("result", o)):
                if not isinstance(v, Var) or getattr(v, cls) != k:
                    raise IRError(f"carried {c!r} has {cls} {k}, but its {what} {v!r} has "
                                  f"{getattr(v, cls, None)}: {where}")


class _Where:
    """An equation's first line, written only when an error message needs it."""

    __slots__ = ("e",)

    def __init__(self, e: "Eqn"):
        self.e = e

    def __str__(self):
        return self.e.lines()[0]


def _check_kind(e: "Eqn", where: str):
    """The result is of the kind the op makes (a list op a list, a meta op a meta value,
    a creator an array)."""
    p, o = e.prim, e.outs[0]
    if p.kind in ("list", "stack") and o.kind != p.kind:
        raise IRError(f"{p.name} makes a {p.kind}, but {o!r} is {o.kind}: {where}")
    if p.meta and p.kind != "list" and o.kind != "meta":
        raise IRError(f"{p.name} is meta, but {o!r} is {o.kind}: {where}")
    if p.creator and p.kind != "list" and o.kind != "array":
        raise IRError(f"{p.name} makes an array, but {o!r} is {o.kind}: {where}")


@functools.lru_cache(maxsize=4096)
def _signature(impl):
    """The signature of a primitive's implementation (once per implementation), or None
    where Python cannot tell one (some builtins)."""
    try:
        return inspect.signature(impl)
    except (TypeError, ValueError):
        return None


class _Operand:
    """Stands for an operand when binding an equation's operands to a signature."""


def _check_arity(e: "Eqn", where: str):
    """The equation passes operands and params its primitive's implementation accepts
    (`impl(*ins, **params)` binds); control flow and statements have no implementation
    to call and are not checked here."""
    p = e.prim
    if p.impl is None:
        return
    sig = _signature(p.impl)
    if sig is None:
        return
    try:
        sig.bind(*(_Operand() for _ in e.ins), **e.params)
    except TypeError as err:
        raise IRError(f"{p.name} cannot take {len(e.ins)} operands and params "
                      f"{sorted(e.params)} ({err}): {where}") from None


class _ShapeCheck:
    """Shapes where the IR knows them. A shape class (`Var.sclass`) stands for one shape
    at every call, so
    - an elementwise op whose array operands share one class (its other operands numbers
      or meta values, which cannot widen it) makes a result of that class (as staging
      records it), and
    - where the operands' shapes are known (a constant, a class of known shape: SCALAR is
      0-d), the primitive's shape rule (`Primitive.out_shape`) gives the result's, which
      its class must not contradict: two known shapes of one class are an error, as are
      operands whose shapes cannot go together (`a + b` of shapes (3,) and (4,))."""

    def __init__(self):
        self.known = {SCALAR: ()}  # shape class -> its shape, where known

    def check(self, e: "Eqn", where: str):
        from runtime.ops.shape_rules import ShapeMismatch

        p, o = e.prim, e.outs[0]
        arrays = [a for a in e.ins if isinstance(a, Var) and a.kind == "array"]
        if p.elementwise and p.shape_arg is None and arrays and _widens_not(e.ins) and \
                len({a.sclass for a in arrays}) == 1 and o.sclass != arrays[0].sclass:
            raise IRError(f"{p.name} of operands of one shape class {arrays[0].sclass} "
                          f"makes {o!r} of class {o.sclass}: {where}")
        if _has_var_param(e.params):
            return
        try:
            shape = p.out_shape([self.describe(a) for a in e.ins], e.params)
        except ShapeMismatch as err:
            raise IRError(f"{p.name}: {err}: {where}") from None
        if shape is None:
            return
        had = self.known.setdefault(o.sclass, shape)
        if had != shape:
            raise IRError(f"{o!r} has shape {shape} by {p.name}'s shape rule, but its class "
                          f"{o.sclass} has shape {had}: {where}")

    def describe(self, a):
        """What the shape rule is told of operand `a` (runtime.ops.shape_rules)."""
        from runtime.ops.shape_rules import UNKNOWN, Shaped

        if not isinstance(a, Var):
            return a
        if a.kind == "array" and a.const_name is None and isinstance(a.sclass, tuple) and \
                len(a.sclass) == 2 and a.sclass[0] == "k":  # a class of one known shape
            return Shaped(a.sclass[1])
        if a.kind == "array" and a.sclass in self.known and a.const_name is None:
            return Shaped(self.known[a.sclass])
        return UNKNOWN


def _widens_not(ins) -> bool:
    """Are the operands that are not arrays unable to change a broadcast's shape: numbers,
    None, meta values (ints at run time)? A list or tuple would add an axis."""
    return all((isinstance(a, Var) and a.kind in ("array", "meta")) or
               isinstance(a, numbers.Number) or a is None for a in ins)


def _has_var_param(params) -> bool:
    return any(has_var(v) for v in params.values())


def block_binders(e: Eqn) -> list:
    out = []
    for v in e.params.values():
        if isinstance(v, Var):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Var))
    return out


def _check_eqns(eqns, defined: set, everywhere: set):
    """SSA check of a block; `defined` is what is visible here (it is extended)."""
    for e in eqns:
        for v in e.ins:
            if isinstance(v, Var) and v.id not in defined and v.const_name is None:
                raise IRError(f"{v!r} used before definition in: {e.lines()[0]}")
        for b in e.blocks():
            inner = set(defined) | {v.id for v in block_binders(e)}
            _check_eqns(b.eqns, inner, everywhere)
            for v in b.outs:
                if isinstance(v, Var) and v.id not in inner and v.const_name is None:
                    raise IRError(f"block yields undefined {v!r} in: {e.lines()[0]}")
        for o in e.outs:
            if o.id in everywhere:
                raise IRError(f"{o!r} defined twice (second time in: {e.lines()[0]})")
            everywhere.add(o.id)
            defined.add(o.id)


# ---- soundness: no derivative is dropped silently --------------------------------------------

def unsound_uses(eqns, outputs, active: set) -> list:
    """(equation, input index) pairs where a value that depends on an `active` Var (by id)
    enters an input that has neither a VJP rule nor a declared zero derivative (see
    `Primitive.sound_input`), and the equation's result reaches `outputs`. Each such pair
    would silently drop a derivative; the compiler refuses them. `active` is extended with
    every Var that carries a derivative of the active ones."""
    found: list = []
    _flow(eqns, active, found)
    live = _live(eqns, outputs)
    return [(e, i) for e, i in found if any(o.id in live for o in e.outs)]


def _is_active(v, active) -> bool:
    return isinstance(v, Var) and v.id in active


def _flow(eqns, active: set, found: list):
    for e in eqns:
        op = e.prim
        if op is COND:
            then, els = e.params["then"], e.params["else"]
            _flow(then.eqns, active, found)
            _flow(els.eqns, active, found)
            for o, a, b in zip(e.outs, then.outs, els.outs):
                if _is_active(a, active) or _is_active(b, active):
                    active.add(o.id)
        elif op in (FOR, WHILE):
            carry = e.params["carry"]
            inits = e.ins[3:] if op is FOR else e.ins
            for c, i in zip(carry, inits):
                if _is_active(i, active):
                    active.add(c.id)
            while True:  # carries feed back: iterate to a fixed point
                before = len(active)
                for b in e.blocks():
                    _flow(b.eqns, active, [])
                for c, n in zip(carry, e.params["body"].outs):
                    if _is_active(n, active):
                        active.add(c.id)
                if len(active) == before:
                    break
            for b in e.blocks():
                _flow(b.eqns, active, found)
            for c, o in zip(carry, e.outs):
                if c.id in active:
                    active.add(o.id)
        elif e.blocks():
            continue  # stacks (push/pop/newstack) exist only after the reverse pass
        else:
            carries = False
            for i, a in enumerate(e.ins):
                if not _is_active(a, active):
                    continue
                if not e.prim.sound_input(i, e.ins, e.params):
                    found.append((e, i))
                elif e.prim.carries_derivative(i, e.ins, e.params):
                    carries = True
            if carries:
                active.update(o.id for o in e.outs)


def _live(eqns, outputs) -> set:
    """Ids of the Vars the outputs depend on (a block's free reads included)."""
    live = {v.id for v in iter_vars(outputs)}

    def walk(block_eqns):
        for e in reversed(block_eqns):
            if not any(o.id in live for o in e.outs) and not e.blocks():
                continue
            if e.blocks():
                if not any(o.id in live for o in e.outs):
                    continue
                for _ in range(2):  # loop carries: a second sweep sees the feedback
                    for b in e.blocks():
                        live.update(v.id for v in b.outs if isinstance(v, Var))
                        live.update(v.id for v in e.params.get("carry", []))
                        walk(b.eqns)
            live.update(v.id for v in e.var_ins())

    walk(eqns)
    return live
