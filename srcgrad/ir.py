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

import itertools
from dataclasses import dataclass, field
from typing import Any, Optional

from runtime.ops.core import Primitive, literal

__all__ = ["Var", "Eqn", "Graph", "Loc", "IRError"]

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
        import os

        return f"{os.path.basename(self.filename)}:{self.lineno}"


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
        from .lower import current_builder

        return current_builder().stage(prim, args, params)

    # Python-level questions about a run-time value cannot be answered at compile time.
    def _static(self, what):
        from .lower import StaticValueNeeded

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
        return [v for v in self.ins if isinstance(v, Var)]

    def __str__(self):
        outs = ", ".join(map(_fmt, self.outs))
        ins = ", ".join(_fmt(v) for v in self.ins)
        ps = "".join(f", {k}={_fmt(v)}" for k, v in self.params.items())
        where = f"    # {self.loc.short()}" if self.loc else ""
        return f"{outs} = {self.prim.name}({ins}{ps}){where}"


def _fmt(v: Any) -> str:
    if isinstance(v, Var):
        return f"%{v.hint}{v.id}" if v.const_name is None else v.const_name
    try:
        return literal(v)
    except TypeError:
        return f"<{type(v).__name__}>"


@dataclass
class Graph:
    """A function body: named inputs, equations in order, outputs."""

    inputs: list
    eqns: list
    outputs: list
    name: str = "f"

    def __str__(self):
        head = f"{self.name}({', '.join(map(_fmt, self.inputs))}):"
        body = [f"  {e}" for e in self.eqns]
        outs = ", ".join(_fmt(o) if isinstance(o, Var) else repr(o) for o in self.outputs)
        return "\n".join([head, *body, f"  return {outs}"])

    def check(self, extra_inputs=()) -> "Graph":
        """Verify SSA: every Var is defined once, before its uses. Raises IRError."""
        defined = {v.id for v in self.inputs} | {v.id for v in extra_inputs}
        for e in self.eqns:
            for v in e.var_ins():
                if v.id not in defined and v.const_name is None:
                    raise IRError(f"{v!r} used before definition in: {e}")
            for o in e.outs:
                if o.id in defined:
                    raise IRError(f"{o!r} defined twice (second time in: {e})")
                defined.add(o.id)
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
