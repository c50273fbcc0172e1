"""Stage 1, parse: a Python function -> its AST, with absolute line numbers and the names
it can see (globals, closure cells, builtins).

Every node keeps the user's file and absolute line, so later stages can point errors and
generated-code comments at the right place.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
from dataclasses import dataclass, field

from .errors import SourceUnavailableError

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


def _unwrap(fn):
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


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
    fn = _unwrap(fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", repr(fn))
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
        lines, firstlineno = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of {name!r} ({e}); functions typed at the interactive "
            "prompt or made by exec have no file to read: define it in a module",
            filename, code.co_firstlineno, 0) from None
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
    ast.increment_lineno(module, firstlineno - 1)
    # dedent removed the same number of columns from every line: put them back
    indent = len(lines[0]) - len(lines[0].lstrip())
    if indent:
        for n in ast.walk(module):
            if hasattr(n, "col_offset"):
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    return Source(fn, filename, firstlineno, node, lines, fn.__globals__, _closure(fn, code))
