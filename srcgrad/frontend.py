"""Stage 1, parse: a Python function -> its AST, with absolute line numbers and the names
it can see (globals, closure cells, builtins).

Every node keeps the user's file and absolute line, so later stages can point errors and
generated-code comments at the right place.

The text is read from the function's file, but the function that runs (and the disk cache's
key) is its code object: a function whose file was edited since it was defined is refused
with a SourceChangedError (its text, compiled where it stands, is compared with the code).
"""
from __future__ import annotations

import __future__
import ast
import builtins
import dis
import functools
import linecache
import textwrap
import types
from dataclasses import dataclass, field

from .errors import SourceChangedError, SourceUnavailableError
from .scopes import source_lines, unwrap

__all__ = ["Source", "parse_function", "lambda_as_def"]


@dataclass
class Source:
    """A parsed user function."""

    fn: object
    filename: str
    firstlineno: int
    tree: ast.FunctionDef
    lines: list = field(repr=False)
    globals: dict = field(repr=False)
    closure: dict = field(repr=False)

    def line(self, lineno: int) -> str:
        """The text of absolute line `lineno` of the user's file."""
        i = lineno - self.firstlineno
        if 0 <= i < len(self.lines):
            return self.lines[i]
        return linecache.getline(self.filename, lineno)

    def lookup(self, name: str):
        """Resolve a free name as Python would: closure, globals, builtins. KeyError if none."""
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise KeyError(name)


def lambda_as_def(node: ast.Lambda, name: str = "lambda") -> ast.FunctionDef:
    """`lambda x: e` as `def lambda(x): return e`, at the lambda's place in the file."""
    ret = ast.Return(value=node.body)
    fdef = ast.FunctionDef(name=name, args=node.args, body=[ret], decorator_list=[],
                           returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:  # Python >= 3.12
        fdef.type_params = []
    for n in (ret, fdef):
        ast.copy_location(n, node)
    return fdef


def _lambda_nodes(code) -> list:
    """The `lambda` expressions in `code`'s file that may have made it: on its first line,
    with its parameters."""
    try:
        tree = ast.parse("".join(linecache.getlines(code.co_filename)))
    except (SyntaxError, ValueError):
        return []
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            a = node.args
            if [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs] == params:
                found.append(node)
    return found


def _parse_lambda(fn, code) -> "Source":
    filename = code.co_filename
    line = linecache.getline(filename, code.co_firstlineno) or None
    found = _lambda_nodes(code)
    if len(found) != 1:
        why = ("its source cannot be found" if not found else
               "its line holds several lambdas with the same parameters")
        raise SourceUnavailableError(
            f"cannot differentiate this lambda: {why}; define the function with def",
            filename, code.co_firstlineno, found[0].col_offset if found else 0, line)
    lines = linecache.getlines(filename)[code.co_firstlineno - 1:found[0].end_lineno]
    return Source(fn, filename, code.co_firstlineno, lambda_as_def(found[0]), lines,
                  fn.__globals__, _closure(fn, code))


def _closure(fn, code) -> dict:
    closure = {}
    if fn.__closure__:
        for var, cell in zip(code.co_freevars, fn.__closure__):
            try:
                closure[var] = cell.cell_contents
            except ValueError:  # empty cell: the name is assigned later in the outer scope
                pass
    return closure


def parse_function(fn) -> Source:
    """Read and parse `fn`'s source; raise SourceUnavailableError when Python can't."""
    fn = unwrap(fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", repr(fn))
    if code is None and isinstance(fn, functools.partial):
        raise SourceUnavailableError(
            f"cannot differentiate {name!r}: a functools.partial is not a function with "
            "source of its own; differentiate the function it wraps with the bound values "
            "passed as arguments (srcgrad.grad(f, argnums=...)), or a def that calls the "
            "partial (partials called inside the function compile)")
    if code is None:
        raise SourceUnavailableError(
            f"cannot differentiate {name!r}: it is not a Python function with source code "
            "(built-in or C functions have no source to transform)")
    filename = code.co_filename
    if code.co_name == "<lambda>":
        # found in its file's syntax tree: the line that holds a lambda is not a statement
        # of its own
        return _parse_lambda(fn, code)
    try:
        lines, firstlineno = source_lines(code, fn)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of {name!r} ({e}); functions typed at the interactive "
            "prompt or made by exec have no file to read: define it in a module",
            filename, code.co_firstlineno, 0) from None
    # the file may have been edited since the function was defined (the code that runs is
    # then not the text there): the gradient would be of the new text, cached under the key
    # of the old code
    if _source_changed(fn, code, lines, firstlineno):
        raise _changed(name, filename, lines, firstlineno)
    src = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(src)
    except SyntaxError as e:
        raise SourceUnavailableError(f"cannot parse the source of {name!r}: {e.msg}",
                                     filename, firstlineno + (e.lineno or 1) - 1,
                                     e.offset) from None
    node = module.body[0] if module.body else None
    if isinstance(node, ast.AsyncFunctionDef):
        raise SourceUnavailableError(f"{name!r} is an async function; only plain functions "
                                     "can be differentiated", filename, firstlineno, 0)
    if not isinstance(node, ast.FunctionDef):
        raise SourceUnavailableError(
            f"cannot differentiate {name!r}: its source is not a `def` (lambdas are not "
            "supported: define the function with def)", filename, firstlineno, 0,
            lines[0] if lines else None)
    if node.name != code.co_name:  # what the file has at the function's line is another def
        raise _changed(name, filename, lines, firstlineno)
    ast.increment_lineno(module, firstlineno - 1)
    # dedent removed the same number of columns from every line: put them back
    indent = _indent(lines[0])
    if indent:
        for n in ast.walk(module):
            if hasattr(n, "col_offset"):
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    return Source(fn, filename, firstlineno, node, lines, fn.__globals__, _closure(fn, code))


def _changed(name: str, filename: str, lines: list, firstlineno: int) -> SourceChangedError:
    return SourceChangedError(
        f"the source file of {name!r} changed since the function was defined: the code that "
        "runs is not what the text in the file compiles to, so its gradient cannot be read "
        "from it; re-import the module (importlib.reload) or restart the interpreter",
        filename, firstlineno, _indent(lines[0]), lines[0])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


# the compiler flags set by `from __future__ import ...` (recorded in co_flags)
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def _enclosing_scopes(fn, code):
    """(keyword, name) of each class or function around `code`, outermost first, from
    its qualified name; None where no text can name them (a lambda, a comprehension, a
    local of a tree rewritten by pytest)."""
    qualname = getattr(code, "co_qualname", None) or getattr(fn, "__qualname__", "")
    parts = qualname.split(".")
    if parts[-1] != code.co_name or not all(v.isidentifier() for v in code.co_varnames):
        return None
    scopes = []
    i = 0
    while i < len(parts) - 1:
        if not parts[i].isidentifier():
            return None
        kind = "def" if parts[i + 1] == "<locals>" else "class"
        scopes.append((kind, parts[i]))
        i += 2 if kind == "def" else 1
    return scopes


def _source_changed(fn, code, lines: list, firstlineno: int) -> bool:
    """True when `lines` (the function's text as its file reads now) do not compile to
    `code`: the file was edited after the function was defined.

    The text is compiled at its place in the file, inside one-line stand-ins for the classes
    and functions around it (so that closure cells, `__class__`, name mangling and flags
    come out as they did), and compared with `code` (see `_same_code`). Where those scopes
    cannot be rebuilt the check is skipped (False). One compile of the function's own text:
    cheap next to the rest of the compiler."""
    scopes = _enclosing_scopes(fn, code)
    if scopes is None:
        return False
    free = [v for v in code.co_freevars if v != "__class__"]  # a class makes __class__
    heads = []
    for kind, scope in scopes:
        params = ""
        if kind == "def" and free:  # the cells it closes over: arguments of the outermost
            params, free = ", ".join(free), []
        heads.append(f"{kind} {scope}({params}):" if kind == "def" else f"class {scope}:")
    lead = lines[0][:_indent(lines[0])]
    if not heads and lead:  # a module-level def inside an `if`, `try`...
        heads.append("if 1:")
    if free:
        return False
    if len(heads) > len(lead) or len(heads) >= firstlineno:
        # the text is not indented (or not placed) as deep as the function is nested: it is
        # another text, unless the nesting was guessed from a `__qualname__` someone set
        # (before 3.11, which records the compiler's own in `co_qualname`)
        return hasattr(code, "co_qualname")
    # since 3.11 `m.f(x)` compiles to another call sequence where the module's own `m` was
    # bound by an import: mark the names bound to modules as imported (compiling does not
    # run the import); the compiler asks the module's scope, so a local or a closure cell
    # of that name (`def make(np): def f(x): return np.sum(x)`) is called so too
    # (which of them the module imports, rather than assigns, the text does not say: both
    # readings are tried, with and without the local names)
    # (and a reading with none: modules bound otherwise, by `from helpers import *`)
    g = getattr(fn, "__globals__", {})
    readings = []
    for local in (False, True):
        modules = sorted(n for n in code_names(code, local=local)
                         if isinstance(g.get(n), types.ModuleType))
        if modules not in readings:
            readings.append(modules)
    if [] not in readings:
        readings.append([])
    changed = None
    for modules in readings:
        text = "\n" * (firstlineno - 1 - len(heads)) + \
            "".join(lead[:k] + h + "\n" for k, h in enumerate(heads)) + "".join(lines) + \
            ("\nimport " + ", ".join(f"_ as {n}" for n in modules) + "\n" if modules else "")
        verdict = _differs(text, code, scopes)
        if verdict is None or not verdict:  # (a reading the code matches: no other needed)
            return False
        changed = verdict
    return changed


def _differs(text: str, code, scopes) -> "bool | None":
    """Does `text` (the function's text in its stand-in scopes) compile to other code than
    `code`? None where it cannot be compiled or the scopes not found."""
    try:
        found = compile(text, code.co_filename, "exec", code.co_flags & _FUTURE_FLAGS, True)
    except (SyntaxError, ValueError):
        return None
    for _, scope in scopes:
        found = _inner(found, scope)
        if found is None:
            return None
    found = _inner(found, code.co_name)
    # the same first line too: else the text found at the function's line (or above it, where
    # lines were added) holds the function elsewhere
    if found is None or found.co_firstlineno != code.co_firstlineno:
        return True
    # where a module name was not bound by an import (`xp = numpy`), or an imported name
    # is not a module, only the call sequences differ: compare again, reading through them
    return not (_same_code(found, code) or _same_code(found, code, loose=True))


def code_names(code, local: bool = False) -> set:
    """The global and attribute names `code` (and the code nested in it) reads; with
    `local`, its local and closure names too."""
    names = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        if local:
            names.update(c.co_varnames + c.co_freevars + c.co_cellvars)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def _inner(code, name: str):
    """The code object of the class or function `name` made in `code`, or None."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    return None


_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags",
                "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_name")


def _same_code(a, b, loose: bool = False) -> bool:
    """Same bytecode, constants, names and flags, also of the code objects nested in them.
    Positions (line and column tables) are not compared: a function whose text only moved
    computes the same thing. `loose`: instructions compared by name and argument, a method
    load taken as an attribute load (the two call sequences of `m.f(x)`)."""
    if any(getattr(a, f) != getattr(b, f) for f in _CODE_FIELDS):
        return False
    if loose:
        if _instructions(a) != _instructions(b):
            return False
    elif a.co_code != b.co_code or \
            getattr(a, "co_exceptiontable", b"") != getattr(b, "co_exceptiontable", b""):
        return False
    return len(a.co_consts) == len(b.co_consts) and all(
        _same_const(x, y, loose) for x, y in zip(a.co_consts, b.co_consts))


def _same_const(a, b, loose: bool = False) -> bool:
    if type(a) is not type(b):  # 1, 1.0 and True are equal, and differ here
        return False
    if isinstance(a, types.CodeType):
        return _same_code(a, b, loose)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(_same_const, a, b))
    if isinstance(a, (float, complex)):
        return repr(a) == repr(b)  # -0.0 and 0.0; nan
    return a == b


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs) | frozenset(getattr(dis, "hasjump", ()))
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}


def _instructions(code) -> list:
    """(name, argument) of each instruction; a jump's target as an instruction index (the
    two call sequences differ in length), a constant as its index (compared apart)."""
    ins = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    index = {i.offset: k for k, i in enumerate(ins)}
    out = []
    for i in ins:
        if i.opcode in _JUMPS:
            arg = index.get(i.argval, i.argval)
        elif i.opcode in dis.hasconst:
            arg = i.arg
        else:
            arg = i.argval
        out.append((_SAME_OP.get(i.opname, i.opname), arg))
    return out
