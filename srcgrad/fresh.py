"""Returned gradients are fresh arrays the caller owns (a step of codegen, on the IR).

A gradient may come out as an input (`d/dx sum(x * y)` is `y`), a module array, a view of
one (`y.T`), a read-only broadcast (`np.broadcast_to(1.0, x.shape)`), a value of the
forward pass that a pullback returns at every call, or the same array as another returned
value. Each such value is copied once before it is returned; values the function made
itself, and returned once, are not.

A small analysis gives every array value its possible *roots*: the arrays whose memory it
may share. Inputs, module arrays and anything the function did not make itself have the
root EXTERNAL; a broadcast has a read-only root of its own; ops that make new memory
(elementwise ops, reductions, matmul...) start a root; views and pass-through ops (reshape,
indexing, `sum_to` and `cast_like`, which return their input when there is nothing to
do...) share their inputs' roots.
"""
from __future__ import annotations

from runtime.ops.core import Primitive
from runtime.ops.shapes import like_arg

from .ir import COND, FOR, NEWSTACK, POP, PUSH, PYTHON, WHILE, Eqn, Var, iter_vars

__all__ = ["fresh_returns", "copied_inputs", "roots_of", "COPY"]

EXTERNAL = frozenset({("external",)})
#: a new array with `x`'s values (`x` may also be a number: `cast_like` and `sum_to` pass
#: Python numbers through, which have no `.copy()`)
COPY = Primitive("copy", lambda x: x.copy(), spell=lambda i, p, d: f"np.copy({i[0]})",
                 fresh=True)


def _of(v, roots) -> frozenset:
    if isinstance(v, Var):
        return roots.get(v.id, EXTERNAL)  # not made here: an input, a module array...
    return frozenset()


def _roots(eqns, roots: dict) -> dict:
    for e in eqns:
        op = e.prim
        if op is COND:
            for b in e.blocks():
                _roots(b.eqns, roots)
            sides = zip(e.params["then"].outs, e.params["else"].outs)
            for o, (a, b) in zip(e.outs, sides):
                roots[o.id] = _of(a, roots) | _of(b, roots)
        elif op in (FOR, WHILE):
            _loop_roots(e, roots)
        elif op in (POP, PYTHON):  # a value saved by the forward pass, or made by
            roots.update((o.id, EXTERNAL) for o in e.outs)  # a statement run as written
        elif e.outs:
            roots[e.outs[0].id] = _op_roots(e, roots)
            if e.prim.fresh and not e.prim.custom and not e.prim.meta:
                # each result of an op with several (a fused loop's) is new memory of
                # its own
                roots.update((o.id, frozenset({("new", o.id)})) for o in e.outs[1:])
    return roots


def _op_roots(e, roots) -> frozenset:
    """From what the primitive declares (runtime.ops.core.Primitive): `fresh` results start
    a root, views share their input's (read-only ones add their own), list values hold
    their items; of an op that declares nothing (a user's op) the result may be anything."""
    p = e.prim
    if p.meta or p in (NEWSTACK, PUSH):
        return frozenset()
    if p.fresh and not p.custom:
        return frozenset({("new", e.outs[0].id)})
    if p.view and not p.custom:
        # a view of its first input (the others are shapes, indices, a dtype to follow),
        # or of any input for an op that takes several arrays (einsum)
        viewed = e.ins if p.variadic else e.ins[:1]
        shared = frozenset().union(*(_of(a, roots) for a in viewed))
        return shared | {("read-only", e.outs[0].id)} if p.readonly else shared
    ins = frozenset().union(*(_of(a, roots) for a in e.ins))
    if p.kind == "list":
        return ins
    return ins | EXTERNAL  # an op srcgrad knows nothing of (a user's op): anything


def _loop_roots(e, roots):
    """A carried value's roots: its initial value's and every iteration's, to a fixpoint."""
    carry, body = e.params["carry"], e.params["body"]
    inits = e.ins[3:] if e.prim is FOR else e.ins
    for c, i in zip(carry, inits):
        roots[c.id] = _of(i, roots)
    while True:
        for b in e.blocks():
            _roots(b.eqns, roots)
        grown = False
        for c, out in zip(carry, body.outs):
            both = roots[c.id] | _of(out, roots)
            if both != roots[c.id]:
                roots[c.id], grown = both, True
        if not grown:
            break
    for c, o in zip(carry, e.outs):
        roots[o.id] = roots[c.id]


def fresh_returns(eqns, returns, primal=None):
    """(eqns, returns) where every returned array but those of `returns[primal]` (the
    function's own value, returned beside its gradient, as f returns it) is fresh: copied
    when it may share memory with anything the caller can see or with another returned
    value (the function's own value included: a gradient may be the very array f
    returns, `d/dx sum(x * y)` is y where f returns y as aux)."""
    roots = _roots(eqns, {})
    claimed = set()
    if primal is not None:
        for v in iter_vars(returns[primal]):
            claimed |= _of(v, roots)
    copies = []
    # (a gradient in its argument's kind, `like_arg`, may be a numpy scalar: its input is
    # copied where it must be, as np.copy would make a scalar a 0-d array)
    as_number = {e.outs[0].id: e for e in eqns if e.prim is like_arg}
    moved = set()

    def own(v):
        if not isinstance(v, Var) or v.kind != "array":
            return v
        made = as_number.get(v.id)
        if made is not None:
            g = own(made.ins[0])
            if g is made.ins[0]:
                return v
            if id(made) in moved:  # (returned twice: a second copy, a second scalar)
                v = Var(v.hint, "array", v.sclass, v.dclass)
            moved.add(id(made))  # (after the copy, in place of the one before it)
            copies.append(Eqn(like_arg, [g, made.ins[1]], [v], {}, None, "bwd"))
            return v
        r = _of(v, roots)
        if not (r & claimed or any(t[0] in ("external", "read-only") for t in r)):
            claimed.update(r)
            return v
        new = Var(v.hint, "array", v.sclass, v.dclass)
        copies.append(Eqn(COPY, [v], [new], {}, None, "bwd"))
        return new

    if primal is None:
        new_returns = _map(returns, own)
    else:
        new_returns = tuple(r if k == primal else _map(r, own) for k, r in enumerate(returns))
    if moved:
        eqns = [e for e in eqns if id(e) not in moved]
    return (eqns + copies if copies else eqns), new_returns


def _map(obj, fn):
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return fn(obj)


def roots_of(eqns) -> dict:
    """The roots of every value `eqns` make (see the module docstring)."""
    return _roots(eqns, {})


def _shared(v, roots) -> bool:
    return any(t[0] in ("external", "read-only") for t in _of(v, roots))


def copied_inputs(inputs, before, graph, at: int, before_roots=None):
    """`returns` of an optimized graph (`graph.outputs[0]`, optimized from `before`) with
    f's own value (`returns[at]`) copied where it became one of f's inputs, or may share
    memory with one (a view of it: `before_roots`, the roots of the graph before it was
    optimized, tell that f's own value did not): a rewrite found `x * 1.0` (or `x + 0.0`,
    `-(-x)`, `np.zeros(s) + x[:3]`) equal to x, but numpy made a new array there, which
    the caller may write into. Not where f returns its input (or a view of it) itself.
    The copies are the graph's first equations after the values they copy (vjp returns
    its value before the pullback runs)."""
    ids = {v.id for v in inputs}
    after_roots = roots_of(graph.eqns) if before_roots is not None else None

    def pair(a, b):
        if isinstance(b, (tuple, list)):
            return type(b)(pair(x, y) for x, y in zip(a, b))
        if isinstance(b, dict):
            return {k: pair(a[k], y) for k, y in b.items()}
        if not (isinstance(b, Var) and b.kind == "array"):
            return b
        if b.id in ids and not (isinstance(a, Var) and a.id in ids):
            new = Var(b.hint, "array", b.sclass, b.dclass)
            graph.eqns.insert(0, Eqn(COPY, [b], [new], {}, None, "fwd"))
            return new
        if after_roots is not None and b is not a and _shared(b, after_roots) and \
                not _shared(a, before_roots):
            new = Var(b.hint, "array", b.sclass, b.dclass)
            k = max((j for j, e in enumerate(graph.eqns) if any(o is b for o in e.outs)),
                    default=-1)
            graph.eqns.insert(k + 1, Eqn(COPY, [b], [new], {}, None, "fwd"))
            return new
        return b

    returns = graph.outputs[0]
    return tuple(pair(before[k], r) if k == at else r for k, r in enumerate(returns))
