"""Fusion (for cupy): Graph -> Graph in which runs of elementwise primitives become one
`fused` equation each, emitted as a single GPU kernel.

The planner takes maximal runs of consecutive elementwise equations of a block (a
non-elementwise equation ends a run; nested blocks are planned on their own) with at
least two equations, all of whose results are known to have one shape (`one_shape`). A
region's inputs are the values it reads from outside; its outputs are the values it
defines that anything after it reads. An elementwise kernel broadcasts its inputs the way
numpy does, and allocates its outputs at their broadcast shape: the region's one shape.

Each region is written twice in the generated module:
- a numpy reference function (`def _fused_1(x, y): ...`, the region's own statements),
  which is what runs when the module is bound to numpy, and what the tests compare with
  the unfused code on machines without a GPU;
- a kernel spec (`_fused_1_cuda = (in_params, out_params, body, name)`), CUDA C
  expressions that the cupy binding turns into `cupy.ElementwiseKernel`s.

The same planner, with a predicate of its own (`fuse_graph`'s `accept`), makes the
numba backend's loops (srcgrad.jit) and a specialized numpy variant's blocked regions
(`block_regions`: a region over large arrays computed a block of rows at a time, its
numpy reference function called once per block). Before it, for the numba backend,
`shifted_sums` makes each sum of cotangents placed into shifted slices of one array (the
gradient of a stencil) one loop over the result, whose region recomputes each term at
its offset (a `fused` equation with param `places`).
"""
from __future__ import annotations

import numbers
import re

from runtime.ops import shapes as _shapes
from runtime.ops.core import Primitive

import numpy

from .ir import SCALAR, Block, Eqn, Var, iter_vars

__all__ = ["FUSED", "fuse_graph", "gather", "fusible", "one_shape", "cuda_expr", "loop_shape", "jit_dtype",
           "BLOCKED_MIN", "BLOCK", "BLOCK_MIN", "LIVE_ELEMENTS", "block_rows", "peak_live",
           "blockable", "block_regions", "shifted_sums", "segments"]

# one kernel for a region of elementwise equations, made after differentiation and
# optimization (so no rule): any number of outputs, each a fresh array
FUSED = Primitive("fused", None, differentiable=False, zero_grad=False, structured=True,
                  fresh=True)

def fusible(e: Eqn) -> bool:
    """An equation a kernel can compute: an op with a CUDA spelling (declared in the op
    table, runtime.ops.cuda) for these operands and params, on arrays and numbers."""
    p = e.prim
    if p.cuda is None or not e.outs or (p.cuda_when is not None and
                                        not p.cuda_when(e.ins, e.params)):
        return False
    arrays = [a for a in e.ins if isinstance(a, Var)]
    return bool(arrays) and all(a.kind == "array" for a in arrays) and all(
        isinstance(a, Var) or (isinstance(a, numbers.Number) and not isinstance(a, complex))
        for a in e.ins)


def one_shape(e, run) -> bool:
    """Whether `e` may join the equations `run` in one cupy kernel: an ElementwiseKernel
    allocates every output at the broadcast shape of its inputs, so every value the
    region makes must be known to have one shape (one shape class, ir.Var): a narrower
    value (`exp(a)` of a (5, 1) `a`, then multiplied by a (5, 4) array) or one of another
    shape altogether ends the run."""
    classes = {o.sclass for q in run for o in q.outs} | {o.sclass for o in e.outs}
    return len(classes) == 1


def fuse_graph(eqns: list, outputs, counter=None, accept=None, alone=None) -> list:
    """Replace runs of elementwise equations by `fused` equations (nested blocks too).
    `accept(e, run)`, when given, must also hold of every equation in a region: whether
    `e` may join the equations `run` (the numba backend's loops: known shapes that
    broadcast together, known dtypes, a scalar spelling numba compiles). A run of one
    equation stays as it is, unless `alone(e)` (the numba backend's ops whose loop is
    written otherwise than numba's own function of arrays: jit.loop_alone)."""
    counter = counter if counter is not None else [0]
    # Python's abs(), max() and min() (ops.python_operand's results among the operands):
    # written as Python's, never inside a loop of numpy's functions
    python_calls = {o.id for e in eqns if e.prim is _shapes.python_operand for o in e.outs}
    # where each value is last read (the outputs read at the end): a region's value is an
    # output of the region when it is read at or after the region's end
    last_read = {}
    for i, e in enumerate(eqns):
        for v in e.var_ins():
            last_read[v.id] = i
    for v in iter_vars(outputs):
        last_read[v.id] = len(eqns)
    out = []
    run: list = []

    def close(end):
        if len(run) >= 2 or (run and alone is not None and alone(run[0])):
            out.append(_region(run, lambda vid: last_read.get(vid, -1) >= end, counter))
        else:
            out.extend(run)
        run.clear()

    for i, e in enumerate(eqns):
        for b in e.blocks() if e.prim is not FUSED else ():  # (a sum's region: its own)
            b.eqns = fuse_graph(b.eqns, b.outs, counter, accept, alone)
        if fusible(e) and (accept is None or accept(e, [])) and \
                not any(a.id in python_calls for a in e.var_ins()):
            if accept is not None and run and not accept(e, run):
                close(i)  # (the run's loop cannot take it: another shape)
            run.append(e)
        else:
            close(i)
            out.append(e)
    close(len(eqns))
    return out


def _region(run, read_after, counter) -> Eqn:
    defined = {}
    inputs = {}
    for e in run:
        for a in e.ins:
            if isinstance(a, Var) and a.id not in defined:
                inputs.setdefault(id(a), a)
        for o in e.outs:
            defined[o.id] = o
    outs = [o for o in defined.values() if read_after(o.id)]
    counter[0] += 1
    name = f"_fused_{counter[0]}"
    loc = run[0].loc
    return Eqn(FUSED, list(inputs.values()), outs,
               {"region": Block(list(run), list(outs)), "name": name}, loc, run[0].phase)


def cuda_expr(e: Eqn, names: dict) -> str:
    """The CUDA C expression of one elementwise equation (operands by name)."""

    def operand(a):
        if isinstance(a, Var):
            return names[a.id]
        if isinstance(a, bool):
            return "true" if a else "false"
        f = float(a)
        if f != f:
            return "(T)NAN"
        if f in (float("inf"), float("-inf")):
            return "(T)INFINITY" if f > 0 else "-(T)INFINITY"
        return f"(T)({f!r})"

    template = e.prim.cuda
    params = {**e.prim.defaults, **e.params}
    named = {k: operand(params[k]) for k in re.findall(r"\{([a-z_]\w*)\}", template)}
    return template.format(*[operand(a) for a in e.ins], **named)


def cuda_type(v: Var) -> str:
    return "bool" if v.dclass == ("bool",) else "T"


def jit_dtype(v) -> "str | None":
    """The numpy dtype name (`float64`, `bool_`) of a value whose dtype the IR knows, in the
    native byte order; else None."""
    if v.dclass == ("bool",):
        return "bool_"
    if isinstance(v.dclass, tuple) and len(v.dclass) == 2 and v.dclass[0] in ("f", "k") \
            and isinstance(v.dclass[1], str):  # (("f", id): a float of unknown width)
        dt = numpy.dtype(v.dclass[1])
        if dt.isnative and dt.kind in "fiub":
            return "bool_" if dt.kind == "b" else dt.name
    return None


def loop_shape(v) -> "tuple | None":
    """The shape of a value the IR knows (a specialized variant's), else None."""
    if isinstance(v, Var) and v.sclass == SCALAR:
        return ()
    if isinstance(v, Var) and isinstance(v.sclass, tuple) and len(v.sclass) == 2 and \
            v.sclass[0] == "k":
        return v.sclass[1]
    return None


# Blocked regions (numpy, large arrays) ---------------------------------------------------
#
# A specialized numpy variant computes each run of elementwise equations over large arrays
# in blocks of rows: the region's function (its own numpy statements) runs on a block of
# its inputs' rows at a time and its results are copied into arrays of the full shape, so
# the region's temporaries, forward values and cotangents alike, have one block's size and
# stay in cache, and the region allocates nothing the size of its arrays but its results.
# An elementwise op computes each element from the elements at its index alone, so the
# results are those of the whole arrays, bit for bit.

#: the number of elements from which a region's arrays are computed in blocks
BLOCKED_MIN = 1 << 17
#: elements per block (whole rows of the region's shape, at least one)
BLOCK = 1 << 15
#: elements of all the block-sized arrays a region holds at once: a region holding many
#: (a long chain's forward values and cotangents) takes smaller blocks, down to `BLOCK_MIN`
#: elements, so that its temporaries take no more memory than a hand-written blocked
#: gradient's (a short region keeps `BLOCK`: each block costs a call per statement)
LIVE_ELEMENTS = 1 << 19
BLOCK_MIN = 1 << 12


def block_rows(shape: tuple, live: int = 1) -> int:
    """The rows of `shape` in one block: `BLOCK` elements, or fewer (a power of two, at
    least `BLOCK_MIN`) where `live` arrays of a block are held at once; whole rows, at
    least one."""
    row = int(numpy.prod(shape[1:]))
    size = BLOCK
    while size > BLOCK_MIN and size * live > LIVE_ELEMENTS:
        size //= 2
    return max(1, size // max(row, 1))


def peak_live(region: Block) -> int:
    """The most block-sized arrays a region's statements hold at once: the values made and
    not yet read for the last time, the region's results (kept to the end) included."""
    last = {}
    for i, e in enumerate(region.eqns):
        for v in e.var_ins():
            last[v.id] = i
    keep = {v.id for v in iter_vars(region.outs)}
    live, peak = set(), 0
    for i, e in enumerate(region.eqns):
        live.update(o.id for o in e.outs)
        peak = max(peak, len(live))
        live -= {v for v in list(live) if last.get(v, -1) <= i and v not in keep}
    return peak


def blockable(e, run) -> bool:
    """Whether `e` may join the equations `run` in a blocked region: its results have one
    shape the IR knows, of `BLOCKED_MIN` elements or more in at least two blocks, that of
    the run's, with dtypes it knows (the results are allocated whole); each array it reads
    either has that shape (it is cut into the same blocks) or broadcasts against it
    without its first axis (every block reads it whole)."""
    shapes = {loop_shape(o) for o in e.outs}
    if len(shapes) != 1:
        return False
    (shape,) = shapes
    if not shape or any(jit_dtype(o) is None for o in e.outs) or \
            int(numpy.prod(shape)) < BLOCKED_MIN or shape[0] <= block_rows(shape):
        return False
    if run and loop_shape(run[0].outs[0]) != shape:
        return False
    for a in e.ins:
        if not isinstance(a, Var) or loop_shape(a) == shape:
            continue
        s = loop_shape(a)
        if s is None or (len(s) == len(shape) and s[0] != 1):
            return False
        try:
            if numpy.broadcast_shapes(s, shape) != shape:
                return False
        except ValueError:
            return False
    return True


def gather(eqns: list, joins=None) -> list:
    """`eqns` reordered so that regions are long: an equation that cannot join one but is
    pure (no effect, no nested block) moves down past the equations after it that may
    join one (`joins(e)`; by default a blocked region's, `blockable`), to just before the
    first equation that reads what it makes (or that cannot move past it: one with an
    effect or nested blocks). Elementwise equations read arrays only and have no effect,
    so the order changes no result. (value_and_grad's `np.sum(zf)` of the loss: after the
    backward pass's elementwise work, so that the forward's and the backward's are one
    loop, which writes zf, rather than two, the first writing every value the second
    reads.)"""
    if joins is None:
        joins = _blockable_alone
    out, held, made = [], [], set()

    def release():
        out.extend(held)
        held.clear()
        made.clear()

    for e in eqns:
        for b in e.blocks():
            b.eqns = gather(b.eqns, joins)
        if joins(e):
            if any(v.id in made for v in e.var_ins()):
                release()
            out.append(e)
        elif e.prim.pure and not e.prim.structured and not e.blocks():
            held.append(e)
            made.update(o.id for o in e.outs)
        else:
            release()
            out.append(e)
    release()
    return out


def _blockable_alone(e) -> bool:
    return fusible(e) and blockable(e, [])


def block_regions(eqns: list, outputs) -> list:
    """Blocked regions (see above) of a specialized numpy variant's equations: `fused`
    equations with the rows of a block (param `rows`), in nested blocks too."""
    eqns = fuse_graph(gather(eqns), outputs, accept=blockable)

    def mark(es):
        for e in es:
            if e.prim is FUSED and e.params.get("places") is None:
                e.params["rows"] = block_rows(loop_shape(e.outs[0]), peak_live(e.params["region"]))
            for b in e.blocks():
                mark(b.eqns)
    mark(eqns)
    return eqns


# Sums of shifted slices (numba) -------------------------------------------------------------
#
# The gradient of code that reads neighbouring elements (`x[1:] - x[:-1]`: a stencil, a
# finite difference, a smoothness penalty) is a sum of cotangents each placed into a slice
# of zeros: `scatter_add(a, slice(None, -1), (n,)) + scatter_add(b, slice(1, None), (n,))`.
# Written as it is, that is a loop making `a` and `b`, then zeros, a copy and an add: four
# passes over memory. `shifted_sums` makes it one loop over the result: the result's index
# range is cut where a slice begins or ends (`segments`), and in each piece every element
# is the sum of the terms whose slices cover it, each term computed there by its own
# elementwise statements at its own offset (`a` at i, `b` at i - 1: the statements of a
# term are repeated once per offset, cheap next to a pass over memory).

#: the most pieces (`segments`) a sum of shifted slices is cut into
MAX_SEGMENTS = 64


def _place(e, shape):
    """The (start, stop) of each axis of `shape` that scatter_add `e` places its value in:
    a basic slice per leading axis, step 1, into a result of `shape`; else None."""
    v, idx, newshape = e.ins
    if not isinstance(newshape, tuple) or tuple(newshape) != shape:
        return None
    parts = idx if isinstance(idx, tuple) else (idx,)
    if sum(p is Ellipsis for p in parts) == 1:  # (`...`: whole axes)
        k = parts.index(Ellipsis)
        whole = (slice(None),) * (len(shape) - len(parts) + 1)
        parts = parts[:k] + whole + parts[k + 1:]
    if len(parts) > len(shape) or not all(
            isinstance(s, slice) and s.step in (None, 1) and
            all(b is None or (isinstance(b, int) and not isinstance(b, bool))
                for b in (s.start, s.stop)) for s in parts):
        return None
    lo, hi = [], []
    for k, n in enumerate(shape):
        a, b, _ = parts[k].indices(n) if k < len(parts) else (0, n, 1)
        b = max(a, b)
        lo.append(a)
        hi.append(b)
    if loop_shape(v) != tuple(b - a for a, b in zip(lo, hi)):
        return None
    return tuple(lo), tuple(hi)


def segments(places, shape) -> list:
    """The pieces of `shape` that a sum of terms placed at `places` ((start, stop) per
    axis, each) is cut into: [(start, stop, [indices of the terms that cover it])], every
    element of `shape` in one piece."""
    import itertools

    cuts = []
    for k, n in enumerate(shape):
        points = sorted({0, n} | {p[0][k] for p in places} | {p[1][k] for p in places})
        cuts.append([(a, b) for a, b in zip(points, points[1:]) if a < b])
    out = []
    for piece in itertools.product(*cuts):
        lo = tuple(a for a, _ in piece)
        hi = tuple(b for _, b in piece)
        terms = [t for t, (plo, phi) in enumerate(places)
                 if all(pa <= a and b <= pb for a, b, pa, pb in zip(lo, hi, plo, phi))]
        out.append((lo, hi, terms))
    return out


def _reads(eqns, outputs) -> dict:
    """Var id -> how many times it is read (by equations, nested blocks' results and the
    outputs; a fused region's own reads not counted: its equation's operands are)."""
    count: dict = {}

    def walk(es):
        for e in es:
            for v in e.var_ins():
                count[v.id] = count.get(v.id, 0) + 1
            if e.prim is FUSED:
                continue
            for b in e.blocks():
                walk(b.eqns)
                for v in iter_vars(b.outs):
                    count[v.id] = count.get(v.id, 0) + 1

    walk(eqns)
    for v in iter_vars(outputs):
        count[v.id] = count.get(v.id, 0) + 1
    return count


def placeable(e, run) -> bool:
    """Whether a numpy variant's sum of shifted slices may compute equation `e` in a term
    (or end the sum: `_sum_of_places` asks of its last add too): its values' shapes and
    dtypes known, its result of `BLOCKED_MIN` elements or more."""
    return all(loop_shape(v) is not None and jit_dtype(v) is not None
               for v in list(e.outs) + e.var_ins()) and \
        int(numpy.prod(loop_shape(e.outs[0]))) >= BLOCKED_MIN


def shifted_sums(eqns: list, outputs, accept, counter=None) -> list:
    """Sums of scatter_adds into slices of one array (see above) as one fused loop each:
    a `fused` equation whose result has the sum's shape, its region making the terms and
    its param `places` saying where each term (a result of the region, in order) goes.
    Run before `fuse_graph`: the elementwise equations (those `accept` takes) that make
    the terms and nothing else join the sum's region. In nested blocks too."""
    counter = counter if counter is not None else [0]
    return _shifted(eqns, _reads(eqns, outputs), accept, counter)


def _shifted(eqns, reads, accept, counter) -> list:
    for e in eqns:
        if e.prim is not FUSED:
            for b in e.blocks():
                b.eqns = _shifted(b.eqns, reads, accept, counter)
    made = {o.id: k for k, e in enumerate(eqns) for o in e.outs}
    gone: set = set()  # ids of equations the rewrite replaced
    new: dict = {}  # id of a sum's last equation -> its fused equation
    for e in reversed(eqns):
        if id(e) in gone or e.prim.name != "add" or len(e.outs) != 1:
            continue
        found = _sum_of_places(e, eqns, made, reads, accept, gone)
        if found is not None:
            fused, used = found
            counter[0] += 1
            fused.params["name"] = f"_fused_{counter[0]}"
            gone.update(id(q) for q in used)
            new[id(e)] = fused
    return [new.get(id(e), e) for e in eqns if id(e) not in gone or id(e) in new]


def _sum_of_places(root, eqns, made, reads, accept, gone):
    """(the fused equation, the equations it replaces) for the sum that `root` ends, or
    None where it is not a sum of slices placed into arrays of one known shape."""
    import heapq

    out = root.outs[0]
    shape, dtype = loop_shape(out), jit_dtype(out)
    if not shape or dtype is None or out.kind != "array" or 0 in shape or \
            not accept(root, []):
        return None
    terms, used = [], []  # [(value, place)], the equations of the sum

    def producer(v):
        k = made.get(v.id) if isinstance(v, Var) else None
        return None if k is None or id(eqns[k]) in gone else eqns[k]

    def visit(v, top=False):
        e = producer(v)
        if e is not None and (top or reads.get(v.id, 0) == 1) and e.prim.name == "add" and \
                all(isinstance(a, Var) and loop_shape(a) == shape and jit_dtype(a) == dtype
                    for a in e.ins):
            used.append(e)
            return all(visit(a) for a in e.ins)
        if e is not None and not top and reads.get(v.id, 0) == 1 and \
                e.prim.name == "scatter_add" and isinstance(e.ins[0], Var) and \
                jit_dtype(e.ins[0]) == dtype:
            place = _place(e, shape)
            if place is not None:
                used.append(e)
                terms.append((e.ins[0], place))
                return True
        if isinstance(v, Var) and v.kind == "array" and loop_shape(v) == shape and \
                jit_dtype(v) == dtype:
            terms.append((v, ((0,) * len(shape), shape)))
            return True
        return False

    if not visit(out, top=True) or not any(e.prim.name == "scatter_add" for e in used) or \
            len(segments([p for _, p in terms], shape)) > MAX_SEGMENTS:
        return None  # (no scatter_add among the terms: a plain sum, fused as it was)
    # the terms' own equations join the sum's loop: from the last back, each elementwise
    # equation whose result only the terms and the equations already taken read
    counted: dict = {}  # value id -> its reads by the terms and the equations taken
    for v, _ in terms:
        counted[v.id] = counted.get(v.id, 0) + 1
    used_ids = {id(q) for q in used}
    todo = [-made[v.id] for v, _ in terms if producer(v) is not None]
    heapq.heapify(todo)
    taken: set = set()
    while todo:
        k = -heapq.heappop(todo)
        e = eqns[k]
        if k in taken or id(e) in used_ids or len(e.outs) != 1 or not fusible(e) or \
                not accept(e, []) or reads.get(e.outs[0].id, 0) != counted.get(e.outs[0].id):
            continue
        taken.add(k)
        for a in e.var_ins():
            counted[a.id] = counted.get(a.id, 0) + 1
            if producer(a) is not None:
                heapq.heappush(todo, -made[a.id])
    region = [eqns[k] for k in sorted(taken)]
    defined = {o.id for q in region for o in q.outs}
    ins: dict = {}
    for q in region:
        for a in q.ins:
            if isinstance(a, Var) and a.id not in defined:
                ins.setdefault(a.id, a)
    for v, _ in terms:
        if v.id not in defined:
            ins.setdefault(v.id, v)
    fused = Eqn(FUSED, list(ins.values()), [out],
                {"region": Block(region, [v for v, _ in terms]), "name": None,
                 "places": [p for _, p in terms]}, root.loc, root.phase)
    return fused, used + region
