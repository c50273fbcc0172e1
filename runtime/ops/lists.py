"""List values: the Python lists that generated code builds at run time.

A list that grows inside a run-time loop or branch (`hs.append(h)`), or that is indexed
with a run-time index (`hs[t]`), is one value of the compiler's IR. Its cotangent and its
tangent are those of `np.stack(hs)`: an array whose item k is item k's. These primitives
are the compiler's only (the tape has no list values), so they are not in `PRIMITIVES`;
they sit here, beside the op table, because they are declared the same way: a forward,
VJP and JVP rules written with primitives, and a spelling.
"""
from __future__ import annotations

import numpy

from .core import Primitive, call
from .shapes import getitem, moveaxis, scatter_add, zeros_like

__all__ = ["LIST_FROM", "LIST_APPEND", "LIST_ZEROS", "LIST_GET", "LIST_GET_GRAD", "LIST_POS",
           "LIST_STACKED_ZEROS",
           "STACK_LIST"]


def vjp_list_from(g, out, *items, index):
    return getitem(g, index)


def vjp_list_append_item(g, out, lst, item, pos):
    return getitem(g, pos)


def vjp_list_append_list(g, out, lst, item, pos):
    return g


def vjp_stack_list(g, out, lst, axis=0):
    return g if axis == 0 else moveaxis(g, source=axis, destination=0)


def _list_append(lst, item, pos):
    lst.append(item)
    return lst


LIST_FROM = Primitive("list_from", lambda *items: list(items), vjps=(vjp_list_from,),
                      variadic=True, creator=True, kind="list", spell=lambda i, p, d: f"[{', '.join(i)}]")
LIST_APPEND = Primitive("list_append", _list_append,
                        vjps=(vjp_list_append_list, vjp_list_append_item), nondiff=(2,), kind="list",
                        spell=lambda i, p, d: f"{i[0]}.append({i[1]})")
LIST_ZEROS = Primitive("list_zeros", lambda lst: [numpy.zeros_like(e) for e in lst], meta=True,
                       creator=True, kind="list",
                       spell=lambda i, p, d: f"[np.zeros_like(e) for e in {i[0]}]")


def _list_pos(lst, index):
    """The position that `lst[index]` reads, counted from the front (an IndexError where
    Python would raise one)."""
    n = len(lst)
    if not -n <= index < n:
        raise IndexError("list index out of range")
    return index + n if index < 0 else index


# `lst[i]` where i may be negative: the position it reads, fixed when it reads it (the
# list may grow afterwards, and the cotangent of `lst[-1]` belongs at the item it read,
# not at the last item of the grown list)
LIST_POS = Primitive("list_pos", _list_pos, meta=True, zero_grad=True, spell=call("list_pos"))


def _stacked_zeros(lst):
    """Zeros of `np.stack(lst)`'s shape and dtype: the cotangent of a run-time list is its
    items' cotangents stacked, so the items must have one shape."""
    shapes = sorted({numpy.shape(e) for e in lst})
    if len(shapes) > 1:
        raise ValueError(
            "srcgrad: the items of a list built in a run-time loop have different shapes "
            f"({', '.join(map(str, shapes[:4]))}); its gradient stacks them, so they must "
            "have one shape: broadcast the first items to the shape of the later ones "
            "(np.broadcast_to(x, shape) * 1.0), or keep them in separate variables")
    from ..backend import get_xp

    return get_xp(*lst).zeros_like(lst) if lst else numpy.zeros((0,))


# the zero cotangent of a run-time list (the reverse pass's start for a loop's list)
LIST_STACKED_ZEROS = Primitive("stacked_zeros", _stacked_zeros, differentiable=False,
                               zero_grad=True, creator=True, spell=call("stacked_zeros"))


def _list_get_grad(g, index, lst):
    return scatter_add(g, index, (len(lst),) + numpy.shape(g))


# the cotangent of `lst` from `lst[index]`: that of np.stack(lst), zero but at [index]
LIST_GET_GRAD = Primitive("list_get_grad", _list_get_grad, nondiff=(1, 2),
                          vjps=(lambda ct, out, g, index, lst: getitem(ct, index),),
                          spell=lambda i, p, d: (
                              f"scatter_add({i[0]}, {i[1]}, (len({i[2]}),) + np.shape({i[0]}))"))
LIST_GET_GRAD.jvp = lambda tangents, out, g, index, lst: (
    None if tangents[0] is None else LIST_GET_GRAD(tangents[0], index, lst))


def vjp_list_get(g, out, lst, index):
    return LIST_GET_GRAD(g, index, lst)


# `lst[i]` of a list known only at run time (grown in a run-time loop, or indexed with a
# run-time i): the item itself, so it may share memory with what the list holds
LIST_GET = Primitive("list_get", lambda lst, index: lst[index], vjps=(vjp_list_get,),
                     nondiff=(1,), view=True, spell=lambda i, p, d: f"{i[0]}[{i[1]}]")
LIST_GET.jvp = lambda tangents, out, lst, index: (
    None if tangents[0] is None else LIST_GET(tangents[0], index))


def jvp_list_from(tangents, out, *items):
    return LIST_FROM(*[zeros_like(x) if t is None else t for t, x in zip(tangents, items)])


def jvp_list_append(tangents, out, lst, item, pos):
    t_lst, t_item, _ = tangents
    if t_lst is None:
        t_lst = LIST_ZEROS(lst)
    if t_item is None:
        t_item = zeros_like(item)
    return LIST_APPEND(t_lst, t_item, pos)


def jvp_stack_list(tangents, out, lst, axis=0):
    return STACK_LIST(tangents[0], axis=axis)


STACK_LIST = Primitive("stack_list", None, vjps=(vjp_stack_list,), view=True, fresh=True, dtype="same",
                       spell=lambda i, p, d: f"np.stack({i[0]}" + (
                           f", axis={p['axis']!r})" if p.get("axis", 0) else ")"))

LIST_FROM.jvp, LIST_APPEND.jvp, STACK_LIST.jvp = jvp_list_from, jvp_list_append, jvp_stack_list
