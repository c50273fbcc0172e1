"""Names in generated code never collide with the user's: parameters, locals, module-level
and closure arrays may be named like anything the generated code uses (`np`, `dx`,
`out_1`, `sum_to`, `ndarray`, `pullback`...), and the gradient is still right."""
from __future__ import annotations

import ast
import functools
import glob
import hashlib
import importlib.util
import keyword
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from compiler_helpers import check_grad
from programs import Program, programs
from test_property import check_program

from paths import TESTS as HERE  # noqa: E402
# the names of the collisions reported against srcgrad, beside those read from generated code
REPORTED = ["np", "dx", "dout", "out", "out_1", "x_1", "sum_to", "broadcast_shapes",
            "check_scalar", "as_float", "ndarray", "cast_like", "pullback", "range",
            "reversed", "type", "len", "list", "slice", "float", "int"]
NUMPY = "numpy_user_"  # the test programs' own name for numpy
rng = np.random.default_rng(7)


def _source_names(text) -> set:
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return names


def _sample_fast(x, y):
    return np.sum(x * y)


def _sample_vjp(x):
    return np.sin(x) * 2.0


@functools.lru_cache(maxsize=None)
def generated_names() -> tuple:
    """Every name in the golden generated sources and in a module with a same-shape
    variant and one with a pullback (sorted, for hypothesis to draw from)."""
    names = set(REPORTED)
    for path in sorted(glob.glob(os.path.join(HERE, "golden", "*.py"))):
        with open(path) as f:
            names |= _source_names(f.read())
    names |= _source_names(srcgrad.grad(_sample_fast, wrt=(0, 1), cache=False).source)
    vjp = srcgrad.api.VJPFunction(_sample_vjp, 0, cache=False)
    names |= _source_names(vjp.source)
    return tuple(sorted(n for n in names if not keyword.iskeyword(n) and n != NUMPY))


def _load(source, directory):
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    modname = f"srcgrad_names_{digest}"
    if modname not in sys.modules:
        path = os.path.join(directory, modname + ".py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(modname, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
    return sys.modules[modname]


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.mapping.get(node.arg, node.arg)
        return node


def _user_names(program) -> list:
    """The program's own names: parameters, assigned variables, loop indices, constants."""
    tree = ast.parse(program.source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    names = list(program.params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and \
                node.id not in names:
            names.append(node.id)
    return names + [c for c in program.constants if c not in names]


def renamed(program, draw, closure: bool) -> Program:
    """`program` with its names drawn from the generated code's names; its module-level
    arrays become closure variables with `closure`."""
    tree = ast.parse(program.source)
    builtins_read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - \
        set(_user_names(program)) - {"np"}
    pool = [n for n in generated_names() if n not in builtins_read]
    old = _user_names(program)
    new = draw(st.lists(st.sampled_from(pool), min_size=len(old), max_size=len(old),
                        unique=True), label="names")
    mapping = dict(zip(old, new), np=NUMPY)
    tree = _Rename(mapping).visit(tree)
    body = [s for s in tree.body if not isinstance(s, ast.Import)]
    consts = [s for s in body if isinstance(s, ast.Assign)]
    fn = next(s for s in body if isinstance(s, ast.FunctionDef))
    head = f"import numpy as {NUMPY}\n\n\n"
    if closure and consts:
        inner = ast.unparse(ast.Module(consts + [fn], []))
        text = (head + "def make_program_():\n" +
                "".join(f"    {ln}\n" for ln in inner.splitlines()) +
                f"    return {fn.name}\n\n\n{fn.name} = make_program_()\n")
    else:
        text = head + ast.unparse(ast.Module(consts + [fn], [])) + "\n"
    return Program(program.name, text, [mapping[p] for p in program.params],
                   program.args, tuple(mapping[w] for w in program.wrt))


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("named_programs"))


@settings(max_examples=max(25, settings.default.max_examples // 4))
@given(programs(), st.data())
def test_random_names_from_generated_code(program_dir, program, data):
    closure = data.draw(st.booleans(), label="closure")
    prog = renamed(program, data.draw, closure)
    g = check_program(prog, program_dir)
    fn = getattr(_load(prog.source, program_dir), prog.name)
    _, pullback = srcgrad.vjp(fn, *prog.args, wrt=prog.wrt)
    for a, b in zip(pullback(1.0), g(*prog.args)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12,
                                   err_msg=f"vjp != grad\n{prog.source}")


# ---- the reported collisions, each by name -------------------------------------------------

GLOBALS = '''
import numpy
dx = numpy.linspace(0.5, 1.5, 20)
dout = numpy.linspace(-1.0, 1.0, 20)
out_1 = numpy.linspace(0.0, 1.0, 20)
np = numpy.linspace(1.0, 2.0, 20)
sum_to = numpy.linspace(0.0, 2.0, 20)
broadcast_shapes = numpy.linspace(1.0, 2.0, 3)
check_scalar = numpy.linspace(1.0, 2.0, 3)
as_float = numpy.linspace(1.0, 3.0, 3)
ndarray = numpy.linspace(2.0, 3.0, 3)


def read_dx(x):
    return numpy.sum(numpy.sin(x) * dx)


def read_dout(x):
    out = numpy.sin(x) * dout
    return numpy.sum(out * x)


def read_out_1(x):
    out = numpy.sin(x) * out_1
    return numpy.sum(out * x)


def read_np(x):
    return numpy.sum(numpy.cos(x) * np)


def read_sum_to(x, y):
    return numpy.sum(x * sum_to + y)


def read_helpers(x, y):
    return numpy.sum((x[:3] + y) * broadcast_shapes * check_scalar * as_float * ndarray)


def make():
    dout = numpy.linspace(-1.0, 1.0, 20)

    def closure_dout(x):
        out = numpy.sin(x) * dout
        return numpy.sum(out * x)

    return closure_dout


closure_dout = make()


def param_np(np, y):
    return numpy.sum(numpy.sin(np) * y)


def param_dx(x, dx):
    return numpy.sum(numpy.sin(x) * dx)


def param_helpers(sum_to, broadcast_shapes, check_scalar, as_float, ndarray):
    return numpy.sum(sum_to * broadcast_shapes + check_scalar * as_float) * numpy.sum(ndarray)


def param_dout(x, dout, out):
    return numpy.sum(numpy.tanh(x) * dout) + out
'''

X20 = rng.normal(size=20)
X3 = rng.normal(size=3)
CASES = [("read_dx", (X20,), 0), ("read_dout", (X20,), 0), ("read_out_1", (X20,), 0),
         ("read_np", (X20,), 0), ("read_sum_to", (X20, 0.3), (0, 1)),
         ("read_helpers", (X20, X3), (0, 1)), ("closure_dout", (X20,), 0),
         ("param_np", (X3, X3), (0, 1)), ("param_dx", (X3, X3), (0, 1)),
         ("param_helpers", (X3, X3, 0.5, X3, X3), (0, 1, 2, 3, 4)),
         ("param_dout", (X3, X3, 0.5), (0, 1, 2))]


@pytest.fixture(scope="module")
def named(program_dir):
    return _load(GLOBALS, program_dir)


@pytest.mark.parametrize("name, args, wrt", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kind", ["grad", "value_and_grad", "vjp"])
def test_reported_collision(named, name, args, wrt, kind):
    fn = getattr(named, name)
    expected = check_grad(fn, args, wrt, compiled=srcgrad.grad(fn, wrt=wrt, cache=False))
    if kind == "value_and_grad":
        value, got = srcgrad.value_and_grad(fn, wrt=wrt, cache=False)(*args)
        np.testing.assert_allclose(value, fn(*args))
    elif kind == "vjp":
        out, pullback = srcgrad.vjp(fn, *args, wrt=wrt)
        got = pullback(1.0)
    else:
        return
    got = list(got) if isinstance(wrt, tuple) else [got]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)
