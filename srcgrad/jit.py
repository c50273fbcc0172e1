"""The numba backend (`grad(f, backend="numba")`): the generated gradient, specialized to a
call's shapes and dtypes, compiled by numba in nopython mode.

A numba module is a specialized variant (srcgrad.specialize) written for numba
(`codegen.emit_module(jit=...)`): its entry is a Python function that holds the guard and
calls the compiled function; every run of elementwise work is a function of explicit loops
over the run's known shape (`codegen._emit_loops`), one pass over memory, in parallel
threads above `JitOptions.parallel_min` elements; the entry allocates the results and the
compiled function writes them (numba boxes each array it returns). A variant that makes
large arrays (`large_form`) gets the large-array form (`JitOptions.python_body`): only the
loops are compiled, the function around them is the numpy variant, numpy allocates the
loops' outputs (the values nothing sees after the call in scratch arrays the module
reuses: `codegen.scratch_values`), and ops that are a call per element are left to
numpy's ufuncs while their arrays fit in cache (`accept`). What numba cannot
compile is found when the variant is made (`compile_now` compiles it for the call's
argument types at once), and that call, and later ones, run the numpy code, with a
warning that names the line (`failure`).

numba is an optional dependency: `require` says how to install it.
"""
from __future__ import annotations

import os
import re

import numpy

import ast

from .errors import SrcgradError
from runtime.ops import shapes as _shapes

from .ir import COND, FOR, PYTHON, WHILE, Var

__all__ = ["INSTALL", "require", "accept", "loop_alone", "compile_now", "failure", "SCALAR_OPS", "CHEAP_OPS",
           "STREAMING", "LARGE", "VECTOR_CALLS", "VECTOR_TRIG", "large_form", "unlike_numpy",
           "Unlike"]

INSTALL = 'pip install "srcgrad[jit]"'

#: elementwise ops whose numpy spelling numba compiles on scalars (checked for each one,
#: against numpy, by tests/compiler/test_numba.py): what a fused loop may contain
SCALAR_OPS = frozenset({
    "absolute", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "ceil", "copy", "cos", "cosh", "divide", "equal", "exp", "exp2", "expm1",
    "fabs", "floor", "floor_divide", "fmax", "fmin", "fmod", "greater", "greater_equal",
    "hypot", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p",
    "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
    "maximum", "minimum", "multiply", "negative", "not_equal", "power", "reciprocal",
    "remainder", "rint", "sign", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh",
    "trunc",
})


def require():
    """numba (with srcgrad's helpers taught to it), or an ImportError that says how to
    install it."""
    try:
        import numba
    except ImportError as err:
        raise ImportError("srcgrad's backend='numba' needs numba, which is not installed: "
                          f"{INSTALL} (or pip install numba scipy)") from err
    _teach(numba)
    return numba


_TAUGHT: list = []


def _teach(numba) -> None:
    """Register nopython versions of the helpers generated code calls where shapes are not
    known when it is compiled (`sum_to`, `broadcast_shapes`, `check_scalar`,
    `scatter_add` and `setitem` at a basic index, the matmul and dot cotangents of
    vectors and matrices, `cast_like`): numba picks
    an implementation for the argument types it sees (an array's ndim, a tuple's length),
    written out here for those types. Types a version does not take (a shape longer than
    the array) stay untyped: numba refuses, and the numpy code runs."""
    if _TAUGHT:
        return
    from numba import types
    from numba.extending import overload

    from runtime.ops import helpers

    @overload(helpers.sum_to)
    def _sum_to(x, shape):
        if not isinstance(shape, types.BaseTuple):
            return None
        if isinstance(x, types.Array) and x.ndim >= len(shape):
            return _sum_to_loops(x.ndim, len(shape))
        if isinstance(x, (types.Float, types.Integer)) and len(shape) == 0:
            return lambda x, shape: x
        return None

    @overload(helpers.broadcast_shapes)
    def _broadcast_shapes(*shapes):
        if len(shapes) == 1 and isinstance(shapes[0], types.StarArgTuple):
            shapes = shapes[0].types
        if not all(isinstance(s, types.BaseTuple) for s in shapes):
            return None
        return _broadcast_rule([len(s) for s in shapes])

    @overload(helpers.check_scalar)
    def _check_scalar(out):
        # a scalar passes; anything else is left untyped (the numpy code raises the error)
        real = (types.Float, types.Integer)
        if isinstance(out, types.Array) and out.ndim == 0 and isinstance(out.dtype, real) \
                or isinstance(out, real) and not isinstance(out, types.Boolean):
            return lambda out: out
        return None

    @overload(helpers.scatter_add)
    def _scatter_add(v, idx, shape):
        # a basic index (an int, a slice, a tuple of them) selects each element once
        basic = (types.Integer, types.SliceType)
        if not (isinstance(idx, basic) or isinstance(idx, types.BaseTuple) and
                all(isinstance(i, basic) for i in idx.types)):
            return None
        if isinstance(v, types.Array):
            def impl(v, idx, shape):
                out = numpy.zeros(shape, v.dtype)
                out[idx] = v
                return out
            return impl
        if isinstance(v, types.Float):
            def impl_scalar(v, idx, shape):
                out = numpy.zeros(shape, numpy.float64)
                out[idx] = v
                return out
            return impl_scalar
        return None

    @overload(helpers.setitem)
    def _setitem(x, idx, v):
        # x with x[idx] = v, at a basic index (each element once), of values that x's dtype
        # holds as they are: floats into a float array, or one dtype into itself (numpy's
        # refusals and truncations stay untyped: the numpy code runs)
        basic = (types.Integer, types.SliceType)
        if not (isinstance(x, types.Array) and (isinstance(idx, basic) or
                isinstance(idx, types.BaseTuple) and all(isinstance(i, basic)
                                                         for i in idx.types))):
            return None
        value = v.dtype if isinstance(v, types.Array) else v
        if not (value == x.dtype or isinstance(x.dtype, types.Float) and
                isinstance(value, (types.Float, types.Integer)) and
                not isinstance(value, types.Boolean)):
            return None

        def impl(x, idx, v):
            out = x.copy()
            out[idx] = v
            return out
        return impl

    @overload(helpers.to_float)
    def _to_float(x):
        # float(x), math.sqrt(x) of a number or a 0-d array (numpy refuses larger ones:
        # untyped here, the numpy code runs and raises)
        # (in float64, a Python float: numba's float() keeps a float32 a float32)
        if isinstance(x, (types.Float, types.Integer)):
            return lambda x: numpy.float64(x)
        if isinstance(x, types.Array) and x.ndim == 0:
            return lambda x: numpy.float64(x[()])
        return None

    @overload(helpers.list_pos)
    def _list_pos(lst, index):
        if not isinstance(index, types.Integer):
            return None

        def impl(lst, index):
            n = len(lst)
            if index < -n or index >= n:
                raise IndexError("list index out of range")
            return index + n if index < 0 else index
        return impl

    def matmul_grads(grad_a):
        # the matmul cotangents of vectors and matrices (a stack of matrices: untyped)
        def typer(g, a, b):
            if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or \
                    a.ndim not in (1, 2) or b.ndim not in (1, 2):
                return None
            key = (a.ndim, b.ndim)
            if grad_a:
                return {(2, 1): lambda g, a, b: numpy.outer(g, b),
                        (1, 2): lambda g, a, b: b @ g,
                        (2, 2): lambda g, a, b: g @ b.T,
                        (1, 1): lambda g, a, b: g * b}[key]
            return {(2, 1): lambda g, a, b: a.T @ g,
                    (1, 2): lambda g, a, b: numpy.outer(a, g),
                    (2, 2): lambda g, a, b: a.T @ g,
                    (1, 1): lambda g, a, b: g * a}[key]
        return typer

    overload(helpers.matmul_grad_a)(matmul_grads(True))
    overload(helpers.matmul_grad_b)(matmul_grads(False))
    overload(helpers.dot_grad_a)(matmul_grads(True))
    overload(helpers.dot_grad_b)(matmul_grads(False))

    @overload(numpy.stack)
    def _stack_list(arrays, axis=0):
        # a list of arrays of one shape (the steps a loop appended), along a new first
        # axis; numba's own np.stack takes a tuple
        if not (isinstance(arrays, types.List) and isinstance(arrays.dtype, types.Array)):
            return None
        nd = arrays.dtype.ndim

        def impl(arrays, axis=0):
            first = arrays[0]
            if axis != 0 and axis != -nd - 1:
                raise ValueError("stack of a list of arrays of more than two dimensions: "
                                 "along the first axis only")
            out = numpy.empty((len(arrays),) + first.shape, first.dtype)
            for k in range(len(arrays)):
                if arrays[k].shape != first.shape:
                    raise ValueError("all input arrays must have the same shape")
                out[k] = arrays[k]
            return out

        def impl1(arrays, axis=0):  # rows of one dimension: along either axis
            first = arrays[0]
            n, m = len(arrays), first.shape[0]
            ax = axis + 2 if axis < 0 else axis
            if ax != 0 and ax != 1:
                raise ValueError("axis is out of bounds for array of dimension 2")
            out = numpy.empty((n, m) if ax == 0 else (m, n), first.dtype)
            for k in range(n):
                if arrays[k].shape != first.shape:
                    raise ValueError("all input arrays must have the same shape")
                if ax == 0:
                    out[k, :] = arrays[k]
                else:
                    out[:, k] = arrays[k]
            return out

        def impl2(arrays, axis=0):  # of two dimensions: along any of three axes
            first = arrays[0]
            n, a, b = len(arrays), first.shape[0], first.shape[1]
            ax = axis + 3 if axis < 0 else axis
            if ax < 0 or ax > 2:
                raise ValueError("axis is out of bounds for array of dimension 3")
            out = numpy.empty((n, a, b) if ax == 0 else ((a, n, b) if ax == 1 else (a, b, n)),
                              first.dtype)
            for k in range(n):
                if arrays[k].shape != first.shape:
                    raise ValueError("all input arrays must have the same shape")
                if ax == 0:
                    out[k, :, :] = arrays[k]
                elif ax == 1:
                    out[:, k, :] = arrays[k]
                else:
                    out[:, :, k] = arrays[k]
            return out
        return {1: impl1, 2: impl2}.get(nd, impl) if nd >= 1 else None

    @overload(numpy.flip)
    def _flip_axis(m, axis):
        # along one axis (a reversed cumsum's cotangent); numba's own np.flip takes none
        if not (isinstance(m, types.Array) and m.ndim in (1, 2) and
                isinstance(axis, types.Integer)):
            return None
        if m.ndim == 1:
            def impl1(m, axis):
                if axis not in (0, -1):
                    raise ValueError("axis is out of bounds for array of dimension 1")
                return m[::-1]
            return impl1

        def impl2(m, axis):
            if axis in (0, -2):
                return m[::-1, :]
            if axis in (1, -1):
                return m[:, ::-1]
            raise ValueError("axis is out of bounds for array of dimension 2")
        return impl2

    @overload(helpers.cast_like)
    def _cast_like(x, like):
        if isinstance(x, types.Array) and isinstance(like, types.Array):
            if x.dtype == like.dtype:
                return lambda x, like: x
            dt = numba.np.numpy_support.as_dtype(like.dtype)
            return lambda x, like: x.astype(dt)
        return None

    _TAUGHT.append(True)


def _compiled(lines: list):
    ns = {"np": numpy}
    exec("\n".join(lines), ns)  # noqa: S102 (source written here, from two ints)
    return ns["impl"]


def _sum_to_loops(nx: int, ns: int):
    """sum_to for an nx-d array and a shape of ns entries: one loop over x, adding each
    element where broadcasting took it from (leading axes summed, axes of 1 summed)."""
    lead = nx - ns
    lines = ["def impl(x, shape):"]
    if lead == 0:  # nothing to sum: x itself, as numpy's sum_to gives it
        lines += ["    if x.shape == shape:", "        return x"]
    lines.append("    out = np.zeros(shape, x.dtype)")
    ind = "    "
    for d in range(nx):
        lines.append(f"{ind}for i{d} in range(x.shape[{d}]):")
        ind += "    "
    parts = [f"(i{lead + k} if shape[{k}] != 1 else 0)" for k in range(ns)]
    at = ("(" + ", ".join(parts) + ("," if ns == 1 else "") + ")") if ns else "()"
    lines.append(f"{ind}out[{at}] += x[{', '.join(f'i{d}' for d in range(nx)) or '()'}]")
    lines.append("    return out")
    return _compiled(lines)


def _broadcast_rule(lens: list):
    """broadcast_shapes for shapes of these lengths (numpy's rule, numpy's error)."""
    n = max(lens, default=0)
    lines = ["def impl(*shapes):"]
    for j in range(n):
        lines.append(f"    r{j} = 1")
        for a, m in enumerate(lens):
            k = m - n + j
            if k >= 0:
                lines += [f"    d = shapes[{a}][{k}]",
                          "    if d != 1:",
                          f"        if r{j} != 1 and r{j} != d:",
                          "            raise ValueError('shape mismatch: objects cannot be "
                          "broadcast to a single shape')",
                          f"        r{j} = d"]
    lines.append(f"    return ({', '.join(f'r{j}' for j in range(n))}{',' if n == 1 else ''})")
    return _compiled(lines)


#: ops LLVM turns into a few vector instructions in a loop; the others (exp, tanh, sin...)
#: are a call to the C library per element, where numpy's own loops are vectorized
CHEAP_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "negative", "square", "absolute", "fabs",
    "maximum", "minimum", "fmax", "fmin", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "sign", "copy",
    "reciprocal", "floor", "ceil", "trunc", "rint", "sqrt", "power",
})

#: a variant that makes an array of this many elements or more gets the large-array form
#: (`JitOptions.python_body`): numba compiles the loops only, and the rest runs on numpy
LARGE = 1 << 16

#: ... as does one that calls exp, tanh, sin... (not `CHEAP_OPS`) on arrays of this many
#: elements or more: numpy's vectorized loops take about a sixth of the time of numba's
#: call per element (tanh: 1.7 against 10 ns), which outweighs what calling numpy costs
VECTOR_CALLS = 1 << 11

#: ... but for these of float64 numbers: a loop's are srcgrad.jit_math's (see
#: codegen._emit_loops), a third of the time of numpy's or less (which calls the C
#: library's for each element)
VECTOR_TRIG = frozenset({"sin", "cos"})

#: from this many elements a loop pays for its per-element calls: each array it does not
#: write is memory it does not stream (numpy's ufuncs win while the arrays sit in cache)
STREAMING = 1 << 17


def accept(e, run, python_body: bool = False) -> bool:
    """Whether a fused loop may compute equation `e` after the equations `run`: an op
    numba spells on scalars, over values whose shapes and dtypes the specialized IR
    knows, all of one shape but for broadcasting (the loop's shape is the largest). With
    large arrays (`python_body`), an op that is a call per element (`CHEAP_OPS`) only
    where its arrays do not fit in cache (`STREAMING`), but for float64 sines and cosines
    (`VECTOR_TRIG`), and no op on numbers alone."""
    from .fusion import jit_dtype, loop_shape

    if e.prim.name not in SCALAR_OPS:
        return False
    values = _values(e)
    if not all(loop_shape(v) is not None and jit_dtype(v) is not None for v in values):
        return False
    if python_body and e.prim.name not in CHEAP_OPS and \
            max(int(numpy.prod(loop_shape(v))) for v in values) < STREAMING and not (
                e.prim.name in VECTOR_TRIG and
                all(jit_dtype(v) == "float64" for v in values)):
        return False
    if python_body and all(loop_shape(v) == () for v in values):
        return False  # (numbers: numpy's scalars, as numpy gives them, not a 0-d loop)
    if not run:
        return True
    shapes = [loop_shape(v) for q in run for v in _values(q)]
    try:
        loop = numpy.broadcast_shapes(*shapes)
        return numpy.broadcast_shapes(loop, *(loop_shape(v) for v in values)) == loop
    except ValueError:
        return False


#: ops a loop writes otherwise than numba's own function of arrays, as numpy computes
#: them (codegen's _NUMPY_TIES: signed zeros, ties): a loop of their own, even alone
LOOP_ALONE = frozenset({"sign", "maximum", "minimum"})


def loop_alone(e) -> bool:
    """Is equation `e`, alone, written as a loop of its own (fusion.fuse_graph)?"""
    return e.prim.name in LOOP_ALONE


def large_form(eqns) -> bool:
    """Whether a variant of these equations gets the large-array form: it makes an array of
    `LARGE` elements or more (an input, however large, that it only reads, a matmul's
    matrix say, does not count; nor does a view), or calls a vectorizable op that is not
    cheap on `VECTOR_CALLS` or more (in nested blocks too, where shapes are known)."""
    from .fusion import loop_shape

    for e in eqns:
        for o in e.outs if not getattr(e.prim, "view", False) else ():  # (a view: no memory)
            shape = loop_shape(o) if o.kind == "array" else None
            size = int(numpy.prod(shape)) if shape is not None else 0
            if size >= LARGE or (size >= VECTOR_CALLS and e.prim.name in SCALAR_OPS and
                                 e.prim.name not in CHEAP_OPS):
                return True
        if any(large_form(b.eqns) for b in e.blocks()):
            return True
    return False


class Unlike(SrcgradError):
    """The variant has an equation that numba would compute with another meaning than
    numpy's (`unlike_numpy`): the numpy code runs, with a warning that says where."""

    def __init__(self, qualname: str, what: str, e):
        where = "" if e is None or e.loc is None else \
            f" at {e.loc.filename}:{e.loc.lineno} `{e.loc.text}`"
        super().__init__(f"srcgrad does not compile the gradient of {qualname!r} with numba: "
                         f"{what}{where}. It runs the numpy code instead")


def unlike_numpy(eqns, ints: "set | None" = None, marked: "set | None" = None,
                 bools: "set | None" = None) -> "tuple | None":
    """(what, equation) for the first equation numba would compute with another meaning than
    numpy's, else None: then the numpy code runs.
    - A statement run as written (but `assert` and `raise`): numba compiles a random draw
      from its own generator, not numpy's (`np.random.seed` does not reach it), and other
      calls to its own rules.
    - Arithmetic on integers or booleans whose result is not float64 and not int64 from
      int64 operands: numpy 2 computes `k * 3` of an int8 k in int8 (it wraps), `u - 5`
      of a uint in the uint's dtype, `m + m` of booleans as `m | m`; numba computes in
      int64 (or float64), and an integer power to a negative exponent gives 0 where numpy
      raises. An integer operand of a float64 result is exact in both.
    - Arithmetic on float32 (or float16) values: numba computes a float32 value with a
      Python float constant in float64 (`x + 1e-8` is not x, a tie with 0.1 is none, an
      overflow to inf is finite), and float32 times an int64 array in float32, where
      numpy gives float64.
    - Arithmetic on Python ints (a parameter, what is made of one) that Python computes
      exactly where numba's int64 wraps or differs: `n * n`, `n ** 40` past 2**63,
      `2 ** -i` (Python: a float, numba: 0), `n // 0` (Python raises, numba gives 0).
    - Python's abs(), max() and min() of Python numbers (ops.python_operand): numba's
      max(1.0, nan) is nan where Python's is 1.0, its abs(n) an int64.
    - A numpy function of a Python bool parameter (`bools`) with no float64 array among
      its operands: numpy computes np.sin(True) and np.exp(True) in float16, numba in
      float64. (`x * flag` of a float64 array x is float64 in both.)
    - int() of a float: numba's wraps past 2**63 and makes a number of nan and inf, where
      Python's is exact, and raises."""
    from .fusion import jit_dtype
    from .staging import INT

    bools = bools or set()

    if marked is None:  # (the whole program; `ints`: its parameters that are Python ints)
        ints = python_ints(eqns, set(ints or ()))
        marked = set()  # (ids of ops.python_operand's results)
    for e in eqns:
        if e.prim is PYTHON and not isinstance(e.params["code"].node, (ast.Assert, ast.Raise)):
            return "a statement that runs as written (numba would run it with its own " \
                "meaning where it can compile it at all: a random draw, for one, from " \
                "numba's generator, not numpy's)", e
        if e.prim is _shapes.python_operand:
            marked.add(e.outs[0].id)
        if (e.prim.name in ("maximum", "minimum") and any(
                isinstance(a, Var) and a.id in marked for a in e.ins) and
                not _floats(e.ins, ints)) or (
                e.prim is _shapes.python_operand and isinstance(e.ins[0], Var) and
                e.ins[0].id in ints):
            return "Python's max() or min() of Python numbers, or abs() of an int (numba " \
                "computes them with its own rules: max(1.0, nan) is nan, an int wraps at " \
                "2**63)", e
        if e.prim.name in _EXACT_IN_PYTHON and e.var_ins() and not (
                e.prim.name in ("floor_divide", "remainder") and _nonzero_int(e.ins[1])) and all(
                a.id in ints if isinstance(a, Var) else
                isinstance(a, int) and not isinstance(a, numpy.generic) for a in e.ins):
            return "arithmetic on Python ints (Python computes it exactly, numba in int64: " \
                "it wraps at 2**63, and 2 ** -n is 0)", e
        if e.prim is INT and any(isinstance(a, Var) and a.id not in ints for a in e.ins):
            return "int() of a float (numba's wraps past 2**63, and gives a number for nan " \
                "and inf, where Python's is exact, or raises)", e
        if e.prim.elementwise and (e.prim.differentiable or e.prim.dtype is not None):
            kinds = [jit_dtype(v) for v in e.ins if isinstance(v, Var) and v.kind == "array"]
            if any(isinstance(a, Var) and a.id in bools for a in e.ins) and \
                    "float64" not in kinds:
                return "a numpy function of a Python bool (numpy computes np.sin(True) in " \
                    "float16, numba in float64)", e
            out = jit_dtype(e.outs[0]) if e.outs and isinstance(e.outs[0], Var) else None
            narrow = {k for k in kinds + [out] if k in ("float32", "float16")}
            if narrow:
                return f"{'/'.join(sorted(narrow))} arithmetic (numba computes it with " \
                    "float64 constants and its own promotion rules)", e
            exact = [k for k in kinds if k is not None and k != "float64"]
            wide = out == "float64" or (out is None and "float64" in kinds)
            if exact and not wide and not (
                    out == "int64" and set(exact) == {"int64"} and e.prim.name != "power") \
                    and not (out == "bool_" and set(exact) == {"bool_"} and
                             e.prim.name in _LOGICAL_ON_BOOLS):
                return f"integer arithmetic ({', '.join(sorted(set(exact)))} operands: " \
                    "numpy computes in their dtype, numba in its own)", e
        for b in e.blocks():
            found = unlike_numpy(b.eqns, ints, marked, bools)
            if found is not None:
                return found
    return None


# numpy's operators on bool arrays whose bool results numba computes alike (numba's ~ of a
# bool is its negation, as numpy's; + of bools would be an int in numba, a bool in numpy)
_LOGICAL_ON_BOOLS = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "invert"})

# what Python computes on ints otherwise than numba's int64 (which wraps, gives 0 for a
# negative power and for a division by zero). Sums and differences are left to numba:
# they wrap only past 2**63, out of reach of an index or a count (numba refuses an
# argument past int64)
_EXACT_IN_PYTHON = frozenset({"multiply", "power", "left_shift", "floor_divide", "remainder",
                              "divide", "true_divide", "negative", "absolute"})
# ops that give a Python int of Python ints (Python's operators, and abs, max and min)
_INT_OF_INTS = frozenset({"add", "subtract", "multiply", "power", "floor_divide", "remainder",
                          "negative", "absolute", "maximum", "minimum", "left_shift",
                          "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
                          "invert", "less", "less_equal", "greater", "greater_equal",
                          "equal", "not_equal", "python_operand", "sum_to", "cast_like",
                          "positive"})


def _nonzero_int(a) -> bool:
    """Is `a` an int constant other than 0 (by which numba's // and % are Python's)?"""
    return isinstance(a, (int, numpy.integer)) and not isinstance(a, bool) and a != 0


def python_ints(eqns, ints: set) -> set:
    """Add to `ints` the ids of the values of `eqns` that may be Python ints (or bools) at
    run time: `ints` holds the parameters that are; a loop's index, int() and len() make
    one, and Python's operators of them (but /) give one."""
    while True:  # (loops feed back: passes over the whole program to a fixed point)
        before = len(ints)
        _python_ints_pass(eqns, ints)
        if len(ints) == before:
            return ints


def _python_ints_pass(eqns, ints: set) -> None:
    from .staging import INT, LEN

    def is_int(a):
        return a.id in ints if isinstance(a, Var) else (
            isinstance(a, int) and not isinstance(a, numpy.generic))

    for e in eqns:
        op = e.prim
        if op in (INT, LEN):
            ints.update(o.id for o in e.outs)
        elif op is FOR or op is WHILE:
            if op is FOR and isinstance(e.params.get("index"), Var):
                ints.add(e.params["index"].id)
            inits = e.ins[3:] if op is FOR else e.ins
            for c, i, n, o in zip(e.params["carry"], inits, e.params["body"].outs, e.outs):
                if is_int(i) or is_int(n):
                    ints.update((c.id, o.id))
        elif op is COND:
            ints.update(o.id for o, a, b in zip(e.outs, e.params["then"].outs,
                                                 e.params["else"].outs)
                        if is_int(a) or is_int(b))
        elif op.name in _INT_OF_INTS and e.outs and e.var_ins() and all(
                is_int(a) for a in e.ins if not isinstance(a, tuple)):
            ints.add(e.outs[0].id)
        for b in e.blocks():
            _python_ints_pass(b.eqns, ints)


def _values(e) -> list:
    return [a for a in e.ins if isinstance(a, Var)] + list(e.outs)


def compile_now(dispatcher, sig) -> None:
    """Compile `dispatcher` (a numba function) now for the argument types of signature
    `sig` (srcgrad.specialize; arrays C-contiguous: numba compiles another layout when a
    call brings one), so that what numba cannot compile is found here, not inside a call."""
    numba = require()
    types = []
    for what in sig:
        if isinstance(what, tuple):
            shape, dtype = what
            types.append(numba.types.Array(numba.from_dtype(dtype), len(shape), "C"))
        else:
            types.append({float: numba.types.float64, int: numba.types.int64,
                          bool: numba.types.boolean, type(None): numba.types.none}[what])
    dispatcher.compile(tuple(types))


_LINE = re.compile(r'File "([^"]*)", line (\d+)')
_SOURCE = re.compile(r"^\s*# (?:grad of: )?(.*\S)\s+\(([^()]*:\d+)\)\s*$")


def failure(err: BaseException, text: str, path: str, qualname: str) -> str:
    """A warning's text for numba's failure to compile a module: the line of the generated
    code numba stopped at, the user's line it comes from, and numba's reason."""
    lines = text.splitlines()
    where, stmt, origin = None, None, None
    for filename, num in _LINE.findall(str(err)):  # (numba shows paths relative)
        if os.path.basename(filename) == os.path.basename(path):
            where = int(num)
    if where is not None:
        offset = _header_lines(path, text)
        k = where - 1 - offset
        if 0 <= k < len(lines):
            stmt = lines[k].strip()
            for j in range(k, -1, -1):
                m = _SOURCE.match(lines[j])
                if m:
                    origin = m.group(2)
                    break
    plain = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # numba's terminal colours
    said = [ln.strip() for ln in plain.splitlines()
            if ln.strip() and not ln.startswith(("Failed in", "During:"))]
    reason = said[0] if said else str(err)
    if reason.endswith(":") and len(said) > 1:  # ("... found for signature:", then it)
        reason = f"{reason} {said[1].lstrip('>').strip()}"
    msg = f"numba could not compile the gradient of {qualname!r}"
    if stmt is not None:
        msg += f" at `{stmt}` (line {where} of the generated code"
        msg += f", from {origin})" if origin else ")"
    return (f"{msg}: {reason[:300]}. It runs the numpy code instead "
            "(`.specialized_source(*args)` shows that code).")


def _header_lines(path: str, text: str) -> int:
    """How many lines the cache file has before `text` (its header), else 0."""
    try:
        with open(path, encoding="utf-8") as f:
            on_disk = f.read()
    except (OSError, UnicodeDecodeError):
        return 0
    if on_disk != text and on_disk.endswith(text):
        return on_disk[:-len(text)].count("\n")
    return 0


def _floats(ins, ints) -> bool:
    """Are all of `ins` floats (a float constant, a scalar the IR knows to be float64,
    none from a Python int)? Python's max() and min() of floats are then written as
    conditional expressions (`b if b > a else a`: Python's rule, nan and signed zeros
    included) that numba compiles as they read."""
    from .fusion import jit_dtype, loop_shape

    return all(
        isinstance(a, float) if not isinstance(a, Var) else
        a.id not in ints and jit_dtype(a) == "float64" and loop_shape(a) == ()
        for a in ins)
