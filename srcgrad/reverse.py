"""Stage 3, reverse: a forward Graph -> the Graph of its gradient (forward + adjoint eqns).

Walk the forward equations backwards; for each primitive whose output has a cotangent,
stage its VJP rules (the same functions the tape engine runs) through
`runtime.ops.apply_vjp`: the rules run on `Var`s and every primitive they call appends an
equation. Cotangents of values used more than once are summed. Only equations that
depend on a `wrt` input are differentiated ("active").

Control flow is reversed structurally, as a person would write it:
- a `cond` becomes a `cond` on the same predicate whose branches hold the adjoints of the
  forward branches (values a branch computed are passed out of it when a loop needs them);
- a loop becomes a loop running the other way: `for t in reversed(range(...))` for a plain
  `for`, `for _ in range(n_iter)` for a `while` or a loop that can `break`. The forward
  loop saves, on a stack per loop, exactly the values its adjoint body reads (carried
  values at the start of an iteration, intermediates at its end); the adjoint pops them.
  Cotangents of the loop's carried values and of outer values it reads are the adjoint
  loop's own carried state. A loop with nothing active saves nothing.
"""
from __future__ import annotations

import contextlib
import contextvars

from runtime import ops
from runtime.ops import apply_vjp
from runtime.ops.lists import LIST_STACKED_ZEROS

from .ir import (COND, FOR, NEWSTACK, POP, PUSH, WHILE, Block, Eqn, Graph, Var, checked,
                 iter_vars, located_error, referenced, subst)
from .staging import INT_VALUED, Builder, known_shape, staging


__all__ = ["activity", "reverse", "CarryClassDisproved", "carry_classes_unassumed"]


def _zeros_like(v):
    """A zero cotangent for `v`: zeros of its shape; for a run-time list, of its items
    stacked (refused at run time, with what to write, where their shapes differ)."""
    if isinstance(v, Var) and v.kind == "list":
        return LIST_STACKED_ZEROS(v)
    return ops.zeros_like(v)

#: whether an adjoint loop takes the cotangent it carries to have its value's shape, where
#: that shape is known (a specialized variant's): checked when the loop is made
_ASSUME = contextvars.ContextVar("srcgrad_assume_carry_classes", default=True)


class CarryClassDisproved(Exception):
    """A cotangent an adjoint loop carries came out of another shape class than the value
    it is the cotangent of: the graph must be made again without the assumption
    (`carry_classes_unassumed`)."""


@contextlib.contextmanager
def carry_classes_unassumed():
    token = _ASSUME.set(False)
    try:
        yield
    finally:
        _ASSUME.reset(token)


def _carried_ct(v, hint):
    """The cotangent an adjoint loop carries for `v`: taken to have v's shape and dtype
    classes where they are one known shape and one floating dtype (else classes of its
    own)."""
    if not _ASSUME.get() or known_shape(v) is None:
        return Var(hint, "array")
    d = v.dclass
    known_float = len(d) == 2 and d[0] == "f" and isinstance(d[1], str)
    return Var(hint, "array", v.sclass, d if known_float else None)


def _assumed(c) -> bool:
    return c.sclass[0] != "s"


def _check_assumed(carried, values, what):
    for c, v in zip(carried, values):
        if _assumed(c) and not (isinstance(v, Var) and v.sclass == c.sclass and
                                (c.dclass[0] == "d" or v.dclass == c.dclass)):
            raise CarryClassDisproved(f"{what} of {c!r}: {v!r}")


def activity(eqns, active: set) -> set:
    """Add to `active` the ids of Vars that depend differentiably on active ones."""
    for e in eqns:
        op = e.prim
        if op is COND:
            then, els = e.params["then"], e.params["else"]
            activity(then.eqns, active)
            activity(els.eqns, active)
            for o, a, b in zip(e.outs, then.outs, els.outs):
                if (isinstance(a, Var) and a.id in active) or (isinstance(b, Var) and
                                                               b.id in active):
                    active.add(o.id)
        elif op in (FOR, WHILE):
            carry, body = e.params["carry"], e.params["body"]
            inits = e.ins[3:] if op is FOR else e.ins
            for c, i in zip(carry, inits):
                if isinstance(i, Var) and i.id in active:
                    active.add(c.id)
            while True:
                before = len(active)
                activity(body.eqns, active)
                for c, n in zip(carry, body.outs):
                    if isinstance(n, Var) and n.id in active:
                        active.add(c.id)
                if len(active) == before:
                    break
            for c, o in zip(carry, e.outs):
                if c.id in active:
                    active.add(o.id)
        elif any(isinstance(a, Var) and a.id in active and
                 e.prim.carries_derivative(i, e.ins, e.params) for i, a in enumerate(e.ins)):
            active.update(o.id for o in e.outs)
    return active


def _add(cts, v, ct):
    prev = cts.get(v.id)
    cts[v.id] = ct if prev is None else ops.add(prev, ct)


def _defined(eqns) -> dict:
    """id -> Var for the outputs of a block's top-level equations."""
    return {o.id: o for e in eqns for o in e.outs}


class _Reverser:
    def __init__(self, b: Builder, active: set):
        self.b = b
        self.active = active
        self.depth = 0  # how many loops enclose the block being reversed

    def block(self, eqns: list, cts: dict):
        """Stage the adjoint of `eqns` (a forward block, modified in place when loops
        need stacks) into the builder's current block."""
        i = len(eqns) - 1
        while i >= 0:
            e = eqns[i]
            op = e.prim
            if op is COND:
                self.cond(e, cts)
            elif op in (FOR, WHILE):
                stack_eqn = self.loop(e, cts)
                if stack_eqn is not None:
                    eqns.insert(i, stack_eqn)
            elif op not in (PUSH, NEWSTACK, POP):
                self.prim(e, cts)
            i -= 1

    def prim(self, e: Eqn, cts: dict):
        if len(e.outs) != 1:  # a statement run as written: no derivative passes through
            for o in e.outs:  # it (a derivative reaching it was refused by check_sound)
                cts.pop(o.id, None)
            return
        o = e.outs[0]
        g = cts.pop(o.id, None)
        if g is None:
            return
        needs = [isinstance(a, Var) and a.id in self.active and
                 e.prim.carries_derivative(i, e.ins, e.params) for i, a in enumerate(e.ins)]
        if not any(needs):
            return
        b = self.b
        b.loc = e.loc
        for i, a in enumerate(e.ins):
            if not needs[i]:
                continue
            b.hint = "d" + a.hint  # what a rule stages is named after the input it is for
            only = [j == i for j in range(len(needs))]
            try:
                ct = apply_vjp(e.prim, g, o, e.ins, e.params, only)[i]
            except TypeError as err:
                raise located_error(err, e) from None
            if ct is not None:
                _add(cts, a, ct)
                _name_last(b, cts[a.id], a)

    # -- branches ---------------------------------------------------------------------------

    def cond(self, e: Eqn, cts: dict):
        gs = [cts.pop(o.id, None) for o in e.outs]
        if all(g is None for g in gs):
            return
        b = self.b
        pred = e.ins[0]
        branches = (e.params["then"], e.params["else"])
        staged = []
        for blk in branches:
            b.push_block()
            local: dict = {}
            for v, g in zip(blk.outs, gs):
                if g is not None and isinstance(v, Var) and v.id in self.active:
                    _add(local, v, g)
            self.block(blk.eqns, local)
            staged.append((b.pop_block(), local))
        # outer values whose cotangent changes in either branch
        keys: dict[int, Var] = {}
        everything = {}
        for blk in branches:
            everything.update(referenced(blk.eqns, blk.outs))
        for _, local in staged:
            for k in local:
                keys.setdefault(k, _lookup(everything, k))
        self._export(e, staged)
        outs, vals = [], ([], [])
        for vid, v in keys.items():
            d = Var("d" + v.hint, "array")
            b.named.add(d.id)
            outs.append((v, d))
            for side, (eqns, local) in enumerate(staged):
                ct = local.get(vid)
                if ct is None:
                    b.push_block()
                    b.eqns = eqns
                    b.hint = "d" + v.hint
                    with staging(b):
                        ct = _zeros_like(v)
                    b.pop_block()
                vals[side].append(ct)
        b.loc = e.loc
        b.structured(COND, [pred], [d for _, d in outs],
                     {"then": Block(staged[0][0], vals[0]), "else": Block(staged[1][0], vals[1])})
        for v, d in outs:
            _add(cts, v, d)

    def _export(self, e: Eqn, staged):
        """Pass values a branch computed (and its adjoint reads) out of the forward `cond`,
        so the adjoint reads a value defined on every path (a loop around it can then
        save it for its own adjoint)."""
        for side, (eqns, _) in enumerate(staged):
            blk = e.params["then" if side == 0 else "else"]
            other = e.params["else" if side == 0 else "then"]
            inner = _defined(blk.eqns)
            used = referenced(eqns)
            shape_only = _shape_only_uses(eqns, ())
            mapping = {}
            for vid, v in used.items():
                if vid not in inner:
                    continue
                if vid in shape_only:  # pass out the shape, not the array
                    b = self.b
                    with staging(b):
                        b.push_block()
                        b.eqns = blk.eqns
                        b.phase, b.loc = "fwd", None
                        s_var = ops.shape(v)
                        b.pop_block()
                        b.phase = "bwd"
                    out = Var(s_var.hint, "meta")
                    blk.outs.append(s_var)
                    for shape_eqn in shape_only[vid]:
                        mapping[shape_eqn.outs[0].id] = out
                else:
                    out = Var(v.hint, v.kind, v.sclass, v.dclass)
                    blk.outs.append(v)
                    mapping[vid] = out
                e.outs.append(out)
                other.outs.append(None)
            subst(eqns, mapping)

    # -- loops ----------------------------------------------------------------------------------

    def loop(self, e: Eqn, cts: dict):
        """Stage the adjoint loop of `e`; returns the equation creating its stack (to be
        placed before `e`), or None when nothing needed saving. In four steps: the adjoint
        body, the choice of what to save, the stack (pushes in the forward body, pops in
        the adjoint one), and the adjoint loop with the cotangents that leave it."""
        carry = e.params["carry"]
        act = [k for k, c in enumerate(carry) if c.id in self.active]
        gs = {k: cts.pop(o.id, None) for k, o in enumerate(e.outs)}
        if not act or all(gs[k] is None for k in act):
            return None
        lp = _LoopParts(e, act)
        self._adjoint_body(lp)
        self._choose_saved(lp)
        stack_eqn = self._stack(lp)
        self._adjoint_loop(lp, gs, cts)
        return stack_eqn

    def _adjoint_body(self, lp: "_LoopParts"):
        """Step 1: the adjoint body, staged with fresh cotangent carries (`lp.dcs`) and
        accumulators for the outer values the body reads (`lp.accs`); `lp.nexts` are the
        carries' next values."""
        b, carry, body = self.b, lp.carry, lp.body
        b.push_block()
        self.depth += 1
        lp.dcs = {k: _carried_ct(carry[k], "d" + carry[k].hint) for k in lp.act}
        local: dict = {}
        for k in lp.act:
            v = body.outs[k]
            if isinstance(v, Var) and v.id in self.active:
                _add(local, v, lp.dcs[k])
        self.block(body.eqns, local)
        self.depth -= 1
        b.hint = "d"
        with staging(b):
            lp.nexts = []
            for k in lp.act:
                ct = local.pop(carry[k].id, None)
                if ct is None:
                    b.hint = "d" + carry[k].hint
                    ct = _zeros_like(carry[k])
                lp.nexts.append(ct)
            _check_assumed([lp.dcs[k] for k in lp.act], lp.nexts, "the next value")
            refs = referenced(body.eqns, body.outs)
            lp.accs = {}
            for vid in list(local):
                v = _lookup(refs, vid)
                acc = _carried_ct(v, "d" + v.hint)
                b.hint = "d" + v.hint
                lp.nexts.append(ops.add(acc, local[vid]))
                lp.accs[vid] = (v, acc)
            _check_assumed([acc for _, acc in lp.accs.values()], lp.nexts[len(lp.act):],
                           "the next value")
        lp.adj_eqns = b.pop_block()

    def _choose_saved(self, lp: "_LoopParts"):
        """Step 2: what the adjoint body reads from the forward iteration: values at the
        start of an iteration (`lp.at_start`), values made in it (`lp.at_end`), items of
        outer arrays indexed again instead (`lp.remat`); a value read only for its shape is
        saved as its shape."""
        body, index = lp.body, lp.index
        fwd_body = _defined(body.eqns)
        reads = referenced(lp.adj_eqns, lp.nexts)
        lp.at_start = [v for v in lp.carry if v.id in reads]
        if lp.counted and index is not None and index.id in reads:
            lp.at_start.append(index)
        lp.remat = _indexed_again(lp, reads, fwd_body)
        remat_ids = {q.outs[0].id for q in lp.remat}
        at_end = [v for vid, v in fwd_body.items() if vid in reads and vid not in remat_ids]
        self._save_shapes(lp, at_end)
        start_ids = {v.id for v in lp.at_start}
        lp.at_end = [v for v in at_end if v.id not in start_ids]  # saved once is enough
        # shapes of carried values are computed where their push happens: at the start
        lp.moved = [e2 for e2 in body.eqns if e2.outs and e2.outs[0].id in start_ids]
        moved_ids = {id(m) for m in lp.moved}
        body.eqns = lp.moved + [e2 for e2 in body.eqns if id(e2) not in moved_ids]

    def _save_shapes(self, lp: "_LoopParts", at_end: list):
        """Values the adjoint reads only for their shape are saved as their shape: a
        `shape(v)` staged in the forward body replaces v in `lp.at_start` / `at_end`."""
        b, body = self.b, lp.body
        shape_only = _shape_only_uses(lp.adj_eqns, lp.nexts)
        with staging(b):
            b.push_block()
            b.eqns = body.eqns
            b.phase, b.loc = "fwd", None
            cond_outs = {o.id for e2 in body.eqns if e2.prim is COND for o in e2.outs}
            mapping_shape = {}
            for group in (lp.at_start, at_end):
                for j, v in enumerate(group):
                    if v.id in shape_only and v.id not in cond_outs:
                        s_var = ops.shape(v)
                        group[j] = s_var
                        for shape_eqn in shape_only[v.id]:
                            mapping_shape[shape_eqn.outs[0].id] = s_var
            subst(lp.adj_eqns, mapping_shape)  # once: a pass per value would be quadratic
            b.pop_block()
            b.phase = "bwd"

    def _stack(self, lp: "_LoopParts"):
        """Step 3: the stack: pushes in the forward body, pops (and items indexed again)
        at the top of the adjoint body; returns the equation creating the stack or None."""
        e, body, index, counted = lp.e, lp.body, lp.index, lp.counted
        stack_eqn = None
        lp.pops = []
        lp.rev_index = Var(index.hint if index is not None and not counted else "_", "meta",
                           dclass=INT_VALUED)
        mapping = {}
        if not counted and index is not None:
            mapping[index.id] = lp.rev_index
        if lp.at_start or lp.at_end:
            stack = Var(f"{(lp.carry[lp.act[0]].hint)}_stack", "stack")
            stack_eqn = Eqn(NEWSTACK, [], [stack], {}, e.loc, "fwd")
            # a push and its pop share a tag (forward mode pairs their tangents by it)
            if lp.at_start:
                body.eqns.insert(len(lp.moved), Eqn(PUSH, [stack] + lp.at_start, [],
                                                    {"tag": f"{stack.id}:start"}, e.loc, "fwd"))
            if lp.at_end:
                body.eqns.append(Eqn(PUSH, [stack] + lp.at_end, [],
                                     {"tag": f"{stack.id}:end"}, e.loc, "fwd"))
            for group, where in ((lp.at_end, "end"), (lp.at_start, "start")):
                if group:
                    popped = [Var(v.hint, v.kind, v.sclass, v.dclass) for v in group]
                    for v, p in zip(group, popped):
                        mapping[v.id] = p
                    lp.pops.append(Eqn(POP, [stack], popped, {"tag": f"{stack.id}:{where}"},
                                       e.loc, "bwd"))
        for q in lp.remat:
            again = Var(q.outs[0].hint, q.outs[0].kind, q.outs[0].sclass, q.outs[0].dclass)
            mapping[q.outs[0].id] = again
            lp.pops.append(Eqn(q.prim, [q.ins[0], lp.rev_index], [again], dict(q.params),
                               q.loc, "bwd"))
        subst(lp.adj_eqns, mapping)
        lp.nexts = [mapping.get(v.id, v) if isinstance(v, Var) else v for v in lp.nexts]
        return stack_eqn

    def _adjoint_loop(self, lp: "_LoopParts", gs: dict, cts: dict):
        """Step 4: the adjoint loop, then the cotangents that leave it: to the initial
        values and to the outer values."""
        b, e, carry = self.b, lp.e, lp.carry
        b.loc = e.loc
        with staging(b):
            init_vals = []
            for k in lp.act:
                g = gs[k]
                if g is None:
                    b.hint = "d" + carry[k].hint
                    g = _zeros_like(e.outs[k])
                init_vals.append(g)
            for vid, (v, acc) in lp.accs.items():
                prev = cts.pop(vid, None)
                if prev is None:
                    b.hint = "d" + v.hint
                    prev = _zeros_like(v)
                init_vals.append(prev)
        adj_carry = [lp.dcs[k] for k in lp.act] + [acc for _, acc in lp.accs.values()]
        _check_assumed(adj_carry, init_vals, "the initial value")
        adj_outs = [Var(c.hint, "array", c.sclass, c.dclass) if _assumed(c) else
                    Var(c.hint, "array") for c in adj_carry]
        for o in adj_outs:
            b.named.add(o.id)
        params = {"index": lp.rev_index, "carry": adj_carry,
                  "body": Block(lp.pops + lp.adj_eqns, lp.nexts)}
        if lp.counted:
            ins = [0, e.outs[e.params["count"]], 1]
            params["reverse"] = False
        else:
            ins = list(e.ins[:3])
            params["reverse"] = not e.params.get("reverse", False)
        b.structured(FOR, ins + init_vals, adj_outs, params)
        with staging(b):
            # the outer values' accumulators already include their earlier cotangents;
            # then the initial values' cotangents add to them (an input can be both)
            for (vid, (v, _)), o in zip(lp.accs.items(), adj_outs[len(lp.act):]):
                cts[vid] = o
            inits = e.ins[3:] if e.prim is FOR else e.ins
            for k, o in zip(lp.act, adj_outs):
                i = inits[k]
                if isinstance(i, Var) and i.id in self.active:
                    b.hint = "d" + i.hint
                    _add(cts, i, o)


def _indexed_again(lp, reads: dict, fwd_body: dict) -> list:
    """The `x[t]` equations of the loop body (x from outside the loop, t the loop index)
    whose results the adjoint reads: cheaper to index again than to save."""
    if lp.index is None or lp.counted:
        return []
    carry_ids = {id(c) for c in lp.carry}
    return [q for q in lp.body.eqns
            if q.prim is ops.getitem and q.outs and q.outs[0].id in reads and
            q.ins[1] is lp.index and isinstance(q.ins[0], Var) and
            q.ins[0].id not in fwd_body and id(q.ins[0]) not in carry_ids]


class _LoopParts:
    """What the steps of a loop's reversal hand each other (see `_Reverser.loop`)."""

    def __init__(self, e: Eqn, act: list):
        self.e, self.act = e, act
        self.carry, self.body = e.params["carry"], e.params["body"]
        self.counted = "count" in e.params  # a while loop (its trip count is counted)
        self.index = e.params.get("index")
        # filled by the steps
        self.dcs = self.accs = self.nexts = self.adj_eqns = None
        self.at_start = self.at_end = self.remat = self.moved = self.pops = None
        self.rev_index = None


def _shape_only_uses(eqns, outs) -> dict:
    """id of v -> the `shape(v)` equations, for Vars read by `eqns` only through shape()."""
    shapes: dict[int, list] = {}
    other: set[int] = set()

    def walk(eqns, outs):
        for e in eqns:
            for v in e.ins:
                if isinstance(v, Var):
                    if e.prim.kind == "shape_of":
                        shapes.setdefault(v.id, []).append(e)
                    else:
                        other.add(v.id)
            for blk in e.blocks():
                walk(blk.eqns, blk.outs)
        for v in outs:
            if isinstance(v, Var):
                other.add(v.id)

    walk(eqns, outs)
    return {k: v for k, v in shapes.items() if k not in other}


def _lookup(table: dict, vid: int) -> Var:
    v = table.get(vid)
    if v is None:
        from .ir import IRError

        raise IRError(f"a cotangent reached %{vid}, which the block never reads")
    return v


def _axes(params):
    """A reduction's axes as a set (None: all of them)."""
    axis = {**{"axis": None}, **params}["axis"]
    return None if axis is None else set(axis if isinstance(axis, tuple) else (axis,))


def shift_stabilizers(eqns, outputs) -> set:
    """Ids of the stabilizing maxima of log-softmax and softmax, whose derivative is zero.

    `m = max(z, axis)` (keepdims, or over all axes), used only in `zs = z - m`, where zs
    is used only by `e = exp(zs)` and `zs - log(s)`, e only by `s = sum(e, axes)` and
    `e / s`, s only by `log(s)` and `e / s`, log(s) only by `zs - log(s)`, and the sum's
    axes are among the max's: each result (`zs - log(s)`, `e / s`) is then the same for
    every m (shifting z by a constant along the summed axes changes neither), so m's
    cotangent is zero exactly and its reverse pass (a where over the ties, a division by
    their count) is not staged. Only values of this block that are not outputs; any other
    use keeps m differentiated."""
    sh = _Shifts(eqns, outputs)
    found = set()
    for e in eqns:
        if e.prim is ops.max and isinstance(e.ins[0], Var) and \
                (e.params.get("keepdims") or _axes(e.params) is None):
            m, z = e.outs[0], e.ins[0]
            u = sh.uses.get(m.id, [])
            if len(u) == 1 and u[0][0] is not None and u[0][0].prim is ops.subtract and \
                    u[0][1] == 1 and u[0][0].ins[0] is z and \
                    sh.invariant(u[0][0].outs[0], _axes(e.params)):
                found.add(m.id)
    return found


class _Shifts:
    """Uses and producers of one block's values, for `shift_stabilizers`."""

    def __init__(self, eqns, outputs):
        self.uses: dict[int, list] = {}  # id -> [(equation, operand index)]; None: other
        self.made: dict[int, Eqn] = {}
        for e in eqns:
            for i, a in enumerate(e.ins):
                if isinstance(a, Var):
                    self.uses.setdefault(a.id, []).append((e, i))
            for b in e.blocks():  # read inside a region: a use outside the pattern
                for vid in referenced(b.eqns, b.outs):
                    self.uses.setdefault(vid, []).append((None, -1))
            for o in e.outs:
                self.made[o.id] = e
        for o in iter_vars(outputs):
            self.uses.setdefault(o.id, []).append((None, -1))

    def only(self, v, allowed) -> bool:
        return all(e is not None and allowed(e, i) for e, i in self.uses.get(v.id, []))

    def invariant(self, zs, axes) -> bool:
        """Is every use of zs (= z - m) one whose result m does not change?"""
        return self.only(zs, lambda e, i: (e.prim is ops.subtract and i == 0 and
                                           self.log_sum_exp(e.ins[1], zs, axes)) or
                         (e.prim is ops.exp and self.exp_uses(e.outs[0], zs, axes)))

    def exp_uses(self, ex, zs, axes) -> bool:
        """ex = exp(zs) is used only by sums over `axes` (themselves used only by log(s)
        in zs - log(s), or by ex / s) and by ex / s."""
        def sum_use(s):
            return self.only(s, lambda e, i: self.ratio(e, ex, s) or (
                e.prim is ops.log and self.only(e.outs[0], lambda t, j: (
                    t.prim is ops.subtract and j == 1 and t.ins[0] is zs))))
        return self.only(ex, lambda e, i: (_summed(e, axes) and sum_use(e.outs[0])) or
                         (i == 0 and self.ratio(e, ex, None, axes)))

    def ratio(self, e, num, den, axes=None) -> bool:
        """e is num / den, den a sum of num over the axes (given, or to be checked)."""
        if e.prim is not ops.divide or e.ins[0] is not num or not isinstance(e.ins[1], Var):
            return False
        if den is not None:
            return e.ins[1] is den
        p = self.made.get(e.ins[1].id)
        return p is not None and _summed(p, axes) and p.ins[0] is num

    def log_sum_exp(self, v, zs, axes) -> bool:
        p = self.made.get(v.id) if isinstance(v, Var) else None
        s = self.made.get(p.ins[0].id) if p is not None and p.prim is ops.log and \
            isinstance(p.ins[0], Var) else None
        x = self.made.get(s.ins[0].id) if s is not None and _summed(s, axes) and \
            isinstance(s.ins[0], Var) else None
        return x is not None and x.prim is ops.exp and x.ins[0] is zs


def _summed(e, axes) -> bool:
    """e sums over axes among `axes` (None: every axis), keeping them (or summing all:
    a 0-d result broadcasts as well)."""
    if e.prim is not ops.sum:
        return False
    s = _axes(e.params)
    if s is not None and not e.params.get("keepdims"):
        return False
    return axes is None or (s is not None and s <= axes)


def reverse(graph: Graph, wrt: list, seed, builder: Builder | None = None):
    """Stage the adjoint of `graph.outputs[0]` with cotangent `seed` (a Var or 1.0).

    Returns (builder, grads): `builder.eqns` holds the forward equations (with the pushes
    loops need) followed by the adjoint ones, and `grads[i]` is the cotangent of `wrt[i]`
    (None when structurally zero).
    """
    out = graph.outputs[0]
    b = builder or Builder()
    b.named |= graph.named
    fwd = list(graph.eqns)
    active = activity(fwd, {v.id for v in wrt})
    active -= shift_stabilizers(fwd, graph.outputs)
    cts: dict[int, object] = {}
    if isinstance(out, Var) and out.id in active:
        cts[out.id] = seed
    b.phase = "bwd"
    rev = _Reverser(b, active)
    b.eqns = []
    with staging(b):
        rev.block(fwd, cts)
    adjoint = b.eqns
    b.eqns = fwd + adjoint
    with staging(b):
        b.phase = "bwd"
        grads = []
        b.loc = None
        for v in wrt:
            g = cts.get(v.id)
            if g is not None:
                b.hint = "d" + v.hint
                g = ops.cast_like(ops.sum_to(g, ops.shape(v)), v)
                _name_last(b, g, v)
            grads.append(g)
    checked(Graph(graph.inputs, b.eqns, [g for g in grads if g is not None]), "reverse")
    return b, grads


def _name_last(b: Builder, value, primal: Var):
    """Name the Var that carries a cotangent after its primal (`dx` for `x`)."""
    if isinstance(value, Var) and b.eqns and b.eqns[-1].outs and b.eqns[-1].outs[0] is value:
        value.hint = "d" + primal.hint
        b.named.add(value.id)
