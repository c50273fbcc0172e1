"""Stage 4, optimize: Graph -> smaller Graph, by small passes iterated to a fixed point.

- algebraic simplification: `x*1`, `x+0`, `x-0`, `x/1`, `x**1`, `-(-x)`, `0-x -> -x`,
  `scatter_add(u, i, s) + scatter_add(v, i, s) -> scatter_add(u + v, i, s)`,
  `ones_like(v)*x -> x` (same shape), `broadcast_to(1.0, v.shape) -> ones_like(v)`,
  `where(False, 0.0, g) -> g` for a cotangent g;
  `sum_to`, `broadcast_to`, `reshape` and `cast_like` dropped where the IR knows the shape
  or dtype is already right (see `ir.Var.sclass` / `dclass`),
- constant folding of equations whose inputs are all constants,
- common subexpression elimination,
- dead code elimination (which also drops cotangents that never reach a requested input).

Each algebraic rewrite is a small function of one primitive's equation (`_REWRITES`, keyed
by the primitive itself, never by its name). `optimize(graph, passes=...)` runs a chosen
subset (the tests show each pass's effect); the optimizer keeps no state between calls.
Input: a Graph (lowered, then differentiated). Output: an equivalent, smaller Graph.
"""
from __future__ import annotations

import collections
import numbers

import numpy

from runtime import ops
from runtime.ops import linalg as _linalg
from runtime.ops.core import literal
from runtime.ops.lists import LIST_APPEND, LIST_FROM, STACK_LIST

from .ir import (COND, FOR, NEWSTACK, POP, PUSH, PYTHON, SCALAR, WHILE, Eqn, Graph, Var, checked,
                 iter_vars, subst)
from .staging import (Builder, dtype_class, floating_dclass, known_out_shape, known_shape,
                      number_spread, staging)
from .staging import known as staging_known
from .verbatim import changed_in_place, check_changes

FLOAT64 = dtype_class(numpy.float64)

__all__ = ["optimize", "PASSES", "hoist_indexed_products", "batch_step_products",
           "stacks_as_steps", "hoist_step_maps", "sum_steps_first"]

PASSES = ("simplify", "fold", "cse", "dce")
_KEEP = object()


def _is_const(v, value=None) -> bool:
    if isinstance(v, Var) or not isinstance(v, numbers.Number) or isinstance(v, bool):
        return False
    if value is not None and isinstance(v, numpy.generic):
        return False  # (numpy's scalar is strong: x * np.float64(1.0) of a float32 x, or
        # of a Python number, is numpy's float64, not x)
    return value is None or v == value


class _Ctx:
    def __init__(self, graph: Graph, named: set):
        self.producer: dict[int, Eqn] = {}
        self.named = named
        self.uses = collections.Counter()  # Var id -> reads, as the sweep began

    def read_once(self, v) -> bool:
        """Whether `v` is read by one equation only (as the sweep began): a rewrite that
        replaces its reader then makes `v` dead."""
        return isinstance(v, Var) and self.uses[v.id] == 1

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


def _array(v) -> bool:
    return isinstance(v, Var) and v.kind == "array"


def _forgets_dtype(out, r) -> bool:
    """Replacing `out` by `r` would lose its known dtype: `out` has one (a specialized
    variant's float64, or a loop carry's taken from its primal), `r` a class the IR cannot
    tell equal (`sum_to(g, ())` of an () g: the same array, but a loop whose carry starts
    from it needs the class to hold)."""
    d = getattr(out, "dclass", None)
    return isinstance(r, Var) and isinstance(d, tuple) and len(d) == 2 and \
        isinstance(d[1], str) and r.dclass != d


def _refined(r, out):
    """`r`, which a rewrite found equal to `out` (dtype included: the rewrites keep it),
    with `out`'s known dtype class where its own tells less; _KEEP where it tells another
    known dtype (a rewrite that would change the dtype is not made)."""
    d = r.dclass
    if isinstance(d, tuple) and len(d) == 2 and isinstance(d[1], str):
        return _KEEP
    r.dclass = out.dclass
    return r


def _keeps_dtype(x, c=None, true_divide: bool = False) -> bool:
    """`x op c` (c a Python number: 0, 1, 0.0, 1.0) surely has `x`'s dtype, so the identity
    may drop the op: x floating (a float of any width keeps its dtype against a Python
    number), or an integer array and `c` an int, not for `/`. Never a boolean array
    (`m + 0` is an int array, `m + m` is `m | m`) or one of unknown dtype."""
    d = getattr(x, "dclass", None)
    if not isinstance(d, tuple) or not d:
        return False
    if floating_dclass(d):
        return True
    if d[0] != "k" or not isinstance(d[1], str):
        return False
    kind = numpy.dtype(d[1]).kind
    if kind in "fc":
        return True
    return kind in "iu" and not true_divide and (c is None or (
        isinstance(c, numbers.Integral) and not isinstance(c, bool)))


#: the narrowest dtypes a value of unknown dtype may have, whose range a folded constant
#: must fit: float16's normal numbers, and the integers int8 and uint8 share
_NARROW_FLOAT, _NARROW_INT = numpy.finfo(numpy.float16), (0, 127)


def _folds_into(k, *ys) -> bool:
    """Whether the constant `k`, folded from two (`a * (b * y)`, `-(c * y)`), scales each
    of `ys` as the constants it replaces did. numpy converts a Python number to the dtype
    of the array it meets (NEP 50): the folded constant must fit that dtype where the
    unfolded ones did. An integer must be in an integer dtype's range (`(-2) * img` raises
    for a uint8 img, where `-(2 * img)` wraps); a float must be a normal number of a float
    dtype (90000 overflows float16). A value of unknown dtype may have the narrowest."""
    if isinstance(k, bool) or not isinstance(k, (int, float)):
        return False
    for y in ys:
        d = getattr(y, "dclass", None)
        known = isinstance(d, tuple) and len(d) == 2 and isinstance(d[1], str)
        dt = numpy.dtype(d[1]) if known else None
        if dt is not None and dt.kind == "b":
            continue  # (a Python number promotes a boolean array to its own kind)
        if dt is not None and dt.kind in "iu":
            if isinstance(k, int) and not numpy.iinfo(dt).min <= k <= numpy.iinfo(dt).max:
                return False
            continue  # (a float makes float64 of an integer array)
        info = numpy.finfo(dt) if dt is not None and dt.kind in "fc" else _NARROW_FLOAT
        if k != 0 and not float(info.smallest_normal) <= abs(float(k)) <= float(info.max):
            return False
        if dt is None and not floating_dclass(d) and isinstance(k, int) and \
                not _NARROW_INT[0] <= k <= _NARROW_INT[1]:
            return False
    return True


def _producer_is(c: _Ctx, v, prim):
    """The equation that made `v` when it is a call of `prim`, else None."""
    p = c.prod(v)
    return p if p is not None and p.prim is prim else None


def _const_broadcast(c: _Ctx, v):
    """The equation `broadcast_to(constant, shape)` that made `v`, else None."""
    p = _producer_is(c, v, ops.broadcast_to)
    return p if p is not None and _is_const(p.ins[0]) else None


# ---- algebraic rewrites: one function per primitive, `rule(e, ctx) -> value or _KEEP` ----

def _collected(e, c):
    """A sum of products of one floating dtype, read once, with a factor in common, written
    with that factor taken out when that costs fewer ops: the product rule's
    `(1 - x) * -2 + d * x * -400` is `(d * -400 + 2) * x - 2` (4 passes over memory, not 5).
    Every factor stays (nothing cancels, so the result broadcasts as before); the
    constants add up in another order."""
    out = e.outs[0]
    if not (_array(out) and floating_dclass(out.dclass)) or len(out.dclass) != 2:
        return _KEEP
    found = _eqn_terms(c, e, e, out.dclass, [0])
    if found is None:
        return _KEEP
    terms, const, before = found
    counts = collections.Counter(v.id for _, fs in terms for v in {f.id: f for f in fs}.values())
    common = max(counts, key=counts.get, default=None)
    if common is None or counts[common] < 2:
        return _KEEP
    x = next(f for _, fs in terms for f in fs if f.id == common)
    inner, rest = [], []
    for k, fs in terms:
        if any(f.id == common for f in fs):
            i = next(j for j, f in enumerate(fs) if f.id == common)
            inner.append((k, fs[:i] + fs[i + 1:]))
        else:
            rest.append((k, fs))
    inner_const = sum(k for k, fs in inner if not fs)
    inner = [(k, fs) for k, fs in inner if fs]
    after = _sum_cost(inner, inner_const) + 1 + _sum_cost([(1, [x])] + rest, const)
    if after >= before:
        return _KEEP
    g = ops.multiply(_build_sum(inner, inner_const), x)
    return _build_sum([(1, [g])] + rest, const)


def _terms(c, v, root, dclass, ops_seen):
    """`v` as (terms [(coefficient, [factor Vars])], constant, equations it takes), where
    it is built by add, subtract, negative and multiply from values of `dclass` and
    constants, each equation read once (but the root); None where it is not such a sum.
    `ops_seen` counts the equations."""
    if _is_const(v) and isinstance(v, (int, float)) and not isinstance(v, bool):
        return [], float(v), 0
    if not (isinstance(v, Var) and v.kind == "array" and v.dclass == dclass):
        return None
    p = c.prod(v)
    if p is None or not c.read_once(v):
        return [(1.0, [v])], 0.0, 0
    return _eqn_terms(c, p, root, dclass, ops_seen) or ([(1.0, [v])], 0.0, 0)


def _eqn_terms(c, p, root, dclass, ops_seen):
    """`_terms` of the value equation `p` makes; None where it is no such sum."""
    if ops_seen[0] > 16 or p.params or \
            p.prim not in (ops.add, ops.subtract, ops.negative, ops.multiply):
        return None
    ops_seen[0] += 1
    parts = [_terms(c, a, root, dclass, ops_seen) for a in p.ins]
    if any(q is None for q in parts):
        return None
    n = 1 + sum(q[2] for q in parts)
    if p.prim is ops.negative:
        (t, k, _), = parts
        return [(-a, fs) for a, fs in t], -k, n
    (ta, ka, _), (tb, kb, _) = parts
    if p.prim is ops.add:
        return ta + tb, ka + kb, n
    if p.prim is ops.subtract:
        return ta + [(-a, fs) for a, fs in tb], ka - kb, n
    # multiply: a constant scales a sum; two products make one product
    if not ta:
        return [(ka * a, fs) for a, fs in tb], ka * kb, n
    if not tb:
        return [(kb * a, fs) for a, fs in ta], ka * kb, n
    if len(ta) == 1 and len(tb) == 1 and ka == 0 and kb == 0:
        return [(ta[0][0] * tb[0][0], ta[0][1] + tb[0][1])], 0.0, n
    return None


def _sum_cost(terms, const) -> int:
    """Equations `_build_sum` stages."""
    if not terms:
        return 0
    products = sum(len(fs) - 1 + (abs(k) != 1) for k, fs in terms)
    negation = const == 0 and all(k < 0 for k, _ in terms)
    return products + len(terms) - 1 + (const != 0) + negation


def _build_sum(terms, const):
    total = None
    for k, fs in terms:
        v = fs[0]
        for f in fs[1:]:
            v = ops.multiply(v, f)
        if abs(k) != 1:
            v = ops.multiply(v, abs(k))
        if total is None:
            total = v if k > 0 else (ops.negative(v) if const == 0 else ops.subtract(const, v))
            if k < 0 and const != 0:
                const = 0.0
        else:
            total = ops.add(total, v) if k > 0 else ops.subtract(total, v)
    if total is None:
        return const
    if const > 0:
        return ops.add(total, const)
    if const < 0:
        return ops.subtract(total, -const)
    return total


def _same_operand(a, b) -> bool:
    """One value, or equal constants (by their literal)."""
    if isinstance(a, Var) or isinstance(b, Var):
        return a is b
    try:
        return type(a) is type(b) and literal(a) == literal(b)
    except TypeError:  # (an array constant, say)
        return False


def _merged_scatters(c, a, b):
    """scatter_add(u, i, s) + scatter_add(v, i, s) -> scatter_add(u + v, i, s) (one scatter,
    the add on the smaller arrays; a scatter is linear in its values): the cotangents of
    two reads of one slice or index of an array, u and v of one dtype, the first found
    among the terms of a sum of up to 8 (the sum is reassociated)."""
    for x, y in ((a, b), (b, a)):
        sy = _producer_is(c, y, ops.scatter_add)
        found = None if sy is None or not _array(sy.ins[0]) else _take_scatter(c, x, sy, 8)
        if found is not None:
            rest, sx = found
            merged = ops.scatter_add(ops.add(sx.ins[0], sy.ins[0]), *sy.ins[1:], **sy.params)
            return merged if rest is None else ops.add(rest, merged)
    return _KEEP


def _take_scatter(c, x, sy, depth: int):
    """(`x` less a term that scatters like `sy` (None: `x` was that term), the term's
    scatter) where `x` is such a term or a sum with one among its terms; else None."""
    sx = _producer_is(c, x, ops.scatter_add)
    if sx is not None:
        u, v = sx.ins[0], sy.ins[0]
        # (no shape to compare: u and v each broadcast to the part of s that i selects,
        # or their scatter fails, so u + v does too)
        if sx.params == sy.params and _array(u) and u.dclass == v.dclass and \
                all(_same_operand(p, q) for p, q in zip(sx.ins[1:], sy.ins[1:])):
            return None, sx
        return None
    p = _producer_is(c, x, ops.add)
    if p is None or depth == 0:
        return None
    for k in (0, 1):
        found = _take_scatter(c, p.ins[k], sy, depth - 1)
        if found is not None:
            rest, sx = found
            other = p.ins[1 - k]
            return (other if rest is None else ops.add(rest, other)), sx
    return None


def _rw_add(e, c):
    a, b = e.ins
    if _array(a) and a is b and _keeps_dtype(a):
        return ops.multiply(2, a)  # a + a -> 2 * a (constant factors then fold)
    merged = _merged_scatters(c, a, b)
    if merged is not _KEEP:
        return merged
    if _is_const(b, 0) and _array(a) and _keeps_dtype(a, b):
        return a
    if _is_const(a, 0) and _array(b) and _keeps_dtype(b, a):
        return b
    for x, y in ((a, b), (b, a)):  # zeros_like(v) + y -> y, y of v's shape and dtype
        z = _producer_is(c, x, ops.zeros_like)
        if z is not None and _array(y) and _same_shape(y, z.ins[0]) and \
                isinstance(z.ins[0], Var) and y.dclass == z.ins[0].dclass and \
                floating_dclass(y.dclass):
            return y
        z = _producer_is(c, x, ops.zeros)  # np.zeros(shape) + y -> y, of one known shape
        if z is not None and _array(y) and known_shape(y) is not None and \
                _same_shape(y, x) and y.dclass == x.dclass and floating_dclass(y.dclass):
            return y
    return _collected(e, c)


def _rw_subtract(e, c):
    a, b = e.ins
    if not (_is_const(b, 0) and _array(a) and _keeps_dtype(a, b)):
        return _collected(e, c)
    return a if _is_const(b, 0) and _array(a) and _keeps_dtype(a, b) else _KEEP


def _rw_multiply(e, c):
    a, b = e.ins
    for x, y in ((a, b), (b, a)):
        if _is_const(y, 1) and _array(x) and _keeps_dtype(x, y):
            return x
        ones = _producer_is(c, y, ops.ones_like)
        if ones is not None and _same_shape(x, ones.ins[0]) and \
                x.dclass == ones.ins[0].dclass:  # (x * ones of another dtype: promoted)
            return x
        bc = _const_broadcast(c, y)
        if bc is not None:
            src = c.shape_source(bc.ins[1])
            if src is not None and _same_shape(x, src):
                return ops.multiply(bc.ins[0], x)  # broadcast(c) * x -> c * x
            if _is_const(x):  # broadcast(c) * d -> broadcast(c * d)
                return ops.broadcast_to(bc.ins[0] * x, bc.ins[1])
        inner_mul = _producer_is(c, y, ops.multiply)
        if _is_const(x) and inner_mul is not None:
            inner = [q for q in inner_mul.ins if _is_const(q)]
            other = [q for q in inner_mul.ins if not _is_const(q)]
            if len(inner) == 1 and len(other) == 1 and \
                    _folds_into(x * inner[0], other[0]):  # a * (b * y) -> (a * b) * y
                return ops.multiply(x * inner[0], other[0])
    sa, sb = _scaling(c, a), _scaling(c, b)
    if sa is not None and sb is not None and _folds_into(sa[0] * sb[0], sa[1], sb[1]):
        return ops.multiply(sa[0] * sb[0], ops.multiply(sa[1], sb[1]))  # (c1 x)(c2 y)
    return _KEEP


def _scaling(c: _Ctx, v):
    """(constant, x) where v is `constant * x` of a floating x, read once (a rewrite that
    replaces its reader makes it dead), else None."""
    p = _producer_is(c, v, ops.multiply)
    if p is None or not c.read_once(v):
        return None
    for k in (0, 1):
        k_const, x = p.ins[k], p.ins[1 - k]
        if _is_const(k_const) and type(k_const) is not bool and _array(x) and \
                floating_dclass(x.dclass):
            return k_const, x
    return None


def _rw_divide(e, c):
    a, b = e.ins
    if _is_const(b, 1) and _array(a) and _keeps_dtype(a, b, true_divide=True):
        return a
    ones = _producer_is(c, a, ops.ones_like)
    if ones is not None and _same_shape(b, ones.ins[0]) and \
            ones.ins[0].dclass == getattr(b, "dclass", None):
        return ops.divide(1.0, b)  # ones_like(v) / b -> 1.0 / b
    bc = _const_broadcast(c, a)
    if bc is not None:
        src = c.shape_source(bc.ins[1])
        if src is not None and _same_shape(b, src):
            return ops.divide(bc.ins[0], b)  # broadcast(c) / b -> c / b
        if isinstance(b, Var) and b.kind == "meta" or _is_const(b):
            # broadcast(c) / n -> broadcast(c / n): one scalar division, still a view
            return ops.broadcast_to(ops.divide(bc.ins[0], b), bc.ins[1])
    return _KEEP


def _rw_power(e, c):
    a, b = e.ins
    return a if _is_const(b, 1) and isinstance(a, Var) and _keeps_dtype(a, b) else _KEEP


def _rw_negative(e, c):
    x = e.ins[0]
    neg = _producer_is(c, x, ops.negative)
    if neg is not None:
        return neg.ins[0]
    bc = _const_broadcast(c, x)
    if bc is not None:
        return ops.broadcast_to(-bc.ins[0], bc.ins[1])
    mul = _producer_is(c, x, ops.multiply)
    if mul is not None:
        for k, q in enumerate(mul.ins):  # -(c * y) -> (-c) * y
            if _is_const(q) and not _is_const(mul.ins[1 - k]) and \
                    _folds_into(-q, mul.ins[1 - k]):
                return ops.multiply(-q, mul.ins[1 - k])
        if c.read_once(x):
            for k, q in enumerate(mul.ins):  # -((c / y) * z) -> ((-c) / y) * z
                negated = _negated_scaling(c, q)
                if negated is not None:
                    return ops.multiply(negated, mul.ins[1 - k])
    if _producer_is(c, x, ops.divide) is not None:  # -(c / y) -> (-c) / y
        negated = _negated_scaling(c, x)
        if negated is not None:
            return negated
    return _KEEP


def _negated_scaling(c: _Ctx, v):
    """-v, staged as one op, where v is `c * y`, `c / y` or `y / c` for a constant c that
    nothing else reads (the negation moves into the constant: one op fewer), else None."""
    p = c.prod(v)
    if p is None or p.prim not in (ops.multiply, ops.divide) or not c.read_once(v):
        return None
    a, b = p.ins
    if _is_const(a) and not _is_const(b) and _folds_into(-a, b):
        return p.prim(-a, b)
    if _is_const(b) and not _is_const(a) and _folds_into(-b, a):
        return p.prim(a, -b)
    return None


def _rw_to_shape(e, c):
    """sum_to, broadcast_to, reshape to the shape their operand already has."""
    x, s = e.ins
    src = c.shape_source(s)
    if src is not None and _same_shape(x, src):
        return x
    if isinstance(s, tuple) and known_shape(x) == s:
        return x  # a specialized variant's: both shapes known
    if e.prim is ops.sum_to and isinstance(s, tuple) and known_shape(x) is not None:
        return _sum_to_known(x, known_shape(x), s)
    if src is not None and src.sclass == SCALAR and _is_const(x) and e.prim is not ops.reshape:
        return x  # a Python number already acts as a 0-d array
    return _KEEP


def _sum_to_known(x, xs, s):
    """sum_to(x, s) with both shapes known: the one reduction it comes to."""
    lead = len(xs) - len(s)
    if lead < 0 or any(d not in (1, xd) for d, xd in zip(s, xs[lead:])):
        return _KEEP  # (not a sum_to numpy could do: left to raise at run time)
    ones = tuple(lead + i for i, d in enumerate(s) if d == 1 and xs[lead + i] != 1)
    axes = tuple(range(lead)) + ones
    if not axes:
        return ops.reshape(x, s)  # only leading 1s to drop
    if not ones:
        return ops.sum(x, axis=axes if len(axes) > 1 else axes[0])
    r = ops.sum(x, axis=axes if len(axes) > 1 else axes[0], keepdims=True)
    return r if not lead else ops.reshape(r, s)


def _unbroadcast(e, c):
    """An elementwise op's operand `broadcast_to(a, S)` where the op's result has shape S
    anyway (all shapes known, in a specialized variant): `a` itself, numpy broadcasts it.
    Only where the dtype cannot change: `a` an array of at least one dimension (whose
    dtype broadcast_to keeps), or a Python float beside float64 arrays; in a derivative,
    a Python float beside floating arrays too: a cotangent takes the dtype of the value it
    belongs to, as the tape's does and the shape-polymorphic code's (where the same seed
    is a Python float: `out *= 1e-300`), not float64 from np.broadcast_to's array."""
    out = known_shape(e.outs[0])
    if out is None or not e.prim.elementwise or e.prim.shape_arg is not None:
        return _KEEP
    ins, changed = list(e.ins), False
    for i, v in enumerate(ins):
        p = _producer_is(c, v, ops.broadcast_to)
        if p is None or p.ins[1] != out:
            continue
        a = p.ins[0]
        others = [w for j, w in enumerate(ins) if j != i]
        if isinstance(a, Var) and known_shape(a) not in (None, ()) or \
                type(a) is float and (all(_float64(w) or _is_const(w) for w in others) or
                                      e.phase == "bwd" and _floating_arrays(others)):
            ins[i], changed = a, True
    if not changed or known_out_shape(e.prim, ins, e.params) != out:
        return _KEEP
    return e.prim(*ins, **e.params)


def _floating_arrays(vs) -> bool:
    arrays = [v for v in vs if isinstance(v, Var) and v.kind == "array"]
    return bool(arrays) and all(floating_dclass(v.dclass) for v in arrays) and all(
        isinstance(v, Var) and v.kind == "array" or type(v) in (float, int) for v in vs)


def _float64(v) -> bool:
    return isinstance(v, Var) and v.kind == "array" and v.dclass == FLOAT64


def _rw_bilinear_known(e, c):
    """matmul_grad_a / matmul_grad_b of matrices and vectors of known shapes (a
    specialized variant): `g @ b.T` and `a.T @ g`, or an outer product and a
    vector-matrix product (`g @ a`, no transpose), with nothing left to reduce."""
    g, a, b = e.ins
    shapes = [known_shape(v) for v in (g, a, b)]
    if any(s is None for s in shapes) or len({v.dclass for v in (g, a, b)}) != 1:
        return _KEEP
    ranks = tuple(len(s) for s in shapes)
    grad_a = e.prim is _linalg.matmul_grad_a
    if ranks == (1, 2, 1):  # a matrix times a vector: a (m, n) @ b (n,) -> (m,)
        return ops.outer(g, b) if grad_a else ops.matmul(g, a)  # (a.T @ g is g @ a)
    if ranks == (1, 1, 2):  # a vector times a matrix: a (n,) @ b (n, k) -> (k,)
        return ops.matmul(b, g) if grad_a else ops.outer(a, g)
    if ranks != (2, 2, 2):
        return _KEEP
    if grad_a:
        return ops.matmul(g, ops.transpose(b)) if shapes[0][0] == shapes[1][0] else _KEEP
    return ops.matmul(ops.transpose(a), g) if shapes[0][1] == shapes[2][1] else _KEEP


def _rw_broadcast_shapes(e, c):
    """broadcast_shapes(s, ()) is s: a 0-d operand (a known one) widens nothing."""
    kept = [s for s in e.ins if not (isinstance(s, tuple) and s == ())]
    if len(kept) == len(e.ins):
        return _KEEP
    if len(kept) == 1:
        return kept[0]
    return ops.broadcast_shapes(*kept) if kept else ()


def _rw_where(e, c):
    cond, a, b = e.ins
    if isinstance(cond, (bool, numpy.bool_)) and e.phase == "bwd":
        # e.g. `0.5 ** y`: the rule's `where(x == 0, 0.0, g * ...)` with x a constant.
        # Only for cotangents (floating), where a number in the other branch changes
        # neither the shape nor the dtype.
        chosen, other = (a, b) if cond else (b, a)
        if _array(chosen) and _is_const(other):
            return chosen
    return _KEEP


def _elementwise_producer(c, v):
    p = c.prod(v)
    return p if p is not None and p.prim.elementwise and p.prim.differentiable else None


def _rw_shape(e, c):
    # the shape of an elementwise result follows from its inputs' shapes: the result
    # itself need not be kept alive (or saved by a loop) just for its shape
    x = e.ins[0]
    p = _elementwise_producer(c, x)
    if p is None:
        return _KEEP
    arrays = [a for a in p.ins if _array(a)]
    same = [a for a in arrays if a.sclass == x.sclass]
    others_scalar = all(a.kind != "list" if isinstance(a, Var) else
                        isinstance(a, numbers.Number) for a in p.ins)
    if same and others_scalar:
        return ops.shape(same[0])
    if len(arrays) > 1 and others_scalar and len(arrays) <= 3:
        return ops.broadcast_shapes(*[ops.shape(a) for a in arrays])
    return _KEEP


def _rw_reduced_size(e, c):
    # like shape: the size of an elementwise result is that of a same-shaped input
    x = e.ins[0]
    p = _elementwise_producer(c, x)
    if p is not None:
        same = [a for a in p.ins if _array(a) and a.sclass == x.sclass]
        if same:
            return ops.reduced_size(same[0], **e.params)
    return _KEEP


def _rw_cast_like(e, c):
    x, like = e.ins
    if isinstance(x, Var) and isinstance(like, Var) and x.dclass == like.dclass:
        return x
    return _KEEP


def _rw_convert_like(e, c):
    """x in like's dtype, where like is known to be floating: a cast like any other (its
    derivative needs no gate)."""
    like = e.ins[1]
    if isinstance(like, Var) and floating_dclass(like.dclass):
        return ops.cast_like(*e.ins)
    return _KEEP


def _rw_float_gate(e, c):
    """g where like is known to be floating; zeros where it is known not to be."""
    g, like = e.ins
    if not (isinstance(g, Var) and isinstance(like, Var)):
        return _KEEP
    if floating_dclass(like.dclass):
        return g
    if like.dclass[0] == "k" and numpy.dtype(like.dclass[1]).kind not in "fc":
        return ops.zeros_like(g)
    return _KEEP


def _rw_like_arg(e, c):
    """like_arg(cast_like(g, x), x) is like_arg(g, x): it casts to x's dtype itself.
    like_arg(g, x) is g where both are arrays of one known shape of one dimension or more
    and one known dtype (a variant's: a cotangent that met a float64 constant, a seed
    folded to an array, is float64 where x is float32, and keeps its cast).
    like_arg(g, x) is g where g is a float64 sum or mean of all its operand's elements
    (numpy gives a numpy float64) and x a float64 of no dimension (a 0-d array, a Python
    float or a numpy scalar, whose gradient is a numpy float64)."""
    g, x = e.ins
    if isinstance(g, Var) and isinstance(x, Var) and g.dclass == x.dclass and \
            len(x.dclass) == 2 and isinstance(x.dclass[1], str) and known_shape(x) and \
            known_shape(g) == known_shape(x):
        return g  # (a variant's array of one known dtype and shape: already its argument's)
    r = _producer_is(c, g, ops.sum) or _producer_is(c, g, ops.mean)
    if r is not None and isinstance(x, Var) and g.sclass == SCALAR and \
            x.sclass == SCALAR and g.dclass == x.dclass == FLOAT64:
        return g
    p = _producer_is(c, e.ins[0], ops.cast_like)
    if p is None or not c.read_once(e.ins[0]) or p.ins[1] is not e.ins[1]:
        return _KEEP
    return ops.like_arg(p.ins[0], e.ins[1])


def _rw_copy(e, c):
    """copy(astype(x, d)) where x's dtype is known to be another than d: astype made a new
    array already (`x.astype(np.float64)` of a float32 x)."""
    p = _producer_is(c, e.ins[0], ops.astype)
    if p is None or not c.read_once(e.ins[0]) or not isinstance(p.ins[0], Var):
        return _KEEP
    d = p.ins[0].dclass
    if isinstance(d, tuple) and len(d) == 2 and isinstance(d[1], str) and \
            numpy.dtype(d[1]) != numpy.dtype(p.ins[1]):
        return e.ins[0]
    return _KEEP


#: primitive -> its rewrite rule
_REWRITES = {
    ops.add: _rw_add, ops.subtract: _rw_subtract, ops.multiply: _rw_multiply,
    ops.divide: _rw_divide, ops.power: _rw_power, ops.negative: _rw_negative,
    ops.sum_to: _rw_to_shape, ops.broadcast_to: _rw_to_shape, ops.reshape: _rw_to_shape,
    ops.where: _rw_where, ops.shape: _rw_shape, ops.reduced_size: _rw_reduced_size,
    ops.cast_like: _rw_cast_like, ops.cast_into: _rw_cast_like,
    ops.broadcast_shapes: _rw_broadcast_shapes,
    ops.convert_like: _rw_convert_like, ops.float_gate: _rw_float_gate, ops.copy: _rw_copy,
    ops.like_arg: _rw_like_arg,
    _linalg.matmul_grad_a: _rw_bilinear_known, _linalg.matmul_grad_b: _rw_bilinear_known,
}

# rewrites that stage the same rewrite one step further up a chain of values: what they
# stage is swept at once
_CHAINS = (ops.shape, ops.reduced_size)


def _simplify(e: Eqn, c: _Ctx):
    """A replacement value for e's output, or _KEEP."""
    if any(_marked(c, a) for a in e.ins):
        return _KEEP  # numpy's function of Python numbers: `np.multiply(rate, 1.0)` is
        # numpy's float64, not rate (see ops.numpy_operand); Python's max(n, n) is too
    rule = _REWRITES.get(e.prim)
    r = _KEEP if rule is None else rule(e, c)
    if r is _KEEP and e.prim.elementwise:
        r = _unbroadcast(e, c)
    if _marked(c, r):
        return _KEEP  # (-np.negative(rate): the same)
    return r


# the markers of an operand that may be a Python number, whose call is written as numpy's
# (`np.multiply(rate, w)`) or as Python's (`max(a, b)`): no rewrite takes them apart
_MARKERS = frozenset({ops.numpy_operand, ops.python_operand})


def _marked(c: _Ctx, v) -> bool:
    p = c.producer.get(v.id) if isinstance(v, Var) else None
    return p is not None and p.prim in _MARKERS


def _key(e: Eqn):
    if not e.prim.pure or any(o.kind == "list" for o in e.outs):
        return None  # two calls of an impure op are two results; each list its own object
    if e.prim.creator:
        return None  # two new arrays: either may be updated in place (an accumulator)
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
    # shape Vars computed without the value they are the shape of (see `_rw_shape`): id ->
    # that value, so later rules still know whose shape it is
    shape_alias: dict[int, Var] = {}
    # Shapes are rewritten last, once the rest has settled: the shape of a long chain of
    # elementwise results becomes an expression in the shapes of the chain's inputs, and
    # it is worth building only for the shapes still needed (where they are needed).
    for shapes in (False, True):
        while True:
            run = _Run(graph, named, passes, shapes, shape_alias)
            run.uses = _uses_in(eqns, iter_vars(outputs))
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
        if not shapes and not _holds_shape_of(eqns):
            break  # (a sweep that rewrites shapes would find nothing else to change)
    eqns = _hoisted_transposes(eqns, named)
    check_changes(eqns, outputs)  # (a change in place the program reads past: refused)
    return Graph(graph.inputs, eqns, outputs, graph.name)


def _hoisted_transposes(eqns: list, named: set) -> list:
    """`w.T` in a loop's body, of a w from outside the loop, is made once before the loop
    (a transpose is a view that cannot fail, so making it where the loop runs no step
    changes nothing): the adjoint of `h @ W` in a loop reads `W.T` at every step."""
    out = []
    for e in eqns:
        for b in e.blocks():
            b.eqns = _hoisted_transposes(b.eqns, named)
        if e.prim is FOR:
            body = e.params["body"]
            inside = {o.id for q in body.eqns for o in iter_vars([q.outs])} | \
                {c.id for c in e.params["carry"]}
            if e.params.get("index") is not None:
                inside.add(e.params["index"].id)
            moved = [q for q in body.eqns if q.prim is ops.transpose and
                     q.params.get("axes") is None and len(q.ins) == 1 and
                     isinstance(q.ins[0], Var) and q.ins[0].kind == "array" and
                     q.ins[0].id not in inside]
            if moved:
                body.eqns = [q for q in body.eqns if not any(q is m for m in moved)]
                for q in moved:
                    if q.outs[0].id not in named:  # (a name of srcgrad's: say what it is)
                        q.outs[0].hint = q.ins[0].hint + "_T"
                out.extend(moved)
        out.append(e)
    return out


def _holds_shape_of(eqns) -> bool:
    return any(e.prim.kind == "shape_of" or any(_holds_shape_of(b.eqns) for b in e.blocks())
               for e in eqns)


def _count(eqns) -> int:
    return sum(1 + sum(_count(b.eqns) for b in e.blocks()) for e in eqns)


class _Run:
    """One sweep of simplify / fold / cse over a block and its nested blocks."""

    def __init__(self, graph, named, passes, shapes, shape_alias):
        self.graph, self.named, self.passes = graph, named, passes
        self.shapes = shapes  # whether `shape` equations are rewritten
        self.subst: dict[int, object] = {}
        self.changed = False
        self.shape_alias: dict[int, Var] = shape_alias
        # the graph's inputs: their names are the parameters', never moved
        self.protected = {v.id for v in graph.inputs}

        self.shape_source: dict[int, Var] = {}
        # arrays a statement that runs as written changes in place (`buf.fill(0.0)`): each
        # stays the array its equation makes, merged with no other and rewritten to none
        self.changed_in_place = changed_in_place(graph.eqns, set())
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
        ctx.uses = self.uses
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
                if e.prim is FOR:  # (a rewrite may have lost what an initial value's
                    # dtype is, which the loop's carry was checked against: it is that)
                    for c, v in zip(e.params["carry"], e.ins[3:]):
                        if _forgets_dtype(c, v):
                            _refined(v, c)
                for b in e.blocks():
                    b.eqns = self.block(b.eqns, seen, dict(producer))
                    b.outs = [self.res_tree(v) for v in b.outs]
                new.append(e)
                continue
            staged = self.visit(e, ctx, seen, producer, new)
            if e.prim in _CHAINS:
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
        self.facts.classify(e.prim, e.ins, e.params, out)
        if out.id in self.changed_in_place:
            producer[out.id] = e
            new.append(e)
            return []
        k = _key(e)
        if "simplify" in self.passes and (self.shapes or e.prim.kind != "shape_of"):
            memo = seen.simplified.get((k, e.phase), _KEEP) if k is not None else _KEEP
            if memo is not _KEEP:
                self._replace(e, memo, producer)
                return []
            staged, r = self.simplify(e, ctx)
            if r is not _KEEP and _forgets_dtype(e.outs[0], r):
                r = _refined(r, e.outs[0])
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
                not e.prim.creator and e.prim.impl is not None and e.prim.pure and \
                not number_spread(e.prim, e.ins):
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
        if e.prim not in _REWRITES and (not e.prim.elementwise or
                                        known_shape(e.outs[0]) is None):
            return [], _KEEP  # (no rule to try: `_unbroadcast` needs a known shape)
        scratch = Builder()
        scratch.loc, scratch.phase, scratch.hint = e.loc, e.phase, e.outs[0].hint
        scratch.shape_source = collections.ChainMap({}, self.shape_source)
        with staging(scratch):
            r = _simplify(e, ctx)
        return scratch.eqns, r

    def _replace(self, e: Eqn, r, producer: dict):
        out = e.outs[0]
        _move_name(out, r, self.named, e.phase, producer, self.protected)
        self.subst[out.id] = r
        self.changed = True


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
        if op is COND:
            keep = _dce_cond(e, live)
        elif op in (FOR, WHILE):
            keep = _dce_loop(e, live)
        else:  # a stack operation and an impure call stay
            keep = op in (PUSH, POP) or not op.pure or any(o.id in live for o in e.outs)
        if keep:
            kept.append(e)
            live.update(v.id for v in e.ins if isinstance(v, Var))
    return kept[::-1]


def _dce_cond(e, live: set) -> bool:
    """Drop a branch's unused results; whether the branch itself stays."""
    then, els = e.params["then"], e.params["else"]
    keep_k = [k for k, o in enumerate(e.outs) if o.id in live]
    e.outs = [e.outs[k] for k in keep_k]
    then.outs = [then.outs[k] for k in keep_k]
    els.outs = [els.outs[k] for k in keep_k]
    if not e.outs and not _has_effects_blocks(e):
        return False
    for b in (then, els):
        live.update(v.id for v in b.outs if isinstance(v, Var))
        b.eqns = _dce(b.eqns, live)
    return True


def _dce_loop(e, live: set) -> bool:
    """Whether a loop stays (its results used, or its body has effects); its body pruned."""
    if not any(o.id in live for o in e.outs) and not _has_effects_blocks(e):
        return False
    for b in e.blocks():
        live.update(v.id for v in b.outs if isinstance(v, Var))
    for b in e.blocks():
        b.eqns = _dce(b.eqns, live)
    return True


def _move_name(old: Var, new, named: set, phase: str, producer: dict, protected: set):
    """Give `new` the user's name `old` carried, when `old` is replaced by `new`.

    A cotangent's name (`dy`) never moves onto a value of the forward pass: when CSE finds
    that the backward pass recomputes `np.sin(x)`, the forward `np.sin(x)` must not be
    called `dy` in the generated code."""
    made_by = producer.get(new.id) if producer is not None and isinstance(new, Var) else None
    if made_by is not None and made_by.phase == "fwd" and phase == "bwd":
        return
    if isinstance(new, Var) and old.id in named and new.id not in named and \
            new.const_name is None and new.id not in protected:
        new.hint = old.hint
        named.add(new.id)



# ---- before differentiation: products of a loop's step hoisted out of it --------------------

#: the most elements of a product taken out of a loop: beyond, the per-step products are
#: as fast (BLAS is busy either way) and the product of every step, and its cotangent, are
#: memory the loop did not need
HOIST_MAX = 1 << 16


def hoist_indexed_products(eqns: list, stacked: bool = True, inputs=()) -> list:
    """`x[t] @ w` in the body of a loop whose counter t runs over every index of x's first
    axis (0, 1, ..., len(x) - 1, in either order), with x and w from outside the loop and
    w a vector or a matrix, is `(x @ w)[t]`: one matmul before the loop (batched by BLAS) instead of one per step.
    Its adjoint follows: the per-step cotangents accumulate into one array at index t, and
    w's cotangent is a single product after the loop instead of a sum of one per step.
    Only where the shapes are known (a specialized variant's), so the product made before
    the loop cannot fail where the loop would not have run, and for products of at most
    `HOIST_MAX` elements, where a call per step is what costs. A stack x of three axes or
    more is multiplied as the matrix of its rows, `(x.reshape(-1, d) @ w).reshape(...)`:
    one product for BLAS (numpy's matmul makes one per matrix of the stack).
    `stacked=False` (numba, which multiplies matrices, and reshapes only C-contiguous
    arrays) keeps to a matrix x or one of the function's `inputs` (C-contiguous by its
    guard). Equations are rewritten in place; returns the (new) list."""
    out = []
    for e in eqns:
        for b in e.blocks():
            b.eqns = hoist_indexed_products(b.eqns, stacked, inputs)
        if e.prim is FOR:
            out.extend(_hoisted_products(e, stacked, {v.id for v in inputs}))
        out.append(e)
    return out


def _hoisted_products(e, stacked: bool, inputs: set) -> list:
    start, stop, step = e.ins[:3]
    index, body = e.params.get("index"), e.params["body"]
    if index is None or not (_is_const(start, 0) and _is_const(step, 1)):
        return []
    inside = {o.id for q in body.eqns for o in iter_vars([q.outs])} | \
        {c.id for c in e.params["carry"]} | {index.id}

    def outer(v) -> bool:
        return isinstance(v, Var) and v.kind == "array" and v.id not in inside and \
            known_shape(v) is not None

    items = {q.outs[0].id: q.ins[0] for q in body.eqns
             if q.prim is ops.getitem and len(q.ins) == 2 and q.ins[1] is index and
             outer(q.ins[0]) and (len(known_shape(q.ins[0])) >= 2 if stacked or
                                  q.ins[0].id in inputs else
                                  len(known_shape(q.ins[0])) == 2) and
             _is_const(stop, known_shape(q.ins[0])[0])}
    hoisted = []
    for k, q in enumerate(body.eqns):
        x = items.get(q.ins[0].id) if q.prim is ops.matmul and isinstance(q.ins[0], Var) \
            else None
        w = q.ins[1] if x is not None else None
        if x is None or not outer(w) or len(known_shape(w)) > 2:
            continue  # ((x @ w)[t] is x @ w[t] for a stack of matrices w)
        shape = known_out_shape(ops.matmul, [x, w], {})
        if shape is None or int(numpy.prod(shape)) > HOIST_MAX:
            continue
        product = Var(f"{q.outs[0].hint}_all", "array", staging_known(shape),
                      q.outs[0].dclass)
        xs, ws = known_shape(x), known_shape(w)
        if len(xs) >= 3 and len(ws) == 2:  # the stack's rows times w, then the stack
            rows = int(numpy.prod(xs[:-1]))
            flat = Var(f"{x.hint}_rows", "array", staging_known((rows, xs[-1])), x.dclass)
            flat_product = Var(f"{q.outs[0].hint}_rows", "array",
                               staging_known((rows, ws[1])), q.outs[0].dclass)
            hoisted += [Eqn(ops.reshape, [x, (rows, xs[-1])], [flat], {}, q.loc, q.phase),
                        Eqn(ops.matmul, [flat, w], [flat_product], {}, q.loc, q.phase),
                        Eqn(ops.reshape, [flat_product, tuple(shape)], [product], {}, q.loc,
                            q.phase)]
        else:
            hoisted.append(Eqn(ops.matmul, [x, w], [product], {}, q.loc, q.phase))
        body.eqns[k] = Eqn(ops.getitem, [product, index], list(q.outs), {}, q.loc, q.phase)
        offset = _hoisted_offset(body, body.eqns[k], product, outer)
        if offset and hoisted[-1].prim is ops.reshape and hoisted[-1].outs[0] is product \
                and len(known_shape(offset[0].ins[1])) <= 1:  # (b a vector: each row's)
            # the bias added to the product's rows (a new array, updated in place), then
            # the stack made of them: `(rows @ w + b).reshape(...)`
            unstack, add = hoisted.pop(), offset[0]
            flat_product = unstack.ins[0]
            rows = Var(add.outs[0].hint + "_rows", "array", flat_product.sclass,
                       add.outs[0].dclass)
            offset = [Eqn(ops.add, [flat_product, add.ins[1]], [rows], {}, add.loc, add.phase),
                      Eqn(ops.reshape, [rows, unstack.ins[1]], list(add.outs), {}, unstack.loc,
                          unstack.phase)]
        hoisted += offset
    return hoisted


def _uses(block) -> collections.Counter:
    """How often each Var (by id) is read in a block (at any depth) or yielded by it."""
    return _uses_in(block.eqns, block.outs)


def _uses_in(eqns, outs) -> collections.Counter:
    n = collections.Counter()
    for e in eqns:
        n.update(v.id for v in e.ins if isinstance(v, Var))
        for b in e.blocks():
            n.update(_uses(b))
    n.update(v.id for v in outs if isinstance(v, Var))
    return n


def _hoisted_offset(body, item: Eqn, product: Var, outer) -> list:
    """`(x @ w)[t] + c` or `((x @ w)[t] + y) + c`, with c from outside the loop (a bias),
    is `(x @ w + c)[t] (+ y)`: c is added once, to the product made before the loop,
    instead of once per step (and its cotangent is one sum after the adjoint loop, not one
    per step). Only where c is known to keep the item's shape (it broadcasts into the
    trailing axes of the product), and where the sums it skips are read nowhere else.
    Returns the hoisted equation (none when the pattern is not there)."""
    uses = _uses(body)
    users = {}  # Var id -> the equation that reads it (where it is read once)
    for q in body.eqns:
        for v in q.ins:
            if isinstance(v, Var) and uses[v.id] == 1:
                users[v.id] = q

    def add_of(v):
        q = users.get(v.id) if uses[v.id] == 1 else None
        if q is None or q.prim is not ops.add or len(q.ins) != 2:
            return None, None
        other = q.ins[1] if q.ins[0] is v else q.ins[0]
        return q, other

    def offset(c) -> bool:
        pshape, cshape = known_shape(product), known_shape(c) if outer(c) else None
        return cshape is not None and len(cshape) < len(pshape) and \
            numpy.broadcast_shapes(pshape, cshape) == pshape and c.dclass == product.dclass

    r = item.outs[0]
    first, other = add_of(r)
    if first is None:
        return []
    if offset(other):  # (x @ w)[t] + c
        last, c = first, other
    else:
        last, c = add_of(first.outs[0])
        if last is None or not offset(c):
            return []
    moved = Var(product.hint, "array", product.sclass, product.dclass)
    item.ins = [moved] + list(item.ins[1:])
    kept = r if last is first else first.outs[0]
    body.eqns.remove(last)
    mapping = {last.outs[0].id: kept}
    subst(body.eqns, mapping)
    body.outs = [mapping.get(v.id, v) if isinstance(v, Var) else v for v in body.outs]
    return [Eqn(ops.add, [product, c], [moved], {}, last.loc, last.phase)]


# ---- after differentiation: products summed over a loop's steps, made once after it -------

#: the most elements of the per-step arrays a batched product keeps (each operand's
#: stacked steps): beyond, the per-step products are as fast and use no memory
BATCH_MAX = 1 << 16


def batch_step_products(eqns: list) -> bool:
    """`acc = acc + p.T @ q` (or `acc + outer(p, q)`) in the body of a loop of a known,
    positive number of steps, with p and q matrices (vectors) made by the step, is the sum
    of the steps' products: p and q are appended to a list at each step (after every other
    use of them, so nothing writes into them later) and the sum is one product of the
    stacked steps after the loop, `P.T @ Q` with the steps' rows stacked, instead of a
    product and a sum per step. The adjoint of `h @ W` in a loop over time accumulates
    W's cotangent this way. Only for shapes known (a specialized variant's) and stacks of
    at most `BATCH_MAX` elements. Rewrites in place; whether anything changed (the loop's
    initial sum is then dead code for the optimizer to drop)."""
    return _around_loops(eqns, lambda e, block: _batched_products(
        e, {q.outs[0].id: q for q in block if len(q.outs) == 1}))


def _around_loops(eqns: list, rewrite) -> bool:
    """Rewrite each `for` loop of `eqns` (at any depth) with `rewrite(loop, its block's
    equations)`, which changes the loop in place and gives the equations to put before and
    after it, or None. Whether anything changed."""
    changed = False
    k = 0
    while k < len(eqns):
        e = eqns[k]
        for b in e.blocks():
            changed = _around_loops(b.eqns, rewrite) or changed
        if e.prim is FOR:
            around = rewrite(e, eqns)
            if around:
                eqns[k + 1:k + 1] = around[1]
                eqns[k:k] = around[0]
                k += len(around[0]) + len(around[1])
                changed = True
        k += 1
    return changed


def _steps(e) -> int:
    start, stop, step = e.ins[:3]
    if not all(_is_const(v) and float(v).is_integer() for v in (start, stop, step)) or \
            step == 0:
        return 0
    return len(range(int(start), int(stop), int(step)))


def _batched_products(e, outer: dict):
    """(equations before the loop, after it) for the batched sums of `e`, or None.
    `outer`: the equations of the loop's block, by their result."""
    n = _steps(e)
    if n <= 0 or "brk" in e.params:
        return None
    body, carry = e.params["body"], e.params["carry"]
    uses = _uses(body)
    # a value the step also saves for the adjoint (pushes) is kept, never written into
    kept_uses = _uses_in([q for q in body.eqns if q.prim is not PUSH], body.outs)
    made = {q.outs[0].id: q for q in body.eqns if len(q.outs) == 1}
    carried = {c.id for c in carry} | {v.id for v in body.outs if isinstance(v, Var)}
    before, after, dropped, appends = [], [], set(), []
    lists = {}  # id of a step's value -> the list of its steps
    for j, (c, nxt) in enumerate(zip(carry, body.outs)):
        q_add = made.get(nxt.id) if isinstance(nxt, Var) else None
        if q_add is None or q_add.prim is not ops.add or uses[c.id] != 1 or \
                uses[nxt.id] != 1 or not any(a is c for a in q_add.ins) or \
                known_shape(c) is None or c.dclass != FLOAT64:
            continue
        term = q_add.ins[1] if q_add.ins[0] is c else q_add.ins[0]
        pq = _step_product(term, made, kept_uses, carried, n)
        if pq is None or term.dclass != FLOAT64:
            continue
        p, q, vectors = pq
        scattered = _scattered_steps(e, q, made, uses, outer, n)
        results = []
        for v in (p,) if scattered is not None or p is q else (p, q):
            if v.id in lists:  # (a value two sums read: one list)
                results.append(lists[v.id])
                continue
            whole = _indexed_steps(e, v, made, n)
            if whole is not None:  # x[t] of an outer x at every t: the steps are x
                results.append(whole)
                continue
            # a list the loop carries, the step's value appended last
            start, inside, nxt_list, result = (Var(v.hint + "_steps", "list")
                                               for _ in range(4))
            before.append(Eqn(LIST_FROM, [], [start], {}, q_add.loc, q_add.phase))
            appends.append((inside, v, nxt_list, start, result))
            results.append(result)
            lists[v.id] = result
        scratch = Builder()
        scratch.loc, scratch.phase, scratch.hint = q_add.loc, q_add.phase, c.hint
        with staging(scratch):
            # the steps in one order for both operands (the sum of the products of their
            # rows is the same in any): a list holds them in the loop's order, an array
            # (x itself, or the one the loop scatters q into) in the index order; where
            # the two differ, the array's rows reversed (a copy: numba reshapes only a
            # C-contiguous array, numpy copies a reversed one to reshape it)
            in_lists = any(r.kind == "list" for r in results)
            flip = bool(e.params.get("reverse")) and in_lists

            def index_order(x):
                return ops.copy(ops.getitem(x, slice(None, None, -1))) if flip else x

            stacks = []
            for r, v in zip(results, (p, q)):  # (a list's items: the step's values)
                if r.kind != "list":
                    stacks.append(index_order(r))
                    continue
                stacked = STACK_LIST(r, axis=0)
                stacked.sclass = staging_known((n,) + known_shape(v))
                stacked.dclass = v.dclass
                stacks.append(stacked)
            if scattered is None:
                ps, qs = stacks if len(stacks) == 2 else stacks * 2  # (p.T @ p: one list)
            else:  # q's steps are the array the loop scatters them into, in index order
                ps, qs = stacks[0], index_order(scattered)
            if not vectors:  # the steps' rows, one after the other
                rows = n * known_shape(p)[0]
                ps, qs = ops.reshape(ps, (rows, known_shape(p)[1])), \
                    ops.reshape(qs, (rows, known_shape(q)[1]))
            ops.add(e.ins[3 + j], ops.matmul(ops.transpose(ps), qs))
        total = scratch.eqns[-1]
        total.outs = [e.outs[j]]  # the loop's result, made after it
        after += scratch.eqns
        dropped.add(j)
    if not dropped:
        return None
    keep = [j for j in range(len(carry)) if j not in dropped]
    new_carry = [carry[j] for j in keep]
    new_next = [body.outs[j] for j in keep]
    new_inits = [e.ins[3 + j] for j in keep]
    new_results = [e.outs[j] for j in keep]
    phase = body.eqns[-1].phase if body.eqns else e.phase
    for inside, v, nxt_list, start, result in appends:
        body.eqns.append(Eqn(LIST_APPEND, [inside, v, 0], [nxt_list], {}, None, phase))
        new_carry.append(inside)
        new_next.append(nxt_list)
        new_inits.append(start)
        new_results.append(result)
    e.params["carry"], body.outs = new_carry, new_next
    e.ins = list(e.ins[:3]) + new_inits
    e.outs = new_results
    return before, after


#: the most elements of a step's value that `sum_steps_first` adds up across the steps
#: (the sum stays in cache; above, adding whole arrays costs more than reducing them)
SUM_STEPS_MAX = 1 << 16


def sum_steps_first(eqns: list) -> bool:
    """`acc = acc + sum(x, axis)` in the body of a loop of a known, positive number of
    steps, with x a float64 array of known shape (at most `SUM_STEPS_MAX` elements, more
    than acc has) and acc read by that add alone, is the reduction of the sum of the
    steps' x: the loop adds x up (`xs = xs + x`, which codegen writes in place where it
    can, `xs += x`; xs starts as zeros before the loop) and the one reduction comes after
    it, `acc = acc0 + sum(xs, axis)`: one add per step instead of a reduction and an add.
    The adjoint of a bias added in a loop over time reduces its cotangent over the batch
    at every step this way. Only for shapes known (a specialized variant's); the sum's
    terms are added in another order (rounding may differ in the last bits, as numpy's own
    pairwise sums do from one shape to the next). Rewrites in place; whether anything
    changed."""
    return _around_loops(eqns, lambda e, block: _steps_summed(e))


def _steps_summed(e):
    """(equations before the loop, after it) for `sum_steps_first`, or None."""
    if _steps(e) <= 0 or "brk" in e.params:
        return None
    body, carry = e.params["body"], e.params["carry"]
    uses = _uses(body)
    made = {q.outs[0].id: q for q in body.eqns if len(q.outs) == 1}
    before, after, removed = [], [], set()
    for j, (c, nxt) in enumerate(zip(carry, body.outs)):
        q_add = made.get(nxt.id) if isinstance(nxt, Var) else None
        if q_add is None or q_add.prim is not ops.add or uses[c.id] != 1 or \
                uses[nxt.id] != 1 or len(q_add.ins) != 2 or \
                not any(a is c for a in q_add.ins) or q_add.ins[0] is q_add.ins[1]:
            continue
        term = q_add.ins[1] if q_add.ins[0] is c else q_add.ins[0]
        q_sum = made.get(term.id) if isinstance(term, Var) else None
        if q_sum is None or q_sum.prim is not ops.sum or uses[term.id] != 1 or \
                not isinstance(q_sum.ins[0], Var):
            continue
        x = q_sum.ins[0]
        shape, acc_shape = known_shape(x), known_shape(c)
        if shape is None or acc_shape is None or known_shape(term) != acc_shape or \
                int(numpy.prod(shape)) > SUM_STEPS_MAX or \
                int(numpy.prod(shape)) <= int(numpy.prod(acc_shape)) or \
                not (x.dclass == c.dclass == term.dclass == nxt.dclass == FLOAT64):
            continue
        scratch = Builder()
        scratch.loc, scratch.phase, scratch.hint = q_add.loc, q_add.phase, c.hint + "_steps"
        with staging(scratch):
            start = ops.zeros(shape)
        before += scratch.eqns
        inside = Var(c.hint + "_steps", "array", x.sclass, x.dclass)
        summed = Var(c.hint + "_steps", "array", x.sclass, x.dclass)
        result = Var(c.hint + "_steps", "array", x.sclass, x.dclass)
        body.eqns[body.eqns.index(q_add)] = Eqn(ops.add, [inside, x], [summed], {},
                                                q_add.loc, q_add.phase)
        removed.add(id(q_sum))
        scratch = Builder()
        scratch.loc, scratch.phase, scratch.hint = q_add.loc, q_add.phase, c.hint
        with staging(scratch):
            ops.add(e.ins[3 + j], ops.sum(result, **q_sum.params))
        scratch.eqns[-1].outs = [e.outs[j]]  # the loop's result, made after it
        after += scratch.eqns
        e.params["carry"] = carry = list(carry)
        body.outs = list(body.outs)
        e.ins, e.outs = list(e.ins), list(e.outs)
        carry[j], body.outs[j] = inside, summed
        e.ins[3 + j], e.outs[j] = start, result
    if not after:
        return None
    body.eqns = [q for q in body.eqns if id(q) not in removed]
    return before, after


def _indexed_steps(e, v, made, n):
    """x where the step's `v` is `x[t]` of an x from outside the loop, the loop running t
    over every index of x's first axis (0, 1, ..., n - 1, in either order), else None."""
    index = e.params.get("index")
    q = made.get(v.id)
    if index is None or q is None or q.prim is not ops.getitem or q.ins[1] is not index or \
            not (_is_const(e.ins[0], 0) and _is_const(e.ins[2], 1)):
        return None
    x = q.ins[0]
    inside = {o.id for b in e.blocks() for w in b.eqns for o in iter_vars([w.outs])} | \
        {c.id for c in e.params["carry"]}
    shape = known_shape(x) if isinstance(x, Var) and x.id not in inside else None
    if shape is None or shape[0] != n or shape[1:] != known_shape(v) or x.dclass != v.dclass:
        return None
    return x


def _scattered_steps(e, q, made, uses, outer, n):
    """The loop's result that holds every step's q at the step's index (a carried sum of
    `scatter_add(q, t, shape)` from zeros, the loop running t over 0..n-1), else None."""
    index = e.params.get("index")
    if index is None or not (_is_const(e.ins[0], 0) and _is_const(e.ins[2], 1)):
        return None
    carry, body = e.params["carry"], e.params["body"]
    for j, (c, nxt) in enumerate(zip(carry, body.outs)):
        q_add = made.get(nxt.id) if isinstance(nxt, Var) else None
        if q_add is None or q_add.prim is not ops.add or uses[c.id] != 1 or \
                not any(a is c for a in q_add.ins):
            continue
        s = q_add.ins[1] if q_add.ins[0] is c else q_add.ins[0]
        q_sc = made.get(s.id) if isinstance(s, Var) else None
        init = outer.get(e.ins[3 + j].id) if isinstance(e.ins[3 + j], Var) else None
        if q_sc is not None and q_sc.prim is ops.scatter_add and q_sc.ins[0] is q and \
                q_sc.ins[1] is index and uses[s.id] == 1 and init is not None and \
                init.prim is ops.zeros_like and known_shape(c) == (n,) + known_shape(q) \
                and c.dclass == q.dclass:
            return e.outs[j]
    return None


def _step_product(term, made, uses, carried, n):
    """(p, q, whether vectors) where `term` is `p.T @ q` of matrices with one number of
    rows, or `outer(p, q)` of vectors, p and q made by the step (not carried: the next
    step may update a carried array in place), read once; else None."""
    q_mul = made.get(term.id) if isinstance(term, Var) else None
    if q_mul is None or uses[term.id] != 1:
        return None
    if q_mul.prim is ops.outer:
        p, q = q_mul.ins
        vectors = True
    elif q_mul.prim is ops.matmul and not q_mul.params:
        tp, q = q_mul.ins
        q_t = made.get(tp.id) if isinstance(tp, Var) else None
        if q_t is None or q_t.prim is not ops.transpose or q_t.params.get("axes") is not None \
                or uses[tp.id] != 1:
            return None
        p = q_t.ins[0]
        vectors = False
    else:
        return None
    if not all(isinstance(v, Var) and v.kind == "array" and v.id in made and
               v.id not in carried and v.dclass == FLOAT64 for v in (p, q)):
        return None
    sp, sq = known_shape(p), known_shape(q)
    if sp is None or sq is None or len(sp) != (1 if vectors else 2) or len(sq) != len(sp):
        return None
    if not vectors and sp[0] != sq[0]:
        return None
    if n * (numpy.prod(sp) + numpy.prod(sq)) > BATCH_MAX:
        return None
    return p, q, vectors


# ---- after differentiation: the values a loop saves for its adjoint, as arrays of steps -----

#: the most elements of the arrays of steps that replace a stack: beyond, a copy per step
#: (an array of steps is written, a stack keeps a reference) costs what a call per step saves
STEPS_MAX = 1 << 16
#: the most elements of an elementwise result computed for every step at once
STEP_MAP_MAX = 1 << 20


def _float_dtype(v) -> "numpy.dtype | None":
    d = v.dclass if isinstance(v, Var) else None
    if isinstance(d, tuple) and len(d) == 2 and d[0] == "f" and isinstance(d[1], str):
        return numpy.dtype(d[1])
    return None


def _full_range(e) -> int:
    """The steps of loop `e` when its counter runs over 0, 1, ..., n - 1 (in either order),
    with no break: n; else 0."""
    if e.prim is not FOR or "brk" in e.params or e.params.get("index") is None or \
            not (_is_const(e.ins[0], 0) and _is_const(e.ins[2], 1)):
        return 0
    return _steps(e)


def _reads(eqns, v) -> int:
    """How many equations of `eqns` (at any depth) read `v`."""
    n = 0
    for q in eqns:
        n += any(a is v for a in q.ins)
        for b in q.blocks():
            n += _reads(b.eqns, v) + any(o is v for o in b.outs)
    return n


def stacks_as_steps(eqns: list) -> bool:
    """The stack on which a loop of n steps (a counter over 0..n-1, no break) saves
    values for its adjoint loop (the same steps in reverse), each push once per step at
    the body's top level, becomes one array of steps per push, `(n,) + shape`: the loop
    writes the step's value at index t (`saved[t] = v`: a loop's carried sum of
    `scatter_add(v, t)` from zeros, which code generation writes so) and the adjoint
    reads `saved[t]` where it popped. The saved values are then arrays indexed by the
    counter, as the input of a loop over time is: `hoist_step_maps` and
    `batch_step_products` see them. Only for shapes and dtypes known (a specialized
    variant's) and at most `STEPS_MAX` elements in all. Rewrites in place; whether
    anything changed."""
    changed = False
    for ns in [q for q in eqns if q.prim is NEWSTACK]:
        changed = _as_steps(eqns, ns) or changed
    return changed


def _as_steps(eqns: list, ns: Eqn) -> bool:
    s = ns.outs[0]
    users = [q for q in eqns if q is not ns and _reads([q], s)]
    if len(users) != 2 or not all(q.prim is FOR for q in users):
        return False
    fwd, bwd = users
    n = _full_range(fwd)
    if n <= 0 or fwd.params.get("reverse") or not bwd.params.get("reverse") or \
            _full_range(bwd) != n:
        return False
    fbody, bbody = fwd.params["body"], bwd.params["body"]
    pushes = [q for q in fbody.eqns if q.prim is PUSH]
    pops = [q for q in bbody.eqns if q.prim is POP]
    if not pushes or any(q.ins[0] is not s for q in pushes + pops) or \
            _reads(fbody.eqns, s) != len(pushes) or _reads(bbody.eqns, s) != len(pops) or \
            "cond" in fwd.params or "cond" in bwd.params:
        return False
    tags = [q.params.get("tag") for q in pushes]
    if len(set(tags)) != len(tags) or [q.params.get("tag") for q in pops] != tags[::-1] or \
            any(len(q.ins) != 2 for q in pushes) or any(len(q.outs) != 1 for q in pops):
        return False  # (a push of several values: left as it is)
    total = 0
    for push, pop in zip(pushes, reversed(pops)):
        v, o = push.ins[1], pop.outs[0]
        shape = known_shape(v) if isinstance(v, Var) and v.kind == "array" else None
        if shape is None or _float_dtype(v) is None or o.sclass != v.sclass or \
                o.dclass != v.dclass:
            return False
        total += n * int(numpy.prod(shape))
    if total > STEPS_MAX:
        return False
    carry = fwd.params["carry"]

    def steps_var(v, steps):
        return Var(v.hint + "_steps", "array", staging_known((steps,) + tuple(known_shape(v))),
                   v.dclass)
    saved = {id(push): steps_var(push.ins[1], n) for push in pushes}  # every step's value
    follows = {}  # a push of a carried value -> (its initial value, the push of its next)
    for i, push in enumerate(pushes):
        j = next((j for j, c in enumerate(carry) if c is push.ins[1]), None)
        init = fwd.ins[3 + j] if j is not None else None
        later = [q for q in pushes[i + 1:] if j is not None and q.ins[1] is fbody.outs[j]]
        if later and isinstance(init, Var) and init.sclass == push.ins[1].sclass and \
                init.dclass == push.ins[1].dclass:
            follows[id(push)] = (init, later[0])
    made, after = [], []
    findex, bindex = fwd.params["index"], bwd.params["index"]
    for push, pop in zip(pushes, reversed(pops)):
        v, out = push.ins[1], saved[id(push)]
        k = bbody.eqns.index(pop)
        bbody.eqns[k] = Eqn(ops.getitem, [out, bindex], list(pop.outs), {}, pop.loc,
                            pop.phase)
        if id(push) in follows:  # the step's start is the previous step's end: the initial
            # value, then every step's end but the last
            init, end = follows[id(push)]
            first, rest = steps_var(v, 1), steps_var(v, n - 1)
            fbody.eqns.remove(push)
            after += [
                Eqn(ops.reshape, [init, known_shape(first)], [first], {}, push.loc, push.phase),
                Eqn(ops.getitem, [saved[id(end)], slice(None, n - 1)], [rest], {}, push.loc,
                    push.phase),
                Eqn(ops.concatenate, [first, rest], [out], {"axis": 0}, push.loc, push.phase)]
            continue
        zeros, carry_in, placed, nxt = (steps_var(v, n) for _ in range(4))
        made.append(Eqn(ops.zeros, [known_shape(out)], [zeros],
                        {"dtype": _float_dtype(v).name}, ns.loc, ns.phase))
        k = fbody.eqns.index(push)
        fbody.eqns[k:k + 1] = [
            Eqn(ops.scatter_add, [v, findex, known_shape(out)], [placed], {}, push.loc,
                push.phase),
            Eqn(ops.add, [carry_in, placed], [nxt], {}, push.loc, push.phase)]
        carry.append(carry_in)
        fbody.outs.append(nxt)
        fwd.ins.append(zeros)
        fwd.outs.append(out)
    k = eqns.index(fwd)
    eqns[k + 1:k + 1] = after
    k = eqns.index(ns)
    eqns[k:k + 1] = made
    return True


def hoist_step_maps(eqns: list) -> bool:
    """An elementwise equation in the body of a loop over every index t of the first axis
    of arrays made outside it (0..n-1, in either order, no break), that reads those arrays
    at t (`x[t]`), values made outside the loop (broadcast into the step's trailing axes)
    and numbers only, is the same equation on the whole arrays, indexed at t: made once
    before the loop, one call instead of n. `1 - h[t] ** 2` of an RNN's adjoint becomes
    `(1 - h ** 2)[t]`. Only where shapes are known (a specialized variant's), for results
    of at most `STEP_MAP_MAX` elements, and in loops with no statement run as written
    (which might change an array between steps). Rewrites in place; whether anything
    changed."""
    changed = False
    k = 0
    while k < len(eqns):
        e = eqns[k]
        for b in e.blocks():
            changed = hoist_step_maps(b.eqns) or changed
        hoisted = _step_maps(e) if e.prim is FOR else []
        eqns[k:k] = hoisted
        k += len(hoisted) + 1
        changed = changed or bool(hoisted)
    return changed


def _runs_python(eqns) -> bool:
    return any(q.prim is PYTHON or _runs_python([w for b in q.blocks() for w in b.eqns])
               for q in eqns)


def _step_maps(e) -> list:
    n = _full_range(e)
    body = e.params["body"]
    if n <= 0 or _runs_python(body.eqns):
        return []
    index = e.params["index"]
    inside = {o.id for q in body.eqns for o in iter_vars([q.outs])} | \
        {c.id for c in e.params["carry"]} | {index.id}
    whole = {}  # id of a value of the step -> the array of every step's, made outside

    def outer(v) -> bool:
        return isinstance(v, Var) and v.id not in inside

    for q in body.eqns:
        if q.prim is ops.getitem and len(q.ins) == 2 and q.ins[1] is index and \
                outer(q.ins[0]) and q.ins[0].kind == "array" and not q.params:
            xs, s = known_shape(q.ins[0]), known_shape(q.outs[0])
            if xs is not None and s is not None and tuple(xs) == (n,) + tuple(s) and \
                    q.ins[0].dclass == q.outs[0].dclass:
                whole[q.outs[0].id] = q.ins[0]
    hoisted = []
    for k, q in enumerate(body.eqns):
        if not q.prim.elementwise or not q.prim.pure or q.blocks() or len(q.outs) != 1:
            continue
        o = q.outs[0]
        s = known_shape(o)
        if s is None or o.kind != "array" or n * int(numpy.prod(s)) > STEP_MAP_MAX or \
                not any(isinstance(a, Var) and a.id in whole for a in q.ins):
            continue
        ins = []
        for a in q.ins:
            if isinstance(a, Var) and a.id in whole:
                if len(known_shape(a)) != len(s):
                    break
                ins.append(whole[a.id])
            elif isinstance(a, Var):
                sa = known_shape(a)
                if not outer(a) or a.kind != "array" or sa is None or len(sa) > len(s):
                    break
                ins.append(a)
            elif isinstance(a, numbers.Number) and not isinstance(a, bool):
                ins.append(a)
            else:
                break
        else:
            all_steps = Var(o.hint + "_all", "array", staging_known((n,) + tuple(s)), o.dclass)
            hoisted.append(Eqn(q.prim, ins, [all_steps], dict(q.params), q.loc, q.phase))
            body.eqns[k] = Eqn(ops.getitem, [all_steps, index], [o], {}, q.loc, q.phase)
            whole[o.id] = all_steps
    return hoisted
