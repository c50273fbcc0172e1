"""The user-facing transformations: `grad`, `value_and_grad`, `vjp`, `show`.

Each returns (or builds) a compiled function object. The first call, or the first look at
`.source` / `.ir`, runs the pipeline parse -> lower -> reverse -> optimize -> codegen, or
loads the generated module from the disk cache; later calls go straight to the generated
function (no parsing, hashing or signature inspection). The generated code is
shape-polymorphic, so new shapes and dtypes reuse it.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import linecache
import os
import sys
import threading
import types
import warnings
import weakref
from typing import IO, Any, Callable, Sequence, Union, overload

import numpy as np

from runtime import ops
from runtime import backend as _backend
from runtime.cupy_backend import NumpyOnCupy, kernel as cupy_kernel, namespace as cupy_namespace
from runtime.cupy_backend import to_device as cupy_to_device

from . import cache as _cache
from . import guards as _guards
from . import pytree as _pytree
from . import scopes as _scopes
from . import specialize as _specialize
from . import verbatim as _verbatim
from .codegen import FunctionCode, JitOptions, emit_module
from .errors import (InternalError, NotDifferentiableError, OutputTypeError, SrcgradError,
                     WrtError)
from .frontend import parse_function
from .ir import POP, PYTHON, SCALAR, Graph, checked, Var, iter_vars, referenced, subst, unsound_uses
from .lower import lower, numpy_where_derivative
from .staging import staging
from .fresh import copied_inputs, roots_of
from .optimize import (batch_step_products, hoist_indexed_products, hoist_step_maps, optimize,
                       stacks_as_steps, sum_steps_first)
from .reverse import CarryClassDisproved, carry_classes_unassumed, reverse

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian", "show",
           "clear_cache", "CompiledFunction", "GradFunction", "ValueAndGradFunction",
           "VJPFunction", "JVPFunction", "HVPFunction", "HessianFunction", "JacobianFunction",
           "ForwardJacobianFunction", "NestedGradFunction", "Wrt"]

#: what `wrt` (and `argnums`, `argnum`) take: a parameter index or name, or a tuple of them
Wrt = Union[int, str, Sequence[Union[int, str]]]

_LIVE: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()
_CUPY_NAME = "cupy"
_MODULES = sys.modules
_DASK_NAME = "dask.array"  # in sys.modules once the user has dask arrays


def _signature(fun) -> inspect.Signature:
    """The parameters of the code srcgrad compiles for `fun` (a decorator's wrapper's own,
    `def w(y, n=3.0)`, not those of what it wraps, which inspect.signature reports; a
    transparent wrapper's, those of what it passes its arguments to: scopes.unwrap)."""
    return inspect.signature(_scopes.unwrap(fun), follow_wrapped=False)


def _call_method(fun):
    """An object whose class defines `__call__` in Python (a model, a loss): its class's
    `__call__` bound to it (what `fun(x)` runs: an instance attribute does not count), a
    method like any other."""
    call = getattr(type(fun), "__call__", None)
    if isinstance(fun, type) or not isinstance(call, types.FunctionType):
        return fun
    return types.MethodType(call, fun)


def _resolve_wrt(fun, wrt, argnums, src=None):
    """(tuple of parameter indices, whether the user asked for a tuple)."""
    if argnums is not None:
        if wrt != 0:
            raise TypeError("pass either wrt= or argnums=, not both")
        items = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
        if not all(isinstance(i, int) for i in items):
            raise TypeError("argnums= takes parameter indices (ints); use wrt= for names")
        wrt = tuple(argnums) if isinstance(argnums, (tuple, list)) else argnums
    as_tuple = isinstance(wrt, (tuple, list))
    items = tuple(wrt) if as_tuple else (wrt,)
    params = list(_signature(fun).parameters.values())
    names = [p.name for p in params]
    idx = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise TypeError(f"wrt must be a parameter index or name, got {w!r}")
        if isinstance(w, int):
            i = w + len(params) if w < 0 else w
            if not 0 <= i < len(params):
                raise _wrt_error(fun, f"wrt={w} is out of range: {fun.__name__}() has "
                                 f"{len(params)} parameter(s) ({', '.join(names)})")
        else:
            if w not in names:
                raise _wrt_error(fun, f"wrt={w!r} names no parameter of {fun.__name__}() "
                                 f"(its parameters: {', '.join(names)})")
            i = names.index(w)
        if params[i].kind in (params[i].VAR_POSITIONAL, params[i].VAR_KEYWORD):
            raise _wrt_error(fun, f"wrt={w!r} is a *args/**kwargs parameter")
        idx.append(i)
    if len(set(idx)) != len(idx):
        raise TypeError(f"wrt names a parameter twice: {wrt!r}")
    return tuple(idx), as_tuple


def _wrt_error(fun, msg):
    code = getattr(fun, "__code__", None)
    if code is None:
        return WrtError(msg)
    import linecache

    line = linecache.getline(code.co_filename, code.co_firstlineno)
    return WrtError(msg, code.co_filename, code.co_firstlineno, 0, line)


def _ident(name: str) -> str:
    """A function's name as part of a Python identifier (`<lambda>` -> `lambda`)."""
    out = "".join(c if c.isalnum() or c == "_" else "" for c in name)
    return out or "function"


def _signature_text(tree: ast.FunctionDef) -> str:
    a = tree.args
    parts = [p.arg for p in a.posonlyargs]
    if a.posonlyargs:
        parts.append("/")
    parts += [p.arg for p in a.args]
    if a.vararg:
        parts.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        parts.append("*")
    parts += [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        parts.append("**" + a.kwarg.arg)
    return ", ".join(parts)


class CompiledFunction:
    """A transformed function: compiled on first use, then called directly."""

    kind = "grad"
    __srcgrad_transformed__ = True  # what the lowerer checks: it never inlines one
    #: with dask arrays among the arguments: compute the results (one dask.compute over all
    #: of them) instead of returning them lazy; set by grad(..., compute=True)
    compute = False
    #: whether calls repeated with one signature get a variant specialized to it
    #: (srcgrad.specialize); set by grad(..., specialize=False) and value_and_grad
    specialize = False
    #: "numpy", or "numba": each signature's variant is compiled by numba (srcgrad.jit);
    #: set by grad(..., backend="numba") and value_and_grad
    backend = "numpy"
    #: with backend="numba": numba compiles the loops only, whatever the arrays' sizes
    #: (the large-array form, codegen.JitOptions.python_body)
    jit_loops_only = False

    def __init__(self, fun: Callable[..., Any], wrt: Wrt = 0, has_aux: bool = False,
                 argnums: Wrt | None = None, cache: bool = True, fuse: bool = True) -> None:
        if isinstance(fun, CompiledFunction) and not isinstance(self, NestedGradFunction):
            raise _composition_error(self.kind, fun)
        if not callable(fun):
            raise TypeError(f"srcgrad.{self.kind} needs a function, got {type(fun).__name__}")
        if not isinstance(fun, (types.FunctionType, types.MethodType)) and \
                _call_method(fun) is fun and isinstance(_scopes.unwrap(fun), types.FunctionType):
            # a wrapper not written in Python (functools.lru_cache's): its function's
            # values, and its function's code to compile
            fun = _scopes.unwrap(fun)
        self._object = fun if _call_method(fun) is not fun else None  # (a callable object)
        fun = _call_method(fun)
        if isinstance(fun, types.MethodType) and \
                not isinstance(fun.__func__, types.FunctionType):
            raise TypeError(f"srcgrad.{self.kind} of {fun.__qualname__}: a method of a "
                            "built-in or C type has no source to transform")
        self.fun = fun
        self.wrt_index, self.wrt_tuple = _resolve_wrt(fun, wrt, argnums)
        self.has_aux = bool(has_aux)
        self.use_disk_cache = bool(cache)
        self._impl = None
        self._call = None  # what a numpy call runs: _impl, or a specialized variant first
        # a default value that is a structure (`cfg={"k": 2.0}`): calls take the structured
        # path (srcgrad.pytree), which passes its leaves as arguments
        self._tree_defaults = _structured_defaults(fun)
        self._variants = None  # srcgrad.specialize.Variants, once compiled
        self._stored_key = None  # (sig, key) of the variant `_variant_stored` looked for
        self._check = None  # whether what it read at compile time still holds
        self._gpu = None
        # cupy variants (by signature), calls seen per signature (None: given up), and
        # calls that got none
        self._gpu_found, self._gpu_seen, self._gpu_misses = {}, {}, 0
        self._dask = None  # the generated function bound to numpy's API on dask
        self._module = None
        self._code = None  # bytecode of the cached module, when the disk cache had it
        self._fused = None
        self.fuse = fuse
        self._source = None
        self._graph = None
        self.compile_count = 0
        self.variant_count = 0  # specialized variants compiled (srcgrad.specialize)
        self._spec_sources = {}  # signature -> the source of its variant
        self.cache_path = None
        self._compile_lock = threading.RLock()
        self._bound = {}  # id(obj) -> (weakref to obj, the transformation bound to it)
        self._ops = {}  # name in generated code -> the user's op it calls
        self._tree = None  # an entry for structured arguments: their treedefs (pytree)
        self._parent = None  # ... and the transformation it is an entry of
        self._entries = {}  # treedefs -> the entry compiled for them
        self._last_entry = None
        self._names = None  # the parameters' names (structured calls)
        functools.update_wrapper(self, fun)
        _LIVE.add(self)

    # -- the pipeline ----------------------------------------------------------------------

    def _options(self) -> dict:
        opts = {"kind": self.kind, "wrt": self.wrt_index, "tuple": self.wrt_tuple,
                "aux": self.has_aux}
        if self._tree is not None:
            opts["tree"] = "|".join(_pytree.describe(t) for t in self._tree)
        return opts

    def _build(self, fused: bool = False, spec=None, jit=None):
        """Run the pipeline: (source, meta) of the generated module, and the IR. With
        `fused`, runs of elementwise work become kernels (see srcgrad.fusion). grad and
        value_and_grad of several arguments also get a fast path: a second function for
        calls whose `wrt` arguments are float arrays of one shape and dtype, in which no
        broadcasting is undone and no dtype is cast (a cheap guard picks it)."""
        self._fast_useful = False
        self._reads = []
        if spec is not None:
            fc, inputs, header, opt = self._build_one(fused, spec=spec, jit=jit)
            code = emit_module(fc, inputs, header, jit=jit)
            meta = self._meta(code, bool(self._extra) or self._tree is not None)
            if jit is not None:  # what numba compiles
                meta["compiled"] = None if jit.python_body else fc.compiled_name
                meta["loops"] = code.loops
                meta["outs"] = code.out_types  # the compiled entry's result arrays
                meta["reads"] = code.read_types  # ... and the arrays it reads from outside
            return code.text, meta, opt
        fc, inputs, header, opt = self._build_one(fused)
        if self.kind in ("grad", "value_and_grad") and len(self.wrt_index) > 1 and \
                not fused and self._fast_useful and self._tree is None:
            fast, fast.inputs, _, _ = self._build_one(False, same=True)
            params = self._param_names()
            fc.fast = (fast, [params[i][0] for i in self.wrt_index], params)
        code = emit_module(fc, inputs, header)
        return code.text, self._meta(code, bool(self._extra) or self._tree is not None), opt

    def _meta(self, code, positional: bool) -> dict:
        """What binding the module needs: its entry, the name numpy has in it, and its
        module-level names (described for another process, and, under "_live", the very
        objects this build saw: never written to the disk cache)."""
        live = {n: s.obj for n, s in code.scopes.items()}
        live.update(code.ops)
        guards = {}
        for reads in self._reads:
            for key, guard in reads.final_guards().items():
                guards.setdefault(key, guard)
        guards = list(guards.values())
        return {"entry": code.entry, "numpy": code.numpy_name, "positional": positional,
                "fallback": code.fallback, "ndarray": code.ndarray_name,
                "scopes": {n: _scopes.describe(s, self.fun) for n, s in code.scopes.items()},
                "ops": {n: _cache.op_fingerprint(op) for n, op in code.ops.items()},
                "guards": None if any(r.by_identity for r in self._reads) else
                _guards.describe(guards, self.fun), "_live": live,
                "_guards": guards}

    def _param_names(self):
        """(name, keyword-only) of each parameter; `*args` and `**kwargs` spelled so."""
        star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
        return [(star.get(p.kind, "") + p.name, p.kind == p.KEYWORD_ONLY)
                for p in _signature(self.fun).parameters.values()]

    def _build_one(self, fused: bool = False, same: bool = False, spec=None, jit=None):
        """`_build_one_now`, made again where an adjoint loop's assumption on the shape of
        the cotangent it carries does not hold (srcgrad.reverse)."""
        try:
            return self._build_one_now(fused, same, spec, jit)
        except CarryClassDisproved:
            with carry_classes_unassumed():
                return self._build_one_now(fused, same, spec, jit)

    def _build_one_now(self, fused: bool = False, same: bool = False, spec=None, jit=None):
        # the prologue makes the `wrt` arguments floating (as_float); jvp takes its
        # primals as they come
        floats = self._float_params()
        # (a Python float: a float64 scalar, which computes as it does; with an array of
        # another dtype, numpy's rules for a Python scalar keep that array's dtype, where
        # float64's would not: the classes differ, so the result's dtype stays unknown)
        known = None if spec is None else [
            w if isinstance(w, tuple) else ((), "float64") if w is float else None
            for w in spec]
        graph, src, reads = lower(self.fun, same=self.wrt_index if same else (), floats=floats,
                                  trees=self._tree, spec=known)
        self._reads.append(reads)
        if not same and spec is None and self._tree is None:
            self._fast_useful = _wrt_meet(graph, self.wrt_index)
        wrt = [v for i in self.wrt_index for v in graph.param_leaves[i]]
        result = graph.outputs[0]
        if self.has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"{self.fun.__name__} was transformed with has_aux=True, so "
                                "it must return a pair (output, aux)")
            out, aux = result
        else:
            out, aux = result, None
        _check_output(out, src, self.kind)
        check_sound(graph.eqns, [out], wrt + self._also_active(graph))
        fwd = checked(Graph(graph.inputs, hoist_indexed_products(graph.eqns, jit is None,
                                                                 graph.inputs),
                            [out], graph.name, graph.named), "lowering", extra_inputs=())
        self._extra = []  # inputs the generated function takes after the user's parameters
        # the `wrt` arguments the prologue makes floating (as_float): all but the float
        # arrays a variant's guard has checked
        as_float = [] if same else wrt
        if spec is not None:  # float arrays by the guard need no as_float
            floating = {v.id for v, w in zip(graph.inputs, spec)
                        if isinstance(w, tuple) and w[1].kind == "f"}
            as_float = [v for v in wrt if v.id not in floating]
        # the gradients given their argument's kind and dtype at run time (`like_arg`):
        # every one (in a variant, the optimizer drops it where the gradient is known to
        # be an array of its argument's shape and dtype already)
        self._like_arg = set() if same else {v.id for v in wrt}
        b, returns, check, nested = self._adjoint(fwd, wrt, out, aux)
        # the value whose shape is checked at run time is an output like the others: the
        # optimizer may replace it (`a + a` -> `2 * a`) and fusion must keep it
        outs = [returns] if check is None else [returns, check]
        at = self._value_at()
        before = roots_of(b.eqns) if at is not None else None
        opt = optimize(Graph(graph.inputs, b.eqns, outs, graph.name), named=b.named)
        if at is not None:  # (f's own value, as numpy makes it)
            opt.outputs[0] = copied_inputs(graph.inputs, outs[0], opt, at, before)
        opt.check(extra_inputs=self._extra + ([self._seed] if self.kind == "vjp" else []))
        # (a variant's program as optimized, before fusion or blocking: its form on Python
        # floats is written from it where the signature holds numbers, srcgrad.scalars)
        numbers = (list(opt.eqns), opt.outputs[0]) if spec is not None and check is None \
            and not fused else None  # (not on a device: the numbers would come to the host)
        if jit is not None:
            from .jit import Unlike, large_form, unlike_numpy

            found = unlike_numpy(opt.eqns, {  # (the parameters that are Python ints)
                v.id for v, w in zip(graph.inputs, spec or ()) if w in (int, bool)},
                bools={v.id for v, w in zip(graph.inputs, spec or ()) if w is bool})
            if found is not None:
                raise Unlike(self.fun.__qualname__, *found)
            if at is not None and _holds_dict(opt.outputs[0][at]):  # (f's own value, its
                # aux: numba cannot box a dict of mixed values; a gradient's dict is built
                # by the Python entry)
                raise Unlike(self.fun.__qualname__, "a dict in what the function returns",
                             opt.eqns[-1] if opt.eqns else None)
            if not jit.python_body:
                jit.python_body = large_form(opt.eqns)
        if fused or jit is not None:
            from .fusion import fuse_graph, fusible, gather, one_shape, shifted_sums
            from .jit import accept, loop_alone

            if (jit is not None or spec is not None) and _steps_batched(opt.eqns):
                opt = optimize(opt, named=b.named)  # (a loop's sums: one product after it)

            takes = one_shape if jit is None else functools.partial(
                accept, python_body=jit.python_body)
            counter = [0]
            if jit is not None:  # (cotangents placed in shifted slices: one loop)
                opt.eqns = shifted_sums(opt.eqns, opt.outputs, takes, counter)
                # (a sum of the forward pass's values after the backward pass's loop work)
                opt.eqns = gather(opt.eqns, lambda e: fusible(e) and takes(e, []))
            opt.eqns = fuse_graph(opt.eqns, opt.outputs, counter, accept=takes,
                                  alone=None if jit is None else loop_alone)
            checked(opt, "fusion")
            if jit is not None:  # (numba checks no shape: a wrong one writes past an array)
                opt.check_types()
        elif spec is not None:  # (shapes known: elementwise work on large arrays in blocks)
            from .fusion import block_regions, placeable, shifted_sums

            if _steps_batched(opt.eqns):  # (the loops' initial sums: dead code)
                opt = optimize(opt, named=b.named)

            # (cotangents placed in shifted slices of a large array: summed a block at a time)
            opt.eqns = shifted_sums(opt.eqns, opt.outputs, placeable)
            opt.eqns = block_regions(opt.eqns, opt.outputs)
            checked(opt, "blocking")
        returns = opt.outputs[0]
        check = _scalar_check(opt.outputs[1]) if check is not None else None
        fname = f"{self.kind}_{_ident(self.fun.__name__)}" + ("_same_shapes" if same else "")
        fc = self._function_code(fname, src, opt, returns, b.named, as_float, check, nested)
        if spec is not None:
            # (the inputs after the user's parameters, hvp's tangent: the guard tests them
            # too, and passes them on)
            fc.spec = list(zip(list(graph.inputs) + self._extra, spec, strict=True))
            fc.spec_call = [(v.hint, False) for v in graph.inputs] \
                if self._tree is not None or self._extra else self._param_names()
        fc.owned, fc.primal = self._owned(returns)
        fc.numbers = numbers
        # (a numpy variant's numbers in float64 arithmetic as 0-d arrays, codegen._F64; not
        # a cupy variant's: its arrays are the device's)
        fc.f64_operands = spec is not None and not fused and jit is None
        if not getattr(fc, "floats_fixed", False):
            fc.floats = {v.id for v in wrt}
        if self._extra or self._tree is not None:
            # plain positional parameters (a structured argument's: its leaves): the
            # wrapper binds the user's call
            fc.params = ", ".join(v.hint for v in graph.inputs)
            fc.extra = list(self._extra)
        header = self._header(src, fname)
        if jit is not None and jit.python_body:
            header += "\n# Its loops compiled by numba (nopython mode), each one pass over " \
                "memory; the rest runs on numpy, which allocates the arrays."
        elif jit is not None:
            header += "\n# Compiled by numba (nopython mode); each fused loop is one pass " \
                "over memory."
        if spec is not None:
            header += "\n# Specialized to these arguments (other calls go to the " \
                "shape-polymorphic code):" + "".join(
                    f"\n#   {part}" for part in _specialize.describe(
                        spec, [v.hint for v in graph.inputs]).split(", "))
        return fc, graph.inputs + self._extra, header, opt

    # what the kinds differ in (subclasses override) -------------------------------------

    #: what the generated module computes, the first words of its header
    title = "Gradient"

    def _header(self, src, fname: str) -> str:
        """The generated module's first line(s): what it computes and where from, then how
        the transformation calls it (`_calls`)."""
        return (f"# {self._title()} generated by srcgrad {_cache.VERSION} from "
                f"{os.path.basename(src.filename)}:{src.tree.lineno} ({self.fun.__name__})."
                + "".join(f"\n# {line}" for line in self._calls(fname)))

    def _title(self) -> str:
        return f"{self.title} code"

    def _calls(self, fname: str) -> list:
        """Comment lines saying how the transformation calls the generated function."""
        return []

    def _float_params(self) -> tuple:
        """Indices of the parameters the prologue makes floating (as_float)."""
        return self.wrt_index

    def _also_active(self, graph) -> list:
        """Inputs besides the `wrt` ones whose derivatives the code computes (tangents
        along them): values depending on them must be differentiable too."""
        return []

    def _function_code(self, fname, src, opt, returns, named, as_float, check, nested):
        return FunctionCode(fname, _signature_text(src.tree), opt.eqns, returns, named,
                            as_float=as_float, check_scalar=check)

    def _owned(self, returns):
        """(whether the caller must own the arrays returned, the position in `returns` of
        the function's own value, or None: its gradients must be fresh, its value is what
        f returns; by position, since a gradient may be the very value f returns)."""
        if self.has_aux:  # (grads, aux): aux is the user's, returned as f returns it
            return True, 1
        return True, None

    def _value_at(self):
        """The position of f's own value in what the generated function returns (None:
        it returns none)."""
        return self._owned(None)[1]

    def _grads_or_zeros(self, b, grads, wrt):
        with staging(b):
            b.loc, b.phase = None, "bwd"
            out = []
            kinds = getattr(self, "_like_arg", ())
            for g, v in zip(grads, wrt):
                if g is None:
                    b.hint = "d" + v.hint
                    g = ops.zeros_like(v)
                    b.named.add(g.id)
                if v.id in kinds:  # (a Python number's: a numpy float64 scalar...)
                    b.hint = "d" + v.hint
                    g = ops.like_arg(g, v)
                    b.named.add(g.id)
                out.append(g)
        if self._tree is not None:  # each structured argument's gradient: its structure
            it = iter(out)
            out = [next(it) if self._tree[i] is None else
                   _pytree.unflatten(self._tree[i], it) for i in self.wrt_index]
        return tuple(out) if self.wrt_tuple else out[0]

    def _adjoint(self, fwd, wrt, out, aux):
        b, grads = reverse(fwd, wrt, 1.0)
        g = self._grads_or_zeros(b, grads, wrt)
        returns = self._returns(out, g, aux)
        # a non-scalar output is refused at run time, unless it is 0-d by construction
        check = out if isinstance(out, Var) and out.sclass != SCALAR else None
        return b, returns, check, None

    def _returns(self, out, g, aux):
        return (g, aux) if self.has_aux else g

    def _find_ops(self, meta: dict) -> bool:
        """Bind the ops a cached module calls; False if one cannot be told for sure."""
        found = {k: _cache.find_op(fp) for k, fp in meta.get("ops", {}).items()}
        if any(op is None for op in found.values()):
            return False
        self._ops.update(found)
        return True

    def _compile(self):
        # first calls from several threads at once: one compiles, the others wait for it
        # (a build keeps its state on the instance)
        with self._compile_lock:
            if self._call is not None:
                if self._check is None or self._check():
                    return self._call
                self.clear()  # a value it read at compile time has changed: compile again
                if self._object is not None:
                    self.fun = _call_method(self._object)
            return self._compile_now()

    def _ready(self):
        """The generated function (or, for numpy calls, a variant specialized to the
        latest hot signature: srcgrad.specialize), compiled again first if a value it
        read when it was compiled (a global number, a config dict, a helper function...)
        has changed (srcgrad.guards)."""
        impl, check = self._call, self._check
        if impl is None or (check is not None and not check()):
            impl = self._compile()
        return impl

    def _compile_now(self, use_cached: bool = True):
        key = None
        loaded = None
        if self.use_disk_cache and _cache.cache_dir() is not None:
            key = _cache.cache_key(self.fun, self._options())
            loaded = _cache.load(key) if use_cached else None
        live = _bindable(self.fun, loaded[1]) if loaded is not None else None
        cached = live is not None and self._find_ops(loaded[1])
        if cached:
            text, meta, path = loaded
            self._code = _cache.load_code(path, meta, text)
        else:
            self._code = None  # (the bytecode of a module loaded before is not this one's)
            text, meta, self._graph = self._guarded_build()
            live = meta["_guards"]
            self.compile_count += 1
            if self._parent is not None:
                self._parent.compile_count += 1
            path = _store(key, text, meta)
            if path is None:
                code = self.fun.__code__
                path = (f"<srcgrad {meta['entry']} {os.path.basename(code.co_filename)}:"
                        f"{code.co_firstlineno}>")
        self.cache_path = path
        # (`obj(x)` runs its class's __call__ of the moment)
        self._check = _guards.make_check(
            live, self.fun, self._object,
            self.fun.__func__ if self._object is not None else None)
        self._module = (text, path, meta)
        try:
            impl = self._bind(None)
        except ImportError:
            if not cached:
                raise
            # a cached module imports a user's op from where it was when the module was
            # written, and it is no longer there: generate the module afresh
            self._code = None
            return self._compile_now(use_cached=False)
        self._source = _cache.source_of(text)
        self._impl = self._call = impl
        if self.specialize and self._specializable():
            self._variants = _specialize.Variants(
                impl, self._variant, self._arg_values, self._settle,
                hot=1 if self.backend == "numba" else _specialize.HOT_CALLS,
                stored=self._variant_stored if key is not None else None)
            self._call = self._variants.miss
        return self._call

    # -- variants specialized to a signature (srcgrad.specialize) ---------------------------

    def _specializable(self) -> bool:
        return not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                       for p in _signature(self.fun).parameters.values())

    def _arg_values(self, args, kwargs) -> list:
        """The values of the generated function's inputs in a call (the leaves, for an
        entry of structured arguments: they come as they are)."""
        return list(args) if self._tree is not None else _bind(self.fun, args, kwargs)

    def _call_values(self, args, kwargs) -> list:
        """`_arg_values` of the user's call (f(*args, **kwargs), as `__call__` takes it)."""
        return self._arg_values(args, kwargs)

    def _settle(self, first):
        """Make `first` what calls run first (a new variant; the general function when
        variants are given up)."""
        if self._variants is not None and self._impl is not None:
            self._call = first

    def _variant_options(self, sig, jit: bool = False) -> dict:
        """The options the variant for `sig` is compiled (and cached) under."""
        opts = dict(self._options(), spec=_specialize.describe(
            sig, [str(i) for i in range(len(sig))]))
        if jit:
            from . import jit as _jit

            opts.update(backend="numba", large=(_jit.LARGE, _jit.VECTOR_CALLS))
        else:
            from . import fusion as _fusion

            opts.update(blocks=(_fusion.BLOCKED_MIN, _fusion.BLOCK, _fusion.BLOCK_MIN,
                                _fusion.LIVE_ELEMENTS))
        return opts

    def _variant_stored(self, sig) -> bool:
        """Whether the disk cache holds the (numpy) variant for `sig`: loading it is
        cheaper than a call of the shape-polymorphic code. Whether it may be used is
        decided where it is loaded (`_variant_module`), as for any cache entry."""
        if not self.use_disk_cache or _cache.cache_dir() is None:
            return False
        key = _cache.cache_key(self.fun, self._variant_options(sig))
        self._stored_key = (sig, key)  # (for `_variant_module`, which runs next)
        return os.path.isfile(_cache.entry_path(key))

    def _variant_module(self, sig, jit: bool = False):
        """(text, path, meta) of the variant for signature `sig` (cached like the
        general module, keyed by the signature too); with `jit`, the module numba compiles
        (srcgrad.jit)."""
        opts = self._variant_options(sig, jit)
        large = self.jit_loops_only  # (else decided by the arrays the variant makes)
        key = None
        if self.use_disk_cache and _cache.cache_dir() is not None:
            stored, self._stored_key = self._stored_key, None
            key = stored[1] if stored is not None and stored[0] == sig and not jit else \
                _cache.cache_key(self.fun, opts)
            loaded = _cache.load(key)
            if loaded is not None and _bindable(self.fun, loaded[1]) is not None and \
                    self._find_ops(loaded[1]):
                text, meta, path = loaded
                return text, path, meta
        options = JitOptions(cache=key is not None, python_body=large) if jit else None
        text, meta, _ = self._guarded_build(spec=sig, jit=options)
        self.variant_count += 1
        path = _store(key, text, meta)
        if path is None and options is not None and options.cache:
            # numba caches a function of a file only
            text, meta, _ = self._guarded_build(
                spec=sig, jit=JitOptions(cache=False, python_body=large))
        if path is None:
            path = f"<srcgrad {meta['entry']} specialized {len(self._spec_sources) + 1}>"
        return text, path, meta

    def _variant(self, sig):
        """The variant for `sig`, bound (its guard's fallback: `Variants.miss`). A variant
        that fails to build is a bug in srcgrad: the call runs the general function
        (which built), with a warning that says so. With backend="numba", the variant
        numba compiled, or, where numba cannot compile it, the numpy one (with a warning
        that names the line)."""
        if self.backend == "numba":
            impl = self._jit_variant(sig)
            if impl is not None:
                return impl
        try:
            with self._compile_lock:  # (a build shares state with a compile)
                module = self._variant_module(sig)
            impl = self._bind(None, module)
        except Exception as err:  # noqa: BLE001 (the general function is the answer)
            warnings.warn(f"srcgrad could not specialize {self.fun.__qualname__!r} to its "
                          f"arguments' shapes ({type(err).__name__}: {err}); it runs the "
                          "shape-polymorphic code. If the function runs without an error "
                          "on these arguments, this is a bug in srcgrad; please report it",
                          RuntimeWarning, stacklevel=4)
            return self._impl
        self._spec_sources[sig] = _cache.source_of(module[0])
        return impl

    def _jit_variant(self, sig):
        """The variant for `sig` compiled by numba (now, for the signature's types), or
        None with a warning when numba cannot compile it."""
        from . import jit as _jit

        numba = _jit.require()
        module, compiling = None, False
        try:
            module = self._variant_module(sig, jit=True)
            impl = self._bind(None, module)
            ns, meta = impl.__globals__, module[2]
            compiling = True
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                if meta["compiled"] is not None:
                    outs = [(tuple(shape), np.dtype(dt)) for shape, dt in
                            meta.get("reads", []) + meta.get("outs", [])]
                    _jit.compile_now(ns[meta["compiled"]], tuple(sig) + tuple(outs))
                    # (no compiling inside a call: arrays in another memory layout get a
                    # TypeError, which the entry answers with the numpy code)
                    ns[meta["compiled"]].disable_compile()
                for name, params in meta.get("loops", {}).items():
                    _jit.compile_now(ns[name], [((0,) * nd, np.dtype(dt)) for nd, dt in params])
        except Exception as err:  # noqa: BLE001 (the numpy code runs)
            if isinstance(err, _jit.Unlike):
                msg = str(err)
            elif module is not None and (compiling or
                                       isinstance(err, numba.core.errors.NumbaError)):
                msg = _jit.failure(err, module[0], module[1], self.fun.__qualname__)
            else:
                msg = (f"srcgrad could not write {self.fun.__qualname__!r} for numba "
                       f"({type(err).__name__}: {err}); it runs the numpy code. This is a "
                       "bug in srcgrad; please report it")
            warnings.warn(msg, RuntimeWarning, stacklevel=5)
            return None
        self._spec_sources[sig] = _cache.source_of(module[0])
        return impl

    def specialized_source(self, *args: Any, **kwargs: Any) -> str:
        """The source of the variant specialized to these arguments' shapes and dtypes
        (compiled now if it was not yet): what repeated calls with them run."""
        if not self.specialize:
            raise ValueError(f"srcgrad.{self.kind}({self.fun.__name__}) was made with "
                             "specialize=False: it has no specialized variants")
        target, values = self, None
        if any(isinstance(a, _CONTAINERS) for a in list(args) + list(kwargs.values())):
            found = self._structured_entry(args, kwargs)
            if found is not None:
                target, values = found
        target._ready()
        if target._variants is None:
            raise TypeError(f"srcgrad.{self.kind}({self.fun.__name__}): a function with "
                            "*args or **kwargs is not specialized")
        if values is None:
            values = target._call_values(args, kwargs)
        sig = _specialize.signature(values)
        if sig is None:
            raise TypeError("specialized variants are made for numpy arrays, Python numbers "
                            "and None; an argument here is of another type")
        if sig not in target._spec_sources:
            if len(target._variants.by_sig) >= _specialize.MAX_VARIANTS:
                raise RuntimeError(f"{self.fun.__qualname__!r} has its "
                                   f"{_specialize.MAX_VARIANTS} specialized variants already; "
                                   "calls with these arguments run the shape-polymorphic "
                                   "code (see .source)")
            target._variants.add(sig)
        if sig not in target._spec_sources:
            raise RuntimeError(f"srcgrad could not specialize {self.fun.__qualname__!r} "
                               "(see the warning)")
        return target._spec_sources[sig]

    def _guarded_build(self, **kw):
        """`_build`, with an unexpected failure inside srcgrad reported as an InternalError
        at the user's function (never an internal traceback alone)."""
        try:
            return self._build(**kw)
        except (SrcgradError, TypeError, ValueError):
            raise  # the compiler's own, located errors and argument errors
        except Exception as err:
            code = getattr(_scopes.unwrap(self.fun), "__code__", None)
            where = () if code is None else (
                code.co_filename, code.co_firstlineno, 0,
                linecache.getline(code.co_filename, code.co_firstlineno))
            what = ("the program is nested too deeply for the compiler (too many `if`s in a "
                    "row or calls inside calls)" if isinstance(err, RecursionError) else
                    f"{type(err).__name__}: {err}")
            raise InternalError(f"srcgrad failed while compiling "
                                f"{getattr(self.fun, '__qualname__', self.fun)!r}: {what}. "
                                "This is a bug in srcgrad; please report it with this "
                                "function", *where) from err

    def _fused_module(self):
        """(text, path, meta) of the fused variant (cached like the plain one)."""
        if self._fused is None:
            key = None
            if self.use_disk_cache and _cache.cache_dir() is not None:
                key = _cache.cache_key(self.fun, dict(self._options(), fused=True))
                loaded = _cache.load(key)
                if loaded is not None and _bindable(self.fun, loaded[1]) is not None and \
                        self._find_ops(loaded[1]):
                    text, meta, path = loaded  # (what _bind takes: text, path, meta)
                    self._fused = (text, path, meta)
                    return self._fused
            text, meta, _ = self._guarded_build(fused=True)
            path = _store(key, text, meta)
            if path is None:
                path = f"<srcgrad {meta['entry']} fused>"
            self._fused = (text, path, meta)
        return self._fused

    @property
    def fused_source(self) -> str:
        """The generated source with elementwise runs fused into kernels (what cupy runs
        unless fuse=False); bound to numpy, each kernel runs its numpy reference."""
        text = self._fused_module()[0]
        return _cache.source_of(text)

    def _bind(self, xp, module=None, fallback=None):
        """The generated function, with `np` bound to numpy (xp None) or to cupy; a
        variant's guard falls back to `fallback` (by default `Variants.miss`)."""
        text, path, meta = module or self._module
        ns = {"__name__": f"srcgrad_generated.{meta['entry']}"}
        if "loops" in meta:  # numba's: its cache finds a function's module by name
            ns = _numba_module(f"srcgrad_generated_{meta['entry']}_"
                               f"{hashlib.sha256(path.encode()).hexdigest()[:20]}")
        code = self._code if module is None or module is self._module else None
        if code is None and module is not None and meta.get("code"):
            code = _cache.load_code(path, meta, text)  # (a variant read from the cache)
        transform = None
        if isinstance(xp, NumpyOnCupy) and meta["scopes"]:
            # the user's module and closure arrays, read at each call, go to the device
            def transform(tree):
                return _scopes.wrap_reads(tree, meta["scopes"], "_srcgrad_to_device")

            ns["_srcgrad_to_device"] = functools.partial(cupy_to_device, xp._cp)
        _cache.exec_source(text, path, ns, code, transform)
        if meta.get("fallback"):  # a specialized variant: other calls go back through here
            ns[meta["fallback"]] = self._variants.miss if fallback is None else fallback
        if xp is not None:
            ns[meta["numpy"]] = xp  # the same code, on the GPU (numpy's API on cupy)
            if isinstance(xp, NumpyOnCupy):  # each fused region one kernel
                if meta.get("ndarray", "ndarray") in ns:  # a variant's guard: cupy arrays
                    ns[meta.get("ndarray", "ndarray")] = xp._cp.ndarray
                _backend.helpers_on(xp, ns)  # (a number cotangent spread: on the device)
                for key in [k for k in ns if k.endswith("_cuda") and k.startswith("_fused_")]:
                    name = ns[key][3]
                    ns[name] = cupy_kernel(xp._cp, ns[name], ns[key])
        live = meta.get("_live", {})
        for name, desc in meta["scopes"].items():  # where user arrays are read from
            ns[name] = live[name] if name in live else _scopes.resolve(desc, self.fun)
        for name, op in meta["ops"].items():
            ns[name] = live[name] if name in live else self._ops[name]
        impl = ns[meta["entry"]]
        if not meta.get("positional"):  # (those of the function compiled: a transparent
            compiled = _scopes.unwrap(self.fun)  # wrapper's are its wrapped function's)
            impl.__defaults__ = getattr(compiled, "__defaults__", None)
            impl.__kwdefaults__ = getattr(compiled, "__kwdefaults__", None)
        return impl

    def _gpu_impl(self, args, kwargs):
        """The cupy-bound function when the arguments are cupy arrays, else None.
        numpy-only programs never import cupy: this returns at once when it is absent."""
        cp = sys.modules.get("cupy")
        if cp is None:
            return None
        kinds = set()
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, cp.ndarray):
                kinds.add("cupy")
            elif isinstance(a, np.ndarray):
                kinds.add("numpy")
        if "cupy" not in kinds:
            return None
        if "numpy" in kinds:
            raise TypeError(f"{self.fun.__name__}: the arguments mix numpy and cupy arrays; "
                            "move them to one device first (cupy.asarray or .get())")
        if self._impl is None:
            self._compile()
        if self._gpu is None:
            self._gpu = self._bind(cupy_namespace(cp), self._fused_module() if self.fuse else None)
        if not self.fuse or self._variants is None:
            return self._gpu
        return self._gpu_variant(cp, args, kwargs)

    def _gpu_variant(self, cp, args, kwargs):
        """The variant specialized to these cupy arguments' shapes and dtypes, fused (each
        elementwise run one kernel, with the `sum_to`s and broadcasts the shapes make
        no-ops gone: fewer, larger kernels), as numpy calls get theirs (srcgrad.specialize):
        built once a signature has been seen `HOT_CALLS` times, at most `MAX_VARIANTS`;
        the general fused function otherwise."""
        found, seen, general = self._gpu_found, self._gpu_seen, self._gpu
        if seen is None:  # given up: GIVE_UP calls got no variant
            return general
        sig = _specialize.signature(self._call_values(args, kwargs), cp.ndarray)
        impl = found.get(sig) if sig is not None else None
        if impl is not None:
            return impl
        # (counted, and built, under the lock a compile takes: a build shares state with one)
        with self._compile_lock:
            if self._gpu is not general:  # compiled again meanwhile
                return general
            impl = found.get(sig)
            if impl is not None:
                return impl
            n = 0
            if sig is not None and len(found) < _specialize.MAX_VARIANTS:
                seen[sig] = n = seen.get(sig, 0) + 1
            if n < _specialize.HOT_CALLS:
                self._gpu_misses += 1
                if self._gpu_misses >= _specialize.GIVE_UP and not found:
                    self._gpu_seen = None
                return general
            try:
                text, meta, _ = self._guarded_build(fused=True, spec=sig)
                path = f"<srcgrad {meta['entry']} specialized for cupy {len(found) + 1}>"
                impl = self._bind(cupy_namespace(cp), (text, path, meta), fallback=general)
            except Exception as err:  # noqa: BLE001 (the general function is the answer)
                warnings.warn(f"srcgrad could not specialize {self.fun.__qualname__!r} to "
                              f"its cupy arguments' shapes ({type(err).__name__}: {err}); it "
                              "runs the shape-polymorphic code. If the function runs without "
                              "an error on these arguments, this is a bug in srcgrad; please "
                              "report it", RuntimeWarning, stacklevel=5)
                impl = general
            found[sig] = impl
            return impl

    def _dask_impl(self, args, kwargs):
        """The function bound to numpy's API on dask arrays (runtime.dask_backend) when a
        dask array is among the arguments, else None. The generated source is the same:
        dask arrays stay lazy through it, and a numpy function dask lacks raises an error
        that names it instead of computing the array in one process."""
        from runtime import dask_backend

        if not dask_backend.has_dask(args, kwargs):
            return None
        impl = self._ready()  # compiled again first if a value it read has changed
        bound = self._dask
        if bound is None or bound[0] is not impl:
            bound = self._dask = (impl, self._bind(dask_backend.NUMPY_ON_DASK))
        return bound[1]

    def _run(self, impl, args, kwargs):
        """Call the generated function on these arguments (bound to cupy or dask first
        when they are cupy or dask arrays)."""
        if _CUPY_NAME in sys.modules:
            impl = self._gpu_impl(args, kwargs) or impl
        if _DASK_NAME in sys.modules:
            lazy = self._dask_impl(args, kwargs)
            if lazy is not None:
                from runtime import dask_backend

                token = dask_backend.chunked_like(args, kwargs)
                try:
                    out = lazy(*args, **kwargs)
                finally:
                    dask_backend.reset_chunks(token)
                return _dask_computed(out) if self.compute else out
        return impl(*args, **kwargs)

    # -- the public face ---------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # (the common call first, inline: positional arrays, compiled, nothing it read
        # changed, no cupy or dask loaded: `_ready` and `_run` cost more than its work)
        impl, check = self._call, self._check
        if not kwargs and impl is not None and not self._tree_defaults and \
                _CUPY_NAME not in _MODULES and \
                _DASK_NAME not in _MODULES and (check is None or check()):
            for a in args:
                if type(a) is not _NDARRAY and isinstance(a, _CONTAINERS):
                    break
            else:
                return impl(*args)
        for a in args:
            if isinstance(a, _CONTAINERS):
                return self._call_structured(args, kwargs)
        if kwargs and any(isinstance(a, _CONTAINERS) for a in kwargs.values()):
            return self._call_structured(args, kwargs)
        self._tree_defaults = _structured_defaults(self.fun)  # (they may be new ones)
        if self._tree_defaults:
            return self._call_structured(args, kwargs)
        return self._run(self._ready(), args, kwargs)

    # -- structured arguments (srcgrad.pytree) ----------------------------------------------

    def _call_structured(self, args, kwargs):
        found = self._structured_entry(args, kwargs)
        if found is None:
            return self._run(self._ready(), args, kwargs)
        entry, leaves = found
        out = entry._run(entry._ready(), leaves, {})
        return entry._restore(out) if entry._namedtuples else out

    def _structured_entry(self, args, kwargs):
        """(the entry compiled for these arguments' structures, their leaves), or None
        when no argument is a structure after all."""
        full = _bind(self.fun, args, kwargs)
        wrt = set(self.wrt_index)
        if not any(_pytree.is_structured(a, i in wrt) for i, a in enumerate(full)):
            return None
        if self.kind not in ("grad", "value_and_grad", "vjp") or \
                isinstance(self, NestedGradFunction):
            raise _structures_refused(self.kind, self.fun)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in _signature(self.fun).parameters.values()):
            raise TypeError(f"srcgrad.{self.kind}({self.fun.__name__}): dicts, lists and "
                            "tuples of arrays as arguments are not supported for a function "
                            "with *args or **kwargs parameters; pass arrays, or name the "
                            "parameters")
        names = self._names
        if names is None:
            names = self._names = [n for n, _ in self._param_names()]
        key, leaves = _pytree.flatten_args(full, names, wrt,
                                           f"srcgrad.{self.kind}({self.fun.__name__})")
        entry = self._entries.get(key)
        if entry is None:
            with self._compile_lock:
                entry = self._entries.get(key)
                if entry is None:
                    entry = self._entry(key)
                    self._entries[key] = entry
        self._last_entry = entry
        return entry, leaves

    def _entry(self, key):
        """The transformation of the same function for arguments of these structures."""
        wrt = tuple(self.wrt_index) if self.wrt_tuple else self.wrt_index[0]
        entry = type(self)(self.fun, wrt=wrt, has_aux=self.has_aux,
                           cache=self.use_disk_cache, fuse=self.fuse)
        entry._tree, entry._parent = key, self
        entry.compute, entry.specialize = self.compute, self.specialize
        entry.backend = self.backend
        entry._namedtuples = any(_pytree.has_namedtuple(key[i]) for i in self.wrt_index)
        return entry

    def _restore(self, out):
        """The generated function's result with the gradients' namedtuples restored."""
        def grads(g):
            if not self.wrt_tuple:
                return _pytree.restore_namedtuples(self._tree[self.wrt_index[0]], g)
            return tuple(_pytree.restore_namedtuples(self._tree[i], x)
                         for i, x in zip(self.wrt_index, g))
        if self.kind == "value_and_grad":
            return out[0], grads(out[1])
        if self.kind == "vjp":
            value, pullback = out
            return value, functools.wraps(pullback)(lambda ct: grads(pullback(ct)))
        if self.has_aux:
            return grads(out[0]), out[1]
        return grads(out)

    @property
    def source(self) -> str:
        """The generated Python source of this transformation (after a call with
        structured arguments, of the entry for the structures of the latest such call).

        With backend="numba", once a call has made a variant: the source of the latest
        variant, what numba compiles (its loops, `@njit`), as `specialized_source` gives
        it; before that, the shape-polymorphic numpy code, which calls no variant takes
        run."""
        if self._source is None and self._impl is None and self._last_entry is not None:
            return self._last_entry.source
        if self._source is None:
            self._compile()
        if self.backend == "numba" and self._spec_sources:
            return next(reversed(self._spec_sources.values()))
        return self._source

    @property
    def ir(self) -> str:
        """The optimized static graph the source was generated from, printed with each
        value's kind and shape/dtype classes (`ir.Graph.pretty`)."""
        if self._graph is None and self._impl is None and self._last_entry is not None:
            return self._last_entry.ir
        if self._graph is None:
            _, _, self._graph = self._guarded_build()
        return self._graph.pretty()

    def clear(self) -> None:
        """Forget the generated code (the next call compiles or loads it again)."""
        self._impl = self._gpu = self._dask = self._module = self._fused = self._check = None
        self._gpu_found, self._gpu_seen, self._gpu_misses = {}, {}, 0  # cupy variants
        self._call = self._variants = self._code = None
        self._spec_sources = {}
        self._source = self._graph = None
        self._entries = {}
        self._last_entry = None

    def __repr__(self) -> str:
        return f"<srcgrad.{self.kind} of {self.fun.__qualname__}>"

    def __get__(self, obj: Any, objtype: type | None = None) -> CompiledFunction:
        """`@srcgrad.grad` on a method: `obj.method` is the transformation of the method
        bound to `obj` (its `self.attr` reads are guarded or read at every call, as a
        global's are). `wrt` counts the parameters as the def writes them, `self` first
        (`wrt=1` is the first after it; `self` itself, the default wrt=0, is refused)."""
        if obj is None:
            return self
        bound = self._bound.get(id(obj))
        if bound is not None and bound[0]() is obj:
            return bound[1]
        wrt = [i - 1 for i in self.wrt_index]
        if any(i < 0 for i in wrt):
            raise _wrt_error(self.fun, f"srcgrad.{self.kind} on the method "
                             f"{self.fun.__qualname__} differentiates with respect to `self` "
                             "(wrt=0); name the argument to differentiate, e.g. wrt=1 or "
                             "wrt='x'")
        new = self._rebound(self.fun.__get__(obj, objtype),
                            tuple(wrt) if self.wrt_tuple else wrt[0])
        new.compute, new.specialize = self.compute, self.specialize
        new.backend = self.backend
        try:
            ref = weakref.ref(obj, lambda _, k=id(obj): self._bound.pop(k, None))
        except TypeError:
            return new  # not weakly referable: a new transformation per access
        self._bound[id(obj)] = (ref, new)
        return new

    def _rebound(self, method, wrt):
        return type(self)(method, wrt=wrt, has_aux=self.has_aux, cache=self.use_disk_cache,
                          fuse=self.fuse)


_CONTAINERS = (dict, list, tuple)  # arguments that may be structures (srcgrad.pytree)
_NDARRAY = np.ndarray  # (the common argument: tested first, 50 ns less than isinstance)


def _refuse_structures(kind, fun, args, kwargs):
    if any(_pytree.is_structured(a) for a in list(args) + list(kwargs.values())):
        raise _structures_refused(kind, fun)


def _structures_refused(kind, fun):
    return TypeError(f"srcgrad.{kind}({getattr(fun, '__name__', fun)}): an argument is a "
                     "structure (a dict, a list or tuple holding arrays, a namedtuple); "
                     "structured arguments are supported by grad, value_and_grad, vjp and "
                     "jvp only. "
                     "Pass arrays, or flatten the structure into separate arguments")




def check_sound(eqns, outputs, wrt):
    """Refuse, at the user's line, a program in which a value that depends on a `wrt`
    input reaches the output through an op with no derivative rule and no declared zero
    derivative: its gradient would be silently wrong (see ir.unsound_uses)."""
    active = {v.id for v in wrt}
    bad = unsound_uses(eqns, outputs, active)
    numpy_where_derivative(eqns, active)  # (Python's max() of a derivative: numpy's)
    found = _verbatim.mutated_active(eqns, active)
    if found is not None:
        raise _verbatim.mutated_error(*found)
    if not bad:
        return
    e, i = bad[0]
    if e.prim is PYTHON:
        raise _verbatim.unsound_error(e, i)
    what = e.prim.use_text or f"the operation {e.prim.name!r} (input {i})"
    msg = (f"{what} has no derivative, but the value depends on a differentiated argument "
           "and reaches the output: srcgrad refuses rather than return a wrong gradient. If "
           "its derivative is meant to be zero, wrap the value in srcgrad.stop_gradient(...)")
    if getattr(e.prim, "custom", False):
        msg = (f"no VJP rule for the custom op {e.prim.name!r} (input {i}), whose input "
               f"depends on a differentiated argument; attach one with @{e.prim.name}.defvjp")
    loc = e.loc
    if loc is None:
        raise NotDifferentiableError(msg)
    raise NotDifferentiableError(msg, loc.filename, loc.lineno, loc.col,
                                 linecache.getline(loc.filename, loc.lineno) or loc.text)


def _check_output(out, src, kind):
    """Refuse outputs that are not real numbers: a tuple (without has_aux), a boolean, a
    string, None. (A non-scalar array is refused at run time by check_scalar.) vjp and jvp
    (and jacobian, built on them) take an array output, not a tuple, list or dict of them:
    their cotangent or tangent is one array."""
    if kind in ("jvp", "vjp"):
        if isinstance(out, (tuple, list, dict)):
            node = _return_node(src)
            what = {tuple: "a tuple", list: "a list", dict: "a dict"}[type(out)]
            raise OutputTypeError(
                f"srcgrad.{kind} (and jacobian) of a function that returns {what} is not "
                "supported: return one array (np.concatenate or np.stack the parts), or "
                "transform a function per part", src.filename,
                getattr(node, "lineno", src.firstlineno), getattr(node, "col_offset", 0),
                src.line(getattr(node, "lineno", src.firstlineno)))
        return
    bad = None
    if isinstance(out, Var):
        if out.dclass == ("bool",):
            bad = "a boolean (a comparison)"
        elif out.kind != "array":
            bad = "a list" if out.kind == "list" else "an integer or shape"
    elif isinstance(out, (bool, numpy_bool)) or not isinstance(out, (int, float, np.number)):
        bad = {tuple: "a tuple", list: "a list", dict: "a dict", str: "a string",
               type(None): "None"}.get(type(out), f"a {type(out).__name__}")
        if isinstance(out, (bool, numpy_bool)):
            bad = "a boolean"
    if bad is None:
        return
    hint = (" To return extra values, use has_aux=True and return (output, aux)."
            if isinstance(out, tuple) else "")
    node = _return_node(src)
    raise OutputTypeError(f"the function must return a real scalar to be differentiated, but "
                          f"it returns {bad}.{hint}", src.filename,
                          getattr(node, "lineno", src.firstlineno),
                          getattr(node, "col_offset", 0),
                          src.line(getattr(node, "lineno", src.firstlineno)))


numpy_bool = np.bool_


def _return_node(src):
    for n in ast.walk(src.tree):
        if isinstance(n, ast.Return):
            return n
    return src.tree


def _dask_computed(out):
    """The results with every dask array in them computed, in one pass over the graph."""
    import dask

    return dask.compute(out)[0]


def _store(key, text, meta):
    """Write to the disk cache (without the live objects) when it is on; the path."""
    if key is None:
        return None
    return _cache.store(key, text, {k: v for k, v in meta.items() if not k.startswith("_")})



def _steps_batched(eqns) -> bool:
    """A specialized variant's loops over time, after differentiation: the values a loop
    saves for its adjoint kept in arrays of steps, elementwise work on every step's values
    made once before the loop, sums of per-step products and of per-step reductions made
    once after it (srcgrad.optimize). Whether anything changed."""
    changed = stacks_as_steps(eqns)
    changed = hoist_step_maps(eqns) or changed
    changed = batch_step_products(eqns) or changed
    return sum_steps_first(eqns) or changed

def _holds_dict(obj) -> bool:
    if isinstance(obj, dict):
        return True
    return isinstance(obj, (tuple, list)) and any(_holds_dict(o) for o in obj)


def _numba_module(name: str) -> dict:
    """The namespace of a module for numba's code, registered as `name`: numba's cache,
    loading a function a process compiled before, imports the module it was defined in
    by name (the name holds a hash of the module's file in srcgrad's cache, whose name
    holds the hash of its source: the module is the same code). An
    unregistered module made numba's cache fail in every later process, and the numpy
    code ran instead. A new module at each binding (two bindings of one source hold
    different values: a closure's, the fallback), the newest registered."""
    module = sys.modules[name] = types.ModuleType(name)
    return module.__dict__


def _scalar_check(v):
    """The value to check for a scalar shape at run time: None when the optimizer made it
    a constant number (nothing to check)."""
    if not isinstance(v, Var) and np.ndim(v) == 0:
        return None
    return v


def _wrt_meet(graph, wrt_index) -> bool:
    """Do two `wrt` arguments meet in an elementwise operation (x * y)? Only then can the
    same-shape fast path drop broadcasting work, so only then is it generated."""
    classes = {graph.inputs[i].sclass for i in wrt_index}

    def walk(eqns):
        for e in eqns:
            if e.prim.elementwise and e.prim.broadcasts:
                met = {a.sclass for a in e.ins if isinstance(a, Var)} & classes
                if len(met) > 1:
                    return True
            if any(walk(b.eqns) for b in e.blocks()):
                return True
        return False

    return walk(graph.eqns)


def _copy_stacks(eqns):
    """Make a pullback pop from copies of the forward pass's stacks, so that it can be
    called more than once: the stacks it reads are copied on entry, and a stack popped
    from a stack (a loop inside a loop) is copied as it comes out."""
    from runtime.ops.core import Primitive

    from .ir import Eqn

    # a stack is a run-time list of saved values, neither meta nor an array
    # (a stack of a branch the forward pass did not take is None)
    copy = Primitive("copy_list", lambda s: None if s is None else list(s),
                     differentiable=False, zero_grad=False, kind="stack", fresh=True,
                     spell=lambda i, p, d: f"None if {i[0]} is None else list({i[0]})")

    def inner(block_eqns):
        out = []
        for e in block_eqns:
            for b in e.blocks():
                b.eqns = inner(b.eqns)
            if e.prim is POP and any(o.kind == "stack" for o in e.outs):
                raw = [Var(o.hint, o.kind) if o.kind == "stack" else o for o in e.outs]
                out.append(Eqn(e.prim, e.ins, raw, e.params, e.loc, e.phase))
                out.extend(Eqn(copy, [r], [o], {}, None, "bwd")
                           for r, o in zip(raw, e.outs) if r is not o)
            else:
                out.append(e)
        return out

    eqns = inner(list(eqns))

    def defs(block_eqns):
        ids = set()
        for e in block_eqns:
            ids.update(o.id for o in e.outs)
            for b in e.blocks():
                ids |= defs(b.eqns)
        return ids

    defined = defs(eqns)
    head, mapping = [], {}
    for v in referenced(eqns).values():
        if v.kind == "stack" and v.id not in defined:
            c = Var(v.hint, "stack")
            mapping[v.id] = c
            head.append(Eqn(copy, [v], [c], {}, None, "bwd"))
    subst(eqns, mapping)
    return head + eqns


def _bindable(fun, meta) -> "list | None":
    """The live guards of a module from the disk cache, if it can be bound here: every
    namespace it reads user arrays from can be found from `fun` (a closure cell of an
    inlined function cannot: such a module is rebuilt), and every value it read when it
    was compiled is still what it was (srcgrad.guards). None otherwise."""
    if "scopes" not in meta or meta.get("guards") is None:
        return None
    try:
        for desc in meta["scopes"].values():
            _scopes.resolve(desc, fun)
    except LookupError:
        return None
    found: dict = {}
    return _guards.validate(
        meta["guards"], fun, lambda d, kind: _guards.resolved_scope(d, kind, fun, found))


class GradFunction(CompiledFunction):
    """`grad(f)`: returns the gradient of f's scalar output w.r.t. the `wrt` arguments."""

    kind = "grad"


class ValueAndGradFunction(CompiledFunction):
    """`value_and_grad(f)`: returns (f(...), grad); with has_aux ((value, aux), grad)."""

    kind = "value_and_grad"
    title = "Value-and-gradient"

    def _returns(self, out, g, aux):
        if self.has_aux:
            return ((out, aux), g)
        return (out, g)

    def _owned(self, returns):
        return True, 0


class VJPFunction(CompiledFunction):
    """`vjp` compiled: returns (out, pullback); pullback(cotangent) gives the gradients."""

    kind = "vjp"
    title = "VJP"
    jit_loops_only = True  # it returns a closure (the pullback), which numba cannot

    def _adjoint(self, fwd, wrt, out, aux):
        seed = Var("dout", "array")
        self._seed = seed
        b, grads = reverse(fwd, wrt, seed)
        g = self._grads_or_zeros(b, grads, wrt)
        return b, (out, g), None, None

    def _owned(self, returns):
        return False, None  # its value is f's; its pullback's gradients are fresh

    def _value_at(self):
        return 0

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        out, pullback = super().__call__(*args, **kwargs)

        def checked_pullback(cotangent):
            _same_shape("vjp: the cotangent", cotangent, "the function's output", out)
            return pullback(cotangent)

        checked_pullback.__wrapped__ = pullback
        return out, checked_pullback

    def _function_code(self, fname, src, opt, returns, named, as_float, check, nested):
        out, grads = returns
        eqns = opt.eqns
        first_bwd = next((i for i, e in enumerate(eqns) if e.phase == "bwd"), len(eqns))
        inner_eqns = _copy_stacks(eqns[first_bwd:])
        inner = FunctionCode("pullback", "", inner_eqns, grads, named,
                             free_after_forward=False)
        inner.inputs = inner.extra = [self._seed]
        inner.owned = True
        forward = eqns[:first_bwd]
        keep = _pullback_reads(forward, eqns[first_bwd:], grads)
        # the output the caller gets is not the array the pullback reads: `y -= t` on it
        # (a residual, in place) must not change the gradient
        copies = {v.id: Var(v.hint, v.kind, v.sclass, v.dclass) for v in iter_vars(out)
                  if v.id in keep and v.kind == "array"}
        if copies:
            from .fresh import COPY
            from .ir import Eqn

            forward = forward + [Eqn(COPY, [v], [copies[v.id]], {}, None, "fwd")
                                 for v in {v.id: v for v in iter_vars(out)}.values()
                                 if v.id in copies]
            out = _replace_vars(out, copies)
        outer = FunctionCode(fname, _signature_text(src.tree), forward,
                             (out, inner), named, as_float=as_float)
        outer.nested = (inner, len(forward))
        outer.keep = keep
        return outer


def _replace_vars(obj, mapping: dict):
    """A (nested) output structure with each Var whose id `mapping` has replaced."""
    if isinstance(obj, Var):
        return mapping.get(obj.id, obj)
    if isinstance(obj, (tuple, list)):
        items = [_replace_vars(o, mapping) for o in obj]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
            return type(obj)(*items)
        return type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, _replace_vars(o, mapping)) for k, o in obj.items())
    return obj


def _pullback_reads(forward, backward, grads) -> set:
    """Ids of the forward function's values its pullback reads (the forward function must
    not `del` them): what the pullback's statements read, in their loops and branches too,
    and, through the small values the code writes inline where they are read (a slice
    `slice(v1_1, None, -1)`, a tuple of ints), what those are made of."""
    from .codegen import reads_deep

    keep = {v.id for v in iter_vars(grads)}
    for e in backward:
        keep |= reads_deep(e)
    made = {o.id: e for e in forward for o in e.outs}
    todo = list(keep)
    while todo:
        e = made.get(todo.pop())
        if e is None or any(o.kind == "array" for o in e.outs):
            continue
        for v in e.var_ins():
            if v.id not in keep:
                keep.add(v.id)
                todo.append(v.id)
    return keep


def _same_shape(what, t, of, x):
    """A tangent must have its primal's shape: broadcasting one would give a silently
    different directional derivative."""
    ts, xs = np.shape(t), np.shape(x)
    if ts != xs:
        raise ValueError(f"{what} has shape {ts}, but {of} has shape {xs}; they must be "
                         "equal")
    kind = getattr(getattr(t, "dtype", None), "kind", None)
    if kind is not None and kind not in "fiub":
        raise TypeError(f"{what} has dtype {t.dtype}; tangents must be real numbers")


def _structured_defaults(fun) -> bool:
    """Has `fun` a default value that is a structure of arguments (a dict, a list of
    arrays...)? A call that leaves it out passes it as the structure it is."""
    fun = _scopes.unwrap(fun)
    d = getattr(fun, "__defaults__", None) or ()
    k = getattr(fun, "__kwdefaults__", None) or {}
    return any(_pytree.is_structured(v) for v in (*d, *k.values()))


def _bind(fun, args, kwargs) -> list:
    """The user's call as a full positional argument list (defaults applied)."""
    if not kwargs and len(args) == fun.__code__.co_argcount and not fun.__kwdefaults__:
        return list(args)
    ba = _signature(fun).bind(*args, **kwargs)
    ba.apply_defaults()
    return list(ba.arguments.values())


class JVPFunction(CompiledFunction):
    """Forward mode: `(primals..., tangents...) -> (out, tangent_out)` as generated code."""

    kind = "jvp"
    title = "JVP"

    def _rebound(self, method, wrt):
        return JVPFunction(method, cache=self.use_disk_cache)

    def _float_params(self) -> tuple:
        return ()  # primals are taken as they come

    def __init__(self, fun: Callable[..., Any], cache: bool = True) -> None:
        n = len(_signature(fun).parameters)
        super().__init__(fun, wrt=tuple(range(n)), cache=cache)

    def _adjoint(self, fwd, wrt, out, aux):
        from .forward import jvp_graph

        self._extra = [Var("t" + v.hint, "array", v.sclass, v.dclass) for v in fwd.inputs]
        b, tan = jvp_graph(fwd, {v.id: t for v, t in zip(fwd.inputs, self._extra)})
        t = tan.get(out.id) if isinstance(out, Var) else None
        with staging(b):
            b.hint = "t" + (out.hint if isinstance(out, Var) else "out")
            if t is None:
                t = ops.zeros_like(out) if isinstance(out, Var) else 0.0
            if isinstance(out, Var):  # (of out's kind: a numpy scalar for a scalar's)
                t = ops.like_arg(t, out)
        return b, (out, t), None, None

    def _owned(self, returns):
        return True, 0

    def _call_structured_jvp(self, primals, tangents):
        """jvp with structured primals: each tangent has its primal's structure (None:
        zeros); one entry per structure, as for grad."""
        import numpy

        fname = f"srcgrad.jvp({self.fun.__name__})"
        names = [n for n, _ in self._param_names()]
        key, leaves, tleaves = [], [], []
        for name, p, t in zip(names, primals, tangents):
            if not _pytree.is_structured(p):
                if _pytree.is_structured(t):
                    raise TypeError(f"{fname}: the tangent of {name} is a structure, but its "
                                    "primal is not; a tangent has its primal's structure")
                key.append(None)
                leaves.append(p)
                tleaves.append(numpy.zeros_like(numpy.asarray(p, dtype=float))
                               if t is None else t)
                continue
            (tree,), pl = _pytree.flatten_args([p], [name], {0}, fname)
            key.append(tree)
            leaves += pl
            if t is None:
                tleaves += [numpy.zeros_like(numpy.asarray(x, dtype=float)) for x in pl]
                continue
            try:
                (ttree,), tl = _pytree.flatten_args([t], [name], {0}, fname)
            except TypeError:
                ttree = None
            if ttree != tree:
                raise TypeError(f"{fname}: the tangent of {name} must have its primal's "
                                "structure (the same containers, keys and lengths, an array "
                                "or number at each leaf)")
            tleaves += tl
        key = tuple(key)
        with self._compile_lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = JVPFunction(self.fun, cache=self.use_disk_cache)
                entry._tree, entry._parent = key, self
                self._entries[key] = entry
        self._last_entry = entry
        impl = entry._ready()
        if _CUPY_NAME in sys.modules:
            impl = entry._gpu_impl(leaves + tleaves, {}) or impl
        return impl(*leaves, *tleaves)

    def _function_code(self, fname, src, opt, returns, named, as_float, check, nested):
        fc = FunctionCode(fname, "", opt.eqns, returns, named)
        fc.floats_fixed = True  # primals are taken as given (Python numbers included)
        return fc


class HVPFunction(CompiledFunction):
    """`hvp(f)(x, v)`: the Hessian of scalar f times v, by forward mode over the gradient
    graph (no Hessian is formed).

    The engine is more general than `hvp`: the gradient may be w.r.t. several arguments
    (`wrt`) and the tangents may run along others (`along`, by default `wrt`); the
    generated function takes one tangent per `along` argument after the user's parameters
    and returns the directional derivative of each gradient (what `hessian` and
    `jacobian(grad(f))` build their blocks from)."""

    kind = "hvp"
    title = "Hessian-vector product"

    def __init__(self, fun: Callable[..., Any], wrt: Wrt = 0, has_aux: bool = False,
                 argnums: Wrt | None = None, cache: bool = True, fuse: bool = True,
                 along: Wrt | None = None) -> None:
        super().__init__(fun, wrt, has_aux, argnums, cache, fuse)
        if has_aux:
            raise TypeError(f"srcgrad.{self.kind} does not take has_aux")
        if along is None:
            self.along, self.along_tuple = self.wrt_index, self.wrt_tuple
        else:
            self.along, self.along_tuple = _resolve_wrt(fun, along, None)

    def _options(self) -> dict:
        opts = super()._options()
        if self.along != self.wrt_index:
            opts["along"] = self.along
        return opts

    def _float_params(self) -> tuple:
        return tuple(sorted(set(self.wrt_index) | set(self.along)))

    def _also_active(self, graph) -> list:
        return [graph.inputs[j] for j in self.along if j not in self.wrt_index]

    def _tangent_names(self) -> list:
        if len(self.along) == 1:
            return ["v"]
        names = list(_signature(self.fun).parameters)
        return ["v_" + names[j] for j in self.along]

    def _adjoint(self, fwd, wrt, out, aux):
        from .forward import jvp_graph

        b, grads = reverse(fwd, wrt, 1.0)
        g = self._grads_or_zeros(b, grads, wrt)
        check = out if isinstance(out, Var) and out.sclass != SCALAR else None
        keep = [check] if check is not None else []
        grad_graph = optimize(Graph(fwd.inputs, b.eqns, [g] + keep, fwd.name, b.named),
                              named=b.named)
        xs = [fwd.inputs[j] for j in self.along]
        # v has x's shape and dtype
        vs = [Var(n, "array", x.sclass, x.dclass) for n, x in zip(self._tangent_names(), xs)]
        self._extra = vs
        b2, tan = jvp_graph(grad_graph, {x.id: v for x, v in zip(xs, vs)})
        g = grad_graph.outputs[0]
        ts = []
        for gi, x in zip(g if self.wrt_tuple else (g,), wrt):
            t = tan.get(gi.id) if isinstance(gi, Var) else None
            if t is None:
                with staging(b2):
                    b2.hint = "hv"
                    t = ops.zeros_like(x)
            ts.append(t)
        t = tuple(ts) if self.wrt_tuple else ts[0]
        returns = (g, t) if self.with_value else t
        return b2, returns, (grad_graph.outputs[1] if keep else None), None

    #: whether the generated function returns (gradient, its directional derivative)
    with_value = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.along) != 1 or self.wrt_tuple:
            raise TypeError("hvp takes a single wrt argument")
        if not args:
            raise TypeError("hvp: call it as hvp(f)(*args, v): the vector v comes last")
        _refuse_structures(self.kind, self.fun, args, kwargs)
        *args, v = args
        impl = self._ready()
        impl = self._gpu_impl(args + [v], kwargs) or impl
        full = _bind(self.fun, args, kwargs)
        x = full[self.wrt_index[0]]
        _same_shape("hvp: the vector v", v, f"the argument it multiplies ({self._wrt_name()})",
                    x)
        return impl(*full, v)

    def _wrt_name(self):
        return list(_signature(self.fun).parameters)[self.wrt_index[0]]

    def _call_values(self, args, kwargs) -> list:
        *args, v = args  # (the user's call: f's arguments, then v)
        return self._arg_values(_bind(self.fun, args, kwargs) + [v], {})

    def _arg_values(self, args, kwargs) -> list:
        """(`__call__` binds the user's arguments, then adds v.) The code takes v to have
        x's shape and dtype: a v of another dtype is a call no variant takes (an object
        gives no signature)."""
        *full, v = args
        x = full[self.wrt_index[0]]
        fits = type(v) is np.ndarray and type(x) is np.ndarray and v.dtype == x.dtype
        return full + [v if fits else object()]

    def _rebound(self, method, wrt):
        along = [i - 1 for i in self.along]
        new = type(self)(method, wrt=wrt, cache=self.use_disk_cache, fuse=self.fuse,
                         along=tuple(along) if self.along_tuple else along[0])
        if "role" in self.__dict__:  # jacobian(grad(f)) of a method
            new.role = self.role
        return new


class HessianFunction(HVPFunction):
    """`hessian(f, wrt=...)`: the second derivatives of scalar f, one generated
    Hessian-vector product per element of the `along` arguments, each with a unit
    vector as its tangent (column k of the Hessian). With `wrt` and `along` tuples the
    result is JAX's nest of blocks: `H[i][j]` of shape `x_i.shape + x_j.shape`.
    `jacobian(grad(f, wrt=i), wrt=j)` is this with `wrt=i`, `along=j`."""

    role = "hessian"

    def _options(self) -> dict:
        return dict(super()._options(), role=self.role, along=self.along)

    def _title(self) -> str:
        return ("Hessian code" if self.role == "hessian" else
                "Jacobian of the gradient (a Hessian block) code")

    def _calls(self, fname: str) -> list:
        names = list(_signature(self.fun).parameters)
        along = " and of ".join(names[j] for j in self.along)
        vs = self._tangent_names()
        tangent = (f"{vs[0]} the unit vector along it" if len(vs) == 1 else
                   f"one of {', '.join(vs)} a unit vector, the others zeros")
        blocks = ("one column of the Hessian" if self.role == "hessian" else
                  "one column of the block") if len(vs) == 1 and not self.wrt_tuple else \
            "one column of each block of the Hessian"
        return [f"srcgrad.{self.role} calls {fname} once per element of {along},",
                f"with {tangent}:", f"each call returns {blocks}."]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import numpy

        full = _bind(self.fun, args, kwargs)
        _refuse_structures(self.role, self.fun, full, {})
        if not self._effects_checked:
            _refuse_effects(self.role, self.fun, "element of x (a Hessian-vector product each)")
            self._effects_checked = True
        for i in set(self.wrt_index) | set(self.along):
            x = numpy.asarray(full[i])
            full[i] = x.astype(numpy.result_type(x, 1.0), copy=False)
        impl = self._ready()
        zeros = [numpy.zeros_like(full[j]) for j in self.along]
        blocks = [[None] * len(self.along) for _ in self.wrt_index]
        try:
            for p, j in enumerate(self.along):
                x = full[j]
                cols = []
                e = numpy.zeros(x.shape, x.dtype)  # (C order: ef is a view of e; an x
                ef = e.reshape(-1)                   # in Fortran order made ef a copy)
                for k in range(x.size):
                    ef[k] = 1
                    vs = list(zeros)
                    vs[p] = e.copy()
                    got = impl(*full, *vs)
                    cols.append([numpy.asarray(c).reshape(-1)
                                 for c in (got if self.wrt_tuple else (got,))])
                    ef[k] = 0
                for q, i in enumerate(self.wrt_index):
                    shape = full[i].shape + x.shape
                    dtype = numpy.result_type(full[i], x)
                    block = (numpy.stack([c[q] for c in cols], axis=-1).reshape(shape)
                             if cols else numpy.zeros(shape, dtype))
                    blocks[q][p] = block[()] if block.ndim == 0 else block
        except TypeError as err:
            if "scalar-output" in str(err):
                raise TypeError(f"{self.role} is only defined for scalar-output functions: "
                                f"{err}") from None
            raise
        rows = [tuple(r) if self.along_tuple else r[0] for r in blocks]
        return tuple(rows) if self.wrt_tuple else rows[0]

    _effects_checked = False

    @property
    def hvp(self) -> HVPFunction:
        """The plain Hessian-vector product of the same function (`.hvp.source`)."""
        if self._hvp is None:
            self._hvp = HVPFunction(self.fun, self.wrt_index[0], cache=self.use_disk_cache)
        return self._hvp

    _hvp = None


class JacobianFunction(VJPFunction):
    """`jacobian(f, mode="rev")`: one generated VJP, then its pullback once per element of
    the output, each with a unit cotangent (row k of the Jacobian)."""

    def _options(self) -> dict:
        return dict(super()._options(), role="jacobian")

    def _title(self) -> str:
        return "Jacobian code (mode='rev')"

    def _calls(self, fname: str) -> list:
        return [f"srcgrad.jacobian calls {fname} once, then its pullback once per element "
                "of the output,", "with a unit cotangent: each call returns one row of the "
                "Jacobian."]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import numpy

        full = _bind(self.fun, args, kwargs)
        _refuse_structures("jacobian", self.fun, full, {})
        wi = self.wrt_index[0]
        x = numpy.asarray(full[wi])
        x = x.astype(numpy.result_type(x, 1.0), copy=False)
        full[wi] = x
        out, pullback = super().__call__(*full)
        out = numpy.asarray(out)
        rows = []
        e = numpy.zeros(out.shape, out.dtype)  # (C order: ef is a view of e)
        ef = e.reshape(-1)
        for k in range(out.size):
            ef[k] = 1
            rows.append(numpy.asarray(pullback(e.copy())).reshape(-1))
            ef[k] = 0
        return _result(numpy.stack(rows).reshape(out.shape + x.shape) if rows else
                       numpy.zeros(out.shape + x.shape))


class ForwardJacobianFunction(JVPFunction):
    """`jacobian(f, mode="fwd")`: the generated JVP once per element of the `wrt`
    argument, with a unit tangent (column k of the Jacobian)."""

    def __init__(self, fun: Callable[..., Any], wrt: Wrt = 0, cache: bool = True) -> None:
        super().__init__(fun, cache=cache)
        self.jac_wrt = _resolve_wrt(fun, wrt, None)[0][0]

    def _options(self) -> dict:
        return dict(super()._options(), role="jacobian")

    def _rebound(self, method, wrt):
        raise TypeError("jacobian(mode='fwd') of a method: take the Jacobian of the bound "
                        "method instead, jacobian(obj.method)")

    def _title(self) -> str:
        return "Jacobian code (mode='fwd')"

    def _calls(self, fname: str) -> list:
        name = list(_signature(self.fun).parameters)[self.jac_wrt]
        return [f"srcgrad.jacobian calls {fname} once per element of {name}, with its "
                "tangent a unit vector", "and the others zeros: each call returns one column "
                "of the Jacobian."]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import numpy

        full = _bind(self.fun, args, kwargs)
        _refuse_structures("jacobian", self.fun, full, {})
        wi = self.jac_wrt
        x = numpy.asarray(full[wi])
        x = x.astype(numpy.result_type(x, 1.0), copy=False)
        full[wi] = x
        if not self._effects_checked:
            _refuse_effects("jacobian", self.fun, "element of x (mode='fwd': a JVP each)")
            self._effects_checked = True
        impl = self._ready()
        zeros = [numpy.zeros_like(numpy.asarray(a, dtype=float)) for a in full]
        cols, out = [], None
        e = numpy.zeros(x.shape, x.dtype)  # (C order: ef is a view of e)
        ef = e.reshape(-1)
        for k in range(x.size):
            ef[k] = 1
            ts = list(zeros)
            ts[wi] = e.copy()
            out, t = impl(*full, *ts)
            cols.append(numpy.asarray(t).reshape(-1))
            ef[k] = 0
        if out is None:
            out, _ = impl(*full, *zeros)
        out = numpy.asarray(out)
        return _result(numpy.stack(cols, axis=-1).reshape(out.shape + x.shape) if cols else
                       numpy.zeros(out.shape + x.shape))

    _effects_checked = False


class JVPOfGradFunction(HVPFunction):
    """`jvp(grad(f), primals, tangents)`: `(grad(f)(*primals), its directional derivative)`,
    the derivative a Hessian-vector product, from one generated function (forward over
    reverse) that takes a tangent for each argument given one (`along`)."""

    with_value = True

    def _options(self) -> dict:
        return dict(super()._options(), role="jvp_of_grad", along=self.along)

    def _title(self) -> str:
        return "JVP of the gradient code"

    def _calls(self, fname: str) -> list:
        return [f"{fname} returns the gradient and its derivative along the tangents "
                f"({', '.join(self._tangent_names())}):",
                "a Hessian-vector product (srcgrad.jvp(grad(f), primals, tangents))."]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("call it through srcgrad.jvp(grad(f), primals, tangents)")

    def _run(self, primals: list, tangents: list) -> tuple[Any, Any]:
        impl = self._ready()
        return impl(*primals, *[tangents[j] for j in self.along])


def _jvp_of_grad(g: CompiledFunction, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """`jvp(grad(f), primals, tangents)` (see JVPOfGradFunction): one generated function
    per set of arguments that have a tangent."""
    import numpy

    _refuse_structures("jvp(grad)", g.fun, primals + tangents, {})
    n = len(_signature(g.fun).parameters)
    if len(primals) != n:
        raise TypeError(f"jvp: {g.fun.__name__}() takes {n} arguments, got {len(primals)}")
    along = tuple(j for j, t in enumerate(tangents) if t is not None)
    for j in along:
        _same_shape(f"jvp: tangent {j}", tangents[j], "its primal", primals[j])
    if not along:
        grads = g(*primals)
        zeros = tuple(numpy.zeros_like(x) for x in grads) if g.wrt_tuple else \
            numpy.zeros_like(grads)
        return grads, zeros
    entries = g.__dict__.setdefault("_jvp_entries", {})
    entry = entries.get(along)
    if entry is None:
        wrt = tuple(g.wrt_index) if g.wrt_tuple else g.wrt_index[0]
        entry = entries[along] = JVPOfGradFunction(g.fun, wrt, cache=g.use_disk_cache,
                                                   along=along)
    return entry._run(list(primals), list(tangents))


def _result(a):
    """A derivative assembled from columns: a 0-d result is a numpy scalar, as grad(f)
    returns for a scalar argument."""
    return a[()] if a.ndim == 0 else a


class NestedGradFunction(CompiledFunction):
    """`grad` of a transformed scalar-valued gradient (`grad(grad(f))`, to any order):
    forward mode over the inner gradient's graph, along each basis direction of the new
    `wrt` argument. Every inner gradient must be of a size-1 argument (its output must
    be a scalar), as in JAX."""

    kind = "grad"

    def __init__(self, inner: CompiledFunction, wrt: Wrt = 0, has_aux: bool = False,
                 argnums: Wrt | None = None, cache: bool = True) -> None:
        if has_aux or inner.has_aux or inner.wrt_tuple or \
                not isinstance(inner, (GradFunction, NestedGradFunction)) or \
                inner._parent is not None:
            raise _composition_error("grad", inner)
        self.inner = inner
        super().__init__(inner.fun, wrt, False, argnums, cache)
        if self.wrt_tuple:
            raise TypeError("the outer grad of grad(grad(f)) takes a single wrt")
        self.levels = (inner.levels if isinstance(inner, NestedGradFunction) else
                       [inner.wrt_index[0]]) + [self.wrt_index[0]]

    def _rebound(self, method, wrt):
        raise TypeError("grad(grad(...)) of a method: transform the bound method instead, "
                        "grad(grad(obj.method))")

    def _options(self):
        return {"kind": "nested", "levels": tuple(self.levels)}

    def _graph_ir(self, reads: list):
        """(graph whose output is the derivative, extra tangent inputs), before codegen;
        what the function read from outside it is added to `reads`."""
        from .forward import jvp_graph

        if isinstance(self.inner, NestedGradFunction):
            graph, extra = self.inner._graph_ir(reads)
        else:
            graph, src, read = lower(self.fun, floats=set(self.levels))  # made float by __call__
            reads.append(read)
            out = graph.outputs[0]
            wrt = [graph.inputs[self.inner.wrt_index[0]]]
            _check_output(out, src, "grad")
            check_sound(graph.eqns, [out], [graph.inputs[i] for i in set(self.levels)])
            fwd = Graph(graph.inputs, graph.eqns, [out], graph.name, graph.named)
            b, grads = reverse(fwd, wrt, 1.0)
            g = self.inner._grads_or_zeros(b, grads, wrt)
            check = out if isinstance(out, Var) and out.sclass != SCALAR else None
            outs = [g] + ([check] if check is not None else [])
            graph = optimize(Graph(graph.inputs, b.eqns, outs, graph.name, b.named),
                             named=b.named)
            extra = []
        x = graph.inputs[self.levels[-1]]
        t = Var(f"t{len(extra) + 1}", "array", x.sclass, x.dclass)
        b, tan = jvp_graph(graph, {graph.inputs[self.levels[-1]].id: t})
        out = graph.outputs[0]
        d = tan.get(out.id) if isinstance(out, Var) else None
        with staging(b):
            if d is None:
                b.hint = "d" + t.hint
                d = ops.zeros_like(out) if isinstance(out, Var) else 0.0
            b.loc, b.hint = None, "d"
        new = Graph(graph.inputs, b.eqns, [d] + list(graph.outputs[1:]), graph.name, b.named)
        new = optimize(new, named=b.named)
        return new, extra + [t]

    def _build(self):
        self._reads = []
        graph, extra = self._graph_ir(self._reads)
        src = parse_function(self.fun)
        self._extra = extra
        d = graph.outputs[0]
        check = _scalar_check(graph.outputs[1]) if len(graph.outputs) > 1 else None
        fname = "grad_" * len(self.levels) + _ident(self.fun.__name__)
        fc = FunctionCode(fname, ", ".join(v.hint for v in graph.inputs), graph.eqns,
                          d, graph.named, check_scalar=check)
        fc.extra = list(extra)
        order = len(self.levels)
        what = {2: "Second-derivative", 3: "Third-derivative"}.get(order,
                                                                  f"Order-{order} derivative")
        header = (f"# {what} code (grad of grad) generated by srcgrad {_cache.VERSION} from "
                  f"{os.path.basename(src.filename)}:{src.tree.lineno} ({self.fun.__name__}).\n"
                    f"# srcgrad calls {fname} once per element of the outer grad's argument,\n"
                  "# with the last tangent a unit vector (the tangents of inner levels: ones).")
        code = emit_module(fc, graph.inputs + extra, header)
        return code.text, self._meta(code, True), graph

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import numpy

        _refuse_structures("grad(grad)", self.fun, args, kwargs)
        impl = self._ready()
        impl = self._gpu_impl(args, kwargs) or impl
        full = _bind(self.fun, args, kwargs)
        for i in set(self.levels):
            full[i] = numpy.asarray(full[i], dtype=numpy.result_type(full[i], 1.0))
        for i in self.levels[:-1]:  # each inner gradient must be a scalar
            if full[i].size != 1:
                raise TypeError("Gradient only defined for scalar-output functions. Output "
                                f"had shape: {full[i].shape}. (grad of a gradient needs the "
                                "inner gradient to be a scalar)")
        inner_t = [numpy.ones_like(full[i]) for i in self.levels[1:-1]]
        x = full[self.levels[-1]]
        result = numpy.empty(x.shape, dtype=x.dtype)
        flat = result.reshape(-1)
        basis = numpy.zeros(x.shape, x.dtype)  # (C order: bflat is a view of basis)
        bflat = basis.reshape(-1)
        for k in range(x.size):
            bflat[k] = 1
            d = numpy.asarray(impl(*full, *inner_t, basis))
            if d.size != 1:
                raise TypeError("Gradient only defined for scalar-output functions. Output "
                                f"had shape: {d.shape}.")
            flat[k] = d.reshape(())
            bflat[k] = 0
        return _result(result)  # a scalar argument: a numpy scalar, as grad(f) returns


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
        ) -> tuple[Any, Any]:
    """Forward mode, JAX's contract: `(out, tangent_out)` for tuples of primals and
    tangents (one per parameter of `fun`), from generated tangent code."""
    import numpy

    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError("jvp: primals and tangents must have the same length")
    if isinstance(fun, CompiledFunction):
        if type(fun) is GradFunction and not fun.has_aux and fun._parent is None:
            return _jvp_of_grad(fun, primals, tangents)
        raise _composition_error("jvp", fun)
    params = _signature(fun).parameters.values()
    name = getattr(fun, "__name__", type(fun).__name__)
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise TypeError(f"jvp: {name}() has keyword-only or variadic parameters, and jvp "
                        "takes one primal and one tangent per parameter; fix the others "
                        f"with a lambda: jvp(lambda x: {name}(x, p=...), (x,), (t,))")
    f = _jvp_compiled(fun)
    n = len(params)
    if len(primals) != n:
        raise TypeError(f"jvp: {name}() takes {n} arguments (one primal each), got "
                        f"{len(primals)}")
    if any(_pytree.is_structured(a) for a in primals + tangents):
        return f._call_structured_jvp(primals, tangents)
    ts = [numpy.zeros_like(numpy.asarray(p, dtype=float)) if t is None else t
          for p, t in zip(primals, tangents)]
    for k, (p, t) in enumerate(zip(primals, ts)):
        _same_shape(f"jvp: tangent {k}", t, "its primal", p)
    impl = f._ready()
    impl = f._gpu_impl(primals + tuple(ts), {}) or impl
    return impl(*primals, *ts)


class _ByIdentity:
    """The transformations `jvp(f, ...)` and `vjp(f, ...)` compile, kept per function by
    identity (two callable objects that compare equal, a model with `__eq__`, are two
    functions; an unhashable one is welcome); a bound method by its function and object
    (`model.loss` is a new object at each access). An entry goes with its function where
    that can be weakly referenced."""

    def __init__(self):
        self._entries = {}
        self._lock = threading.Lock()

    @staticmethod
    def _parts(fun) -> tuple:
        if isinstance(fun, types.MethodType):
            return fun.__func__, fun.__self__
        return (fun,)

    def get(self, fun, rest: tuple, make):
        parts = self._parts(fun)
        key = tuple(id(p) for p in parts) + rest
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and all(r() is p for r, p in zip(hit[0], parts)):
                return hit[1]
        value = make()
        refs = []
        for p in parts:
            try:
                refs.append(weakref.ref(p, lambda _, key=key: self._entries.pop(key, None)))
            except TypeError:  # (no weak reference: kept alive, like a function's globals)
                refs.append(lambda p=p: p)
        with self._lock:
            self._entries[key] = (refs, value)
        return value

    def clear(self):
        with self._lock:
            self._entries.clear()


_JVPS, _VJPS = _ByIdentity(), _ByIdentity()


def _jvp_compiled(fun):
    return _JVPS.get(fun, (), lambda: JVPFunction(fun))


def _refuse_effects(kind: str, fun, per: str):
    """hessian and jacobian(mode="fwd") run `fun`'s generated code once per element of x:
    refuse a function with a statement that runs as written (srcgrad.verbatim), whose
    effects would happen that many times, each column from another run."""
    graph, _, _ = lower(fun)

    def first(eqns):
        for e in eqns:
            if e.prim is PYTHON:
                return e
            for b in e.blocks():
                found = first(b.eqns)
                if found is not None:
                    return found
        return None

    e = first(graph.eqns)
    if e is None:
        return
    msg = (f"srcgrad.{kind} runs {getattr(fun, '__name__', 'the function')} once per {per}, "
           "and this statement runs as written (its effects, a random draw say, would "
           "happen that many times, each column coming from another run): use srcgrad.hvp "
           "or srcgrad.grad, or make the draws outside and pass them in")
    loc = e.loc
    if loc is None:
        raise SrcgradError(msg)
    raise SrcgradError(msg, loc.filename, loc.lineno, loc.col,
                       linecache.getline(loc.filename, loc.lineno) or loc.text)


def hessian(fun: Callable, *, wrt: Wrt = 0, argnums: Wrt | None = None,
            argnum: Wrt | None = None, cache: bool = True) -> HessianFunction:
    """`hessian(f, wrt=0)(*args)`: the full Hessian of scalar `f`, shape `x.shape + x.shape`,
    from one generated Hessian-vector product per element of x (`.source` shows it).
    With a tuple `wrt=(i, j)`, JAX's nest of blocks: `((H_ii, H_ij), (H_ji, H_jj))`, block
    `H_ab` of shape `x_a.shape + x_b.shape`."""
    if isinstance(fun, CompiledFunction):
        raise _composition_error("hessian", fun)
    argnums = _alias_argnum(wrt, argnums, argnum)
    return HessianFunction(fun, wrt, argnums=argnums, cache=cache)


def jacobian(fun: Callable, *, wrt: Wrt = 0, argnums: Wrt | None = None,
             argnum: Wrt | None = None, mode: str = "rev", cache: bool = True
             ) -> CompiledFunction:
    """`jacobian(f, wrt=0, mode="rev"|"fwd")(*args)`: shape `out.shape + x.shape`.
    "rev" runs one pullback per output element, "fwd" one JVP per input element.

    `jacobian(grad(f, wrt=i), wrt=j)` is the Hessian block `d2f/dx_i dx_j` (shape
    `x_i.shape + x_j.shape`), from generated forward-over-reverse code; with tuples, the
    nest of blocks JAX returns."""
    if mode not in ("rev", "fwd"):
        raise ValueError(f"mode must be 'rev' or 'fwd', got {mode!r}")
    argnums = _alias_argnum(wrt, argnums, argnum)
    if isinstance(fun, CompiledFunction):
        if not (type(fun) is GradFunction and not fun.has_aux and fun._parent is None):
            raise _composition_error("jacobian", fun)
        idx, as_tuple = _resolve_wrt(fun.fun, wrt, argnums)
        inner_wrt = tuple(fun.wrt_index) if fun.wrt_tuple else fun.wrt_index[0]
        h = HessianFunction(fun.fun, inner_wrt, cache=cache,
                            along=tuple(idx) if as_tuple else idx[0])
        h.role = "jacobian"
        return h
    idx, as_tuple = _resolve_wrt(fun, wrt, argnums)
    if as_tuple:
        raise TypeError("jacobian takes a single wrt argument")
    if mode == "rev":
        return JacobianFunction(fun, idx[0], argnums=None, cache=cache)
    return ForwardJacobianFunction(fun, idx[0], cache=cache)


_COMPOSITIONS = ("supported compositions: grad(grad(f)) (to any order, single wrt at each "
                 "level), jacobian(grad(f)) (a Hessian, or its blocks) and "
                 "jvp(grad(f), primals, tangents) (Hessian-vector products); for other "
                 "second derivatives use hessian(f) or hvp(f)")


def _composition_error(kind: str, fun) -> TypeError:
    return TypeError(f"srcgrad.{kind} of {fun!r} (an already transformed function) is not "
                     f"supported: {_COMPOSITIONS}")


def _alias_argnum(wrt, argnums, argnum):
    """`argnums` with `argnum=` (autograd's spelling) taken as it; `argnum` given with
    `wrt` or `argnums` is a TypeError."""
    if argnum is None:
        return argnums
    if argnums is not None or wrt != 0:
        raise TypeError("pass one of wrt=, argnums= or argnum=, not several")
    return argnum


@overload
def grad(fun: None = None, *, wrt: Wrt = 0, has_aux: bool = False, argnums: Wrt | None = None,
         argnum: Wrt | None = None, cache: bool = True, fuse: bool = True, compute: bool = False,
         specialize: bool = True, backend: str = "numpy"
         ) -> Callable[[Callable[..., Any]], CompiledFunction]: ...


@overload
def grad(fun: Callable[..., Any], *, wrt: Wrt = 0, has_aux: bool = False,
         argnums: Wrt | None = None, argnum: Wrt | None = None, cache: bool = True,
         fuse: bool = True, compute: bool = False, specialize: bool = True,
         backend: str = "numpy") -> CompiledFunction: ...


def grad(fun: Callable[..., Any] | None = None, *, wrt: Wrt = 0, has_aux: bool = False,
         argnums: Wrt | None = None, argnum: Wrt | None = None, cache: bool = True,
         fuse: bool = True, compute: bool = False, specialize: bool = True,
         backend: str = "numpy"
         ) -> CompiledFunction | Callable[[Callable[..., Any]], CompiledFunction]:
    """The gradient of `fun`, a function with a scalar output, as generated Python code.

    Usable as `@grad`, `@grad(wrt=(0, 1))` or `grad(f, wrt="x")`. `wrt` is a parameter
    index or name, or a tuple of them (then the result is a tuple). `argnums` (JAX's
    spelling) and `argnum` (autograd's) are accepted instead (indices only). With
    `has_aux=True`, `fun` returns `(out, aux)` and the gradient function returns
    `(grads, aux)`. `cache=False` skips the disk cache. `fuse=False` keeps cupy calls
    unfused (one kernel per primitive); numpy calls never fuse. `grad` of `grad(f)` nests
    (a `NestedGradFunction`).

    Called with dask arrays among the arguments, the same generated code runs on them
    lazily and returns dask arrays; `compute=True` returns them computed instead (one
    `dask.compute` over all the results).

    Called three times with numpy arrays of the same shapes and dtypes (and numbers of
    the same types), the gradient gets a variant specialized to them: every broadcast,
    cast and shape computation resolved when it is compiled, behind a guard that sends
    other calls to the shape-polymorphic code (at most 4 variants; see
    `specialized_source`). `specialize=False` keeps to the polymorphic code.

    `backend="numba"` compiles the gradient with numba (an optional dependency: `pip
    install "srcgrad[jit]"`): each new signature of numpy arrays and numbers gets, at its
    first call, a variant specialized to it whose elementwise work is written as explicit
    loops, compiled in nopython mode and cached on disk beside srcgrad's cache. Code numba
    cannot compile runs the numpy variant, with a warning that names the line.
    """
    argnums = _alias_argnum(wrt, argnums, argnum)
    _check_backend("grad", backend, specialize)
    if fun is None:
        return functools.partial(grad, wrt=wrt, has_aux=has_aux, argnums=argnums, cache=cache,
                                 fuse=fuse, compute=compute, specialize=specialize,
                                 backend=backend)
    if isinstance(fun, CompiledFunction):
        if backend != "numpy":
            raise ValueError("backend='numba' is for grad, value_and_grad, vjp and hvp of a plain "
                             "function; grad of grad(f) runs the numpy code")
        return _computing(NestedGradFunction(fun, wrt, has_aux, argnums, cache), compute)
    return _computing(GradFunction(fun, wrt, has_aux, argnums, cache, fuse), compute,
                      specialize, backend)


@overload
def value_and_grad(fun: None = None, *, wrt: Wrt = 0, has_aux: bool = False,
                   argnums: Wrt | None = None, argnum: Wrt | None = None, cache: bool = True,
                   fuse: bool = True, compute: bool = False, specialize: bool = True,
                   backend: str = "numpy"
                   ) -> Callable[[Callable[..., Any]], ValueAndGradFunction]:
    ...


@overload
def value_and_grad(fun: Callable[..., Any], *, wrt: Wrt = 0, has_aux: bool = False,
                   argnums: Wrt | None = None, argnum: Wrt | None = None, cache: bool = True,
                   fuse: bool = True, compute: bool = False, specialize: bool = True,
                   backend: str = "numpy") -> ValueAndGradFunction: ...


def value_and_grad(fun: Callable[..., Any] | None = None, *, wrt: Wrt = 0,
                   has_aux: bool = False, argnums: Wrt | None = None,
                   argnum: Wrt | None = None, cache: bool = True, fuse: bool = True,
                   compute: bool = False, specialize: bool = True, backend: str = "numpy"
                   ) -> ValueAndGradFunction | Callable[[Callable[..., Any]],
                                                        ValueAndGradFunction]:
    """Like `grad`, but returns `(value, grads)`; fits `scipy.optimize.minimize(jac=True)`
    (with dask arrays among the arguments, pass `compute=True` there). Specialized to
    hot signatures as `grad` is (`specialize=False` keeps to the polymorphic code), and
    compiled by numba with `backend="numba"` as `grad` is."""
    argnums = _alias_argnum(wrt, argnums, argnum)
    _check_backend("value_and_grad", backend, specialize)
    if fun is None:
        return functools.partial(value_and_grad, wrt=wrt, has_aux=has_aux, argnums=argnums,
                                 cache=cache, fuse=fuse, compute=compute,
                                 specialize=specialize, backend=backend)
    return _computing(ValueAndGradFunction(fun, wrt, has_aux, argnums, cache, fuse), compute,
                      specialize, backend)


def _computing(f: CompiledFunction, compute: bool, specialize: bool = False,
               backend: str = "numpy") -> CompiledFunction:
    f.compute = bool(compute)
    f.specialize = bool(specialize)
    f.backend = backend
    return f


_BACKENDS = ("numpy", "numba")


def _check_backend(kind: str, backend, specialize: bool = True) -> None:
    """Refuse an unknown backend, and numba where it is not installed (saying how)."""
    if backend not in _BACKENDS:
        raise ValueError(f"srcgrad.{kind}: backend={backend!r} is not one of "
                         f"{', '.join(map(repr, _BACKENDS))}")
    if backend == "numba":
        if not specialize:
            raise ValueError(f"srcgrad.{kind}: backend='numba' compiles code specialized to "
                             "each call's shapes and dtypes; it cannot be used with "
                             "specialize=False")
        from .jit import require

        require()


def _vjp_compiled(fun, wrt, argnums=None, backend="numpy"):
    def make():
        f = VJPFunction(fun, wrt, argnums=argnums)
        if backend != "numpy":
            f.specialize, f.backend = True, backend
        return f

    return _VJPS.get(fun, (wrt, argnums, backend), make)


def vjp(fun: Callable[..., Any], *primals: Any, wrt: Wrt = 0, argnums: Wrt | None = None,
        argnum: Wrt | None = None, backend: str = "numpy"
        ) -> tuple[Any, Callable[[Any], Any]]:
    """`(out, pullback)`: `pullback(cotangent)` returns the gradients of <cotangent, out>
    w.r.t. the `wrt` arguments, from generated code (compiled once per fun and wrt).

    With `backend="numba"`, each new signature of the primals gets a variant whose loops
    numba compiles (the function around them, which returns the pullback, stays Python)."""
    _check_backend("vjp", backend)
    argnums = _alias_argnum(wrt, argnums, argnum)
    key = tuple(wrt) if isinstance(wrt, list) else wrt
    if isinstance(argnums, list):
        argnums = tuple(argnums)
    return _vjp_compiled(fun, key, argnums, backend)(*primals)


def hvp(fun: Callable[..., Any], *, wrt: Wrt = 0, argnums: Wrt | None = None,
        argnum: Wrt | None = None, cache: bool = True, backend: str = "numpy"
        ) -> HVPFunction:
    """`hvp(f, wrt=0)(*args, v)`: the Hessian of scalar `f` w.r.t. argument `wrt`, times
    `v` (same shape as that argument), by forward-over-reverse without the Hessian.

    `backend="numba"` compiles it with numba as `grad` does: each new signature of the
    arguments and v gets a compiled variant at its first call."""
    _check_backend("hvp", backend)
    if isinstance(fun, CompiledFunction):
        raise _composition_error("hvp", fun)
    argnums = _alias_argnum(wrt, argnums, argnum)
    h = HVPFunction(fun, wrt, argnums=argnums, cache=cache)
    if h.wrt_tuple:
        raise TypeError("hvp takes a single wrt argument (hessian(f, wrt=(i, j)) gives the "
                        "blocks of several)")
    if backend != "numpy":
        h.specialize, h.backend = True, backend
    return h


def show(f: Callable[..., Any], mode: str = "grad", *, wrt: Wrt = 0, ir: bool = False,
         file: IO[str] | None = None) -> None:
    """Print the generated source (or with ir=True the graph) of a transformed function
    (`grad`, `hessian`, `jacobian`...), or of `grad(f, wrt=wrt)` (or the `mode`'s
    transformation: "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian") when
    given a plain function."""
    if not isinstance(f, CompiledFunction):
        maker = {"grad": grad, "value_and_grad": value_and_grad, "vjp": VJPFunction,
                 "jvp": lambda f, wrt=0: JVPFunction(f), "hvp": hvp, "hessian": hessian,
                 "jacobian": jacobian}.get(mode)
        if maker is None:
            raise ValueError(f"unknown mode {mode!r}: use 'grad', 'value_and_grad', 'vjp', "
                             "'jvp', 'hvp', 'hessian' or 'jacobian'")
        f = maker(f, wrt=wrt)
    print(f.ir if ir else f.source, file=file)


def clear_cache() -> None:
    """Empty the disk cache and the in-memory cache of every transformed function."""
    for f in list(_LIVE):
        f.clear()
    _cache.clear()
    _VJPS.clear()
    _JVPS.clear()
