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
import numbers
import re

import numpy

from runtime.ops import helpers as _helpers
from runtime.ops.core import literal

from .ir import Eqn, Var, iter_vars

__all__ = ["FunctionCode", "emit_module", "index_source"]

_INLINE = {"shape", "ndim", "pack", "make_slice", "len", "reduced_size"}
_ident = re.compile(r"[^0-9a-zA-Z_]")
# names generated code itself uses; a user variable with one of these names is suffixed
_RESERVED = {"np", "float", "slice", "len", "int"} | set(keyword.kwlist)
_INPLACE = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
# primitives whose result never shares memory with their inputs (besides elementwise ones
# and the bilinear cotangent ops)
_FRESH_READERS = {"sum", "mean", "prod", "max", "min", "var", "std", "logsumexp", "matmul",
                  "dot", "inner", "outer", "tensordot", "trace", "trace_transpose",
                  "scatter_add", "concatenate", "stack", "zeros_like", "ones_like", "shape",
                  "ndim", "reduced_size", "fused"}
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
        self.floats = set()  # ids of inputs the prologue made arrays (as_float)
        self.keep = set()  # ids never deleted (read by a nested function)


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
            name = self.namer.names.get(v.id)
            if name is None:
                return self._unnamed(v)
            return name
        if isinstance(v, numpy.ndarray):
            return _array_literal(v)
        if isinstance(v, (tuple, slice)) and index_ctx:
            return index_source(v)
        text = literal(v)
        return f"({text})" if text.startswith("-") else text

    def _unnamed(self, v: Var) -> str:
        """An index part whose statement was left out (it is written where it is used, see
        `_only_index_use`), read outside an index: `slice(a, b, c)` or a tuple."""
        if v.id in self.slice_items:
            a, b, c = (self.src(x) for x in self.slice_items[v.id])
            return f"slice({a}, {b}, {c})"
        if v.id in self.pack_items:
            items = [self.src(x) for x in self.pack_items[v.id]]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        raise KeyError(f"codegen: no name for {v!r}")

    def expr(self, e: Eqn, uses) -> str:
        p = e.prim
        if p.name == "shape" and isinstance(e.ins[0], Var) and e.ins[0].id in self.maybe_py:
            return f"np.shape({self.src(e.ins[0])})"  # may be a Python number at run time
        if p.name == "reduced_size" and isinstance(e.ins[0], Var) and \
                e.ins[0].id in self.maybe_py and e.params.get("axis") is None:
            return f"np.size({self.src(e.ins[0])})"
        if p.name == "getitem":
            x, idx = e.ins
            return f"{self.src(x)}[{self.index_src(idx)}]"
        ins = [self.src(a) for a in e.ins]
        if getattr(p, "custom", False):
            self.consts[p.name] = p  # the user's op is called by its name
        text = p.spell(ins, e.params, p.defaults)
        head = text.split("(", 1)[0]
        if "(" in text and head.isidentifier() and head in _helpers.HELPERS:
            self.helpers.add(head)
        return text

    def index_src(self, idx) -> str:
        if isinstance(idx, Var) and idx.id in self.namer.names:
            return self.namer.names[idx.id]  # a tuple built once and used more than once
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
    em.pack_items = getattr(em, "pack_items", {})
    em.slice_items = getattr(em, "slice_items", {})
    em.carries = getattr(em, "carries", set())
    em.maybe_py = getattr(em, "maybe_py", set())
    em.maybe_py.update(v.id for v in inputs if v.id not in fc.floats)
    em.regions = getattr(em, "regions", [])
    _collect(fc.eqns, em)
    _python_numbers(fc.eqns, em.maybe_py)
    em.floating = _floating_values(fc.eqns, getattr(em, "floating", set()) | fc.floats)
    for v in inputs:
        namer.names.setdefault(v.id, v.hint)
        namer.used.add(namer.names[v.id])
    uses = _uses(fc.eqns, (fc.returns, fc.check_scalar))
    returned = {v.id for v in iter_vars(fc.returns)}
    lines.append(f"{indent}def {fc.name}({fc.params}):")
    body = indent + "    "
    if fc.docstring:
        lines.append(f'{body}"""{fc.docstring}"""')
    for p in fc.prologue:
        lines.append(body + p)
    if fc.check_scalar is not None and not _defined_in(fc.check_scalar, fc.eqns):
        lines.append(f"{body}check_scalar({em.src(fc.check_scalar)})")
        em.helpers.add("check_scalar")
    ctx = _BlockCtx(fc, namer, em, uses, returned, inputs)
    ctx.emit(fc.eqns, body, lines, top=True)
    if fc.nested:
        inner, _ = fc.nested
        lines.append("")
        _emit_function(inner, namer, em, getattr(inner, "inputs", []), body, lines)
    lines.append(f"{body}return {_render_return(em, fc.returns)}")


def _collect(eqns, em):
    for e in eqns:
        o = e.outs[0] if e.outs else None
        if e.prim.name == "pack":
            em.pack_items[o.id] = e.ins
        elif e.prim.name == "make_slice":
            em.slice_items[o.id] = e.ins
        elif e.prim.name in ("for", "while"):
            em.carries.update(c.id for c in e.params["carry"])
        for b in e.blocks():
            _collect(b.eqns, em)


def _python_numbers(eqns, out: set):
    """Ids of Vars that may hold a plain Python number at run time (a loop or branch
    started from a constant, and arithmetic on such values only)."""
    import numbers

    def maybe(v):
        return isinstance(v, numbers.Number) or (isinstance(v, Var) and v.id in out)

    pushed: dict = {}

    for _ in range(3):  # loops feed back: iterate a few times
        _python_numbers_pass(eqns, out, maybe, pushed)


def _python_numbers_pass(eqns, out, maybe, pushed):
    if True:
        for e in eqns:
            name = e.prim.name
            if name == "push":
                pushed[e.params.get("tag")] = [maybe(v) for v in e.ins[1:]]
            elif name == "pop":
                flags = pushed.get(e.params.get("tag"), [])
                out.update(o.id for o, f in zip(e.outs, flags) if f)
            if name in ("for", "while"):
                inits = e.ins[3:] if name == "for" else e.ins
                body = e.params["body"]
                for c, i, n, o in zip(e.params["carry"], inits, body.outs, e.outs):
                    if maybe(i) or maybe(n):
                        out.update((c.id, o.id))
            elif name == "cond":
                for o, a, b in zip(e.outs, e.params["then"].outs, e.params["else"].outs):
                    if maybe(a) or maybe(b):
                        out.add(o.id)
            elif e.prim.elementwise and e.outs and e.var_ins() and all(
                    maybe(a) for a in e.ins):
                out.add(e.outs[0].id)
            elif name == "sum_to" and maybe(e.ins[0]):  # returns a number it is given as is
                out.add(e.outs[0].id)
            for b in e.blocks():
                _python_numbers_pass(b.eqns, out, maybe, pushed)


# ops whose result is floating whatever their operands' dtypes (an int array in, floats out)
_FLOAT_OUT = {"divide", "sin", "cos", "tan", "exp", "expm1", "log", "log1p", "sqrt", "tanh",
              "sinh", "cosh", "arcsin", "arccos", "arctan", "sigmoid", "softplus", "mean",
              "var", "std", "logsumexp"}
# differentiable ops whose result is floating exactly when a data operand is (sums,
# products, views, matmul...); every other op's result may be an integer or bool array
_FLOAT_IF_ANY = {"sum", "prod", "max", "min", "getitem", "reshape", "transpose", "swapaxes",
                 "moveaxis", "expand_dims", "squeeze", "flip", "sum_to", "broadcast_to",
                 "matmul", "dot", "inner", "outer", "tensordot", "trace", "trace_transpose",
                 "concatenate", "stack", "scatter_add", "zeros_like", "ones_like", "to_device",
                 "stack_list"}


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
        name = e.prim.name
        if name == "cond":
            for b in e.blocks():
                _floating_values(b.eqns, floating)
            sides = (e.params["then"].outs, e.params["else"].outs)
            floating.update(o.id for o, a, b in zip(e.outs, *sides)
                            if _inexact(a, floating) and _inexact(b, floating))
        elif name in ("for", "while"):
            _floating_loop(e, floating)
        elif e.outs and _floating_result(e, floating):
            floating.add(e.outs[0].id)
    return floating


def _floating_result(e, floating) -> bool:
    name = e.prim.name
    if name in _FLOAT_OUT:
        return True
    if name == "cast_like":
        return _inexact(e.ins[1], floating)
    if e.params.get("dtype") is not None:
        try:
            return numpy.dtype(e.params["dtype"]).kind in "fc"
        except TypeError:
            return False
    if name in ("zeros", "ones", "eye"):  # float64 unless a dtype is passed by position
        return len(e.ins) == 1
    if name == "full":
        return len(e.ins) == 2 and _inexact(e.ins[1], floating)
    if not (name in _FLOAT_IF_ANY or e.prim.elementwise and e.prim.differentiable):
        return False
    data = [a for i, a in enumerate(e.ins) if e.prim.is_diff_input(i) or not
            e.prim.differentiable]
    return any(_inexact(a, floating) for a in data)


def _floating_loop(e, floating):
    """Loop results: floating when the initial value and every iteration's are (assumed
    for the carried values, then dropped where the body disproves it)."""
    body = e.params["body"]
    inits = e.ins[3:] if e.prim.name == "for" else e.ins
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


def _reads(eqns) -> set:
    out = set()
    for e in eqns:
        out.update(v.id for v in e.var_ins())
    return out


class _BlockCtx:
    def __init__(self, fc, namer, em, uses, returned, inputs):
        self.fc, self.namer, self.em = fc, namer, em
        self.uses, self.returned = uses, returned
        self.inputs = {v.id for v in inputs}

    def name(self, v, base=None, exact=None):
        if v.id in self.namer.names:
            return self.namer.names[v.id]
        if v.id in self.fc.prefer:
            base, exact = self.fc.prefer[v.id], True
        n = self.namer.fresh(base or v.hint, v.id in self.fc.named if exact is None else exact)
        self.namer.names[v.id] = n
        return n

    def emit(self, eqns, ind, lines, top=False, group=None):
        em = self.em
        inlined = {e.outs[0].id: e for e in eqns if self._inlinable(e)}
        absorb = self._absorptions(eqns) if top and self.fc.free else {}
        moved = {i: j for j, (i, _) in absorb.items()}
        last_use = {}
        reads_of = {}
        if top:
            for i, e in enumerate(eqns):
                reads = []
                for v in e.var_ins():  # a value written inline is read where it is used
                    reads.extend(reads_of.get(v.id, [v]) if v.id in inlined else [v])
                if e.outs and e.outs[0].id in inlined:
                    reads_of[e.outs[0].id] = reads
                    continue
                for v in reads:  # an absorbed scatter_add reads where its add is
                    last_use[v.id] = max(last_use.get(v.id, -1), moved.get(i, i))
        start = len(lines)
        for i, e in enumerate(eqns):
            pname = e.prim.name
            o = e.outs[0] if e.outs else None
            if i in moved:
                continue  # written with the add that absorbs it
            if o is not None and o.id in inlined and i not in absorb:
                if pname in ("pack", "make_slice") and _only_index_use(o, self.fc.eqns):
                    continue
                em.inline[o.id] = em.expr(e, self.uses)
                continue
            key = (e.loc, e.phase)
            if key != group and e.loc is not None and pname not in ("push", "pop",
                                                                   "newstack"):
                tag = "grad of: " if e.phase == "bwd" else ""
                lines.append(f"{ind}# {tag}{e.loc.text}   ({e.loc.short()})")
                group = key
            if i in absorb:
                self._scatter_add_into(e, eqns[absorb[i][0]], absorb[i][1], i, last_use, ind,
                                       lines)
            elif pname == "fused":
                names = ", ".join(self.name(v) for v in e.outs)
                args = ", ".join(em.src(a) for a in e.ins)
                lines.append(f"{ind}{names} = {e.params['name']}({args})")
                em.regions.append(e)
            elif pname == "cond":
                self.cond(e, ind, lines)
            elif pname in ("for", "while"):
                self.loop(e, ind, lines)
            elif pname == "list_append":
                lst = e.ins[0]
                self.namer.names[o.id] = self.name(lst) if isinstance(lst, Var) else \
                    self.name(o)
                lines.append(ind + _norm(em.expr(e, self.uses)))
            elif pname == "newstack":
                lines.append(f"{ind}{self.name(o)} = []")
            elif pname == "push":
                vals = [em.src(v) for v in e.ins[1:]]
                item = vals[0] if len(vals) == 1 else f"({', '.join(vals)})"
                lines.append(f"{ind}{em.src(e.ins[0])}.append({item})")
            elif pname == "pop":
                names = ", ".join(self.name(v) for v in e.outs)
                lines.append(f"{ind}{names} = {em.src(e.ins[0])}.pop()")
            elif top and self.fc.free and self._in_place(e, i, last_use, eqns):
                a = e.ins[0]
                op = _INPLACE[pname]
                self.namer.names[o.id] = self.namer.names[a.id]
                lines.append(ind + _norm(f"{self.namer.names[a.id]} {op}= {em.src(e.ins[1])}"))
            else:
                lines.append(ind + _norm(f"{self.name(o)} = {em.expr(e, self.uses)}"))
            chk = self.fc.check_scalar
            if chk is not None and any(v is chk for v in e.outs):
                # checked where it is made, however the statement was written
                lines.append(f"{ind}check_scalar({self.name(chk)})")
                em.helpers.add("check_scalar")
            if top and self.fc.free:
                # free arrays after their last use: Python would keep every intermediate
                # alive until the function returns
                reads = [r for v in e.var_ins()
                         for r in (reads_of.get(v.id, [v]) if v.id in inlined else [v])]
                if i in absorb:  # the absorbed scatter_add's reads happen here
                    reads += list(eqns[absorb[i][0]].var_ins())
                dead = [v for v in reads if last_use.get(v.id) == i and
                        v.id not in self.returned and v.kind == "array" and
                        v.const_name is None and v.id not in em.inline and
                        v.id not in self.inputs and v.id in self.namer.names and
                        v.id not in self.fc.keep and self._owns(v, i + 1, last_use) and
                        not any(self.namer.names.get(o2.id) == self.namer.names[v.id]
                                for o2 in e.outs)]
                if dead:
                    names = list(dict.fromkeys(self.namer.names[v.id] for v in dead))
                    lines.append(f"{ind}del {', '.join(names)}")
        if len(lines) == start:
            lines.append(f"{ind}pass")

    def _absorptions(self, eqns) -> dict:
        """{add index: (scatter_add index, operand position)} for `a + scatter_add(g, idx,
        shape)` where `a` is a fresh array of this function, so the sum can be written as
        `a[idx] += g` (no zero-filled array, no full-size add)."""
        from runtime.ops.shapes import is_basic_index

        made = {}
        for i, e in enumerate(eqns):
            for o in e.outs:
                made[o.id] = i
        out = {}
        used = set()
        for j, e in enumerate(eqns):
            if e.prim.name != "add" or not all(isinstance(a, Var) for a in e.ins):
                continue
            for k in (1, 0):
                b, a = e.ins[k], e.ins[1 - k]
                i = made.get(b.id)
                if i is None or i in used or self.uses.get(b.id) != 1:
                    continue
                q = eqns[i]
                if q.prim.name != "scatter_add" or isinstance(q.ins[1], Var) or \
                        not is_basic_index(q.ins[1]):
                    continue
                ia = made.get(a.id)
                if ia is None or a.id in self.inputs or a.id in self.returned or \
                        a.id in self.fc.keep:
                    continue
                src = eqns[ia].prim
                if not (src.name == "scatter_add" or (src.elementwise and src.differentiable
                                                      and src.name != "where")):
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
            g, idx = q.ins[0], q.ins[1]
            self.namer.names[o.id] = name
            lines.append(ind + _norm(f"{name}[{self.em.index_src(idx)}] += {self.em.src(g)}"))
        else:
            lines.append(ind + _norm(f"{self.name(q.outs[0])} = {self.em.expr(q, self.uses)}"))
            lines.append(ind + _norm(f"{self.name(o)} = {self.em.expr(e, self.uses)}"))

    @staticmethod
    def _only_fresh_readers(a, eqns, j) -> bool:
        """Every other statement reading `a` makes a new array (or a shape) from it: none
        keeps a view of `a` (reshape, .T, a slice...) or an alias (a list, a stack, a copy
        into a branch or loop), so updating `a` in place at statement j changes nothing
        else."""
        for k, q in enumerate(eqns):
            if k == j or all(v is not a for v in q.var_ins()):
                continue
            p = q.prim
            if not (p.elementwise or p.name in _FRESH_READERS or
                    p.name.endswith(("_grad_a", "_grad_b"))):
                return False
        return True

    def _in_place(self, e, i, last_use, eqns) -> bool:
        """`a = a + b` may update `a` in place: `a` is a fresh array this function made
        (an elementwise result), dead after this use, of the result's shape and dtype."""
        if e.prim.name not in _INPLACE or not isinstance(e.ins[0], Var):
            return False
        a, o = e.ins[0], e.outs[0]
        if last_use.get(a.id) != i or a.id in self.returned or a.id in self.inputs or \
                a.id in self.fc.keep:
            return False
        if a.sclass != o.sclass or not self._keeps_dtype(a, e.ins[1]) or \
                a.id not in self.namer.names:
            return False
        if isinstance(e.ins[1], Var) and e.ins[1] is a:
            return False
        made = next((q for q in eqns if q.outs and q.outs[0] is a), None)
        if made is None or not made.prim.elementwise or not made.prim.differentiable or \
                made.prim.name in ("where",) or a.id in self.em.maybe_py:
            return False
        return self._owns(a, i, last_use) and self._only_fresh_readers(a, eqns, i)

    def _keeps_dtype(self, a, b) -> bool:
        """`a op b` surely has `a`'s dtype at run time, so `a op= b` may update `a`: `a` is a
        floating array and `b` a Python number or an array of `a`'s dtype."""
        if not _inexact(a, self.em.floating):
            return False
        if isinstance(b, Var):
            return b.dclass == a.dclass and _inexact(b, self.em.floating)
        return isinstance(b, numbers.Real)

    def _owns(self, a, i, last_use) -> bool:
        """Every other value named like `a` is dead by statement i (an in-place update
        hands a name on from one value to the next)."""
        name = self.namer.names[a.id]
        return all(vid == a.id or last_use.get(vid, -1) < i
                   for vid, n in self.namer.names.items() if n == name)

    def _inlinable(self, e) -> bool:
        """A cheap meta value (x.shape, a tuple index...) used once: written where used."""
        if e.prim.name not in _INLINE or not e.outs:
            return False
        o = e.outs[0]
        return self.uses.get(o.id, 0) <= 1 and o.id not in self.returned and not any(
            isinstance(a, Var) and a.id in self.em.carries for a in e.ins)

    def _coalesce(self, block, targets):
        """Give a value the block yields the name of what it becomes (a carried variable
        or a merged one) when nothing in the block reads the old name afterwards."""
        pos = {}
        for i, e in enumerate(block.eqns):
            for o in e.outs:
                pos[o.id] = i
        yielded = [v.id for v in block.outs if isinstance(v, Var)]
        for v, (old, name) in zip(block.outs, targets):
            if not isinstance(v, Var) or v.id not in pos or yielded.count(v.id) > 1 or \
                    v.id in self.namer.names or v.id in self.em.carries:
                continue
            after = block.eqns[pos[v.id] + 1:]
            read_after = _reads(after)
            if old is not None and old.id in read_after:
                continue
            if name in {self.namer.names.get(vid) for vid in read_after}:
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
        is_for = e.prim.name == "for"
        carry, body = e.params["carry"], e.params["body"]
        inits = e.ins[3:] if is_for else e.ins
        names = []
        for c, o in zip(carry, e.outs):
            n = self.name(c, exact=False if any(
                isinstance(i, Var) and self.namer.names.get(i.id) == c.hint for i in inits)
                else None)
            self.namer.names[o.id] = n
            names.append(n)
        pairs = [(n, em.src(i)) for n, i in zip(names, inits) if em.src(i) != n]
        if pairs:
            lines.append(f"{ind}{', '.join(n for n, _ in pairs)} = "
                         f"{', '.join(v for _, v in pairs)}")
        inner = ind + "    "
        if is_for:
            idx = e.params["index"]
            a, b, c = (em.src(x) for x in e.ins[:3])
            if c == "1":
                rng = f"range({b})" if a == "0" else f"range({a}, {b})"
            else:
                rng = f"range({a}, {b}, {c})"
            if e.params.get("reverse"):
                rng = f"reversed({rng})"
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
        self._coalesce(body, targets)
        start = len(lines)
        self.emit(body.eqns, inner, lines, group=(e.loc, e.phase))
        if len(lines) == start + 1 and lines[-1].strip() == "pass":
            lines.pop()
        self._copies(body, targets, inner, lines)
        if len(lines) == start:
            lines.append(f"{inner}pass")


def _only_index_use(v, eqns) -> bool:
    for e in eqns:
        for i, a in enumerate(e.ins):
            if a is v and not (e.prim.name in ("getitem",) and i == 1) and \
                    e.prim.name not in ("pack",):
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


def _emit_regions(em: _Emitter, namer: _Namer, body: list):
    """Module-level code of fused regions: a numpy reference and a CUDA kernel spec each."""
    from .fusion import cuda_expr, cuda_type

    for e in em.regions:
        region = e.params["region"]
        name = e.params["name"]
        params = [em.src(v) for v in e.ins]
        # inputs keep the caller's names; everything the region defines gets its own local
        # name (an output may take over an input's name at the call site)
        sub = _Namer(set(params) | _RESERVED)
        sub.names = {v.id: p for v, p in zip(e.ins, params)}
        ret = e.outs[0] if len(e.outs) == 1 else tuple(e.outs)
        fc = FunctionCode(name, ", ".join(params), region.eqns, ret, set(),
                          free_after_forward=False)
        fc.prefer = {}
        body += ["", ""]
        where = f"   ({e.loc.short()})" if e.loc is not None else ""
        fc.docstring = f"Fused elementwise region{where}: the numpy reference of " \
                       f"{name}_cuda."
        sub_em = _Emitter(sub, em.consts)
        sub_em.helpers = em.helpers
        _emit_function(fc, sub, sub_em, [v for v in e.ins], "", body)
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


def emit_module(fc: FunctionCode, inputs, header: str) -> tuple[str, dict]:
    """The module source for `fc` and the module-level constants it refers to by name."""
    reserved = set(_helpers.HELPERS) | _EXTRA_HELPERS | {v.hint for v in inputs}
    namer = _Namer(reserved)
    consts: dict = {}
    em = _Emitter(namer, consts)
    body: list[str] = []
    _emit_function(fc, namer, em, inputs, "", body)
    _emit_regions(em, namer, body)
    if any("as_float(" in ln for ln in body):
        em.helpers.add("as_float")
    lines = [header, "import numpy as np"]
    if em.helpers:
        lines.append(f"from runtime.ops.helpers import {', '.join(sorted(em.helpers))}")
    lines += ["", ""] + body
    return "\n".join(lines) + "\n", consts
