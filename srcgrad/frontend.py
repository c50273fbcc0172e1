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

__all__ = ["Source", "parse_function"]


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


def _lambda_column(code) -> int:
    """The column of the `lambda` that made `code` (0 when the file cannot tell)."""
    try:
        tree = ast.parse("".join(linecache.getlines(code.co_filename)))
    except (SyntaxError, ValueError):
        return 0
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            a = node.args
            if [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs] == params:
                return node.col_offset
    return 0


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
        # refuse before reading the source: the line that holds a lambda is not a
        # statement of its own, and parsing it gives unrelated syntax errors
        raise SourceUnavailableError(
            "lambdas are not supported: define the function with def",
            filename, code.co_firstlineno, _lambda_column(code),
            linecache.getline(filename, code.co_firstlineno) or None)
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
    closure = {}
    if fn.__closure__:
        for var, cell in zip(code.co_freevars, fn.__closure__):
            try:
                closure[var] = cell.cell_contents
            except ValueError:  # empty cell: the name is assigned later in the outer scope
                pass
    return Source(fn, filename, firstlineno, node, lines, fn.__globals__, closure)
