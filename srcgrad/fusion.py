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
"""
from __future__ import annotations

import numbers
import re

from runtime.ops.core import Primitive

from .ir import Block, Eqn, Var, iter_vars

__all__ = ["FUSED", "fuse_graph", "one_shape", "cuda_expr"]

# one kernel for a region of elementwise equations, made after differentiation and
# optimization (so no rule): any number of outputs, each a fresh array
FUSED = Primitive("fused", None, differentiable=False, zero_grad=False, structured=True,
                  fresh=True)

def _fusible(e: Eqn) -> bool:
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


def fuse_graph(eqns: list, outputs, counter=None, accept=None) -> list:
    """Replace runs of elementwise equations by `fused` equations (nested blocks too).
    `accept(e, run)`, when given, must also hold of every equation in a region: whether
    `e` may join the equations `run` (the numba backend's loops: known shapes that
    broadcast together, known dtypes, a scalar spelling numba compiles)."""
    counter = counter if counter is not None else [0]
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
        if len(run) >= 2:
            out.append(_region(run, lambda vid: last_read.get(vid, -1) >= end, counter))
        else:
            out.extend(run)
        run.clear()

    for i, e in enumerate(eqns):
        for b in e.blocks():
            b.eqns = fuse_graph(b.eqns, b.outs, counter, accept)
        if _fusible(e) and (accept is None or accept(e, [])):
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
