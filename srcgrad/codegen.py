"""Stage 5, codegen: Graph -> Python source that reads like hand-written derivative code.

One primitive a line, named after the user's variables (`z`, its intermediates `z_1`,
`z_2`..., the cotangent of `h` is `dh`), a comment with the user's line above each group
of statements, `del` of forward intermediates once the backward pass is done with them,
constants as plain literals. numpy is reached through the module-level name `np`, so the
same source can be bound to cupy. Helpers numpy lacks come from `runtime.ops.helpers`.

Names. Every name a generated module binds or reads goes through one plan (`_Module`):
the user's parameters keep their names (callers pass keywords); the names the generated
code reads from its module or from builtins (`np`, helpers, `range`...) are renamed where a
parameter takes them (`import numpy as np_1`); module-level bindings (the namespaces that
user arrays are read from, custom ops, fused kernels, the functions themselves) avoid
both; locals avoid all of them. A module whose code turns out to read a name its plan did
not foresee is planned again with it, so no choice of user names can make two meanings
share one name.

User arrays. An array the user's function reads from its module or a closure is read at
the top of every call (`W = model_globals['W']`), never embedded (see srcgrad.scopes).
"""
from __future__ import annotations

import ast
import collections
import builtins
import keyword
import math
import numbers
import os
import re

import numpy

from runtime.ops import helpers as _helpers
from runtime.ops.core import call, literal
from runtime.ops import elementwise as _elementwise
from runtime.ops import linalg as _linalg
from runtime.ops import shapes as _shapes
from runtime.ops.lists import LIST_APPEND, LIST_GET

from .fresh import fresh_returns
from .fusion import FUSED, block_rows, jit_dtype, loop_shape
from . import scalars as _scalars
from .scalars import constant as _number_literal
from .ir import (COND, FOR, NEWSTACK, POP, PUSH, PYTHON, WHILE, Eqn, Graph, Var,
                 checked, iter_vars)
from .staging import INT_VALUED, MAKE_SLICE, PACK, written_as_operator

__all__ = ["FunctionCode", "ModuleCode", "JitOptions", "emit_module", "index_source",
           "loop_shape", "jit_dtype", "reads_deep"]

_ident = re.compile(r"[^0-9a-zA-Z_]")
_KEYWORDS = set(keyword.kwlist)
# builtins the emitted code is known to call; a local never takes one of these names (one
# it calls that is not listed here is found when the module is checked, see emit_module)
_BUILTINS = {"range", "reversed", "list", "len", "int", "float", "slice", "type",
             "ArithmeticError", "ValueError", "abs", "max", "min"}
# operators that raise on Python numbers where numpy gives inf or nan (`/` by zero, `**`
# of 0.0 to a negative power, an overflow): a derivative of Python numbers is numpy's
_RAISING = frozenset({_elementwise.divide, _elementwise.power})
# a numpy variant's arithmetic of a float64 array and a Python number: the number is written
# as a module-level 0-d float64 array (`F64_0_5 = np.array(0.5)`), with which numpy computes
# about 0.2 µs sooner per call (a Python number takes its slower weak-scalar path); the
# result is the same array, bit for bit (see `_F64`)
_F64_OPS = frozenset({_elementwise.add, _elementwise.subtract, _elementwise.multiply,
                      _elementwise.divide, _elementwise.maximum, _elementwise.minimum})
# Python's functions of numbers that the user's abs(), max() and min() are staged as: where
# their operands may all be Python numbers they are written so (see ops.python_operand)
_PYTHON_BUILTINS = {_elementwise.absolute: "abs", _elementwise.maximum: "max",
                    _elementwise.minimum: "min"}
# a bare name the code calls or reads an attribute of (`np.sin(`, `sum_to(`), outside quotes
_READ = re.compile(r"""('[^']*'|"[^"]*")|(?<![\w.])([A-Za-z_]\w*)(?=\s*[.(])""")
# a number's literal (a float constant: `1.0`, `(-0.5)`, `float('inf')`)
_NUMBER = re.compile(r"\(?-?(\d[\d_]*\.?\d*(e[-+]?\d+)?|float\('(-?inf|nan)'\))\)?")
_HOLE = "\x00{}\x00"  # an operand's place in a spelling, filled after renaming
# what the numba backend's modules import from numba
_JIT_NAMES = {"njit", "prange"}
# ... in loops over this many elements or more: numba takes a third longer to compile them
# (each is inlined where it is called), which a small loop does not earn back; from 512 on,
# the C library's exp costs a microsecond or more a call (the large logistic regression's
# 1000: 0.80x of the hand-written numpy gradient, against 0.94x with the C library's)
_VECTOR_MATH_MIN = 1 << 9
# numpy's sign, maximum and minimum of floats as a numba loop writes them (see
# _Emitter.expr): numpy's signed zeros, ties and nan
_NUMPY_TIES = {"sign": "1.0 if {0} > 0.0 else -1.0 if {0} < 0.0 else {0} + 0.0",
               "maximum": "{0} if {0} > {1} or {0} != {0} else {1}",
               "minimum": "{0} if {0} < {1} or {0} != {0} else {1}"}
# ... and from srcgrad.jit_math: the exp, tanh, log and log1p of float64 numbers that a
# loop calls
_VECTOR_MATH = {"exp": "vector_exp", "tanh": "vector_tanh", "log": "vector_log",
                "log1p": "vector_log1p"}
# ... and its sin and cos, in the large-array form's loops only (`JitOptions.python_body`):
# for arguments up to jit_math.TRIG_FAR (`_emit_loops`)
_VECTOR_TRIG = {"sin": "vector_sin", "cos": "vector_cos"}
_JIT_MATH = set(_VECTOR_MATH.values()) | set(_VECTOR_TRIG.values()) | {"trig_far"}
# the names a fused region's function reserves for its relatives (see region_name)
_REGION_ENDS = ("_cuda", "_vector", "_exact")


def index_source(idx) -> str:
    """`:, 0` for (slice(None), 0): Python's subscript syntax for a constant index."""
    items = idx if isinstance(idx, tuple) else (idx,)
    parts = []
    for it in items:
        if isinstance(it, slice):
            a = "" if it.start is None else literal(it.start)
            b = "" if it.stop is None else literal(it.stop)
            parts.append(f"{a}:{b}" if it.step is None else f"{a}:{b}:{literal(it.step)}")
        elif isinstance(it, numpy.ndarray):
            parts.append(_array_literal(it))
        else:
            parts.append(literal(it))
    if isinstance(idx, tuple) and len(idx) == 1:
        return parts[0] + ","
    return ", ".join(parts)


def _array_literal(a: numpy.ndarray) -> str:
    if a.size > 10000:
        raise ValueError("a constant array of more than 10000 elements was built inside the "
                         "function; make it a module-level constant instead")
    return literal(a)


def _valid_on_0d(idx) -> bool:
    """Whether `idx` indexes a 0-d value too (only None and ...): the array it indexes
    may then be a numpy scalar at run time."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(it is None or it is Ellipsis for it in items)


class _F64(float):
    """A Python number operand of a float64 array's arithmetic in a numpy variant, written as
    a module-level 0-d array (`_Module.f64`). It is a float to every other reader: the
    number, converted to float64 exactly as numpy converts it for such an operation."""

    __slots__ = ()


def _f64_operands(eqns, found: set) -> None:
    """Mark each Python number operand of `_F64_OPS` whose other operand is a float64 array of
    one dimension or more, of a shape and dtype the IR knows (a numpy variant's), in `eqns`
    and their nested blocks and regions (their values added to `found`): numpy's result is
    then float64 either way, and its values the same (an int is converted to float64 first
    in both cases; only ints below 2**53, which convert exactly, are marked)."""
    for e in eqns:
        if e.prim in _F64_OPS and len(e.ins) == 2:
            ins = list(e.ins)
            for k in (0, 1):
                a, b = ins[k], ins[1 - k]
                # (a _F64 already: marked by an earlier plan of this module, `emit_module`)
                if type(a) in (float, int, _F64) and math.isfinite(a) and abs(a) < 2 ** 53 and \
                        isinstance(b, Var) and b.kind == "array" and loop_shape(b) and \
                        jit_dtype(b) == "float64" and jit_dtype(e.outs[0]) == "float64":
                    ins[k] = _F64(a)
                    found.add(repr(float(a)))
            e.ins = ins
        for b in e.blocks():
            _f64_operands(b.eqns, found)
        region = e.params.get("region")
        if region is not None and hasattr(region, "eqns"):
            _f64_operands(region.eqns, found)


class FunctionCode:
    """One generated function: a signature, statements and a return expression.

    `returns` is a structure of Vars, constants and (for a closure it returns) a nested
    FunctionCode. `as_float`: the inputs converted on entry. `fast`: (FunctionCode, names
    of the `wrt` parameters, [(parameter, keyword-only)]) of a same-shape variant that this
    function calls when its guard holds."""

    def __init__(self, name, params, eqns, returns, named, *, as_float=(), nested=None,
                 check_scalar=None, free_after_forward=True, prefer_names=None,
                 docstring=None, fast=None):
        self.name = name
        self.params = params  # source text of the parameter list
        self.eqns = eqns
        self.returns = returns
        self.named = named
        self.as_float = list(as_float)
        self.nested = nested  # (FunctionCode, index into eqns where it starts)
        self.check_scalar = check_scalar
        self.free = free_after_forward
        self.prefer = prefer_names or {}
        self.docstring = docstring
        self.fast = fast
        # a variant specialized to its arguments (srcgrad.specialize): [(input Var, what
        # it was: (shape, dtype) of an array, else its type)] and the call to the
        # shape-polymorphic function for calls it does not fit: [(parameter, keyword-only)]
        self.spec = None
        self.spec_call = None
        self.extra = []  # inputs after the user's parameters, named here (called by position)
        self.owned = False  # its returned arrays must be fresh (see srcgrad.fresh)...
        self.primal = None  # ... but for returns[primal] (the function's own value)
        self.floats = set()  # ids of inputs the prologue made arrays (as_float)
        self.keep = set()  # ids never deleted (read by a nested function)


class _Names(dict):
    """Var id -> name, with the ids that bear each name (in-place updates hand one name
    from value to value): who else holds a name is a lookup, not a scan of every name."""

    def __init__(self, items=()):
        super().__init__()
        self.holders: dict[str, list] = {}
        for vid, name in dict(items).items():
            self[vid] = name

    def __setitem__(self, vid, name):
        old = self.get(vid)
        if old is not None:
            self.holders[old].remove(vid)
        super().__setitem__(vid, name)
        self.holders.setdefault(name, []).append(vid)

    def setdefault(self, vid, name):
        if vid not in self:
            self[vid] = name
        return self[vid]
class ModuleCode:
    """What `emit_module` made: the source, the names of its entry function and of numpy
    in it, and the module-level names the caller binds (`scopes`: name -> Scope that user
    arrays are read from; `ops`: name -> custom primitive)."""

    def __init__(self, text, entry, numpy_name, scopes, ops, fallback=None):
        self.text, self.entry, self.numpy_name = text, entry, numpy_name
        self.scopes, self.ops = scopes, ops
        self.fallback = fallback  # a specialized variant's: where the general function goes
        self.ndarray_name = "ndarray"  # (a variant's guard: the array type it tests)
        self.loops: dict = {}  # jit: loop function -> (ndim, dtype) of each parameter


class _Namer:
    def __init__(self, reserved):
        self.used = set(reserved)
        self._names = _Names()
        # base -> the smallest k that may still be free for `base_k` (names are never
        # released, so it only grows): picking a name costs O(1), not O(names with base)
        self._next: dict[str, int] = {}

    @property
    def names(self) -> _Names:
        return self._names

    @names.setter
    def names(self, items):
        self._names = _Names(items)

    def fresh(self, base: str, exact_first: bool) -> str:
        base = _ident.sub("_", base) or "t"
        if base[0].isdigit():
            base = "t" + base
        if exact_first and base not in self.used:
            self.used.add(base)
            return base
        k = self._next.get(base, 1)
        while f"{base}_{k}" in self.used:
            k += 1
        self._next[base] = k + 1
        name = f"{base}_{k}"
        self.used.add(name)
        return name


def _module_readable(name: str, ops: dict) -> bool:
    """Whether generated code can mean `name` as a module-level or builtin name."""
    return name in ("np", "ndarray") or name in _JIT_NAMES or name in _helpers.HELPERS or \
        name in ops or hasattr(builtins, name)


class _Module:
    """The names of one generated module (see the module docstring)."""

    def __init__(self, params: set, clashes: set, ops: dict, jit=None):
        self.params = params  # every parameter name of every generated function
        self.ops = ops  # names the code calls custom ops by -> the ops
        # the numba backend's options (JitOptions), None for numpy code
        self.jit = jit
        self.array_methods = False  # a numpy variant's: arrays of known shapes and dtypes
        fixed = {"np", "ndarray"} | set(_helpers.HELPERS) | _BUILTINS | set(ops) | clashes
        if jit is not None:
            fixed |= _JIT_NAMES | _JIT_MATH
        self.names = _Namer(params | fixed | _KEYWORDS)
        # a name the code reads, taken by a parameter: the code reads it under another
        self.alias = {n: self.names.fresh(n, False) for n in sorted(fixed & params)}
        self.reads: set[str] = set()  # module-level / builtin names the code reads
        self.helpers: set[str] = set()
        self.builtins: dict[str, str] = {}  # builtins an op helper's name hides -> name
        self.scopes: dict = {}  # Scope.key -> (module-level name, Scope)
        self.regions: list = []  # (fused equation, its arguments' names at the call)
        self.region_outs: dict = {}  # id(blocked region) -> its results' names at the call
        self.region_names: dict[str, str] = {}
        self.namers: list[_Namer] = []  # of every function: the locals they chose
        self.local_reserved = self.names.used  # no local may shadow any of these
        self.modules: dict[str, str] = {}  # modules statements run as written use -> name
        self.dtypes: dict[str, str] = {}  # dtype.str -> its module-level name (guards)
        self.f64s: dict[str, str] = {}  # repr(number) -> its 0-d float64 array's name (_F64)
        self.f64_read: set[str] = set()  # those the code reads
        self.fallback: str | None = None  # a specialized variant's general function
        self.reductions: list = []  # jit: (reduction equation, its loop function's name)
        self.products: list = []  # jit: (small matmul equation, its loop function's name)
        self.loop_types: dict = {}  # jit: loop function -> (ndim, dtype) of its parameters
        # a numpy variant's sums of shifted slices: (equation, [(FunctionCode, namer,
        # inputs)] of its terms' functions)
        self.term_functions: list = []
        self.placed_names: dict = {}  # id(sum) -> its terms' function names

    def g(self, name: str) -> str:
        """The name under which the code reads module-level or builtin `name`."""
        self.reads.add(name)
        if name in _helpers.HELPERS:
            self.helpers.add(name)
        return self.alias.get(name, name)

    def builtin(self, name: str) -> str:
        """The name under which the code reads Python's builtin `name` (a statement that
        runs as written calls `any(...)`, `sum(...)`): under a name of its own where an op
        helper has that name (`from builtins import any as builtins_any`)."""
        if name not in _helpers.HELPERS:
            return self.g(name)
        if name not in self.builtins:
            self.builtins[name] = self.bind(f"builtins_{name}")
        return self.builtins[name]

    def bind(self, base: str) -> str:
        """A new module-level name (a function, a namespace, a kernel)."""
        return self.names.fresh(base, True)

    def region_name(self, e) -> str:
        """The module-level name of a fused region's function (`<name>_cuda` is its
        kernel's spec; `<name>_vector` and `<name>_exact` its numba loops where it is a
        function that picks one: `_emit_loops`)."""
        base = e.params["name"]
        if base not in self.region_names:
            name = self.bind(base)
            while any(name + end in self.names.used for end in _REGION_ENDS):
                name = self.bind(base)
            self.names.used.update(name + end for end in _REGION_ENDS)
            self.region_names[base] = name
        return self.region_names[base]

    def term_names(self, e) -> list:
        """The module-level names of the functions of a numpy variant's sum of shifted
        slices (`_fused_1_0`: its first term's), None for a term that is an operand."""
        if id(e) not in self.placed_names:
            region = e.params["region"]
            defined = {o.id for q in region.eqns for o in q.outs}
            base = self.region_name(e)
            self.placed_names[id(e)] = [self.bind(f"{base}_{k}") if v.id in defined else None
                                        for k, v in enumerate(region.outs)]
        return self.placed_names[id(e)]

    def term_calls(self, e, ins, shared_name) -> tuple:
        """Per term of sum `e`: (its function's name or None, [(operand, its source at the
        call)]); and what two or more terms need, computed once (`_shared_cones`): per
        group, (its function's name, [(operand, source)], the values it returns, the
        terms). The functions are written with the module (`_emit_regions`);
        `shared_name(v)`: the caller's name for such a value, the terms' name for it too."""
        region = e.params["region"]
        src = {v.id: n for v, n in zip(e.ins, ins)}
        names = self.term_names(e)
        cones = [_cone(region, v) if name is not None else None
                 for v, name in zip(region.outs, names)]
        groups = _shared_cones(e, cones)
        given = [v for _, _, values in groups for v in values]
        where = f" of {e.loc.short()}" if e.loc is not None else ""
        calls, fcs, shared = [], [], []

        def function(name, cone, returns, doc):
            made = {o.id for q in cone for o in q.outs}
            args = {a.id for q in cone for a in q.var_ins() if a.id not in made}
            # (a term that is all shared, two equal terms: it returns its operand)
            args |= {v.id for v in iter_vars(returns) if v.id not in made}
            operands = [a for a in list(e.ins) + given if a.id in args]
            params = [src[a.id] if a.id in src else shared_name(a) for a in operands]
            sub = _Namer(self.local_reserved | set(params))
            sub.names = {a.id: p for a, p in zip(operands, params)}
            self.namers.append(sub)
            fc = FunctionCode(name, ", ".join(params), cone, returns, made,
                              free_after_forward=True)
            fc.floats = {a.id for a in operands
                         if loop_shape(a) and (jit_dtype(a) or "").startswith("float")}
            fc.prefer = {}
            fc.docstring = doc
            fcs.append((fc, sub, operands))
            return [(a, p) for a, p in zip(operands, params)]

        taken = set()
        for members, common, values in groups:
            name = self.bind(f"{self.region_name(e)}_shared")
            terms = ", ".join(str(k) for k in members)
            shared.append((name, function(
                name, common, values[0] if len(values) == 1 else tuple(values),
                f"Shared by terms {terms} of the sum of shifted slices{where}, on their rows "
                "together."), values, members))
            taken.update(id(q) for q in common)
        for v, name, cone in zip(region.outs, names, cones):
            if name is None:  # (the term is an operand of the sum as it is)
                calls.append((None, [(v, src[v.id])]))
                continue
            calls.append((name, function(
                name, [q for q in cone if id(q) not in taken], v,
                f"Term {len(calls)} of a sum of shifted slices{where}, on rows of its "
                "operands.")))
        self.term_functions.append((e, fcs))
        return calls, shared

    def module(self, modname: str, hint: str) -> str:
        """The module-level name of module `modname` (imported by the generated module)."""
        if modname == "numpy":
            return self.g("np")
        if modname not in self.modules:
            self.modules[modname] = self.bind(hint)
        return self.modules[modname]

    def dtype(self, dtype) -> str:
        """The module-level name of a numpy dtype object (a specialized variant's guard)."""
        dtype = numpy.dtype(dtype)
        if dtype.str not in self.dtypes:
            self.dtypes[dtype.str] = self.bind(dtype.name if dtype.isnative else "dtype")
        return self.dtypes[dtype.str]

    def bind_f64(self, value: float) -> None:
        """Name a 0-d float64 array of `value` at module level (see `_F64`): before any
        function chooses its locals, so that none takes the name. (Keyed by the number's
        text: 0.0 and -0.0 are equal, and different operands.)"""
        key = repr(float(value))
        if key not in self.f64s:
            text = key.lstrip("-").replace(".0e", "e").removesuffix(".0")
            text = text.replace(".", "_").replace("-", "m").replace("+", "")
            self.f64s[key] = self.bind(f"F64_{'m' if key[0] == '-' else ''}{text}")

    def f64(self, value: float) -> str:
        """The module-level name of the 0-d float64 array of `value`, bound by `bind_f64`."""
        key = repr(float(value))
        self.f64_read.add(key)
        return self.f64s[key]

    def dtype_src(self, name: str) -> str:
        """A dtype by name (`float64`) as Python code run per call: the module-level dtype
        object where there is one (numpy converts `np.float64` to it, 40 ns a call)."""
        known = self.dtypes.get(numpy.dtype(name).str)
        return known if known is not None else f"{self.g('np')}.{name}"

    def general(self) -> str:
        if self.fallback is None:
            self.fallback = self.bind("general")
        return self.fallback

    def holder(self, scope) -> str:
        if scope.key not in self.scopes:
            self.scopes[scope.key] = (self.bind(scope.label), scope)
        return self.scopes[scope.key][0]

    def fixed(self, text: str) -> str:
        """`text` (code with no local names in it) with the names it reads renamed."""
        return _READ.sub(self._rename, text)

    def _rename(self, m):
        name = m.group(2)
        if name is None or not _module_readable(name, self.ops):
            return m.group(0)
        return self.g(name)


#: `a.dot(b)` costs about 0.6 µs less to call than `a @ b`, but numpy's dot fills its new
#: result with zeros before the product writes it (its cblas path): from this many elements
#: of the result on, `@` is the faster (784x64 by 64x256: 0.26 ms against 0.35 on two cores)
DOT_FILLS = 8192


def _large_product(p, e) -> bool:
    """Is `e` a matrix product whose result, of a known shape, has `DOT_FILLS` elements or
    more (written `a @ b`, not `a.dot(b)`)?"""
    if p is not _linalg.matmul:
        return False
    shape = loop_shape(e.outs[0])
    return shape is not None and math.prod(shape) >= DOT_FILLS


class _Emitter:
    def __init__(self, namer: _Namer, mod: _Module):
        self.namer = namer
        self.mod = mod
        self.inline: dict[int, str] = {}
        self.numpy_operands: set[int] = set()  # see `_numpy_operands`
        self.python_operands: set[int] = set()  # the same, of ops.python_operand
        # a numba loop's: exp, tanh... from srcgrad.jit_math (over _VECTOR_MATH_MIN elements
        # or more), its sin and cos too (`_emit_loops`); numpy's signed zeros and ties
        self.vector_math = self.vector_trig = self.numpy_ties = False

    def src(self, v, index_ctx=False) -> str:
        if isinstance(v, Var):
            if v.id in self.inline:
                return self.inline[v.id]
            name = self.namer.names.get(v.id)
            if name is None:
                return self._unnamed(v)
            return name
        if isinstance(v, numpy.ndarray):
            return self.mod.fixed(_array_literal(v))
        if type(v) is _F64 and self.mod.array_methods:
            return self.mod.f64(v)
        if isinstance(v, (tuple, slice)) and index_ctx:
            return self.mod.fixed(index_source(v))
        if isinstance(v, (numpy.floating, numpy.integer, numpy.bool_)):
            # (numpy's scalar, not a weak Python number: with a float32 array, or Python
            # numbers only, the result's type is numpy's; ~np.True_ is False, ~True is -2)
            return f"{self.mod.g('np')}.{type(v).__name__}({self.mod.fixed(literal(v))})"
        try:
            text = self.mod.fixed(literal(v))
        except TypeError as err:  # (an object no op took reached the code: srcgrad's bug,
            # reported as an InternalError at the user's function, not as an argument error)
            raise RuntimeError(f"codegen: {err}") from err
        return f"({text})" if text.startswith("-") else text

    def item_src(self, v) -> str:
        """`v` as the value of an indexed assignment: in a numba-compiled body a 0-d value
        as its number (`np.asarray(dout)[()]`: a fused loop's 0-d result is an array, a
        0-d index of an array a number, and numba adds neither kind into an element of
        the other), else `src(v)`."""
        if _compiled_body(self.mod) and isinstance(v, Var) and loop_shape(v) == ():
            return f"{self.mod.g('np')}.asarray({self.src(v)})[()]"
        return self.src(v)

    def _unnamed(self, v: Var) -> str:
        """An index part whose statement was left out (it is written where it is used, see
        `_only_index_use`), read outside an index: `slice(a, b, c)` or a tuple."""
        if v.id in self.slice_items:
            a, b, c = (self.src(x) for x in self.slice_items[v.id])
            return f"{self.mod.g('slice')}({a}, {b}, {c})"
        if v.id in self.pack_items:
            items = [self.src(x) for x in self.pack_items[v.id]]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        raise KeyError(f"codegen: no name for {v!r}")

    def expr(self, e: Eqn, uses) -> str:
        p = e.prim
        if p.subscript:
            x, idx = e.ins
            return f"{self.src(x)}[{self.index_src(idx) or '()'}]"  # x[()]: a 0-d item
        ins = [self.src(a) for a in e.ins]
        if self.vector_math and p.name in _VECTOR_MATH and isinstance(e.ins[0], Var) and \
                jit_dtype(e.ins[0]) == jit_dtype(e.outs[0]) == "float64":
            # (a numba loop's exp, tanh, log or log1p of a float64: vectorized, see
            # srcgrad.jit_math)
            return f"{self.mod.g(_VECTOR_MATH[p.name])}({ins[0]})"
        if self.vector_trig and p.name in _VECTOR_TRIG and _vector_trig(e):
            return f"{self.mod.g(_VECTOR_TRIG[p.name])}({ins[0]})"
        if self.numpy_ties and p.name in _NUMPY_TIES and self._floats(e):
            # (numba's sign(-0.0) is -0.0 and its maximum of equal values the first: numpy's
            # are +0.0 and the second, nan propagated)
            return "(" + _NUMPY_TIES[p.name].format(*ins) + ")"
        if p.py_spell is not None and isinstance(e.ins[0], Var) and (
                e.ins[0].id in self.maybe_py or e.ins[0].kind == "meta"):
            # (may be a Python number at run time; a meta value is a Python int or tuple)
            return self.spell(p, ins, e.params, p.py_spell)
        if self.python_operands and p in _PYTHON_BUILTINS and any(
                isinstance(a, Var) and a.id in self.python_operands for a in e.ins) and \
                self._numbers_only(e.ins):
            # (Python's abs(), max() or min() of Python numbers: Python's result)
            if self.mod.jit is not None and p is not _elementwise.absolute:
                return self._python_max_min(p, ins)
            return self.spell(p, ins, e.params, call(self.mod.builtin(_PYTHON_BUILTINS[p])))
        if self.numpy_operands and (p.elementwise or p is _linalg.matmul) and any(
                isinstance(a, Var) and a.id in self.numpy_operands for a in e.ins) and \
                written_as_operator(p):
            # (numpy's function of Python numbers: numpy's result, see ops.numpy_operand)
            return self.spell(p, ins, e.params, call(f"np.{p.name}"))
        if e.phase == "bwd" and p in _RAISING and self._numbers_only(e.ins, meta=False) and (
                p is not _elementwise.power or any(_inexact(a, self.floating) for a in e.ins)):
            # (a derivative of Python numbers: numpy's, as the tape's, where Python's would
            # raise: 0.0 ** -0.5 is inf, not ZeroDivisionError, the derivative of sqrt at 0;
            # not of shapes' ints, whose numpy scalar would make a float32 gradient float64)
            return self.spell(p, ins, e.params, call(f"np.{p.name}"))
        if e.phase == "bwd" and p is _elementwise.divide and self.mod.jit is None and \
                isinstance(e.ins[1], Var) and self._numbers_only(e.ins):
            # (a derivative's scale of a shape's ints, `1.0 / x.size`: the size may be 0,
            # where numpy's inf, not Python's ZeroDivisionError, is the tape's; see
            # helpers.divide_numbers)
            return self.spell(p, ins, e.params, call(self.mod.g("divide_numbers")))
        if p.array_spell is not None and getattr(self.mod, "array_methods", False) and \
                self._arrays(e.ins[:1] if p.array_ndim is None else e.ins, p.array_ndim) \
                and ins[0].isidentifier() and not _large_product(p, e):  # (ndarrays, by name)
            return self.spell(p, ins, e.params, p.array_spell)
        return self.spell(p, ins, e.params)

    @staticmethod
    def _floats(e) -> bool:
        """Are `e`'s operands and result floats (Vars of a float dtype, Python floats)?"""
        return all(isinstance(a, float) or isinstance(a, Var) and
                   (jit_dtype(a) or "").startswith("float") for a in list(e.ins) + e.outs)

    @staticmethod
    def _python_max_min(p, ins) -> str:
        """Python's max(a, b) or min(a, b) of floats as numba compiles it exactly (its own
        max(1.0, nan) is nan): Python keeps the first operand unless the second is greater
        (less), so `(b if b > a else a)`; nan and signed zeros follow (jit.unlike_numpy
        lets only floats, by name or as constants, through)."""
        a, b = ins
        if not all(t.isidentifier() or _NUMBER.fullmatch(t) for t in ins):
            raise ValueError(f"codegen: an operand of Python's {_PYTHON_BUILTINS[p]}() that "
                             f"is neither a name nor a number: {a!r}, {b!r}")
        return f"({b} if {b} {'>' if p is _elementwise.maximum else '<'} {a} else {a})"

    def _numbers_only(self, vs, meta=True) -> bool:
        """May all of `vs` be Python numbers at run time (one a Var; with `meta`, a shape's
        int counts)?"""
        return any(isinstance(v, Var) for v in vs) and all(
            not isinstance(v, Var) or (v.id in self.maybe_py and v.kind != "meta") or
            (meta and v.kind == "meta") for v in vs)

    @staticmethod
    def _arrays(vs, ndim) -> bool:
        """Are all `vs` arrays of known shapes of one dimension or more (at most `ndim`)?"""
        shapes = [loop_shape(v) if isinstance(v, Var) and v.kind == "array" else None
                  for v in vs]
        return all(s and (ndim is None or len(s) <= ndim) for s in shapes)

    def spell(self, p, ins, params, spelling=None) -> str:
        """`p`'s spelling (or `spelling`) over operand texts: the names the spelling itself
        reads (`np`, a helper, a builtin) are renamed before the operands are put in."""
        holes = [_HOLE.format(k) for k in range(len(ins))]
        text = self.mod.fixed((spelling or p.spell)(holes, params, p.defaults))
        for hole, operand in zip(holes, ins):
            text = text.replace(hole, operand)
        return text

    def index_src(self, idx) -> str:
        if isinstance(idx, Var) and idx.id in self.namer.names:
            return self.namer.names[idx.id]  # a tuple built once and used more than once
        if isinstance(idx, Var) and idx.id in self.pack_items:
            items = self.pack_items[idx.id]
            parts = [self.index_src(i) if isinstance(i, Var) and i.id in self.slice_items
                     else (self.src(i) if isinstance(i, Var) else
                           self.mod.fixed(index_source((i,))[:-1]))
                     for i in items]
            return parts[0] + "," if len(parts) == 1 else ", ".join(parts)
        if isinstance(idx, Var) and idx.id in self.slice_items:
            a, b, c = (("" if x is None else self.src(x)) for x in self.slice_items[idx.id])
            return f"{a}:{b}" if c == "" else f"{a}:{b}:{c}"
        if isinstance(idx, Var):
            return self.src(idx)
        return self.mod.fixed(index_source(idx))


def _norm(line: str) -> str:
    """Let Python settle parentheses and spacing (e.g. `x * (-1.0)` -> `x * -1.0`). Only
    lines with a parenthesized operand can need it; the rest are already as Python would
    write them (parsing every line would cost a good part of a compilation)."""
    if "(-" not in line and "((" not in line:
        return line
    return ast.unparse(ast.parse(line))


def _uses(eqns, returns, count=None):
    count = {} if count is None else count
    for e in eqns:
        for v in e.ins:
            if isinstance(v, Var):
                count[v.id] = count.get(v.id, 0) + 1
        for b in e.blocks():
            _uses(b.eqns, b.outs, count)
    for v in iter_vars(returns):
        count[v.id] = count.get(v.id, 0) + 1
    return count


def _render_structure(obj, leaf) -> str:
    """A structure of results (tuples, lists, dicts) as code, each leaf as `leaf` writes
    it."""
    if isinstance(obj, tuple):
        inner = ", ".join(_render_structure(o, leaf) for o in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, list):
        return "[" + ", ".join(_render_structure(o, leaf) for o in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{literal(k)}: {_render_structure(v, leaf)}"
                               for k, v in obj.items()) + "}"
    return leaf(obj)


def _render_paths(obj, base: str, item=None) -> str:
    """Structure `obj` rebuilt from `base`, a value of its shape (`base[0][1]`...), a 0-d
    leaf as its item (`base[0][()]`; `item(path, v)` writes a leaf)."""
    item = item or _item
    if isinstance(obj, (tuple, list)):
        inner = [_render_paths(o, f"{base}[{k}]", item) for k, o in enumerate(obj)]
        if isinstance(obj, list):
            return "[" + ", ".join(inner) + "]"
        return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{literal(k)}: {_render_paths(v, f'{base}[{literal(k)}]', item)}"
                               for k, v in obj.items()) + "}"
    return item(base, obj) if isinstance(obj, Var) and obj.kind == "array" else base


def _render_return(em: _Emitter, obj) -> str:
    def leaf(v):
        if isinstance(v, FunctionCode):  # a closure this function returns
            return v.local_name
        if _compiled_body(em.mod) and isinstance(v, Var) and v.kind == "array" and \
                loop_shape(v) == ():  # (numba returns a 0-d result as a Python float)
            return f"{em.mod.g('np')}.asarray({em.src(v)})"
        return em.src(v)

    return _render_structure(obj, leaf)


def _emit_function(fc: FunctionCode, namer: _Namer, em: _Emitter, inputs, indent: str,
                   lines: list, name: str):
    em.pack_items = getattr(em, "pack_items", {})
    em.slice_items = getattr(em, "slice_items", {})
    em.carries = getattr(em, "carries", set())
    em.maybe_py = getattr(em, "maybe_py", set())
    em.maybe_py.update(v.id for v in inputs if v.id not in fc.floats)
    # (what the pushes of a forward function saved: a pullback defined in it pops there)
    em.pushed = getattr(em, "pushed", {})
    _collect(fc.eqns, em)
    _python_numbers(fc.eqns, em.maybe_py, em.pushed)
    em.numpy_operands = getattr(em, "numpy_operands", set())
    _numpy_operands(fc.eqns, em.maybe_py, em.numpy_operands)
    em.python_operands = getattr(em, "python_operands", set())
    _numpy_operands(fc.eqns, em.maybe_py, em.python_operands, _shapes.python_operand)
    em.floating = _floating_values(fc.eqns, getattr(em, "floating", set()) | fc.floats)
    extra = {v.id for v in fc.extra}
    for v in inputs:
        if v.id not in extra:  # the user's parameters keep their names (callers use them)
            namer.names.setdefault(v.id, v.hint)
            namer.used.add(namer.names[v.id])
    for v in fc.extra:
        namer.names[v.id] = namer.fresh(v.hint, True)
    params = ", ".join([fc.params] * bool(fc.params) + [namer.names[v.id] for v in fc.extra] +
                       [name for _, name in getattr(fc, "out_params", None) or ()])
    uses = _uses(fc.eqns, (fc.returns, fc.check_scalar))
    returned = {v.id for v in iter_vars(fc.returns)}
    lines.append(f"{indent}def {name}({params}):")
    body = indent + "    "
    if fc.docstring:
        lines.append(f'{body}"""{fc.docstring}"""')
    if fc.fast is not None:
        lines.extend(body + ln for ln in _guard(fc.fast, em.mod))
    if fc.spec is not None:
        lines.extend(body + ln for ln in _spec_guard(fc, namer, em.mod))
    numbers_at = len(lines)  # (the form on Python floats goes here, named last)
    for v in fc.as_float:
        x = namer.names[v.id]
        lines.append(f"{body}{x} = {em.mod.g('as_float')}({x})")
    _read_module_arrays(fc, namer, em, body, lines)
    if fc.check_scalar is not None and not _defined_in(fc.check_scalar, fc.eqns):
        lines.append(f"{body}{em.mod.g('check_scalar')}({em.src(fc.check_scalar)})")
    pool = getattr(fc, "scratch", None)
    if pool:
        ws = namer.fresh("scratch", True)
        lines.append(f"{body}{ws} = {em.mod.g('take_scratch')}({pool[2]}, {pool[3]})")
        em.scratch = {v.id: f"{ws}[{k}]" for v, k in pool[0]}
    em.results = getattr(fc, "results", None) or {}
    ctx = _BlockCtx(fc, namer, em, uses, returned, inputs)
    ctx.emit(fc.eqns, body, lines, top=True)
    if fc.nested:
        inner, _ = fc.nested
        lines.append("")
        inner.local_name = namer.fresh(inner.name, True)
        _emit_function(inner, namer, em, getattr(inner, "inputs", []), body, lines,
                       inner.local_name)
    if pool:
        lines.append(f"{body}{pool[2]}.append({ws})  # for the next call")
    outs = getattr(fc, "out_params", None)
    if outs:  # (a compiled entry's results, allocated by its caller)
        lines.extend(f"{body}{name}[...] = {em.src(v)}" for v, name in outs)
        return
    lines.append(f"{body}return {_render_return(em, fc.returns)}")
    lines[numbers_at:numbers_at] = _emit_numbers(fc, namer, em.mod, body)


def _emit_numbers(fc, namer, mod: _Module, body: str) -> list:
    """A variant's form on Python floats (srcgrad.scalars), where it has one. Its locals
    avoid the parameters and module-level names only: the numpy code after it assigns
    every local it reads, so a name both use is never read across."""
    form = getattr(fc, "number_form", None)
    if form is None:
        return []
    params = namer
    namer = _Namer(mod.local_reserved | {params.names[v.id] for v, _ in fc.spec})
    mod.namers.append(namer)
    m, np_ = mod.module("math", "math"), mod.g("np")
    text: dict = {}

    def src(a):
        if isinstance(a, Var):
            a = form.same.get(a.id, a)
        return text[a.id] if isinstance(a, Var) else _number_literal(a)

    inner = body + "    "
    lines = [f"{body}try:  # each argument holds one number: the same gradient on Python "
             "floats first"]
    for v, is_array in form.inputs:
        if is_array:
            text[v.id] = namer.fresh(v.hint, True)
            lines.append(f"{inner}{text[v.id]} = {params.names[v.id]}.item()")
        else:
            text[v.id] = params.names[v.id]
    for out, spelling, ins in form.steps:
        code = spelling.format(*(src(a) for a in ins), m=m)
        text[out.id] = namer.fresh(out.hint, True)
        lines.append(f"{inner}{text[out.id]} = {code}")

    made = []  # (an array of one element: np.empty and one store cost less than np.array)

    def leaf(v):
        kind = form.leaves[v.id]
        if kind[0] == "scalar":
            return f"{np_}.float64({src(v)})"
        if not kind[1]:
            return f"{np_}.array({src(v)})"
        name = namer.fresh(v.hint, True)
        shape = "1" if len(kind[1]) == 1 else repr((1,) * len(kind[1]))
        made.append(f"{name} = {mod.g('empty')}({shape})")
        made.append(f"{name}[{', '.join('0' for _ in kind[1])}] = {src(v)}")
        return name

    finite = list(dict.fromkeys(src(v) for v in list(iter_vars(form.returns)) +
                                form.checked))
    finite = [x for x in finite if x.isidentifier()]  # (a constant is what it is)
    # (numpy's default error handling: under np.errstate the numpy code raises or warns)
    # (several numbers are finite together when their sum is: inf or nan otherwise, and
    # a sum that overflows only sends the call to the numpy code)
    tests = [f"{mod.g('numpy_errstate')}.get() is {mod.g('NUMPY_ERRSTATE')}"] + \
        ([f"{m}.isfinite({' + '.join(finite)})"] if finite else [])
    cond, rows = "", []
    for t in tests:  # (lines of at most about 90 characters)
        if cond and len(inner) + len(cond) + len(t) > 84:
            rows.append(cond)
            cond = ""
        cond = f"{cond} and {t}" if cond else t
    rows.append(cond)
    if len(rows) == 1:
        lines.append(f"{inner}if {rows[0]}:")
    else:
        lines.append(f"{inner}if ({rows[0]}")
        lines.extend(f"{inner}        and {r}" for r in rows[1:-1])
        lines.append(f"{inner}        and {rows[-1]}):")
    returned = _render_structure(form.returns, leaf)
    lines.extend(f"{inner}    {m}" for m in made)
    lines.append(f"{inner}    return {returned}")
    lines.append(f"{body}except ({mod.g('ArithmeticError')}, {mod.g('ValueError')}):")
    lines.append(f"{inner}pass  # out of Python's domain: the code below answers, as numpy does")
    return lines


def _guard(fast, mod: _Module) -> list:
    """The test that sends a call to the same-shape variant, and the call."""
    fast_fc, ws, params = fast
    # (arrays of one dimension or more: numpy's arithmetic turns 0-d ones into scalars)
    ndarray, kind = mod.g("ndarray"), f"{ws[0]}.dtype.kind == 'f' and {ws[0]}.ndim"
    parts = ([" and ".join(f"{mod.g('type')}({w}) is {ndarray}" for w in ws) + f" and {kind}"] +
             [f"{w}.shape == {ws[0]}.shape and {w}.dtype == {ws[0]}.dtype" for w in ws[1:]])
    cond = "\n            and ".join(parts)
    args = ", ".join(f"{n}={n}" if kw else n for n, kw in params)
    return [f"if ({cond}):",
            f"    return {fast_fc.module_name}({args})  # one shape, one dtype: nothing to undo"]


def _spec_guard(fc, namer, mod: _Module) -> list:
    """The test that sends a call a specialized variant does not fit (other shapes, dtypes
    or types) to the shape-polymorphic function."""
    parts = []
    for v, what in fc.spec:
        x = namer.names[v.id]
        if isinstance(what, tuple):
            shape, dtype = what
            parts.append(f"{mod.g('type')}({x}) is {mod.g('ndarray')} and {x}.shape == "
                         f"{shape!r} and {x}.dtype == {mod.dtype(dtype)}")
        else:
            parts.append(f"{x} is None" if what is type(None) else
                         f"{mod.g('type')}({x}) is {mod.g(what.__name__)}")
    cond = "\n        and ".join(parts)
    args = _spec_args(fc, namer)
    return [f"if not ({cond}):",
            f"    return {mod.general()}({args})  # the shape-polymorphic code"]


def _spec_args(fc, namer) -> str:
    """The call of the shape-polymorphic function with a specialized variant's arguments."""
    return ", ".join([f"{n}={n}" if kw else n for n, kw in fc.spec_call] +
                     [namer.names[v.id] for v in fc.extra])


def _module_arrays(fc: FunctionCode) -> list:
    """The Vars of user arrays `fc` (and the closure it returns) reads, in order."""
    found: dict[int, Var] = {}

    def visit(eqns, outs):
        for e in eqns:
            for v in e.ins:
                if isinstance(v, Var) and v.const_name is not None:
                    found.setdefault(v.id, v)
            for b in e.blocks():
                visit(b.eqns, b.outs)
        for v in iter_vars(outs):
            if v.const_name is not None:
                found.setdefault(v.id, v)

    visit(fc.eqns, [fc.returns, fc.check_scalar])
    if fc.nested:
        found.update((v.id, v) for v in _module_arrays(fc.nested[0]))
    return list(found.values())


def _read_module_arrays(fc, namer, em, body, lines):
    """`W = model_globals['W']`: each user array is read where the call starts, so a
    rebound or changed array is what this call sees."""
    read: dict = {}
    for v in _module_arrays(fc):
        if v.id in namer.names:
            continue  # a parameter of a region function, or read by the enclosing function
        ref = v.const_value
        if ref.key in read:
            namer.names[v.id] = read[ref.key]
            continue
        local = namer.fresh(v.const_name, True)
        namer.names[v.id] = read[ref.key] = local
        lines.append(f"{body}{local} = {ref.source(em.mod.holder(ref.scope))}")


def _collect(eqns, em):
    for e in eqns:
        o = e.outs[0] if e.outs else None
        if e.prim is PACK:
            em.pack_items[o.id] = e.ins
        elif e.prim is MAKE_SLICE:
            em.slice_items[o.id] = e.ins
        elif e.prim in (FOR, WHILE):
            em.carries.update(c.id for c in e.params["carry"])
        for b in e.blocks():
            _collect(b.eqns, em)


def _numpy_operands(eqns, maybe_py: set, out: set, marker=_shapes.numpy_operand):
    """Add to `out` the ids of the operands of numpy's functions written as operators
    (ops.numpy_operand) that may be Python numbers (or are shapes and ints): a call that
    reads one is written as numpy's function (`np.multiply(rate, w)`, see `_Emitter.expr`).
    With `marker` ops.python_operand: the operands of Python's abs(), max() and min(),
    where a call that reads one is written as Python's."""
    for e in eqns:
        if e.prim is marker and isinstance(e.ins[0], Var) and (
                e.ins[0].id in maybe_py or e.ins[0].kind == "meta"):
            out.add(e.outs[0].id)
        for b in e.blocks():
            _numpy_operands(b.eqns, maybe_py, out, marker)


def _python_numbers(eqns, out: set, pushed: "dict | None" = None):
    """Ids of Vars that may hold a plain Python number at run time (a loop or branch
    started from a constant, and arithmetic on such values only). `pushed` (tag -> which
    pushed values may be numbers) is shared by the functions of one module: vjp's
    pullback pops what its enclosing function pushed."""
    import numbers

    def maybe(v):
        return isinstance(v, numbers.Number) or (isinstance(v, Var) and v.id in out)

    pushed = {} if pushed is None else pushed

    for _ in range(3):  # loops feed back: iterate a few times
        _python_numbers_pass(eqns, out, maybe, pushed)


def _python_numbers_pass(eqns, out, maybe, pushed):
    """Add to `out` the ids of the values of `eqns` that may be Python numbers (or other
    Python objects) at run time rather than arrays."""
    for e in eqns:
        # any Python object (made by a statement run as written, an item of *args...)
        out.update(o.id for o in e.outs if o.dclass[0] == "object")
        if e.prim is FOR and isinstance(e.params.get("index"), Var):
            out.add(e.params["index"].id)  # (range's: a Python int)
        out.update(_maybe_numbers(e, maybe, pushed))
        for b in e.blocks():
            _python_numbers_pass(b.eqns, out, maybe, pushed)


def _maybe_numbers(e, maybe, pushed) -> list:
    """The results of `e` that may be Python numbers, given which inputs may be.

    (Complexity about 27: one case per kind of equation, side by side.)"""
    op = e.prim
    if op is PUSH:
        pushed[e.params.get("tag")] = [maybe(v) for v in e.ins[1:]]
        return []
    if op is POP:
        flags = pushed.get(e.params.get("tag"), [])
        return [o.id for o, f in zip(e.outs, flags) if f]
    if op in (FOR, WHILE):
        inits = e.ins[3:] if op is FOR else e.ins
        body = e.params["body"]
        return [x for c, i, n, o in zip(e.params["carry"], inits, body.outs, e.outs)
                if maybe(i) or maybe(n) for x in (c.id, o.id)]
    if op is COND:
        return [o.id for o, a, b in zip(e.outs, e.params["then"].outs, e.params["else"].outs)
                if maybe(a) or maybe(b)]
    if op is _shapes.as_numpy:  # (numpy's: an array, or what numpy's functions return)
        return []
    if op is _shapes.python_operand:  # (put where it may be one: a shape's int too)
        return [e.outs[0].id]
    if op.elementwise and e.outs and e.var_ins() and all(maybe(a) for a in e.ins):
        return [e.outs[0].id]
    if (op is _shapes.sum_to or op.view and not op.fresh) and e.outs and maybe(e.ins[0]):
        # returns a number it is given as is (sum_to, cast_like, stop_gradient...)
        return [e.outs[0].id]
    if op is _shapes.to_float:  # float(x), math.sqrt(x): a Python float
        return [e.outs[0].id]
    if op is _shapes.cast_into and any(maybe(a) for a in e.ins):  # (`s += 1.0` of a
        return [e.outs[0].id]                                      # number rebinds s)
    if op.custom or op is PYTHON or op is LIST_GET:
        # a user's op returns what it likes, a list may hold numbers
        return [o.id for o in e.outs]
    return []


def _inexact(v, floating: set) -> bool:
    """Whether `v` is surely a floating (or complex) value at run time."""
    if isinstance(v, Var):
        return v.id in floating
    return isinstance(v, (float, numpy.inexact)) and not isinstance(v, bool)


def _floating_values(eqns, floating: set) -> set:
    """Add to `floating` the ids of the values of `eqns` that are surely floating arrays
    at run time, whatever dtypes the other inputs have (an int array times 2 stays int,
    plus 0.5 becomes float: the IR's dtype classes cannot tell these apart). In-place
    updates rely on it: `a += b` must not change `a`'s dtype."""
    for e in eqns:
        op = e.prim
        if op is COND:
            for b in e.blocks():
                _floating_values(b.eqns, floating)
            sides = (e.params["then"].outs, e.params["else"].outs)
            floating.update(o.id for o, a, b in zip(e.outs, *sides)
                            if _inexact(a, floating) and _inexact(b, floating))
        elif op in (FOR, WHILE):
            _floating_loop(e, floating)
        elif op is FUSED:  # its results are values its region defines
            _floating_values(e.params["region"].eqns, floating)
            if e.params.get("places") is not None and (jit_dtype(e.outs[0]) or "").startswith(
                    "float"):  # (a sum of its values)
                floating.add(e.outs[0].id)
        elif e.outs and _floating_result(e, floating):
            floating.add(e.outs[0].id)
    return floating


def _floating_result(e, floating) -> bool:
    """Is e's result surely floating? From the primitive's dtype fact: "float" always,
    ("like", i) when input i is, "same"/"same_if_float" (sums, products, views, matmul...)
    and differentiable elementwise ops when a data operand is; any other op's result may be
    an integer or bool array."""
    p = e.prim
    if p.dtype == "float":
        return True
    if isinstance(p.dtype, tuple):  # ("like", i): cast_like
        return _inexact(e.ins[p.dtype[1]], floating)
    if e.params.get("dtype") is not None:
        try:
            return numpy.dtype(e.params["dtype"]).kind in "fc"
        except TypeError:
            return False
    if p.positional_dtype is not None:  # np.zeros(shape): float64, np.full: the fill's
        at, default = p.positional_dtype
        if len(e.ins) > at:  # a dtype passed by position
            return False
        return default == "float" or (len(e.ins) > default[1] and
                                      _inexact(e.ins[default[1]], floating))
    if not (p.dtype in ("same", "same_if_float") or p.elementwise and p.differentiable):
        return False
    data = [a for i, a in enumerate(e.ins) if e.prim.is_diff_input(i) or not
            e.prim.differentiable]
    return any(_inexact(a, floating) for a in data)


def _floating_loop(e, floating):
    """Loop results: floating when the initial value and every iteration's are (assumed
    for the carried values, then dropped where the body disproves it)."""
    body = e.params["body"]
    inits = e.ins[3:] if e.prim is FOR else e.ins
    carry = e.params["carry"]
    assumed = {c.id for c, i in zip(carry, inits) if _inexact(i, floating)}
    while True:
        trial = set(floating) | assumed
        for b in e.blocks():
            _floating_values(b.eqns, trial)
        kept = {c.id for c, n in zip(carry, body.outs) if c.id in assumed and
                _inexact(n, trial)}
        if kept == assumed:
            break
        assumed = kept
    floating.update(trial)
    floating.update(o.id for c, o in zip(carry, e.outs) if c.id in assumed)


class _BlockCtx:
    def __init__(self, fc, namer, em, uses, returned, inputs):
        self.fc, self.namer, self.em = fc, namer, em
        self.uses, self.returned = uses, returned
        self.inputs = {v.id for v in inputs}
        # names a statement run as written may leave unbound (a `try`, a `with`): never
        # deleted
        self.maybe_unbound = {o.id for e in _verbatim(fc.eqns)
                              if not e.params["code"].always_binds for o in e.outs}

    def name(self, v, base=None, exact=None):
        if v.id in self.namer.names:
            return self.namer.names[v.id]
        if v.id in self.fc.prefer:
            base, exact = self.fc.prefer[v.id], True
        n = self.namer.fresh(base or v.hint, v.id in self.fc.named if exact is None else exact)
        self.namer.names[v.id] = n
        return n

    def emit(self, eqns, ind, lines, top=False, group=None):
        """Write `eqns` as statements at indentation `ind` (`top`: the function's own
        block, where dead arrays are freed and updates may be done in place).

        (Its complexity, about 30, is the order of decisions per equation: skipped,
        inlined, commented, absorbed, a statement of its own kind, in place, or assigned;
        each step is a call, and the order is the point.)"""
        em = self.em
        inlined = {e.outs[0].id: e for e in eqns if self._inlinable(e)}
        if top:
            self._index(eqns)
            # loops whose arrays of steps are written over an input array's own steps
            # (`_slots_in_place`), and the zeros those arrays would have started as
            self.slots = {id(q): found for q in eqns if q.prim is FOR
                          for found in [self._slots_in_place(q)] if found}
            unmade = {q.ins[3 + ci].id for q in eqns if id(q) in self.slots
                      for ci in self.slots[id(q)]}
        else:
            unmade = set()
        # a loop body's statements written over a slot: {index: (operand, other operand)}
        # of the products done in place, and the indexes of the statements not written
        update, skipped = getattr(self, "into_slots", {}).pop(id(eqns), ({}, set()))
        absorb = self._absorptions(eqns) if top and self.fc.free else {}
        moved = {i: j for j, (i, _) in absorb.items()}
        last_use, reads_of = self._last_uses(eqns, inlined, moved) if top else ({}, {})
        # a loop body's accumulators: {add index: (name, scatter_add index or None)}
        acc = getattr(self, "accumulators", {}).pop(id(eqns), {})
        # a loop body's updates in place: {index: the operand updated (`a += b`), or
        # ("out", operand) for a ufunc written over it (`o = np.tanh(a, out=a)`)}
        body_updates = getattr(self, "body_updates", {}).pop(id(eqns), {})
        acc_moved = {j for _, j, _, _ in acc.values() if j is not None}
        start = len(lines)
        for i, e in enumerate(eqns):
            o = e.outs[0] if e.outs else None
            if i in moved or i in acc_moved or i in skipped:
                continue  # written with the add that absorbs it, or not needed
            if o is not None and o.id in unmade:  # (what it reads may be dead now)
                self._free_dead(e, i, eqns, absorb, inlined, reads_of, last_use, ind, lines)
                continue
            if o is not None and o.id in inlined and i not in absorb:
                if e.prim in (PACK, MAKE_SLICE) and _only_index_use(o, self.fc.eqns):
                    continue
                em.inline[o.id] = em.expr(e, self.uses)
                continue
            key = (e.loc, e.phase)
            if key != group and e.loc is not None and e.prim not in (PUSH, POP, NEWSTACK):
                tag = "grad of: " if e.phase == "bwd" else ""
                lines.append(f"{ind}# {tag}{e.loc.text}   ({e.loc.short()})")
                group = key
            if i in absorb:
                self._scatter_add_into(e, eqns[absorb[i][0]], absorb[i][1], i, last_use, ind,
                                       lines)
            elif i in update:  # the product written over the slot it reads
                v, u = update[i]
                self.namer.names[o.id] = self.namer.names[v.id]
                lines.append(ind + _norm(f"{self.namer.names[v.id]} *= {em.src(u)}"))
            elif i in acc:
                self._accumulate(e, eqns, acc[i], ind, lines)
            elif e.prim in _STATEMENTS:
                _STATEMENTS[e.prim](self, e, ind, lines)
            elif (_compiled_body(em.mod) or em.mod.array_methods) and _jit_scatter(e):
                # (numba cannot call the helper; in numpy, the helper's checks cost more
                # than the assignment at small sizes)
                g, idx = e.ins[0], e.ins[e.prim.adds_at]
                np_ = em.mod.g("np")
                lines.append(f"{ind}{self.name(o)} = {np_}.zeros({loop_shape(o)!r}, "
                             f"{np_}.{jit_dtype(o)})")
                op = "+=" if _compiled_body(em.mod) else "="
                lines.append(ind + _norm(f"{self.name(o)}[{em.index_src(idx)}] {op} "
                                         f"{em.item_src(g)}"))
            elif _compiled_body(em.mod) and e.prim.name == "cast_like" and \
                    jit_dtype(e.ins[1]) is not None:  # (the helper is Python)
                x, dt = e.ins[0], f"{em.mod.g('np')}.{jit_dtype(e.ins[1])}"
                if isinstance(x, Var) and loop_shape(x) != ():
                    lines.append(f"{ind}{self.name(o)} = {em.src(x)}.astype({dt})")
                else:  # (a number, or a scalar numba holds as one: no .astype)
                    lines.append(f"{ind}{self.name(o)} = {dt}({em.src(x)})")
            elif _compiled_body(em.mod) and e.prim is _shapes.astype and \
                    _numba_dtype(e.ins[1]) is not None:
                # (numba's astype and asarray take a dtype object, not its name)
                x, dt = e.ins[0], f"{em.mod.g('np')}.{_numba_dtype(e.ins[1])}"
                if isinstance(x, Var) and loop_shape(x) != ():
                    lines.append(f"{ind}{self.name(o)} = {em.src(x)}.astype({dt})")
                else:
                    lines.append(f"{ind}{self.name(o)} = {dt}({em.src(x)})")
            elif _compiled_body(em.mod) and e.prim is _shapes.expand_dims and \
                    isinstance(e.params.get("axis"), (tuple, list)) and \
                    loop_shape(e.ins[0]) is not None:
                # (numba's expand_dims takes one axis: the axes inserted one at a time, in
                # increasing order, as numpy places a tuple of them)
                # (a number, or a 0-d array: numba expands neither; reshaped, both)
                ndim = len(loop_shape(e.ins[0])) + len(e.params["axis"])
                np_, text = em.mod.g("np"), em.src(e.ins[0])
                if ndim == len(e.params["axis"]):
                    text = f"{np_}.reshape({np_}.asarray({text}), {(1,) * ndim!r})"
                else:
                    for ax in sorted(a % ndim for a in e.params["axis"]):
                        text = f"{np_}.expand_dims({text}, {ax})"
                lines.append(f"{ind}{self.name(o)} = {text}")
            elif _compiled_body(em.mod) and e.prim is _shapes.like_arg:
                # (the Python entry gives the result its argument's kind)
                lines.append(f"{ind}{self.name(o)} = {em.src(e.ins[0])}")
            elif _compiled_body(em.mod) and _loop_product(e):
                # (BLAS costs more to call than a product this small costs to compute)
                name = em.mod.bind("_matmul")
                em.mod.products.append((e, name))
                lines.append(f"{ind}{self.name(o)} = {name}({em.src(e.ins[0])}, "
                             f"{em.src(e.ins[1])})")
            elif _compiled_body(em.mod) and _loop_reduction(e):
                # (numba's np.sum has no keepdims, its np.max no axis)
                name = em.mod.bind(f"_{e.prim.name}")
                em.mod.reductions.append((e, name))
                lines.append(f"{ind}{self.name(o)} = {name}({em.src(e.ins[0])})")
            elif i in body_updates and isinstance(body_updates[i], tuple):
                a = e.ins[body_updates[i][1]]
                args = ", ".join(em.src(x) for x in e.ins)
                lines.append(ind + _norm(f"{self.name(o)} = {em.mod.g('np')}."
                                         f"{_ufunc_name(e.prim)}({args}, "
                                         f"out={self.namer.names[a.id]})"))
            elif i in body_updates and e.ins[body_updates[i]].id in self.namer.names:
                a = e.ins[body_updates[i]]
                self.namer.names[o.id] = self.namer.names[a.id]
                lines.append(ind + _norm(f"{self.namer.names[a.id]} {e.prim.inplace_op}= "
                                         f"{em.src(e.ins[1 - body_updates[i]])}"))
            elif top and (em.mod.array_methods or em.mod.jit is not None and
                          em.mod.jit.python_body) and self._copied_transpose(e, i, eqns):
                # (BLAS multiplies by a transpose, a view of the weights, more slowly
                # than by the same matrix laid out in rows: a copy made once pays at
                # every step of the loop)
                lines.append(f"{ind}{self.name(o)} = {em.mod.g('np')}.ascontiguousarray("
                             f"{em.src(e.ins[0])}.T)")
            elif top and self.fc.free and \
                    (k := self._in_place(e, i, last_use, eqns)) is not None:
                a = e.ins[k]
                op = e.prim.inplace_op
                self.namer.names[o.id] = self.namer.names[a.id]
                lines.append(ind + _norm(f"{self.namer.names[a.id]} {op}= "
                                         f"{em.src(e.ins[1 - k])}"))
            elif top and self.fc.free and em.mod.array_methods and \
                    (k := self._out_in_place(e, i, last_use, eqns)) is not None:
                # (`h = np.tanh(h_1, out=h_1)`: a dead temporary of a variant holds the
                # result, which keeps its own name)
                args = ", ".join(em.src(x) for x in e.ins)
                lines.append(ind + _norm(f"{self.name(o)} = {em.mod.g('np')}."
                                         f"{_ufunc_name(e.prim)}({args}, "
                                         f"out={self.namer.names[e.ins[k].id]})"))
            else:
                lines.append(ind + _norm(f"{self.name(o)} = {em.expr(e, self.uses)}"))
            chk = self.fc.check_scalar
            if chk is not None and any(v is chk for v in e.outs):
                # checked where it is made, however the statement was written
                lines.append(f"{ind}{em.mod.g('check_scalar')}({self.name(chk)})")
            if top and self.fc.free:
                self._free_dead(e, i, eqns, absorb, inlined, reads_of, last_use, ind, lines)
        if len(lines) == start:
            lines.append(f"{ind}pass")

    @staticmethod
    def _last_uses(eqns, inlined, moved):
        """(id -> index of the statement that reads it last, id of an inlined value -> the
        values it reads where it is used)."""
        last_use, reads_of = {}, {}
        for i, e in enumerate(eqns):
            reads = []
            for v in e.var_ins():  # a value written inline is read where it is used
                reads.extend(reads_of.get(v.id, [v]) if v.id in inlined else [v])
            if e.outs and e.outs[0].id in inlined:
                reads_of[e.outs[0].id] = reads
                continue
            for v in reads:  # an absorbed scatter_add reads where its add is
                last_use[v.id] = max(last_use.get(v.id, -1), moved.get(i, i))
        return last_use, reads_of

    def _free_dead(self, e, i, eqns, absorb, inlined, reads_of, last_use, ind, lines):
        """`del` the arrays statement i reads for the last time: Python would keep every
        intermediate alive until the function returns. (numba frees them itself, and has
        no `del`.)"""
        if self.em.mod.jit is not None and not self.em.mod.jit.python_body:
            return
        reads = [r for v in e.var_ins()
                 for r in (reads_of.get(v.id, [v]) if v.id in inlined else [v])]
        if i in absorb:  # the absorbed scatter_add's reads happen here
            reads += list(eqns[absorb[i][0]].var_ins())
        names = self.namer.names
        dead = [v for v in reads if last_use.get(v.id) == i and
                v.id not in self.returned and v.kind == "array" and
                v.id not in self.maybe_unbound and
                v.const_name is None and v.id not in self.em.inline and
                v.id not in self.inputs and v.id in names and
                v.id not in self.fc.keep and self._owns(v, i + 1, last_use) and
                not any(names.get(o2.id) == names[v.id] for o2 in e.outs)]
        if dead:
            lines.append(f"{ind}del {', '.join(dict.fromkeys(names[v.id] for v in dead))}")

    # statements of the equations that are not `name = expression` (see _STATEMENTS)

    def fused(self, e, ind, lines):
        em = self.em
        if e.params.get("rows") is not None:
            self._blocked(e, ind, lines)
            return
        if e.params.get("places") is not None and em.mod.jit is None:
            self._placed(e, ind, lines)
            return
        names = ", ".join(self.name(v) for v in e.outs)
        args = ", ".join(em.src(a) for a in e.ins)
        jit = em.mod.jit
        if jit is not None and jit.python_body:  # numpy allocates the loop's outputs
            # the loop writes into the arrays it is given and returns nothing (numba boxes
            # each array it returns anew, about 600 ns apiece); a pool of results tracks
            # those very objects
            ins = [em.src(a) for a in e.ins]
            outs, made = self._made_names(e, ins)
            for name, o in zip(made, e.outs):
                lines.append(f"{ind}{name} = {_array_for(em, o)}")
            lines.append(f"{ind}{em.mod.region_name(e)}({args}, {', '.join(made)})")
            self._renamed(outs, made, ind, lines)
            em.mod.regions.append((e, ins))
            return
        lines.append(f"{ind}{names} = {em.mod.region_name(e)}({args})")
        em.mod.regions.append((e, [em.src(a) for a in e.ins]))

    def _blocked(self, e, ind, lines):
        """A blocked region (fusion.block_regions): its results allocated whole, then its
        function called on each block of rows, the inputs of the region's shape cut into
        the block's rows (the others read whole). A result named like an input (a loop's
        carried value) is made under a name of its own and renamed after the loop: every
        block must still read the input."""
        em = self.em
        shape, rows = loop_shape(e.outs[0]), e.params["rows"]
        ins = [em.src(a) for a in e.ins]
        outs, made = self._made_names(e, ins)
        for name, v in zip(made, e.outs):
            lines.append(f"{ind}{name} = {_array_for(em, v)}")
        at = self.namer.fresh("at", True)
        block = self.namer.fresh("block", True)
        args = ", ".join(n + f"[{block}]" * (loop_shape(a) == shape) for a, n in zip(e.ins, ins))
        what = "elements" if len(shape) == 1 else "rows" if rows > 1 else "row"
        lines.append(f"{ind}for {at} in range(0, {shape[0]}, {rows}):  "
                     f"# {rows} {what} at a time")
        lines.append(f"{ind}    {block} = slice({at}, {at} + {rows})")
        lines.append(f"{ind}    {', '.join(f'{o}[{block}]' for o in made)} = "
                     f"{em.mod.region_name(e)}({args})")
        self._renamed(outs, made, ind, lines)
        em.mod.regions.append((e, ins))
        em.mod.region_outs[id(e)] = outs

    def _made_names(self, e, ins):
        """(the names of region e's results, the names its arrays are made under): a
        result named like an input (a loop's carried value) is made under a name of its
        own, renamed after the region (`_renamed`): the region must still read the
        input."""
        outs = [self.name(v) for v in e.outs]
        return outs, [self.namer.fresh(v.hint, False) if o in ins else o
                      for o, v in zip(outs, e.outs)]

    def _renamed(self, outs, made, ind, lines):
        renamed = [(o, m) for o, m in zip(outs, made) if o != m]
        if renamed:
            lines.append(f"{ind}{', '.join(o for o, _ in renamed)} = "
                         f"{', '.join(m for _, m in renamed)}")
            lines.append(f"{ind}del {', '.join(m for _, m in renamed)}")

    def _placed(self, e, ind, lines):
        """A numpy variant's sum of terms placed in shifted slices (fusion.shifted_sums):
        its result allocated whole, then each piece of it (fusion.segments) written a
        block of rows at a time as the sum of the terms that cover it, each term's
        function (`_emit_placed_terms`) called on its inputs' rows at the term's offset;
        what terms compute alike first, once per block, on their rows together
        (`_shared_cones`), each term then taking its rows of it."""
        from .fusion import segments

        em = self.em
        np_ = em.mod.g("np")
        out = e.outs[0]
        shape = loop_shape(out)
        ins = [em.src(a) for a in e.ins]
        name = self.name(out)
        made = self.namer.fresh(out.hint, False) if name in ins else name
        lines.append(f"{ind}{made} = {_array_for(em, out)}")
        places = e.params["places"]
        given: dict = {}

        def shared_name(v):
            if v.id not in given:
                given[v.id] = self.namer.fresh(v.hint, False)
            return given[v.id]

        calls, shared = em.mod.term_calls(e, ins, shared_name)
        at, stop = self.namer.fresh("at", True), self.namer.fresh("stop", True)
        for lo, hi, terms in segments(places, shape):
            rows = block_rows(tuple(b - a for a, b in zip(lo, hi)))
            looped = hi[0] - lo[0] > rows
            first = (at, stop) if looped else (str(lo[0]), str(hi[0]))
            # per group of terms that share values: the first-axis offsets of its terms here
            offs = {v.id: [places[k][0][0] for k in terms if k in members]
                    for _, _, values, members in shared for v in values}

            def cut(a, k, axis, halo=(0, 0)):
                """Term k's operand `a`'s index along `axis` of the result (or None);
                `halo`: the rows before and after the term's that the slice takes too."""
                s = loop_shape(a)
                j = axis - (len(shape) - len(s))
                if j < 0:
                    return None
                ext = places[k][1][axis] - places[k][0][axis]
                if s[j] == 1 and ext != 1:
                    return ":"
                off = places[k][0][axis]
                a0, b0 = first if axis == 0 else (str(lo[axis]), str(hi[axis]))
                before, after = halo if axis == 0 else (0, 0)
                return f"{_minus(a0, off + before)}:{_minus(b0, off - after)}"

            def operand(a, src, k, halo=(0, 0)):
                if a.id in given:  # (the shared rows: this term's part of them)
                    at_k, ks = places[k][0][0], offs[a.id]
                    before, after = max(ks) - at_k, at_k - min(ks)
                    return f"{given[a.id]}[{before or ''}:{-after if after else ''}]" \
                        if before or after else given[a.id]
                s = loop_shape(a)
                if not s:
                    return src
                parts = [cut(a, k, axis, halo) for axis in range(len(shape))]
                return f"{src}[{', '.join(p for p in parts if p is not None)}]"

            values, pre = [], []
            for fn, args, outs, members in shared:
                ks = [places[k][0][0] for k in terms if k in members]
                if not ks:
                    continue
                k = next(k for k in terms if k in members and places[k][0][0] == min(ks))
                halo = (max(ks) - min(ks), 0)
                sliced = [operand(a, src, k, halo) for a, src in args]
                pre.append(f"{', '.join(shared_name(v) for v in outs)} = "
                           f"{fn}({', '.join(sliced)})")
            for k in terms:
                fn, args = calls[k]
                sliced = [operand(a, src, k) for a, src in args]
                values.append(f"{fn}({', '.join(sliced)})" if fn else sliced[0])
            dest = ", ".join([f"{first[0]}:{first[1]}"] +
                             [f"{a}:{b}" for a, b in zip(lo[1:], hi[1:])])
            covered = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
            lines.append(f"{ind}# {made}[{covered}]: " + (
                f"{len(terms)} term{'s' * (len(terms) > 1)}" if terms else "no term: zeros"))
            inner = ind
            if looped:
                what = "elements" if len(shape) == 1 else "rows" if rows > 1 else "row"
                lines.append(f"{ind}for {at} in range({lo[0]}, {hi[0]}, {rows}):  "
                             f"# {rows} {what} at a time")
                inner = ind + "    "
                lines.append(f"{inner}{stop} = min({at} + {rows}, {hi[0]})")
            lines.extend(inner + p for p in pre)
            if len(values) < 2:
                lines.append(f"{inner}{made}[{dest}] = {values[0] if values else '0'}")
                continue
            # (the first two added into the result's rows, the others added to them)
            lines.append(f"{inner}{np_}.add({values[0]}, {values[1]}, out={made}[{dest}])")
            lines.extend(f"{inner}{made}[{dest}] += {v}" for v in values[2:])
        if made != name:
            lines.append(f"{ind}{name} = {made}")
            lines.append(f"{ind}del {made}")

    def list_append(self, e, ind, lines):
        lst, o = e.ins[0], e.outs[0]
        self.namer.names[o.id] = self.name(lst) if isinstance(lst, Var) else self.name(o)
        lines.append(ind + _norm(self.em.expr(e, self.uses)))

    def newstack(self, e, ind, lines):
        name = self.name(e.outs[0])
        sites = self._stack_sites().get(e.outs[0].id)
        if sites is None:
            lines.append(f"{ind}{name} = []")
            return
        # numba's lists hold one type: a list per push site (see _stack_sites)
        names = [name] + [self.namer.fresh(name, False) for _ in range(sites[0] - 1)]
        self.stack_names[e.outs[0].id] = names
        lines.append(f"{ind}{', '.join(names)} = {', '.join('[]' for _ in names)}")

    def _stack(self, e) -> str:
        """The list a push or pop of `e` uses (its site's, where the stack is split)."""
        names = self.stack_names.get(e.ins[0].id) if hasattr(self, "stack_names") else None
        if names is None:
            return self.em.src(e.ins[0])
        return names[self._stack_sites()[e.ins[0].id][1][id(e)]]

    def _stack_sites(self) -> dict:
        """Compiled by numba: {stack id: (number of push sites, {id(push or pop): site})}
        for each stack whose pushes are all statements of one block and whose pops are all
        statements of another, as many (a loop's body and its adjoint's): pop k of a
        body takes what push n-1-k of the other put, so each site gets a list of its own.
        Other stacks stay one list."""
        if getattr(self, "sites", None) is not None:
            return self.sites
        self.sites, self.stack_names = {}, {}
        if not _compiled_body(self.em.mod):
            return self.sites
        found: dict = {}

        def walk(eqns, block):
            for e in eqns:
                if e.prim in (PUSH, POP):
                    found.setdefault(e.ins[0].id, []).append((e, block))
                for b in e.blocks():
                    walk(b.eqns, id(b))

        walk(self.fc.eqns, None)
        for sid, uses in found.items():
            pushes = [(e, b) for e, b in uses if e.prim is PUSH]
            pops = [(e, b) for e, b in uses if e.prim is POP]
            if len(pushes) < 2 or len(pushes) != len(pops) or \
                    len({b for _, b in pushes}) != 1 or len({b for _, b in pops}) != 1:
                continue
            n = len(pushes)
            site = {id(e): k for k, (e, _) in enumerate(pushes)}
            site.update({id(e): n - 1 - k for k, (e, _) in enumerate(pops)})
            self.sites[sid] = (n, site)
        return self.sites

    def push(self, e, ind, lines):
        vals = [self.em.src(v) for v in e.ins[1:]]
        item = vals[0] if len(vals) == 1 else f"({', '.join(vals)})"
        lines.append(f"{ind}{self._stack(e)}.append({item})")

    def pop(self, e, ind, lines):
        names = ", ".join(self.name(v) for v in e.outs)
        lines.append(f"{ind}{names} = {self._stack(e)}.pop()")

    def verbatim(self, e, ind, lines):
        """A statement that runs as written (srcgrad.verbatim), its names renamed."""
        code, em = e.params["code"], self.em
        names = {}
        for name, v in zip(code.reads, e.ins):
            names[name] = em.src(v)
        for name, how in code.fixed.items():
            names[name] = em.mod.builtin(name) if how[0] == "builtin" else \
                em.mod.module(how[1], name)
        for name, o in zip(code.writes, e.outs):
            new = self.name(o, o.hint, True)
            if name in names and names[name] != new:  # bound before: the statement may
                lines.append(f"{ind}{new} = {names[name]}")  # not rebind it on every path
            names[name] = new
        lines.extend(ind + line for line in code.render(names))

    def _index(self, eqns):
        """Who makes and who reads each value of the function's top-level statements."""
        self.made = {}
        self.readers: dict[int, list] = {}
        for k, q in enumerate(eqns):
            if q.outs:
                self.made.setdefault(q.outs[0].id, q)
            for vid in dict.fromkeys(v.id for v in q.var_ins()):
                self.readers.setdefault(vid, []).append(k)

    def _absorptions(self, eqns) -> dict:
        """{add index: (scatter_add index, operand position)} for `a + scatter_add(g, idx,
        shape)` where `a` is a fresh array of this function, so the sum can be written as
        `a[idx] += g` (no zero-filled array, no full-size add).

        (Complexity about 25: the conditions under which the rewrite is sound, one
        after the other.)"""
        from runtime.ops.shapes import is_basic_index

        made = {}
        for i, e in enumerate(eqns):
            for o in e.outs:
                made[o.id] = i
        out = {}
        used = set()
        for j, e in enumerate(eqns):
            if e.prim.inplace_op != "+" or not all(isinstance(a, Var) for a in e.ins):
                continue
            for k in (1, 0):
                b, a = e.ins[k], e.ins[1 - k]
                i = made.get(b.id)
                if i is None or i in used or self.uses.get(b.id) != 1:
                    continue
                q = eqns[i]
                at = q.prim.adds_at
                if at is None or isinstance(q.ins[at], Var) or \
                        not is_basic_index(q.ins[at]) or _valid_on_0d(q.ins[at]):
                    continue  # (`a` may be a numpy scalar, which has no items to update)
                ia = made.get(a.id)
                if ia is None or a.id in self.inputs or a.id in self.returned or \
                        a.id in self.fc.keep:
                    continue
                src = eqns[ia].prim
                if src.adds_at is None and not src.updatable:
                    continue
                if a.sclass != e.outs[0].sclass or not self._keeps_dtype(a, q.ins[0]) or \
                        a.id in self.em.maybe_py or not self._only_fresh_readers(a, eqns, j):
                    continue
                out[j] = (i, k)
                used.add(i)
                break
        return out

    def _scatter_add_into(self, e, q, k, j, last_use, ind, lines):
        """Write `o = a + scatter_add(g, idx, shape)` as `a[idx] += g` when `a` dies here
        and owns its name; otherwise as the two statements."""
        a = e.ins[1 - k]
        o = e.outs[0]
        name = self.namer.names.get(a.id)
        if name is not None and last_use.get(a.id) == j and self._owns(a, j, last_use):
            g, idx = q.ins[0], q.ins[q.prim.adds_at]
            self.namer.names[o.id] = name
            lines.append(ind + _norm(f"{name}[{self.em.index_src(idx)}] += "
                                     f"{self.em.item_src(g)}"))
        else:
            lines.append(ind + _norm(f"{self.name(q.outs[0])} = {self.em.expr(q, self.uses)}"))
            lines.append(ind + _norm(f"{self.name(o)} = {self.em.expr(e, self.uses)}"))

    def _copied_transpose(self, e, i, eqns) -> bool:
        """Is `e` the transpose `w.T` of a 2-d array of known shape, made before a loop, that is
        read only as the right operand of products, at least one of them inside a loop's
        body (the adjoint of `h @ W` in a loop, `dh @ W.T` at every step), and nowhere
        else (not returned, kept or carried)? Then it is written as a contiguous copy."""
        o = e.outs[0] if e.outs else None
        if e.prim is not _shapes.transpose or e.params.get("axes") is not None or \
                o is None or not isinstance(e.ins[0], Var) or \
                len(loop_shape(e.ins[0]) or ()) != 2 or \
                o.id in self.returned or o.id in self.fc.keep:
            return False
        in_loop = False

        def reads_ok(block_eqns, looped) -> bool:
            nonlocal in_loop
            for q in block_eqns:
                if any(isinstance(a, Var) and a.id == o.id for a in q.ins):
                    if q.prim is not _linalg.matmul or \
                            not (isinstance(q.ins[1], Var) and q.ins[1].id == o.id) or \
                            (isinstance(q.ins[0], Var) and q.ins[0].id == o.id):
                        return False
                    in_loop = in_loop or looped
                for b in q.blocks():
                    if any(isinstance(v, Var) and v.id == o.id for v in iter_vars(b.outs)):
                        return False
                    if not reads_ok(b.eqns, looped or q.prim in (FOR, WHILE)):
                        return False
            return True

        return reads_ok(eqns[i + 1:], False) and in_loop

    def _only_fresh_readers(self, a, eqns, j) -> bool:
        """Every other statement reading `a` makes a new array (or a shape) from it: none
        keeps a view of `a` (reshape, .T, a slice...) or an alias (a list, a stack, a copy
        into a branch or loop), so updating `a` in place at statement j changes nothing
        else."""
        for k in self.readers.get(a.id, ()):
            if k == j:
                continue
            p = eqns[k].prim
            if not p.fresh:  # a result that may share memory with `a`
                return False
        return True

    def _in_place(self, e, i, last_use, eqns) -> "int | None":
        """The operand k that `a = a + b` may update in place (`a += b`), or None: `a` is a
        fresh array this function made (an elementwise result), dead after this use, of
        the result's shape and dtype. For + and * either operand (`b * a` is `a * b` bit
        for bit): `m = y * m_1` becomes `m_1 *= y`."""
        if e.prim.inplace_op is None:
            return None
        for k in ((0, 1) if e.prim.inplace_op in ("+", "*") else (0,)):
            if self._updatable_operand(e, k, i, last_use, eqns):
                return k
        return None

    def _out_in_place(self, e, i, last_use, eqns) -> "int | None":
        """The operand k whose array a ufunc may write its result into (`np.exp(a, out=a)`,
        `np.divide(c, a, out=a)`), or None: as for `_in_place`, a fresh array made here
        and dead after this use, of the result's shape and dtype."""
        if _ufunc_name(e.prim) is None or len(e.ins) not in (1, 2) or \
                not isinstance(e.outs[0].dclass, tuple):
            return None
        for k in range(len(e.ins)):
            a = e.ins[k]
            if isinstance(a, Var) and a.dclass == e.outs[0].dclass and \
                    loop_shape(a) and self._updatable_operand(e, k, i, last_use, eqns):
                # (an array of one dimension or more: numpy's operations on 0-d arrays
                # give scalars, which take no `out=`)
                return k
        return None

    def _updatable_operand(self, e, k, i, last_use, eqns) -> bool:
        a, b, o = e.ins[k], e.ins[1 - k] if len(e.ins) == 2 else None, e.outs[0]
        if not isinstance(a, Var):
            return False
        if last_use.get(a.id) != i or a.id in self.returned or a.id in self.inputs or \
                a.id in self.fc.keep:
            return False
        if a.sclass != o.sclass or a.id not in self.namer.names or not (
                self._keeps_dtype(a, b) if b is not None else _inexact(a, self.em.floating)):
            return False
        if isinstance(b, Var) and b is a:
            return False
        made = self.made.get(a.id)
        if made is None or not made.prim.updatable or a.id in self.em.maybe_py:
            return False
        return self._owns(a, i, last_use) and self._only_fresh_readers(a, eqns, i)

    def _keeps_dtype(self, a, b) -> bool:
        """`a op b` surely has `a`'s dtype at run time, so `a op= b` may update `a`: `a` is a
        floating array and `b` a Python number or an array of `a`'s dtype."""
        if not _inexact(a, self.em.floating):
            return False
        if isinstance(b, Var):  # (one known floating dtype: a variant's float64 inputs)
            return b.dclass == a.dclass and (_inexact(b, self.em.floating) or (
                b.dclass[0] == "f" and isinstance(b.dclass[1], str)))
        return isinstance(b, numbers.Real)

    def _owns(self, a, i, last_use) -> bool:
        """Every other value named like `a` is dead by statement i (an in-place update
        hands a name on from one value to the next)."""
        name = self.namer.names[a.id]
        return all(vid == a.id or last_use.get(vid, -1) < i
                   for vid in self.namer.names.holders[name])

    def _inlinable(self, e) -> bool:
        """A cheap meta value (x.shape, a tuple index...) used once: written where used."""
        if not e.prim.inline or not e.outs:
            return False
        o = e.outs[0]
        return self.uses.get(o.id, 0) <= 1 and o.id not in self.returned and not any(
            isinstance(a, Var) and a.id in self.em.carries for a in e.ins)

    def _coalesce(self, block, targets, moved=None):
        """Give a value the block yields the name of what it becomes (a carried variable
        or a merged one) when nothing in the block reads the old name afterwards.
        `moved`: {index: index where it is written} of the statements written later, with
        the add that absorbs them (`dx[t] += g`): their reads happen there."""
        moved = moved or {}
        pos, last_read = {}, {}  # where each value is made, and where it is last read
        for i, e in enumerate(block.eqns):
            for o in e.outs:
                pos[o.id] = i
            for r in e.var_ins():
                last_read[r.id] = max(last_read.get(r.id, -1), moved.get(i, i))
        yielded = collections.Counter(v.id for v in block.outs if isinstance(v, Var))
        for v, (old, name) in zip(block.outs, targets):
            if not isinstance(v, Var) or v.id not in pos or yielded[v.id] > 1 or \
                    v.id in self.namer.names or v.id in self.em.carries:
                continue
            made = pos[v.id]
            if old is not None and last_read.get(old.id, -1) > made:
                continue
            if any(last_read.get(vid, -1) > made
                   for vid in self.namer.names.holders.get(name, ())):
                continue  # a value read later already lives under that name
            if any(isinstance(w, Var) and w is not v and self.namer.names.get(w.id) == name
                   for w in block.outs):
                continue  # ... or is copied out at the end of the block
            self.namer.names[v.id] = name

    def _copies(self, block, targets, ind, lines):
        pairs = [(name, self.em.src(v)) for v, (_, name) in zip(block.outs, targets)
                 if self.em.src(v) != name]
        if pairs:
            lines.append(f"{ind}{', '.join(n for n, _ in pairs)} = "
                         f"{', '.join(v for _, v in pairs)}")

    def cond(self, e, ind, lines):
        em = self.em
        names = [self.name(o) for o in e.outs]
        lines.append(f"{ind}if {em.src(e.ins[0])}:")
        for side in ("then", "else"):
            blk = e.params[side]
            targets = [(None, n) for n in names]
            self._coalesce(blk, targets)
            if side == "else":
                if not blk.eqns and all(em.src(v) == n for v, n in zip(blk.outs, names)):
                    break
                lines.append(f"{ind}else:")
            start = len(lines)
            self.emit(blk.eqns, ind + "    ", lines, group=(e.loc, e.phase))
            if len(lines) == start + 1 and lines[-1].strip() == "pass" and blk.outs:
                lines.pop()
            self._copies(blk, targets, ind + "    ", lines)
            if len(lines) == start:
                lines.append(ind + "    pass")

    def loop(self, e, ind, lines):
        em = self.em
        is_for = e.prim is FOR
        carry, body = e.params["carry"], e.params["body"]
        inits = e.ins[3:] if is_for else e.ins
        slots = getattr(self, "slots", {}).get(id(e), {})
        names = []
        for ci, (c, o) in enumerate(zip(carry, e.outs)):
            if ci in slots:  # the input array whose steps it is written over
                n = self.name(slots[ci][0])
                self.namer.names[c.id] = n
            else:
                n = self.name(c, exact=False if any(
                    isinstance(i, Var) and self.namer.names.get(i.id) == c.hint
                    for i in inits) else None)
            self.namer.names[o.id] = n
            names.append(n)
        pairs = [(n, em.src(i)) for ci, (n, i) in enumerate(zip(names, inits))
                 if ci not in slots and em.src(i) != n]
        read = {w for _, v in pairs for w in re.findall(r"[A-Za-z_]\w*", v)}
        if pairs and _compiled_body(em.mod) and not read & {n for n, _ in pairs}:
            # (numba types a list in a tuple at once: an empty one stays untyped)
            lines.extend(f"{ind}{n} = {v}" for n, v in pairs)
        elif pairs:
            lines.append(f"{ind}{', '.join(n for n, _ in pairs)} = "
                         f"{', '.join(v for _, v in pairs)}")
        inner = ind + "    "
        if is_for:
            idx = e.params["index"]
            a, b, c = (em.src(x) for x in e.ins[:3])
            if c == "1":
                rng = f"{em.mod.g('range')}({b})" if a == "0" else \
                    f"{em.mod.g('range')}({a}, {b})"
            else:
                rng = f"{em.mod.g('range')}({a}, {b}, {c})"
            if e.params.get("reverse") and _compiled_body(em.mod) and c == "1":
                # (numba has no reversed())
                rng = f"{em.mod.g('range')}({_minus(b, 1)}, {_minus(a, 1)}, -1)"
            elif e.params.get("reverse"):
                rng = f"{em.mod.g('reversed')}({rng})"
            lines.append(f"{ind}for {self.name(idx, exact=True)} in {rng}:")
            if "brk" in e.params:
                lines.append(f"{inner}if {names[e.params['brk']]}:")
                lines.append(f"{inner}    break")
        else:
            lines.append(f"{ind}while True:")
            if "brk" in e.params:
                lines.append(f"{inner}if {names[e.params['brk']]}:")
                lines.append(f"{inner}    break")
            cond = e.params["cond"]
            self.emit(cond.eqns, inner, lines, group=(e.loc, e.phase))
            if lines[-1].strip() == "pass":
                lines.pop()
            lines.append(f"{inner}if not {em.src(cond.outs[0])}:")
            lines.append(f"{inner}    break")
        targets = list(zip(carry, names))
        self.accumulators = getattr(self, "accumulators", {})
        acc = self._accumulators(e, names)
        if slots:
            self.into_slots = getattr(self, "into_slots", {})
            update, skipped = {}, set()
            for ci, (_, j, k, p, v, u) in slots.items():
                acc.pop(j, None)
                skipped |= {j, k}
                update[p] = (v, u)
                self.namer.names[body.eqns[j].outs[0].id] = names[ci]
            self.into_slots[id(body.eqns)] = (update, skipped)
        self.accumulators[id(body.eqns)] = acc
        moved = {j: i for i, (_, j, _, _) in acc.items() if j is not None}
        if self.fc.free and not _compiled_body(em.mod):
            self.body_updates = getattr(self, "body_updates", {})
            taken = set(acc) | (set(update) | skipped if slots else set())
            self.body_updates[id(body.eqns)] = self._body_in_place(body, taken, moved)
        self._coalesce(body, targets, moved)
        start = len(lines)
        self.emit(body.eqns, inner, lines, group=(e.loc, e.phase))
        if len(lines) == start + 1 and lines[-1].strip() == "pass":
            lines.pop()
        self._copies(body, targets, inner, lines)
        if len(lines) == start:
            lines.append(f"{inner}pass")


    def _body_in_place(self, body, taken, moved) -> dict:
        """{index: operand} of the statements of a loop body written `a += b` (`a *= b`...):
        `a` is an array the body made this step by a statement of its own that makes a new
        array (a product, an elementwise result), of the result's shape and dtype, that no
        statement after this one reads, that the body neither yields nor keeps, and that
        every other statement reading it makes a new array from (no view, no stack or list
        holds it). The body's values are made anew at every step, so what holds for one
        step holds for all; values from outside the body (read again next step), the
        carried ones, and those `taken` statements write over a slot of an array or into a
        carried sum are never `a`. A statement `moved` ({index: where}) is written, and
        reads, where its carried sum is added to.

        In a numpy variant, a ufunc's result is also written over such an `a` of its shape
        and dtype: {index: ("out", operand)}, `o = np.tanh(a, out=a)`. Its result keeps a
        name of its own, so it may be yielded, carried or saved: the array is the step's."""
        eqns = body.eqns
        made, readers, last = {}, {}, {}
        for i, q in enumerate(eqns):
            for vid in dict.fromkeys(v.id for v in q.var_ins()):
                readers.setdefault(vid, []).append(i)
                last[vid] = max(last.get(vid, -1), moved.get(i, i))
            for o in q.outs:  # (a statement written over a slot or into a sum: not new)
                made[o.id] = q if i not in taken else None
        kept = {v.id for v in iter_vars(body.outs)} | self.returned | self.fc.keep | \
            self.em.carries | self.em.maybe_py
        def writable(a, o, i) -> bool:  # (a made this step, read last here, not kept)
            q = made.get(a.id) if isinstance(a, Var) else None
            return q is not None and q.prim.updatable and not q.prim.structured and \
                last.get(a.id) == i and a.id not in kept and a.sclass == o.sclass and \
                all(eqns[r].prim.fresh for r in readers[a.id] if r != i)

        found = {}
        for i, e in enumerate(eqns):
            if i in taken or len(e.outs) != 1:
                continue
            o = e.outs[0]
            if e.prim.inplace_op is not None and o.id not in kept:
                for k in ((0, 1) if e.prim.inplace_op in ("+", "*") else (0,)):
                    a, b = e.ins[k], e.ins[1 - k]
                    if b is not a and writable(a, o, i) and self._keeps_dtype(a, b):
                        found[i] = k
                        break
            if i in found or not self.em.mod.array_methods or _ufunc_name(e.prim) is None \
                    or len(e.ins) not in (1, 2) or not isinstance(o.dclass, tuple):
                continue
            # `o = np.tanh(a, out=a)`, `o = np.subtract(1.0, a, out=a)`: the result has
            # a name of its own, so it may be kept, carried or saved for the adjoint (a is
            # made anew at every step)
            for k, a in enumerate(e.ins):
                if isinstance(a, Var) and a.dclass == o.dclass and loop_shape(a) and \
                        all(b is not a for b in e.ins[:k] + e.ins[k + 1:]) and \
                        writable(a, o, i) and (_known_float(a) or (
                            self._keeps_dtype(a, e.ins[1 - k]) if len(e.ins) == 2
                            else _inexact(a, self.em.floating))):
                    found[i] = ("out", k)
                    break
        return found

    def _accumulators(self, e, names) -> dict:
        """A loop's carried sums, updated in place: {index in the body of `c + b` that
        makes the next value of carry c: (c's name, index of the `scatter_add` that b is,
        or None)}, written `c += b` or `c[idx] += g` (the adjoint of a loop that reads
        `x[t]` would otherwise make an array of x's size at every step).

        Where: the loop is a statement of the function's top level (it runs once per
        call); the sum is read in the body only by ops that make new arrays (not saved on
        a stack for the reverse pass, not viewed: the next step changes it); c is read by
        that add alone (in the body and its test), has the result's
        shape and a floating dtype that b keeps; its initial value is a fresh array this
        function made at its top level and reads nowhere else (not an input, a module
        array, a returned or kept value), so no one else sees the array change.

        (Complexity about 25: the conditions, one after the other.)"""
        from runtime.ops.shapes import is_basic_index

        if not any(q is e for q in self.fc.eqns):
            return {}  # (a loop inside another runs again: its sums must start afresh)
        body = e.params["body"]
        inits = e.ins[3:] if e.prim is FOR else e.ins
        blocks = [body] + ([e.params["cond"]] if "cond" in e.params else [])
        reads = _uses([q for b in blocks for q in b.eqns], [b.outs for b in blocks])
        made = {o.id: j for j, q in enumerate(body.eqns) for o in q.outs}
        out = {}
        for c, n, init, name in zip(e.params["carry"], body.outs, inits, names):
            j = made.get(n.id) if isinstance(n, Var) else None
            if j is None or reads.get(c.id) != 1 or not self._owned_init(init) or \
                    not _read_fresh(n, blocks):
                continue
            q = body.eqns[j]
            if q.prim.inplace_op != "+" or not any(a is c for a in q.ins):
                continue
            b = q.ins[1] if q.ins[0] is c else q.ins[0]
            if c.sclass != n.sclass or not self._keeps_dtype(c, b):
                continue
            k = made.get(b.id) if isinstance(b, Var) else None
            s = body.eqns[k] if k is not None else None
            if s is not None and s.prim.adds_at is not None and reads.get(b.id) == 1 and \
                    s.outs[0].sclass == c.sclass and self._keeps_dtype(c, s.ins[0]) and \
                    (isinstance(s.ins[s.prim.adds_at], Var) and
                     s.ins[s.prim.adds_at].dclass == INT_VALUED or
                     not isinstance(s.ins[s.prim.adds_at], Var) and
                     is_basic_index(s.ins[s.prim.adds_at]) and
                     not _valid_on_0d(s.ins[s.prim.adds_at])):
                out[j] = (name, k, b, self._slot_once(e, init, s.ins[s.prim.adds_at]))
            elif isinstance(b, numbers.Real) or b.sclass == c.sclass:
                out[j] = (name, None, b, False)
        return out

    def _slots_in_place(self, e) -> dict:
        """{carry index: (A, add index, scatter index, product index, v, u)} of a loop
        over every step t of an array A, `for t in range(n)` (either order, no break),
        whose carried array of steps starts as zeros and gets `g = u * v` at slot t,
        where `v = A[t]`: then `v *= u` writes g over A's own step t, which nothing reads
        again, and after the loop A is the array of steps (the adjoint of an RNN's tanh,
        `d_all[t] = dh * (1 - h ** 2)[t]`, becomes `(1 - h ** 2)[t] *= dh`: no array of
        zeros, no copy into it). A is a fresh array of the function's top level that this
        read of it alone reads (not an input, a scratch array, a returned or kept value),
        of the carried array's shape and dtype; v is read by the product alone, of g's
        shape and dtype, an array (a view of A: A[t] of a 1-d A is a number, which `*=`
        would only rebind); g is read only by ops that make new arrays, and is not
        carried.

        (Complexity about 25: the conditions, one after the other.)"""
        if e.prim is not FOR or "brk" in e.params or not isinstance(e.ins[1], int) or \
                e.ins[0] != 0 or e.ins[2] != 1 or isinstance(e.ins[0], bool):
            return {}
        body, t = e.params["body"], e.params["index"]
        made = {o.id: j for j, q in enumerate(body.eqns) for o in q.outs}
        reads = _uses(body.eqns, body.outs)
        out = {}
        for j, (name, k, b, once) in self._accumulators(e, [None] * len(body.outs)).items():
            ci = next((ci for ci, o in enumerate(body.outs) if o is body.eqns[j].outs[0]),
                      None)
            if k is None or not once or ci is None:
                continue
            c, g = e.params["carry"][ci], body.eqns[k].ins[0]
            p = made.get(g.id) if isinstance(g, Var) else None
            q = body.eqns[p] if p is not None else None
            if q is None or q.prim.inplace_op != "*" or len(q.ins) != 2 or \
                    any(o is g for o in iter_vars(body.outs)) or not _read_fresh(g, [body]):
                continue
            for v, u in ((q.ins[0], q.ins[1]), (q.ins[1], q.ins[0])):
                r = body.eqns[made[v.id]] if isinstance(v, Var) and v.id in made else None
                if r is None or not r.prim.subscript or r.ins[1] is not t or r.params or \
                        u is v or reads.get(v.id) != 1 or v.sclass != g.sclass or \
                        v.dclass != g.dclass or not self._keeps_dtype(v, u) or \
                        not loop_shape(v):  # (a step of a 1-d array is a scalar, no view)
                    continue
                a = r.ins[0]
                shape = loop_shape(a)
                if not self._owned_init(a) or a.sclass != c.sclass or a.dclass != c.dclass \
                        or not shape or shape[0] != e.ins[1] or a.kind != "array" or \
                        a.id in getattr(self.em, "scratch", {}):
                    continue
                out[ci] = (a, j, k, p, v, u)
                break
        return out

    def _slot_once(self, e, init, idx) -> bool:
        """Does the loop's scatter `c[idx] += g` write each slot of zeros once: idx is the
        counter of a loop over distinct indices from 0 up (in either order), c starts as
        zeros? Then `c[idx] = g` is the same, at a third of the cost."""
        q = getattr(self, "made", {}).get(init.id)
        start, _, step = e.ins[:3] if e.prim is FOR else (None, None, None)
        return q is not None and q.prim.name in ("zeros", "zeros_like") and \
            idx is e.params.get("index") and isinstance(start, int) and start >= 0 and \
            isinstance(step, int) and step > 0

    def _owned_init(self, init) -> bool:
        """A loop's initial value that it may update in place: a fresh array made at the
        function's top level and read by the loop alone."""
        if not isinstance(init, Var) or init.kind != "array":
            return False
        q = getattr(self, "made", {}).get(init.id)
        vid = init.id
        return q is not None and q.prim.fresh and not q.prim.custom and \
            self.uses.get(vid) == 1 and vid not in self.inputs and vid not in self.returned \
            and vid not in self.fc.keep and vid not in self.em.maybe_py and \
            init.const_name is None and _inexact(init, self.em.floating)

    def _accumulate(self, e, eqns, how, ind, lines):
        name, k, b, once = how
        self.namer.names[e.outs[0].id] = name
        if k is None:
            lines.append(ind + _norm(f"{name} += {self.em.src(b)}"))
        else:
            s = eqns[k]
            g, idx = s.ins[0], s.ins[s.prim.adds_at]
            op = "=" if once else "+="
            lines.append(ind + _norm(f"{name}[{self.em.index_src(idx)}] {op} {self.em.src(g)}"))


#: equations written as their own kind of statement: primitive -> _BlockCtx method
_STATEMENTS = {
    FUSED: _BlockCtx.fused, PYTHON: _BlockCtx.verbatim, COND: _BlockCtx.cond,
    FOR: _BlockCtx.loop, WHILE: _BlockCtx.loop, LIST_APPEND: _BlockCtx.list_append,
    NEWSTACK: _BlockCtx.newstack, PUSH: _BlockCtx.push, POP: _BlockCtx.pop,
}


def _only_index_use(v, eqns) -> bool:
    for e in eqns:
        for i, a in enumerate(e.ins):
            if a is v and not (e.prim.subscript and i == 1) and e.prim is not PACK:
                return False
        for b in e.blocks():
            if not _only_index_use(v, b.eqns) or any(o is v for o in b.outs):
                return False
    return True


def _defined_in(v, eqns) -> bool:
    return any(o is v for e in eqns for o in e.outs) or any(
        _defined_in(v, b.eqns) for e in eqns for b in e.blocks())


def _is_fwd(v, eqns) -> bool:
    for e in eqns:
        if any(o is v for o in e.outs):
            return e.phase == "fwd"
    return False


def _emit_regions(mod: _Module, body: list):
    """Module-level code of fused regions: a numpy reference and a CUDA kernel spec each
    (a numpy variant's sum of shifted slices: a function per term)."""
    from .fusion import cuda_expr, cuda_type

    for e, fcs in mod.term_functions:
        for fc, sub, ins in fcs:
            body += ["", ""]
            _emit_function(fc, sub, _Emitter(sub, mod), ins, "", body, fc.name)
    for e, params in mod.regions:
        region = e.params["region"]
        name = mod.region_name(e)
        # inputs keep the caller's names; everything the region defines gets its own local
        # name (an output may take over an input's name at the call site)
        sub = _Namer(mod.local_reserved | set(params))
        sub.names = {v.id: p for v, p in zip(e.ins, params)}
        blocked = e.params.get("rows") is not None
        if blocked:  # (a result keeps its name at the call, where it is free here)
            for v, n in zip(e.outs, mod.region_outs[id(e)]):
                if n not in sub.used:
                    sub.names[v.id] = n
                    sub.used.add(n)
        mod.namers.append(sub)
        ret = e.outs[0] if len(e.outs) == 1 else tuple(e.outs)
        # (a blocked region's function frees each temporary after its last use and updates
        # its own arrays in place, so that its working set stays small)
        # (and its values take their plain names where free: nothing else is in scope)
        fc = FunctionCode(name, ", ".join(params), region.eqns, ret,
                          {o.id for q in region.eqns for o in q.outs} if blocked else set(),
                          free_after_forward=blocked)
        if blocked:  # (its inputs are arrays, floating where their dtype says so)
            fc.floats = {v.id for v in e.ins
                         if loop_shape(v) and (jit_dtype(v) or "").startswith("float")}
        fc.prefer = {}
        body += ["", ""]
        where = f"   ({e.loc.short()})" if e.loc is not None else ""
        fc.docstring = f"Fused elementwise region{where}: the numpy reference of {name}_cuda."
        if blocked:
            at = sorted({q.loc.lineno for q in region.eqns if q.loc is not None})
            where = "" if e.loc is None else f" of {e.loc.short()}" if len(at) < 2 else \
                f" of {os.path.basename(e.loc.filename)}:{at[0]}-{at[-1]}"
            fc.docstring = f"The elementwise statements{where} on one block of rows."
        _emit_function(fc, sub, _Emitter(sub, mod), [v for v in e.ins], "", body, name)
        if blocked:
            continue
        for q in region.eqns:  # names of the region's values (the reference named them)
            for o in q.outs:
                sub.names.setdefault(o.id, sub.fresh(o.hint, False))
        cnames = {vid: "v_" + n for vid, n in sub.names.items()}
        stmts = []
        outs = {v.id for v in e.outs}
        for q in region.eqns:
            o = q.outs[0]
            decl = "" if o.id in outs else f"{cuda_type(o)} "
            stmts.append(f"{decl}{cnames[o.id]} = {cuda_expr(q, cnames)};")
        ins = ", ".join(f"{cuda_type(v)} {cnames[v.id]}" for v in e.ins
                        if isinstance(v, Var))
        outp = ", ".join(f"{cuda_type(v)} {cnames[v.id]}" for v in e.outs)
        body.append("")
        body.append(f"# {name} as one CUDA kernel: cupy.ElementwiseKernel(inputs, outputs, body, "
                    "name)")
        body.append(f"{name}_cuda = (")
        body.append(f"    {ins!r},")
        body.append(f"    {outp!r},")
        for k, st in enumerate(stmts):
            last = k == len(stmts) - 1
            body.append(f"    {(st if last else st + ' ')!r}{',' if last else ''}")
        body.append(f"    {name!r},")
        body.append(")")


class JitOptions:
    """How the numba backend's module is compiled: `cache` (numba's on-disk cache, beside
    srcgrad's: only for a module that is a file), and the number of elements from which a
    loop runs in parallel threads (`prange`)."""

    def __init__(self, cache: bool = False, parallel_min: int = 1 << 17,
                 python_body: bool = False):
        self.cache = cache
        self.parallel_min = parallel_min
        # large arrays: only the loops are compiled, the function around them stays
        # Python and numpy allocates every array (numba's allocator takes fresh pages
        # for each large array, a page fault per 4 KiB; numpy's asks for huge pages), the
        # loops' private values in scratch arrays reused across calls (`scratch_values`).
        # The build sets it where the variant makes large arrays (jit.large_form).
        self.python_body = python_body

    def decorator(self, mod: _Module, parallel: bool = False, checked: bool = True) -> str:
        """numpy's meaning: an index out of range raises IndexError (numba's default reads
        and writes past the array), a float division by zero gives inf or nan (numba's
        default raises ZeroDivisionError). `checked=False` for a loop over the known shape
        of the arrays it indexes (a fused loop, a reduction, a small product: the guard
        checked the shapes, the IR check that they go together), where checking each
        index costs a fifth of a streaming loop's time."""
        opts = ["cache=True"] * self.cache + ["parallel=True"] * parallel + \
            ["boundscheck=True"] * checked + ["error_model='numpy'"]
        return f"@{mod.g('njit')}({', '.join(opts)})"


def scratch_values(fc) -> list:
    """The scratch values of the numba backend's large-array form and of a numpy variant's
    blocked regions (fusion.block_regions), ([(value, slot)], [(shape, dtype) of each
    slot]): results of `fc`'s top-level loops that may live in arrays reused from one
    call to the next, since nothing sees them after the call; two values whose lives do
    not overlap share a slot. Each is read only by equations that make new arrays from it (a loop, an
    arithmetic op, a sum...: no view, alias, list, stack, loop carry or branch result of
    it), and is neither returned nor read by a nested function. (A loop's results are
    never updated in place: `fusion.FUSED` is not updatable.)"""
    readers: dict = {}

    def walk(eqns):
        for e in eqns:
            for v in e.var_ins():
                readers.setdefault(v.id, []).append(e.prim)
            if e.prim is FUSED:
                continue  # (its region's values are its own)
            for b in e.blocks():
                walk(b.eqns)
                for v in iter_vars(b.outs):  # a block's result: an alias outside it
                    readers.setdefault(v.id, []).append(None)

    walk(fc.eqns)
    kept = {v.id for v in iter_vars(fc.returns)} | set(fc.keep)
    last = {}  # value id -> the last top-level statement that reads it (nested reads too)
    for i, e in enumerate(fc.eqns):
        # (a scatter_add may be written later, where an add absorbs it: what it reads
        # keeps its slot to the end)
        at = len(fc.eqns) if e.prim.adds_at is not None else i
        for v in reads_deep(e):
            last[v] = at
    slots: list = []  # [(shape, dtype), the value in it]
    out = []
    for i, e in enumerate(fc.eqns):
        if e.prim is not FUSED:
            continue
        for o in e.outs:
            if o.id in kept or loop_shape(o) is None or jit_dtype(o) is None or \
                    not all(p is not None and p.fresh for p in readers.get(o.id, ())):
                continue
            kind = (loop_shape(o), jit_dtype(o))
            # a slot whose value no statement from this one on reads (not this loop's
            # inputs, not its other outputs)
            free = [k for k, (kd, held) in enumerate(slots)
                    if kd == kind and last.get(held, -1) < i and
                    held not in {v.id for v in e.outs}]
            if free:
                slots[free[0]][1] = o.id
            else:
                slots.append([kind, o.id])
            out.append((o, free[0] if free else len(slots) - 1))
    return out, [kind for kind, _ in slots]


def reads_deep(e) -> set:
    """Ids of the values equation `e` reads, in its nested blocks too."""
    found = {v.id for v in e.var_ins()}
    if e.prim is not FUSED:
        for b in e.blocks():
            for q in b.eqns:
                found |= reads_deep(q)
            found |= {v.id for v in iter_vars(b.outs)}
    return found


def _emit_scratch(f, mod: _Module, body: list):
    """The module-level pool of `f`'s scratch arrays (`scratch_values`) and the function
    that makes a set of them."""
    if not getattr(f, "scratch", None):
        return
    _, slots, pool, new = f.scratch
    np_ = mod.g("np")
    arrays = [f"{np_}.empty({shape!r}, {np_}.{dtype})" for shape, dtype in slots]
    body += ["", "",
             f"# scratch arrays of {f.module_name}'s loops (values it neither returns nor "
             "keeps): a set per call",
             "# in progress, handed back when it returns and reused by the next call, so "
             "that large",
             "# arrays are not allocated, their pages faulted in, at every call",
             f"{pool} = []", "", "",
             f"def {new}():",
             "    return (" + "".join(f"\n        {a}," for a in arrays) + "\n    )"]


#: results of at least this many bytes are written into arrays reused from call to call
#: (`reuse_result`): below it, numpy's allocator reuses freed memory itself
RESULT_REUSE_MIN = 1 << 20


def result_arrays(fc) -> list:
    """The large results of `fc` that its loops write into arrays it allocates (the
    numba backend's large-array form, a numpy variant's blocked regions): the values it
    returns as they are made, of known shape and dtype, of at least `RESULT_REUSE_MIN`
    bytes. Each gets a pool of the arrays it returned before, one of which it reuses when
    the caller has dropped it (`reuse_result`)."""
    returned = {v.id for v in iter_vars(fc.returns)}
    out = {}
    for e in fc.eqns:
        if e.prim is not FUSED:
            continue
        for o in e.outs:
            shape, dt = loop_shape(o), jit_dtype(o)
            if o.id in returned and shape is not None and dt is not None and \
                    numpy.prod(shape) * numpy.dtype(dt).itemsize >= RESULT_REUSE_MIN:
                out.setdefault(o.id, o)
    return list(out.values())


def _array_for(em, v) -> str:
    """The expression that makes the array a loop writes value `v` into: its scratch
    array, its pool's free array (a large result), else a new one."""
    scratch = getattr(em, "scratch", {}).get(v.id)
    if scratch is not None:
        return scratch
    pool = getattr(em, "results", {}).get(v.id)
    shape, dtype = f"{loop_shape(v)!r}", em.mod.dtype_src(jit_dtype(v))
    if pool is not None:
        return f"{em.mod.g('reuse_result')}({pool}, {shape}, {dtype})"
    return f"{em.mod.g('np')}.empty({shape}, {dtype})"


def _emit_results(f, mod: _Module, body: list):
    """The module-level pools of `f`'s large results (`result_arrays`)."""
    if not getattr(f, "results", None):
        return
    body += ["", "",
             f"# the arrays {f.module_name} returned for its large results, one list per "
             "result: a call reuses",
             "# one its caller no longer holds (reuse_result) rather than having new pages "
             "faulted in"]
    body += [f"{pool} = []" for pool in f.results.values()]


def _item(name: str, v) -> str:
    return name + "[()]" if loop_shape(v) == () else name


def _emit_jit_entry(fc, namer, mod: _Module, inputs, lines):
    """The numba backend's entry: a Python function that holds the guard and calls the
    compiled one, which takes the inputs by position."""
    for v in inputs:
        namer.names.setdefault(v.id, v.hint)
        namer.used.add(namer.names[v.id])
    names = [namer.names[v.id] for v in inputs]
    extra = {v.id for v in fc.extra}  # after the user's parameters (hvp's tangent)
    params = ", ".join([fc.params] * bool(fc.params) +
                       [namer.names[v.id] for v in inputs if v.id in extra]) or \
        ", ".join(names)
    lines.append(f"def {fc.module_name}({params}):")
    if fc.spec is not None:
        lines.extend("    " + ln for ln in _spec_guard(fc, namer, mod))
    numbers_at = len(lines)  # (the form on Python floats goes here)
    for v in fc.as_float:  # (a Python number `wrt`: numba cannot call the helper)
        x = namer.names[v.id]
        lines.append(f"    {x} = {mod.g('as_float')}({x})")
    # the arrays it reads from outside (a global, `self.W`) are read here, in Python, and
    # passed on: numba's code cannot reach a module's dict or an object's attributes
    arrays = _module_arrays(fc)
    _read_module_arrays(fc, namer, _Emitter(namer, mod), "    ", lines)
    names = names + [namer.names[v.id] for v in arrays]
    mod.read_types = [_read_type(v) for v in arrays]
    inner = _Namer(mod.local_reserved)
    mod.namers.append(inner)
    results = _out_results(fc)
    # (numba compiled it for C-ordered arrays: other layouts run the numpy code, as does a
    # call numba cannot finish, a reshape of a strided view inside it, say, or a Python
    # int past int64 that numba cannot take; the compiled code wrote only arrays of its own)
    other_layout = [f"    except ({mod.g('TypeError')}, {mod.g('NotImplementedError')}, "
                    f"{mod.g('OverflowError')}):  "
                    "# another memory layout, a reshape numba cannot do, an int past int64",
                    f"        return {mod.general()}({_spec_args(fc, namer)})"]
    # each gradient in its argument's kind (like_arg): made here, in Python (the compiled
    # function passes it on as it is)
    returned = {v.id for v in iter_vars(fc.returns)}
    later = {e.outs[0].id: e.ins[1] for e in fc.eqns if e.prim is _shapes.like_arg and
             isinstance(e.ins[1], Var) and e.outs[0].id in returned}
    like = mod.g("like_arg") if later else None

    def item_of(name, v):
        x = later.get(v.id)
        got = _item(name, v)
        return got if x is None else f"{like}({got}, {namer.names[x.id]})"
    if results is None and not later and not any(isinstance(v, Var) and loop_shape(v) == ()
                                                 for v in iter_vars(fc.returns)):
        lines.append("    try:")
        lines.append(f"        return {fc.compiled_name}({', '.join(names)})  "
                     "# compiled by numba")
        lines.extend(other_layout)
    elif results is None:  # (a 0-d result, which the compiled function returns as a 0-d
        # array: a numpy scalar, `out[()]`, as numpy's reductions give it)
        got = namer.fresh("out", True)
        lines.append("    try:")
        lines.append(f"        {got} = {fc.compiled_name}({', '.join(names)})  "
                     "# compiled by numba")
        lines.extend(other_layout)
        lines.append(f"    return {_render_paths(fc.returns, got, item_of)}")
    else:
        # numpy allocates the results and the compiled function writes them: numba would
        # box each array it returns (a few hundred ns apiece)
        outer = {v.id: namer.fresh(v.hint, True) for v in results}
        np_ = mod.g("np")
        for v in results:
            lines.append(f"    {outer[v.id]} = {np_}.empty({loop_shape(v)!r}, "
                         f"{mod.dtype_src(jit_dtype(v))})")
        lines.append("    try:")
        lines.append(f"        {fc.compiled_name}({', '.join(names + list(outer.values()))})  "
                     "# compiled by numba: it writes the results")
        lines.extend(other_layout)
        # (a 0-d result as numpy's reductions give it: a numpy scalar, `out[()]`)
        lines.append(f"    return {_render_structure(fc.returns, lambda v: item_of(outer[v.id], v))}")
        fc.out_params = [(v, inner.fresh("out_" + v.hint, True)) for v in results]
        mod.out_types = [(list(loop_shape(v)), jit_dtype(v)) for v in results]
    lines[numbers_at:numbers_at] = _emit_numbers(fc, namer, mod, "    ")
    lines += ["", ""]
    spec, fc.spec = fc.spec, None
    as_float, fc.as_float = fc.as_float, []
    fc.params = ", ".join(namer.names[v.id] for v in inputs if v.id not in extra)
    fc.docstring = "What numba compiles (nopython mode): the guard above has checked " \
        "every argument."
    lines.append(mod.jit.decorator(mod))
    extra_before, fc.extra = fc.extra, list(fc.extra) + arrays  # (parameters, not reads)
    try:
        _emit_function(fc, inner, _Emitter(inner, mod), inputs, "", lines, fc.compiled_name)
    finally:
        fc.spec, fc.as_float, fc.extra = spec, as_float, extra_before
        fc.out_params = None


def _read_type(v):
    """(shape, dtype) of the array `v` reads from outside, as it is now: numba compiles the
    variant for it (another one, read later, makes the call run the numpy code)."""
    a = v.const_value.get()
    return list(getattr(a, "shape", ())), str(getattr(a, "dtype", "float64"))


def _read_fresh(v, blocks) -> bool:
    """`v` is read in these blocks (and the blocks nested in them) only by equations that
    make new arrays from it, and is each block's result once at most (as the carry it
    becomes)."""
    def walk(eqns) -> bool:
        for q in eqns:
            if any(a is v for a in q.var_ins()) and (not q.prim.fresh or q.prim.custom):
                return False
            if q.prim is FUSED:
                continue
            for b in q.blocks():
                if not walk(b.eqns) or any(o is v for o in iter_vars(b.outs)):
                    return False
        return True

    return all(walk(b.eqns) for b in blocks) and \
        all(sum(o is v for o in iter_vars(b.outs)) <= 1 for b in blocks)


def _out_results(fc) -> "list | None":
    """The results of a compiled entry, when numpy may allocate them all before the call
    (arrays of known shapes and dtypes, each once, in tuples, lists and dicts); else
    None."""
    found: list = []

    def walk(obj) -> bool:
        if isinstance(obj, (tuple, list)):
            return all(walk(o) for o in obj)
        if isinstance(obj, dict):
            return all(walk(o) for o in obj.values())
        if isinstance(obj, Var) and obj.kind == "array" and loop_shape(obj) is not None \
                and jit_dtype(obj) is not None and all(v is not obj for v in found):
            found.append(obj)
            return True
        return False

    return found if walk(fc.returns) and found else None


def _loop_names(mod: _Module, params, ndim: int):
    """(namer, emitter, index names) of a loop function of `ndim` nested loops whose
    parameters are `params`."""
    sub = _Namer(mod.local_reserved | set(params))
    mod.namers.append(sub)
    em = _Emitter(sub, mod)
    em.maybe_py = set()
    em.numpy_ties = True
    idx = [sub.fresh(n, True) for n in "ijkl"[:ndim]] if ndim <= 4 else \
        [sub.fresh("i", False) for _ in range(ndim)]
    return sub, em, idx


def _emit_loops(mod: _Module, body: list):
    """The numba backend's fused regions: each a function of explicit loops over the
    region's (known) broadcast shape, one pass over memory; every value of the region is
    a scalar inside the loop, read from its input at the broadcast index and written to
    its output array there."""
    for e, params in mod.regions:
        if e.params.get("places") is not None:
            _emit_placed(mod, e, params, body)
            continue
        region = e.params["region"]
        name = mod.region_name(e)
        values = list(e.ins) + [o for q in region.eqns for o in q.outs]
        shape = tuple(numpy.broadcast_shapes(*(loop_shape(v) for v in values)))
        size = int(numpy.prod(shape))
        sub, em, idx = _loop_names(mod, params, len(shape))
        em.vector_math = size >= _VECTOR_MATH_MIN

        def at(v, arr):
            s = loop_shape(v)
            if not s:
                return f"{arr}[()]"
            off = len(shape) - len(s)
            parts = ["0" if n == 1 and shape[off + k] != 1 else idx[off + k]
                     for k, n in enumerate(s)]
            return f"{arr}[{', '.join(parts)}]"

        items = []  # a 0-d input's item, read once (it may come as a 0-d array or a number)
        for v, p in zip(e.ins, params):
            if loop_shape(v) == ():
                item = sub.fresh(p + "_item", False)
                items.append(f"    {item} = {mod.g('np')}.asarray({p})[()]")
                em.inline[v.id] = item
            else:
                em.inline[v.id] = at(v, p)
        outs = {v.id for v in e.outs}
        arrays = {o.id: sub.fresh(o.hint, True) for o in e.outs}
        # values an equation of the region reads (after the one that makes it: SSA)
        read = {a.id for q in region.eqns for a in q.ins if isinstance(a, Var)}
        parallel = size >= mod.jit.parallel_min and len(shape) > 0
        where = f" ({e.loc.short()})" if e.loc is not None else ""
        given = mod.jit.python_body  # the outputs come allocated
        outs_params = [arrays[o.id] for o in e.outs] if given else []
        signature = f"({', '.join(list(params) + outs_params)})"
        ret = ", ".join(arrays[o.id] for o in e.outs)
        np_ = mod.g("np")
        types = [(len(loop_shape(v)), jit_dtype(v))
                 for v in list(e.ins) + (list(e.outs) if given else [])]

        def loop(fname: str, doc: list, trig: bool) -> None:
            """The loop function `fname`; `trig`: its sines and cosines jit_math's, and it
            returns how many of their arguments were over jit_math.TRIG_FAR."""
            em.vector_trig = trig
            body.extend(["", "", mod.jit.decorator(mod, parallel, checked=False),
                         f"def {fname}{signature}:"] + doc)
            for o in e.outs if not given else ():
                body.append(f"    {arrays[o.id]} = {np_}.empty({loop_shape(o)!r}, "
                            f"{np_}.{jit_dtype(o)})")
            body.extend(items)
            far = sub.fresh("far", True) if trig else None
            if trig:
                body.append(f"    {far} = 0")
            ind = "    "
            for k, (i, n) in enumerate(zip(idx, shape)):
                rng = mod.g("prange") if parallel and k == 0 else mod.g("range")
                body.append(f"{ind}for {i} in {rng}({n}):")
                ind += "    "
            checked: list = []  # the sines' and cosines' arguments
            for q in region.eqns:
                o = q.outs[0]
                text = _norm(em.expr(q, {}))
                if o.id in outs and o.id not in read:
                    body.append(f"{ind}{at(o, arrays[o.id])} = {text}")
                else:
                    if o.id not in sub.names:  # (the exact loop: the fast one's names)
                        sub.names[o.id] = sub.fresh(o.hint, False)
                    local = sub.names[o.id]
                    body.append(f"{ind}{local} = {text}")
                    if o.id in outs:
                        body.append(f"{ind}{at(o, arrays[o.id])} = {local}")
                if trig and q.prim.name in _VECTOR_TRIG and _vector_trig(q):
                    arg = em.src(q.ins[0])
                    if arg not in checked:
                        checked.append(arg)
            if trig:  # (one update: numba's reductions allow no other)
                counts = [f"{mod.g('trig_far')}({arg})" for arg in checked]
                body.append(f"{ind}{far} += " + f" + \\\n{ind}    ".join(counts))
            if trig or not given:  # (given: the caller holds the arrays it gave)
                body.append(f"    return {far if trig else ret}")

        doc = f"Fused elementwise loop{where}: one pass over {shape!r}"
        trig = em.vector_math and given and any(
            q.prim.name in _VECTOR_TRIG and _vector_trig(q) for q in region.eqns)
        if not trig:
            mod.loop_types[name] = types
            loop(name, [f'    """{doc}."""'], False)
            continue
        # sin and cos: jit_math's (a third of the C library's time) where their arguments
        # are within its range, which is nearly always; else the C library's, in a loop
        # numba compiles the first time it is needed
        fast, exact = name + "_vector", name + "_exact"
        mod.loop_types[fast] = types
        loop(fast, [f'    """{doc}, with srcgrad.jit_math\'s sin and cos: returns '
                    'how many of', '    their arguments were over 2**20 (where they are '
                    'nan)."""'], True)
        loop(exact, [f'    """{fast} with the C library\'s sin and cos (any argument; '
                     'compiled at its', '    first call)."""'], False)
        body.extend(["", "", f"def {name}{signature}:",
                     f'    """{doc}: {fast}, and where it finds arguments of sin and cos '
                     f'out of its', f'    range, {exact}."""',
                     f"    if {fast}{signature}:",
                     f"        {exact}{signature}"])


def _vector_trig(e) -> bool:
    """Whether a numba loop may write sin or cos equation `e` as jit_math's (float64)."""
    return isinstance(e.ins[0], Var) and jit_dtype(e.ins[0]) == jit_dtype(e.outs[0]) == \
        "float64"


def _cone(region, v) -> list:
    """The equations of `region` that value `v` needs, in order."""
    need, out = {v.id}, []
    for q in reversed(region.eqns):
        if any(o.id in need for o in q.outs):
            out.append(q)
            need.update(a.id for a in q.var_ins())
    return out[::-1]


def _shared_cones(e, cones) -> list:
    """What two or more terms of sum `e` compute alike (rosenbrock's `x[1:] - x[:-1] **
    2`, in its terms at offsets 0 and 1), computed once per block of rows, over the rows
    the terms cover together, and handed to each term shifted to its offset: [(the terms,
    the equations, the values)], a group of terms of one extent each, shifted along the
    first axis alone; the values are those of the terms' extent (rows line up) that a
    term's own equations read. `cones[k]`: term k's equations (None: an operand)."""
    places = e.params["places"]
    groups: dict = {}
    for k, c in enumerate(cones):
        if c is not None:
            groups.setdefault(tuple(b - a for a, b in zip(*places[k])), []).append(k)
    found = []
    outs = {v.id for v in e.params["region"].outs}
    region = e.params["region"]
    for extent, members in groups.items():
        if len(members) < 2 or len({places[k][0][1:] for k in members}) != 1:
            continue
        count: dict = {}
        for k in members:
            for q in cones[k]:
                count[id(q)] = count.get(id(q), 0) + 1
        others = {id(q) for k, c in enumerate(cones) if c is not None and k not in members
                  for q in c}
        common = {id(q) for k in members for q in cones[k] if count[id(q)] >= 2 and
                  id(q) not in others and
                  all(loop_shape(o) == extent and o.id not in outs for o in q.outs)}
        made = {o.id for k in members for q in cones[k] if id(q) in common for o in q.outs}
        given: dict = {}
        _read_by(cones, members, common, made, given)
        if not given:
            continue
        need: set = set()
        for v in given.values():
            need.update(id(q) for q in _cone(region, v))
        # (what the group computes besides: a term's own value it needs on the way, the
        # cotangent both of two equal terms are, is handed to the terms too)
        by_need = {o.id: o for q in region.eqns if id(q) in need for o in q.outs}
        _read_by(cones, members, need, by_need, given)
        for k in members:
            if region.outs[k].id in by_need:
                given.setdefault(region.outs[k].id, region.outs[k])
        found.append((members, [q for q in region.eqns if id(q) in need],
                      list(given.values())))
    return found


def _read_by(cones, members, inside: set, made, given: dict) -> None:
    """Add to `given` each value of `made` (ids) that an equation of the `members`' cones
    outside `inside` (ids of equations) reads."""
    for k in members:
        for q in cones[k]:
            if id(q) not in inside:
                for a in q.var_ins():
                    if a.id in made:
                        given.setdefault(a.id, a)


def _emit_placed(mod: _Module, e, params, body: list):
    """A sum of terms placed in slices of its result (fusion.shifted_sums): a loop over
    each piece of the result (fusion.segments) in turn, each element the sum of the terms
    that cover it, each term's statements run at its own offset. An index past the loop's
    is an unsigned integer, so that numba reads it without testing for a negative one."""
    from .fusion import segments

    region, out = e.params["region"], e.outs[0]
    name = mod.region_name(e)
    shape = loop_shape(out)
    sub, em, idx = _loop_names(mod, params, len(shape))
    em.vector_math = int(numpy.prod(shape)) >= _VECTOR_MATH_MIN
    np_ = mod.g("np")
    given = mod.jit.python_body  # the result comes allocated
    arr = sub.fresh(out.hint, True)
    places = e.params["places"]
    pieces = segments(places, shape)

    def size(lo, hi):
        return int(numpy.prod([b - a for a, b in zip(lo, hi)]))

    par_min = mod.jit.parallel_min
    parallel = any(size(lo, hi) >= par_min for lo, hi, _ in pieces)
    where = f" ({e.loc.short()})" if e.loc is not None else ""
    body += ["", "", mod.jit.decorator(mod, parallel, checked=False),
             f"def {name}({', '.join(list(params) + ([arr] if given else []))}):",
             f'    """Fused loop{where}: {arr} of {shape!r}, the sum of {len(places)} terms '
             f'placed in slices of it,',
             f'    in {len(pieces)} pieces, one pass over it (a term\'s statements run where '
             'its slice covers it)."""']
    mod.loop_types[name] = [(len(loop_shape(v)), jit_dtype(v))
                            for v in list(e.ins) + ([out] if given else [])]
    if not given:
        body.append(f"    {arr} = {np_}.empty({shape!r}, {np_}.{jit_dtype(out)})")
    items = {}  # a 0-d input's item, read once (it may come as a 0-d array or a number)
    for v, p in zip(e.ins, params):
        if loop_shape(v) == ():
            items[v.id] = sub.fresh(p + "_item", False)
            body.append(f"    {items[v.id]} = {np_}.asarray({p})[()]")
    cones = [_cone(region, v) for v in region.outs]
    for lo, hi, terms in pieces:
        ext = [b - a for a, b in zip(lo, hi)]
        covered = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
        body.append(f"    # {arr}[{covered}]: " + (
            f"{len(terms)} term{'s' * (len(terms) > 1)}" if terms else "no term: zeros"))
        ind = "    "
        for k, (i, n) in enumerate(zip(idx, ext)):
            rng = mod.g("prange") if size(lo, hi) >= par_min and k == 0 else mod.g("range")
            body.append(f"{ind}for {i} in {rng}({n}):")
            ind += "    "
        offsets: dict = {}

        def index(axis, c, ind=ind, offsets=offsets):
            if c == 0:
                return idx[axis]
            if (axis, c) not in offsets:
                offsets[axis, c] = sub.fresh(f"{idx[axis]}{c}" if c < 100 else
                                             f"{idx[axis]}_far", True)
                body.append(f"{ind}{offsets[axis, c]} = {np_}.uint64({idx[axis]} + {c})")
            return offsets[axis, c]

        groups: dict = {}  # a term's offset from the piece -> its terms
        for t in terms:
            groups.setdefault(tuple(a - p for a, p in zip(lo, places[t][0])), []).append(t)
        values = []
        for off, ts in groups.items():
            ext_t = [b - a for a, b in zip(*places[ts[0]])]
            for v, p in zip(e.ins, params):
                s = loop_shape(v)
                if not s:
                    em.inline[v.id] = items[v.id]
                    continue
                first = len(shape) - len(s)
                parts = ["0" if n == 1 and ext_t[first + k] != 1 else
                         index(first + k, off[first + k]) for k, n in enumerate(s)]
                em.inline[v.id] = f"{p}[{', '.join(parts)}]"
            needed = {id(q) for t in ts for q in cones[t]}
            for q in region.eqns:
                if id(q) in needed:
                    o = q.outs[0]
                    local = sub.fresh(o.hint, False)
                    text = _norm(em.expr(q, {}))
                    sub.names[o.id] = local
                    body.append(f"{ind}{local} = {text}")
            values += [em.src(region.outs[t]) for t in ts]
        dest = ", ".join(index(k, a) for k, a in enumerate(lo))
        body.append(f"{ind}{arr}[{dest}] = {' + '.join(values) or '0'}")
    if not given:  # (given: the caller holds the array it gave)
        body.append(f"    return {arr}")


def _known_float(v) -> bool:
    """Is `v` an array of one known floating dtype (a variant's: `('f', '<f8')`)?"""
    return isinstance(v, Var) and isinstance(v.dclass, tuple) and len(v.dclass) == 2 and \
        v.dclass[0] == "f" and isinstance(v.dclass[1], str)


def _ufunc_name(prim) -> "str | None":
    """The name of the numpy ufunc (one result) an elementwise op calls, or None."""
    name = getattr(prim.impl, "__name__", None) if prim.elementwise else None
    f = getattr(numpy, name, None) if name else None
    ok = isinstance(f, numpy.ufunc) and f.nout == 1 and getattr(numpy, f.__name__, None) is f
    return f.__name__ if ok else None  # (np.true_divide is np.divide)


def _compiled_body(mod: _Module) -> bool:
    """Is the function being written compiled by numba (not only its loops)?"""
    return mod.jit is not None and not mod.jit.python_body


def _minus(text: str, k: int) -> str:
    """The source of `text - k` (`text` an int's source)."""
    try:
        return str(int(text) - k)
    except ValueError:
        if not k:
            return text
        return f"({text}) - {k}" if not text.isidentifier() else f"{text} - {k}"


def _numba_dtype(dt) -> "str | None":
    """numpy's name of the scalar type of dtype `dt` (a name, a type, a dtype) as numba
    takes it (`float64`, `bool_`), or None for a dtype numba's loops do not hold."""
    if isinstance(dt, Var):
        return None
    try:
        d = numpy.dtype(dt)
    except TypeError:
        return None
    if not d.isnative or d.kind not in "biuf":
        return None
    return "bool_" if d.kind == "b" else d.name


def _jit_scatter(e) -> bool:
    """A scatter_add written as `out = np.zeros(shape); out[idx] = g` (numba: `+= g`):
    a constant basic index (slices and integers: no element is hit twice) into an array
    of known shape and dtype."""
    from runtime.ops.shapes import is_basic_index

    if e.prim.name != "scatter_add" or e.prim.adds_at is None:
        return False
    idx = e.ins[e.prim.adds_at]
    return not isinstance(idx, Var) and is_basic_index(idx) and not _valid_on_0d(idx) and \
        loop_shape(e.outs[0]) is not None and jit_dtype(e.outs[0]) is not None


_REDUCE_INIT = {"sum": "0.0", "mean": "0.0", "max": "-np.inf", "min": "np.inf"}


def _loop_reduction(e) -> bool:
    """A reduction the numba backend writes as a loop: sum, mean, max or min of a float
    array whose shape the IR knows, over axes that are not empty."""
    if e.prim.name not in _REDUCE_INIT or len(e.ins) != 1 or not isinstance(e.ins[0], Var):
        return False
    x, o = e.ins[0], e.outs[0]
    shape = loop_shape(x)
    if shape is None or loop_shape(o) is None or jit_dtype(x) not in ("float64", "float32") \
            or jit_dtype(o) != jit_dtype(x):
        return False
    return all(n > 0 for k, n in enumerate(shape) if k in _reduced_axes(e, len(shape)))


#: the most multiply-adds of a product the numba backend writes as a loop: below, calling
#: BLAS (its checks, its dispatch) costs more than the product
SMALL_PRODUCT = 256


def _loop_product(e) -> bool:
    """A matmul of a matrix and a matrix or vector (or a vector and a matrix), float64 or
    float32, of known shapes, with at most SMALL_PRODUCT multiply-adds."""
    if e.prim.name != "matmul" or len(e.ins) != 2 or \
            not all(isinstance(v, Var) for v in e.ins):
        return False
    sa, sb = loop_shape(e.ins[0]), loop_shape(e.ins[1])
    dt = {jit_dtype(v) for v in list(e.ins) + list(e.outs)}
    if sa is None or sb is None or dt not in ({"float64"}, {"float32"}) or \
            not (1 <= len(sa) <= 2 and 1 <= len(sb) <= 2) or len(sa) + len(sb) < 3 or \
            loop_shape(e.outs[0]) is None:
        return False
    return int(numpy.prod(sa)) * (sb[-1] if len(sb) == 2 else 1) <= SMALL_PRODUCT


def _emit_products(mod: _Module, body: list):
    """The numba backend's small products: each a function of three (two) explicit loops,
    summing in the product's dtype as BLAS does."""
    np_ = mod.g("np")
    for e, name in mod.products:
        a, b, o = e.ins[0], e.ins[1], e.outs[0]
        sa, sb, so = loop_shape(a), loop_shape(b), loop_shape(o)
        dt = jit_dtype(o)
        where = f" ({e.loc.short()})" if e.loc is not None else ""
        mod.loop_types[name] = [(len(sa), jit_dtype(a)), (len(sb), jit_dtype(b))]
        i_ = ["i"] if len(sa) == 2 else []
        j_ = ["j"] if len(sb) == 2 else []
        body += ["", "", mod.jit.decorator(mod, checked=False), f"def {name}(a, b):",
                 f'    """a @ b of {sa!r} and {sb!r}{where}, as a loop."""',
                 f"    out = {np_}.empty({so!r}, {np_}.{dt})"]
        ind = "    "
        if i_:
            body.append(f"{ind}for i in {mod.g('range')}({sa[0]}):")
            ind += "    "
        if j_:
            body.append(f"{ind}for j in {mod.g('range')}({sb[1]}):")
            ind += "    "
        body += [f"{ind}acc = {np_}.{dt}(0.0)",
                 f"{ind}for k in {mod.g('range')}({sa[-1]}):",
                 f"{ind}    acc += a[{', '.join(i_ + ['k'])}] * b[{', '.join(['k'] + j_)}]",
                 f"{ind}out[{', '.join(i_ + j_)}] = acc"]
        body.append("    return out")


def _reduced_axes(e, ndim: int) -> set:
    axis = {**e.prim.defaults, **e.params}["axis"]
    if axis is None:
        return set(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return {a % ndim for a in axes}


def _emit_reductions(mod: _Module, body: list):
    """The numba backend's reductions: each a function of explicit loops over its input,
    accumulating into the output at the index with the reduced axes dropped (or 0 where
    they are kept). A NaN propagates through max and min as it does in numpy."""
    np_ = mod.g("np")
    for e, name in mod.reductions:
        x, o = e.ins[0], e.outs[0]
        shape, out_shape = loop_shape(x), loop_shape(o)
        keep = {**e.prim.defaults, **e.params}["keepdims"]
        axes = _reduced_axes(e, len(shape))
        sub = _Namer(mod.local_reserved | {"x", "out"})
        mod.namers.append(sub)
        idx = [sub.fresh(n, True) for n in "ijkl"[:len(shape)]] if len(shape) <= 4 else \
            [sub.fresh("i", False) for _ in shape]
        parts = [("0" if k in axes else i) for k, i in enumerate(idx)
                 if keep or k not in axes]
        at = f"out[{', '.join(parts)}]" if parts else "out[()]"
        item = f"x[{', '.join(idx)}]" if idx else "x[()]"
        kind = e.prim.name
        init = _REDUCE_INIT[kind].replace("np.", np_ + ".")
        where = f" ({e.loc.short()})" if e.loc is not None else ""
        mod.loop_types[name] = [(len(shape), jit_dtype(x))]
        # a float32 sum adds in float64: one float32 add per element loses about 1e-3 of
        # 60000 terms, where numpy's pairwise sum keeps float32's precision
        wide = kind in ("sum", "mean") and jit_dtype(o) == "float32"
        body += ["", "", mod.jit.decorator(mod, checked=False), f"def {name}(x):",
                 f'    """{kind} over axes {tuple(sorted(axes))} of {shape!r}{where}, '
                 'as a loop' + (" (added in float64)" if wide else "") + '."""',
                 f"    out = {np_}.full({out_shape!r}, {init}, "
                 f"{np_}.{'float64' if wide else jit_dtype(o)})"]
        ind = "    "
        for i, n in zip(idx, shape):
            body.append(f"{ind}for {i} in {mod.g('range')}({n}):")
            ind += "    "
        if kind in ("sum", "mean"):
            body.append(f"{ind}{at} += {item}")
        else:
            v = sub.fresh("v", True)
            cmp = ">" if kind == "max" else "<"
            body += [f"{ind}{v} = {item}",
                     f"{ind}if {v} {cmp} {at} or {v} != {v}:  # (NaN wins, as in numpy)",
                     f"{ind}    {at} = {v}"]
        if kind == "mean":
            count = int(numpy.prod([shape[k] for k in axes]))
            body.append(f"    out /= {count}")
        # (a reduction to one number gives a number, as numpy's does: not a 0-d array,
        # which numba would not add to a float in place)
        result = "out[()]" if out_shape == () else "out"
        body.append(f"    return {np_}.float32({result})" if wide and out_shape == () else
                    f"    return out.astype({np_}.float32)" if wide else f"    return {result}")


def _custom_ops(fcs) -> dict:
    """name -> op, for the user's ops the functions call (by the op's name)."""
    ops = {}

    def visit(eqns):
        for e in eqns:
            if getattr(e.prim, "custom", False):
                ops[e.prim.name] = e.prim
            for b in e.blocks():
                visit(b.eqns)
            if e.prim is FUSED:
                visit(e.params["region"].eqns)

    for fc in fcs:
        visit(fc.eqns)
    return ops


def _fused(eqns):
    for e in eqns:
        if e.prim is FUSED:
            yield e
        for b in e.blocks():
            yield from _fused(b.eqns)


def _verbatim(eqns):
    for e in eqns:
        if e.prim is PYTHON:
            yield e
        for b in e.blocks():
            yield from _verbatim(b.eqns)


def _functions(fc: FunctionCode) -> list:
    """`fc`, the closure it returns and its same-shape variant."""
    out = [fc]
    if fc.nested:
        out += _functions(fc.nested[0])
    if fc.fast is not None:
        out += _functions(fc.fast[0])
    return out


def emit_module(fc: FunctionCode, inputs, header: str, jit=None) -> ModuleCode:
    """The module source for `fc` (and its same-shape variant `fc.fast`, whose inputs are
    `fc.fast[0].inputs`) and the module-level names the caller must bind. With `jit` (a
    JitOptions), the module is for the numba backend: `fc` is specialized (`fc.spec`), its
    guard stays in Python and the rest of it is compiled by numba, with each fused
    region written as a function of explicit loops (`_emit_loops`)."""
    _own_returns(fc)
    ops = _custom_ops(_functions(fc))
    clashes: set = set()
    while True:
        code, found = _emit_planned(fc, inputs, header, ops, clashes, jit)
        if not found:
            return code
        if found <= clashes:
            raise AssertionError(f"codegen: names {sorted(found)} keep clashing")
        clashes |= found


def _own_returns(fc):
    """Copy what the functions would return that the caller does not own (srcgrad.fresh)."""
    for f in _functions(fc):
        if f.owned:
            f.eqns, f.returns = fresh_returns(f.eqns, f.returns, f.primal)
            checked(Graph([], f.eqns, [f.returns]), "fresh returns")


def _emit_planned(fc, inputs, header, ops, clashes, jit=None):
    """(ModuleCode, set()) or (None, names the code read that a local or parameter
    took: the plan must steer clear of them).

    (Complexity about 27: the module's parts in order, each a short step.)"""
    extra = {v.id for v in fc.extra}  # named like locals, not kept like the user's
    params = {v.hint for v in inputs if v.id not in extra}
    mod = _Module(params, clashes, ops, jit)
    # a numpy variant's arrays of known shapes: reductions and transposes as methods
    mod.array_methods = jit is None and fc.spec is not None
    if mod.array_methods and getattr(fc, "f64_operands", False):
        f64s: set = set()
        for f in _functions(fc):
            _f64_operands(f.eqns, f64s)
        for value in sorted(f64s, key=float):
            mod.bind_f64(float(value))
    tops = [(fc, inputs)]
    if fc.fast is not None:
        tops.append((fc.fast[0], fc.fast[0].inputs))
    for f, _ in tops:
        f.module_name = mod.bind(f.name)
        if jit is not None:
            f.compiled_name = f.module_name if jit.python_body else \
                mod.bind(f.name + "_compiled")
    for f, _ in tops:
        # (arrays of a size worth keeping: the numba backend's large form, a numpy
        # variant's blocked regions)
        if (jit.python_body if jit is not None else f.spec is not None) and not f.nested:
            values, slots = scratch_values(f)
            if values:
                f.scratch = (values, slots, mod.bind(f"{f.name}_scratch"),
                             mod.bind(f"new_{f.name}_scratch"))
            f.results = {v.id: mod.bind(f"{f.name}_{v.hint}_arrays")
                         for v in result_arrays(f)}
    for f in _functions(fc):  # module-level names first: no local may take one
        numbers = getattr(f, "numbers", None)  # (a variant's straight-line program)
        f.number_form = None if numbers is None or f.spec is None or f.extra or f.nested \
            else _scalars.plan(numbers[0], numbers[1], f.spec, {v.id for v in f.as_float})
        if f.number_form is not None:
            mod.module("math", "math")
        for _, what in f.spec or ():  # a specialized variant's dtypes and fallback
            if isinstance(what, tuple):
                mod.dtype(what[1])
        if f.spec is not None:
            mod.general()
        for v in _module_arrays(f):
            mod.holder(v.const_value.scope)
        for e in _fused(f.eqns):
            mod.region_name(e)
            if e.params.get("places") is not None and jit is None:
                mod.term_names(e)
        for e in _verbatim(f.eqns):
            for name, how in e.params["code"].fixed.items():
                if how[0] == "module":
                    mod.module(how[1], name)
    body: list[str] = []
    for f, ins in tops:
        namer = _Namer(mod.local_reserved)
        mod.namers.append(namer)
        if body:
            body += ["", ""]
        if jit is not None and not jit.python_body:
            _emit_jit_entry(f, namer, mod, ins, body)
        else:
            _emit_function(f, namer, _Emitter(namer, mod), ins, "", body, f.module_name)
    for f, _ in tops:
        _emit_scratch(f, mod, body)
        _emit_results(f, mod, body)
    if jit is not None:
        _emit_loops(mod, body)
        _emit_reductions(mod, body)
        _emit_products(mod, body)
    else:
        _emit_regions(mod, body)
    taken = params.union(*(n.names.values() for n in mod.namers))
    found = {n for n in mod.reads if n not in mod.alias and n in taken}
    if found:
        return None, found
    scopes = {name: scope for name, scope in mod.scopes.values()}
    bound_ops = {mod.alias.get(n, n): op for n, op in ops.items() if n in mod.reads}
    imported = {n: _op_location(op) for n, op in bound_ops.items()}
    imported = {n: loc for n, loc in imported.items() if loc is not None}
    text = "\n".join([header] + _imports(mod) + _op_imports(imported) +
                      _bound(scopes, {n: op for n, op in bound_ops.items()
                                      if n not in imported}) + _variant_names(mod) +
                      ["", ""] + body) + "\n"
    code = ModuleCode(text, fc.module_name, mod.alias.get("np", "np"), scopes, bound_ops,
                      mod.fallback)
    code.ndarray_name = mod.alias.get("ndarray", "ndarray")
    code.loops = mod.loop_types
    code.out_types = getattr(mod, "out_types", [])
    code.read_types = getattr(mod, "read_types", [])
    return code, set()


def _variant_names(mod: _Module) -> list:
    """A specialized variant's module-level names: the dtypes its guard compares with, and
    the general function it hands other calls to (srcgrad binds it when it loads the
    module; printed and run alone, the module refuses such calls)."""
    np_ = mod.alias.get("np", "np")
    lines = [f"{name} = {np_}.dtype({d!r})" for d, name in mod.dtypes.items()]
    if mod.f64_read:
        lines += ["# numbers as 0-d float64 arrays: numpy computes an array's product, sum... "
                  "with one", "# about 0.2 µs sooner than with a Python number, to the same "
                  "float64 result"]
        lines += [f"{name} = {np_}.array({v})" for v, name in mod.f64s.items()
                  if v in mod.f64_read]
    if mod.fallback is not None:
        lines += ["", "", f"def {mod.fallback}(*args, **kwargs):",
                  "    # bound by srcgrad to the shape-polymorphic function",
                  '    raise TypeError("this module was specialized to other shapes and '
                  'dtypes of its arguments")']
    return ([""] if lines else []) + lines


def _op_location(op):
    """(module, name) a user's op can be imported by: a module-level name that is bound to
    the op itself (its own name first). None for an op made inside a function (a factory's,
    a closure's): srcgrad binds it when it loads the module."""
    import sys

    modname = getattr(op, "__module__", None)
    if not isinstance(modname, str) or not all(
            p.isidentifier() and not keyword.iskeyword(p) for p in modname.split(".")):
        return None
    module = sys.modules.get(modname)
    if module is None:
        return None
    name = getattr(op, "__name__", None)
    if isinstance(name, str) and getattr(module, name, None) is op:
        return modname, name
    for key, value in list(vars(module).items()):
        if value is op and key.isidentifier() and not keyword.iskeyword(key):
            return modname, key
    return None


def _op_imports(imported: dict) -> list:
    """Import lines for the user's ops that are module-level names: the printed module then
    runs on its own (srcgrad still binds the very op when it loads the module)."""
    return [f"from {mod} import {attr}" + ("" if attr == name else f" as {name}")
            for name, (mod, attr) in sorted(imported.items())]


def _bound(scopes, ops) -> list:
    """Comment lines naming what srcgrad binds when it loads the module."""
    if not scopes and not ops:
        return []
    return (["# bound by srcgrad when it loads this module (arrays are read at every call):"] +
            [f"#   {name}: {scope.what}" for name, scope in scopes.items()] +
            [f"#   {name}: the op {op.name!r}" for name, op in ops.items()])


def _imports(mod: _Module) -> list:
    def name(n):
        return n if n not in mod.alias else f"{n} as {mod.alias[n]}"

    lines = [f"import numpy as {mod.alias.get('np', 'np')}"]
    if mod.jit is not None:
        lines.append(f"from numba import {', '.join(name(n) for n in sorted(_JIT_NAMES))}")
        math = sorted(_JIT_MATH & mod.reads)
        if math:
            lines.append(f"from srcgrad.jit_math import {', '.join(name(n) for n in math)}")
    for modname, bound in sorted(mod.modules.items()):
        lines.append(f"import {modname}" if bound == modname else
                     f"import {modname} as {bound}")
    if "ndarray" in mod.reads:
        lines.append(f"from numpy import {name('ndarray')}")
    if mod.helpers:
        lines.append(f"from runtime.ops.helpers import "
                     f"{', '.join(name(n) for n in sorted(mod.helpers))}")
    renamed = sorted(n for n in mod.reads & set(mod.alias) if hasattr(builtins, n) and
                     n not in mod.helpers and n not in ("np", "ndarray") and n not in mod.ops)
    renamed = [name(n) for n in renamed] + [f"{n} as {a}" for n, a in sorted(mod.builtins.items())]
    if renamed:  # builtins a parameter or an op helper hides
        lines.append(f"from builtins import {', '.join(renamed)}")
    return lines
