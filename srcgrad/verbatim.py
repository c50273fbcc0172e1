"""Statements that run as written.

A statement srcgrad cannot or need not differentiate (`self.nfev += 1`, `print(...)`,
`rng = np.random.default_rng(0)`, `assert ...`, `try`, `with`, `raise`) is not lowered to
ops: it becomes one `python` equation that holds its syntax tree, and the generated code
holds the statement itself, run at every call, in order, with its side effects:

    # (user)                          # (generated)
    self.nfev += 1                    self.nfev += 1
    noise = rng.normal(size=x.shape)  noise = rng.normal(size=np.shape(x))

What the statement reads becomes the equation's inputs (a run-time value's Var, a constant,
or an object outside the function, read through its namespace at every call); the local
names it binds become its outputs: values of unknown type, known only at run time, that
carry no derivative. Soundness rests on three checks:
- an output that depends on a differentiated value would drop a derivative: the ordinary
  soundness check (`ir.unsound_uses`) refuses it, since the op has no derivative rule;
- a statement that may change an array in place (`rng.shuffle(a)`, `a.sort()`, `out=a`,
  `a[0] = v` inside a `try`) rebinds that name to a new output, and is refused when the
  array depends on a differentiated value (`mutated_active`);
- a value outside the function the statement changes (`self.nfev`, `CFG['n']`, the list
  `self.history`) is not read at compile time before or after it (`guards.Reads.changed`).
"""
from __future__ import annotations

import ast
import builtins
import copy
import dis
import functools
import inspect
import types

import numpy

from .errors import UnknownFunctionError, UnsupportedSyntaxError
from .guards import ABSENT
from .ir import PYTHON, SCALAR, Eqn, Var
from .scopes import Path, scope_of

__all__ = ["Code", "reason", "hoist", "stage", "mutated_active", "changed_names", "stale_read",
           "check_changes", "changed_in_place"]

_KIND = {ast.Try: "a `try` statement", ast.With: "a `with` statement",
         ast.Raise: "a `raise` statement", ast.Assert: "an `assert` statement",
         ast.Delete: "a `del` statement"}
if hasattr(ast, "TryStar"):
    _KIND[ast.TryStar] = "a `try` statement"

# methods that change the object they are called on
MUTATING_METHODS = {"fill", "sort", "partition", "resize", "put", "itemset", "setflags",
                     "byteswap", "shuffle", "append", "extend", "insert", "pop", "remove",
                     "clear", "update", "setdefault", "popitem", "add", "discard", "reverse",
                     "__setitem__", "__delitem__", "__iadd__", "__imul__", "__isub__",
                     "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__",
                     "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"}
# functions that change the array they are given first
_MUTATING_FUNCTIONS = {"shuffle", "copyto", "put", "place", "putmask", "fill_diagonal",
                       "at", "put_along_axis",
                       # operator's: `operator.setitem(z, i, v)`, `operator.iadd(z, v)`
                       "setitem", "delitem", "iadd", "isub", "imul", "itruediv", "ifloordiv",
                       "imod", "ipow", "imatmul", "iand", "ior", "ixor", "ilshift",
                       "irshift", "iconcat"}
# modules whose functions change their arguments only as `_MUTATING_FUNCTIONS` say
_KNOWN_MODULES = ("numpy", "builtins", "math", "cmath", "random", "time", "logging",
                  "warnings", "json", "os", "sys", "itertools", "functools", "operator",
                  "statistics", "pprint", "copy", "collections", "scipy", "srcgrad",
                  "runtime", "io", "pathlib")


class Code:
    """The `code` parameter of a `python` equation."""

    def __init__(self, node, reads, writes, fixed, mutates, why, call=None):
        self.node = node  # the statement (a private copy)
        self.call = call  # (qualified name, line, column) of the call it runs for, if any
        self.reads = reads  # user names, in the order of the equation's inputs
        self.writes = writes  # user names, in the order of its outputs
        self.fixed = fixed  # name -> ("builtin",) or ("module", module name)
        self.mutates = mutates  # indices of inputs the statement may change in place
        self.why = why  # why it runs as written, for messages
        # the class of the object whose method it calls, where the function made that
        # object (`c = Child(2.0); c.f(x)`), for messages
        self.receiver_class = None

    @property
    def always_binds(self) -> bool:
        """Does the statement bind every name it writes when it completes?"""
        return isinstance(self.node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr))

    def __repr__(self):
        first = ast.unparse(self.node).splitlines()[0]
        return f"<python: {first}>"

    def render(self, names: dict) -> list:
        """The statement's lines, each user name replaced as `names` says (by a name or
        by expression text)."""
        node = _Rename(names).visit(copy.deepcopy(self.node))
        ast.fix_missing_locations(node)
        return ast.unparse(node).splitlines()


# ---- names ----------------------------------------------------------------------------------

class _Scan:
    """The free names a statement reads and the names it binds, Python's scoping rules
    applied to the comprehensions and lambdas inside it; constructs that cannot run as
    part of a generated function are noted in `bad`."""

    def __init__(self):
        self.reads: list = []
        self.writes: list = []
        self.bad: list = []  # (node, what)

    def stmt(self, node, bound=frozenset()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bad.append((node, "a function or class definition"))
            return
        if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
            word = type(node).__name__.lower()
            self.bad.append((node, f"`{word}`"))
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            self.bad.append((node, f"a `{type(node).__name__.lower()}` declaration"))
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    self.bad.append((node, "`import *`"))
                else:
                    self.write((alias.asname or alias.name).split(".")[0], bound)
            return
        if isinstance(node, ast.ExceptHandler) and node.name:
            self.write(node.name, bound)
        for field, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.stmt) or isinstance(child, ast.ExceptHandler):
                    self.stmt(child, bound)
                elif isinstance(child, ast.AST):
                    self.expr(child, bound)

    def write(self, name, bound):
        if name not in bound and name not in self.writes:
            self.writes.append(name)

    def read(self, name, bound):
        if name not in bound and name not in self.reads:
            self.reads.append(name)

    def expr(self, node, bound):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.read(node.id, bound)
            else:
                self.write(node.id, bound)
            return
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            self.bad.append((node, "`yield` or `await`"))
            return
        if isinstance(node, ast.Lambda):
            a = node.args
            for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
                self.expr(d, bound)
            params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
            self.expr(node.body, bound | params)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(bound)
            for i, gen in enumerate(node.generators):
                self.expr(gen.iter, bound if i == 0 else frozenset(inner))
                inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
                for cond in gen.ifs:
                    self.expr(cond, frozenset(inner))
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for e in elts:
                self.expr(e, frozenset(inner))
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, bound)
            elif isinstance(child, ast.AST):  # keywords, comprehension parts, slices
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.expr):
                        self.expr(sub, bound)


class _Rename(ast.NodeTransformer):
    """Replace free names (not those bound by a comprehension or lambda inside)."""

    def __init__(self, names: dict):
        self.names = names
        self.bound: list = [set()]

    def _free(self, name):
        return not any(name in b for b in self.bound) and name in self.names

    def visit_Name(self, node):
        if not self._free(node.id):
            return node
        text = self.names[node.id]
        if text.isidentifier() or not isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(id=text, ctx=node.ctx), node)
        return ast.copy_location(ast.parse(text, mode="eval").body, node)

    def visit_ExceptHandler(self, node):
        if node.name and self._free(node.name):
            node.name = self.names[node.name]
        self.generic_visit(node)
        return node

    def visit_alias(self, node):
        name = (node.asname or node.name).split(".")[0]
        if self._free(name) and node.asname:
            node.asname = self.names[name]
        elif self._free(name) and self.names[name] != name:
            node.asname = self.names[name]
        return node

    def visit_Lambda(self, node):
        a = node.args
        a.defaults = [self.visit(d) for d in a.defaults]
        a.kw_defaults = [None if d is None else self.visit(d) for d in a.kw_defaults]
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
        self.bound.append(params)
        node.body = self.visit(node.body)
        self.bound.pop()
        return node

    def _comprehension(self, node, elts):
        inner: set = set()
        for i, gen in enumerate(node.generators):
            if i > 0:
                self.bound.append(inner)
            gen.iter = self.visit(gen.iter)
            if i > 0:
                self.bound.pop()
            inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            self.bound.append(inner)
            gen.ifs = [self.visit(c) for c in gen.ifs]
            self.bound.pop()
        self.bound.append(inner)
        for e in elts:
            setattr(node, e, self.visit(getattr(node, e)))
        self.bound.pop()
        return node

    def visit_ListComp(self, node):
        return self._comprehension(node, ["elt"])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        return self._comprehension(node, ["key", "value"])


# ---- what a statement changes -----------------------------------------------------------------

def root_of(node):
    """The Name an attribute/item chain starts at, and its steps (None for a step that is
    not a constant)."""
    steps = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr))
        else:
            key = node.slice
            steps.append(("item", key.value) if isinstance(key, ast.Constant) else None)
        node = node.value
    steps = steps[::-1]
    for i in range(len(steps) - 1):  # `obj.__dict__["w"]` is the attribute `obj.w`
        if steps[i] == ("attr", "__dict__") and steps[i + 1] is not None and \
                isinstance(steps[i + 1][1], str):
            steps[i:i + 2] = [("attr", steps[i + 1][1])]
            break
    if steps and steps[-1] == ("attr", "__dict__"):
        steps = steps[:-1]  # `obj.__dict__.update(w=...)` changes obj
    return (node.id if isinstance(node, ast.Name) else None), steps


def _callee_name(func) -> "str | None":
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None


def changes(node, peek) -> list:
    """(root name, steps) of what the statement may change in place: store targets that
    are attributes or items, receivers of mutating methods, arguments of functions that
    change their arguments (numpy's `shuffle`, `out=`...), and every argument of a
    function srcgrad knows nothing about (a callable from outside the standard library
    and numpy, with no source). `peek(func_node)` gives the callee object or None."""
    found = []
    inner = _bindings(node, peek)  # name -> whether each binding is a new array
    aliased = []

    def add(target):
        name, steps = root_of(target)
        if name is not None:
            steps = steps[:steps.index(None)] if None in steps else steps
            found.append((name, tuple(steps)))
            if inner.get(name) is False:
                aliased.append(name)

    def add_all(exprs):
        for a in exprs:
            for part in ast.walk(a):
                if isinstance(part, (ast.Name, ast.Attribute, ast.Subscript)) and \
                        isinstance(part.ctx, ast.Load) and not _is_code(peek(part)):
                    add(part)

    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                add(n.target)  # `z += 1.0` changes the array z is bound to
            for t in targets:
                for part in ast.walk(t):
                    if isinstance(part, (ast.Attribute, ast.Subscript)) and \
                            isinstance(part.ctx, (ast.Store, ast.Del)):
                        add(part)  # `a.b[i] = v` with i not constant: all of `a.b`
        elif isinstance(n, ast.Call):
            fname = _callee_name(n.func)
            args = list(n.args) + [k.value for k in n.keywords]
            if isinstance(n.func, ast.Attribute) and fname in MUTATING_METHODS and \
                    not isinstance(peek(n.func.value), types.ModuleType):
                add(n.func.value)  # `x.sort()`; `np.partition(x, k)` is a function
                recv = n.func.value
                if isinstance(recv, ast.Call) and recv.args and \
                        peek(recv.func) is builtins.vars:
                    add(recv.args[0])  # `vars(obj).update(w=...)` changes obj
            for k in n.keywords:
                if k.arg == "out":
                    for part in ast.walk(k.value):
                        if isinstance(part, (ast.Name, ast.Attribute, ast.Subscript)):
                            add(part)
            callee = peek(n.func)
            first_out = _first_output(callee, fname)
            if first_out is not None:
                for a in n.args[first_out:]:  # `np.divmod(a, b, q, r)`, `rng.random(n,
                    for part in ast.walk(a):  # np.float64, z)`, `np.add.reduce(a, 0,
                        if isinstance(part, (ast.Name, ast.Attribute, ast.Subscript)):
                            add(part)         # None, z)`: outputs given by position
            if fname in _MUTATING_FUNCTIONS:  # (they change their first argument)
                for a in n.args[:1] or args:
                    add(a)
            dunder = fname in ("__setattr__", "__delattr__") and \
                isinstance(n.func, ast.Attribute)  # `cfg.__setattr__("p", p)`
            unbound = dunder and isinstance(peek(n.func.value), type)  # `object.__setattr__(
            if unbound:                                                # cfg, "p", p)`
                dunder = False
            target = n.func.value if dunder else n.args[0] if n.args and (unbound or callee in (
                builtins.setattr, builtins.delattr)) else None
            if target is not None:  # `setattr(cfg, "p", p)`
                rest = n.args if dunder else n.args[1:]
                name = rest[0] if rest else None
                add(ast.Attribute(value=target, attr=name.value, ctx=ast.Load())
                    if isinstance(name, ast.Constant) and isinstance(name.value, str)
                    else target)
            elif callee is None and not (isinstance(n.func, ast.Attribute) and
                                         fname in _RUN_TIME_METHODS):
                # a callable known only at run time (`helper.into(z)` of an object made
                # in the function, `getattr(z, "fill")(v)`, `fns[k](z)`): it may change
                # its arguments, its object and what its expression reads
                add_all(args + [n.func])
            elif not _known_module(callee):
                for a in args:
                    if isinstance(a, (ast.Name, ast.Attribute, ast.Subscript)):
                        add(a)
                fn = _function_of(callee)
                if fn is not None:  # a Python function of the user's: what it may change
                    changes_self, names = _effects(fn, getattr(callee, "__self__", callee))
                    if changes_self and isinstance(callee, types.MethodType) and \
                            not isinstance(callee.__self__, (type, types.ModuleType)):
                        # `print(self.refresh())`: it changes `self`; `r = m.refresh;
                        # print(r())`: the object r is bound to
                        add(n.func.value if isinstance(n.func, ast.Attribute) else
                            ast.Attribute(value=n.func, attr="__self__", ctx=ast.Load()))
                    elif changes_self and not isinstance(
                            callee, (types.FunctionType, types.MethodType, type)):
                        add(n.func)  # an object's own `__call__` changes the object
                    for name, value in names.items():  # `global LR; LR *= 0.5`,
                        g = ast.Name(id=name, ctx=ast.Load())  # `CFG["lr"] *= 0.5` in it
                        if value is not ABSENT and peek(g) is value:
                            add(g)
    if aliased:
        # a name the statement binds to what may be an array it reads (`for p in params:
        # p -= v`, `a = z.reshape(4)`) is changed in place: any array it reads may be
        add_all([node])
    return found


# freshly made arrays: changing one in place changes nothing else
_FRESH_CALLS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                "full_like", "array", "arange", "linspace", "eye", "identity", "copy"}


def _bindings(node, peek) -> dict:
    """The names a statement binds -> whether every binding is to a new array (`y = x *
    2`, `y = np.zeros(3)`, `y = z.copy()`), not to what may be an array it reads."""
    inner = {}

    def fresh(value):
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant,
                              ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.ListComp)):
            return True
        if isinstance(value, ast.Call) and _callee_name(value.func) in _FRESH_CALLS:
            f = peek(value.func)
            return getattr(f, "__module__", None) == "numpy" or \
                f is None and _callee_name(value.func) == "copy"
        return False

    seen = set()  # (targets of `=` and `+=`, handled where they are met)
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets):
            for t in n.targets:
                inner[t.id] = inner.get(t.id, True) and fresh(n.value)
                seen.add(id(t))
        elif isinstance(n, ast.AugAssign):
            seen.add(id(n.target))  # (`z += v` keeps z the array it was)
        elif isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name):
            # (what a context manager's __enter__ gives: arrays have none)
            inner.setdefault(n.optional_vars.id, True)
            seen.add(id(n.optional_vars))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and \
                id(n) not in seen:
            inner[n.id] = False  # bound by `for`, `with ... as`, unpacking, `:=`...
    return inner


def _is_code(value) -> bool:
    """Modules, functions and classes: what a statement reads to call, not to change."""
    return isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                              types.MethodType, type, numpy.ufunc))


def changed_names(low, stmts) -> list:
    """Names whose whole value the statements may change in place (`buf.fill(0.0)`,
    `np.copyto(z, v)`, `rng.shuffle(z)`): a loop carries them, as it does a name it
    assigns, since such a statement binds the name to the changed value."""
    names = []
    for stmt in stmts:
        for name, steps in changes(stmt, lambda f: _callee(low, f)):
            if not steps and name not in names:
                names.append(name)
    return names


def _out_index(f, bound: bool) -> "int | None":
    """The position of `f`'s parameter `out` when it may be given by position (not
    counting `self` where `f` is bound), or None."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if p.name == "out":
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                return i if bound else i - 1
            return None
    return None


def _methods_with_output() -> dict:
    """Method name -> the first position that may be an output, over numpy's classes whose
    methods take one (`Generator.random(size, dtype, out)`, `ndarray.sum(axis, dtype,
    out)`, `ufunc.reduce(array, axis, dtype, out)`): for a method of a value known only
    at run time, whose class is not known, the smallest position any of them has."""
    found = {}
    for cls in (numpy.random.Generator, numpy.random.RandomState, numpy.ndarray,
                numpy.ufunc):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                i = _out_index(member, bound=False)
                if i is not None:
                    found[name] = min(i, found.get(name, i))
    return found


_METHODS_WITH_OUTPUT = _methods_with_output()
# method names of the objects a statement that runs as written most often makes (a
# Generator, an array, a list, a dict...): the methods the module docstring's rules know
_RUN_TIME_METHODS = frozenset(
    name for cls in (numpy.ndarray, numpy.generic, numpy.random.Generator,
                     numpy.random.RandomState, numpy.random.BitGenerator, numpy.ufunc,
                     numpy.dtype, list, dict, set, frozenset, tuple, str, bytes, int, float,
                     complex) for name in dir(cls) if not name.startswith("__"))


def _first_output(f, name) -> "int | None":
    """The first position of a call's arguments that may be an output array the call
    writes into (a ufunc's after its inputs), or None."""
    if f is None:  # a method of a run-time value: of numpy's classes, by its name
        return _METHODS_WITH_OUTPUT.get(name)
    if isinstance(f, numpy.ufunc):
        return f.nin
    try:
        return _signature_out(f)
    except TypeError:  # not hashable
        return _out_index(f, bound=True)


@functools.lru_cache(maxsize=512)
def _signature_out(f) -> "int | None":
    return _out_index(f, bound=True)


def _function_of(f):
    """The Python function a call of `f` runs: a function's, a method's, a callable
    object's `__call__`; None for anything else."""
    if isinstance(f, types.MethodType):
        f = f.__func__
    elif not isinstance(f, (types.FunctionType, type)) and f is not None:
        f = getattr(type(f), "__call__", None)
    return f if isinstance(f, types.FunctionType) else None


#: instructions that change an object or a module's name (an item or an attribute stored
#: or deleted: of the object the method is of, or of a value it reads)
_CHANGING_OPS = frozenset({"STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR",
                           "STORE_SLICE", "STORE_GLOBAL", "DELETE_GLOBAL"})


def _effects(fn, obj, depth: int = 0, seen=None) -> "tuple[bool, dict]":
    """What calling Python function `fn` (a method of `obj`, or a function: `obj` is then
    `fn`) may change, read from its bytecode and that of the functions and methods of
    `obj` it calls, a few levels deep: (whether it may change an object it reaches,
    taken for `obj` itself; name -> value of the module-level names and closure cells of
    `fn` that it rebinds, or whose mutable values it reads where it changes something).
    A function that stores nothing and calls no mutating method nor a function that does
    changes nothing. Conservative: a call it cannot follow may change anything."""
    seen = set() if seen is None else seen
    if id(fn.__code__) in seen:
        return False, {}
    seen.add(id(fn.__code__))
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    changes, loads, stored, calls, derefs = False, set(), set(), [], set()
    todo = [fn.__code__]
    while todo:
        code = todo.pop()
        for ins in dis.get_instructions(code):
            op, arg = ins.opname, ins.argval
            if op in _CHANGING_OPS:
                changes = True
                if op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                    stored.add(arg)
            elif op in ("LOAD_METHOD", "LOAD_ATTR") and arg in MUTATING_METHODS:
                changes = True
            elif op == "LOAD_GLOBAL":
                loads.add(arg)
            elif op == "LOAD_DEREF" and code is fn.__code__ and arg in cells:
                derefs.add(arg)
            if op in ("LOAD_METHOD", "LOAD_ATTR", "LOAD_GLOBAL", "LOAD_DEREF"):
                calls.append(arg)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    names = {n: fn.__globals__.get(n, ABSENT) for n in stored}

    def cell(n):
        try:
            return cells[n].cell_contents
        except ValueError:
            return ABSENT

    for name in calls:  # functions of its module and methods of its object it calls
        target = cell(name) if name in derefs else fn.__globals__.get(name) \
            if name in loads else getattr(type(obj), name, None) if obj is not fn else None
        if isinstance(target, (types.FunctionType, types.MethodType)) or \
                (target is not None and _function_of(target) is not None and
                 not isinstance(target, type)):
            inner = _function_of(target)
            if inner is None or depth >= 4:
                changes = True
                continue
            more, more_names = _effects(
                inner, obj if name not in loads and name not in derefs else inner,
                depth + 1, seen)
            changes = changes or more
            names.update(more_names)
        elif callable(target) and not _known_module(target) and (name in loads or
                                                                 name in derefs):
            changes = True  # a callable of unknown effects (a C extension's)
    if changes:  # what it reads from its module and its cells and could have changed
        names.update((n, v) for n in loads
                     if _mutable_value(v := fn.__globals__.get(n, None)))
        names.update((n, v) for n in derefs if _mutable_value(v := cell(n)))
    return changes, names


def _mutable_value(v) -> bool:
    return v is not None and not is_immutable(v) and not isinstance(
        v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
            types.MethodType, numpy.ufunc))


def _known_module(f) -> bool:
    if f is None:
        return True  # a method of a run-time value: numpy's, by the method names above
    if f in (builtins.print, builtins.len, builtins.repr, builtins.str, builtins.isinstance):
        return True
    mod = getattr(f, "__module__", None) or getattr(getattr(f, "__self__", None),
                                                    "__module__", None)
    if isinstance(f, types.BuiltinMethodType) and type(f.__self__) in (list, dict, set):
        return True  # append & co. change the receiver (above), not their arguments
    return isinstance(mod, str) and mod.split(".")[0].lstrip("_") in _KNOWN_MODULES


def kind_of(node) -> "str | None":
    """Why a statement of this kind always runs as written, or None."""
    return _KIND.get(type(node))


def scan(node) -> _Scan:
    s = _Scan()
    s.stmt(node)
    return s


def is_immutable(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, numpy.generic,
                                   type(Ellipsis), range, slice)):
        return True
    if isinstance(v, (tuple, frozenset)):
        return all(is_immutable(x) for x in v)
    return False


def mutated_active(eqns, active: set):
    """The first `python` equation (recursively) that may change in place an array that
    depends on a differentiated value, or None."""
    for e in eqns:
        if e.prim is PYTHON:
            for i in e.params["code"].mutates:
                v = e.ins[i]
                if isinstance(v, Var) and v.id in active:
                    return e, e.params["code"].reads[i]
        for b in e.blocks():
            found = mutated_active(b.eqns, active)
            if found:
                return found
    return None


def unsound_error(e, i):
    """The error for a differentiated value that reaches input `i` of the `python`
    equation `e`, whose outputs the result depends on."""
    import linecache


    code, loc = e.params["code"], e.loc
    name = code.reads[i] if i < len(code.reads) else "a value"
    outs = ", ".join(f"`{w}`" for w in code.writes if "." not in w)
    if code.call is not None:
        fname, lineno, col = code.call
        what = "numpy's own Python code that srcgrad could not compile here" \
            if fname.split(".")[0] == "numpy" else \
            "neither an op of srcgrad's op set nor a Python function with source code"
        advice = ("use a numpy function the op set has (`python -m srcgrad ops` lists them), "
                  "or make this one an op with srcgrad.primitive and a VJP rule"
                  f"{_closest(fname)}")
        if code.receiver_class is not None:
            recv, cls_name = fname.split(".")[0], code.receiver_class
            what = (f"a method of `{recv}`, a {cls_name} object the function makes when it "
                    f"runs (`{cls_name}(...)` runs as written, so srcgrad cannot compile its "
                    "methods)")
            advice = (f"make the {cls_name} object outside the function (a global, an "
                      "attribute, an argument that is not differentiated), where srcgrad "
                      "reads it and compiles its methods")
        msg = (f"call to {fname}, which is {what}, on a value that depends on a differentiated "
               f"argument (`{name}`): srcgrad cannot differentiate it. Such calls run as "
               "written when what they read is not differentiated (random draws, logging); "
               f"{advice}")
        cls = UnknownFunctionError
    else:
        lineno, col = (loc.lineno, loc.col) if loc is not None else (None, None)
        msg = (f"this statement runs as written ({code.why}) and srcgrad does not "
               f"differentiate it, so computing {outs or 'a value'} there from `{name}`, "
               "which depends on a differentiated argument, is not supported: compute it "
               "in a statement of its own")
        cls = UnsupportedSyntaxError
    if loc is None:
        return cls(msg)
    line = linecache.getline(loc.filename, lineno) or loc.text
    return cls(msg, loc.filename, lineno, col, line)


def _closest(fname: str) -> str:
    """"; closest supported: np.x, ..." for a name like a numpy function srcgrad has."""
    import difflib

    from runtime.ops.numpy_api import public_names

    names = public_names()
    short = {n.rsplit(".", 1)[-1]: n for n in sorted(names, key=len, reverse=True)}
    close = difflib.get_close_matches(fname.rsplit(".", 1)[-1], list(short), 3, 0.75)
    return f"; closest supported: {', '.join(short[c] for c in close)}" if close else ""


def mutated_error(e, name):
    import linecache

    code, loc = e.params["code"], e.loc
    msg = (f"a statement that runs as written ({code.why}) may change `{name}` in place, "
           f"and `{name}` depends on a differentiated argument: srcgrad would not see the "
           f"change, so this is not supported. Work on a copy (`{name}.copy()`) there")
    if loc is None:
        return UnsupportedSyntaxError(msg)
    line = linecache.getline(loc.filename, loc.lineno) or loc.text
    return UnsupportedSyntaxError(msg, loc.filename, loc.lineno, loc.col, line)


def refuse(low, node, what, why):
    return low.error(f"{what} is not supported inside a statement that runs as written "
                     f"({why})", node, UnsupportedSyntaxError)


# ---- from the lowerer --------------------------------------------------------------------------

def _bound_inside(expr) -> set:
    """Names bound by the comprehensions and lambdas inside an expression."""
    out = set()
    for n in ast.walk(expr):
        if isinstance(n, ast.comprehension):
            out |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
        elif isinstance(n, ast.Lambda):
            a = n.args
            out |= {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    return out


def _unknown_call(low, expr) -> "ast.Call | None":
    """The first call in `expr` to something srcgrad cannot lower (a function with no
    source that is no op, a method of a value known only at run time), or None."""
    inner = _bound_inside(expr)
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            root, _ = root_of(n.func)
            if root is not None and root in inner:
                continue
            if low.unknown_call(n):
                return n
    return None


def _describe(low, call) -> str:
    return f"it calls {_call_name(low, call)}, which srcgrad does not differentiate"


def _call_name(low, call) -> str:
    f = low.peek(call.func)
    if isinstance(f, low.RunTimeAttr):
        return as_written(low, call.func)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if name is None or not isinstance(name, str):
        name = as_written(low, call.func)
    else:
        mod = getattr(f, "__module__", None)
        name = f"{mod}.{name}" if isinstance(mod, str) and mod != "builtins" else name
    return name


def as_written(low, node) -> str:
    """`node`'s source, the calls hoisted out of its statement (`hoist`) as the user
    wrote them (`Waves(f, p).loss`, not the name their result was given)."""
    text = ast.unparse(node)
    for key, call in getattr(low, "hoisted_calls", {}).items():
        text = text.replace(key, call)
    return text


def reason(low, node) -> "str | None":
    """Why statement `node` runs as written, or None if it is lowered to ops.

    (Its complexity, about 30, is one flat decision per kind of statement and target; each
    answer is a sentence the user reads, so they stay side by side rather than split.)"""
    kind = kind_of(node)
    if isinstance(node, ast.Delete) and all(isinstance(t, ast.Name) for t in node.targets):
        return None  # `del name` only unbinds a name: the lowerer does it
    if kind is not None:
        return kind + " runs as written"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            for part in ast.walk(t):
                if not isinstance(part, (ast.Attribute, ast.Subscript)) or \
                        not isinstance(part.ctx, ast.Store):
                    continue
                name, _ = root_of(part)
                if isinstance(part, ast.Attribute):
                    return f"it sets the attribute `{ast.unparse(part)}`"
                value, local = low.resolve_quiet(name) if name else (None, False)
                if local and low.is_opaque(value):
                    return f"it changes `{name}`, a value known only at run time"
                if name is not None and not local and value is not low.MISSING and \
                        not isinstance(value, numpy.ndarray):
                    return f"it changes `{ast.unparse(part.value)}`, from outside the function"
                if local and not isinstance(value, numpy.ndarray) and \
                        not is_immutable(value) and low.b.reads.path_of(value) is not None:
                    return f"it changes `{ast.unparse(part.value)}`, from outside the function"
        if node.value is not None:
            call = _unknown_call(low, node.value)
            if call is not None:
                return _describe(low, call)
        return None
    if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant) or \
            isinstance(node, (ast.Return, ast.If, ast.For)):
        part = getattr(node, "value", None) or getattr(node, "test", None) or \
            getattr(node, "iter", None)
        call = _unknown_call(low, part) if part is not None else None
        if call is not None:
            return _describe(low, call)
    return None


_META = ("shape", "ndim", "size")


#: methods of an array whose result is new memory, never the array or a view of it
_FRESH_METHODS = frozenset({"sum", "mean", "std", "var", "max", "min", "prod", "copy",
                            "tolist", "item", "any", "all", "argmax", "argmin", "argsort",
                            "nonzero", "cumsum", "cumprod", "round", "clip", "dot",
                            "__len__"})


#: numpy's functions (besides its ufuncs) whose result is new memory, which holds none of
#: their arguments; and builtins of that kind
_FRESH_FUNCTIONS = frozenset({
    "median", "percentile", "quantile", "nanmedian", "nanpercentile", "nanquantile", "mean",
    "average", "std", "var", "nanmean", "nanstd", "nanvar", "sum", "nansum", "prod", "max",
    "min", "amax", "amin", "nanmax", "nanmin", "ptp", "unique", "sort", "argsort", "argmax",
    "argmin", "cumsum", "cumprod", "histogram", "bincount", "count_nonzero", "any", "all",
    "isclose", "allclose", "array_equal", "dot", "inner", "outer", "norm", "copy", "array",
    "zeros_like", "ones_like", "empty_like", "full_like", "where", "concatenate", "stack"})
#: (not max, min or sorted: they return the items they are given)
_FRESH_BUILTINS = frozenset({"str", "repr", "float", "int", "bool", "len", "format", "round",
                             "abs", "print", "any", "all", "sum"})


def _fresh_call(call, peek) -> bool:
    """Is the result of `call` new memory that holds none of its arguments (a numpy ufunc
    or reduction, str(), float()...)? Not with `out=` (what it writes into is its result)."""
    if any(k.arg in ("out", "copy") for k in call.keywords):  # (np.array(a, copy=False))
        return False
    f = peek(call.func) if peek is not None else None
    if isinstance(f, numpy.ufunc):
        return True
    name = getattr(f, "__name__", None)
    mod = str(getattr(f, "__module__", "") or "")
    if name in _FRESH_BUILTINS and f is getattr(builtins, name, None):
        return True
    return name in _FRESH_FUNCTIONS and mod.split(".")[0] == "numpy"


def _kept(node, peek=None) -> set:
    """The names whose object statement `node` may keep in what it binds, or bind a view
    of: every name it reads but those read only as an operand of an operator (a new
    array), an argument of a function whose result is new memory (np.median, str, len), or
    the object of a method that makes a new array."""
    kept, parents = set(), {}
    for n in ast.walk(node):
        for c in ast.iter_child_nodes(n):
            parents[c] = n
    for n in ast.walk(node):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
            continue
        p = parents.get(n)
        if isinstance(p, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            continue
        if isinstance(p, ast.Call) and p.func is not n and _fresh_call(p, peek):
            continue
        if isinstance(p, ast.Attribute) and p.attr in _FRESH_METHODS and \
                isinstance(parents.get(p), ast.Call) and parents[p].func is p:
            continue
        kept.add(n.id)
    return kept


def _meta_reads(low, node, known: dict):
    """Replace `x.shape`, `x.ndim`, `x.size` of a run-time array `x` in `node` (a private
    copy) by a name bound in `known` to the lowered value: a statement that reads only
    the shape of a differentiated array does not depend on its values."""
    inner = _bound_inside(node)

    class Meta(ast.NodeTransformer):
        def visit_Attribute(self, n):
            if n.attr in _META and isinstance(n.value, ast.Name) and \
                    isinstance(n.ctx, ast.Load) and n.value.id not in inner:
                v, local = low.resolve_quiet(n.value.id)
                if local and isinstance(v, Var) and v.kind == "array" and \
                        not low.is_opaque(v):
                    key = f"{n.value.id}.{n.attr}"
                    if key not in known:
                        known[key] = low.expr(n)
                    return ast.copy_location(ast.Name(id=key, ctx=ast.Load()), n)
            return self.generic_visit(n)

    return Meta().visit(node)


def _calls_to_hoist(low, node) -> "list | None":
    """The outermost calls srcgrad cannot lower in statement `node`, in the order Python
    makes them, when each is made exactly once per run of the statement (not under a
    lambda, a comprehension, a conditional expression or a later `and`/`or` operand);
    None when one is not."""
    found: list = []
    ok = True

    def visit(n, once):
        nonlocal ok
        if isinstance(n, ast.Call):
            root, _ = root_of(n.func)
            if low.unknown_call(n):
                if once:
                    found.append(n)
                else:
                    ok = False
                return
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                          ast.GeneratorExp)):
            for child in ast.walk(n):
                if isinstance(child, ast.Call) and child is not n and \
                        low.unknown_call(child):
                    ok = False
            return
        if isinstance(n, ast.IfExp):
            visit(n.test, once)
            visit(n.body, False)
            visit(n.orelse, False)
            return
        if isinstance(n, ast.BoolOp):
            visit(n.values[0], once)
            for v in n.values[1:]:
                visit(v, False)
            return
        for child in ast.iter_child_nodes(n):
            visit(child, once)

    for field in ("value", "test", "iter"):
        part = getattr(node, field, None)
        if isinstance(part, ast.AST):
            visit(part, True)
    return found if ok and found else None


def hoist(low, node) -> "ast.stmt | None":
    """`y = x * np.random.rand(3)` as `rand = np.random.rand(3)` (run as written) and
    `y = x * rand` (lowered): the statement with each call srcgrad cannot lower taken
    out, or None when it must run as written as a whole. Taken for a `return`, an
    assignment to names or array items whose value is more than the call, an `if` test
    and a `for` iterable."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(p, ast.Attribute) and isinstance(p.ctx, ast.Store)
               for t in targets for p in ast.walk(t)):
            return None
        items = any(isinstance(p, ast.Subscript) for t in targets for p in ast.walk(t))
        if isinstance(node.value, ast.Call) and low.unknown_call(node.value) and not items:
            return None  # `noise = rng.normal(...)` runs as written as it is
        if items and not all(_local_array(low, t) for t in targets):
            return None  # (`out[i] = rng.normal()` into the function's array: hoisted)
    elif not isinstance(node, (ast.Return, ast.If, ast.For)):
        return None
    calls = _calls_to_hoist(low, node)
    if calls is None and isinstance(node, (ast.Return, ast.If, ast.For)):
        raise low.error("a call srcgrad does not differentiate (it runs as written) is not "
                        "supported where Python may skip it or make it several times (a "
                        "later `and`/`or` operand, `a if c else b`, a comprehension or a "
                        "lambda) in this statement: make the call in a statement of its "
                        "own before it", node, UnsupportedSyntaxError)
    if calls is None:
        return None
    node = copy.copy(node)
    taken = {}
    for call in calls:
        hint = _callee_name(call.func) or "value"
        key = f"{hint}.{len(taken)}.{id(node)}"
        taken[_where(call)] = key
        low.__dict__.setdefault("hoisted_calls", {})[key] = as_written(low, call)
        assign = ast.copy_location(ast.Assign(targets=[ast.Name(id=key, ctx=ast.Store())],
                                              value=call), call)
        stage(low, assign, _describe(low, call), hints={key: hint},
              call=(_call_name(low, call), call.lineno, call.col_offset))

    class Swap(ast.NodeTransformer):
        def visit_Call(self, n):
            if _where(n) in taken:
                return ast.copy_location(ast.Name(id=taken[_where(n)], ctx=ast.Load()), n)
            return self.generic_visit(n)

    for field in ("value", "test", "iter"):
        part = getattr(node, field, None)
        if isinstance(part, ast.AST):
            setattr(node, field, Swap().visit(copy.deepcopy(part)))
    return node


def _where(n):
    return (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)


def _local_array(low, target) -> bool:
    name, _ = root_of(target)
    if name is None:
        return isinstance(target, ast.Name)
    v, local = low.resolve_quiet(name)
    return local and (isinstance(v, (Var, numpy.ndarray)) or isinstance(target, ast.Name))


def stage(low, node, why, hints=None, call=None):
    """Stage `node` as one `python` equation (see the module docstring). `hints`: the
    readable name of each output whose user name is made up (a hoisted call's)."""
    known: dict = {}
    node = _meta_reads(low, copy.deepcopy(node), known)

    def resolve(name):
        return (known[name], True) if name in known else low.resolve_quiet(name)

    s = scan(node)
    if s.bad:
        bad, what = s.bad[0]
        raise refuse(low, bad, what, why)
    b = low.b
    writes = list(s.writes)
    changed_locals = _record_changes(low, node, resolve)
    ins, names, fixed, mutates, changed = [], [], {}, [], {}
    # an array that shares memory with a changed one (a view of it, what it views, a
    # branch's result and what it may be) is changed with it: its names are bound anew too
    shared = []
    for name in list(changed_locals):
        value = resolve(name)[0]
        if isinstance(value, Var) and value.kind == "array" and not low.is_opaque(value):
            family = b.sharing(value) - {value.id}
            for n, v in list(low.env.items()):
                if isinstance(v, Var) and v.id in family and n not in changed_locals and \
                        n.isidentifier() and v.sclass != SCALAR:  # (an element: a copy)
                    changed_locals.add(n)
                    shared.append(n)
    for name in s.reads + [w for w in writes if w not in s.reads] + shared:
        value, local = resolve(name)
        if value is low.MISSING or low.is_undefined(value):
            if name in writes:
                continue  # bound by the statement before it is read
            if value is low.MISSING:
                raise low.error(f"name {name!r} is not defined", node, UnknownFunctionError)
            raise low.error(value.message(), node, UnsupportedSyntaxError)
        mutated = name in changed_locals
        if mutated and name not in writes:
            writes.append(name)  # the changed value is a new one
        if mutated and isinstance(value, (Var, numpy.ndarray)):
            changed[name] = value  # (an array folded at compile time: its literal)
        what = _input(low, node, name, value, local, name in s.reads, why)
        if what is None:
            continue
        if what[0] == "fixed":
            fixed[name] = what[1]
            continue
        ins.append(what[1])
        names.append(name)
        if mutated and what[0] == "mutable":
            mutates.append(len(ins) - 1)
    for name in writes:
        fixed.pop(name, None)
    outs = _outputs(low, writes, hints or {})
    if outs:  # what it binds may hold an array it read (`d = dict(k=a)`, a view of it):
        kept = _kept(node, low.peek)  # an update of that array in place changes it too
        for name, v in zip(names, ins):
            if name in kept and isinstance(v, Var) and v.kind == "array" and \
                    v.sclass != SCALAR:
                for o in outs:
                    b.link(o, v)
    made = _instance_made(low, node)
    if made is not None:  # `t = Scale(2.0)`: an object no op of srcgrad's may take
        b.instances.update((o.id, made) for o in outs)
    folded = [a for a in ins if isinstance(a, numpy.ndarray)] + [
        a for v in ins if isinstance(v, Var) for a in b.folded.get(v.id, ())]
    if folded:  # (what it binds may be a view of an array folded at compile time)
        b.folded.update((o.id, folded) for o in outs)
    # a call as a statement changes the values of an array, not its shape or dtype (but
    # `a.resize(...)`, and stores such as `a.shape = ...`)
    keeps_shape = isinstance(node, ast.Expr) and not any(
        isinstance(n, ast.Attribute) and n.attr == "resize" for n in ast.walk(node))
    text = ast.unparse(node).splitlines()[0]
    # every other name bound to a changed array is bound to its new value too
    for name, value in changed.items():
        if isinstance(value, Var):
            b.same_array(low.env[name], value)
            low.same_object(low.env[name], value)  # (`acc.add(v)`: acc is its object still)
            if keeps_shape and not low.is_opaque(value):  # (`rng.shuffle(idx)`: idx[0] is
                new = low.env[name]                       # still an element)
                new.sclass, new.dclass = value.sclass, value.dclass
                b.opaque.discard(new.id)
        low.refuse_caller_update(value, name, text, node)
        # (a view of a changed Var: `check_changes` follows it through the program; of a
        # changed array folded at compile time, values folded from it would be stale)
        low.rebind_changed(value, low.env[name], name, f"`{text}`", node,
                           views=isinstance(value, numpy.ndarray))
        for a in b.folded.get(value.id, ()) if isinstance(value, Var) else ():
            low.stale_folded(a, name, f"`{text}`", node)  # (what it may be a view of)
    if call is None and why.startswith("it calls "):
        found = _unknown_call(low, node)
        if found is not None:
            call = (_call_name(low, found), found.lineno, found.col_offset)
    code = Code(node, names, writes, fixed, mutates, why, call)
    if call is not None and "." in call[0]:
        recv = resolve(call[0].split(".")[0])[0]
        if isinstance(recv, Var) and recv.id in b.instances:
            code.receiver_class = b.instances[recv.id]
    b.eqns.append(Eqn(PYTHON, ins, outs, {"code": code}, b.loc, b.phase))
    if isinstance(node, ast.Raise) and not getattr(b, "_outer", None):
        raise Raised()  # reached on every call: nothing after it runs


def _record_changes(low, node, resolve) -> set:
    """The names of the function's own values the statement may change (rebound after
    it); a value from outside the function it may change is recorded as changed
    (`Reads.changed`), so that no compile-time read of it is trusted."""
    reads = low.b.reads
    changed_locals = set()
    for name, steps in changes(node, lambda f: _callee(low, f)):
        value, local = resolve(name)
        if value is low.MISSING:
            continue
        if local and (isinstance(value, Var) or isinstance(value, numpy.ndarray) and
                      reads.path_of(value) is None):
            changed_locals.add(name)
            continue
        path = _path_of(low, name, value, local)
        if path is None:
            if local and not is_immutable(value):
                changed_locals.add(name)  # a value made at compile time: refused below
            continue
        obj = value
        for kind, key in steps:
            if isinstance(obj, numpy.ndarray):
                break  # (a part of an array: the array is what changes)
            path = path.child(kind, key)
            obj = _step(obj, kind, key)
        reads.changed(path, obj)
    return changed_locals


def _step(obj, kind, key):
    """`obj.key` or `obj[key]` where that reads a plain attribute or item (no code of the
    user's runs), else guards.ABSENT (not known)."""
    if obj is ABSENT:
        return ABSENT
    try:
        if kind == "attr" and key == "__self__" and isinstance(obj, types.MethodType):
            return obj.__self__  # (the object a bound method is of: see `changes`)
        if kind == "attr":
            d = getattr(obj, "__dict__", None)
            return d[key] if isinstance(d, dict) and key in d else ABSENT
        if type(obj) in (list, tuple, dict):
            return obj[key]
    except (KeyError, IndexError, TypeError):
        pass
    return ABSENT


def _input(low, node, name, value, local, reading, why):
    """How the statement gets `name`: ("fixed", spec) for a builtin or module the
    generated module names itself, ("value", v) for an immutable value, ("mutable", v)
    for a Var or array (which the statement may change), or None when it needs nothing."""
    reads = low.b.reads
    if isinstance(value, Var):
        return ("mutable", value)
    if not local and name not in low.src.globals and name not in low.src.closure:
        reads.builtin(Path(scope_of(low.src, name), name))
        return ("fixed", ("builtin",))
    if isinstance(value, types.ModuleType):
        if not local:
            reads.root(Path(scope_of(low.src, name), name), value)
        return ("fixed", ("module", value.__name__))
    if local and is_immutable(value):
        return ("value", value)
    if local and isinstance(value, numpy.ndarray) and reads.path_of(value) is None:
        return ("mutable", value)  # made at compile time: its literal
    path = _path_of(low, name, value, local)
    if path is None:
        if not reading:
            return None
        raise low.error(
            f"`{name}` holds {getattr(value, 'what', None) or 'a ' + type(value).__name__}"
            " that srcgrad builds when it "
            f"compiles the function, but this statement runs as written ({why}) "
            "at every call and cannot read it: build the value in a statement "
            "that runs as written too, or pass it in as an argument", node,
            UnsupportedSyntaxError)
    return ("mutable", reads.array(path, value) if isinstance(value, numpy.ndarray)
            else reads.runtime(path, value))


def _outputs(low, writes, hints) -> list:
    """The values the statement binds: Python objects of unknown type, no derivative."""
    b, outs = low.b, []
    for name in writes:
        out = Var(hints.get(name, name), "array")
        out.dclass = ("object", out.id)  # any Python object: codegen spells it so
        b.opaque.add(out.id)
        b.named.add(out.id)
        low.env[name] = out
        outs.append(out)
    return outs


class Raised(Exception):
    """A `raise` reached outside run-time branches and loops: the rest of the function
    is never run, so it is not lowered."""


def _instance_made(low, node) -> "str | None":
    """The name of the class `name = C(...)` makes where C is a class written in Python
    or a class of numpy's or scipy's other than arrays, scalars and dtypes (`np.iinfo`),
    not the builtins', else None."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
        return None
    c = _callee(low, node.value.func)
    if not isinstance(c, type):
        return None
    mod = str(getattr(c, "__module__", ""))
    if mod.startswith(("builtins", "runtime", "srcgrad")):
        return None
    if mod.startswith(("numpy", "scipy")) and \
            issubclass(c, (numpy.ndarray, numpy.generic, numpy.dtype)):
        return None  # (numpy's arrays and scalars; np.iinfo(t) is an object of its own)
    return c.__name__


def _callee(low, func):
    f = low.peek(func)
    return None if f is low.NOPE or isinstance(f, low.RunTimeAttr) else f


def _path_of(low, name, value, local):
    """Where a generated function reads `name` from at run time, or None."""
    if local:
        return None if is_immutable(value) else low.b.reads.path_of(value)
    return Path(scope_of(low.src, name), name)


# ---- what a change in place leaves behind ---------------------------------------------------

class _Sharing:
    """The memory each Var of a program may be part of: `roots[id]`, the ids of the
    arrays made anew that it may be (a view of). An op's result is its own root; a view
    (an op that declares `view`; a user's op, which may return one) has its operands';
    a value bound by a statement that runs as written has those of the arrays it read
    (`b = unknown_fn(a)` may be `a`), a changed one those it had; a list its
    items'; a branch's result those of what each branch yields; a loop's carry those of
    its start and of each step's new value; a stack those of what is pushed on it, and
    what is popped those of the stack. An array folded at compile time has for root the
    array that owns its memory (`_owner`). Two values may share memory where their
    roots meet."""

    def __init__(self, eqns):
        self.roots: dict = {}
        self._scan(eqns)

    def of(self, v) -> frozenset:
        if isinstance(v, numpy.ndarray):  # folded at compile time: its memory's owner
            return frozenset((_owner(v),))
        if not isinstance(v, Var):
            return frozenset()
        return self.roots.setdefault(v.id, frozenset((v.id,)))

    def _union(self, vs) -> frozenset:
        out = frozenset()
        for v in vs:
            out |= self.of(v)
        return out

    def _set(self, v, roots) -> bool:
        """Widen v's roots; whether they grew."""
        old = self.of(v)
        if roots <= old or not isinstance(v, Var):
            return False
        self.roots[v.id] = old | roots
        return True

    def _scan(self, eqns) -> bool:
        from .ir import COND, FOR, POP, PUSH, WHILE

        grew = False
        for e in eqns:
            p = e.prim
            for v in e.ins:
                self.of(v)
            if p is PYTHON:
                code = e.params["code"]
                read = dict(zip(code.reads, e.ins))
                every = self._union(e.ins)
                for name, o in zip(code.writes, e.outs):
                    grew |= self._set(o, self.of(read[name]) if name in read else every)
            elif p is PUSH:
                grew |= self._set(e.ins[0], self._union(e.ins[1:]))
            elif p is POP:
                for o in e.outs:
                    grew |= self._set(o, self.of(e.ins[0]))
            elif p is COND:
                for b in e.blocks():
                    grew |= self._scan(b.eqns)
                for k, o in enumerate(e.outs):
                    grew |= self._set(o, self._union(b.outs[k] for b in e.blocks()))
                continue
            elif p is FOR or p is WHILE:
                inits = e.ins[3:] if p is FOR else e.ins
                body, carry = e.params["body"], e.params["carry"]
                while True:  # a step's new value is the next step's carry
                    for c, i, n in zip(carry, inits, body.outs):
                        grew |= self._set(c, self.of(i) | self.of(n))
                    if not any([self._scan(b.eqns) for b in e.blocks()]) and not any(
                            [self._set(c, self.of(n)) for c, n in zip(carry, body.outs)]):
                        break
                    grew = True
                for c, o in zip(carry, e.outs):
                    grew |= self._set(o, self.of(c))
                continue
            elif getattr(p, "view", False) and _copies(e):
                pass  # (its own root)
            elif getattr(p, "view", False) or getattr(p, "custom", False):
                for o in e.outs:
                    grew |= self._set(o, self._union(e.ins[:1] if p.subscript else e.ins))
            elif getattr(p, "kind", None) == "list" and not getattr(p, "meta", False):
                for o in e.outs:
                    grew |= self._set(o, self._union(e.ins))
            for b in e.blocks():
                grew |= self._scan(b.eqns)
        return grew

    def sharing(self, v) -> set:
        """Ids of the Vars that may share memory with `v` (itself, if a Var, included)."""
        mine = self.of(v)
        return {i for i, r in self.roots.items() if r & mine}


def _copies(e) -> bool:
    """Does this indexing make a new array: an index that holds an array (numpy's
    advanced indexing copies), or integers that pick one element (a numpy scalar)?"""
    if not e.prim.subscript or len(e.ins) < 2:
        return False
    idx = e.ins[1] if isinstance(e.ins[1], tuple) else (e.ins[1],)
    if any(isinstance(i, (numpy.ndarray, list)) or isinstance(i, Var) and i.kind == "array"
           for i in idx):
        return True
    return e.outs[0].sclass == SCALAR and not any(i is Ellipsis for i in idx)


def _owner(a) -> tuple:
    """The root of an array folded at compile time: the array owning its memory."""
    while isinstance(a.base, numpy.ndarray):
        a = a.base
    return ("array", id(a))


def stale_read(eqns, outputs):
    """The first read, in the order the program runs, of an array's earlier value after
    a statement that runs as written changed that array in place (`z.fill(0.0)` while
    the gradient still reads the `z` that `w = z * a` multiplied; a write through
    `b = unknown_fn(a)` into `a`): (that statement's equation, the index of
    the input it changed, the stale Var, the equation that reads it or None for the
    program's result), or None. Lowering binds the names of the changed array to the
    statement's new value; what it cannot rebind is every other Var that may share the
    array's memory, and the values a derivative rule reads."""
    from .ir import iter_vars

    if not changed_in_place(eqns, set()):
        return None  # (the common case: no statement changes an array)
    sharing, order = _Sharing(eqns), {}
    _number(eqns, order, [0])
    found: list = []
    active = _walk(eqns, [], sharing, order, found)
    if not found:
        _reads(list(iter_vars(outputs)), None, active, found)
    return found[0] if found else None


def changed_in_place(eqns, found: set) -> set:
    """Ids of the Vars a `python` equation changes in place (`Code.mutates`), added to
    `found`."""
    for e in eqns:
        if e.prim is PYTHON:
            found.update(e.ins[i].id for i in e.params["code"].mutates
                         if isinstance(e.ins[i], Var))
        for b in e.blocks():
            changed_in_place(b.eqns, found)
    return found


def _number(eqns, order, n):
    """Var id -> the position, in the order the program runs, of what defines it (and
    ("from", id(e)) -> where equation e's blocks begin, ("end", id(e)) -> where it ends)."""
    from .ir import block_binders

    for e in eqns:
        n[0] += 1
        order["from", id(e)] = n[0]
        for v in block_binders(e):
            order[v.id] = n[0]
        for b in e.blocks():
            _number(b.eqns, order, n)
        n[0] += 1
        order["end", id(e)] = n[0]
        for o in e.outs:
            order[o.id] = n[0]


def _reads(vs, e, active, found):
    for v in vs:
        if isinstance(v, Var):
            for p, i, stale in active:
                if v.id in stale:
                    found.append((p, i, v, e))
                    return


def _walk(eqns, active, sharing, order, found) -> list:
    """Check the reads of `eqns` against `active` ((statement, index of the input it
    changed, ids of the Vars that change left stale) for each change made before them);
    the changes active after them."""
    from .ir import COND, FOR, WHILE

    for e in eqns:
        if found:
            break
        if getattr(e.prim, "kind", None) != "shape_of" and not getattr(e.prim, "creator", False):
            _reads(e.ins, e, active, found)  # (a shape or a new array like another: the
        if e.prim is COND:                   # change in place keeps the shape and dtype)
            after = list(active)
            for b in e.blocks():
                branch = _walk(b.eqns, list(active), sharing, order, found)
                _reads(b.outs, e, branch, found)
                after += branch[len(active):]
            active = after
        elif e.blocks():
            start = len(active)
            blocks = e.blocks()
            for b in blocks:
                active = _walk(b.eqns, active, sharing, order, found)
                _reads(b.outs, e, active, found)
            if e.prim is FOR or e.prim is WHILE:
                # the next iteration runs after a change made in this one: what that
                # leaves stale from before the loop is not to be read there either
                lo, hi = order["from", id(e)], order["end", id(e)]
                again = [(p, i, {j for j in stale if not lo <= order.get(j, -1) <= hi})
                         for p, i, stale in active[start:]]
                if again:
                    for b in blocks:
                        _walk(b.eqns, active[:start] + again, sharing, order, found)
                        _reads(b.outs, e, active[:start] + again, found)
        if e.prim is PYTHON:
            at = order["end", id(e)]
            for i in e.params["code"].mutates:
                m = e.ins[i]
                # (an array folded at compile time is its literal wherever it is read: a
                # read after the change is of the values it had, as lowering binds the
                # names that numpy would show the change through anew or refuses them)
                if isinstance(m, (Var, numpy.ndarray)):
                    stale = {j for j in sharing.sharing(m) if order.get(j, -1) < at}
                    stale -= {o.id for o in e.outs}
                    active = active + [(e, i, stale)]
    return active


def check_changes(eqns, outputs):
    """Refuse, at the user's statement, a change in place that a later read would not
    see (see `stale_read`): numpy reads the changed memory there, the gradient's
    equations were made for the value before the change."""
    found = stale_read(eqns, outputs)
    if found is None:
        return
    import linecache

    p, i, v, e = found
    code, loc, m = p.params["code"], p.loc, p.ins[i]
    first = ast.unparse(code.node).splitlines()[0]
    name = code.reads[i]
    old = f"the value `{name}` had before" if v is m else \
        f"an array made from `{name}` when srcgrad compiled the function" \
        if not isinstance(v, Var) else \
        f"`{v.hint}`, which may share its memory with `{name}`,"
    if isinstance(v, Var) and v.kind == "stack":
        old, e = f"the value `{name}` had before, which the gradient saved,", None
        where = "by the gradient"
    elif e is None:
        where = "as the function's result"
    elif e.phase == "bwd" or e.loc is None:
        where = "in the gradient's computation (a derivative rule reads it)"
    elif e.loc is loc or e.loc.lineno == loc.lineno:
        where = "later in the same line"
    else:
        where = f"at line {e.loc.lineno}"
    msg = (f"`{first}` changes `{name}` in place ({code.why}), but {old} is read after "
           f"it, {where}: numpy would read the changed memory there, and srcgrad cannot "
           f"follow the change. Work on a copy (`{name} = {name}.copy()` before the "
           "change) or compute what needs the old value after it")
    if loc is None:
        raise UnsupportedSyntaxError(msg)
    line = linecache.getline(loc.filename, loc.lineno) or loc.text
    raise UnsupportedSyntaxError(msg, loc.filename, loc.lineno, loc.col, line)
