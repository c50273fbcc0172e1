"""Fusion (for cupy): Graph -> Graph in which runs of elementwise primitives become one
`fused` equation each, emitted as a single GPU kernel.

The planner takes maximal runs of consecutive elementwise equations of a block (a
non-elementwise equation ends a run; nested blocks are planned on their own) with at
least two equations. A region's inputs are the values it reads from outside; its outputs
are the values it defines that anything after it reads. Broadcasting needs no special
care: an elementwise kernel broadcasts its inputs the way numpy does.

Each region is written twice in the generated module:
- a numpy reference function (`def _fused_1(x, y): ...`, the region's own statements),
  which is what runs when the module is bound to numpy, and what the tests compare with
  the unfused code on machines without a GPU;
- a kernel spec (`_fused_1_cuda = (in_params, out_params, body, name)`), CUDA C
  expressions that the cupy binding turns into `cupy.ElementwiseKernel`s.
"""
from __future__ import annotations

import numbers

from runtime.ops.core import Primitive

from .ir import Block, Eqn, Var, iter_vars

__all__ = ["FUSED", "CUDA", "fuse_graph", "cuda_expr"]

# one kernel for a region of elementwise equations, made after differentiation and
# optimization (so no rule): any number of outputs, each a fresh array
FUSED = Primitive("fused", None, differentiable=False, zero_grad=False, structured=True,
                  fresh=True)

#: elementwise primitive -> CUDA C expression over its operands
CUDA = {
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}",
    "divide": "{0} / {1}", "negative": "-{0}", "power": "pow({0}, {1})",
    "exp": "exp({0})", "log": "log({0})", "log1p": "log1p({0})", "expm1": "expm1({0})",
    "sqrt": "sqrt({0})", "square": "{0} * {0}", "reciprocal": "(T)1 / {0}",
    "sin": "sin({0})", "cos": "cos({0})", "tan": "tan({0})", "tanh": "tanh({0})",
    "sinh": "sinh({0})", "cosh": "cosh({0})", "arcsin": "asin({0})",
    "arccos": "acos({0})", "arctan": "atan({0})", "absolute": "fabs({0})",
    "floor": "floor({0})", "ceil": "ceil({0})", "trunc": "trunc({0})",
    "floor_divide": "floor({0} / {1})", "remainder": "({0} - floor({0} / {1}) * {1})",
    "fmod": "fmod({0}, {1})",
    "sign": "(T)(({0} > 0) - ({0} < 0))", "relu": "({0} > 0 ? {0} : (T)0)",
    "sigmoid": "(T)1 / ((T)1 + exp(-{0}))",
    "softplus": "(({0} > 0 ? {0} : (T)0) + log1p(exp(-fabs({0}))))",
    "maximum": "({0} > {1} ? {0} : ({0} < {1} ? {1} : {0}))",
    "minimum": "({0} < {1} ? {0} : ({0} > {1} ? {1} : {0}))",
    "where": "({0} ? {1} : {2})", "clip": "({0} < {1} ? {1} : ({0} > {2} ? {2} : {0}))",
    "less": "{0} < {1}", "less_equal": "{0} <= {1}", "greater": "{0} > {1}",
    "greater_equal": "{0} >= {1}", "equal": "{0} == {1}", "not_equal": "{0} != {1}",
    "logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_not": "!{0}",
    "isfinite": "isfinite({0})",
    "arcsinh": "asinh({0})", "arccosh": "acosh({0})", "arctanh": "atanh({0})",
    "log2": "log2({0})", "log10": "log10({0})", "exp2": "exp2({0})", "fabs": "fabs({0})",
    "rint": "rint({0})", "round": "rint({0})", "copy": "{0}", "isnan": "isnan({0})",
    "isinf": "isinf({0})", "arctan2": "atan2({0}, {1})", "hypot": "hypot({0}, {1})",
    "fmax": "fmax({0}, {1})", "fmin": "fmin({0}, {1})",
    "sinc": "({0} == (T)0 ? (T)1 : sin((T)3.141592653589793 * {0})"
            " / ((T)3.141592653589793 * {0}))",
    # numpy's forms: exact at ties, NaN when x - y is NaN (inf - inf)
    "logaddexp": "({0} == {1} ? {0} + (T)0.6931471805599453 : ({0} > {1} ? "
                 "{0} + log1p(exp({1} - {0})) : ({0} < {1} ? {1} + log1p(exp({0} - {1}))"
                 " : {0} - {1})))",
    "logaddexp2": "({0} == {1} ? {0} + (T)1 : ({0} > {1} ? "
                  "{0} + log1p(exp2({1} - {0})) * (T)1.4426950408889634 : ({0} < {1} ? "
                  "{1} + log1p(exp2({0} - {1})) * (T)1.4426950408889634 : {0} - {1})))",
    # fused only with finite replacements given (see _fusible): numpy's defaults are the
    # largest values of the dtype
    "nan_to_num": "(isnan({0}) ? {nan} : ({0} == (T)INFINITY ? {posinf} : "
                  "({0} == -(T)INFINITY ? {neginf} : {0})))",
}


def _params_fusible(e: Eqn) -> bool:
    """Ops whose params the CUDA spelling covers only in part."""
    name, params = e.prim.name, e.params
    if name == "round":
        return not params.get("decimals", 0)
    if name == "nan_to_num":
        vals = [params.get("nan", 0.0), params.get("posinf"), params.get("neginf")]
        return all(isinstance(v, numbers.Real) and abs(float(v)) < float("inf")
                   for v in vals)
    return True


def _fusible(e: Eqn) -> bool:
    if e.prim.name not in CUDA or not e.outs:
        return False
    if e.prim.name == "clip" and any(a is None for a in e.ins):
        return False
    if not _params_fusible(e):
        return False
    arrays = [a for a in e.ins if isinstance(a, Var)]
    return bool(arrays) and all(a.kind == "array" for a in arrays) and all(
        isinstance(a, Var) or (isinstance(a, numbers.Number) and not isinstance(a, complex))
        for a in e.ins)


def fuse_graph(eqns: list, outputs, counter=None) -> list:
    """Replace runs of elementwise equations by `fused` equations (nested blocks too)."""
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
            b.eqns = fuse_graph(b.eqns, b.outs, counter)
        if _fusible(e):
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

    params = {"nan": 0.0} if e.prim.name == "nan_to_num" else {}
    params.update(e.params)
    return CUDA[e.prim.name].format(*[operand(a) for a in e.ins],
                                    **{k: operand(v) for k, v in params.items()})


def cuda_type(v: Var) -> str:
    return "bool" if v.dclass == ("bool",) else "T"
