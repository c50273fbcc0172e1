"""Forward-mode (JVP) rules for the whole op set, written with primitives.

Most rules follow from the op's structure, the way JAX's `deflinear` does:
- elementwise ops have diagonal Jacobians, so J t = J^T t: the tangent through input i is
  the VJP rule of input i applied to t_i (broadcast to the output's shape);
- linear ops (reshape, transpose, getitem, sum, concatenate...) map tangents like values;
- multilinear ops (matmul, dot, tensordot and their cotangent ops) sum one term per input;
- reductions of independent groups (prod, max, var, logsumexp...) reduce t times the
  VJP of ones, which is the gradient of each group's value w.r.t. its members.
Every differentiable primitive gets exactly one of these, or an explicit rule below.
"""
from __future__ import annotations

from .core import PRIMITIVES, Primitive
from .elementwise import add, multiply
from .shapes import broadcast_to, ones_like, shape, zeros_like
from . import reduce as R

__all__ = ["JVP_KIND", "install"]

LINEAR = {
    "negative", "reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "sum_to", "concatenate", "stack", "flip", "getitem", "scatter_add",
    "setitem", "cast_like", "like_arg", "cast_into", "astype", "sum", "mean", "trace",
    "trace_transpose",
    "to_device", "as_numpy", "numpy_operand", "python_operand",
    "to_float", "copy", "diag", "diag_grad", "diagonal", "diagonal_grad", "tril", "triu", "repeat",
    "repeat_grad", "tile", "tile_grad", "roll", "cumsum",
    "nonzero_divisor", "float_gate",
}
MULTILINEAR_SUFFIX = ("matmul", "dot", "inner", "outer", "tensordot", "kron", "cross", "einsum")
REDUCTIONS = {"prod", "max", "min", "var", "std", "logsumexp", "norm"}

#: primitive name -> "elementwise" | "linear" | "multilinear" | "reduction"
JVP_KIND: dict = {}


def _tangent_or_zero(t, x):
    return zeros_like(x) if t is None else t


def jvp_elementwise(prim: Primitive):
    def jvp(tangents, out, *args, **params):
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            rule = prim.rule(i)
            if rule is None:  # a zero derivative (sign) or a non-differentiable input
                continue
            term = rule(t, out, *args, **params)
            if term is not None:
                total = term if total is None else add(total, term)
        if total is None:
            return None
        return broadcast_to(total, shape(out)) if prim.broadcasts else total

    jvp.__name__ = f"jvp_{prim.name}"
    return jvp


def jvp_linear(prim: Primitive):
    def jvp(tangents, out, *args, **params):
        ins = []
        for i, (t, a) in enumerate(zip(tangents, args)):
            if prim.is_diff_input(i):
                ins.append(_tangent_or_zero(t, a))
            else:
                ins.append(a)
        return prim(*ins, **params)

    jvp.__name__ = f"jvp_{prim.name}"
    return jvp


def jvp_multilinear(prim: Primitive):
    def jvp(tangents, out, *args, **params):
        total = None
        for i, t in enumerate(tangents):
            if t is None or not prim.is_diff_input(i):
                continue
            ins = list(args)
            ins[i] = t
            term = prim(*ins, **params)
            total = term if total is None else add(total, term)
        return total

    jvp.__name__ = f"jvp_{prim.name}"
    return jvp


def jvp_reduction(prim: Primitive):
    def jvp(tangents, out, x, **params):
        (t,) = tangents
        dx = prim.rule(0)(ones_like(out), out, x, **params)
        red = {k: v for k, v in params.items() if k in ("axis", "keepdims")}
        return R.sum(multiply(t, dx), **red)

    jvp.__name__ = f"jvp_{prim.name}"
    return jvp


def install():
    """Give every differentiable primitive of the table its JVP rule."""
    for name, prim in PRIMITIVES.items():
        if not prim.differentiable or prim.jvp is not None:
            continue
        base = name.rsplit("_grad_", 1)[0]
        if name in LINEAR:
            kind, make = "linear", jvp_linear
        elif base in MULTILINEAR_SUFFIX:
            kind, make = "multilinear", jvp_multilinear
        elif name in REDUCTIONS:
            kind, make = "reduction", jvp_reduction
        elif prim.elementwise:
            kind, make = "elementwise", jvp_elementwise
        else:
            raise AssertionError(f"primitive {name!r} has no JVP rule")
        JVP_KIND[name] = kind
        prim.jvp = make(prim)


install()
