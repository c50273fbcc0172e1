"""Structured arguments (pytrees): dicts, lists, tuples and namedtuples of arrays and numbers.

At call time `flatten_args` splits each structured argument into its leaves and describes
its shape in a *treedef*, a hashable nested tuple. A transformation compiles one entry per
treedef (srcgrad.api), whose generated function takes the leaves as parameters: lowering
binds the user's parameter name to the same structure built of the leaves' Vars
(`build`), so `params["W1"]`, `W, b = layers[0]` and `for W, b in layers:` are lowered as
for any static Python container. The gradient is the same structure of the leaves'
gradients (`unflatten`). grad, value_and_grad and vjp take structures, and jvp takes
structured primals with tangents of the same structures; hvp, hessian, jacobian and
grad(grad(f)) refuse them with a TypeError.

Rules (also in the README):
- dict keys must be str or int; leaves keep the dict's insertion order (the gradient
  dict has the keys in the order the argument had them). A dict with the same keys in
  another order is another structure (compiled once more).
- a differentiated list or tuple is a structure (`grad(f)([1.0, 2.0])` returns a list of
  two gradients); a list or tuple of numbers only in an argument that is not
  differentiated is one run-time value, as before; inside a structure every list and
  tuple is a structure node.
- in a differentiated argument every leaf is differentiated: an array or a real number
  (int, float, numpy scalar); anything else is a TypeError.
- in an argument that is not differentiated, arrays and floats are run-time inputs;
  ints, bools, strings and None are compile-time constants, part of the treedef (a new
  value compiles a new entry, so `cfg["n_layers"]` can bound a loop). Other leaves are
  a TypeError.
- a new structure (other keys, another length, another constant) compiles a new entry;
  the same structure with arrays of new shapes reuses it.
"""
from __future__ import annotations

import keyword
import numbers

import numpy

__all__ = ["LEAF", "is_structured", "flatten_args", "build", "unflatten", "describe",
           "restore_namedtuples", "has_namedtuple"]

LEAF = "*"  # a run-time leaf in a treedef
_NUMBER_TYPES = (int, float, complex, numpy.number, numpy.bool_)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_array(x) -> bool:
    return isinstance(x, numpy.ndarray) or (
        hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, numpy.generic)
        and type(x).__module__.split(".")[0] == "cupy")


def is_structured(x, wrt: bool = False) -> bool:
    """Is this argument a structure (flattened), rather than one value? A differentiated
    list or tuple always is; one that is not differentiated is one value (as before) when
    it holds numbers only."""
    t = type(x)
    if isinstance(x, dict) or _is_namedtuple(x):  # a dict subclass: refused by _flatten
        return True
    if isinstance(x, (list, tuple)) and t in (list, tuple):
        return wrt or not all(isinstance(i, _NUMBER_TYPES) for i in x)
    return False


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _path_text(name, path) -> str:
    return name + "".join(f".{k}" if isinstance(k, tuple) else f"[{k!r}]" for k in path)


def _flatten(x, wrt: bool, name: str, path: tuple, leaves: list, fname: str):
    t = type(x)
    if t is dict:
        for k in x:
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(
                    f"{fname}: the dict {_path_text(name, path)} has the key {k!r} of type "
                    f"{type(k).__name__}; structured arguments take dicts with str or int "
                    "keys only")
        return ("dict", tuple(x), tuple(_flatten(v, wrt, name, path + (k,), leaves, fname)
                                         for k, v in x.items()))
    if _is_namedtuple(x):
        return ("namedtuple", t, tuple(
            _flatten(v, wrt, name, path + ((f,),), leaves, fname)
            for f, v in zip(t._fields, x)))
    if t in (list, tuple):
        return (t.__name__, tuple(_flatten(v, wrt, name, path + (i,), leaves, fname)
                                  for i, v in enumerate(x)))
    if isinstance(x, (list, tuple, dict)):
        raise TypeError(f"{fname}: {_path_text(name, path)} is {_a(t.__name__)}, a subclass of "
                        f"{t.__mro__[1].__name__}; structured arguments take plain dicts, "
                        "lists, tuples and namedtuples")
    if _is_array(x):
        leaves.append(x)
        return LEAF
    if wrt:
        if isinstance(x, (bool, numpy.bool_)) or not isinstance(x, numbers.Real):
            raise TypeError(
                f"{fname}: {_path_text(name, path)} is {_a(t.__name__)}, but every leaf of a "
                "differentiated argument is differentiated: it must be an array or a real "
                "number (pass other values in an argument that is not differentiated)")
        leaves.append(x)
        return LEAF
    if isinstance(x, (float, numpy.floating, complex, numpy.complexfloating)):
        leaves.append(x)
        return LEAF
    if isinstance(x, (bool, int, str, type(None), numpy.integer, numpy.bool_)):
        return ("const", type(x), x)
    raise TypeError(f"{fname}: {_path_text(name, path)} is {_a(t.__name__)}; the leaves of a "
                    "structured argument must be arrays, numbers, strings or None")


def flatten_args(args, names, wrt, fname):
    """(key, leaves): `key` has one treedef per argument (None for an argument passed
    as one value), `leaves` the run-time values in the order of the generated function's
    parameters."""
    key, leaves = [], []
    for i, a in enumerate(args):
        if is_structured(a, i in wrt):
            key.append(_flatten(a, i in wrt, names[i], (), leaves, fname))
        else:
            key.append(None)
            leaves.append(a)
    return tuple(key), leaves


def describe(tree) -> str:
    """A stable text of a treedef (for the disk cache key)."""
    if tree is None or tree == LEAF:
        return repr(tree)
    kind = tree[0]
    if kind == "const":
        return f"const({tree[1].__name__}:{tree[2]!r})"
    if kind == "namedtuple":
        cls = tree[1]
        return (f"namedtuple({cls.__module__}.{cls.__qualname__}{tuple(cls._fields)!r}:"
                + ",".join(describe(c) for c in tree[2]) + ")")
    if kind == "dict":
        return "dict(" + ",".join(f"{k!r}:{describe(c)}" for k, c in zip(tree[1], tree[2])) \
            + ")"
    return kind + "(" + ",".join(describe(c) for c in tree[1]) + ")"


def _ident(part) -> str:
    s = "".join(c if c.isalnum() or c == "_" else "_" for c in str(part))
    return s.strip("_") or "x"


def build(tree, name: str, make_leaf, taken: set):
    """The structure of `tree` with a fresh leaf (`make_leaf(hint)`) at each run-time
    leaf and the constants in place; namedtuples are rebuilt as their class. Leaves are
    named after their path: `params_W1`, `layers_0_W` (unique among `taken`)."""
    def rec(t, hint):
        if t == LEAF:
            h = hint
            n = 2
            while h in taken or keyword.iskeyword(h):
                h, n = f"{hint}_{n}", n + 1
            taken.add(h)
            return make_leaf(h)
        kind = t[0]
        if kind == "const":
            return t[2]
        if kind == "dict":
            return {k: rec(c, f"{hint}_{_ident(k)}") for k, c in zip(t[1], t[2])}
        if kind == "namedtuple":
            return t[1](*[rec(c, f"{hint}_{_ident(f)}") for f, c in zip(t[1]._fields, t[2])])
        items = [rec(c, f"{hint}_{i}") for i, c in enumerate(t[1])]
        return items if kind == "list" else tuple(items)
    return rec(tree, name)


def leaves_of(tree, value) -> list:
    """The run-time leaves of `value`, a structure built by `build` from `tree`."""
    out = []

    def rec(t, v):
        if t == LEAF:
            out.append(v)
        elif t[0] == "dict":
            for k, c in zip(t[1], t[2]):
                rec(c, v[k])
        elif t[0] != "const":
            for c, x in zip(t[-1], v):
                rec(c, x)
    rec(tree, value)
    return out


def unflatten(tree, leaves, plain: bool = True):
    """The structure of `tree` with `leaves` (an iterator or list) at its run-time leaves
    and None at its constants. `plain`: namedtuples as plain tuples (what generated code
    returns; `restore_namedtuples` turns them back)."""
    it = iter(leaves)

    def rec(t):
        if t == LEAF:
            return next(it)
        kind = t[0]
        if kind == "const":
            return None
        if kind == "dict":
            return {k: rec(c) for k, c in zip(t[1], t[2])}
        items = [rec(c) for c in t[-1]]
        if kind == "namedtuple":
            return tuple(items) if plain else t[1](*items)
        return items if kind == "list" else tuple(items)
    return rec(tree)


def has_namedtuple(tree) -> bool:
    if tree is None or tree == LEAF or tree[0] == "const":
        return False
    if tree[0] == "namedtuple":
        return True
    return any(has_namedtuple(c) for c in tree[-1])


def restore_namedtuples(tree, value):
    """`value` (a structure of `tree` whose namedtuples are plain tuples) with its
    namedtuples restored."""
    if tree is None or tree == LEAF or tree[0] == "const":
        return value
    kind = tree[0]
    if kind == "dict":
        return {k: restore_namedtuples(c, value[k]) for k, c in zip(tree[1], tree[2])}
    items = [restore_namedtuples(c, v) for c, v in zip(tree[-1], value)]
    if kind == "namedtuple":
        return tree[1](*items)
    return items if kind == "list" else tuple(items)
