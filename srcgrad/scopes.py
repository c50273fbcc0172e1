"""Where a value the user's code reads from outside the function lives: a `Path` from a
namespace (a module's globals dict, or a closure cell) through attributes and items.

Generated code never embeds a user's array: it reads `model_globals['W']` (the globals dict
of the module that defines the function reading `W`), `scale_cell.cell_contents` (a
closure cell) or `model_globals['params']['W1']` at the top of every call, so a rebound or
mutated array is seen by the next call. Other values read at compile time (numbers,
functions, dicts...) are guarded instead (srcgrad.guards). The lowerer makes a `Path` for
each; codegen binds each `Scope` to a module-level name of the generated module;
`describe` names a scope relative to the transformed function, so that a module loaded
from the disk cache in another process binds the same namespaces (`resolve`).
"""
from __future__ import annotations

import ast
import sys
import types

__all__ = ["Scope", "Path", "scope_of", "describe", "resolve", "wrap_reads"]


class Scope:
    """A namespace a generated function reads arrays from: a globals dict, a cell, or the
    object a transformed method is bound to (its `self`)."""

    def __init__(self, kind: str, obj, label: str, what: str):
        self.kind = kind  # "globals", "cell" or "object"
        self.obj = obj
        self.label = label  # a readable module-level name for it
        self.what = what  # what it is, for a comment in the generated module

    @property
    def key(self):
        return (self.kind, id(self.obj))

    def read(self, holder: str, name: str) -> str:
        """Source text that reads `name` through the module-level name `holder`."""
        if self.kind == "cell":
            return f"{holder}.cell_contents"
        if self.kind == "object":
            return holder
        return f"{holder}[{name!r}]"


class Path:
    """A value the user's code reads from outside the function: `name` in `scope`, then
    `steps`, each ("attr", name) or ("item", key) with a constant key."""

    __slots__ = ("scope", "name", "steps")

    def __init__(self, scope: Scope, name: str, steps: tuple = ()):
        self.scope, self.name, self.steps = scope, name, steps

    @property
    def key(self):
        return self.scope.key + (self.name, self.steps)

    def child(self, kind: str, key) -> "Path":
        return Path(self.scope, self.name, self.steps + ((kind, key),))

    def source(self, holder: str) -> str:
        """Source text that reads the value through the module-level name `holder`."""
        return self.scope.read(holder, self.name) + self._steps_text()

    def text(self) -> str:
        """How the user's code spells it: `CFG['s']`, `mylib.f`."""
        return self.name + self._steps_text()

    def _steps_text(self) -> str:
        return "".join(f".{key}" if kind == "attr" else f"[{key!r}]"
                       for kind, key in self.steps)

    def get(self, root=None):
        """The value now (root: the scope's object, by default the one seen at compile
        time); LookupError/AttributeError/... if it is gone."""
        obj = self.scope.obj if root is None else root
        kind = self.scope.kind
        value = obj.cell_contents if kind == "cell" else obj if kind == "object" else \
            obj[self.name]
        for kind, key in self.steps:
            value = getattr(value, key) if kind == "attr" else value[key]
        return value


def scope_of(src, name: str) -> Scope:
    """The namespace `name` resolves in for the parsed function `src` (a closure cell of
    its function, else its globals: builtins hold no arrays)."""
    fn = src.fn
    code = getattr(fn, "__code__", None)
    if name in src.closure and code is not None and name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(name)]
        return Scope("cell", cell, f"{name}_cell",
                     f"the closure cell of {name!r} in {fn.__qualname__}")
    module = str(src.globals.get("__name__") or "module")
    short = module.rsplit(".", 1)[-1].strip("_") or "module"
    return Scope("globals", src.globals, f"{short}_globals",
                 f"the globals of module {module!r}")


def self_scope(method) -> Scope:
    """The object a bound method is bound to, as the namespace of its `self`."""
    obj = method.__self__
    return Scope("object", obj, "self_object",
                 f"the {type(obj).__name__} object {method.__qualname__} is bound to")


def unwrap(fn):
    """The function srcgrad compiles for `fn`. A decorator's wrapper (`functools.wraps`
    sets `__wrapped__`) is code of its own: compiled as it is (`2.0 * fn(x)` is not
    `fn(x)`), unless it only passes its arguments on and returns the wrapped function's
    result untouched (`return fn(*args, **kwargs)`, with timing or logging around it:
    `transparent`), whose value is the wrapped function's; an object not written in
    Python (`functools.lru_cache`'s) gives the wrapped function's values too."""
    while hasattr(fn, "__wrapped__") and (
            not isinstance(getattr(fn, "__func__", fn), types.FunctionType) or
            transparent(getattr(fn, "__func__", fn), fn.__wrapped__)):
        fn = fn.__wrapped__
    return fn


_TRANSPARENT: dict = {}  # (code object, id of what it wraps) -> transparent(...)


def transparent(fn, wrapped) -> bool:
    """Does Python function `fn` return `wrapped(*args, **kwargs)` of its own arguments,
    untouched? Its text must read `def w(*args, **kwargs)`, call `wrapped` (a variable of
    its closure) once with exactly those, and return that call, or a name bound to it
    that nothing else reads; `args` and `kwargs` appear nowhere else. Other statements
    (a clock read, a log line) do not change the value."""
    key = (fn.__code__, id(wrapped))
    found = _TRANSPARENT.get(key)
    if found is None:
        found = _TRANSPARENT[key] = _returns_the_call(fn, wrapped)
    return found


def source_lines(code, fn) -> tuple:
    """`inspect.getsourcelines(code)`: the lines of the def that made `code`, the first
    one's number (not of the function object: a wrapper names the function it wraps in
    __wrapped__, whose text inspect would give). Asked of a new function made of `code` in
    `fn`'s module, so that inspect finds the module by its name: of a code object, it
    searches every loaded module for its file (the real path of each one, 10-25 ms of a
    first compilation in a fresh process). OSError where there is no source."""
    import inspect

    cells = tuple(types.CellType() for _ in code.co_freevars) or None  # (never run)
    shim = types.FunctionType(code, fn.__globals__, code.co_name, None, cells)
    return inspect.getsourcelines(shim)


def _returns_the_call(fn, wrapped) -> bool:
    import textwrap

    code = fn.__code__
    try:
        tree = ast.parse(textwrap.dedent("".join(source_lines(code, fn)[0])))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
        return False
    a = node.args
    if a.vararg is None or a.kwarg is None or a.args or a.posonlyargs or a.kwonlyargs:
        return False
    star, kw = a.vararg.arg, a.kwarg.arg
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))

    def calls_wrapped(e) -> bool:
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and
                e.func.id in cells and len(e.args) == 1 and len(e.keywords) == 1):
            return False
        try:
            target = cells[e.func.id].cell_contents
        except ValueError:
            return False
        s, k = e.args[0], e.keywords[0]
        return target is wrapped and isinstance(s, ast.Starred) and \
            isinstance(s.value, ast.Name) and s.value.id == star and k.arg is None and \
            isinstance(k.value, ast.Name) and k.value.id == kw

    inner = [n for stmt in node.body for n in ast.walk(stmt)]
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                          ast.Yield, ast.YieldFrom, ast.Await)) for n in inner):
        return False
    calls = [n for n in inner if calls_wrapped(n)]
    if len(calls) != 1 or sum(isinstance(n, ast.Name) and n.id in (star, kw)
                              for n in inner) != 2:
        return False  # (the arguments passed on once, and used for nothing else)
    returns = [n for n in inner if isinstance(n, ast.Return)]
    last = node.body[-1]
    if returns != [last] or last.value is None:
        return False
    if last.value is calls[0]:
        return True
    if not isinstance(last.value, ast.Name):
        return False
    name = last.value.id  # `out = wrapped(*args, **kwargs)` ... `return out`
    binds = [stmt for stmt in node.body if isinstance(stmt, ast.Assign) and
             stmt.value is calls[0] and len(stmt.targets) == 1 and
             isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name]
    uses = [n for n in inner if isinstance(n, ast.Name) and n.id == name]
    return len(binds) == 1 and len(uses) == 2


def describe(scope: Scope, fun):
    """A JSON-able description of `scope` from the transformed function `fun`, or None
    when another process could not find it again (a cell of a function inlined into
    `fun`, a namespace that is no module's)."""
    fn = unwrap(fun)
    if scope.kind == "object":
        return ["self"] if scope.obj is getattr(fn, "__self__", None) else None
    if scope.kind == "globals":
        if scope.obj is fn.__globals__:
            return ["globals"]
        module = scope.obj.get("__name__")
        mod = sys.modules.get(module) if isinstance(module, str) else None
        if mod is not None and getattr(mod, "__dict__", None) is scope.obj:
            return ["module", module]
        return None
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    for var, cell in cells.items():
        if cell is scope.obj:
            return ["cell", var]
    return None


def resolve(desc, fun):
    """The namespace object `desc` (from `describe`) names; LookupError if there is none."""
    fn = unwrap(fun)
    if not desc:
        raise LookupError("a namespace only the compiling process knows")
    if desc[0] == "globals":
        return fn.__globals__
    if desc[0] == "self":
        if getattr(fn, "__self__", None) is None:
            raise LookupError("not a bound method")
        return fn.__self__
    if desc[0] == "module":
        mod = sys.modules.get(desc[1])
        if mod is None:
            raise LookupError(f"module {desc[1]!r} is not imported")
        return mod.__dict__
    if desc[0] == "cell":
        code = fn.__code__
        if desc[1] in code.co_freevars and fn.__closure__:
            return fn.__closure__[code.co_freevars.index(desc[1])]
        raise LookupError(f"{fn.__name__} has no closure variable {desc[1]!r}")
    raise LookupError(f"unknown namespace {desc!r}")


def wrap_reads(tree: ast.Module, holders, wrapper: str) -> ast.Module:
    """`tree` (a generated module) with every read through one of the module-level names
    `holders` (`W_cell.cell_contents`, `model_globals['params']['W1']`) passed through
    the function named `wrapper`: how a module bound to cupy moves the user's numpy
    arrays to the device as it reads them. Line numbers are kept."""
    holders = frozenset(holders)

    class Wrap(ast.NodeTransformer):
        def _read(self, node):
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(node.ctx, ast.Load) and isinstance(root, ast.Name) and \
                    root.id in holders:
                return ast.copy_location(
                    ast.Call(ast.Name(wrapper, ast.Load()), [node], []), node)
            return self.generic_visit(node)

        visit_Attribute = visit_Subscript = _read

    return ast.fix_missing_locations(Wrap().visit(tree))
