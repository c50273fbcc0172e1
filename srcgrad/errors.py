"""All exceptions the compiler raises. Each names the user's file, line and column."""
from __future__ import annotations

__all__ = ["SrcgradError", "UnsupportedSyntaxError", "UnknownFunctionError",
           "SourceUnavailableError", "SourceChangedError", "RecursiveCallError", "WrtError", "CacheWarning",
           "NotDifferentiableError", "InternalError", "OutputTypeError"]


class SrcgradError(Exception):
    """Base of the compiler's errors: `filename`, `lineno`, `col_offset` point at user code.

    str(err) reads like a SyntaxError: the message, then `file:line:col`, the source line
    and a caret under the offending column.
    """

    def __init__(self, msg: str, filename: str | None = None, lineno: int | None = None,
                 col_offset: int | None = None, line: str | None = None):
        self.msg = msg
        self.filename = filename
        self.lineno = lineno
        self.col_offset = col_offset
        self.line = line
        Exception.__init__(self, self._format())

    def _format(self) -> str:
        if self.filename is None or self.lineno is None:
            return self.msg
        col = self.col_offset or 0
        out = [self.msg, f'  File "{self.filename}", line {self.lineno}, column {col + 1}']
        if self.line is not None:
            text = self.line.rstrip("\n")
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            out.append("    " + stripped)
            out.append("    " + " " * max(col - indent, 0) + "^")
        return "\n".join(out)


class UnsupportedSyntaxError(SrcgradError, SyntaxError):
    """A construct outside the supported subset (`try`, `with`, `yield`, `lambda`...)."""

    def __init__(self, msg, filename=None, lineno=None, col_offset=None, line=None):
        SrcgradError.__init__(self, msg, filename, lineno, col_offset, line)
        # SyntaxError's own fields, so tools that print SyntaxErrors show the location
        self.msg, self.filename, self.lineno = msg, filename, lineno
        self.offset = (col_offset or 0) + 1
        self.text = line

    def __str__(self):
        return self._format()


class UnknownFunctionError(SrcgradError):
    """A call to something that is neither an op nor a user function with source."""


class SourceUnavailableError(SrcgradError):
    """The function's source cannot be read (built-ins, REPL lambdas, C extensions)."""


class SourceChangedError(SourceUnavailableError):
    """The function's file was edited after the function was defined: the text there is not
    the code that runs (re-import the module or restart the interpreter)."""


class RecursiveCallError(SrcgradError):
    """Direct or mutual recursion between user functions."""


class WrtError(SrcgradError, ValueError):
    """A `wrt` that names no parameter of the function."""


class NotDifferentiableError(SrcgradError):
    """A value that depends on a differentiated input reaches the output through an
    operation that has no derivative rule and declares no zero derivative."""


class OutputTypeError(SrcgradError, TypeError):
    """The function's output is not a real scalar (a tuple, a bool, a string...)."""


class InternalError(SrcgradError):
    """An unexpected failure inside srcgrad while compiling the user's function: a bug in
    srcgrad, reported at the user's line being compiled."""


class CacheWarning(UserWarning):
    """A disk-cache file was rejected (tampered, truncated, unsafe) and regenerated."""
