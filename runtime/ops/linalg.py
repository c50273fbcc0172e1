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

from ..backend import get_xp
from .core import call, defop
from .shapes import _sum_to

__all__ = ["matmul", "dot", "inner", "outer", "tensordot", "trace"]


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
    f = defop(name, fwd, vjp_a, vjp_b, spell=spell, defaults=defaults)
    fa = defop(f"{name}_grad_a", grad_a, vjp_fa_g, None, vjp_fa_b, nondiff=(1,),
               spell=call(f"{name}_grad_a"), defaults=defaults)
    fb = defop(f"{name}_grad_b", grad_b, vjp_fb_g, vjp_fb_a, None, nondiff=(2,),
               spell=call(f"{name}_grad_b"), defaults=defaults)
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
    return _sum_to(r, a.shape)


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
    else:
        r = xp.matmul(xp.swapaxes(a, -1, -2), g)
    return _sum_to(r, b.shape)


matmul, matmul_grad_a, matmul_grad_b = _bilinear(
    "matmul", _matmul, _matmul_grad_a, _matmul_grad_b, spell=lambda i, p, d: f"{i[0]} @ {i[1]}")


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
    na, nb = _nd(a), _nd(b)
    xa, xb = _td_axes(axes, na, nb)
    free_a = [i for i in range(na) if i not in xa]
    free_b = [i for i in range(nb) if i not in xb]
    # g has axes free_a + free_b; contract its free_b part with b's free axes
    g_axes = list(range(len(free_a), len(free_a) + len(free_b)))
    r = xp.tensordot(g, b, axes=(g_axes, free_b))  # axes: free_a + xb (in b's order)
    # b's contracted axis j pairs with a's axis xa[xb.index(j)]
    order = free_a + [xa[xb.index(j)] for j in sorted(xb)]
    return xp.transpose(r, [order.index(i) for i in range(na)])


def _tensordot_grad_b(g, a, b, axes=2):
    xp = get_xp(g, a)
    na, nb = _nd(a), _nd(b)
    xa, xb = _td_axes(axes, na, nb)
    free_a = [i for i in range(na) if i not in xa]
    free_b = [i for i in range(nb) if i not in xb]
    g_axes = list(range(len(free_a)))
    r = xp.tensordot(a, g, axes=(free_a, g_axes))  # axes: xa (in a's order) + free_b
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
    return _sum_to(g * other, like.shape if hasattr(like, "shape") else ())


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
    return xp.reshape(xp.matmul(g, xp.ravel(b)), a.shape)


def _outer_grad_b(g, a, b):
    xp = get_xp(g, a)
    return xp.reshape(xp.matmul(xp.ravel(a), g), b.shape)


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
              defaults=_TR)
trace_transpose = defop("trace_transpose", _trace_transpose, vjp_trace_transpose,
                        nondiff=(1,), reads_inputs=False, spell=call("trace_transpose"),
                        defaults=_TR)
