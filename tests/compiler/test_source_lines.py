"""srcgrad reads a function's source with `scopes.source_lines`, which gives what
`inspect.getsourcelines(code)` gives without inspect's search of every loaded module for a
code object's module (10-25 ms of a first compilation in a fresh process). Checked here on
every function, method and nested function of the test programs, and on a module that a
loader holds (a zip archive), whose lines only the module's globals let linecache read."""
from __future__ import annotations

import glob
import importlib
import inspect
import os
import sys
import types
import zipfile

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences
from srcgrad.scopes import source_lines

HERE = os.path.dirname(os.path.abspath(__file__))


def _codes(obj, seen):
    """The code objects of the functions `obj` (a module or class) defines, nested ones too."""
    for value in list(vars(obj).values()):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            value = value.fget
        if isinstance(value, type) and value.__module__ == getattr(obj, "__name__", None) \
                and id(value) not in seen:
            seen.add(id(value))
            yield from _codes(value, seen)
        code = value.__code__ if isinstance(value, types.FunctionType) else None
        if isinstance(code, types.CodeType) and id(code) not in seen:
            stack = [(code, value)]
            while stack:
                c, fn = stack.pop()
                seen.add(id(c))
                yield c, fn
                stack.extend((k, fn) for k in c.co_consts if isinstance(k, types.CodeType)
                             and k.co_name not in ("<lambda>", "<genexpr>", "<listcomp>",
                                                   "<dictcomp>", "<setcomp>"))


def _modules():
    names = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(HERE, "*_user.py")))
    return names + ["stencil_programs", "corpus.branches", "corpus.loops", "corpus.calls",
                    "corpus.whiles", "corpus.combined", "corpus.helpers_other_module"]


@pytest.mark.parametrize("name", _modules())
def test_the_lines_are_inspects(name):
    module = importlib.import_module(name)
    checked = 0
    for code, fn in _codes(module, set()):
        if code.co_filename != module.__file__:
            continue  # (a function imported from elsewhere: its own module's test)
        try:
            want = inspect.getsourcelines(code)
        except OSError:
            with pytest.raises(OSError):
                source_lines(code, fn)
            continue
        assert source_lines(code, fn) == want, code
        checked += 1
    assert checked > 0


def test_a_function_in_a_zip_archive(tmp_path):
    archive = tmp_path / "zipped_models.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_models.py", "import numpy as np\n\n\n"
                   "def decorated(f):\n    return f\n\n\n"
                   "@decorated\n"
                   "def loss(w, x):\n"
                   "    return np.sum(np.tanh(x @ w) ** 2)\n")
    sys.path.insert(0, str(archive))
    try:
        module = importlib.import_module("zipped_models")
        assert not os.path.exists(module.loss.__code__.co_filename)
        lines, first = source_lines(module.loss.__code__, module.loss)
        assert (lines, first) == inspect.getsourcelines(module.loss.__code__)
        assert lines[0] == "@decorated\n" and first == 8
        rng = np.random.default_rng(0)
        w, x = rng.normal(size=3), rng.normal(size=(4, 3))
        got = srcgrad.grad(module.loss, cache=False)(w, x)
        np.testing.assert_allclose(got, finite_differences(module.loss, [w, x], 0),
                                   rtol=1e-7, atol=1e-9)
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop("zipped_models", None)
