"""Stage 5, codegen: Graph -> Python source that reads like hand-written derivative code.

One primitive a line, named after the user's variables (`z`, its intermediates `z_1`,
`z_2`..., the cotangent of `h` is `dh`), a comment with the user's line above each group
of statements, `del` of forward intermediates once the backward pass is done with them,
constants as plain literals. numpy is reached through the module-level name `np`, so the
same source can be bound to cupy. Helpers numpy lacks come from `runtime.ops.helpers`.
"""
from __future__ import annotations

import ast
import keyword
import re

import numpy

from runtime.ops import helpers as _helpers
from runtime.ops.core import literal

from .ir import Eqn, Var

__all__ = ["FunctionCode", "emit_module", "index_source"]

_INLINE = {"shape", "ndim", "pack", "make_slice", "len", "reduced_size"}
_ident = re.compile(r"[^0-9a-zA-Z_]")
# names generated code itself uses; a user variable with one of these names is suffixed
_RESERVED = {"np", "float", "slice", "len", "int"} | set(keyword.kwlist)
_EXTRA_HELPERS = {"as_float", "check_scalar"}


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
    return f"np.array({literal(a.tolist())}, dtype={a.dtype.name!r})"


class FunctionCode:
    """One generated function: a signature, statements and a return expression."""

    def __init__(self, name, params, eqns, returns, named, *, prologue=(), nested=None,
                 check_scalar=None, free_after_forward=True, prefer_names=None,
                 docstring=None):
        self.name = name
        self.params = params  # source text of the parameter list
        self.eqns = eqns
        self.returns = returns
        self.named = named
        self.prologue = list(prologue)
        self.nested = nested  # (FunctionCode, index into eqns where it starts)
        self.check_scalar = check_scalar
        self.free = free_after_forward
        self.prefer = prefer_names or {}
        self.docstring = docstring


class _Namer:
    def __init__(self, reserved):
        self.used = set(reserved)
        self.names: dict[int, str] = {}

    def fresh(self, base: str, exact_first: bool) -> str:
        base = _ident.sub("_", base) or "t"
        if base[0].isdigit():
            base = "t" + base
        if exact_first and base not in self.used and base not in _RESERVED:
            self.used.add(base)
            return base
        k = 1
        while f"{base}_{k}" in self.used:
            k += 1
        name = f"{base}_{k}"
        self.used.add(name)
        return name


class _Emitter:
    def __init__(self, namer: _Namer, consts: dict):
        self.namer = namer
        self.consts = consts
        self.helpers: set[str] = set()
        self.inline: dict[int, str] = {}

    def src(self, v, index_ctx=False) -> str:
        if isinstance(v, Var):
            if v.const_name is not None:
                self.consts[v.const_name] = v.const_value
                return v.const_name
            if v.id in self.inline:
                return self.inline[v.id]
            return self.namer.names[v.id]
        if isinstance(v, numpy.ndarray):
            return _array_literal(v)
        if isinstance(v, (tuple, slice)) and index_ctx:
            return index_source(v)
        text = literal(v)
        return f"({text})" if text.startswith("-") else text

    def expr(self, e: Eqn, uses) -> str:
        p = e.prim
        if p.name == "getitem":
            x, idx = e.ins
            return f"{self.src(x)}[{self.index_src(idx)}]"
        ins = [self.src(a) for a in e.ins]
        text = p.spell(ins, e.params, p.defaults)
        head = text.split("(", 1)[0]
        if "(" in text and head.isidentifier() and head in _helpers.HELPERS:
            self.helpers.add(head)
        return text

    def index_src(self, idx) -> str:
        if isinstance(idx, Var) and idx.id in self.pack_items:
            items = self.pack_items[idx.id]
            parts = [self.index_src(i) if isinstance(i, Var) and i.id in self.slice_items
                     else (self.src(i) if isinstance(i, Var) else index_source((i,))[:-1])
                     for i in items]
            return parts[0] + "," if len(parts) == 1 else ", ".join(parts)
        if isinstance(idx, Var) and idx.id in self.slice_items:
            a, b, c = (("" if x is None else self.src(x)) for x in self.slice_items[idx.id])
            return f"{a}:{b}" if c == "" else f"{a}:{b}:{c}"
        if isinstance(idx, Var):
            return self.src(idx)
        return index_source(idx)


def _norm(line: str) -> str:
    """Let Python settle parentheses and spacing (e.g. `x * (-1.0)` -> `x * -1.0`)."""
    return ast.unparse(ast.parse(line))


def _uses(eqns, returns):
    count: dict[int, int] = {}
    for e in eqns:
        for v in e.var_ins():
            count[v.id] = count.get(v.id, 0) + 1
    for v in _iter_vars(returns):
        count[v.id] = count.get(v.id, 0) + 1
    return count


def _iter_vars(obj):
    if isinstance(obj, Var):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _iter_vars(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _iter_vars(o)


def _render_return(em: _Emitter, obj) -> str:
    if isinstance(obj, tuple):
        inner = ", ".join(_render_return(em, o) for o in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, list):
        return "[" + ", ".join(_render_return(em, o) for o in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{literal(k)}: {_render_return(em, v)}"
                               for k, v in obj.items()) + "}"
    if hasattr(obj, "text"):  # verbatim source (api._Raw)
        return obj.text
    return em.src(obj)


def _emit_function(fc: FunctionCode, namer: _Namer, em: _Emitter, inputs, indent: str,
                   lines: list):
    uses = _uses(fc.eqns, fc.returns)
    # which equations are written inline at their single use
    em.pack_items = getattr(em, "pack_items", {})
    em.slice_items = getattr(em, "slice_items", {})
    for e in fc.eqns:
        o = e.outs[0]
        if e.prim.name == "pack":
            em.pack_items[o.id] = e.ins
        elif e.prim.name == "make_slice":
            em.slice_items[o.id] = e.ins
    for v in inputs:
        namer.names.setdefault(v.id, v.hint)
    last_use: dict[int, int] = {}
    for i, e in enumerate(fc.eqns):
        for v in e.var_ins():
            last_use[v.id] = i
    returned = {v.id for v in _iter_vars(fc.returns)}
    lines.append(f"{indent}def {fc.name}({fc.params}):")
    body = indent + "    "
    if fc.docstring:
        lines.append(f'{body}"""{fc.docstring}"""')
    for p in fc.prologue:
        lines.append(body + p)
    if fc.check_scalar is not None and not _defined_in(fc.check_scalar, fc.eqns):
        lines.append(f"{body}check_scalar({em.src(fc.check_scalar)})")
        em.helpers.add("check_scalar")
    group = None
    fwd_defined = []
    nested_at = fc.nested[1] if fc.nested else None
    for i, e in enumerate(fc.eqns):
        if nested_at is not None and i == nested_at:
            break
        o = e.outs[0]
        if e.prim.name in _INLINE and uses.get(o.id, 0) <= 1 and o.id not in returned:
            if e.prim.name in ("pack", "make_slice") and _only_index_use(o, fc.eqns):
                continue
            em.inline[o.id] = em.expr(e, uses)
            continue
        key = (e.loc, e.phase)
        if key != group and e.loc is not None:
            tag = "grad of: " if e.phase == "bwd" else ""
            lines.append(f"{body}# {tag}{e.loc.text}   ({e.loc.short()})")
        group = key
        exact = o.id in fc.named
        if o.id in fc.prefer:
            exact, base = True, fc.prefer[o.id]
        else:
            base = o.hint
        namer.names[o.id] = namer.fresh(base, exact)
        lines.append(body + _norm(f"{namer.names[o.id]} = {em.expr(e, uses)}"))
        if e.phase == "fwd":
            fwd_defined.append(o)
        if fc.check_scalar is not None and o is fc.check_scalar:
            lines.append(f"{body}check_scalar({namer.names[o.id]})")
            em.helpers.add("check_scalar")
        if fc.free and e.phase == "bwd":
            dead = [v for v in e.var_ins() if last_use.get(v.id) == i and v.id not in
                    returned and v.kind == "array" and v.const_name is None and
                    v.id not in em.inline and _is_fwd(v, fc.eqns) and v.id in namer.names
                    and v not in inputs]
            if dead:
                lines.append(f"{body}del {', '.join(namer.names[v.id] for v in dead)}")
    if fc.nested:
        inner, _ = fc.nested
        lines.append("")
        _emit_function(inner, namer, em, getattr(inner, "inputs", []), body, lines)
    lines.append(f"{body}return {_render_return(em, fc.returns)}")


def _only_index_use(v, eqns) -> bool:
    for e in eqns:
        for i, a in enumerate(e.ins):
            if a is v and not (e.prim.name in ("getitem",) and i == 1) and \
                    e.prim.name not in ("pack",):
                return False
    return True


def _defined_in(v, eqns) -> bool:
    return any(o is v for e in eqns for o in e.outs)


def _is_fwd(v, eqns) -> bool:
    for e in eqns:
        if e.outs[0] is v:
            return e.phase == "fwd"
    return False


def emit_module(fc: FunctionCode, inputs, header: str) -> tuple[str, dict]:
    """The module source for `fc` and the module-level constants it refers to by name."""
    reserved = set(_helpers.HELPERS) | _EXTRA_HELPERS | {v.hint for v in inputs}
    namer = _Namer(reserved)
    consts: dict = {}
    em = _Emitter(namer, consts)
    body: list[str] = []
    _emit_function(fc, namer, em, inputs, "", body)
    if any("as_float(" in ln for ln in body):
        em.helpers.add("as_float")
    lines = [header, "import numpy as np"]
    if em.helpers:
        lines.append(f"from runtime.ops.helpers import {', '.join(sorted(em.helpers))}")
    lines += ["", ""] + body
    return "\n".join(lines) + "\n", consts
