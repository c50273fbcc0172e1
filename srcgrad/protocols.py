"""Python's operator protocols on values known at compile time, for the lowerer.

The lowerer evaluates at compile time what depends on no run-time value: `mode == TRAIN`,
`"dropout" in cfg`, `if model:`, `-scale`, `min(layers, key=...)`. Where an operand's
class defines the protocol in Python (`__eq__`, `__contains__`, `__bool__`, `__add__`...),
calling it would run code whose reads no guard records: the answer would be kept after the
object changed, a stale gradient without a word. So such a method is inlined like any
user function (what it reads is guarded), in the order Python calls them, and nothing
here calls a method written in Python directly. A builtin operand's own method (an int's,
a list's) runs as it is, unless a container holds values whose comparison is written in
Python (`m in [TRAIN]`): the lowerer then does the container's work itself.

`Protocols` is a mixin of `srcgrad.lower.Lowerer`; it uses the lowerer's `inline` (a
Python function inlined), `apply` (a call), `error` and `b` (the builder).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import types

import numpy

from runtime import ops

from .errors import UnsupportedSyntaxError
from .ir import Var, has_var

#: "no such value" (shared with srcgrad.lower)
MISSING = object()

#: comparison operator -> (method, reflected method, Python operator, symbol)
COMPARISONS = {
    "Eq": ("__eq__", "__eq__", operator.eq, "=="),
    "NotEq": ("__ne__", "__ne__", operator.ne, "!="),
    "Lt": ("__lt__", "__gt__", operator.lt, "<"),
    "LtE": ("__le__", "__ge__", operator.le, "<="),
    "Gt": ("__gt__", "__lt__", operator.gt, ">"),
    "GtE": ("__ge__", "__le__", operator.ge, ">="),
}

#: binary operator -> (method, reflected method, symbol)
BINARY = {
    "Add": ("__add__", "__radd__", "+"), "Sub": ("__sub__", "__rsub__", "-"),
    "Mult": ("__mul__", "__rmul__", "*"), "Div": ("__truediv__", "__rtruediv__", "/"),
    "FloorDiv": ("__floordiv__", "__rfloordiv__", "//"), "Mod": ("__mod__", "__rmod__", "%"),
    "Pow": ("__pow__", "__rpow__", "**"), "MatMult": ("__matmul__", "__rmatmul__", "@"),
    "BitAnd": ("__and__", "__rand__", "&"), "BitOr": ("__or__", "__ror__", "|"),
    "BitXor": ("__xor__", "__rxor__", "^"), "LShift": ("__lshift__", "__rlshift__", "<<"),
    "RShift": ("__rshift__", "__rrshift__", ">>"),
}

#: unary operator -> method
UNARY = {"USub": "__neg__", "UAdd": "__pos__", "Invert": "__invert__"}

_EQUALITY = ("__eq__", "__ne__", "__hash__")
_ORDER = ("__lt__", "__le__", "__gt__", "__ge__")
_CONTAINERS = (list, tuple, set, frozenset, dict)
_DEPTH = 4  # how deep in nested containers a method written in Python is looked for


def python_method(v, name):
    """The method `name` of `v`'s class where it is written in Python (a class of the
    user's, or of a library written in Python), else None. Those of the enum module are
    not looked at (an enum member's value and name are fixed), nor srcgrad's own."""
    if isinstance(v, (Var, type)):
        return None
    m = getattr(type(v), name, None)
    if not isinstance(m, types.FunctionType) or \
            str(getattr(m, "__module__", "")).startswith(("srcgrad.", "runtime.")):
        return None  # (srcgrad's own values answer for themselves: a run-time dtype's)
    if isinstance(v, enum.Enum) and m.__module__ == "enum":
        return None  # (an enum member's own: its name and value are fixed)
    return m


def identity_matters(v) -> bool:
    """Is `v` an object of a class of the user's (or `object()`), known by which it is
    rather than by a value?"""
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, type, enum.Enum,
                                   types.FunctionType, types.ModuleType, Var,
                                   numpy.generic, numpy.dtype, tuple, list, dict, slice,
                                   range, frozenset, set)):
        return False
    return type(v) is object or str(getattr(type(v), "__module__", "")) != "builtins"


def _made_by_dataclasses(cls, f) -> bool:
    """Is `f` a comparison the dataclass decorator generated for `cls` (not the user's)?"""
    return dataclasses.is_dataclass(cls) and f.__code__.co_filename.startswith("<") and \
        f.__name__ in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__")


def holds_python(v, names, depth=0) -> bool:
    """Does `v`, or a value a list, tuple, set or dict in it holds, have a method of
    `names` written in Python?"""
    if any(python_method(v, n) is not None for n in names):
        return True
    if depth >= _DEPTH or not isinstance(v, _CONTAINERS):
        return False
    items = list(v.keys()) + list(v.values()) if isinstance(v, dict) else v
    return any(holds_python(x, names, depth + 1) for x in items)


class Protocols:
    """Operators and builtins on compile-time values, with methods written in Python
    inlined (see the module's docstring)."""

    def py_method(self, v, name):
        """`python_method(v, name)`, looked up as Python does (on `v`'s class) and guarded
        like any read: `v`'s class, and the class's `name` (the function compiled, its
        code checked by the guard; or its absence), so that `obj.__class__ = Sub`, or
        `Stages.__iter__` replaced or edited, compiles the function again."""
        m = python_method(v, name)
        if identity_matters(v) and self.b.reads.path_of(v) is not None:
            cls = self.b.reads.attr(v, "__class__", type(v))
            if hasattr(cls, name):
                self.b.reads.attr(cls, name, getattr(cls, name))
            else:
                self.b.reads.absent_attr(cls, name)
        return m

    def protocol(self, v, name, node):
        """`v.<name>()` where `v`'s class defines that method in Python (`__iter__` of a
        model that holds its layers, `__len__`...): inlined, so that what it reads is read
        like any value from outside (guarded); else `v` itself, for Python to apply the
        protocol to (a builtin type's)."""
        method = self.py_method(v, name)
        if method is None:
            return v
        return self.inline(method, [v], {}, node)

    def truth(self, v, node):
        """The truth of `v` as `if`, `while`, `and`, `or`, `not` and a comprehension's
        filter test it: `v.__bool__()` (or `v.__len__()`) inlined where `v`'s class defines
        it in Python; `v` itself when it is known only at run time."""
        if isinstance(v, Var):
            return v
        for name in ("__bool__", "__len__"):
            if hasattr(type(v), name) and self.py_method(v, name) is not None:
                out = self.protocol(v, name, node)
                return out if has_var(out) else bool(out)
            if hasattr(type(v), name):
                break  # (a builtin's: Python's bool() runs no code of the user's)
        return bool(v) if not has_var(v) else v

    def negate(self, v, node):
        """`not v`."""
        t = self.truth(v, node)
        return ops.logical_not(t) if has_var(t) else not t

    # -- binary operators -----------------------------------------------------------------------

    def dispatch(self, a, b, name, rname, node, always_reflect=False):
        """Python's `a <op> b` where a method of `a`'s or `b`'s class for it is written in
        Python: the methods in the order Python tries them, those written in Python
        inlined, until one gives something other than NotImplemented; MISSING when no
        method written in Python takes part (Python's own operator then runs no user code)
        or when all give NotImplemented (`NotImplemented` is returned then)."""
        if self.py_method(a, name) is None and self.py_method(b, rname) is None and \
                not (name == "__ne__" and (self.py_method(a, "__eq__") is not None or
                                           self.py_method(b, "__eq__") is not None)):
            return MISSING
        if isinstance(a, (Var, numpy.ndarray, numpy.generic)) and \
                self.py_method(b, rname) is not None:
            # numpy applies the object's method to every item: an array of objects
            raise self.error(f"an array and a {type(b).__name__} whose class defines "
                             f"{rname} in Python: numpy calls it on every item (an array of "
                             "objects), which srcgrad does not compile; call the object's "
                             "method on the array", node, UnsupportedSyntaxError)
        ta, tb = type(a), type(b)
        reflect = always_reflect or ta is not tb
        tries = [(a, name, b)] + ([(b, rname, a)] if reflect else [])
        if reflect and ta is not tb and issubclass(tb, ta) and \
                getattr(tb, rname, None) is not getattr(ta, rname, None):
            tries.reverse()  # a subclass's reflected method comes first
        for obj, meth, other in tries:
            out = self.call_method(obj, meth, other, node)
            if out is not NotImplemented:
                return out
        return NotImplemented

    def call_method(self, obj, meth, other, node):
        """`type(obj).<meth>(obj, other)`: inlined where written in Python; NotImplemented
        where the class has none (or a builtin's refuses the other operand)."""
        if isinstance(obj, Var):
            return NotImplemented
        f = self.py_method(obj, meth)
        if f is not None and _made_by_dataclasses(type(obj), f):
            return self.fields_compare(obj, other, meth, node)
        if f is not None:
            return self.inline(f, [obj, other], {}, node)
        if meth == "__ne__" and self.py_method(obj, "__eq__") is not None:
            # object.__ne__ is `not self.__eq__(other)`, NotImplemented passed on
            out = self.call_method(obj, "__eq__", other, node)
            return out if out is NotImplemented else self.negate(out, node)
        f = getattr(type(obj), meth, None)
        if f is None or has_var(other):
            return NotImplemented
        try:
            return f(obj, other)
        except TypeError:  # (list.__add__ of a non-list raises rather than defers)
            return NotImplemented

    def fields_compare(self, a, b, meth, node):
        """A dataclass's generated comparison (made by exec: it has no source to inline):
        its fields compared as tuples are, each read like any value from outside."""
        if type(b) is not type(a):
            return NotImplemented
        names = [f.name for f in dataclasses.fields(a) if f.compare]
        read = self.b.reads.attr
        left = [read(a, n, getattr(a, n)) for n in names]
        right = [read(b, n, getattr(b, n)) for n in names]
        for x, y in zip(left, right):
            if not self.equal(x, y, node):
                if meth in ("__eq__", "__ne__"):
                    return meth == "__ne__"
                op = {"__lt__": "Lt", "__le__": "LtE", "__gt__": "Gt", "__ge__": "GtE"}[meth]
                return self.compare(op, x, y, node)
        return meth in ("__eq__", "__le__", "__ge__")

    def binary(self, op_name, a, b, pyop, node):
        """`a <op> b` where one operand is an object whose class defines the operator in
        Python (inlined), else `pyop(a, b)`; the other operand may be a run-time value
        (a layer object's `__matmul__` applied to an array)."""
        name, rname, sym = BINARY[op_name]
        out = self.dispatch(a, b, name, rname, node)
        if out is MISSING:
            return pyop(a, b)
        if out is NotImplemented:
            raise self.error(f"unsupported operand types for {sym}: {type(a).__name__!r} and "
                             f"{type(b).__name__!r}", node, UnsupportedSyntaxError)
        return out

    def uses_python(self, a, b, op_name) -> bool:
        """Does `a <op> b` (a binary operator) call a method written in Python?"""
        name, rname, _ = BINARY[op_name]
        return self.py_method(a, name) is not None or self.py_method(b, rname) is not None

    def unary(self, op_name, v, node):
        """`-v`, `+v`, `~v` of a compile-time value whose class defines the method in
        Python (inlined); MISSING otherwise."""
        f = self.py_method(v, UNARY[op_name])
        return MISSING if f is None else self.inline(f, [v], {}, node)

    # -- comparisons ----------------------------------------------------------------------------

    def compare(self, op_name, a, b, node):
        """`a <op> b` of compile-time values (==, !=, <, <=, >, >=)."""
        name, rname, pyop, sym = COMPARISONS[op_name]
        out = self.dispatch(a, b, name, rname, node, always_reflect=True)
        if out is MISSING:
            names = _EQUALITY if op_name in ("Eq", "NotEq") else _ORDER + _EQUALITY
            if isinstance(a, _CONTAINERS) and isinstance(b, _CONTAINERS) and (
                    holds_python(a, names) or holds_python(b, names)):
                raise self.error(
                    f"comparing containers ({sym}) that hold objects whose class defines "
                    "its comparison in Python is not supported: compare the items",
                    node, UnsupportedSyntaxError)
            return pyop(a, b)
        if out is NotImplemented:
            if op_name in ("Eq", "NotEq"):  # Python's last resort: identity
                self.identity(a, b)
                return (a is b) == (op_name == "Eq")
            raise self.error(f"{sym} is not supported between instances of "
                             f"{type(a).__name__!r} and {type(b).__name__!r}", node,
                             UnsupportedSyntaxError)
        return out

    def identity(self, *values):
        """Note that the code compiled depends on which objects `values` are (see
        guards.Reads.by_identity), where one is an object of a class of the user's."""
        if any(identity_matters(v) for v in values):
            self.b.reads.by_identity = True

    def equal(self, a, b, node):
        """The truth of `a == b`, `a is b` first, as containers test their items."""
        self.identity(a, b)
        if a is b:
            return True
        if has_var(a) or has_var(b):
            raise self.error("comparing objects that hold arrays (==, in, a dict key): the "
                             "truth of an array comparison is ambiguous", node,
                             UnsupportedSyntaxError)
        return self.truth(self.compare("Eq", a, b, node), node)

    def contains(self, container, item, node):
        """`item in container` of compile-time values."""
        f = self.py_method(container, "__contains__")
        if f is not None:
            return self.truth(self.inline(f, [container, item], {}, node), node)
        if not isinstance(container, _CONTAINERS) and \
                self.py_method(container, "__iter__") is not None:
            items = list(self.protocol(container, "__iter__", node))
        elif isinstance(container, _CONTAINERS) and (
                holds_python(item, _EQUALITY) or holds_python(container, _EQUALITY)):
            items = list(container)  # (a dict's keys, a set's items)
        else:
            return item in container
        found = False
        for x in items:  # as CPython: `e is x or e == x`, the container's item first
            t = self.equal(x, item, node)
            if t is True:
                return True
            if has_var(t):
                found = t if found is False else ops.logical_or(found, t)
        return found

    def key_in(self, d, key, node):
        """The key of dict `d` equal to `key` (`key` itself when no comparison written in
        Python takes part), or MISSING."""
        if not (holds_python(key, _EQUALITY) or holds_python(list(d), _EQUALITY)):
            self.identity(key)  # (an object hashed by identity: which one it is counts)
            return key if key in d else MISSING
        for k in d:
            t = self.equal(k, key, node)  # (the dict's key first, as CPython)
            if has_var(t):
                raise self.error("a dict key compared with a value known only at run time "
                                 "is not supported", node, UnsupportedSyntaxError)
            if t:
                return k
        return MISSING

    # -- builtins -------------------------------------------------------------------------------

    def static_items(self, v, node):
        """The items of a compile-time iterable, its class's `__iter__` inlined where it is
        written in Python."""
        if self.py_method(v, "__iter__") is not None:
            return list(self.protocol(v, "__iter__", node))
        if not isinstance(v, (str, bytes, range, _CONTAINERS)) and any(
                self.py_method(v, n) is not None
                for n in ("__getitem__", "__len__", "__reversed__", "__next__")):
            raise self.error(f"iterating over a {type(v).__name__} whose class defines "
                             "__getitem__ or __next__ (not __iter__) in Python is not "
                             "supported", node, UnsupportedSyntaxError)
        return list(v)

    def ordered(self, items, kwargs, node):
        """sorted() of compile-time values, a key function and comparisons written in
        Python inlined (the sort is stable, as Python's)."""
        kwargs = dict(kwargs)
        key = kwargs.pop("key", None)
        reverse = kwargs.pop("reverse", False)
        if kwargs or has_var(reverse):
            raise self.error(f"sorted() got unexpected keyword arguments {sorted(kwargs)}",
                             node)
        keys = [x if key is None else self.apply(key, [x], {}, node) for x in items]
        if key is None and not holds_python(keys, _ORDER + _EQUALITY):
            return sorted(items, reverse=bool(reverse))

        def less(i, j):
            t = self.truth(self.compare("Lt", keys[i], keys[j], node), node)
            if has_var(t):
                raise self.error("sorted() whose comparisons are known only at run time is "
                                 "not supported", node, UnsupportedSyntaxError)
            return t

        order = functools.cmp_to_key(lambda i, j: -1 if less(i, j) else
                                     (1 if less(j, i) else 0))
        idx = sorted(range(len(items)), key=order, reverse=bool(reverse))
        return [items[i] for i in idx]

    def extreme(self, f, items, kwargs, node):
        """min()/max() of compile-time values with a key function or items whose class
        orders them in Python (`min(layers, key=lambda l: l.size)`): the key applied and
        the comparisons inlined, the first extreme item kept, as Python does."""
        kwargs = dict(kwargs)
        key = kwargs.pop("key", None)
        default = kwargs.pop("default", MISSING)
        if kwargs:
            raise self.error(f"{f.__name__}() got unexpected keyword arguments "
                             f"{sorted(kwargs)}", node)
        if not items:
            if default is not MISSING:
                return default
            raise self.error(f"{f.__name__}() of an empty sequence", node)
        op = "Lt" if f.__name__ == "min" else "Gt"
        best, best_key = None, None
        for i, item in enumerate(items):
            k = item if key is None else self.apply(key, [item], {}, node)
            if i == 0:
                best, best_key = item, k
                continue
            t = self.truth(self.compare(op, k, best_key, node), node)
            if has_var(t):
                raise self.error(f"{f.__name__}() whose comparisons are known only at run "
                                 "time, with a key function, is not supported", node,
                                 UnsupportedSyntaxError)
            if t:
                best, best_key = item, k
        return best
