"""Stage 3, reverse: a forward Graph -> the Graph of its gradient (forward + adjoint eqns).

Walk the forward equations backwards; for each one whose output has a cotangent, stage
its primitive's VJP rules (the same functions the tape engine runs) through
`runtime.ops.apply_vjp`. Staging means: the rules run on `Var`s, and every primitive they
call appends an equation. Cotangents of values used more than once are summed. Only
equations on a path from a `wrt` input to the output are differentiated ("active").
"""
from __future__ import annotations

from runtime import ops
from runtime.ops import apply_vjp

from .ir import Graph, Var
from .lower import Builder, staging

__all__ = ["active_vars", "reverse"]


def active_vars(graph: Graph, wrt: list) -> set:
    """Ids of Vars that depend differentiably on a `wrt` input and reach an output."""
    forward = {v.id for v in wrt}
    for e in graph.eqns:
        if not e.prim.differentiable:
            continue
        if any(isinstance(a, Var) and a.id in forward and e.prim.is_diff_input(i)
               for i, a in enumerate(e.ins)):
            forward.update(o.id for o in e.outs)
    needed = {o.id for o in _flat_vars(graph.outputs[:1])} & forward
    for e in reversed(graph.eqns):
        if any(o.id in needed for o in e.outs) and e.prim.differentiable:
            for i, a in enumerate(e.ins):
                if isinstance(a, Var) and a.id in forward and e.prim.is_diff_input(i):
                    needed.add(a.id)
    return needed


def _flat_vars(obj):
    if isinstance(obj, Var):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _flat_vars(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _flat_vars(o)


def reverse(graph: Graph, wrt: list, seed, builder: Builder | None = None):
    """Stage the adjoint of `graph.outputs[0]` with cotangent `seed` (a Var or 1.0).

    Returns (builder, grads): `builder.eqns` holds the forward equations followed by the
    adjoint ones, and `grads[i]` is the cotangent of `wrt[i]` (None when structurally zero).
    """
    out = graph.outputs[0]
    b = builder or Builder()
    b.eqns.extend(graph.eqns)
    active = active_vars(graph, wrt)
    cts: dict[int, object] = {}
    if isinstance(out, Var) and out.id in active:
        cts[out.id] = seed
    with staging(b):
        b.phase = "bwd"
        for e in reversed(graph.eqns):
            o = e.outs[0]
            g = cts.pop(o.id, None)
            if g is None:
                continue
            needs = [isinstance(a, Var) and a.id in active and e.prim.is_diff_input(i)
                     for i, a in enumerate(e.ins)]
            if not any(needs):
                continue
            b.loc = e.loc
            b.hint = "d" + o.hint
            rule_cts = apply_vjp(e.prim, g, o, e.ins, e.params, needs)
            for a, ct in zip(e.ins, rule_cts):
                if ct is None:
                    continue
                b.hint = "d" + a.hint
                prev = cts.get(a.id)
                cts[a.id] = ct if prev is None else ops.add(prev, ct)
                _name_last(b, ct if prev is None else cts[a.id], a)
        grads = []
        b.loc = None
        for v in wrt:
            g = cts.get(v.id)
            if g is not None:
                b.hint = "d" + v.hint
                g = ops.cast_like(ops.sum_to(g, ops.shape(v)), v)
                _name_last(b, g, v)
            grads.append(g)
    return b, grads


def _name_last(b: Builder, value, primal: Var):
    """Name the Var that carries a cotangent after its primal (`dx` for `x`)."""
    if isinstance(value, Var) and b.eqns and b.eqns[-1].outs[0] is value:
        value.hint = "d" + primal.hint
        b.named.add(value.id)

