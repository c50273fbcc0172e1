"""Compiler errors point at the user's code: the exception class (a SrcgradError), the file,
the absolute line and the column of the offending construct, and a message that shows the
source line with a caret under that column.

Each offending line below carries a `# E:<tag>` comment; the expected line number and
column are read from this file, so the tests do not depend on line arithmetic.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

import srcgrad
from srcgrad import (RecursiveCallError, SourceUnavailableError, SrcgradError,
                     UnknownFunctionError, UnsupportedSyntaxError, WrtError)

THIS_FILE = os.path.abspath(__file__)
with open(THIS_FILE) as _f:
    _LINES = _f.read().splitlines()


def where(tag, token):
    """(line number, column) of `token` on the line tagged `# E:<tag>`."""
    mark = re.compile(rf"# E:{re.escape(tag)}(\s|$)")
    hits = [i for i, ln in enumerate(_LINES) if mark.search(ln)]
    assert len(hits) == 1, f"tag {tag!r} found {len(hits)} times"
    line = _LINES[hits[0]]
    return hits[0] + 1, line.index(token)


# ---- unsupported syntax ---------------------------------------------------------------------

def uses_try(x):
    try:  # E:try
        y = x * 2
    except ValueError:
        y = x
    return np.sum(y)


def uses_with(x):
    with open(os.devnull) as f:  # E:with  # noqa: F841
        y = x * 2
    return np.sum(y)


def uses_yield(x):
    yield np.sum(x)  # E:yield


def uses_global(x):
    global _COUNTER  # E:global  # noqa: F824
    return np.sum(x)


def assigns_subscript(x):
    y = x  # the caller's array: numpy would change it
    y[0] = 1.0  # E:subscript
    return np.sum(y)


def augassigns_subscript(x):
    x[0] += 1.0  # E:augsubscript
    return np.sum(x)


def assigns_attribute(x):
    h = x * 2
    h.value = np.sum(x)  # E:attribute
    return np.sum(h)


def uses_walrus(x):
    return np.sum((y := x * 2) + y)  # E:walrus


def uses_class(x):
    class Local:  # E:class
        pass
    return np.sum(x)


def decorated_nested(x):
    @staticmethod
    def inner(v):  # E:decorator
        return v
    return np.sum(inner(x))


def uses_match(x):
    match 1:  # E:match
        case 1:
            return np.sum(x)


UNSUPPORTED = [
    (uses_try, "try", "try", "`try`"),
    (uses_with, "with", "with", "`with`"),
    (uses_yield, "yield", "yield", "yield"),
    (uses_global, "global", "global", "global"),
    (assigns_subscript, "subscript", "y[0]", "the caller's argument"),
    (augassigns_subscript, "augsubscript", "x[0]", "`x = x.copy()`"),
    (assigns_attribute, "attribute", "h.value", "sets the attribute `h.value`"),
    (uses_walrus, "walrus", "y := x", "assignment expressions"),
    (uses_class, "class", "class", "class definitions"),
    (decorated_nested, "decorator", "def", "decorators"),
    (uses_match, "match", "match", "`match`"),
]


def check_location(err, tag, token, cls=SrcgradError):
    """The common checks of every compiler error."""
    assert isinstance(err, cls) and isinstance(err, SrcgradError)
    lineno, col = where(tag, token)
    assert err.filename == THIS_FILE
    assert err.lineno == lineno, f"line {err.lineno}, expected {lineno}"
    assert err.col_offset == col, f"column {err.col_offset}, expected {col}"
    text = str(err)
    source_line = _LINES[lineno - 1]
    assert source_line.strip() in text
    assert f'File "{THIS_FILE}", line {lineno}' in text
    # the caret sits under the column, below the (stripped) source line
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip() == source_line.strip())
    caret = lines[i + 1]
    assert caret.strip() == "^"
    indent = len(source_line) - len(source_line.lstrip())
    assert caret.index("^") - lines[i].index(source_line.strip()) == col - indent


@pytest.mark.parametrize("fn, tag, token, words", UNSUPPORTED,
                         ids=[c[0].__name__ for c in UNSUPPORTED])
def test_unsupported_syntax(fn, tag, token, words):
    g = srcgrad.grad(fn, cache=False)
    with pytest.raises(UnsupportedSyntaxError) as info:
        g(np.ones(3))
    err = info.value
    check_location(err, tag, token, UnsupportedSyntaxError)
    assert words in err.msg
    assert "not supported" in err.msg
    # also a SyntaxError, with SyntaxError's own fields filled in
    assert isinstance(err, SyntaxError)
    assert err.offset == err.col_offset + 1 and err.text.strip() == \
        _LINES[err.lineno - 1].strip()


def test_errors_are_raised_when_source_is_asked_for_too():
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcgrad.grad(uses_try).source
    check_location(info.value, "try", "try", UnsupportedSyntaxError)


def test_error_inside_an_inlined_function_points_at_that_function():
    def outer(x):
        return np.sum(uses_with(x))

    with pytest.raises(UnsupportedSyntaxError) as info:
        srcgrad.grad(outer, cache=False)(np.ones(2))
    check_location(info.value, "with", "with", UnsupportedSyntaxError)


# ---- unknown functions -------------------------------------------------------------------------

def calls_fft(x):
    return np.sum(np.abs(np.fft.fft(x)))  # E:fft


def calls_math_gamma(x):
    return math.gamma(x)  # E:gamma


def calls_convolve(x):
    return np.sum(np.convolve(x, x))  # E:convolve


def calls_undefined(x):
    return np.sum(not_defined_anywhere(x))  # E:undefined  # noqa: F821


def calls_unknown_method(x):
    return np.sum(x.searchsorted(x))  # E:method


UNKNOWN = [
    (calls_fft, "fft", "np.fft.fft", "numpy.fft.fft"),
    (calls_math_gamma, "gamma", "math.gamma", "math.gamma"),
    (calls_convolve, "convolve", "np.convolve", "convolve"),
    (calls_undefined, "undefined", "not_defined_anywhere", "not_defined_anywhere"),
    (calls_unknown_method, "method", "x.searchsorted", "searchsorted"),
]


@pytest.mark.parametrize("fn, tag, token, name", UNKNOWN, ids=[c[0].__name__ for c in UNKNOWN])
def test_unknown_function_is_named(fn, tag, token, name):
    with pytest.raises(UnknownFunctionError) as info:
        srcgrad.grad(fn, cache=False)(np.linspace(0.5, 1.5, 4))
    check_location(info.value, tag, token, UnknownFunctionError)
    assert name in info.value.msg


# ---- recursion ---------------------------------------------------------------------------------

def recursive(x):
    return np.sum(x) + recursive(x * 0.5)  # E:recursive


def ping(x):
    return pong(x * 0.5) + np.sum(x)


def pong(x):
    return ping(x) * 2  # E:mutual


def test_direct_recursion():
    with pytest.raises(RecursiveCallError) as info:
        srcgrad.grad(recursive, cache=False)(np.ones(2))
    check_location(info.value, "recursive", "recursive(x * 0.5)", RecursiveCallError)
    assert "'recursive'" in info.value.msg


def test_mutual_recursion():
    with pytest.raises(RecursiveCallError) as info:
        srcgrad.grad(ping, cache=False)(np.ones(2))
    check_location(info.value, "mutual", "ping(x)", RecursiveCallError)
    assert "'ping'" in info.value.msg


def test_recursion_through_a_nested_def():
    def f(x):
        def walk(v):
            return walk(v)  # E:nested-recursion
        return np.sum(walk(x))

    with pytest.raises(RecursiveCallError) as info:
        srcgrad.grad(f, cache=False)(np.ones(2))
    check_location(info.value, "nested-recursion", "walk(v)", RecursiveCallError)


# ---- source that cannot be read ------------------------------------------------------------------

def test_function_made_by_exec_has_no_source():
    ns = {"np": np}
    exec("def made_by_exec(x):\n    return np.sum(x ** 2)\n", ns)
    with pytest.raises(SourceUnavailableError) as info:
        srcgrad.grad(ns["made_by_exec"], cache=False)(np.ones(2))
    err = info.value
    assert isinstance(err, SrcgradError)
    assert err.filename == "<string>" and err.lineno == 1
    assert "made_by_exec" in err.msg and "exec" in err.msg and "define it in a module" in \
        err.msg


def test_calling_a_function_made_by_exec_points_at_the_call():
    ns = {"np": np}
    exec("def helper_by_exec(x):\n    return x * 2\n", ns)
    helper_by_exec = ns["helper_by_exec"]

    def f(x):
        return np.sum(helper_by_exec(x))

    with pytest.raises(SourceUnavailableError) as info:
        srcgrad.grad(f, cache=False)(np.ones(2))
    assert "helper_by_exec" in info.value.msg


def test_builtin_function_is_refused():
    with pytest.raises(SourceUnavailableError, match="no source"):
        srcgrad.grad(np.sin, cache=False)(np.ones(2))


def test_ambiguous_lambda_is_refused_with_its_location():
    pair = (lambda x: x ** 2, lambda x: x ** 3)  # E:toplambda
    g = srcgrad.grad(pair[1], cache=False)
    with pytest.raises(SourceUnavailableError) as info:
        g(1.0)
    check_location(info.value, "toplambda", "lambda", SourceUnavailableError)
    assert "several lambdas" in info.value.msg and "def" in info.value.msg


# ---- wrt -----------------------------------------------------------------------------------------

def two_params(x, y):  # E:wrt
    return np.sum(x * y)


@pytest.mark.parametrize("wrt, words", [
    ("z", "names no parameter"), (("x", "nope"), "names no parameter"),
    (2, "out of range"), (-3, "out of range"),
])
def test_wrt_that_names_no_parameter(wrt, words):
    with pytest.raises(WrtError) as info:
        srcgrad.grad(two_params, wrt=wrt)
    err = info.value
    assert isinstance(err, SrcgradError) and isinstance(err, ValueError)
    assert words in err.msg and "two_params" in err.msg and "x, y" in err.msg
    lineno, _ = where("wrt", "def")
    assert err.filename == THIS_FILE and err.lineno == lineno and err.col_offset == 0
    assert "def two_params(x, y):" in str(err)


def test_wrt_of_the_wrong_type_or_repeated():
    with pytest.raises(TypeError, match="parameter index or name"):
        srcgrad.grad(two_params, wrt=1.5)
    with pytest.raises(TypeError, match="twice"):
        srcgrad.grad(two_params, wrt=("x", 0))


def test_static_value_needed_points_at_the_line():
    def f(x):
        n = int(np.sum(x))  # E:static
        return np.sum(x) * n

    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(f, cache=False)(np.ones(2))
    check_location(info.value, "static", "int(", SrcgradError)
    # int() of a differentiated value has no derivative to give
    assert "int() of it has no derivative" in info.value.msg


def uses_norm_ord(x):
    return np.linalg.norm(x, ord=1)  # E:norm


def test_numpy_function_that_needs_ranks_explains_itself():
    # np.linalg.norm with an order and no axis: a vector or a matrix norm by rank
    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(uses_norm_ord, cache=False)(np.ones(3))
    check_location(info.value, "norm", "np.linalg.norm", SrcgradError)
    assert "numpy.linalg.norm" in info.value.msg and "axis=" in info.value.msg


def test_an_object_that_reaches_the_generated_code_is_an_internal_error_at_the_function(
        monkeypatch):
    """codegen's `literal` of an object it cannot spell raised a bare TypeError, which the
    build passes on as an argument error: an internal traceback with no line of the user's.
    It is an InternalError that names the function."""
    from srcgrad import codegen

    def refuse(v):
        raise TypeError(f"no literal spelling for {type(v).__name__}")

    monkeypatch.setattr(codegen, "literal", refuse)

    def f(x):
        return np.sum(x * 2.0)

    from srcgrad.errors import InternalError

    with pytest.raises(InternalError, match=r"(?s)no literal spelling.*test_errors\.py"):
        srcgrad.grad(f, cache=False)(np.ones(3))
