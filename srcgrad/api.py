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
import inspect
import os
import weakref
from typing import Any, Callable, Sequence

from runtime import ops

from . import cache as _cache
from .codegen import FunctionCode, emit_module
from .errors import WrtError
from .frontend import parse_function
from .ir import Graph, Var
from .lower import SCALAR, lower, staging
from .optimize import optimize
from .reverse import reverse

__all__ = ["grad", "value_and_grad", "vjp", "show", "clear_cache"]

_LIVE: "weakref.WeakSet[_CompiledBase]" = weakref.WeakSet()


class _Raw:
    """Source text placed verbatim in a generated return expression."""

    def __init__(self, text):
        self.text = text


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
    params = list(inspect.signature(fun).parameters.values())
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


def _signature_text(tree: ast.FunctionDef) -> str:
    a = tree.args
    parts = [p.arg for p in a.posonlyargs]
    if a.posonlyargs:
        parts.append("/")
    parts += [p.arg for p in a.args]
    if a.kwonlyargs:
        parts.append("*")
        parts += [p.arg for p in a.kwonlyargs]
    return ", ".join(parts)


class _CompiledBase:
    """A transformed function: compiled on first use, then called directly."""

    kind = "grad"

    def __init__(self, fun: Callable, wrt=0, has_aux: bool = False, argnums=None,
                 cache: bool = True):
        if isinstance(fun, _CompiledBase):
            raise TypeError(f"srcgrad.{self.kind} of an already transformed function is not "
                            "supported yet: apply it to the plain Python function")
        if not callable(fun):
            raise TypeError(f"srcgrad.{self.kind} needs a function, got {type(fun).__name__}")
        self.fun = fun
        self.wrt_index, self.wrt_tuple = _resolve_wrt(fun, wrt, argnums)
        self.has_aux = bool(has_aux)
        self.use_disk_cache = bool(cache)
        self._impl = None
        self._source = None
        self._graph = None
        self.compile_count = 0
        self.cache_path = None
        functools.update_wrapper(self, fun)
        _LIVE.add(self)

    # -- the pipeline ----------------------------------------------------------------------

    def _options(self) -> dict:
        return {"kind": self.kind, "wrt": self.wrt_index, "tuple": self.wrt_tuple,
                "aux": self.has_aux}

    def _build(self):
        """Run the pipeline: (source, meta) of the generated module, and the IR."""
        graph, src, consts = lower(self.fun)
        wrt = [graph.inputs[i] for i in self.wrt_index]
        result = graph.outputs[0]
        if self.has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"{self.fun.__name__} was transformed with has_aux=True, so "
                                "it must return a pair (output, aux)")
            out, aux = result
        else:
            out, aux = result, None
        fwd = Graph(graph.inputs, graph.eqns, [out], graph.name, graph.named)
        b, returns, check, nested = self._adjoint(fwd, wrt, out, aux)
        opt = optimize(Graph(graph.inputs, b.eqns, [returns], graph.name), named=b.named,
                       keep=[check] if check is not None else ())
        opt.check(extra_inputs=[self._seed] if self.kind == "vjp" else ())
        returns = opt.outputs[0]
        fname = f"{self.kind}_{self.fun.__name__}"
        prologue = [f"{graph.inputs[i].hint} = as_float({graph.inputs[i].hint})"
                    for i in self.wrt_index]
        fc = self._function_code(fname, src, opt, returns, b.named, prologue, check, nested)
        header = (f"# Gradient code generated by srcgrad {_cache.VERSION} from "
                  f"{os.path.basename(src.filename)}:{src.tree.lineno} ({self.fun.__name__}).")
        text, consts_used = emit_module(fc, graph.inputs, header)
        meta = {"entry": fname, "consts": sorted(consts_used)}
        return text, meta, opt

    def _function_code(self, fname, src, opt, returns, named, prologue, check, nested):
        return FunctionCode(fname, _signature_text(src.tree), opt.eqns, returns, named,
                            prologue=prologue, check_scalar=check)

    def _grads_or_zeros(self, b, grads, wrt):
        with staging(b):
            b.loc, b.phase = None, "bwd"
            out = []
            for g, v in zip(grads, wrt):
                if g is None:
                    b.hint = "d" + v.hint
                    g = ops.zeros_like(v)
                    b.named.add(g.id)
                out.append(g)
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

    def _compile(self):
        key = None
        loaded = None
        if self.use_disk_cache and _cache.cache_dir() is not None:
            key = _cache.cache_key(self.fun, self._options())
            loaded = _cache.load(key)
        if loaded is not None:
            text, meta, path = loaded
        else:
            text, meta, self._graph = self._build()
            self.compile_count += 1
            path = _cache.store(key, text, meta) if key is not None else None
            if path is None:
                code = self.fun.__code__
                path = (f"<srcgrad {meta['entry']} {os.path.basename(code.co_filename)}:"
                        f"{code.co_firstlineno}>")
        self.cache_path = path
        ns = {"__name__": f"srcgrad_generated.{meta['entry']}"}
        _cache.exec_source(text, path, ns)
        for name in meta["consts"]:
            ns[name] = _lookup_const(self.fun, name)
        impl = ns[meta["entry"]]
        impl.__defaults__ = self.fun.__defaults__
        impl.__kwdefaults__ = self.fun.__kwdefaults__
        self._source = text if not text.startswith(_cache._MAGIC) else \
            text.split("\n", 2)[2]
        self._impl = impl
        return impl

    # -- the public face ---------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        impl = self._impl
        if impl is None:
            impl = self._compile()
        return impl(*args, **kwargs)

    @property
    def source(self) -> str:
        """The generated Python source of this transformation."""
        if self._source is None:
            self._compile()
        return self._source

    @property
    def ir(self) -> str:
        """The optimized static graph the source was generated from, printed."""
        if self._graph is None:
            _, _, self._graph = self._build()
        return str(self._graph)

    def clear(self):
        self._impl = self._source = self._graph = None

    def __repr__(self):
        return f"<srcgrad.{self.kind} of {self.fun.__qualname__}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def _lookup_const(fun, name):
    fun = inspect.unwrap(fun)
    code = fun.__code__
    if fun.__closure__ and name in code.co_freevars:
        return fun.__closure__[code.co_freevars.index(name)].cell_contents
    return fun.__globals__[name]


class GradFunction(_CompiledBase):
    """`grad(f)`: returns the gradient of f's scalar output w.r.t. the `wrt` arguments."""

    kind = "grad"


class ValueAndGradFunction(_CompiledBase):
    """`value_and_grad(f)`: returns (f(...), grad); with has_aux ((value, aux), grad)."""

    kind = "value_and_grad"

    def _returns(self, out, g, aux):
        if self.has_aux:
            return ((out, aux), g)
        return (out, g)


class VJPFunction(_CompiledBase):
    """`vjp` compiled: returns (out, pullback); pullback(cotangent) gives the gradients."""

    kind = "vjp"

    def _adjoint(self, fwd, wrt, out, aux):
        seed = Var("dout", "array")
        self._seed = seed
        b, grads = reverse(fwd, wrt, seed)
        g = self._grads_or_zeros(b, grads, wrt)
        return b, (out, g), None, None

    def _function_code(self, fname, src, opt, returns, named, prologue, check, nested):
        out, grads = returns
        eqns = opt.eqns
        first_bwd = next((i for i, e in enumerate(eqns) if e.phase == "bwd"), len(eqns))
        inner = FunctionCode("pullback", self._seed.hint, eqns[first_bwd:], grads,
                             named, free_after_forward=False)
        inner.inputs = [self._seed]
        outer = FunctionCode(fname, _signature_text(src.tree), eqns[:first_bwd],
                             (out, _Raw("pullback")), named, prologue=prologue)
        outer.nested = (inner, len(eqns[:first_bwd]))
        return outer


def grad(fun: Callable | None = None, *, wrt: Any = 0, has_aux: bool = False,
         argnums: Any = None, cache: bool = True):
    """The gradient of `fun`, a function with a scalar output, as generated Python code.

    Usable as `@grad`, `@grad(wrt=(0, 1))` or `grad(f, wrt="x")`. `wrt` is a parameter
    index or name, or a tuple of them (then the result is a tuple). `argnums` is accepted
    as JAX's spelling (indices only). With `has_aux=True`, `fun` returns `(out, aux)` and
    the gradient function returns `(grads, aux)`. `cache=False` skips the disk cache.
    """
    if fun is None:
        return functools.partial(grad, wrt=wrt, has_aux=has_aux, argnums=argnums, cache=cache)
    return GradFunction(fun, wrt, has_aux, argnums, cache)


def value_and_grad(fun: Callable | None = None, *, wrt: Any = 0, has_aux: bool = False,
                   argnums: Any = None, cache: bool = True):
    """Like `grad`, but returns `(value, grads)`; fits `scipy.optimize.minimize(jac=True)`."""
    if fun is None:
        return functools.partial(value_and_grad, wrt=wrt, has_aux=has_aux, argnums=argnums,
                                 cache=cache)
    return ValueAndGradFunction(fun, wrt, has_aux, argnums, cache)


@functools.lru_cache(maxsize=None)
def _vjp_compiled(fun, wrt):
    return VJPFunction(fun, wrt)


def vjp(fun: Callable, *primals, wrt: Any = 0):
    """`(out, pullback)`: `pullback(cotangent)` returns the gradients of <cotangent, out>
    w.r.t. the `wrt` arguments, from generated code (compiled once per fun and wrt)."""
    key = tuple(wrt) if isinstance(wrt, list) else wrt
    return _vjp_compiled(fun, key)(*primals)


def show(f, mode: str = "grad", *, wrt: Any = 0, ir: bool = False, file=None) -> None:
    """Print the generated source (or with ir=True the graph) of a transformed function,
    or of `grad(f, wrt=wrt)` when given a plain function."""
    if not isinstance(f, _CompiledBase):
        maker = {"grad": grad, "value_and_grad": value_and_grad, "vjp": VJPFunction}.get(mode)
        if maker is None:
            raise ValueError(f"unknown mode {mode!r}: use 'grad', 'value_and_grad' or 'vjp'")
        f = maker(f, wrt=wrt)
    print(f.ir if ir else f.source, file=file)


def clear_cache() -> None:
    """Empty the disk cache and the in-memory cache of every transformed function."""
    for f in list(_LIVE):
        f.clear()
    _cache.clear()
    _vjp_compiled.cache_clear()
