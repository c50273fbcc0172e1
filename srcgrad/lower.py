"""Stage 2, lower: the function's AST -> IR (`Graph`), by abstract interpretation.

The lowerer walks the statements in order, keeping an environment from names to values.
A value is a `Var` (known only at run time), a Python constant, or a Python object the
code refers to (a module, a numpy function, another user function). Calling a numpy
spelling runs its adapter from `runtime.ops.numpy_api`; the adapter calls primitives, and
while lowering every primitive call lands in `Builder.stage`, which appends an equation
(or folds it when all inputs are constants). Calls to other user functions are inlined.
A statement it does not lower (a side effect, a call of a function with no source) runs as
written: one `python` equation holding the statement (srcgrad.verbatim).

Anything outside the supported subset raises an error that points at the user's line.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import functools
import importlib
import inspect
import math
import numbers
import operator
import types
from typing import Any

import numpy

from runtime import ops
from runtime.ops.core import Primitive
from runtime.ops.lists import LIST_APPEND, LIST_FROM, LIST_GET, LIST_POS, STACK_LIST
from runtime.ops import numpy_api
from runtime.ops.numpy_api import ATTRIBUTES, METHODS, UnsupportedArgument, lookup

from .errors import (RecursiveCallError, SrcgradError, UnknownFunctionError,
                     UnsupportedSyntaxError)
from .frontend import Source, lambda_as_def, parse_function
from .ir import (COND, FOR, SCALAR, WHILE, Block, Graph, Loc, StaticValueNeeded, Var, checked,
                 has_var)
from .staging import (INT, INT_VALUED, IS_NONE, LEN, Builder, as_array, dtype_class,
                      floating_dclass, holds_array, staging)
from .staging import known as staging_known
from .scopes import Path, scope_of, self_scope, unwrap
from . import pytree, verbatim
from .protocols import BINARY, MISSING as _MISSING, UNARY, Protocols, holds_python


__all__ = ["lower", "numpy_where_derivative"]

# Python's in-place operators of the containers the lowerer holds (see container_in_place)
_CONTAINER_IN_PLACE = {
    (list, ast.Add): operator.iadd, (list, ast.Mult): operator.imul,
    (dict, ast.BitOr): operator.ior,
    (set, ast.BitOr): operator.ior, (set, ast.BitAnd): operator.iand,
    (set, ast.BitXor): operator.ixor, (set, ast.Sub): operator.isub,
}
_OPSYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
          ast.MatMult: "@", ast.FloorDiv: "//", ast.Mod: "%", ast.BitOr: "|", ast.BitAnd: "&",
          ast.BitXor: "^"}


def _held(holder) -> list:
    """What a value holds that an in-place change of an array must reach: a list's, tuple's
    or dict's items, a nested function's default values, a partial's bound arguments
    (srcgrad rebinds names, and cannot rebind these)."""
    if isinstance(holder, dict):
        return list(holder.values())
    if isinstance(holder, (tuple, list)):
        return list(holder)
    if isinstance(holder, _LocalFunction):  # (and, once the function that made it has
        # returned, what it reads from there: no name of that scope can be rebound now)
        return [*holder.defaults, *holder.kw_defaults] + (
            list(holder.lowerer.env.values()) if holder.lowerer.finished else [])
    if isinstance(holder, _LocalPartial):
        return [holder.func, *holder.args, *holder.keywords.values()]
    if isinstance(holder, _BoundMethod):
        return [holder.obj]
    return []


def _all_held(holders):
    """Every value `holders` hold, at any depth (see `_held`)."""
    todo, seen = list(holders), set()
    while todo:
        h = todo.pop()
        if id(h) in seen:
            continue
        seen.add(id(h))
        items = _held(h)
        yield from items
        todo.extend(items)


def _contains(container, v) -> bool:
    return any(x is v for x in _all_held([container]))


def _holding(lowerer, v) -> "str | None":
    """What, in the scopes of `lowerer`, holds `v` where a rebinding cannot reach it (see
    `_held`), as an error says it, or None."""
    for lw in lowerer.scopes():
        for x in lw.env.values():
            if _contains(x, v):
                return "an item of a list, tuple or dict" if isinstance(
                    x, (tuple, list, dict)) else getattr(x, "held_as", "a value that holds it")
    return None


def _containers(v):
    if isinstance(v, (list, dict, tuple)):
        yield v
        for x in (v.values() if isinstance(v, dict) else v):
            yield from _containers(x)


# ---- values the lowerer handles besides Vars and constants ----------------------------------

class _BoundMethod:
    """`x.sum` before it is called: an array method of a run-time value."""

    held_as = "the array of a method taken from it (`s = a.sum`)"  # (see `_held`)

    def __init__(self, adapter, obj, name):
        self.adapter, self.obj, self.name = adapter, obj, name

    def __call__(self, *args, **kwargs):
        return self.adapter(self.obj, *args, **kwargs)


class _LocalFunction:
    """A `def` or `lambda` nested in the function being compiled; inlined where it is
    called. Its default values are those of where it is defined (as Python evaluates
    them); a lambda made in a comprehension reads the comprehension's names as they are
    when it ends (Python's late binding: `[lambda z: z ** k for k in ks]` all see the
    last k), the enclosing function's names as they are when it is called."""

    # how an error names it, and what it holds
    what = "a function defined in the function"
    held_as = ("a default value of a function defined in the function (or a value it "
               "reads from the function that made it, which has returned)")

    def __init__(self, node: ast.FunctionDef, lowerer: "Lowerer"):
        self.node, self.lowerer = node, lowerer
        self.__name__ = node.name
        a = node.args
        self.defaults = [lowerer.expr(d) for d in a.defaults]
        self.kw_defaults = [_MISSING if d is None else lowerer.expr(d) for d in a.kw_defaults]
        self.cells = list(lowerer.comprehension_scopes)  # (filled when each one ends)


class _Super:
    """`super()` (or `super(C, obj)`) in the function being compiled: the attribute read
    from it is found and guarded by `Lowerer.super_attr`."""

    what = "super()"  # (how an error names it)

    def __init__(self, cls, obj):
        self.cls, self.obj = cls, obj


class _LocalPartial:
    """`functools.partial(f, *args, **kwargs)` made in the function being compiled: a call
    of it is the call of `f` with the bound arguments first, lowered like a call of `f`
    (the bound values may be run-time arrays: they are the values they were when the
    partial was made, as Python binds them: an array changed in place after that is
    refused, see `_held`)."""

    # how an error names it, and what it holds
    what = "a functools.partial made in the function"
    held_as = "an argument bound by a functools.partial made in the function"

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.keywords = func, tuple(args), dict(kwargs)  # (as a partial's)
        self.__name__ = getattr(func, "__name__", "partial")


_MATH = {
    math.exp: ops.exp, math.log: ops.log, math.log1p: ops.log1p, math.expm1: ops.expm1,
    math.sqrt: ops.sqrt, math.sin: ops.sin, math.cos: ops.cos, math.tan: ops.tan,
    math.tanh: ops.tanh, math.sinh: ops.sinh, math.cosh: ops.cosh, math.asin: ops.arcsin,
    math.acos: ops.arccos, math.atan: ops.arctan, math.fabs: ops.absolute,
    math.pow: ops.power,
}

_BINOPS = {
    ast.Add: (ops.add, operator.add), ast.Sub: (ops.subtract, operator.sub),
    ast.Mult: (ops.multiply, operator.mul), ast.Div: (ops.divide, operator.truediv),
    ast.Pow: (ops.power, operator.pow), ast.MatMult: (ops.matmul, operator.matmul),
    ast.FloorDiv: (ops.floor_divide, operator.floordiv), ast.Mod: (ops.remainder, operator.mod),
    # numpy's bitwise operators: the logical ones on masks, (x > 0) & (y < 1), and bitwise
    # on integers, k & 1
    ast.BitAnd: (ops.bitwise_and, operator.and_), ast.BitOr: (ops.bitwise_or, operator.or_),
    ast.BitXor: (ops.bitwise_xor, operator.xor),
}

_CMPOPS = {
    ast.Lt: (ops.less, operator.lt), ast.LtE: (ops.less_equal, operator.le),
    ast.Gt: (ops.greater, operator.gt), ast.GtE: (ops.greater_equal, operator.ge),
    ast.Eq: (ops.equal, operator.eq), ast.NotEq: (ops.not_equal, operator.ne),
}

# (try, with, raise, assert and `del` of items run as written: srcgrad.verbatim)
_UNSUPPORTED_STMT = {
    ast.Global: "`global` declarations", ast.Nonlocal: "`nonlocal` declarations",
    ast.ClassDef: "class definitions", ast.AsyncFunctionDef: "async functions",
    ast.AsyncFor: "`async for`", ast.AsyncWith: "`async with`",
}
if hasattr(ast, "Match"):
    _UNSUPPORTED_STMT[ast.Match] = "`match` statements"

_UNSUPPORTED_EXPR = {
    ast.Lambda: "`lambda` expressions", ast.Yield: "`yield` (generators)",
    ast.YieldFrom: "`yield from` (generators)", ast.Await: "`await`",
    ast.SetComp: "set comprehensions",
    ast.NamedExpr: "assignment expressions (:=)", ast.Starred: "starred arguments (*args)",
    ast.JoinedStr: "f-strings", ast.Set: "set displays",
}

#: numpy functions whose first argument is a sequence of arrays (of any shapes), not one
#: array: a list there is not made an array
_SEQUENCES = frozenset(getattr(numpy, n) for n in (
    "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack",
    "select", "array", "block", "broadcast_arrays", "meshgrid") if hasattr(numpy, n))

def _of_numpy(f) -> bool:
    """A function of numpy's own (scipy's take tuples that are not arrays: cho_solve's
    (c, lower))."""
    return (getattr(f, "__module__", None) or "").split(".")[0] == "numpy"


#: numpy functions whose primitive is written as a Python operator (`np.multiply(a, b)`
#: as `a * b`), and np.asarray (written as its operand): given Python numbers only, the
#: generated code would compute in Python (see `Lowerer.numpy_operands`)
_PYTHON_OPERATORS = frozenset(
    [f for f, p in numpy_api.UFUNCS.items() if isinstance(f, numpy.ufunc) and
     not p.spell([f"a{k}" for k in range(f.nin)], {}, p.defaults).startswith("np.")] +
    [numpy.deg2rad, numpy.radians, numpy.rad2deg, numpy.degrees, numpy.asarray,
     numpy.asanyarray])

#: numpy's type for a Python number a numpy function of numbers gives, folded
_FOLDED = {float: numpy.float64, int: numpy.int64, bool: numpy.bool_}

_SIDE_EFFECTS = {builtins.print: "print()", builtins.input: "input()",
                 builtins.open: "open()", builtins.exec: "exec()", builtins.eval: "eval()"}


class _NotStatic(Exception):
    """A comprehension iterates over something known only at run time."""


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _EndIter(Exception):
    """`break` or `continue`: the rest of this loop iteration is not run."""


class _Undefined:
    """A name that is bound on some paths only (in one branch, or inside a loop)."""

    def __init__(self, name, why):
        self.name, self.why = name, why

    def message(self):
        return f"`{self.name}` may be undefined here: {self.why}"


class _Stale(_Undefined):
    """A view of an array that an item assignment changed: numpy would show the change
    through it, srcgrad's functional update cannot."""

    def message(self):
        return f"`{self.name}` {self.why}"


def _walk_local(stmts, loops=False):
    """AST nodes of `stmts`, not entering nested functions (nor loops unless `loops`)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)):
                continue
            if not loops and isinstance(child, (ast.For, ast.While)):
                yield child  # the loop itself, not its body
                continue
            stack.append(child)


def _escapes(node) -> bool:
    """Does this statement contain a return, or a break/continue of the enclosing loop?"""
    for n in _walk_local([node], loops=False):
        if isinstance(n, (ast.Break, ast.Continue)):
            return True
    for n in _walk_local([node], loops=True):
        if isinstance(n, ast.Return):
            return True
    return False


def _assigned(stmts) -> list:
    names = []
    for n in _walk_local(stmts, loops=True):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.For):
            targets = [n.target]
        for t in targets:
            for m in _target_names(t):
                if m not in names:
                    names.append(m)
    return names


def _own_targets(node) -> list:
    """The names a `for` loop binds to its items (none for a `while`)."""
    return _target_names(node.target) if isinstance(node, ast.For) else []


def _item_base(t):
    """`x` for a target `x[i]`, `x[i][j]`...; None when the base is not a name."""
    while isinstance(t, ast.Subscript):
        t = t.value
    return t.id if isinstance(t, ast.Name) else None


def _target_names(t) -> list:
    """Names an assignment to target `t` rebinds: `x[i] = v` rebinds x (srcgrad lowers
    it as `x = setitem(x, i, v)`), not the names in the index."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, ast.Subscript):
        base = _item_base(t)
        return [] if base is None else [base]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return []


def _grown_lists(stmts) -> list:
    """Names that `.append(...)` / `.extend(...)` is called on in these statements."""
    names = []
    for n in _walk_local(stmts, loops=True):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr in ("append", "extend") and isinstance(n.func.value, ast.Name):
            if n.func.value.id not in names:
                names.append(n.func.value.id)
    return names


def _phi_able(v) -> bool:
    """Can this value be merged at a branch's end or carried by a loop?"""
    return isinstance(v, (Var, bool, int, float, numpy.number, numpy.bool_, numpy.ndarray)) \
        or v is None


class _Plan:
    """How a runtime `for` loop iterates: range(start, stop, step), maybe reversed, and
    what the loop target is bound to at index i."""

    def __init__(self, start, stop, step, item, reverse=False, hint="i"):
        self.start, self.stop, self.step, self.item = start, stop, step, item
        self.reverse, self.hint = reverse, hint


# ---- the lowerer ------------------------------------------------------------------------------

class Lowerer(Protocols):
    """Abstract interpreter of one function body (inlined callees get their own)."""

    def __init__(self, src: Source, builder: Builder, env: dict, stack: tuple,
                 outer: "Lowerer | None" = None):
        self.src = src
        self.b = builder
        self.env = env
        self.stack = stack  # code objects / defs on the inlining stack (recursion check)
        self.outer = outer
        self.node = src.tree
        # how many regions (branches, loop bodies) were open when this body started: an
        # in-place update inside one of its own regions cannot rebind a caller's names
        self.depth0 = len(getattr(builder, "_outer", []))
        self.probing = False  # see static_comprehension
        # the values of a tuple assignment not yet assigned (`y[0], y[1] = y[1], y[0]`:
        # while y[0] is written, the view y[0] taken for y[1] is held here): (list, start)
        # pairs, the list's items from start on (a write may refresh them: `_refreshed`)
        self.pending: tuple = ()
        self.finished = False  # an inlined function's body has run (it returned)
        # the name of `self` where the function is a bound method (its signature no longer
        # names it: see `lower`)
        self.self_name = None
        self.comprehension_scopes: list = []  # of the comprehensions being run (own_names)
        # ids of the calls of numpy's own Python functions that run as written (see `stmt`)
        self.as_written: set = set()

    # -- errors -----------------------------------------------------------------------------

    def error(self, msg, node=None, cls=SrcgradError):
        node = node or self.node
        lineno = getattr(node, "lineno", self.src.firstlineno)
        col = getattr(node, "col_offset", 0)
        return cls(msg, self.src.filename, lineno, col, self.src.line(lineno))

    def unsupported(self, what, node):
        return self.error(f"{what} not supported by srcgrad in a differentiated function",
                          node, UnsupportedSyntaxError)

    # -- statements ---------------------------------------------------------------------------

    def run_body(self, body):
        body = list(body)
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.If) or (isinstance(stmt, (ast.For, ast.While)) and any(
                    isinstance(n, ast.Return) for n in _walk_local(stmt.body, loops=True))):
                self.stmt(stmt, body[i + 1:])
                return  # the statement lowered the rest of the block (its continuation)
            self.stmt(stmt)

    def stmt(self, node, cont=None):
        self.node = node
        text = self.src.line(node.lineno).strip()
        self.b.loc = Loc(self.src.filename, node.lineno, node.col_offset, text)
        self.b.hint = "t"
        try:
            why = verbatim.reason(self, node)
            while why is not None:
                # calls srcgrad cannot lower are made before the statement, outermost
                # first (`rng(seed).normal(...)`: the inner call, then the outer one)
                rest = verbatim.hoist(self, node)
                if rest is None:
                    verbatim.stage(self, node, why)
                    return
                node = rest
                why = verbatim.reason(self, node)
            method = getattr(self, "stmt_" + type(node).__name__, None)
            if method is None:
                what = _UNSUPPORTED_STMT.get(type(node), f"`{type(node).__name__}` statements")
                raise self.unsupported(what + " are" if what.endswith("s") and not
                                       what.endswith("(generators)") else what + " is", node)
            numpy_calls = self._numpy_calls(node) if isinstance(
                node, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Return)) else []
            if not numpy_calls:
                method(node) if cont is None else method(node, cont)
                return
            # numpy's own Python code (np.hanning(n)) is compiled from numpy's source where
            # srcgrad can (its shapes are then known, its derivative flows); where it cannot
            # (np.triu_indices), the statement is made again with the call run as written,
            # the same computation: refused, at this line, if a derivative flows through it
            b = self.b
            depth, eqns, at = len(getattr(b, "_outer", [])), b.eqns, len(b.eqns)
            try:
                method(node)
            except SrcgradError:
                while len(getattr(b, "_outer", [])) > depth:
                    b.pop_block()
                if b.eqns is not eqns:
                    raise
                del eqns[at:]
                self.as_written.update(id(n) for n in numpy_calls)
                self.stmt(node, cont)
        except (SrcgradError, _Return, _EndIter, verbatim.Raised):
            raise
        except StaticValueNeeded as e:
            raise self.error(f"srcgrad needs {e.what} at compile time, but it is only known "
                             "when the function runs", self.node) from None
        except (UnsupportedArgument, TypeError, ValueError, IndexError, KeyError,
                AttributeError, ZeroDivisionError) as e:
            raise self.error(f"{type(e).__name__}: {e}", self.node) from None

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant):
            return  # a docstring or a bare constant
        if isinstance(v, (ast.Yield, ast.YieldFrom, ast.Await)):
            self.expr(v)  # refused with the construct's own name
        if isinstance(v, ast.Call):
            fn = v.func
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
                    fn.attr in ("append", "extend") and fn.value.id in self.env and \
                    isinstance(self.env[fn.value.id], Var) and \
                    self.env[fn.value.id].kind == "list":
                lst = self.env[fn.value.id]
                if v.keywords or len(v.args) != 1:
                    raise self.unsupported(f"{fn.attr}() with these arguments is", v)
                items = [self.expr(v.args[0])]
                if fn.attr == "extend":
                    items = list(items[0]) if isinstance(items[0], (list, tuple)) else None
                    if items is None:
                        raise self.unsupported("extend() with a run-time sequence is", v)
                self.b.hint = fn.value.id
                for item in items:
                    pos = self.b.stage(LEN, [lst], {})
                    lst = self.b.stage(LIST_APPEND, [lst, item, pos], {})
                self.env[fn.value.id] = lst
                return
            if self.ufunc_at(v, node):
                return
            self.call(self.expr(v.func), v)  # an op or a function with source: its
            return  # value is unused
        self.expr(v)

    def stmt_Delete(self, node):
        for t in node.targets:  # names only: `del d[k]`, `del obj.a` run as written
            self.load(t.id, t)
            self.env[t.id] = _Undefined(t.id, "it was deleted with `del`")

    def stmt_Import(self, node):
        for alias in node.names:  # a module is a constant, like a module-level import's
            if alias.asname:
                self.env[alias.asname] = importlib.import_module(alias.name)
            else:
                top = alias.name.split(".")[0]
                importlib.import_module(alias.name)
                self.env[top] = importlib.import_module(top)

    def stmt_ImportFrom(self, node):
        if node.level:
            raise self.unsupported("a relative import inside the function is", node)
        mod = importlib.import_module(node.module)
        for alias in node.names:
            if alias.name == "*":
                raise self.unsupported("`from ... import *` is", node)
            try:
                value = getattr(mod, alias.name)
            except AttributeError:
                value = importlib.import_module(f"{node.module}.{alias.name}")
            self.env[alias.asname or alias.name] = value

    # -- what a statement that runs as written needs (srcgrad.verbatim) ---------------------

    MISSING = _MISSING
    NOPE = object()  # peek: not known without running code

    class RunTimeAttr:
        """An attribute of a value known only at run time (`rng.normal`)."""

        def __init__(self, var, name):
            self.var, self.name = var, name

    def resolve_quiet(self, name):
        """(value of `name`, whether it is a local of this or an enclosing body), without
        recording the read; (MISSING, False) if it is not defined."""
        low = self
        while low is not None:
            if name in low.env:
                return low.env[name], True
            low = low.outer
        try:
            return self.src.lookup(name), False
        except KeyError:
            return _MISSING, False

    def is_undefined(self, v) -> bool:
        return isinstance(v, _Undefined)

    def is_opaque(self, v) -> bool:
        return isinstance(v, Var) and v.id in self.b.opaque

    def same_object(self, new, old):
        """`new` (a loop's carry, a branch's result) may be the Python object that `old`, a
        value a statement run as written made, is: it is one too (its methods run as
        written, `a.add(v)` is never numpy's add of an array `a`)."""
        if self.is_opaque(old):
            self.b.opaque.add(new.id)
            new.dclass = ("object", new.id)
            if old.id in self.b.instances:
                self.b.instances[new.id] = self.b.instances[old.id]

    def peek(self, node):
        """The value of a name or attribute chain, read without recording it; NOPE when
        it is not known without running code."""
        if isinstance(node, ast.Name):
            v, _ = self.resolve_quiet(node.id)
            return self.NOPE if v is _MISSING or isinstance(v, _Undefined) else v
        if isinstance(node, ast.Attribute):
            base = self.peek(node.value)
            if base is self.NOPE or isinstance(base, self.RunTimeAttr):
                return self.NOPE
            if isinstance(base, Var):
                prim = ops.PRIMITIVES.get(node.attr)
                known = node.attr in ATTRIBUTES or node.attr in METHODS or (
                    prim is not None and not prim.meta) or (
                    base.kind == "list" and node.attr in ("append", "extend"))
                return self.RunTimeAttr(base, node.attr) if base.id in self.b.opaque or \
                    not known else self.NOPE
            if isinstance(base, (numpy.ndarray, numpy.generic, float, int)) and (
                    node.attr in ATTRIBUTES or node.attr in METHODS):
                return self.NOPE  # a constant's array method: an op (see expr_Attribute)
            try:
                return getattr(base, node.attr)
            except Exception:
                return self.NOPE
        return self.NOPE

    def unknown_call(self, call) -> bool:
        """Would this call be refused as unknown, or change a container from outside the
        function (`self.history.append(v)`, which must happen at run time)?"""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in verbatim.MUTATING_METHODS:
            root, steps = verbatim.root_of(func.value)
            v, local = self.resolve_quiet(root) if root else (_MISSING, False)
            receiver = self.peek(func.value)
            if v is not _MISSING and not isinstance(v, Var) and \
                    not isinstance(receiver, (types.ModuleType, type)) and \
                    receiver is not self.NOPE and \
                    (not local or steps or self.b.reads.path_of(v) is not None):
                return True
        if id(call) in self.as_written:
            return True  # (numpy's own code that srcgrad could not compile: see `stmt`)
        f = self.peek(func)
        if f is functools.partial:  # a partial of what srcgrad compiles, or run as written
            first = self.peek(call.args[0]) if call.args and \
                not isinstance(call.args[0], ast.Starred) else self.NOPE
            return first is not self.NOPE and (
                isinstance(first, type) or self.unknown_callee(first))
        return self.unknown_callee(f)

    def _numpy_calls(self, node) -> list:
        """The calls in statement `node` of numpy's own Python functions, which srcgrad
        compiles from numpy's source (see `stmt`)."""
        return [n for n in ast.walk(node) if isinstance(n, ast.Call) and
                id(n) not in self.as_written and _numpy_python_function(self.peek(n.func))]

    def unknown_callee(self, f) -> bool:
        """Would calling `f` (from `peek`) be refused as an unknown function?"""
        if f is self.NOPE:
            return False
        if isinstance(f, (self.RunTimeAttr, Var)):
            return isinstance(f, self.RunTimeAttr) or f.id in self.b.opaque
        if getattr(f, "__self__", None) is numpy.add and getattr(f, "__name__", "") == "at":
            return False  # np.add.at into an array of the function's own (`ufunc_at`)
        return not _lowerable(f)

    def stmt_Pass(self, node):
        pass

    def stmt_Return(self, node):
        self.b.hint = "out" if len(self.stack) == 1 else self.src.tree.name
        if "<returned>" in self.env and getattr(self, "in_loop", False):
            value = None if node.value is None else self.expr(node.value)
            if not _phi_able(value) or value is None:
                raise self.unsupported("returning a tuple or None from inside a loop is",
                                       node)
            self.env["<return>"] = value
            self.env["<returned>"] = True
            self.env["<break>"] = True
            raise _EndIter()
        raise _Return(None if node.value is None else self.expr(node.value))

    def stmt_Assign(self, node):
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name):
            self.b.hint = target.id
        value = self.expr(node.value)
        for t in node.targets:
            self.assign(t, value)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return
        if isinstance(node.target, ast.Name):
            self.b.hint = node.target.id
        self.assign(node.target, self.expr(node.value))

    def static_item(self, t):
        """(container, key) for `d[k] = v` into a dict or list the function made at
        compile time (`grads = {}`), with a constant key, outside run-time branches and
        loops: an item assignment done when compiling. None otherwise."""
        if not isinstance(t.value, ast.Name) or len(getattr(self.b, "_outer", [])):
            return None
        root, local = self.resolve_quiet(t.value.id)
        if not local or type(root) not in (dict, list) or id(root) in self.b.frozen or \
                self.b.reads.path_of(root) is not None:
            return None
        key = self.index(t.slice)
        if has_var(key) or (type(root) is list and not isinstance(key, int)):
            return None
        if type(root) is dict:
            try:
                hash(key)
            except TypeError:
                return None
        return root, key

    def stmt_AugAssign(self, node):
        found = self.static_item(node.target) if isinstance(node.target, ast.Subscript) \
            else None
        if found is not None:
            container, key = found
            cur = container[key]
            value = self.binop(node.op, cur, self.expr(node.value), node)
            if isinstance(cur, Var) and cur.kind == "array" and cur.sclass != SCALAR:
                self.item_in_place(node, cur)
            container[key] = value
            return
        if isinstance(node.target, ast.Subscript):
            # x[i] += v is x[i] = x[i] + v (the index is evaluated once); a repeated integer
            # index keeps numpy's last write only, which setitem refuses at run time
            name, root, idxs = self.item_target(node.target)
            views = self.item_views(root, idxs)
            self.b.hint = name
            cur = ops.getitem(views[-1], idxs[-1])
            value = self.binop(node.op, cur, self.expr(node.value), node)
            self.assign_item(node.target, value, node, (name, root, idxs, views))
            return
        if not isinstance(node.target, ast.Name):
            raise self.unsupported("augmented assignment to an attribute is", node)
        name = node.target.id
        self.b.hint = name
        cur = self.load(name, node.target)
        rhs = self.expr(node.value)
        inplace = self.py_method(cur, "__i" + BINARY[type(node.op).__name__][0][2:]) \
            if type(node.op).__name__ in BINARY else None
        if inplace is not None:  # an object's own `__iadd__`, inlined (Python's first try)
            value = self.inline(inplace, [cur, rhs], {}, node)
            if value is NotImplemented:
                value = self.binop(node.op, cur, rhs, node)
            self.env[name] = value
            return
        if self.container_in_place(node, name, cur, rhs):
            return
        value = self.binop(node.op, cur, rhs, node)
        if isinstance(cur, Var) and cur.kind == "array" and cur.sclass != SCALAR:
            # numpy stores the result into the array: in its dtype (float32 stays float32;
            # a float into an int array is numpy's error)
            result, value = value, ops.cast_into(value, cur)
            if isinstance(value, Var) and isinstance(result, Var):  # (the result itself, or
                self.b.made_by[value.id] = self.b.made_by.get(result.id)  # a new array)
            self.update_in_place(name, cur, value, node)
        elif isinstance(cur, numpy.ndarray):  # an array srcgrad folded is changed in place
            text = ast.unparse(node).split("=", 1)[0].strip() + "="  # as numpy's is
            why = "an array read from outside the function" \
                if self.b.reads.path_of(cur) is not None else _holding(self, cur)
            if why is not None:
                raise self.error(f"`{text}` updates the array in place, and here `{name}` "
                                 f"may share its memory with {why}, which numpy would "
                                 f"change too; write `{name} = {name} "
                                 f"{_OPSYM.get(type(node.op), '+')} ...` to make a new array",
                                 node, UnsupportedSyntaxError)
            self.rebind_changed(cur, ops.cast_into(value, cur), name, f"`{text} ...`", node)
        else:  # Python numbers and numpy scalars are immutable: `+=` rebinds the name
            self.assign(node.target, value)

    def container_in_place(self, node, name, cur, rhs) -> bool:
        """`L += [v]`, `L *= 2`, `d |= {...}`, `s |= {...}` on a list, dict or set the
        function made: Python changes the object itself (every name bound to it sees the
        change), done here on the object the lowerer holds. False for other values."""
        op = _CONTAINER_IN_PLACE.get((type(cur), type(node.op)))
        if op is None:
            return False
        text = ast.unparse(node).split("=", 1)[0].strip() + "="
        why = None
        if id(cur) in self.b.frozen:
            why = "it is the caller's argument, which Python would change too"
        elif self.b.reads.path_of(cur) is not None:
            why = "it is read from outside the function, which Python would change too"
        elif isinstance(rhs, Var):
            why = "with a value known only at run time"
        elif len(getattr(self.b, "_outer", [])):
            return False  # (in a run-time branch or loop: a new one, bound to the name)
        if why is not None:
            raise self.error(f"`{text}` changes the {type(cur).__name__} `{name}` in place, "
                             f"and {why}: not supported; build a new one "
                             f"(`{name} = {name} {_OPSYM[type(node.op)]} ...`)",
                             node, UnsupportedSyntaxError)
        try:
            value = op(cur, rhs)
        except TypeError as err:
            raise self.error(f"TypeError: {err}", node) from None
        self.env[name] = value
        return True

    def ufunc_at(self, call, node) -> bool:
        """`np.add.at(a, idx, v)` into the function's own array `a`: v added at idx, a
        repeated index adding again. Lowered as `a = a + scatter_add(v, idx, a.shape)` (in
        a's dtype), rebound like `a += ...`. False for any other call."""
        fn = call.func
        if not (isinstance(fn, ast.Attribute) and fn.attr == "at" and len(call.args) == 3
                and not call.keywords and isinstance(call.args[0], ast.Name)):
            return False
        cur = self.env.get(call.args[0].id)
        if self.peek(fn.value) is not numpy.add or \
                not (isinstance(cur, Var) and cur.kind == "array"):
            return False  # (peeked: nothing is staged for another call's receiver)
        self.expr(fn.value)  # (read as any name the function reads: guarded)
        name = call.args[0].id
        cur = self.load(name, call.args[0])
        idx, v = self.expr(call.args[1]), self.expr(call.args[2])
        if isinstance(idx, list) and not has_var(idx):
            idx = numpy.asarray(idx)  # np.add.at(a, [0, 0, 2], v): an index array
        self.b.hint = name
        v = ops.broadcast_to(v, ops.shape(ops.getitem(cur, idx)))  # (a number into each slot)
        new = ops.convert_like(ops.add(cur, ops.scatter_add(v, idx, ops.shape(cur))), cur)
        self.update_in_place(name, cur, new, node, f"np.add.at({name}, ...)")
        return True

    def update_in_place(self, name, cur, value, node, text=None):
        """`a += b` on an array updates it in place in numpy: every name bound to the same
        array sees the new value. Names are rebound together; where the array may be
        shared with what srcgrad cannot rebind (the caller's argument, a module array, a
        view of another array, an item of a container), the statement is refused."""
        why = self.b.shared_why(cur) or _holding(self, cur) or self._other_name(name, cur)
        op = text or ast.unparse(node).split("=", 1)[0].strip() + "="
        if why is not None:
            instead = f"into `{name}.copy()`" if text else \
                f"`{name} = {name} {_OPSYM.get(type(node.op), '+')} ...`"
            raise self.error(f"`{op}` updates the array in place, and here `{name}` may share "
                             f"its memory with {why}, which numpy would change too; write "
                             f"{instead} to make a new array", node, UnsupportedSyntaxError)
        self.refuse_caller_update(cur, name, op if text else f"{op} ...", node)
        if isinstance(value, Var) and self.b.eqns and self.b.eqns[-1].outs and \
                self.b.eqns[-1].outs[0] is value:
            value.hint = name
            self.b.named.add(value.id)
        for lw in self.scopes():
            for n, v in list(lw.env.items()):
                if v is cur:
                    lw.env[n] = value

    def item_in_place(self, node, cur):
        """`d[k] += v` on an array item updates that array in place: refuse when another
        name, another item or the caller may hold it too (see update_in_place)."""
        why = self.b.shared_why(cur)
        if why is None:
            seen, holders = set(), []

            def visit(v, where):
                if isinstance(v, Var) and v.id in self.b.sharing(cur):
                    holders.append(where)
                elif isinstance(v, (list, tuple, dict)) and id(v) not in seen:
                    seen.add(id(v))
                    for k, x in (v.items() if isinstance(v, dict) else enumerate(v)):
                        visit(x, f"{where}[{k!r}]")
                elif isinstance(v, (_LocalFunction, _LocalPartial, _BoundMethod)) and \
                        id(v) not in seen:
                    seen.add(id(v))
                    for x in _held(v):
                        visit(x, f"{v.held_as} ({where})")

            for lw in self.scopes():
                for n, v in lw.env.items():
                    if not n.startswith("<"):
                        visit(v, f"`{n}`")
            if len(holders) > 1:
                why = " and ".join(holders[:2]) + " (the same array)"
        if why is not None:
            target = ast.unparse(node.target)
            raise self.error(f"`{target} {_OPSYM.get(type(node.op), '+')}=` updates the array "
                             f"in place, and here it may share its memory with {why}, which "
                             f"numpy would change too; write `{target} = {target} "
                             f"{_OPSYM.get(type(node.op), '+')} ...` to make a new array", node,
                             UnsupportedSyntaxError)

    def _other_name(self, name, cur) -> "str | None":
        """Another name bound to `cur`, or to a value that may share its memory (a view of
        it, a branch result that may be it): numpy's `cur += ...` changes that one too if
        `cur` is an array, and not if it is a number or numpy scalar (immutable), which
        srcgrad cannot tell apart at compile time."""
        related = self.b.sharing(cur)
        for lw in self.scopes():
            for n, v in lw.env.items():
                if n.startswith("<") or (lw is self and n == name):
                    continue
                for item in (v if isinstance(v, (tuple, list)) else
                             v.values() if isinstance(v, dict) else (v,)):
                    if isinstance(item, Var) and item.id in related:
                        how = "bound to the same value" if item is cur else \
                            "made by a statement that runs as written, which may hold " \
                            "it" if self.is_opaque(item) else \
                            "which may be a view of it, or be it"
                        return f"`{n}` ({how}; a number or numpy scalar would not be shared)"
        return None

    def item_target(self, t):
        """An item-assignment target `x[i]`, `x[a][b]`...: the name x, its value, and the
        indices (each evaluated once, outermost first)."""
        idxs = []
        while isinstance(t, ast.Subscript):
            idxs.append(t.slice)
            t = t.value
        if not isinstance(t, ast.Name):
            raise self.unsupported("assignment into an item of an attribute, a call or an "
                                   "expression is", t)
        root = self.load(t.id, t)
        if isinstance(root, (list, dict, tuple)) or (isinstance(root, Var) and
                                                     root.kind == "list"):
            what = "list" if isinstance(root, Var) else type(root).__name__
            raise self.error(f"assignment into an item of a {what} is not supported (only "
                             "into arrays); build a new list, or preallocate an array with "
                             "np.zeros(...) and write into that", t, UnsupportedSyntaxError)
        if not (isinstance(root, Var) and root.kind == "array") and \
                not isinstance(root, numpy.ndarray):
            raise self.error(f"assignment into an item of a {type(root).__name__}: only "
                             "arrays are supported", t, UnsupportedSyntaxError)
        idxs = [self.index(i) for i in reversed(idxs)]
        for a in idxs[:-1]:
            if not ops.is_basic_index(a):
                raise self.error("`x[a][b] = v` with an array or mask index `a` writes into "
                                 "a copy of x[a], and numpy leaves x unchanged; write "
                                 "`x[a, b] = v`", t, UnsupportedSyntaxError)
        return t.id, root, idxs

    @staticmethod
    def item_views(root, idxs):
        """x, x[a], x[a][b]... down to the array the last index writes into."""
        views = [root]
        for a in idxs[:-1]:
            views.append(ops.getitem(views[-1], a))
        return views

    def assign_item(self, target, value, node, found=None):
        """`x[idx] = v` writes into x in place in numpy. srcgrad lowers it as
        `x = setitem(x, idx, v)`, a new array, and rebinds every name bound to x, so that
        later reads see the new value. Where x may share its memory with what srcgrad
        cannot rebind (the caller's argument, a module array, a view of another array), it
        is refused; a view of x taken earlier becomes unreadable (numpy would show the
        write through it)."""
        name, root, idxs, views = found if found is not None else (
            self.item_target(target) + (None,))
        if views is None:
            views = self.item_views(root, idxs)
        text = ast.unparse(target)
        why = None
        if isinstance(root, numpy.ndarray):
            if self.b.reads.path_of(root) is not None:
                why = "an array read from outside the function"
        else:
            why = self.b.shared_why(root)
        if why is None:
            why = _holding(self, root)
        if why is not None:
            raise self.error(f"writing into `{name}` in place (`{text} = ...`) is not "
                             f"supported here: `{name}` may share its memory with {why}, "
                             f"which numpy would change too; write `{name} = {name}.copy()` "
                             "first to make an array of the function's own", node,
                             UnsupportedSyntaxError)
        self.refuse_caller_update(root, name, f"{text} = ...", node)
        self.b.hint = name
        new = value
        for view, a in zip(reversed(views), reversed(idxs)):
            new = ops.setitem(view, a, new)
        if isinstance(new, Var):
            new.hint = name
            self.b.named.add(new.id)
        self.rebind_changed(root, new, name, f"`{text} = ...`", node)

    def rebind_changed(self, root, new, name, text, node, views=True):
        """After `text` changed array `root` (bound to `name`) in place, making `new`:
        every name bound to root is bound to `new`; with `views`, a name bound to what
        may be a view of root (or an array root is a view of) becomes unreadable, since
        numpy would show the change through it."""
        # (a value that may be root itself at run time: a branch's, a loop's or max()'s
        # result and the values it may be, see Builder.link)
        related = self.b.sharing(root) if isinstance(root, Var) else set()

        def may_show(w):
            return self.b.may_view(w, root) or (isinstance(w, Var) and w.id in related)

        for lw in self.scopes():
            for n, v in list(lw.env.items()):
                if v is root:
                    lw.env[n] = new
                elif views and v is not new and isinstance(v, (Var, numpy.ndarray)) and \
                        may_show(v):
                    lw.env[n] = self._stale_view(n, name, text, node,
                                                 not self.b.may_view(v, root))
        if views:
            # a view of root a tuple assignment is still to assign is read again from the
            # new array, as numpy's view would show it (`_refreshed`)
            for parts, start in self.pending:
                for j in range(start, len(parts)):
                    w = parts[j]
                    if isinstance(w, Var) and w is not new and may_show(w):
                        parts[j] = self._refreshed(w, root, new)
            # a view held where no name can be made unreadable: refused (an element is a
            # number, no view)
            held = [p[s:] for p, s in self.pending] + [
                v for lw in self.scopes() for v in lw.env.values()
                if not isinstance(v, (Var, numpy.ndarray))]
            for w in _all_held(held):
                if isinstance(w, (Var, numpy.ndarray)) and w is not root and w is not new \
                        and getattr(w, "sclass", None) != SCALAR and may_show(w):
                    raise self.error(
                        f"{text} writes into `{name}` while a view of it may be held in a "
                        "tuple, list or dict (`pair = (y[0], y[1])`), a partial or a "
                        "default, or be assigned after it by the same statement: numpy "
                        "would show the write through that view, srcgrad cannot; take "
                        "copies first (`y[1].copy()`)", node, UnsupportedSyntaxError)

    def _refreshed(self, w, root, new):
        """`w`, taken as `root[idx]` before `root` was written (making `new`), as numpy
        shows it now: a view reads the write (`new[idx]`), an element, a copy, does not.
        With integer indexes only, which it is depends on root's dimensions: chosen when
        the code runs (`where(root.ndim > len(idx), ...)`) where they are not known. `w`
        itself where it was not made so (the write is then refused, see `rebind_changed`)."""
        e = next((e for e in reversed(self.b.eqns) if e.outs and e.outs[0] is w), None)
        if e is None or e.prim is not ops.getitem or e.ins[0] is not root or \
                not ops.is_basic_index(e.ins[1] if not isinstance(e.ins[1], Var) else 0):
            return w
        idx = e.ins[1]
        items = idx if isinstance(idx, tuple) else (idx,)
        if isinstance(idx, Var) and not ((idx.kind == "meta" or idx.sclass == SCALAR) and
                                         idx.dclass[0] in ("int", "i", "u")):
            return w  # (a run-time index of unknown kind: an array, a tuple)
        fresh = ops.getitem(new, idx)
        if not all(isinstance(i, (int, numpy.integer, Var)) for i in items):
            return fresh  # a slice, None or ...: always a view
        view = ops.greater(ops.ndim(root), len(items))
        if not isinstance(view, Var):
            return fresh if view else w
        return ops.where(view, fresh, w)

    def stale_folded(self, array, name, text, node):
        """After `text` changed what may be a view of `array`, an array srcgrad folded when
        compiling: a name bound to an array folded from the same memory becomes
        unreadable (what became of its values is known only at run time)."""
        for lw in self.scopes():
            for n, v in list(lw.env.items()):
                if isinstance(v, numpy.ndarray) and numpy.may_share_memory(v, array):
                    lw.env[n] = self._stale_view(n, name, text, node)

    @staticmethod
    def _stale_view(n, name, text, node, same=False):
        how = f"may be `{name}` itself (one is a branch's, a loop's or max()'s result, " \
            "the other a value it may be)" if same else f"may be a view of `{name}`"
        return _Stale(n, f"{how}, which {text} changed (line "
                      f"{getattr(node, 'lineno', None)}): numpy would show the change "
                      f"through `{n}`, srcgrad cannot; take a copy (`{n} = ....copy()`) or "
                      f"read `{name}` again")

    def refuse_caller_update(self, root, name, text, node):
        """An in-place update, inside a branch or loop of an inlined function, of an array
        that a caller's (or an enclosing function's) names are bound to: the region's
        result cannot be handed back to those names."""
        if len(getattr(self.b, "_outer", [])) <= self.depth0 or not isinstance(root, Var):
            return
        for lw in self.scopes()[1:]:
            if any(v is root or (isinstance(v, Var) and self.b.may_view(v, root))
                   for v in lw.env.values()):
                raise self.error(f"updating `{name}` in place (`{text}`) inside a branch or "
                                 "loop of a called function is not supported when the "
                                 "array belongs to its caller; return the new array and "
                                 "rebind it in the caller", node, UnsupportedSyntaxError)

    def scopes(self):
        """This lowerer and those whose names it can reach: enclosing defs and callers."""
        lw, out = self, []
        while lw is not None and lw not in out:
            out.append(lw)
            lw = lw.outer or getattr(lw, "caller", None)
        return out

    def stmt_FunctionDef(self, node):
        if node.decorator_list:
            raise self.unsupported("decorators on nested functions are", node)
        self.env[node.name] = _LocalFunction(node, self)

    def expr_Lambda(self, node):
        return _LocalFunction(lambda_as_def(node), self)

    def stmt_If(self, node, cont=()):
        test = self.truth(self.expr(node.test), node.test)
        if not has_var(test):
            self.run_body(list(node.body if test else node.orelse) + list(cont))
            return
        escapes = _escapes(node)
        tail = list(cont) if escapes else []
        self.runtime_lists(list(node.body) + list(node.orelse) + tail)
        self.node = node
        self.branch(test, lambda: self.run_body(list(node.body) + tail),
                    lambda: self.run_body(list(node.orelse) + tail), node)
        if not escapes:
            self.run_body(cont)

    def branch(self, test, then_fn, else_fn, node):
        """Lower both sides of a run-time branch and merge them with a `cond` equation."""
        loc = self.b.loc
        results = []
        for fn in (then_fn, else_fn):
            saved = self.env
            self.env = dict(saved)
            self.b.push_block()
            kind, value = "fall", None
            try:
                fn()
            except _Return as r:
                kind, value = "return", r.value
            except _EndIter:
                kind = "end"
            eqns = self.b.pop_block()
            results.append((eqns, self.env, kind, value))
            self.env = saved
        (te, tenv, tk, tv), (ee, eenv, ek, ev) = results
        self.b.loc = loc
        if (tk == "return") != (ek == "return"):
            raise self.error("every path through this `if` must return a value (srcgrad "
                             "needs both branches to end the same way)", node,
                             UnsupportedSyntaxError)
        if tk == "return":
            outs, tvals, evals = self._phis([("return", tv, ev)], node)
            self.b.structured(COND, [test], outs, {"then": Block(te, tvals),
                                                   "else": Block(ee, evals)})
            raise _Return(self._rebuild(tv, outs))
        merged = {}
        triples = []
        for name in list(dict.fromkeys(list(tenv) + list(eenv))):
            a, b = tenv.get(name, _MISSING), eenv.get(name, _MISSING)
            if a is b:
                merged[name] = a
            elif a is _MISSING or b is _MISSING or isinstance(a, _Undefined) or \
                    isinstance(b, _Undefined):
                merged[name] = _Undefined(name, "it is assigned in only one branch of an "
                                          "`if` on a run-time value")
            elif self._mergeable(a, b):
                triples.append((name, a, b))
            else:
                merged[name] = _Undefined(name, "its two branches give it values of "
                                          "different kinds")
        outs, tvals, evals = self._phis(triples, node)
        if outs or te or ee:
            self.b.structured(COND, [test], outs, {"then": Block(te, tvals),
                                                   "else": Block(ee, evals)})
        k = 0
        for name, a, b in triples:
            n = len(a) if isinstance(a, tuple) else 1
            merged[name] = self._rebuild(a, outs[k:k + n])
            k += n
        self.env.update(merged)
        if "end" in (tk, ek):
            raise _EndIter()

    def runtime_lists(self, stmts):
        """Python lists grown by `stmts` (a run-time branch or loop body) become list
        values, since how many items they get is known only at run time."""
        for name in _grown_lists(stmts):
            v = self.env.get(name)
            if isinstance(v, list):
                self.b.hint = name
                self.env[name] = self.b.stage(LIST_FROM, list(v), {})

    def _mergeable(self, a, b):
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(_phi_able(x) and _phi_able(y) for x, y in zip(a, b))
        return _phi_able(a) and _phi_able(b) and not (a is None and b is None)

    def _phis(self, triples, node):
        outs, tvals, evals = [], [], []
        for name, a, b in triples:
            pa = a if isinstance(a, tuple) else (a,)
            pb = b if isinstance(b, tuple) else (b,)
            if len(pa) != len(pb):
                raise self.error(f"the branches give {name} different numbers of values",
                                 node, UnsupportedSyntaxError)
            for x, y in zip(pa, pb):
                arrays = any(isinstance(v, Var) and v.kind == "array" for v in (x, y))
                hint = name if name != "return" else "out"
                out = Var(hint, "array" if arrays or not any(isinstance(v, Var) for v in (x, y))
                          else "meta")
                if isinstance(x, Var) and isinstance(y, Var) and x.sclass == y.sclass:
                    out.sclass = x.sclass
                if isinstance(x, Var) and isinstance(y, Var) and x.dclass == y.dclass:
                    out.dclass = x.dclass
                elif all(isinstance(v, Var) and v.kind == "array" and
                         floating_dclass(v.dclass) for v in (x, y)):
                    out.dclass = ("f", out.id)  # (floating either way, of a width not known)
                self.b.named.add(out.id)
                for v in (x, y):
                    self.same_object(out, v)
                if self.numpy_valued(x) and self.numpy_valued(y):
                    self.b.numpy_made.add(out.id)
                for v in (x, y):
                    if isinstance(v, Var):
                        self.b.link(out, v)  # it may be either value
                if all(not isinstance(v, Var) or self.b.shared_why(v) is None for v in (x, y)):
                    self.b.made_by[out.id] = "cond"  # fresh on both paths
                outs.append(out)
                tvals.append(x)
                evals.append(y)
        return outs, tvals, evals

    @staticmethod
    def _rebuild(template, outs):
        if isinstance(template, tuple):
            return tuple(outs[:len(template)])
        return outs[0]

    # -- loops ------------------------------------------------------------------------------

    def stmt_For(self, node, cont=None):
        if node.orelse:
            raise self.unsupported("`else` on a loop is", node)
        plan = self.plan(node.iter)
        if self._indexes_a_container(node, plan):
            plan = list(range(plan.start, plan.stop, plan.step))
        if isinstance(plan, list):  # a Python sequence of values: unrolled
            if any(isinstance(n, (ast.Break, ast.Continue)) for n in _walk_local(node.body)):
                raise self.unsupported("break/continue in a loop over a Python list is", node)
            for item in plan:
                self.assign(node.target, item)
                self.run_body(node.body)
            if cont is not None:
                self.run_body(cont)
            return
        self.loop(node, plan, cont or ())

    def _indexes_a_container(self, node, plan) -> bool:
        """Is this `for i in range(<constants>)` loop one that indexes a Python list, tuple
        or dict with `i` (`layers[i]`, a structured argument's)? Then it is unrolled, as
        a loop over the container is."""
        if not (isinstance(plan, _Plan) and isinstance(node.target, ast.Name) and
                isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and
                node.iter.func.id == "range" and not plan.reverse and
                all(type(v) is int for v in (plan.start, plan.stop, plan.step))):
            return False
        if any(isinstance(n, (ast.Break, ast.Continue)) for n in _walk_local(node.body)):
            return False
        name = node.target.id
        for n in _walk_local(node.body, loops=True):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                    isinstance(self.env.get(n.value.id), (list, tuple, dict)) and \
                    any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.slice)):
                return True
        return False

    def stmt_While(self, node, cont=None):
        if node.orelse:
            raise self.unsupported("`else` on a loop is", node)
        self.loop(node, None, cont or ())

    def stmt_Break(self, node):
        if not getattr(self, "in_loop", False):
            raise self.unsupported("`break` outside a run-time loop is", node)
        self.env["<break>"] = True
        raise _EndIter()

    def stmt_Continue(self, node):
        if not getattr(self, "in_loop", False):
            raise self.unsupported("`continue` outside a run-time loop is", node)
        raise _EndIter()

    def plan(self, it):
        """The iteration plan of a `for` loop's iterable (see _Plan); a list to unroll."""
        if isinstance(it, ast.Call) and not any(isinstance(a, ast.Starred) for a in it.args):
            f = self.expr(it.func)
            how = _PLANS.get(f) if _hashable(f) else None
            if it.keywords and not (f is builtins.enumerate and len(it.keywords) == 1 and
                                    it.keywords[0].arg == "start" and len(it.args) == 1):
                how = None  # (enumerate's start= is the only keyword a plan reads)
            if how is not None:
                p = how(self, it)
                if p is not _MISSING:
                    return p
        v = self.expr(it)
        if isinstance(v, Var) and v.kind == "list":
            raise self.unsupported("iterating over a list built in a run-time loop or branch "
                                   "(np.stack it, and iterate over the array) is", it)
        if isinstance(v, Var):  # (*args: a tuple of arrays of any shapes, so len())
            n = self.b.stage(LEN, [v], {}) if v.id in self.b.opaque else \
                ops.getitem(ops.shape(v), 0)
            return _Plan(0, n, 1, lambda i: ops.getitem(v, i), hint="i")
        if isinstance(v, range):
            return _Plan(v.start, v.stop, v.step, item=lambda i: i)
        v = self.protocol(v, "__iter__", it)
        try:
            return list(v)
        except TypeError:
            raise self.error(f"cannot iterate over a {type(v).__name__}", it) from None

    # plans of `for ... in f(...)` (see _PLANS): `plan_x(self, call) -> plan or _MISSING`

    def plan_range(self, it):
        args = [self.expr(a) for a in it.args]
        if len(args) == 1:
            args = [0, args[0], 1]
        elif len(args) == 2:
            args = [args[0], args[1], 1]
        return _Plan(*args, item=lambda i: i)

    def plan_reversed(self, it):
        if len(it.args) != 1:
            return _MISSING
        p = self.plan(it.args[0])
        if isinstance(p, list):
            return p[::-1]
        p.reverse = not p.reverse
        return p

    def plan_enumerate(self, it):
        if not 1 <= len(it.args) <= 2:
            return _MISSING
        p = self.plan(it.args[0])
        start = self.expr(it.args[1]) if len(it.args) == 2 else \
            self.expr(it.keywords[0].value) if it.keywords else 0
        if isinstance(p, list):
            return [(k + start, v) for k, v in enumerate(p)] if not has_var(start) else None
        if p.reverse:
            raise self.unsupported("enumerate(reversed(...)) is", it)
        item = p.item
        return _Plan(p.start, p.stop, p.step, lambda i: (
            ops.add(ops.subtract(i, p.start), start) if has_var(p.start) or p.start
            else (ops.add(i, start) if start else i), item(i)), hint="k")

    def plan_zip(self, it):
        if not it.args:
            return _MISSING
        ps = [self.plan(a) for a in it.args]
        if all(isinstance(p, list) for p in ps):
            return list(zip(*ps))
        if any(isinstance(p, list) or p.reverse or p.step != 1 or p.start != 0 for p in ps):
            raise self.unsupported("zip() of these iterables (use arrays or range(n)) is", it)
        stop = ps[0].stop
        for p in ps[1:]:
            stop = ops.minimum(stop, p.stop) if has_var(stop) or has_var(p.stop) \
                else min(stop, p.stop)
        return _Plan(0, stop, 1, lambda i: tuple(p.item(i) for p in ps))

    def loop(self, node, plan, cont=()):
        """Lower a run-time `for` (plan given) or `while` (plan None) loop. A `return`
        inside it sets a flag, keeps the value and breaks; after the loop the flag picks
        between returning that value and running the rest of the function (`cont`)."""
        returns = any(isinstance(n, ast.Return) for n in _walk_local(node.body, loops=True))
        if returns and getattr(self, "in_loop", False):
            ret = next(n for n in _walk_local(node.body, loops=True) if isinstance(n, ast.Return))
            raise self.unsupported("a `return` inside a loop that is inside another run-time "
                                   "loop (set a flag and `break` out of both loops, then "
                                   "return after them) is", ret)
        loc = self.b.loc
        self.runtime_lists(node.body)
        if returns:
            self.env["<return>"] = 0.0
            self.env["<returned>"] = False
        has_break = returns or any(isinstance(n, ast.Break) for n in _walk_local(node.body))
        carried, inits = self._loop_state(node, returns)
        if has_break:
            inits += [False, 0]
        elif plan is None:
            inits += [0]
        kinds = []
        for v, (name, kind) in zip(inits, self._carry_names(carried, has_break, plan)):
            # a carried Python int (a counter) or a shape is meta; floats and arrays are data
            meta = (isinstance(v, Var) and v.kind == "meta") or (
                isinstance(v, (int, numpy.integer)) and not isinstance(v, float))
            kinds.append((name, "meta" if meta and kind != "list" else kind))
        # An array carried in with a known shape or dtype (a specialized variant's) is
        # taken to keep it; the body is lowered again without what an iteration disproves
        # (by induction, what it keeps holds at every iteration: ir checks it).
        assumed = [_known_classes(v) if kind == "array" else (None, None)
                   for v, (_, kind) in zip(inits, kinds)]
        while True:
            carry = [Var(name, kind, *classes) for (name, kind), classes in zip(kinds, assumed)]
            for c, v in zip(carry, inits):
                self.same_object(c, v)
            params = {"carry": carry}
            body_env = self._loop_body(node, plan, carried, carry, has_break, params)
            # a carry started as a Python int that an iteration makes data (`s = 0`, then
            # `s += x[i] ** 2`) is data: the body is lowered again with it so
            data = [(name, "array") if kind == "meta" and isinstance(n, Var) and
                    n.kind == "array" else (name, kind)
                    for (name, kind), n in zip(kinds, params["body"].outs)]
            if data != kinds:
                kinds = data
                assumed = [_known_classes(v) if kind == "array" else (None, None)
                           for v, (_, kind) in zip(inits, kinds)]
                continue
            kept = [_kept_classes(a, n) for a, n in zip(assumed, params["body"].outs)]
            if kept == assumed:
                break
            assumed = kept
        outs = [Var(c.hint, c.kind, *classes) for c, classes in zip(carry, assumed)]
        for o, c in zip(outs, carry):
            self.same_object(o, c)
        fresh = params.pop("fresh")
        for c, o in zip(carry, outs):
            self.b.named.add(o.id)
            if c.id in fresh:
                self.b.made_by[o.id] = "loop"
        for o, start, last in zip(outs, inits, params["body"].outs):
            for v in (start, last):  # it is its start after no iteration, else the last
                if o.kind == "array" and isinstance(v, Var) and v.kind == "array":
                    self.b.link(o, v)
        self.b.loc = loc
        if has_break:
            params["brk"] = len(carry) - 2
        if has_break or plan is None:
            params["count"] = len(carry) - 1
        if plan is not None:
            params["reverse"] = plan.reverse
            self.b.structured(FOR, [plan.start, plan.stop, plan.step] + inits, outs, params)
        else:
            self.b.structured(WHILE, inits, outs, params)
        self._bind_carried(self.env, carried, outs)
        for n in _own_targets(node) + _assigned(node.body):
            if n not in self.env and n in body_env:
                self.env[n] = _Undefined(n, "it is first assigned inside a loop whose trip "
                                         "count is known only at run time (a loop that "
                                         "runs no time leaves it unbound); give it a value "
                                         "before the loop")
        if returns:
            flag, value = self.env.pop("<returned>"), self.env.pop("<return>")

            def take():
                raise _Return(value)

            self.branch(flag, take, lambda: self.run_body(cont), node)
            raise self.error("internal: a loop with return fell through", node)

    def _loop_state(self, node, returns):
        """The names a loop carries from one iteration to the next, with their values
        before it: ([(name, value)], flat list of the values' parts)."""
        changed = [n for n in verbatim.changed_names(self, node.body)  # (`buf.fill(0.0)`)
                   if isinstance(self.env.get(n), (Var, numpy.ndarray))]
        # ... and every other name bound to such an array, or to an array srcgrad folded
        # that the loop updates (`y = z; for ...: z += 1.0`): they see each step's change
        arrays = [self.env[n] for n in changed] + [
            self.env[n] for n in _assigned(node.body)
            if isinstance(self.env.get(n), numpy.ndarray)]
        changed += [n for n, v in self.env.items()
                    if n.isidentifier() and any(v is a for a in arrays)]
        # (the loop's own variable too: after the loop it holds the last item, or the one
        # a `break` left, as in Python)
        names = [n for n in _own_targets(node) + _assigned(node.body) +
                 _grown_lists(node.body) + changed +
                 (["<return>", "<returned>"] if returns else [])
                 if n in self.env and not isinstance(self.env[n], _Undefined)]
        carried, inits = [], []
        for n in dict.fromkeys(names):
            v = self.env[n]
            parts = v if isinstance(v, tuple) else (v,)
            if not all(_phi_able(p) and p is not None for p in parts):
                raise self.error(f"`{n}` is changed inside a loop that runs a number of times "
                                 f"known only at run time, but it holds a "
                                 f"{type(v).__name__}, which srcgrad cannot carry from one "
                                 "iteration to the next", node, UnsupportedSyntaxError)
            carried.append((n, v))
            inits.extend(parts)
        return carried, inits

    def _bind_carried(self, env, carried, values) -> int:
        """Bind each carried name in `env` to its part of `values`; returns how many
        values they took."""
        k = 0
        for n, v in carried:
            m = len(v) if isinstance(v, tuple) else 1
            env[n] = self._rebuild(v, values[k:k + m])
            k += m
        return k

    def _loop_body(self, node, plan, carried, carry, has_break, params) -> dict:
        """Lower the loop's test (while) and body into `params` ("cond", "index", "body",
        and "fresh": the carries that start as fresh arrays); returns the body's final
        environment."""
        env = dict(self.env)
        extra = carry[self._bind_carried(env, carried, carry):]
        params["fresh"] = fresh = self._fresh_carries(carried, carry)
        saved_env, saved_loop = self.env, getattr(self, "in_loop", False)
        self.env, self.in_loop = env, True
        try:
            if plan is None:
                self.b.push_block()
                test = self.truth(self.expr(node.test), node.test)
                params["cond"] = Block(self.b.pop_block(), [test])
            self.b.push_block()
            index = None
            if plan is not None:
                index = Var(node.target.id if isinstance(node.target, ast.Name) else plan.hint,
                            "meta", dclass=INT_VALUED)  # (a counter over a range)
                params["index"] = index
            if extra:
                self.b.hint = "n_iter"
                nxt_count = ops.add(extra[-1], 1)
            if has_break:
                self.env["<break>"] = extra[0]
            if plan is not None:
                self.assign(node.target, plan.item(index))
            try:
                self.run_body(node.body)
            except _EndIter:
                pass
            nexts = self._loop_nexts(node, carried)
            self._check_in_place_carries(node, carry, nexts, fresh)
            if has_break:
                nexts += [self.env["<break>"], nxt_count]
            elif plan is None:
                nexts += [nxt_count]
            params["body"] = Block(self.b.pop_block(), nexts)
        finally:
            body_env = self.env
            self.env, self.in_loop = saved_env, saved_loop
        return body_env

    def _loop_nexts(self, node, carried) -> list:
        """The carried names' values at the end of an iteration, flat."""
        nexts = []
        for n, v in carried:
            nv = self.env.get(n, _MISSING)
            shape_ok = (isinstance(nv, tuple) and isinstance(v, tuple) and
                        len(nv) == len(v)) or (not isinstance(v, tuple) and
                                               not isinstance(nv, tuple))
            if nv is _MISSING or isinstance(nv, _Undefined) or not shape_ok or not all(
                    _phi_able(p) for p in (nv if isinstance(nv, tuple) else (nv,))):
                raise self.error(f"`{n}` does not keep the same kind of value across "
                                 "loop iterations", node, UnsupportedSyntaxError)
            nexts.extend(nv if isinstance(nv, tuple) else (nv,))
        return nexts

    def _check_in_place_carries(self, node, carry, nexts, fresh):
        """A name updated in place in the body (`a += b`, `a[i] = v`): the next iteration
        writes into what this one leaves it bound to, which must be its own array."""
        body = _walk_local(node.body, loops=True)
        updated = set()
        for n in body:
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                updated.add(n.target.id)
            targets = n.targets if isinstance(n, ast.Assign) else \
                [n.target] if isinstance(n, ast.AugAssign) else []
            updated.update(_item_base(t) for t in targets if isinstance(t, ast.Subscript))
        for c, nv in zip(carry, nexts):
            if not (c.id in fresh and c.hint in updated and isinstance(nv, Var)):
                continue
            if nv is not c and self.b.shared_why(nv) is not None:
                raise self.error(f"`{c.hint}` is updated in place inside this loop, but an "
                                 "iteration leaves it sharing memory with another array "
                                 f"({self.b.shared_why(nv)}); make a copy first", node,
                                 UnsupportedSyntaxError)
            if sum(1 for w in nexts if w is nv) > 1:
                raise self.error(f"`{c.hint}` is updated in place inside this loop, but an "
                                 "iteration leaves another name bound to the same array; "
                                 "make a copy first", node, UnsupportedSyntaxError)

    def _fresh_carries(self, carried, carry) -> set:
        """Ids of carried arrays that start as a fresh array no other name is bound to:
        the loop body may update them in place (see update_in_place)."""
        fresh, k = set(), 0
        for n, v in carried:
            for part in (v if isinstance(v, tuple) else (v,)):
                if isinstance(part, numpy.ndarray) and sum(  # (an array srcgrad folded)
                        1 for lw in self.scopes() for x in lw.env.values()
                        if isinstance(x, numpy.ndarray) and
                        numpy.may_share_memory(x, part)) > 1:
                    self.b.carry_why[carry[k].id] = \
                        f"another name or view bound to `{n}`'s array before the loop"
                elif not isinstance(part, Var) or (  # a Python number is never shared
                        part.kind == "array" and self.b.shared_why(part) is None and
                        sum(1 for x in self.env.values() if x is part) == 1 and
                        not any(x is not part and self.b.may_view(x, part)
                                for x in self.env.values()) and
                        not any(self.b.may_view(x, part) for lw in self.scopes()[1:]
                                for x in lw.env.values())):
                    fresh.add(carry[k].id)
                    self.b.made_by[carry[k].id] = "loop"
                elif part.kind == "array":  # say why, should the body update it in place
                    outer = any(self.b.may_view(x, part) for lw in self.scopes()[1:]
                                for x in lw.env.values())
                    self.b.carry_why[carry[k].id] = self.b.shared_why(part) or (
                        "an array the calling function holds (return the new array and "
                        "rebind it there)" if outer else
                        f"another name or view bound to `{n}`'s array before the loop")
                k += 1
        return fresh

    @staticmethod
    def _carry_names(carried, has_break, plan):
        out = []
        special = {"<return>": ("result", "array"), "<returned>": ("returned", "meta")}
        for n, v in carried:
            for _ in (v if isinstance(v, tuple) else (v,)):
                out.append(special.get(n, (n, "list" if isinstance(v, Var) and
                                             v.kind == "list" else "array")))
        if has_break:
            out.append(("brk", "meta"))
        if has_break or plan is None:
            out.append(("n_iter", "meta"))
        return out

    def assign(self, target, value):
        if isinstance(target, ast.Name):
            if isinstance(value, Var) and self.b.eqns and self.b.eqns[-1].outs and \
                    self.b.eqns[-1].outs[0] is value:
                value.hint = target.id
                self.b.named.add(value.id)
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            starred = [k for k, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            elts = [t.value if isinstance(t, ast.Starred) else t for t in target.elts]
            if starred and isinstance(value, Var):
                raise self.error("`a, *rest = x` of a value known only at run time (an "
                                 "array: its length is not known when compiling) is not "
                                 "supported; index it (`a, rest = x[0], x[1:]`)", target,
                                 UnsupportedSyntaxError)
            if isinstance(value, Var):
                parts = [ops.getitem(value, i) for i in range(n)]
            else:
                parts = list(value)
                if starred:  # Python's: the starred name takes a list of what is left
                    k, after = starred[0], n - 1 - starred[0]
                    if len(parts) < n - 1:
                        raise self.error(f"not enough values to unpack (expected at least "
                                         f"{n - 1}, got {len(parts)})", target)
                    parts = parts[:k] + [parts[k:len(parts) - after]] + \
                        parts[len(parts) - after:]
                elif len(parts) != n:
                    raise self.error(f"cannot unpack {len(parts)} values into {n} names",
                                     target)
            saved = self.pending
            try:
                for k, t in enumerate(elts):
                    self.pending = saved + ((parts, k + 1),)
                    self.assign(t, parts[k])  # (parts[k] as a write before it left it)
            finally:
                self.pending = saved
        elif isinstance(target, ast.Subscript):
            found = self.static_item(target)
            if found is not None:
                found[0][found[1]] = value
                return
            self.assign_item(target, value, self.node)
        elif isinstance(target, ast.Attribute):
            raise self.unsupported("assignment to an attribute is", target)
        else:
            raise self.unsupported(f"assignment to {type(target).__name__} is", target)

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, node) -> Any:
        prev, self.node = self.node, node
        try:
            method = getattr(self, "expr_" + type(node).__name__, None)
            if method is None:
                what = _UNSUPPORTED_EXPR.get(type(node), f"`{type(node).__name__}` expressions")
                raise self.unsupported(what + " are" if what.endswith("s") else what + " is",
                                       node)
            value = method(node)
            if type(value) is numpy.ndarray:  # a user's array, reached some other way
                value = self.b.reads.as_var(value)  # than by name: read it at every call
            return value
        except StaticValueNeeded as e:
            if self.probing:
                raise _NotStatic() from None
            raise self.error(f"srcgrad needs {e.what} at compile time, but it is only known "
                             "when the function runs", node) from None
        except (UnsupportedArgument, TypeError, ValueError, IndexError, ZeroDivisionError) as e:
            raise self.error(f"{type(e).__name__}: {e}", node) from None
        finally:
            self.node = prev

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        return self.load(node.id, node)

    def load(self, name, node):
        if name in self.env:
            v = self.env[name]
            if isinstance(v, _Undefined):
                raise self.error(v.message(), node, UnsupportedSyntaxError)
            return v
        if self.outer is not None:
            try:
                return self.outer.load(name, node)
            except SrcgradError:
                pass
        try:
            value = self.src.lookup(name)
        except KeyError:
            raise self.error(f"name {name!r} is not defined", node, UnknownFunctionError) \
                from None
        return self.constant(name, value)

    def constant(self, name, value):
        """A module-level, closure or builtin value. An array becomes a Var that generated
        code reads from its namespace at every call (never a literal: the user may rebind
        or change it between calls); anything else is guarded (srcgrad.guards)."""
        path = Path(scope_of(self.src, name), name)
        reads = self.b.reads
        if isinstance(value, numpy.ndarray):
            return reads.array(path, value)
        if path.scope.kind == "globals" and name not in path.scope.obj:
            reads.builtin(path)  # found in builtins: a global of that name would hide it
            return value
        return reads.root(path, value)

    def expr_ListComp(self, node):
        return self.comprehension(node)

    def expr_GeneratorExp(self, node):
        out = self.comprehension(node)  # made at once: numeric code sums or stacks it
        return iter(out) if isinstance(out, list) else out  # used up once read, as in Python

    def expr_DictComp(self, node):
        return self.comprehension(node)

    def comprehension(self, node):
        """`[e for t in it if c]` as the loop Python runs, with its own scope: unrolled
        into a list made at compile time when what it iterates over is known then (a
        range, a list of arrays...) and short, else a run-time loop building a list."""
        names = [n.id for g in node.generators for n in ast.walk(g.target)
                 if isinstance(n, ast.Name)]
        staged = len(self.b.eqns)
        try:
            with self.own_names(names):
                return self.static_comprehension(node)
        except _NotStatic:
            del self.b.eqns[staged:]  # (an impure op staged before must not run twice)
        return self.loop_comprehension(node)

    @contextlib.contextmanager
    def own_names(self, names):
        """Names bound inside (a comprehension's): their outer bindings come back after.
        Their values at the end stay for the lambdas made inside (see _LocalFunction)."""
        saved = {n: self.env.get(n, _MISSING) for n in names}
        scope: dict = {}
        self.comprehension_scopes.append(scope)
        try:
            yield
        finally:
            self.comprehension_scopes.pop()
            scope.update((n, self.env[n]) for n in names if n in self.env)
            for n, v in saved.items():
                if v is _MISSING:
                    self.env.pop(n, None)
                else:
                    self.env[n] = v

    _UNROLL = 64  # the most items a comprehension is unrolled into

    def static_comprehension(self, node):
        is_dict = isinstance(node, ast.DictComp)
        out = {} if is_dict else []
        gens = node.generators

        def run(i):
            if i == len(gens):
                if is_dict:
                    k = self.expr(node.key)
                    if has_var(k):
                        raise self.error("a dict comprehension's keys must be known at "
                                         "compile time (strings, numbers)", node.key,
                                         UnsupportedSyntaxError)
                    out[k] = self.expr(node.value)
                else:
                    out.append(self.expr(node.elt))
                return
            gen = gens[i]
            if gen.is_async:
                raise self.unsupported("async comprehensions are", node)
            self.probing = True  # a value needed at compile time: not static after all
            try:
                it = self.expr(gen.iter)
            finally:
                self.probing = False
            if isinstance(it, (Var, numpy.ndarray)) or not isinstance(
                    it, (list, tuple, range, dict, str, zip, enumerate, reversed)):
                raise _NotStatic()
            items = list(it)
            if len(items) > self._UNROLL:
                raise _NotStatic()
            for item in items:
                self.assign(gen.target, item)
                keep = True
                for c in gen.ifs:
                    test = self.truth(self.expr(c), c)
                    if has_var(test):
                        raise _NotStatic()
                    if not test:
                        keep = False
                        break
                if keep:
                    run(i + 1)

        run(0)
        return out

    def loop_comprehension(self, node):
        is_dict = isinstance(node, ast.DictComp)
        # the list is built under the name it is assigned to (saved and restored around
        # the loop), or a name the comprehension does not use
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        base = self.b.hint
        key = base if base.isidentifier() and base != "t" and base not in used else \
            next(n for n in ("items", "values", "parts", "_items") if n not in used)
        if is_dict:
            inner = ast.Assign(targets=[ast.Subscript(value=ast.Name(id=key, ctx=ast.Load()),
                                                      slice=node.key, ctx=ast.Store())],
                               value=node.value)
        else:
            append = ast.Attribute(value=ast.Name(id=key, ctx=ast.Load()), attr="append",
                                   ctx=ast.Load())
            inner = ast.Expr(value=ast.Call(func=append, args=[node.elt], keywords=[]))
        names = [key]
        for gen in reversed(node.generators):
            if gen.is_async:
                raise self.unsupported("async comprehensions are", node)
            for cond in reversed(gen.ifs):
                inner = ast.If(test=cond, body=[inner], orelse=[])
            inner = ast.For(target=gen.target, iter=gen.iter, body=[inner], orelse=[])
            names += [n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)]
        init = ast.Assign(targets=[ast.Name(id=key, ctx=ast.Store())],
                          value=ast.Dict(keys=[], values=[]) if is_dict else ast.List(
                              elts=[], ctx=ast.Load()))
        for stmt in (init, inner):
            for n in ast.walk(stmt):
                if not hasattr(n, "lineno"):
                    ast.copy_location(n, node)
            ast.fix_missing_locations(stmt)
        where = (self.node, self.b.loc, self.b.hint)
        try:
            with self.own_names(names):
                self.stmt(init)
                self.stmt(inner)
                return self.env[key]
        finally:
            self.node, self.b.loc, self.b.hint = where

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node):
        return [self.expr(e) for e in node.elts]

    def expr_Dict(self, node):
        return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values)}

    def expr_BinOp(self, node):
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, a, b, node):
        entry = _BINOPS.get(type(op))
        if entry is None:
            raise self.unsupported(f"the operator {type(op).__name__} is", node)
        prim, pyop = entry
        if self.uses_python(a, b, type(op).__name__):  # an object's operator, in Python
            return self.binary(type(op).__name__, a, b, pyop, node)
        if not has_var(a) and not has_var(b):
            return pyop(a, b)
        if isinstance(a, list) or isinstance(b, list) or isinstance(a, tuple) or \
                isinstance(b, tuple):
            if isinstance(op, (ast.Add, ast.Mult)) and not isinstance(a, Var) \
                    and not isinstance(b, Var):
                return pyop(a, b)  # joining Python lists/tuples of values
        return prim(a, b)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self.negate(v, node)
        if not has_var(v) and type(node.op).__name__ in UNARY:
            out = self.unary(type(node.op).__name__, v, node)  # an object's, in Python
            if out is not _MISSING:
                return out
        if isinstance(node.op, ast.USub):
            return ops.negative(v) if has_var(v) else -v
        if isinstance(node.op, ast.UAdd):
            # +a of an array is a new array (a write into it leaves a alone); of a number,
            # the number (float(), math.*: Python floats, which a copy would make arrays)
            made = self.b.made_by.get(v.id) if isinstance(v, Var) else None
            if isinstance(made, Primitive) and v.kind == "array" and made is not ops.to_float:
                return ops.copy(v)
            return v
        if isinstance(node.op, ast.Invert):  # (bitwise on integers: ~1 is -2)
            return ops.invert(v) if has_var(v) else ~v
        raise self.unsupported(f"the operator {type(node.op).__name__} is", node)

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp)
            entry = _CMPOPS.get(type(op))
            if isinstance(op, (ast.Is, ast.IsNot)) and (
                    (isinstance(left, Var) and right is None) or
                    (isinstance(right, Var) and left is None)):
                # `y is None` of an argument (`loss(X, y=None)`): tested at run time
                v = left if isinstance(left, Var) else right
                r = self.b.stage(IS_NONE, [v], {"negate": isinstance(op, ast.IsNot)})
            elif entry is None:
                if has_var(left) or has_var(right):
                    raise self.unsupported(f"the comparison {type(op).__name__} on run-time "
                                           "values is", node)
                if isinstance(op, (ast.In, ast.NotIn)):  # (a class's __contains__, __eq__)
                    r = self.contains(right, left, node)
                    r = self.negate(r, node) if isinstance(op, ast.NotIn) else r
                else:
                    self.identity(left, right)  # (which object it is: see Reads.by_identity)
                    r = (left is right) == isinstance(op, ast.Is)
            else:
                prim, _ = entry
                r = prim(left, right) if (has_var(left) or has_var(right)) \
                    else self.compare(type(op).__name__, left, right, node)
            if result is None:
                result = r
            elif has_var(result) or has_var(r):
                result = ops.logical_and(self.truth(result, node), self.truth(r, node))
            else:
                result = r if self.truth(result, node) else result
            left = right
        return result

    def expr_BoolOp(self, node):
        return self._boolop(isinstance(node.op, ast.And), node.values, node)

    def _boolop(self, is_and, values, node):
        """Python's `and`/`or`: the value of the first operand that decides, the later
        ones evaluated only when needed. On a run-time value, `a or b` is `a if a else b`
        and `a and b` is `b if a else a` (a branch, not a logical op on booleans)."""
        first = self.expr(values[0])
        if len(values) == 1:
            return first
        test = self.truth(first, values[0])  # (an object's __bool__, inlined)
        if not has_var(test):
            if bool(test) != is_and:  # `and` stops at a falsy value, `or` at a truthy one
                return first
            return self._boolop(is_and, values[1:], node)

        def rest():
            return self._boolop(is_and, values[1:], node)

        def keep():
            return first

        return self.select(test, rest if is_and else keep, keep if is_and else rest, node)

    def expr_IfExp(self, node):
        test = self.truth(self.expr(node.test), node.test)
        if not has_var(test):
            return self.expr(node.body if test else node.orelse)
        return self.select(test, lambda: self.expr(node.body), lambda: self.expr(node.orelse),
                           node)

    def select(self, test, then_fn, else_fn, node):
        """The value of `then_fn()` or `else_fn()` as the run-time `test` decides (each
        side lowered in its own branch, so only the chosen one runs)."""
        key = "<ifexp>"
        saved = self.env.get(key, _MISSING)

        def side(fn):
            def run():
                self.env[key] = fn()
            return run

        self.env[key] = None
        self.branch(test, side(then_fn), side(else_fn), node)
        value = self.env.pop(key)
        if saved is not _MISSING:
            self.env[key] = saved
        if isinstance(value, _Undefined):
            raise self.error("the two sides of this conditional expression give values of "
                             "different kinds", node, UnsupportedSyntaxError)
        return value

    def expr_Attribute(self, node):
        obj = self.expr(node.value)
        name = node.attr
        if name.startswith("__") and not name.endswith("__"):
            name = self.mangled(name)
        if isinstance(obj, _Super):
            return self.super_attr(obj, name, node)
        if isinstance(obj, Var):
            if obj.id in self.b.instances:  # (before the array's: `info.max` of np.iinfo)
                raise self.error(
                    f"`{verbatim.as_written(self, node)}` reads the attribute {name!r} of "
                    f"`{verbatim.as_written(self, node.value)}`, a "
                    f"{self.b.instances[obj.id]} object made when the function runs: srcgrad "
                    "runs the code that makes and changes it as written and does not follow "
                    "its attributes; make the object outside the function (and differentiate "
                    "its bound method, or pass it as an argument), or keep the values in "
                    "local variables", node, UnknownFunctionError)
            if name in ATTRIBUTES:
                return ATTRIBUTES[name](obj)
            if name in METHODS:
                return _BoundMethod(METHODS[name], obj, name)
            prim = ops.PRIMITIVES.get(name)
            # (an op by an array method's name, `x.clip(0, 1)`, or by a name numpy has not,
            # the tape's `x.relu()`; not `m.add(x)`, a function of numpy's that no array
            # has as a method: an argument's object's own method, not numpy's add of it)
            if prim is not None and not prim.meta and (
                    hasattr(numpy.ndarray, name) or not hasattr(numpy, name)):
                return _BoundMethod(prim, obj, name)
            if obj.id in self.b.inputs and obj.kind == "array" and \
                    not hasattr(numpy.ndarray, name):
                raise self.error(
                    f"`{ast.unparse(node)}` reads the attribute {name!r} of the argument "
                    f"`{obj.hint}`, but srcgrad compiles every argument as an array, a "
                    "number, or a tuple, list or dict of them, and arrays have no such "
                    "attribute: for an object's method, differentiate the bound method "
                    "(`srcgrad.grad(model.loss)`, which reads the object's attributes), or "
                    "pass the values it needs as arguments", node, UnknownFunctionError)
            raise self.error(f"arrays have no supported attribute or method {name!r} here",
                             node, UnknownFunctionError)
        if type(obj) in (float, int, bool) and not hasattr(obj, name) and (
                name in ATTRIBUTES or name in METHODS):
            # a number computed at compile time: numpy's ufuncs give numpy scalars, which
            # have array methods (`np.sin(G).sum()`); the op set folds to Python numbers
            obj = numpy.asarray(obj)[()]
        if isinstance(obj, (numpy.ndarray, numpy.generic)):  # a constant: its methods are ops'
            if name in ATTRIBUTES:
                return ATTRIBUTES[name](obj)
            if name in METHODS:
                return _BoundMethod(METHODS[name], obj, name)
        try:
            value = getattr(obj, name)
        except AttributeError:
            raise self.error(f"{type(obj).__name__} object has no attribute {name!r}", node,
                             UnknownFunctionError) from None
        return self.b.reads.attr(obj, name, value)

    def mangled(self, name):
        """`__w` inside a method of class C is `_C__w`, as Python compiles it."""
        parts = getattr(self.src.fn, "__qualname__", "").split(".")
        if len(parts) >= 2 and parts[-2] != "<locals>" and parts[-2].strip("_"):
            return f"_{parts[-2].lstrip('_')}{name}"
        return name

    def expr_Subscript(self, node):
        obj = self.expr(node.value)
        idx = self.index(node.slice)
        if isinstance(obj, Var):
            return self.subscript_var(obj, idx, node)
        if has_var(idx):
            return self.subscript_at_run_time(obj, idx, node)
        if isinstance(obj, dict):  # (a key whose class compares in Python: by key_in)
            key = self.key_in(obj, idx, node)
            if key is _MISSING:
                raise self.error(f"KeyError: {idx!r}", node)
            idx = key
        try:
            value = obj[idx]
        except Exception as e:
            raise self.error(f"{type(e).__name__}: {e}", node) from None
        return self.b.reads.item(obj, idx, value)

    def subscript_var(self, obj, idx, node):
        """`obj[idx]` of a run-time value: an array, a run-time list, *args or **kwargs."""
        if obj.kind == "list":
            if not isinstance(idx, (int, Var)) or isinstance(idx, bool):
                raise self.error("only an integer index reads an item of a list built in a "
                                 "run-time loop or branch (np.stack(list) takes slices)",
                                 node, UnsupportedSyntaxError)
            if not (isinstance(idx, int) and idx >= 0):  # (hs[-1]: the item it is now)
                idx = self.b.stage(LIST_POS, [obj, idx], {})
            return self.b.stage(LIST_GET, [obj, idx], {})
        if obj.id in self.b.opaque and isinstance(idx, str):
            return ops.getitem(obj, idx)  # `kwargs["scale"]`: read at run time
        if any(isinstance(i, str) for i in (idx if isinstance(idx, tuple) else (idx,))):
            raise self.error(f"indexing an array with the string {idx!r}: this value is "
                             "an array here (a structured argument, such as a dict, is "
                             "compiled when the function is called with one)", node,
                             UnsupportedSyntaxError)
        return ops.getitem(obj, idx)

    def subscript_at_run_time(self, obj, idx, node):
        """`obj[idx]` of a value known at compile time with an index known at run time."""
        if isinstance(obj, (tuple, list)) and isinstance(idx, Var) and obj:
            items = [self.b.reads.as_var(v) if type(v) is numpy.ndarray else v for v in obj]
            if all(isinstance(v, Var) and v.kind == "array" or isinstance(v, numbers.Real)
                   for v in items):
                if len({v.sclass if isinstance(v, Var) else SCALAR for v in items}) > 1:
                    raise self.error(
                        "indexing a list of arrays with a run-time index needs arrays "
                        "known to have one shape (the gradient stacks them); these may "
                        "differ", node, UnsupportedSyntaxError)
                lst = self.b.stage(LIST_FROM, items, {})
                return self.b.stage(LIST_GET, [lst, idx], {})
        if isinstance(obj, (tuple, list)):
            raise self.error("indexing a Python sequence with a run-time index is "
                             "supported for a list or tuple of arrays and numbers only",
                             node, UnsupportedSyntaxError)
        if obj is numpy.r_ or obj is numpy.c_:
            items = idx if isinstance(idx, tuple) else (idx,)
            if not any(isinstance(i, (slice, str)) for i in items):
                join = numpy_api.r_items if obj is numpy.r_ else numpy_api.c_items
                return join(items)
            which = "np.r_" if obj is numpy.r_ else "np.c_"
            raise self.error(f"{which}[...] with slices or string directives, of run-time "
                             "arrays, is not supported; use np.concatenate([...], axis=...), "
                             "np.arange or np.stack", node, UnsupportedSyntaxError)
        if not isinstance(obj, (numpy.ndarray, numpy.generic)):
            raise self.error(f"indexing a {type(obj).__name__} with run-time values is "
                             "not supported", node, UnsupportedSyntaxError)
        return ops.getitem(obj, idx)

    def index(self, node):
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.expr(p) for p in (node.lower, node.upper,
                                                                    node.step)]
            return slice(*parts)
        if isinstance(node, ast.Tuple):
            return tuple(self.index(e) for e in node.elts)
        v = self.expr(node)
        if isinstance(v, list):
            if has_var(v):
                raise self.error("a list of run-time values as an index is not supported; "
                                 "use an integer array", node, UnsupportedSyntaxError)
            return numpy.asarray(v) if v else v
        return v

    def expr_Call(self, node):
        f = self.expr(node.func)
        return self.call(f, node)

    def call(self, f, node):
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if has_var(v) and isinstance(v, Var):
                    raise self.unsupported("unpacking a run-time array with * is", a)
                args.extend(v)
            else:
                args.append(self.expr(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.expr(kw.value))
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return self.apply(f, args, kwargs, node)

    def apply(self, f, args, kwargs, node):
        """The value of the call `f(*args, **kwargs)`: an op's adapter, a builtin srcgrad
        knows, a method of a list or dict, or a Python function inlined."""
        hashable = _hashable(f)
        if args and isinstance(args[0], Var) and args[0].kind == "list" and \
                f is not builtins.len and f is not builtins.sum:
            return self.apply_to_list(f, args, kwargs, node)
        adapter = lookup(f) if hashable else None
        if adapter is not None:
            self.no_conversions(f, list(args) + list(kwargs.values()), node)
            if f in _PYTHON_OPERATORS:
                args = self.numpy_operands(f, args)
            if args and isinstance(args[0], (list, tuple)) and f not in _SEQUENCES and \
                    _of_numpy(f) and holds_array(args[0]):  # numpy makes the list an array
                args = (as_array(args[0]),) + tuple(args[1:])
            out = adapter(*args, **kwargs)
            if f in _PYTHON_OPERATORS and isinstance(out, Var) and out.kind == "array":
                self.b.numpy_made.add(out.id)  # (see numpy_operands)
            if type(out) in _FOLDED and _of_numpy(f) and not has_var((args, kwargs)):
                # (the op set computes numbers in Python, for shape arithmetic: numpy's
                # function gives its float64, which a float32 array does not keep float32,
                # its int64, and its bool, whose ~ is not -2)
                return _FOLDED[type(out)](out)
            return out
        if isinstance(f, (_BoundMethod, Primitive)):
            return f(*args, **kwargs)
        if isinstance(f, _LocalFunction):
            return self.inline_local(f, args, kwargs, node)
        if isinstance(f, _LocalPartial):
            return self.apply(f.func, [*f.args, *args], {**f.keywords, **kwargs}, node)
        if not hashable:
            raise self.error(f"a {type(f).__name__} is not callable here", node,
                             UnknownFunctionError)
        handler = _BUILTIN_CALLS.get(f)
        if handler is not None:
            return handler(self, f, args, kwargs, node)
        if f in _SIDE_EFFECTS:
            raise self.unsupported(f"{_SIDE_EFFECTS[f]} has side effects: it is", node)
        result = self.apply_container_method(f, args, kwargs, node)
        if result is not _MISSING:
            return result
        return self.apply_python(f, args, kwargs, node)

    def numpy_operands(self, f, args) -> list:
        """`args` of a numpy function written as a Python operator (`_PYTHON_OPERATORS`),
        given Python numbers numpy's way: unless an operand is numpy's already, the first
        that may be a Python number at run time is marked (ops.numpy_operand), and the call
        that reads it is written as numpy's function where it may be one; np.asarray's
        operand is made a 0-d array (ops.as_numpy)."""
        asarray = f in (numpy.asarray, numpy.asanyarray)
        marked = self.first_marked(args, ops.as_numpy if asarray else ops.numpy_operand)
        return list(args) if marked is None else marked

    def first_marked(self, args, marker) -> "list | None":
        """`args` with `marker` on the first that may be a Python number at run time (an
        array or a meta value: x.shape, n), or None where an operand is numpy's already
        or none is a Var."""
        if any(self.numpy_valued(a) for a in args):
            return None
        out = list(args)
        for k, a in enumerate(out):
            if isinstance(a, Var) and a.kind in ("array", "meta"):
                out[k] = marker(a)
                return out
        return None

    def numpy_valued(self, a) -> bool:
        """Is `a` certainly an array or a numpy scalar at run time, never a Python number
        (a numpy constant, or what `Builder.numpy_made` holds)? A parameter, a loop's carry
        or a branch's result may be a Python number."""
        if not isinstance(a, Var):
            return isinstance(a, (numpy.ndarray, numpy.generic))
        return a.id in self.b.numpy_made or (a.kind == "array" and a.const_name is not None)

    def no_conversions(self, f, args, node):
        """Refuse a numpy function given an object whose class writes a conversion
        (`__array__`, `__float__`, `__len__`...) in Python: numpy would call it while
        compiling, and nothing it reads would be guarded."""
        for a in args:
            if isinstance(a, Var) or type(a) in (float, int, bool, str) or \
                    not holds_python(a, _CONVERSIONS):
                continue
            for name in _CONVERSIONS:
                if holds_python(a, (name,)):
                    raise self.error(
                        f"{getattr(f, '__name__', f)}() of an object whose class defines "
                        f"{name} in Python: numpy would call it once, while compiling; pass "
                        "the arrays or numbers it holds", node, UnsupportedSyntaxError)

    def apply_to_list(self, f, args, kwargs, node):
        """A call on a list built in a run-time loop or branch: np.stack of it only."""
        if f in (numpy.stack, numpy.array, numpy.asarray):
            axis = kwargs.pop("axis", 0)
            if kwargs or len(args) > 1:
                raise self.unsupported(f"{f.__name__}() of a list with these arguments is",
                                       node)
            return self.b.stage(STACK_LIST, [args[0]], {"axis": axis})
        raise self.error(
            f"{getattr(f, '__name__', f)}() of a list built in a run-time loop or branch "
            "is not supported by srcgrad (np.stack(list) and len(list) are)", node,
            UnsupportedSyntaxError)

    # builtins (see _BUILTIN_CALLS): `call_x(self, f, args, kwargs, node)`

    def call_math(self, f, args, kwargs, node):
        args = [self.protocol(a, "__float__", node) for a in args]  # (an object's, inlined)
        if not any(has_var(a) for a in args):
            return f(*args)
        # math functions take Python numbers: an array of one or more dimensions is
        # refused at run time, as Python refuses it
        # (and give a Python float: numpy's sqrt of one is a float64, not weak to numpy)
        out = _MATH[f](*[ops.to_float(a) if isinstance(a, Var) else a for a in args])
        return ops.to_float(out) if isinstance(out, Var) else out

    def call_iter(self, f, args, kwargs, node):
        """iter() of a list, tuple or dict srcgrad holds (an object's `__iter__` returns
        `iter(self.layers)`), or of an object whose class defines `__iter__`."""
        if len(args) == 1 and not kwargs and isinstance(
                args[0], (list, tuple, dict, range, str, bytes, set, frozenset)):
            return iter(args[0])
        if len(args) == 1 and not kwargs and not isinstance(args[0], Var):
            v = self.protocol(args[0], "__iter__", node)
            if v is not args[0]:
                return v
        raise StaticValueNeeded("the argument of iter()")

    def call_len(self, f, args, kwargs, node):
        (v,) = args
        if not isinstance(v, Var) and isinstance(getattr(type(v), "__len__", None),
                                                 types.FunctionType):
            return self.protocol(v, "__len__", node)
        if isinstance(v, Var) and (v.kind in ("list", "meta") or v.id in self.b.opaque):
            # (a list, a tuple known at run time: a shape, say, or *args: arrays of any
            # shapes, which np.shape could not stack)
            return self.b.stage(LEN, [v], {})
        if isinstance(v, Var):
            return ops.getitem(ops.shape(v), 0)
        return len(v)

    def call_number(self, f, args, kwargs, node):
        """float(), int() and bool()."""
        (v,) = args
        dunder = {builtins.float: "__float__", builtins.int: "__int__",
                  builtins.bool: "__bool__"}[f]
        if not isinstance(v, Var) and isinstance(getattr(type(v), dunder, None),
                                                 types.FunctionType):
            return f(self.protocol(v, dunder, node))
        if not has_var(v):
            return f(v)
        if f is builtins.int and isinstance(v, Var) and v.kind in ("meta", "array"):
            # (of a value the derivative flows through, refused by check_sound if the
            # result reaches the output: int() has no derivative to give; the error
            # points at the call)
            loc = self.b.loc
            if loc is not None:
                self.b.loc = Loc(loc.filename, node.lineno, node.col_offset, loc.text)
            try:
                return self.b.stage(INT, [v], {})
            finally:
                self.b.loc = loc
        if f is builtins.float and isinstance(v, Var):
            return ops.to_float(v)  # refuses arrays of one or more dimensions
        raise StaticValueNeeded(f"{f.__name__}() of a run-time value")

    def call_abs(self, f, args, kwargs, node):
        (v,) = args
        if self.py_method(v, "__abs__") is not None:
            return self.protocol(v, "__abs__", node)
        if not has_var(v):
            return abs(v)
        return self.python_builtin(ops.absolute, [v])

    def call_pow(self, f, args, kwargs, node):
        if len(args) == 2 and not kwargs:
            return self.binop(ast.Pow(), args[0], args[1], node)
        if holds_python(list(args), ("__pow__", "__rpow__")):
            raise self.error("pow() with a modulus, of an object whose class defines "
                             "__pow__ in Python, is not supported", node,
                             UnsupportedSyntaxError)
        return ops.power(*args) if any(has_var(a) for a in args) else pow(*args)

    def call_min_max(self, f, args, kwargs, node):
        if len(args) == 1 and isinstance(args[0], Var) and args[0].kind == "array" and \
                not kwargs:  # the largest item along the first axis (of a 1-d array)
            return (ops.min if f is builtins.min else ops.max)(args[0], axis=0)
        items = self.static_items(args[0], node) if len(args) == 1 else list(args)
        if not any(has_var(v) for v in items):
            if "key" in kwargs or holds_python(items, ("__lt__", "__gt__", "__le__",
                                                        "__ge__")):
                return self.extreme(f, items, kwargs, node)  # (Python code, inlined)
            return f(items, **kwargs)
        if kwargs or not all(isinstance(v, Var) and v.kind in ("array", "meta") or
                             isinstance(v, (bool, int, float, numpy.number)) for v in items):
            # a key, a default, or items Python orders otherwise (tuples: by their first
            # items): Python's comparisons, inlined where known at compile time
            return self.extreme(f, items, kwargs, node)
        prim = ops.minimum if f is builtins.min else ops.maximum
        out = items[0]
        for v in items[1:]:
            out = self.python_builtin(prim, [out, v])
        if isinstance(out, Var):
            for v in items:  # (Python's result is one of the items: of arrays, the same
                if isinstance(v, Var) and v.kind == "array":  # array, which a write into
                    self.b.link(out, v)  # the result changes)
        return out

    def python_builtin(self, prim, args):
        """Python's abs(), max() or min() of `args` (staged as `prim`): where no operand
        is numpy's, the first that may be a Python number is marked (ops.python_operand),
        and the generated code writes the call as Python's where all may be numbers:
        `abs(n) ** 40` of an int n must not wrap at 2**63, max(1.0, nan) is 1.0."""
        marked = self.first_marked(args, ops.python_operand)
        if marked is None:
            return prim(*args)
        out = prim(*marked)
        if isinstance(out, Var):
            self.b.numpy_made.discard(out.id)  # (Python's number where it is given them)
        return out

    def call_sum(self, f, args, kwargs, node):
        if isinstance(args[0], Var) and args[0].kind == "array" and not kwargs:
            # Python adds the rows (the items along the first axis) to `start`
            total = ops.sum(args[0], axis=0)
            return ops.add(args[1], total) if len(args) > 1 else total
        if isinstance(args[0], Var) and args[0].kind == "list":
            # np.stack: the items must have one shape (an empty list raises)
            total = ops.sum(self.b.stage(STACK_LIST, [args[0]], {"axis": 0}), axis=0)
            return ops.add(total, args[1]) if len(args) > 1 else total
        items = self.static_items(args[0], node)
        out = args[1] if len(args) > 1 else 0
        for v in items:
            out = self.binop(ast.Add(), out, v, node)
        return out

    def call_getattr(self, f, args, kwargs, node):
        """getattr(obj, "name"[, default]) and hasattr(obj, "name") of an object known at
        compile time: read like `obj.name` (guarded)."""
        if kwargs or not 2 <= len(args) <= (3 if f is builtins.getattr else 2) or \
                isinstance(args[0], Var) or not isinstance(args[1], str):
            raise StaticValueNeeded(f"the arguments of {f.__name__}()")
        obj, name = args[0], args[1]
        try:
            value = getattr(obj, name)
        except AttributeError:
            if f is builtins.hasattr or len(args) == 3:  # (it must stay absent: guarded)
                self.b.reads.absent_attr(obj, name)
                return False if f is builtins.hasattr else args[2]
            raise self.error(f"{type(obj).__name__} object has no attribute {name!r}",
                             node, UnknownFunctionError) from None
        value = self.b.reads.attr(obj, name, value)
        return True if f is builtins.hasattr else value

    def call_partial(self, f, args, kwargs, node):
        """functools.partial(func, ...) in the function: a `_LocalPartial`, compiled where
        it is called, when `func` is a callable srcgrad compiles."""
        if not args or not _lowerable(args[0]) or isinstance(args[0], (Var, type)):
            what = type(args[0]).__name__ if args else "nothing"
            raise self.error(f"functools.partial of a {what}: srcgrad compiles a partial "
                             "of a Python function, method, lambda or numpy function",
                             node, UnknownFunctionError)
        return _LocalPartial(args[0], args[1:], kwargs)

    def call_super(self, f, args, kwargs, node):
        """super() in a method (its class from the method's `__class__` cell, the object
        its first parameter), or super(C, obj) of compile-time values: the method it
        names is then inlined, bound to the object."""
        if not args and not kwargs:
            cls = self.src.closure.get("__class__")
            params = self.src.tree.args.posonlyargs + self.src.tree.args.args
            first = self.self_name or (params[0].arg if params else None)
            obj = self.env.get(first) if first is not None else None
            args = [cls, obj]
        if kwargs or len(args) != 2 or not isinstance(args[0], type) or \
                isinstance(args[1], Var) or args[1] is None:
            raise self.error("super() is compiled in a method of a class, or as super(C, "
                             "obj) of an object known when compiling", node,
                             UnsupportedSyntaxError)
        if args[0] not in type(args[1]).__mro__:
            raise self.error(f"super({args[0].__name__}, obj): obj is not an instance of "
                             f"{args[0].__name__}", node, UnsupportedSyntaxError)
        return _Super(args[0], args[1])

    def super_attr(self, sup, name, node):
        """`super().name`: found in the classes after `sup.cls` in the object's MRO, read
        through `obj.__class__.__mro__[i].name` (guarded: a method replaced on that class
        is a change), and bound to the object."""
        reads, obj = self.b.reads, sup.obj
        klass = reads.attr(obj, "__class__", type(obj))
        mro = reads.attr(klass, "__mro__", klass.__mro__)
        for i in range(mro.index(sup.cls) + 1, len(mro)):
            k = reads.item(mro, i, mro[i])
            if name not in vars(k) and hasattr(k, name):
                # a class passed over: guarded by what it inherits (a method it is given
                # later, `B.f = ...`, is then what super() finds)
                reads.attr(k, name, getattr(k, name))
            if name in vars(k):
                value = reads.attr(k, name, vars(k)[name])
                if isinstance(value, property) and value.fget is not None:
                    return self.apply(value.fget, [obj], {}, node)  # compiled, as obj.p is
                if isinstance(value, (types.FunctionType, classmethod, staticmethod)):
                    return value.__get__(obj, type(obj))
                if getattr(type(value), "__get__", None) is not None:
                    raise self.error(f"super().{name} is a {type(value).__name__}, a "
                                     "descriptor srcgrad does not compile", node,
                                     UnsupportedSyntaxError)
                return value
        raise self.error(f"super() has no attribute {name!r}", node, UnknownFunctionError)

    def call_sorted(self, f, args, kwargs, node):
        """sorted() of a compile-time iterable (of a run-time array: np.sort)."""
        if len(args) != 1 or has_var(args[0]):
            raise StaticValueNeeded("the argument of sorted() (np.sort sorts an array)")
        return self.ordered(self.static_items(args[0], node), kwargs, node)

    def call_static(self, f, args, kwargs, node):
        """range, tuple, list, zip, enumerate, reversed, isinstance, type (of one value):
        of static values."""
        if any(has_var(a) for a in args):
            raise StaticValueNeeded(f"the arguments of {f.__name__}()")
        if f is builtins.type and (len(args) != 1 or kwargs):
            raise self.error("type() with three arguments (a new class) is not supported",
                             node, UnsupportedSyntaxError)
        if f is builtins.type:  # (reached as obj.__class__: its attributes are guarded)
            return self.b.reads.attr(args[0], "__class__", type(args[0]))
        if f is builtins.isinstance and len(args) == 2:  # (the object's class: guarded)
            self.b.reads.attr(args[0], "__class__", type(args[0]))
        if f is builtins.reversed and len(args) == 1 and \
                self.py_method(args[0], "__reversed__") is not None:
            return self.protocol(args[0], "__reversed__", node)
        if f in (builtins.tuple, builtins.list, builtins.zip, builtins.enumerate,
                 builtins.reversed):  # iterables: a class's __iter__ inlined
            args = [self.static_items(a, node) for a in args]
        elif holds_python(list(args) + list(kwargs.values()), ("__index__", "__int__")):
            raise self.error(f"{f.__name__}() of an object whose class defines __index__ in "
                             "Python is not supported", node, UnsupportedSyntaxError)
        return f(*args, **kwargs)

    def apply_container_method(self, f, args, kwargs, node):
        """A method of a list or dict the lowerer holds (or _MISSING)."""
        owner = getattr(f, "__self__", None)
        if not isinstance(f, types.BuiltinMethodType):
            return _MISSING
        if isinstance(owner, list) and f.__name__ == "index" and args and \
                holds_python([owner, args[0]], ("__eq__", "__ne__")):
            for i, x in enumerate(owner):  # (a class's __eq__, inlined; the item's first)
                t = self.equal(x, args[0], node)
                if has_var(t):
                    raise self.error("list.index() whose comparison is known only at run "
                                     "time is not supported", node, UnsupportedSyntaxError)
                if t:
                    return i
            raise self.error(f"ValueError: {args[0]!r} is not in list", node)
        if isinstance(owner, list) and f.__name__ in ("append", "extend", "pop", "index"):
            if f.__name__ != "index" and id(owner) in self.b.frozen:
                raise self.error(f"list.{f.__name__}() changes the caller's list (an "
                                 "argument) in place, which srcgrad does not do: build a "
                                 "new list", node, UnsupportedSyntaxError)
            return f(*args)
        if type(owner) is dict and f.__name__ in ("get", "keys", "values", "items"):
            d = owner  # reading a dict: a structured argument's or the function's own
            if f.__name__ == "get" and not kwargs and 1 <= len(args) <= 2 and \
                    not has_var(args[0]):
                key = self.key_in(d, args[0], node)
                if key is not _MISSING:  # as d[key]: an array of a dict is read at run time
                    return self.b.reads.item(d, key, d[key])
                return args[1] if len(args) == 2 else None
            if self.b.reads.path_of(d) is None and not kwargs and not args:
                return f()
        return _MISSING

    def apply_python(self, f, args, kwargs, node):
        """A Python function, partial, method or callable object: inlined (an error for
        anything else)."""
        if isinstance(f, types.FunctionType):
            return self.inline(f, args, kwargs, node)
        reads = self.b.reads
        if isinstance(f, functools.partial) and isinstance(f.func, types.FunctionType):
            # what it binds is read like any value from outside (guarded, arrays by path)
            func = reads.attr(f, "func", f.func)
            bound_args = reads.attr(f, "args", f.args)
            keywords = reads.attr(f, "keywords", f.keywords)
            return self.inline(func, list(bound_args) + list(args), {**keywords, **kwargs},
                               node)
        call = getattr(type(f), "__call__", None)
        if isinstance(call, types.FunctionType) and not isinstance(f, type) and \
                not isinstance(f, types.MethodType) and not _is_transformed(f):
            f = reads.attr(f, "__call__", f.__call__)  # an object with a __call__ method
        if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
            if f.__defaults__ or f.__kwdefaults__:  # guarded through the method's path
                reads.attr(f, "__defaults__", f.__defaults__)
                reads.attr(f, "__kwdefaults__", f.__kwdefaults__)
            return self.inline(f.__func__, [f.__self__] + list(args), kwargs, node)
        name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
        mod = getattr(f, "__module__", None)
        full = f"{mod}.{name}" if mod and mod != "builtins" else name
        raise self.error(f"call to {full}, which is neither an op of srcgrad's op set nor a "
                         "Python function with source code; see runtime.ops for the "
                         "supported numpy functions", node, UnknownFunctionError)

    # -- inlining -------------------------------------------------------------------------------

    def _check_recursion(self, key, name, node):
        if key in self.stack:
            raise self.error(f"recursive call to {name!r}: recursion is not supported "
                             "(rewrite it as a loop)", node, RecursiveCallError)

    def inline(self, f, args, kwargs, node):
        # a function may be inlined inside itself for another object (a module's __call__
        # of its submodules, a walk over a tree of objects): the objects are finite, and
        # each is given once, so the inlining ends; for the same object, or values known
        # only at run time, it is recursion, which is refused
        f = unwrap(f)  # (the code compiled: what a transparent wrapper passes its arguments to)
        key = (f.__code__, id(args[0])) if args and _compile_time_object(args[0]) \
            else f.__code__
        if (key != f.__code__ and f.__code__ in self.stack) or sum(
                k is f.__code__ or (type(k) is tuple and k[0] is f.__code__)
                for k in self.stack) >= _MAX_REENTRIES:
            raise self.error(f"recursive call to {f.__name__!r}: recursion is not supported "
                             "(rewrite it as a loop)", node, RecursiveCallError)
        self._check_recursion(key, f.__name__, node)
        src = parse_function(f)
        if f.__defaults__ or f.__kwdefaults__:  # the defaults it is inlined with
            self.b.reads.attr(f, "__defaults__", f.__defaults__)
            self.b.reads.attr(f, "__kwdefaults__", f.__kwdefaults__)
        try:
            # (the code inlined is f's own: a wrapper's *args, not what it wraps)
            bound = inspect.signature(f, follow_wrapped=False).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"in the call to {f.__name__}: {e}", node) from None
        bound.apply_defaults()
        env = dict(bound.arguments)
        sub = Lowerer(src, self.b, env, self.stack + (key,))
        sub.caller = self  # an in-place update in the callee changes the caller's array too
        return sub.run_inlined()

    def inline_local(self, lf: _LocalFunction, args, kwargs, node):
        self._check_recursion(lf.node, lf.__name__, node)
        a = lf.node.args
        if a.vararg or a.kwarg:
            raise self.unsupported("*args and **kwargs in nested functions are", lf.node)
        names = [p.arg for p in a.posonlyargs + a.args]
        defaults = lf.defaults
        env = {}
        for n, v in zip(names, args):
            env[n] = v
        for n, v in kwargs.items():
            env[n] = v
        for n, d in zip(names[len(names) - len(defaults):], defaults):
            env.setdefault(n, d)
        for p, d in zip(a.kwonlyargs, lf.kw_defaults):
            if p.arg not in env and d is not _MISSING:
                env[p.arg] = d
        missing = [n for n in names + [p.arg for p in a.kwonlyargs] if n not in env]
        if missing:
            raise self.error(f"{lf.__name__}() is missing arguments: {', '.join(missing)}",
                             node)
        for scope in reversed(lf.cells):  # the names of the comprehensions it was made in
            for n, v in scope.items():
                env.setdefault(n, v)
        src = Source(lf.lowerer.src.fn, lf.lowerer.src.filename, lf.lowerer.src.firstlineno,
                     lf.node, lf.lowerer.src.lines, lf.lowerer.src.globals,
                     lf.lowerer.src.closure)
        sub = Lowerer(src, self.b, env, self.stack + (lf.node,), outer=lf.lowerer)
        return sub.run_inlined()

    def run_inlined(self):
        saved = (self.b.loc, self.b.hint)
        try:
            self.run_body(self.src.tree.body)
        except _Return as r:
            return r.value
        finally:
            self.b.loc, self.b.hint = saved
            self.finished = True  # (its names: what the functions it made read, see `_held`)
        return None


#: the methods numpy calls to turn an object into an array or a number
_CONVERSIONS = ("__array__", "__float__", "__int__", "__index__", "__complex__", "__len__",
                "__getitem__", "__iter__")

_STATIC_BUILTINS = {builtins.len, builtins.float, builtins.int, builtins.bool, builtins.abs,
                    builtins.pow, builtins.min, builtins.max, builtins.sum, builtins.range,
                    builtins.tuple, builtins.list, builtins.zip, builtins.enumerate,
                    builtins.reversed, builtins.isinstance, builtins.iter, builtins.sorted,
                    builtins.type, builtins.getattr, builtins.hasattr, builtins.super}


#: iterables `for` knows how to walk without building them: function -> Lowerer method
_PLANS = {builtins.range: Lowerer.plan_range, builtins.reversed: Lowerer.plan_reversed,
          builtins.enumerate: Lowerer.plan_enumerate, builtins.zip: Lowerer.plan_zip}

#: builtins the lowerer evaluates itself: function -> Lowerer method
_BUILTIN_CALLS = {
    **{f: Lowerer.call_math for f in _MATH},
    builtins.len: Lowerer.call_len, builtins.iter: Lowerer.call_iter,
    builtins.float: Lowerer.call_number, builtins.int: Lowerer.call_number,
    builtins.bool: Lowerer.call_number,
    builtins.abs: Lowerer.call_abs, builtins.pow: Lowerer.call_pow,
    builtins.min: Lowerer.call_min_max, builtins.max: Lowerer.call_min_max,
    builtins.sum: Lowerer.call_sum, builtins.sorted: Lowerer.call_sorted,
    builtins.getattr: Lowerer.call_getattr, builtins.hasattr: Lowerer.call_getattr,
    functools.partial: Lowerer.call_partial, builtins.super: Lowerer.call_super,
    **{f: Lowerer.call_static for f in (builtins.range, builtins.tuple, builtins.list,
                                        builtins.zip, builtins.enumerate, builtins.reversed,
                                        builtins.isinstance, builtins.type)},
}


def _numpy_python_function(f) -> bool:
    """A function of numpy's written in Python that srcgrad has no spelling of (whose
    source it would otherwise compile)."""
    return isinstance(f, types.FunctionType) and _hashable(f) and lookup(f) is None and \
        str(getattr(f, "__module__", "")).split(".")[0] == "numpy"


#: standard-library modules whose Python functions (and methods) are side effects, never
#: part of a computation: a call of one runs as written (`log.debug("%f", v)`)
_AS_WRITTEN_MODULES = frozenset({"logging", "warnings", "pprint", "traceback", "pdb", "json",
                                 "pickle", "csv", "io", "os", "shutil", "tempfile", "time"})


def _lowerable(f) -> bool:
    """Does `Lowerer.apply` lower a call of `f` (rather than refuse it as unknown)? A
    call it does not is run as written (srcgrad.verbatim) when its statement allows."""
    if isinstance(f, (_BoundMethod, Primitive, _LocalFunction, _LocalPartial)) or \
            not _hashable(f) or f is functools.partial:
        return True
    if lookup(f) is not None or f in _MATH or f in _STATIC_BUILTINS:
        return True
    fn = getattr(f, "__func__", f)
    if isinstance(fn, types.FunctionType) and str(getattr(fn, "__module__", "")).split(
            ".")[0] in _AS_WRITTEN_MODULES:
        return False  # logging's and the like: they run as written
    if isinstance(f, types.FunctionType):  # (srcgrad's own functions are not inlined)
        return not str(getattr(f, "__module__", "")).startswith(("srcgrad.", "runtime."))
    owner = getattr(f, "__self__", None)
    if isinstance(f, types.BuiltinMethodType) and (
            (isinstance(owner, list) and f.__name__ in ("append", "extend", "pop", "index")) or
            (type(owner) is dict and f.__name__ in ("get", "keys", "values", "items"))):
        return True
    if isinstance(f, functools.partial):
        return isinstance(f.func, types.FunctionType)
    if isinstance(f, types.MethodType):
        return isinstance(f.__func__, types.FunctionType)
    call = getattr(type(f), "__call__", None)
    return isinstance(call, types.FunctionType) and not isinstance(f, type) and \
        not _is_transformed(f)


def _is_transformed(f) -> bool:
    """A function srcgrad transformed (srcgrad.api.CompiledFunction): a call of it is no
    call of the Python function it wraps, so it is never inlined."""
    return getattr(type(f), "__srcgrad_transformed__", False)


#: how many times one function may be inlined inside itself (for other objects)
_MAX_REENTRIES = 32


def _compile_time_object(v) -> bool:
    """An object srcgrad holds while compiling, known by its identity: not a run-time
    value, not a number, string or tuple (whose identity says nothing)."""
    return not isinstance(v, (Var, numbers.Number, str, bytes, tuple, frozenset, type(None),
                              numpy.ndarray, numpy.generic, type, types.FunctionType))


def _hashable(f) -> bool:
    try:
        hash(f)
    except TypeError:
        return False
    return True


def _parameters(low, params, varargs, trees):
    """(graph inputs, each parameter's value, each parameter's leaves): one Var per
    parameter, or with `trees` a structure of Vars per structured argument."""
    if trees is None:
        inputs = [Var(p, "array") for p in params]
        # *args and **kwargs: a tuple and a dict known only at run time, for statements
        # that run as written (srcgrad.verbatim); items of them are read as values
        for v in inputs:
            if v.hint in varargs:
                low.b.opaque.add(v.id)
                v.dclass = ("object", v.id)
        return inputs, list(inputs), [[v] for v in inputs]
    taken = set(params)
    inputs, values, leaves = [], [], []
    for p, tree in zip(params, trees):
        if tree is None:
            v = Var(p, "array")
            values.append(v)
            leaves.append([v])
        else:
            values.append(pytree.build(tree, p, Var, taken))
            leaves.append(pytree.leaves_of(tree, values[-1]))
        inputs.extend(leaves[-1])
    return inputs, values, leaves


def _known_classes(v) -> tuple:
    """(shape class, dtype class) of a loop's initial value where they are known (one
    shape, one dtype: a specialized variant's), else None for each."""
    if not isinstance(v, Var) or v.kind != "array" or v.const_name is not None:
        return (None, None)
    s = v.sclass if v.sclass == SCALAR or v.sclass[0] == "k" else None
    d = v.dclass if len(v.dclass) == 2 and v.dclass[0] in ("f", "k") and \
        isinstance(v.dclass[1], str) else None
    return (s, d)


def _kept_classes(assumed, nxt) -> tuple:
    """The assumed classes of a carry that its value at the end of an iteration has."""
    s, d = assumed
    if not isinstance(nxt, Var) or nxt.kind != "array":
        return (None, None)
    return (s if s == nxt.sclass else None, d if d == nxt.dclass else None)


def lower(fn, same=(), floats=(), trees=None, spec=None) -> tuple[Graph, Source, dict]:
    """Lower `fn` to a Graph whose inputs are its parameters and whose outputs are its
    return value (flattened: see `Graph.outputs`). Returns (graph, source, reads): what it
    read from outside the function (srcgrad.guards).
    The parameters at the indices `same` are taken to have one shape and one dtype (for
    the fast path that runs when a call's arguments do); those at `floats` to be floating
    point (the generated code makes them so). `trees` (srcgrad.pytree) gives, per
    parameter, the treedef of a structured argument (None for one value): the parameter
    is then bound to that structure of Vars, one graph input per run-time leaf, and
    `graph.params` holds each parameter's value (a Var or a structure). `spec` (a variant
    specialized to its arguments, srcgrad.specialize) gives per graph input the
    (shape, dtype) of a numpy array, or None: those shapes and dtypes are then known at
    compile time (a guard in the generated code holds the call to them)."""
    src = parse_function(fn)
    a = src.tree.args
    key = (fn.__code__, id(fn.__self__)) if isinstance(fn, types.MethodType) and \
        _compile_time_object(fn.__self__) else fn.__code__  # (see `Lowerer.inline`)
    low = Lowerer(src, Builder(), {}, (key,))
    if isinstance(fn, types.MethodType):  # `self` is the object, read like a global
        first = (a.posonlyargs + a.args)[0].arg
        low.self_name = first
        low.env[first] = low.b.reads.root(Path(self_scope(fn), first), fn.__self__)
        a = copy.copy(a)
        a.posonlyargs, a.args = (a.posonlyargs[1:], a.args) if a.posonlyargs else \
            ([], a.args[1:])
        src.tree = copy.copy(src.tree)
        src.tree.args = a  # the generated function's signature: the bound one
    params = [p.arg for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) +
              a.kwonlyargs + ([a.kwarg] if a.kwarg else [])]
    varargs = {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    inputs, values, leaves = _parameters(low, params, varargs, trees)
    low.b.inputs.update(v.id for v in inputs)
    for i in floats:
        for v in leaves[i]:
            v.dclass = ("f", v.id)
            low.b.numpy_made.add(v.id)  # (the prologue makes it numpy's: as_float)
    for i in same:
        inputs[i].sclass, inputs[i].dclass = ("same",), ("same",)
    for v, known in zip(inputs, spec or ()):
        if known is not None:
            v.sclass, v.dclass = staging_known(known[0]), dtype_class(known[1])
    low.env.update(zip(params, values))
    low.b.frozen = {id(c) for v in values for c in _containers(v)}  # the caller's structures
    with staging(low.b):
        try:
            low.run_body(src.tree.body)
            result = None
        except _Return as r:
            result = r.value
        except verbatim.Raised:
            result = 0.0  # never returned: the generated code raises first
    graph = Graph(inputs, low.b.eqns, [result], name=fn.__name__, named=low.b.named)
    graph.params, graph.param_leaves = values, leaves
    return checked(graph, "lowering", extra_inputs=()), src, low.b.reads


def numpy_where_derivative(eqns, active: set, producers: "dict | None" = None) -> None:
    """Python's abs(), max() or min() whose operand carries a derivative (`active`: ids, as
    the soundness check found them) is numpy's absolute, maximum or minimum: its gradient
    rule is numpy's (nan wins, ties share), which Python's value would contradict
    (max(a, nan) is a, where maximum's rule gives a nothing). The marker
    (ops.python_operand) of such a call becomes ops.numpy_operand, which it is written
    through as numpy's call."""
    producers = {} if producers is None else producers
    for e in eqns:
        for o in e.outs:
            producers[o.id] = e
        if any(isinstance(a, Var) and a.id in active for a in e.ins):
            for a in e.ins:
                p = producers.get(a.id) if isinstance(a, Var) else None
                if p is not None and p.prim is ops.python_operand:
                    p.prim = ops.numpy_operand
        for b in e.blocks():
            numpy_where_derivative(b.eqns, active, producers)

