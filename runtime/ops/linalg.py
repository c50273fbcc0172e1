"""Linear algebra: matmul, dot, inner, outer, tensordot (bilinear) and trace (linear).

Each bilinear op f(a, b) comes with two cotangent primitives, `f_grad_a(g, a, b)` and
`f_grad_b(g, a, b)`, that handle every rank case (1-D operands, batching, broadcasting)
on the concrete arrays. Because they are linear in g and in the other operand, their own
VJPs are again f and the cotangent primitives, so derivatives of any order stay inside
the op set:
    d/dg <c, f_grad_a(g, a, b)> = f(c, b)      d/db <c, f_grad_a(g, a, b)> = f_grad_b(g, c, b)
    d/dg <c, f_grad_b(g, a, b)> = f(a, c)      d/da <c, f_grad_b(g, a, b)> = f_grad_a(g, a, c)
(`a` in f_grad_a and `b` in f_grad_b only give the shape of the result.)
"""
from __future__ import annotations

import numpy

from ..backend import get_xp
from .core import call, defop
from .shape_rules import matmul_shape
from .shapes import sum_to_impl

__all__ = ["matmul", "dot", "inner", "outer", "tensordot", "trace", "kron", "cross", "einsum",
           "einsum_grad", "inv", "det", "logabsdet", "slogdet_sign", "solve", "cholesky",
           "eigvalsh", "eigh_vectors", "svdvals", "svd_u", "svd_vh", "qr_q", "qr_r", "pinv",
           "solve_triangular"]


def _nd(x):
    return len(x.shape) if hasattr(x, "shape") else 0


def _cotangent(xp, g, other):
    """`g` as an array: the compiler seeds a scalar output's cotangent with a Python float,
    and the rank cases below index it (`g[..., None]`)."""
    if hasattr(g, "shape"):
        return g
    return xp.asarray(g, dtype=xp.result_type(g, other))


def _bilinear(name, fwd, grad_a, grad_b, spell, defaults=None):
    """Register f, f_grad_a and f_grad_b with the rules of the module docstring."""
    defaults = defaults or {}

    def vjp_a(g, out, a, b, **p):
        return fa(g, a, b, **p)

    def vjp_b(g, out, a, b, **p):
        return fb(g, a, b, **p)

    def vjp_fa_g(c, out, g, a, b, **p):
        return f(c, b, **p)

    def vjp_fa_b(c, out, g, a, b, **p):
        return fb(g, c, b, **p)

    def vjp_fb_g(c, out, g, a, b, **p):
        return f(a, c, **p)

    def vjp_fb_a(c, out, g, a, b, **p):
        return fa(g, a, c, **p)

    for fn, nm in ((vjp_a, "a"), (vjp_b, "b")):
        fn.__name__ = f"vjp_{name}_{nm}"
    facts = dict(kind="bilinear", dtype="same", defaults=defaults)
    f = defop(name, fwd, vjp_a, vjp_b, spell=spell, **facts)
    # f_grad_a(g, a, b) has the shape of a, f_grad_b(g, a, b) that of b
    fa = defop(f"{name}_grad_a", grad_a, vjp_fa_g, None, vjp_fa_b, nondiff=(1,),
               spell=call(f"{name}_grad_a"), shape_like=1, **facts)
    fb = defop(f"{name}_grad_b", grad_b, vjp_fb_g, vjp_fb_a, None, nondiff=(2,),
               spell=call(f"{name}_grad_b"), shape_like=2, **facts)
    return f, fa, fb


# ---- matmul ----------------------------------------------------------------------------------

def _matmul(a, b):
    return get_xp(a, b).matmul(a, b)


def _matmul_grad_a(g, a, b):
    xp = get_xp(g, b)
    g = _cotangent(xp, g, b)
    if _nd(b) == 1:
        r = g[..., None] * b
    elif _nd(a) == 1:
        r = xp.matmul(b, g[..., None])[..., 0]
    else:
        r = xp.matmul(g, xp.swapaxes(b, -1, -2))
    return sum_to_impl(r, a.shape)


def _matmul_grad_b(g, a, b):
    xp = get_xp(g, a)
    g = _cotangent(xp, g, a)
    if _nd(a) == 1 and _nd(b) == 1:
        r = g * a
    elif _nd(a) == 1:
        r = a[:, None] * g[..., None, :]
    elif _nd(b) == 1:
        if _nd(a) == 2:  # a matrix-vector product: its transpose times g (one gemv)
            return xp.matmul(a.T, g)
        r = xp.matmul(xp.swapaxes(a, -1, -2), g[..., None])[..., 0]
    elif _nd(b) == 2 and _nd(a) > 2 and g.shape[:-1] == a.shape[:-1]:
        # a stack of matrices times one matrix: the sum over the stack of a_i^T g_i is
        # one product of the stack's rows (one gemm, not one per matrix and a sum)
        return xp.matmul(a.reshape(-1, a.shape[-1]).T, g.reshape(-1, g.shape[-1]))
    else:
        r = xp.matmul(xp.swapaxes(a, -1, -2), g)
    return sum_to_impl(r, b.shape)


matmul, matmul_grad_a, matmul_grad_b = _bilinear(
    "matmul", _matmul, _matmul_grad_a, _matmul_grad_b, spell=lambda i, p, d: f"{i[0]} @ {i[1]}")
matmul.array_spell = lambda i, p, d: f"{i[0]}.dot({i[1]})"
matmul.array_ndim = 2
matmul.shape_rule = matmul_shape  # (not evaluated: large operands would cost a product)
matmul.updatable = True  # (a product is a new array: `h = X @ W; h += b` may update it)


# ---- tensordot -------------------------------------------------------------------------------

def _td_axes(axes, na, nb):
    """Normalize numpy's `axes` argument to two lists of non-negative axes."""
    if isinstance(axes, int):
        return list(range(na - axes, na)), list(range(axes))
    xa, xb = axes
    xa = [xa] if isinstance(xa, int) else list(xa)
    xb = [xb] if isinstance(xb, int) else list(xb)
    return [x % na for x in xa], [x % nb for x in xb]


def _tensordot(a, b, axes=2):
    return get_xp(a, b).tensordot(a, b, axes=axes)


def _tensordot_grad_a(g, a, b, axes=2):
    xp = get_xp(g, b)
    g = _cotangent(xp, g, b)  # (a Python float seed would make a float32 result float64)
    na, nb = _nd(a), _nd(b)
    xa, xb = _td_axes(axes, na, nb)
    free_a = [i for i in range(na) if i not in xa]
    free_b = [i for i in range(nb) if i not in xb]
    # g has axes free_a + free_b; contract its free_b part with b's free axes
    g_axes = list(range(len(free_a), len(free_a) + len(free_b)))
    # (axes as tuples: cupy takes ((), ()) with a 0-d operand, as numpy does, not lists)
    r = xp.tensordot(g, b, axes=(tuple(g_axes), tuple(free_b)))  # axes: free_a + xb
    # b's contracted axis j pairs with a's axis xa[xb.index(j)]
    order = free_a + [xa[xb.index(j)] for j in sorted(xb)]
    return xp.transpose(r, [order.index(i) for i in range(na)])


def _tensordot_grad_b(g, a, b, axes=2):
    xp = get_xp(g, a)
    g = _cotangent(xp, g, a)
    na, nb = _nd(a), _nd(b)
    xa, xb = _td_axes(axes, na, nb)
    free_a = [i for i in range(na) if i not in xa]
    free_b = [i for i in range(nb) if i not in xb]
    g_axes = list(range(len(free_a)))
    r = xp.tensordot(a, g, axes=(tuple(free_a), tuple(g_axes)))  # axes: xa + free_b
    # a's contracted axis j pairs with b's axis xb[xa.index(j)]
    order = [xb[xa.index(j)] for j in sorted(xa)] + free_b
    return xp.transpose(r, [order.index(i) for i in range(nb)])


tensordot, tensordot_grad_a, tensordot_grad_b = _bilinear(
    "tensordot", _tensordot, _tensordot_grad_a, _tensordot_grad_b,
    spell=call("np.tensordot"), defaults=dict(axes=2))


# ---- dot and inner: tensordot with rank-dependent axes, or a product with a scalar -----------

def _dot_axes(a, b):
    return ([_nd(a) - 1], [0 if _nd(b) == 1 else _nd(b) - 2])


def _scalar_grad(g, other, like):
    return sum_to_impl(g * other, like.shape if hasattr(like, "shape") else ())


def _dot(a, b):
    return get_xp(a, b).dot(a, b)


def _dot_grad_a(g, a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return _scalar_grad(g, b, a)
    return _tensordot_grad_a(g, a, b, axes=_dot_axes(a, b))


def _dot_grad_b(g, a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return _scalar_grad(g, a, b)
    return _tensordot_grad_b(g, a, b, axes=_dot_axes(a, b))


dot, dot_grad_a, dot_grad_b = _bilinear("dot", _dot, _dot_grad_a, _dot_grad_b,
                                        spell=call("np.dot"))


def _inner(a, b):
    return get_xp(a, b).inner(a, b)


def _inner_grad_a(g, a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return _scalar_grad(g, b, a)
    return _tensordot_grad_a(g, a, b, axes=([_nd(a) - 1], [_nd(b) - 1]))


def _inner_grad_b(g, a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return _scalar_grad(g, a, b)
    return _tensordot_grad_b(g, a, b, axes=([_nd(a) - 1], [_nd(b) - 1]))


inner, inner_grad_a, inner_grad_b = _bilinear("inner", _inner, _inner_grad_a, _inner_grad_b,
                                              spell=call("np.inner"))


def _outer(a, b):
    return get_xp(a, b).outer(a, b)


def _outer_grad_a(g, a, b):
    xp = get_xp(g, b)
    return xp.reshape(xp.matmul(g, xp.ravel(b)), numpy.shape(a))  # (a may be a number)


def _outer_grad_b(g, a, b):
    xp = get_xp(g, a)
    return xp.reshape(xp.matmul(xp.ravel(a), g), numpy.shape(b))


outer, outer_grad_a, outer_grad_b = _bilinear("outer", _outer, _outer_grad_a, _outer_grad_b,
                                              spell=call("np.outer"))


# ---- trace (linear): its VJP writes g onto the diagonal ---------------------------------------

def _trace(x, offset=0, axis1=0, axis2=1):
    return get_xp(x).trace(x, offset=offset, axis1=axis1, axis2=axis2)


def _trace_transpose(g, newshape, offset=0, axis1=0, axis2=1):
    xp = get_xp(g)
    z = xp.zeros(newshape, dtype=g.dtype if hasattr(g, "dtype") else float)
    zm = xp.moveaxis(z, (axis1, axis2), (-2, -1))  # a view: writes land in z
    n1, n2 = zm.shape[-2], zm.shape[-1]
    i = xp.arange(max(0, -offset), min(n1, n2 - offset))
    zm[..., i, i + offset] = xp.asarray(g)[..., None]
    return z


def vjp_trace(g, out, x, offset=0, axis1=0, axis2=1):
    from .shapes import shape

    return trace_transpose(g, shape(x), offset=offset, axis1=axis1, axis2=axis2)


def vjp_trace_transpose(c, out, g, newshape, offset=0, axis1=0, axis2=1):
    return trace(c, offset=offset, axis1=axis1, axis2=axis2)


_TR = dict(offset=0, axis1=0, axis2=1)
trace = defop("trace", _trace, vjp_trace, reads_inputs=False, spell=call("np.trace"),
              defaults=_TR, dtype="same_if_float", fresh=True)
trace_transpose = defop("trace_transpose", _trace_transpose, vjp_trace_transpose,
                        nondiff=(1,), reads_inputs=False, spell=call("trace_transpose"),
                        defaults=_TR, fresh=True, dtype="same")


# ---- kron (bilinear) and cross (bilinear, its own transpose) ---------------------------------

def _kron(a, b):
    return get_xp(a, b).kron(a, b)


def _kron_layout(a, b):
    """numpy's kron: the operands padded with leading 1s to one rank; the result's axes
    interleave them (a0, b0, a1, b1, ...)."""
    sa, sb = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
    d = max(len(sa), len(sb))
    sa, sb = (1,) * (d - len(sa)) + sa, (1,) * (d - len(sb)) + sb
    inter = []
    for i, j in zip(sa, sb):
        inter += [i, j]
    return sa, sb, inter


def _kron_grad_a(g, a, b):
    xp = get_xp(g, b)
    sa, sb, inter = _kron_layout(a, b)
    d = len(sa)
    gi = _cotangent(xp, g, b).reshape(inter)
    bi = xp.reshape(b, [x for n in sb for x in (1, n)])
    return (gi * bi).sum(axis=tuple(range(1, 2 * d, 2))).reshape(getattr(a, "shape", ()))


def _kron_grad_b(g, a, b):
    xp = get_xp(g, a)
    sa, sb, inter = _kron_layout(a, b)
    d = len(sa)
    gi = _cotangent(xp, g, a).reshape(inter)
    ai = xp.reshape(a, [x for n in sa for x in (n, 1)])
    return (gi * ai).sum(axis=tuple(range(0, 2 * d, 2))).reshape(getattr(b, "shape", ()))


kron, kron_grad_a, kron_grad_b = _bilinear("kron", _kron, _kron_grad_a, _kron_grad_b,
                                           spell=call("np.kron"))


def _cross(a, b, axis=-1):
    xp = get_xp(a, b)
    for v in (a, b):
        s = getattr(v, "shape", ())
        if not s or s[axis] != 3:
            raise ValueError("srcgrad's cross product takes vectors of length 3 along the "
                             "axis (numpy's 2-vector form is not supported)")
    return xp.cross(a, b, axis=axis)


def vjp_cross_a(g, out, a, b, axis=-1):
    return cross(b, g, axis=axis)  # <g, a x b> = <b x g, a>


def vjp_cross_b(g, out, a, b, axis=-1):
    return cross(g, a, axis=axis)  # <g, a x b> = <g x a, b>


cross = defop("cross", _cross, vjp_cross_a, vjp_cross_b, broadcasts=True,
              spell=call("cross"), defaults=dict(axis=-1))


# ---- einsum (multilinear) --------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_explicit(subscripts, operands):
    """Subscripts with every '...' spelled as letters for these operands' ranks:
    (list of input subscripts, output subscript)."""
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    used = set(subscripts)
    free = [c for c in _LETTERS if c not in used]
    nell = 0
    for s, op in zip(ins, operands):
        if "..." in s:
            nell = max(nell, len(getattr(op, "shape", ())) - (len(s) - 3))
    ell = "".join(free[:nell])

    def fill(s, nd=None):
        if "..." not in s:
            return s
        k = (nd - (len(s) - 3)) if nd is not None else nell
        return s.replace("...", ell[nell - k:] if k else "")

    ins = [fill(s, len(getattr(op, "shape", ()))) for s, op in zip(ins, operands)]
    return ins, fill(out)


def _einsum(*operands, subscripts, optimize=False):
    return get_xp(*operands).einsum(subscripts, *operands, optimize=optimize)


def _einsum_grad(g, *operands, subscripts, wrt, optimize=False):
    """The cotangent of operand `wrt` of einsum(subscripts, *operands) for output
    cotangent g: g contracted with the other operands, then laid out as the operand
    (letters it repeats are a diagonal, letters only it has are broadcast, size-1 axes
    that broadcast are summed)."""
    xp = get_xp(g, *operands)
    ins, out = _einsum_explicit(subscripts, operands)
    target = operands[wrt]
    tshape = tuple(getattr(target, "shape", ()))
    sizes = {}
    for s, op in zip(ins, operands):
        for c, n in zip(s, getattr(op, "shape", ())):
            if n != 1 or c not in sizes:
                sizes[c] = n
    mine = ins[wrt]
    letters = "".join(dict.fromkeys(mine))
    others = [s for i, s in enumerate(ins) if i != wrt]
    reach = set(out).union(*others) if others else set(out)
    kept = "".join(c for c in letters if c in reach)
    spec = ",".join([out] + others) + "->" + kept
    r = xp.einsum(spec, xp.asarray(g), *[op for i, op in enumerate(operands) if i != wrt],
                  optimize=optimize)
    # letters only this operand has: the gradient is the same along them
    full = xp.broadcast_to(xp.expand_dims(r, tuple(i for i, c in enumerate(letters)
                                                   if c not in reach)),
                           tuple(sizes[c] for c in letters))
    if len(letters) == len(mine):  # no repeated letter: a transpose, then sum size-1 axes
        res = full
    else:
        res = xp.zeros(tuple(sizes[c] for c in mine), dtype=full.dtype)
        grids = xp.indices(full.shape, sparse=True)
        pos = {c: i for i, c in enumerate(letters)}
        res[tuple(grids[pos[c]] for c in mine)] = full
        return sum_to_impl(res, tshape)
    perm = [letters.index(c) for c in mine]
    return sum_to_impl(xp.transpose(res, perm), tshape)


def vjp_einsum(g, out, *operands, index, subscripts, optimize=False):
    return einsum_grad(g, *operands, subscripts=subscripts, wrt=index, optimize=optimize)


def vjp_einsum_grad(c, out, g, *operands, index, subscripts, wrt, optimize=False):
    # einsum_grad(g, a, wrt=i) = d/da_i <g, einsum(a)>, multilinear in g and the a_j, j != i
    # (a_i only gives the shape): see the module docstring's bilinear case
    swapped = list(operands)
    swapped[wrt] = c
    if index == 0:
        return einsum(*swapped, subscripts=subscripts, optimize=optimize)
    if index - 1 == wrt:
        return None
    return einsum_grad(g, *swapped, subscripts=subscripts, wrt=index - 1, optimize=optimize)


def jvp_einsum_grad(tangents, out, g, *operands, subscripts, wrt, optimize=False):
    args = [g] + list(operands)
    total = None
    for i, t in enumerate(tangents):
        if t is None or i - 1 == wrt:
            continue
        ins = list(args)
        ins[i] = t
        term = einsum_grad(*ins, subscripts=subscripts, wrt=wrt, optimize=optimize)
        total = term if total is None else total + term
    return total


def _spell_einsum(ins, params, defaults):
    extra = "" if not params.get("optimize") else f", optimize={params['optimize']!r}"
    return f"np.einsum({params['subscripts']!r}, {', '.join(ins)}{extra})"


einsum = defop("einsum", _einsum, vjp_einsum, variadic=True, reads_inputs=True, view=True,
               spell=_spell_einsum, defaults=dict(optimize=False))
einsum_grad = defop("einsum_grad", _einsum_grad, vjp_einsum_grad, variadic=True, view=True,
                    spell=call("einsum_grad"), defaults=dict(optimize=False),
                    doc="the cotangent of one operand of einsum")
einsum_grad.jvp = jvp_einsum_grad


# ---- matrix functions: inverse, determinants, solve, factorizations --------------------------
# (spelled with tuple indices, not numpy's named results, which cupy does not return)
# Batched like numpy (the last two axes are the matrix). The rules are written with matmul,
# inv and the other primitives, so second derivatives work. Conventions:
# - det, slogdet and solve need an invertible matrix for their gradient (inv raises
#   LinAlgError otherwise, as numpy's solve does for the value);
# - cholesky and eigh read only the lower triangle (numpy's UPLO='L'), so the gradient of
#   the strict upper triangle is 0 and the lower one counts both symmetric entries;
# - eigh's eigenvector gradient needs distinct eigenvalues (pairs of equal ones get 0),
#   svd's needs distinct nonzero singular values, qr needs a tall or square matrix of full
#   rank, pinv a matrix of constant (full) rank.

def _mT(x):
    from .shapes import swapaxes

    return swapaxes(x, axis1=-1, axis2=-2)


def _batched_scalar(v):
    """A batch of scalars (...,) as (..., 1, 1), to scale a batch of matrices."""
    from .shapes import expand_dims

    return expand_dims(v, axis=(-2, -1))


def _inv(x):
    return get_xp(x).linalg.inv(x)


def vjp_inv(g, out, x):
    from .elementwise import negative

    return negative(matmul(matmul(_mT(out), g), _mT(out)))


def jvp_inv(tangents, out, x):
    from .elementwise import negative

    return negative(matmul(matmul(out, tangents[0]), out))


inv = defop("inv", _inv, vjp_inv, reads_inputs=False, reads_out=True,
            spell=call("np.linalg.inv"), convention="needs an invertible matrix")
inv.jvp = jvp_inv


def _det(x):
    return get_xp(x).linalg.det(x)


def _logabsdet(x):
    return get_xp(x).linalg.slogdet(x)[1]


def _slogdet_sign(x):
    return get_xp(x).linalg.slogdet(x)[0]


def vjp_det(g, out, x):
    from .elementwise import multiply

    return multiply(_batched_scalar(multiply(g, out)), _mT(inv(x)))


def vjp_logabsdet(g, out, x):
    from .elementwise import multiply

    return multiply(_batched_scalar(g), _mT(inv(x)))


def _trace_inv_times(x, t):
    """trace(inv(x) @ t) over the last two axes."""
    from .elementwise import multiply
    from .reduce import sum

    return sum(multiply(_mT(inv(x)), t), axis=(-2, -1))


def jvp_det(tangents, out, x):
    from .elementwise import multiply

    return multiply(out, _trace_inv_times(x, tangents[0]))


def jvp_logabsdet(tangents, out, x):
    return _trace_inv_times(x, tangents[0])


det = defop("det", _det, vjp_det, reads_out=True, spell=call("np.linalg.det"),
            convention="needs an invertible matrix")
det.jvp = jvp_det
logabsdet = defop("logabsdet", _logabsdet, vjp_logabsdet,
                  spell=lambda i, p, d: f"np.linalg.slogdet({i[0]})[1]",
                  convention="needs an invertible matrix")
logabsdet.jvp = jvp_logabsdet
slogdet_sign = defop("slogdet_sign", _slogdet_sign, differentiable=False,
                     spell=lambda i, p, d: f"np.linalg.slogdet({i[0]})[0]")


def _solve(a, b):
    if _nd(b) == 1 and _nd(a) > 2:
        raise ValueError("srcgrad's solve takes a 1-D b with one matrix a only; for a stack "
                         "of matrices write solve(a, b[..., None])[..., 0]")
    return get_xp(a, b).linalg.solve(a, b)


def vjp_solve_a(g, out, a, b):
    # x = inv(a) @ b (numpy's rule for b: a vector when 1-D, else a stack of matrices, as
    # for matmul): a's cotangent is -inv(a).T g x.T
    from .elementwise import negative

    return negative(matmul_grad_a(matmul_grad_b(g, inv(a), out), a, out))


def vjp_solve_b(g, out, a, b):
    return matmul_grad_b(g, inv(a), b)


def jvp_solve(tangents, out, a, b):
    from .elementwise import negative, subtract

    ta, tb = tangents
    rhs = None
    if ta is not None:
        rhs = negative(matmul(ta, out))
    if tb is not None:
        rhs = tb if rhs is None else subtract(tb, matmul(ta, out))
    return matmul(inv(a), rhs)


# spelled by the helper (not np.linalg.solve): generated code keeps its check
solve = defop("solve", _solve, vjp_solve_a, vjp_solve_b, reads_out=True,
              spell=call("solve"), convention="needs an invertible matrix")
solve.jvp = jvp_solve


def _fold(gs, uplo):
    """A symmetric cotangent as the cotangent of a function that reads only the lower
    (upper) triangle: the strict triangle counts both entries, the other half gets 0."""
    from .elementwise import add
    from .shapes import tril, triu

    tri = tril if uplo == "L" else triu
    return add(tri(gs), tri(gs, k=-1 if uplo == "L" else 1))


def _symmetric_part(m):
    from .elementwise import add, multiply

    return multiply(add(m, _mT(m)), 0.5)


def _from_triangle(t, uplo):
    """The symmetric matrix that a function reading only one triangle of t sees."""
    from .elementwise import add
    from .shapes import tril, triu

    if uplo == "L":
        return add(tril(t), _mT(tril(t, k=-1)))
    return add(triu(t), _mT(triu(t, k=1)))


def _cholesky(x):
    return get_xp(x).linalg.cholesky(x)


def vjp_cholesky(g, out, x):
    from .elementwise import add, multiply
    from .shapes import tril

    s = matmul(_mT(out), g)
    phi = multiply(add(tril(s), tril(s, k=-1)), 0.5)  # lower triangle, halved diagonal
    linv = inv(out)
    return _fold(_symmetric_part(matmul(matmul(_mT(linv), phi), linv)), "L")


def jvp_cholesky(tangents, out, x):
    from .elementwise import add, multiply
    from .shapes import tril

    # dL = L Phi(L^-1 dA L^-T), Phi: the lower triangle with the diagonal halved
    linv = inv(out)
    m = matmul(matmul(linv, _from_triangle(tangents[0], "L")), _mT(linv))
    return matmul(out, multiply(add(tril(m), tril(m, k=-1)), 0.5))


cholesky = defop("cholesky", _cholesky, vjp_cholesky, reads_out=True,
                 spell=call("np.linalg.cholesky"), convention="reads the lower triangle")
cholesky.jvp = jvp_cholesky


def _eigvalsh(x, UPLO="L"):
    return get_xp(x).linalg.eigvalsh(x, UPLO=UPLO)


def _eigh_vectors(x, UPLO="L"):
    return get_xp(x).linalg.eigh(x, UPLO=UPLO)[1]


def _gap_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i), and 0 where w_j == w_i (the diagonal)."""
    from .elementwise import divide, equal, subtract, where
    from .shapes import expand_dims

    d = subtract(expand_dims(w, axis=-2), expand_dims(w, axis=-1))
    same = equal(d, 0)
    return where(same, 0.0, divide(1.0, where(same, 1.0, d)))


def vjp_eigvalsh(g, out, x, UPLO="L"):
    from .elementwise import multiply
    from .shapes import expand_dims

    v = eigh_vectors(x, UPLO=UPLO)
    return _fold(matmul(multiply(v, expand_dims(g, axis=-2)), _mT(v)), UPLO)


def vjp_eigh_vectors(g, out, x, UPLO="L"):
    from .elementwise import multiply

    f = _gap_inverse(eigvalsh(x, UPLO=UPLO))
    inner = multiply(f, matmul(_mT(out), g))
    return _fold(_symmetric_part(matmul(matmul(out, inner), _mT(out))), UPLO)


def jvp_eigvalsh(tangents, out, x, UPLO="L"):
    from .elementwise import multiply
    from .reduce import sum

    v = eigh_vectors(x, UPLO=UPLO)
    return sum(multiply(v, matmul(_from_triangle(tangents[0], UPLO), v)), axis=-2)


def jvp_eigh_vectors(tangents, out, x, UPLO="L"):
    from .elementwise import multiply

    f = _gap_inverse(eigvalsh(x, UPLO=UPLO))
    p = matmul(matmul(_mT(out), _from_triangle(tangents[0], UPLO)), out)
    return matmul(out, multiply(f, p))


_UPLO = dict(UPLO="L")
eigvalsh = defop("eigvalsh", _eigvalsh, vjp_eigvalsh, spell=call("np.linalg.eigvalsh"),
                 defaults=_UPLO, convention="reads one triangle")
eigvalsh.jvp = jvp_eigvalsh
eigh_vectors = defop("eigh_vectors", _eigh_vectors, vjp_eigh_vectors, reads_out=True,
                     spell=lambda i, p, d: f"np.linalg.eigh({i[0]}"
                     + (f", UPLO={p['UPLO']!r}" if p.get("UPLO", "L") != "L" else "")
                     + ")[1]", defaults=_UPLO,
                     convention="distinct eigenvalues; reads one triangle")
eigh_vectors.jvp = jvp_eigh_vectors


# svd (reduced) and its singular values; F[i, j] = 1 / (s_j**2 - s_i**2)

def _svd_parts(x):
    return get_xp(x).linalg.svd(x, full_matrices=False)


def _svdvals(x):
    return get_xp(x).linalg.svd(x, compute_uv=False)


def _svd_u(x):
    return _svd_parts(x)[0]


def _svd_vh(x):
    return _svd_parts(x)[2]


def vjp_svdvals(g, out, x):
    from .elementwise import multiply
    from .shapes import expand_dims

    return matmul(multiply(svd_u(x), expand_dims(g, axis=-2)), svd_vh(x))


def jvp_svdvals(tangents, out, x):
    from .elementwise import multiply
    from .reduce import sum

    return sum(multiply(svd_u(x), matmul(tangents[0], _mT(svd_vh(x)))), axis=-2)


def _svd_f(s):
    from .elementwise import square

    return _gap_inverse(square(s))


def vjp_svd_u(g, out, x):
    from .elementwise import add, divide, multiply, subtract
    from .shapes import expand_dims

    u, s, vh = out, svdvals(x), svd_vh(x)
    utg = matmul(_mT(u), g)
    inner = multiply(multiply(_svd_f(s), subtract(utg, _mT(utg))), expand_dims(s, axis=-2))
    rest = divide(subtract(g, matmul(u, utg)), expand_dims(s, axis=-2))  # (I - UU^T) g S^-1
    return matmul(add(matmul(u, inner), rest), vh)


def vjp_svd_vh(g, out, x):
    from .elementwise import add, divide, multiply, subtract
    from .shapes import expand_dims

    u, s, vh = svd_u(x), svdvals(x), out
    vtg = matmul(vh, _mT(g))  # V^T gV, with gV = g.T the cotangent of V = vh.T
    inner = multiply(expand_dims(s, axis=-1), multiply(_svd_f(s), subtract(vtg, _mT(vtg))))
    # S^-1 gV^T (I - V V^T)
    rest = divide(subtract(g, matmul(_mT(vtg), vh)), expand_dims(s, axis=-1))
    return add(matmul(matmul(u, inner), vh), matmul(u, rest))


def jvp_svd_u(tangents, out, x):
    from .elementwise import add, divide, multiply, subtract
    from .shapes import expand_dims

    t = tangents[0]
    u, s, vh = out, svdvals(x), svd_vh(x)
    v = _mT(vh)
    p = matmul(matmul(_mT(u), t), v)
    sd = expand_dims(s, axis=-2)
    sym = add(multiply(p, sd), _mT(multiply(p, sd)))  # dP S + S dP^T
    tv = matmul(t, v)
    return add(matmul(u, multiply(_svd_f(s), sym)), divide(subtract(tv, matmul(u, matmul(
        _mT(u), tv))), sd))


def jvp_svd_vh(tangents, out, x):
    from .elementwise import add, divide, multiply, subtract
    from .shapes import expand_dims

    t = tangents[0]
    u, s, vh = svd_u(x), svdvals(x), out
    v = _mT(vh)
    p = matmul(matmul(_mT(u), t), v)
    sd = expand_dims(s, axis=-2)
    sym = add(multiply(sd, _mT(p)), _mT(multiply(sd, _mT(p))))  # S dP + dP^T S (transposed)
    ttu = matmul(_mT(t), u)
    dv = add(matmul(v, multiply(_svd_f(s), _mT(sym))),
             divide(subtract(ttu, matmul(v, matmul(vh, ttu))), sd))
    return _mT(dv)


svdvals = defop("svdvals", _svdvals, vjp_svdvals, spell=lambda i, p, d:
                f"np.linalg.svd({i[0]}, compute_uv=False)")
svdvals.jvp = jvp_svdvals
svd_u = defop("svd_u", _svd_u, vjp_svd_u, reads_out=True,
              spell=lambda i, p, d: f"np.linalg.svd({i[0]}, full_matrices=False)[0]",
              convention="distinct nonzero singular values")
svd_u.jvp = jvp_svd_u
svd_vh = defop("svd_vh", _svd_vh, vjp_svd_vh, reads_out=True,
               spell=lambda i, p, d: f"np.linalg.svd({i[0]}, full_matrices=False)[2]",
               convention="distinct nonzero singular values")
svd_vh.jvp = jvp_svd_vh


# qr (reduced, tall or square)

def _qr_parts(x):
    s = getattr(x, "shape", ())
    if len(s) >= 2 and s[-2] < s[-1]:
        raise ValueError("srcgrad differentiates the QR decomposition of tall or square "
                         f"matrices (rows >= columns); got {s[-2]}x{s[-1]}")
    return get_xp(x).linalg.qr(x)


def _qr_q(x):
    return _qr_parts(x)[0]


def _qr_r(x):
    return _qr_parts(x)[1]


def _copyltu(m):
    from .elementwise import add
    from .shapes import tril

    return add(tril(m), _mT(tril(m, k=-1)))


def vjp_qr_q(g, out, x):
    from .elementwise import add, negative

    q, r = out, qr_r(x)
    m = negative(matmul(_mT(g), q))
    return matmul(add(g, matmul(q, _copyltu(m))), _mT(inv(r)))


def vjp_qr_r(g, out, x):
    q, r = qr_q(x), out
    m = matmul(r, _mT(g))
    return matmul(matmul(q, _copyltu(m)), _mT(inv(r)))


def _qr_tangents(t, q, r):
    """(dQ, dR): with X = Q^T dA R^-1, Omega = its strict lower part minus that part's
    transpose, dR = (X - Omega) R and dQ = (dA - Q dR) R^-1."""
    from .elementwise import subtract
    from .shapes import tril

    rinv = inv(r)
    xm = matmul(matmul(_mT(q), t), rinv)
    low = tril(xm, k=-1)
    dr = matmul(subtract(xm, subtract(low, _mT(low))), r)
    dq = matmul(subtract(t, matmul(q, dr)), rinv)
    return dq, dr


def jvp_qr_q(tangents, out, x):
    return _qr_tangents(tangents[0], out, qr_r(x))[0]


def jvp_qr_r(tangents, out, x):
    return _qr_tangents(tangents[0], qr_q(x), out)[1]


qr_q = defop("qr_q", _qr_q, vjp_qr_q, reads_out=True,
             spell=call("qr_q"),
             convention="tall or square matrices of full rank")
qr_q.jvp = jvp_qr_q
qr_r = defop("qr_r", _qr_r, vjp_qr_r, reads_out=True,
             spell=call("qr_r"),
             convention="tall or square matrices of full rank")
qr_r.jvp = jvp_qr_r


# pinv (constant rank)

def _pinv(x):
    return get_xp(x).linalg.pinv(x)


def vjp_pinv(g, out, x):
    from .elementwise import add, negative, subtract

    p, pt, gt = out, _mT(out), _mT(g)
    t1 = negative(matmul(matmul(pt, g), pt))
    gppt = matmul(matmul(gt, p), pt)
    t2 = subtract(gppt, matmul(x, matmul(p, gppt)))  # (I - A P) G^T P P^T
    ptpg = matmul(matmul(pt, p), gt)
    t3 = subtract(ptpg, matmul(matmul(ptpg, p), x))  # P^T P G^T (I - P A)
    return add(add(t1, t2), t3)


def jvp_pinv(tangents, out, x):
    from .elementwise import add, negative, subtract

    t, p = tangents[0], out
    tt = _mT(t)
    d1 = negative(matmul(matmul(p, t), p))
    ppt = matmul(p, _mT(p))
    d2 = subtract(matmul(ppt, tt), matmul(matmul(ppt, tt), matmul(x, p)))  # P P^T dA^T (I - AP)
    ptp = matmul(_mT(p), p)
    d3 = subtract(matmul(tt, ptp), matmul(matmul(p, x), matmul(tt, ptp)))  # (I - PA) dA^T P^T P
    return add(add(d1, d2), d3)


pinv = defop("pinv", _pinv, vjp_pinv, reads_out=True, spell=call("np.linalg.pinv"),
             convention="a matrix of constant rank")
pinv.jvp = jvp_pinv


# ---- triangular solves (scipy.linalg.solve_triangular) -----------------------------------------
# x = op(a)^-1 b with op(a) = a (trans=0) or a.T (trans=1), reading only the lower (upper)
# triangle of a, diagonal included. b is a vector (with one matrix a) or a stack of matrices
# (..., M, K), batched against a like matmul. The rules are triangular solves and matmul
# cotangents, so every derivative order stays in the op set; a's cotangent is 0 outside the
# triangle read.

def _solve_triangular(a, b, lower=False, trans=0):
    if _nd(b) == 1 and _nd(a) > 2:
        raise ValueError("srcgrad's solve_triangular takes a 1-D b with one matrix a only; "
                         "for a stack of matrices write solve_triangular(a, b[..., None], "
                         "...)[..., 0]")
    if type(a).__module__.startswith("cupy") or type(b).__module__.startswith("cupy"):
        import cupyx.scipy.linalg as sl
    else:
        import scipy.linalg as sl
    return sl.solve_triangular(a, b, lower=lower, trans=trans)


def _triangle(m, lower):
    from .shapes import tril, triu

    return tril(m) if lower else triu(m)


def _tri_params(lower, trans):
    return {k: v for k, v in (("lower", lower), ("trans", trans)) if v}


def vjp_solve_triangular_a(g, out, a, b, lower=False, trans=0):
    from .elementwise import negative

    gb = solve_triangular(a, g, **_tri_params(lower, 1 - trans))
    gm = negative(matmul_grad_a(gb, a, out))  # the cotangent of op(a)
    return _triangle(_mT(gm) if trans else gm, lower)


def vjp_solve_triangular_b(g, out, a, b, lower=False, trans=0):
    from .shapes import shape, sum_to

    return sum_to(solve_triangular(a, g, **_tri_params(lower, 1 - trans)), shape(b))


def jvp_solve_triangular(tangents, out, a, b, lower=False, trans=0):
    from .elementwise import negative, subtract

    ta, tb = tangents
    rhs = None
    if ta is not None:
        ta = _triangle(ta, lower)
        dx = matmul(_mT(ta) if trans else ta, out)
        rhs = negative(dx) if tb is None else subtract(tb, dx)
    elif tb is not None:
        rhs = tb
    return solve_triangular(a, rhs, **_tri_params(lower, trans))


solve_triangular = defop(
    "solve_triangular", _solve_triangular, vjp_solve_triangular_a, vjp_solve_triangular_b,
    reads_out=True, spell=call("solve_triangular"), defaults=dict(lower=False, trans=0),
    doc="op(a)^-1 b for a triangular a (scipy.linalg.solve_triangular)",
    convention="reads one triangle of a (its cotangent is 0 outside it); needs a nonzero "
               "diagonal")
solve_triangular.jvp = jvp_solve_triangular
