"""A function whose file was edited after it was defined: srcgrad reads the function's text
from the file, the cache key comes from the code object that runs. The two must be the same
program, else the gradient would be of the new text (in memory, and on disk under the old
code's key). It is refused with a located SourceChangedError, for the differentiated
function and for every function it inlines; text that only moved is not an error."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcgrad
from srcgrad.frontend import parse_function

from paths import ROOT  # noqa: E402  (tests/paths.py)

MODULE = '''import numpy as np


def helper(h):
    return np.sum(h ** 2)


def f(x, w):
    h = np.tanh(x @ w)
    return helper(h) + 0.5 * np.sum(w * w)
'''

X = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
W = np.linspace(0.5, -0.5, 12).reshape(3, 4)


def expected_grad(x, w, power=2, scale=0.5):
    """d/dw of sum(tanh(x @ w) ** power) + scale * sum(w * w)."""
    h = np.tanh(x @ w)
    return x.T @ (power * h ** (power - 1) * (1 - h ** 2)) + 2 * scale * w


def rewrite(path, text):
    """Edit a file so that a reader notices (a later modification time, whatever the
    file system's clock resolution)."""
    st = os.stat(path)
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def line_of(text, needle):
    return text.splitlines().index(needle) + 1


@pytest.fixture
def module_file(tmp_path, monkeypatch):
    """(import function, path) of a fresh user module written from MODULE-like text."""
    d = tmp_path / "user"
    d.mkdir()
    monkeypatch.syspath_prepend(str(d))
    names = []

    def make(text=MODULE, name="edited_user_mod"):
        path = d / f"{name}.py"
        path.write_text(text)
        sys.modules.pop(name, None)
        names.append(name)
        return importlib.import_module(name), str(path)

    yield make
    for name in names:
        sys.modules.pop(name, None)


def test_unchanged_module_compiles(module_file):
    mod, _ = module_file()
    np.testing.assert_allclose(srcgrad.grad(mod.f, wrt="w")(X, W), expected_grad(X, W))


def test_an_edited_function_is_refused_at_its_line(module_file):
    mod, path = module_file()
    new = MODULE.replace("0.5 * np.sum", "1.5 * np.sum")
    rewrite(path, new)
    g = srcgrad.grad(mod.f, wrt="w")
    with pytest.raises(srcgrad.SourceChangedError, match="changed since the function was "
                                                          "defined") as info:
        g(X, W)
    err = info.value
    assert isinstance(err, srcgrad.SrcgradError)
    assert err.filename == path and err.lineno == line_of(new, "def f(x, w):")
    assert "re-import" in str(err) and f"line {err.lineno}" in str(err)
    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    assert not os.path.isdir(cache_dir) or os.listdir(cache_dir) == []  # nothing stored
    # re-imported, the function is the file's again
    mod = importlib.reload(mod)
    np.testing.assert_allclose(srcgrad.grad(mod.f, wrt="w")(X, W),
                               expected_grad(X, W, scale=1.5))


def test_an_edited_inlined_function_is_refused_at_its_line(module_file):
    mod, path = module_file()
    new = MODULE.replace("h ** 2", "h ** 3")
    rewrite(path, new)
    with pytest.raises(srcgrad.SourceChangedError) as info:
        srcgrad.grad(mod.f, wrt="w")(X, W)
    assert info.value.filename == path
    assert info.value.lineno == line_of(new, "def helper(h):")
    mod = importlib.reload(mod)
    np.testing.assert_allclose(srcgrad.grad(mod.f, wrt="w")(X, W),
                               expected_grad(X, W, power=3))


def test_lines_added_above_the_function_are_refused(module_file):
    # the code object still says the function starts at its old line, where the file now
    # holds other text
    mod, path = module_file()
    rewrite(path, MODULE.replace("import numpy as np\n", "import numpy as np\nA = 1\nB = 2\n"))
    with pytest.raises(srcgrad.SourceChangedError):
        srcgrad.grad(mod.f, wrt="w")(X, W)


def test_text_that_only_moved_inside_the_function_is_accepted(module_file):
    # a comment line added inside the body: the same program, line numbers aside
    mod, path = module_file()
    rewrite(path, MODULE.replace("    h = np.tanh(x @ w)\n",
                                 "    h = np.tanh(x @ w)\n    # a note\n"))
    np.testing.assert_allclose(srcgrad.grad(mod.f, wrt="w")(X, W), expected_grad(X, W))


def test_stale_code_is_never_stored_under_its_key(module_file, tmp_path):
    """Process 1 imports the module, the file is then edited, and it asks for the gradient:
    refused, nothing stored. Process 2 imports the file as it was: it computes the gradient
    afresh (were a gradient of the edited text stored under the key of the code that ran,
    it would load that one)."""
    _, path = module_file()
    edited = MODULE.replace("0.5 * np.sum", "1.5 * np.sum")
    code = textwrap.dedent(f"""
        import json, os, sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(path)!r})
        import srcgrad, edited_user_mod
        st = os.stat({path!r})
        with open({path!r}, "w") as fh:
            fh.write({edited!r} if sys.argv[1] == "edit" else {MODULE!r})
        os.utime({path!r}, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        g = srcgrad.grad(edited_user_mod.f, wrt="w")
        try:
            out = g(np.linspace(-1.0, 1.0, 6).reshape(2, 3),
                    np.linspace(0.5, -0.5, 12).reshape(3, 4)).tolist()
            error = None
        except srcgrad.SrcgradError as e:
            out, error = None, type(e).__name__
        print(json.dumps({{"grad": out, "error": error, "compile_count": g.compile_count}}))
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)

    def run(mode):
        p = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True,
                           env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run("edit")  # imports the original text, then the file is edited
    assert first["error"] == "SourceChangedError" and first["grad"] is None
    second = run("restore")  # imports the edited text, then the file is set back
    assert second["error"] == "SourceChangedError"
    rewrite(path, MODULE)
    third = run("restore")  # the original text, unedited: compiled afresh, right
    assert third["error"] is None and third["compile_count"] == 1
    np.testing.assert_allclose(third["grad"], expected_grad(X, W))


# ---- the comparison itself, on functions of every shape the check rebuilds -----------------

SHAPES = '''from __future__ import annotations
import numpy as np
import numpy
from numpy import linalg
xp = numpy


def deco(fn):
    return fn


@deco
def decorated(x: np.ndarray) -> float:
    """A docstring
    on two lines."""
    return np.sum(x * 2.0) + np.sum(-0.0 * x)


def make(k):
    def closure(x):
        return np.sum(x * k) + np.sum([v * k for v in (1.0, 2.0)])
    return closure


class Model:
    __scale = 3.0

    def method(self, x):
        return np.sum(x * self.__scale) + super().__hash__() * 0

    class Inner:
        def nested(self, x):
            return np.sum(x + 1.0)


def factory():
    k = 4.0

    class Local:
        def local(self, x):
            return np.sum(x * k * 1.0)
    return Local


if True:
    def in_if(x):
        return np.sum(x - 1.0)


def aliased(x):
    return xp.sum(x * 5.0) + linalg.norm(x) + numpy.sum(x)
'''

#: name -> (the function and the object it is a method of, from the module; the edit)
CASES = {
    "decorated": (lambda m: (m.decorated, None), ("x * 2.0", "x * 2.5")),
    "closure": (lambda m: (m.make(2.0), None), ("x * k) +", "x / k) +")),
    "method": (lambda m: (m.Model.method, m.Model()), ("x * self.__scale", "x + self.__scale")),
    "nested_class": (lambda m: (m.Model.Inner.nested, m.Model.Inner()),
                     ("x + 1.0)", "x + 1.5)")),
    "local_class": (lambda m: (m.factory().local, m.factory()()),
                    ("x * k * 1.0", "x * k * 2.0")),
    "in_if": (lambda m: (m.in_if, None), ("x - 1.0", "x - 2.0")),
    "aliased": (lambda m: (m.aliased, None), ("x * 5.0", "x * 6.0")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unchanged_functions_of_every_shape_pass_and_edits_are_caught(module_file, case):
    get, (old, new) = CASES[case]
    mod, path = module_file(SHAPES, name=f"shapes_{case}")
    fn, obj = get(mod)
    for _ in range(50):  # run: the interpreter may specialize the bytecode it runs
        fn(np.ones(3)) if obj is None else fn(obj, np.ones(3))
    src = parse_function(fn)
    assert src.tree.name == fn.__name__
    assert SHAPES.count(old) == 1
    rewrite(path, SHAPES.replace(old, new))
    with pytest.raises(srcgrad.SourceChangedError) as info:
        parse_function(fn)
    assert info.value.filename == path and info.value.lineno == src.firstlineno
    # every other function of the module is still the file's
    for other, (get_other, _) in CASES.items():
        if other != case:
            parse_function(get_other(mod)[0])


LIST_OF_ARRAYS = '''import numpy as np

WS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5])]


def f(x):
    s = 0.0
    for w in WS:
        s = s + np.sum(w * x ** 2)
    return s
'''

GROW_AND_SHRINK = '''
import numpy as np, srcgrad, ws_module as M
x = np.array([0.3, -0.7, 1.1])
g = srcgrad.grad(M.f)
wrong = []
for step in ("as written", "grown", "shrunk"):
    if step == "grown":
        M.WS.append(np.array([2.0, 0.0, 1.0]))
    elif step == "shrunk":
        M.WS.pop()
    for k in range(3):
        if not np.allclose(g(x), 2 * x * sum(M.WS)):
            wrong.append((step, k))
print("WRONG", wrong)
'''


def test_a_module_compiled_after_one_loaded_from_the_disk_cache_runs_its_own_code(
        tmp_path):
    """A process that loaded a module from the disk cache, then compiled another (a global
    list of arrays grew: the guard failed), ran the bytecode it had loaded for the first:
    stale gradients until the variant took over. Two processes share one cache."""
    (tmp_path / "ws_module.py").write_text(LIST_OF_ARRAYS)
    env = {**os.environ, "SRCGRAD_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    for run in ("fills the cache", "loads from it"):
        done = subprocess.run([sys.executable, "-c", GROW_AND_SHRINK], cwd=tmp_path,
                              capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert "WRONG []" in done.stdout, (run, done.stdout)


CLOSURE_MODULE = """import numpy as np


def make(np):  # array-API style: the namespace passed in, under the module's own name
    def f(x):
        return np.sum(np.sin(x) * 2.0)
    return f
"""


def test_a_closure_cell_named_like_an_imported_module_is_not_an_edit(module_file):
    """The compiler calls `np.sum(x)` as a module's attribute wherever the module imports
    `np`, a closure cell of that name included: the text compiled again must be compiled
    so too (it was refused as an edited file)."""
    mod, _ = module_file(CLOSURE_MODULE, "closure_np_user_mod")
    np.testing.assert_allclose(srcgrad.grad(mod.make(np))(X), 2.0 * np.cos(X), rtol=1e-12)
