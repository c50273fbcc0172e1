"""Forward mode: a Graph -> the Graph that also computes tangents (JVP), by staging each
primitive's JVP rule from the op set next to the primitive itself.

This works on any graph the compiler makes, adjoint graphs included (with their `cond`,
loops and stacks), which is how higher derivatives are built: the Hessian-vector product
is the JVP of the gradient graph (forward over reverse), and grad of a gradient is a
JVP of its graph along the basis directions of the new `wrt` argument.

- a `cond` gets tangent outputs for the merged values that have a tangent on either side;
- a loop carries the tangents of its carried values (found by a fixed point over the body);
- a stack push saves the tangents of the values it saves, and the matching pop (same
  `tag`) takes them back.
"""
from __future__ import annotations

import numpy

from runtime import ops
from runtime.ops import apply_jvp
from runtime.ops.lists import LIST_ZEROS

from .ir import (COND, FOR, NEWSTACK, POP, PUSH, WHILE, Block, Eqn, Graph, Var, checked,
                 located_error)
from .staging import Builder, staging

__all__ = ["jvp_graph"]


def _like(v: Var) -> Var:
    """A tangent Var for `v`: same shape and dtype class (a list's tangent is a list)."""
    return Var("t" + v.hint, "list" if v.kind == "list" else "array", v.sclass, v.dclass)


class _Forward:
    def __init__(self, b: Builder):
        self.b = b
        self.push_slots: dict = {}  # push tag -> positions that carry a tangent

    def block(self, eqns, tan: dict):
        """Copy `eqns` into the builder's current block, staging tangents next to them."""
        for e in eqns:
            op = e.prim
            if op is COND:
                self.cond(e, tan)
            elif op in (FOR, WHILE):
                self.loop(e, tan)
            elif op is PUSH:
                self.push(e, tan)
            elif op is POP:
                self.pop(e, tan)
            elif op is NEWSTACK:
                self.b.eqns.append(e)
            else:
                self.b.eqns.append(e)
                if not e.prim.differentiable:
                    if not e.prim.meta and e.outs and any(
                            isinstance(a, Var) and a.id in tan for a in e.ins) and \
                            not e.prim.declares_zero(e.ins, e.params):
                        # a tangent would be dropped without a word: refuse instead

                        raise located_error(TypeError(
                            f"the operation {e.prim.name!r} has no forward-mode derivative, "
                            "but its input depends on the differentiated argument"), e)
                    continue
                ts = [tan.get(a.id) if isinstance(a, Var) and e.prim.is_diff_input(i) else None
                      for i, a in enumerate(e.ins)]
                if all(t is None for t in ts):
                    continue
                o = e.outs[0]
                self.b.loc, self.b.phase, self.b.hint = e.loc, e.phase, "t" + o.hint
                try:
                    t = apply_jvp(e.prim, ts, o, e.ins, e.params)
                except TypeError as err:

                    raise located_error(err, e) from None
                if t is not None:
                    tan[o.id] = t

    def _zero(self, v):
        if isinstance(v, Var) and v.kind == "list":

            self.b.hint = "t" + v.hint
            return self.b.stage(LIST_ZEROS, [v], {})
        if isinstance(v, Var):
            self.b.hint = "t" + v.hint
            return ops.zeros_like(v)
        if numpy.ndim(v):  # a constant array (a folded value): zeros of its shape
            return numpy.zeros(numpy.shape(v))
        return 0.0

    def _reopen(self, eqns, fn):
        """Stage `fn()` at the end of an already built block."""
        b = self.b
        b.push_block()
        b.eqns = eqns
        try:
            return fn()
        finally:
            b.pop_block()

    def _yielded_tangent(self, eqns, v, tan: dict):
        """The tangent of a value a block yields; a zero staged at the block's end if the
        block gave it none."""
        t = tan.get(v.id) if isinstance(v, Var) else None
        return self._reopen(eqns, lambda: self._zero(v)) if t is None else t

    def cond(self, e: Eqn, tan: dict):
        b = self.b
        sides = []
        for key in ("then", "else"):
            blk = e.params[key]
            b.push_block()
            local = dict(tan)
            self.block(blk.eqns, local)
            sides.append((b.pop_block(), local, blk))
        need = [k for k, _ in enumerate(e.outs)
                if any(isinstance(blk.outs[k], Var) and local.get(blk.outs[k].id) is not None
                       for _, local, blk in sides)]
        new_blocks = []
        for eqns, local, blk in sides:
            touts = [self._yielded_tangent(eqns, blk.outs[k], local) for k in need]
            new_blocks.append(Block(eqns, list(blk.outs) + touts))
        touts = [_like(e.outs[k]) for k in need]
        b.eqns.append(Eqn(COND, list(e.ins), list(e.outs) + touts,
                          {"then": new_blocks[0], "else": new_blocks[1]}, e.loc, e.phase))
        for k, t in zip(need, touts):
            tan[e.outs[k].id] = t

    def loop(self, e: Eqn, tan: dict):
        b = self.b
        is_for = e.prim is FOR
        carry, body = e.params["carry"], e.params["body"]
        n_ctl = 3 if is_for else 0
        inits = e.ins[n_ctl:]
        has = {k for k, i in enumerate(inits) if isinstance(i, Var) and tan.get(i.id) is not None}
        while True:  # which carried values have tangents: a fixed point over the body
            tcarry = {k: _like(carry[k]) for k in sorted(has)}
            local = dict(tan)
            for k, t in tcarry.items():
                local[carry[k].id] = t
            b.push_block()
            saved_slots = dict(self.push_slots)
            self.block(body.eqns, local)
            eqns = b.pop_block()
            grown = {k for k, n in enumerate(body.outs)
                     if isinstance(n, Var) and local.get(n.id) is not None} - has
            if not grown:
                break
            has |= grown
            self.push_slots = saved_slots
        order = sorted(has)
        tnext = [self._yielded_tangent(eqns, body.outs[k], local) for k in order]
        tinit = []
        for k in order:
            i = inits[k]
            t = tan.get(i.id) if isinstance(i, Var) else None
            tinit.append(self._zero(i) if t is None else t)
        params = dict(e.params)
        params["carry"] = list(carry) + [tcarry[k] for k in order]
        params["body"] = Block(eqns, list(body.outs) + tnext)
        if not is_for:
            b.push_block()
            self.block(e.params["cond"].eqns, dict(tan))
            params["cond"] = Block(b.pop_block(), list(e.params["cond"].outs))
        touts = [_like(e.outs[k]) for k in order]
        b.eqns.append(Eqn(e.prim, list(e.ins) + tinit, list(e.outs) + touts, params, e.loc,
                          e.phase))
        for k, t in zip(order, touts):
            tan[e.outs[k].id] = t

    def push(self, e: Eqn, tan: dict):
        vals = e.ins[1:]
        slots = [i for i, v in enumerate(vals) if isinstance(v, Var) and tan.get(v.id) is not None]
        self.push_slots[e.params.get("tag")] = slots
        self.b.eqns.append(Eqn(PUSH, list(e.ins) + [tan[vals[i].id] for i in slots], [],
                               dict(e.params), e.loc, e.phase))

    def pop(self, e: Eqn, tan: dict):
        slots = self.push_slots.get(e.params.get("tag"), [])
        touts = [_like(e.outs[i]) for i in slots]
        self.b.eqns.append(Eqn(POP, list(e.ins), list(e.outs) + touts, dict(e.params), e.loc,
                               e.phase))
        for i, t in zip(slots, touts):
            tan[e.outs[i].id] = t


def jvp_graph(graph: Graph, tangents: dict, builder: Builder | None = None):
    """Stage `graph` with tangents. `tangents` maps input Var ids to tangent Vars.
    Returns (builder, tangent dict) where the dict maps every Var id to its tangent."""
    b = builder or Builder()
    b.named |= graph.named
    tan = dict(tangents)
    with staging(b):
        _Forward(b).block(graph.eqns, tan)
    checked(Graph(graph.inputs, b.eqns, []), "forward")
    return b, tan
