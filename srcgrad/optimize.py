"""Stage 4, optimize: Graph -> smaller Graph, by small passes iterated to a fixed point.

- algebraic simplification: `x*1`, `x+0`, `x-0`, `x/1`, `x**1`, `-(-x)`, `0-x -> -x`,
  `ones_like(v)*x -> x` (same shape), `broadcast_to(1.0, v.shape) -> ones_like(v)`,
  `where(False, 0.0, g) -> g` for a cotangent g;
  `sum_to`, `broadcast_to`, `reshape` and `cast_like` dropped where the IR knows the shape
  or dtype is already right (see `ir.Var.sclass` / `dclass`),
- constant folding of equations whose inputs are all constants,
- common subexpression elimination,
- dead code elimination (which also drops cotangents that never reach a requested input).

`optimize(graph, passes=...)` runs a chosen subset (the tests show each pass's effect).
"""
from __future__ import annotations

import collections
import numbers
import threading

import numpy

from runtime import ops
from runtime.ops.core import literal

from .ir import COND, FOR, POP, PUSH, SCALAR, WHILE, Eqn, Graph, Var, checked, iter_vars
from .staging import Builder, staging

__all__ = ["optimize", "PASSES"]

PASSES = ("simplify", "fold", "cse", "dce")
_KEEP = object()


def _is_const(v, value=None) -> bool:
    if isinstance(v, Var) or not isinstance(v, numbers.Number) or isinstance(v, bool):
        return False
    return value is None or v == value


class _Ctx:
    def __init__(self, graph: Graph, named: set):
        self.producer: dict[int, Eqn] = {}
        self.named = named

    def prod(self, v):
        return self.producer.get(v.id) if isinstance(v, Var) else None

    def shape_source(self, s):
        """`v` when `s` is the Var of `v.shape` (or was made to stand for it)."""
        if isinstance(s, Var) and s.id in self.shape_alias:
            return self.shape_alias[s.id]
        e = self.prod(s)
        if e is not None and e.prim.kind == "shape_of" and isinstance(e.ins[0], Var):
            return e.ins[0]
        return None


def _same_shape(a, v) -> bool:
    return isinstance(a, Var) and isinstance(v, Var) and a.sclass == v.sclass


def _simplify(e: Eqn, c: _Ctx):
    """A replacement value for e's output, or _KEEP."""
    n = e.prim.name
    ins = e.ins
    if n == "add":
        a, b = ins
        if isinstance(a, Var) and a is b and a.kind == "array":
            return ops.multiply(2, a)  # a + a -> 2 * a (constant factors then fold)
        if _is_const(b, 0) and isinstance(a, Var) and a.kind == "array":
            return a
        if _is_const(a, 0) and isinstance(b, Var) and b.kind == "array":
            return b
    elif n == "subtract":
        a, b = ins
        if _is_const(b, 0) and isinstance(a, Var) and a.kind == "array":
            return a
    elif n == "multiply":
        a, b = ins
        for x, y in ((a, b), (b, a)):
            if _is_const(y, 1) and isinstance(x, Var) and x.kind == "array":
                return x
            p = c.prod(y)
            if p is not None and p.prim.name == "ones_like" and _same_shape(x, p.ins[0]):
                return x
            if p is not None and p.prim.name == "broadcast_to" and _is_const(p.ins[0]):
                src = c.shape_source(p.ins[1])
                if src is not None and _same_shape(x, src):
                    return ops.multiply(p.ins[0], x)  # broadcast(c) * x -> c * x
                if _is_const(x):  # broadcast(c) * d -> broadcast(c * d)
                    return ops.broadcast_to(p.ins[0] * x, p.ins[1])
            if _is_const(x) and p is not None and p.prim.name == "multiply":
                inner = [q for q in p.ins if _is_const(q)]
                other = [q for q in p.ins if not _is_const(q)]
                if len(inner) == 1 and len(other) == 1:  # a * (b * y) -> (a * b) * y
                    return ops.multiply(x * inner[0], other[0])
    elif n == "divide":
        a, b = ins
        if _is_const(b, 1) and isinstance(a, Var) and a.kind == "array":
            return a
        p = c.prod(a)
        if p is not None and p.prim.name == "ones_like" and _same_shape(b, p.ins[0]) and \
                p.ins[0].dclass == getattr(b, "dclass", None):
            return ops.divide(1.0, b)  # ones_like(v) / b -> 1.0 / b
        if p is not None and p.prim.name == "broadcast_to" and _is_const(p.ins[0]):
            src = c.shape_source(p.ins[1])
            if src is not None and _same_shape(b, src):
                return ops.divide(p.ins[0], b)  # broadcast(c) / b -> c / b
            if isinstance(b, Var) and b.kind == "meta" or _is_const(b):
                # broadcast(c) / n -> broadcast(c / n): one scalar division, still a view
                return ops.broadcast_to(ops.divide(p.ins[0], b), p.ins[1])
    elif n == "power":
        a, b = ins
        if _is_const(b, 1) and isinstance(a, Var):
            return a
    elif n == "negative":
        p = c.prod(ins[0])
        if p is not None and p.prim.name == "negative":
            return p.ins[0]
        if p is not None and p.prim.name == "broadcast_to" and _is_const(p.ins[0]):
            return ops.broadcast_to(-p.ins[0], p.ins[1])
        if p is not None and p.prim.name == "multiply":
            for k, q in enumerate(p.ins):  # -(c * y) -> (-c) * y
                if _is_const(q) and not _is_const(p.ins[1 - k]):
                    return ops.multiply(-q, p.ins[1 - k])
    elif n in ("sum_to", "broadcast_to", "reshape"):
        x, s = ins
        src = c.shape_source(s)
        if src is not None and _same_shape(x, src):
            return x
        if src is not None and src.sclass == SCALAR and _is_const(x) and n != "reshape":
            return x  # a Python number already acts as a 0-d array
    elif n == "where":
        cond, a, b = ins
        if isinstance(cond, (bool, numpy.bool_)) and e.phase == "bwd":
            # e.g. `0.5 ** y`: the rule's `where(x == 0, 0.0, g * ...)` with x a constant.
            # Only for cotangents (floating), where a number in the other branch changes
            # neither the shape nor the dtype.
            chosen, other = (a, b) if cond else (b, a)
            if isinstance(chosen, Var) and chosen.kind == "array" and _is_const(other):
                return chosen
    elif n == "shape":
        # the shape of an elementwise result follows from its inputs' shapes: the result
        # itself need not be kept alive (or saved by a loop) just for its shape
        p = c.prod(ins[0])
        if p is not None and p.prim.elementwise and p.prim.differentiable:
            arrays = [a for a in p.ins if isinstance(a, Var) and a.kind == "array"]
            same = [a for a in arrays if a.sclass == ins[0].sclass]
            others_scalar = all(a.kind != "list" if isinstance(a, Var) else
                                isinstance(a, numbers.Number) for a in p.ins)
            if same and others_scalar:
                return ops.shape(same[0])
            if len(arrays) > 1 and others_scalar and len(arrays) <= 3:
                return ops.broadcast_shapes(*[ops.shape(a) for a in arrays])
    elif n == "reduced_size":
        # like shape: the size of an elementwise result is that of a same-shaped input
        p = c.prod(ins[0])
        if p is not None and p.prim.elementwise and p.prim.differentiable:
            same = [a for a in p.ins if isinstance(a, Var) and a.kind == "array" and
                    a.sclass == ins[0].sclass]
            if same:
                return ops.reduced_size(same[0], **e.params)
    elif n == "cast_like":
        x, like = ins
        if isinstance(x, Var) and isinstance(like, Var) and x.dclass == like.dclass:
            return x
    return _KEEP


def _key(e: Eqn):
    if not e.prim.pure or any(o.kind == "list" for o in e.outs):
        return None  # two calls of an impure op are two results; each list its own object
    parts = []
    for a in e.ins:
        if isinstance(a, Var):
            parts.append(("v", a.id))
        else:
            try:
                parts.append(("c", type(a).__name__, literal(a)))
            except TypeError:
                return None  # arrays and other unhashable constants: not merged
    try:
        params = tuple(sorted((k, literal(v)) for k, v in e.params.items()))
    except TypeError:
        return None
    return (e.prim, tuple(parts), params)  # the op itself: two user's ops may share a name




def optimize(graph: Graph, named: set | None = None, passes=PASSES, keep=()) -> Graph:
    """Run `passes` to a fixed point. `named` is the set of Var ids bound to user names
    (a simplified-away name moves to its replacement); `keep` lists Vars never removed."""
    named = set() if named is None else named
    eqns = list(graph.eqns)
    outputs = graph.outputs
    _state.protected = {v.id for v in graph.inputs}
    _state.shape_alias = {}
    # Shapes are rewritten last, once the rest has settled: the shape of a long chain of
    # elementwise results becomes an expression in the shapes of the chain's inputs, and
    # it is worth building only for the shapes still needed (where they are needed).
    for shapes in (False, True):
        while True:
            run = _Run(graph, named, passes, shapes)
            eqns = run.block(eqns, {}, {})
            outputs = run.res_tree(outputs)
            changed = run.changed
            checked(Graph(graph.inputs, eqns, outputs), "simplify, fold and cse")
            if "dce" in passes:
                live = {v.id for v in iter_vars(outputs)} | {v.id for v in keep}
                before = _count(eqns)
                eqns = _dce(eqns, live)
                changed = changed or _count(eqns) != before
                checked(Graph(graph.inputs, eqns, outputs), "dce")
            if not changed:
                break
    return Graph(graph.inputs, eqns, outputs, graph.name)


def _count(eqns) -> int:
    return sum(1 + sum(_count(b.eqns) for b in e.blocks()) for e in eqns)


class _Run:
    """One sweep of simplify / fold / cse over a block and its nested blocks."""

    def __init__(self, graph, named, passes, shapes=True):
        self.graph, self.named, self.passes = graph, named, passes
        self.shapes = shapes  # whether `shape` equations are rewritten
        self.subst: dict[int, object] = {}
        self.changed = False
        self.shape_alias: dict[int, Var] = _state.shape_alias

        self.shape_source: dict[int, Var] = {}
        self.facts = Builder()  # only its shape/dtype class rules are used
        # the shape Vars it knows: those read off a value, and those made to stand for one
        self.facts.shape_source = collections.ChainMap(self.shape_alias, self.shape_source)

    def res(self, v):
        if not isinstance(v, Var) or v.id not in self.subst:
            return v
        path = []
        while isinstance(v, Var) and v.id in self.subst:
            path.append(v.id)
            v = self.subst[v.id]
        for vid in path[:-1]:  # shorten the chain for the next lookup
            self.subst[vid] = v
        return v

    def res_tree(self, o):
        if isinstance(o, Var):
            return self.res(o)
        if isinstance(o, tuple):
            return tuple(self.res_tree(x) for x in o)
        if isinstance(o, list):
            return [self.res_tree(x) for x in o]
        if isinstance(o, dict):
            return {k: self.res_tree(x) for k, x in o.items()}
        return o

    def block(self, eqns, seen: dict, producer: dict) -> list:
        """The block's equations after one sweep. Equations a simplification stages are
        swept at once, in order, where the simplified one stood (a worklist, not
        recursion): a chain of rewrites (the shape of a long elementwise chain) then
        settles in one sweep rather than one sweep per link."""
        ctx = _Ctx(self.graph, self.named)
        ctx.producer = producer
        ctx.shape_alias = self.shape_alias
        # (key, phase) -> the value an equation was simplified to: a second copy of it
        # (staged again by another rewrite) takes that value instead of being rewritten
        # once more, which would stage new copies of everything below it
        done = getattr(seen, "simplified", None)
        seen = _Seen(seen)
        seen.simplified = {} if done is None else dict(done)
        new = []
        todo = list(reversed(eqns))
        while todo:
            e = todo.pop()
            if e.prim.structured:
                e.ins = [self.res_tree(a) for a in e.ins]
                for b in e.blocks():
                    b.eqns = self.block(b.eqns, seen, dict(producer))
                    b.outs = [self.res_tree(v) for v in b.outs]
                new.append(e)
                continue
            staged = self.visit(e, ctx, seen, producer, new)
            if e.prim.name in _CHAINS:
                todo.extend(reversed(staged))
            else:
                new.extend(staged)
        return new

    def visit(self, e: Eqn, ctx: _Ctx, seen: "_Seen", producer: dict, new: list) -> list:
        """Simplify, fold or merge one equation (appending it to `new` when it stays);
        returns the equations a simplification staged, still to be swept."""
        e = Eqn(e.prim, [self.res_tree(a) for a in e.ins], e.outs, e.params, e.loc, e.phase)
        out = e.outs[0]
        if e.prim.kind == "shape_of" and isinstance(e.ins[0], Var):
            self.shape_source[out.id] = e.ins[0]
        # with simpler inputs the shape and dtype facts may now be provable
        self.facts._classes(e.prim, e.ins, e.params, out)
        k = _key(e)
        if "simplify" in self.passes and (self.shapes or e.prim.kind != "shape_of"):
            memo = seen.simplified.get((k, e.phase), _KEEP) if k is not None else _KEEP
            if memo is not _KEEP:
                self._replace(e, memo, producer)
                return []
            staged, r = self.simplify(e, ctx)
            if r is not _KEEP:
                for extra in staged:
                    producer[extra.outs[0].id] = extra
                if e.prim.kind == "shape_of" and isinstance(r, Var):
                    self.shape_alias.setdefault(r.id, e.ins[0])
                self._replace(e, r, producer)
                if k is not None:
                    seen.simplified[(k, e.phase)] = r
                return staged
        if "fold" in self.passes and not any(isinstance(a, Var) for a in e.ins) and \
                not e.prim.creator and e.prim.impl is not None and e.prim.pure:
            value = e.prim.impl(*e.ins, **e.params)
            if not isinstance(value, numpy.ndarray) or value.size <= 16:
                self.subst[out.id] = value
                self.changed = True
                return []
        if "cse" in self.passes and k is not None:
            if k in seen:
                self._replace(e, seen[k], producer)
                return []
            seen[k] = out
        producer[out.id] = e
        new.append(e)
        return []

    def simplify(self, e: Eqn, ctx: _Ctx):
        """(equations staged, replacement value or _KEEP) of `_simplify` on e."""

        scratch = Builder()
        scratch.loc, scratch.phase, scratch.hint = e.loc, e.phase, e.outs[0].hint
        scratch.shape_source = collections.ChainMap({}, self.shape_source)
        with staging(scratch):
            r = _simplify(e, ctx)
        return scratch.eqns, r

    def _replace(self, e: Eqn, r, producer: dict):
        out = e.outs[0]
        _move_name(out, r, self.named, e.phase, producer)
        self.subst[out.id] = r
        self.changed = True


# rewrites that stage the same rewrite one step further up a chain of values: what they
# stage is swept at once
_CHAINS = {"shape", "reduced_size"}


class _Seen(dict):
    """CSE's table of a block (copied into nested blocks), with the block's memo of
    simplified equations beside it."""


def _has_effects(eqns) -> bool:
    return any(e.prim in (PUSH, POP) or not e.prim.pure or _has_effects_blocks(e)
               for e in eqns)


def _has_effects_blocks(e) -> bool:
    return any(_has_effects(b.eqns) for b in e.blocks())


def _dce(eqns, live: set) -> list:
    """Drop equations whose results are never used (in place for nested blocks)."""
    kept = []
    for e in reversed(eqns):
        op = e.prim
        if op in (PUSH, POP):
            kept.append(e)
            live.update(v.id for v in e.ins if isinstance(v, Var))
            continue
        if op is COND:
            then, els = e.params["then"], e.params["else"]
            keep_k = [k for k, o in enumerate(e.outs) if o.id in live]
            e.outs = [e.outs[k] for k in keep_k]
            then.outs = [then.outs[k] for k in keep_k]
            els.outs = [els.outs[k] for k in keep_k]
            if not e.outs and not _has_effects_blocks(e):
                continue
            for b in (then, els):
                live.update(v.id for v in b.outs if isinstance(v, Var))
                b.eqns = _dce(b.eqns, live)
            live.update(v.id for v in e.ins if isinstance(v, Var))
            kept.append(e)
            continue
        if op in (FOR, WHILE):
            if not any(o.id in live for o in e.outs) and not _has_effects_blocks(e):
                continue
            for b in e.blocks():
                live.update(v.id for v in b.outs if isinstance(v, Var))
            for b in e.blocks():
                b.eqns = _dce(b.eqns, live)
            live.update(v.id for v in e.ins if isinstance(v, Var))
            kept.append(e)
            continue
        if any(o.id in live for o in e.outs) or not e.prim.pure:  # an impure call stays
            kept.append(e)
            live.update(v.id for v in e.ins if isinstance(v, Var))
    return kept[::-1]


# Per compiling thread (compilations in other threads run at the same time), set by
# `optimize`: `protected`, the ids of the graph's inputs (their names are the parameters');
# `shape_alias`, shape Vars computed without the value they are the shape of (see "shape"
# in _simplify): id -> that value, so later rules still know whose shape it is.
_state = threading.local()


def _move_name(old: Var, new, named: set, phase: str = "fwd", producer=None):
    """Give `new` the user's name `old` carried, when `old` is replaced by `new`.

    A cotangent's name (`dy`) never moves onto a value of the forward pass: when CSE finds
    that the backward pass recomputes `np.sin(x)`, the forward `np.sin(x)` must not be
    called `dy` in the generated code."""
    made_by = producer.get(new.id) if producer is not None and isinstance(new, Var) else None
    if made_by is not None and made_by.phase == "fwd" and phase == "bwd":
        return
    if isinstance(new, Var) and old.id in named and new.id not in named and \
            new.const_name is None and new.id not in _state.protected:
        new.hint = old.hint
        named.add(new.id)

