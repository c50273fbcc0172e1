"""Random numpy programs (assignments, data-dependent ifs, loops) as source, for property tests.

`ProgramWriter` writes a function statement by statement while it *runs* the program on
the inputs the test will use: every candidate expression is evaluated on the current
values, so shapes are always right (broadcasting, reductions, matmul, indexing) and
candidates are rejected when their values get too large or non-finite, or when a
non-smooth op (abs, maximum, where, clip, max, masks...) sits within `KINK_GAP` of its kink
(finite differences would straddle it).

    program = draw(programs())          # in a hypothesis test
    module = program.load(tmp_dir)      # a real .py file, so inspect.getsource works
    fn = getattr(module, program.name)

Extending the language (control flow, calls): add a method producing lines to
`ProgramWriter.STATEMENTS` (each entry is a weight and a method name); statements write
through `self.emit`, which indents by `self.depth`.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

KINK_GAP = 1e-3
MAX_ABS = 1e3
_EVAL_GLOBALS = {"np": np}


@dataclass
class Program:
    """A generated function: its module source, parameters and the arguments to test at."""

    name: str
    source: str
    params: list
    args: list = field(repr=False)
    wrt: tuple
    constants: dict = field(default_factory=dict, repr=False)

    def load(self, directory: str):
        """Write the module to `directory` and import it (a fresh module per source)."""
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        modname = f"srcgrad_prog_{digest}"
        if modname in sys.modules:
            return sys.modules[modname]
        path = os.path.join(directory, modname + ".py")
        with open(path, "w") as f:
            f.write(self.source)
        spec = importlib.util.spec_from_file_location(modname, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
        return module

    def wrt_indices(self):
        return tuple(self.params.index(w) for w in self.wrt)


class Reject(Exception):
    """A candidate expression that cannot be used here (shape, domain or kink)."""


def _far_from(values, point, gap=KINK_GAP):
    d = np.abs(np.asarray(values, dtype=float) - point)
    return d.size == 0 or float(d.min()) >= gap


class ProgramWriter:
    """Writes one random function. `draw` is hypothesis' draw; values come from `rng`."""

    #: (weight, method name) of statement kinds
    STATEMENTS = [(6, "stmt_assign_new"), (2, "stmt_rebind"), (1, "stmt_tuple_assign"),
                  (1, "stmt_if"), (2, "stmt_for")]

    def __init__(self, draw, name="f", max_statements=6, max_params=3, avoid_known_bugs=False):
        self.draw = draw
        self.name = name
        self.max_statements = max_statements
        self.max_params = max_params
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
        self.lines: list[str] = []
        self.module_lines: list[str] = []
        self.depth = 1
        # name -> current value (a Python float for a parameter passed as one)
        self.values: dict[str, object] = {}
        self.locals: list[str] = []  # user variables (assigned in the body)
        self.params: list[str] = []
        self.args: list = []
        self.constants: dict[str, np.ndarray] = {}
        self.counter = 0
        self.static: set[str] = set()  # names whose values depend on no parameter
        self.used: set[str] = set()  # names read by some statement
        # Steer clear of the compiler bugs that have their own xfail tests, so the property
        # tests keep checking everything else. Set to False to look for them.
        self.avoid_known_bugs = avoid_known_bugs

    # -- output -----------------------------------------------------------------------------

    def emit(self, line: str):
        self.lines.append("    " * self.depth + line)

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- values -------------------------------------------------------------------------------

    def names_in(self, text) -> set:
        return {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)
                and n.id != "np"}

    def is_static(self, text) -> bool:
        """Whether `text` depends on no parameter (srcgrad computes it at compile time)."""
        names = [n for n in self.names_in(text) if n in self.values or n in self.constants]
        return all(n in self.static for n in names)  # (builtins such as sum do not count)

    def evaluate(self, text):
        if self.avoid_known_bugs and self._method_on_static(text):
            raise Reject("known bug: array method on a compile-time constant")
        with np.errstate(all="raise"):
            try:
                v = eval(text, dict(_EVAL_GLOBALS, **self.constants), dict(self.values))
            except (FloatingPointError, ValueError, IndexError, TypeError,
                    AttributeError) as e:
                raise Reject(str(e)) from None
        a = np.asarray(v)
        if a.dtype.kind != "f" or not np.all(np.isfinite(a)) or \
                (a.size and float(np.abs(a).max()) > MAX_ABS):
            raise Reject("out of range")
        return v  # as the program will see it (a numpy scalar stays one)

    check = evaluate

    def _method_on_static(self, text) -> bool:
        """`C.sum()` where C is a compile-time constant: see test_compile_ops's xfail
        test_method_of_constant_array (srcgrad refuses it)."""
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                inner = node.func.value
                if isinstance(inner, ast.Name) and inner.id == "np":
                    continue
                if self.is_static(ast.unparse(inner)):
                    return True
        return False

    def val(self, name) -> np.ndarray:
        return np.asarray(self.values[name])

    def pick(self, names, label="operand"):
        return self.draw(st.sampled_from(list(names)), label=label)

    def operands(self):
        """Names to compute with, newest first (hypothesis shrinks towards the newest)."""
        return list(reversed(self.values))

    # -- inputs ------------------------------------------------------------------------------

    def base_shape(self):
        rank = self.draw(st.integers(0, 3), label="rank")
        return tuple(self.draw(st.integers(1, 3), label="dim") for _ in range(rank))

    def param_shape(self, full):
        """A shape that broadcasts against `full`: a suffix of it with some dims set to 1."""
        k = self.draw(st.integers(0, len(full)), label="suffix")
        suffix = full[len(full) - k:]
        return tuple(1 if self.draw(st.booleans(), label="one") else d for d in suffix)

    def add_param(self, shape, name=None, python_scalar=False):
        name = name or f"p{len(self.params)}"
        value = self.rng.uniform(-2.0, 2.0, shape)
        self.params.append(name)
        if python_scalar and shape == ():
            self.args.append(float(value))
        else:
            self.args.append(value)
        self.values[name] = self.args[-1]
        return name

    def add_constant(self, shape):
        """A module-level constant array (big ones are referenced by name in the code)."""
        name = f"C{len(self.constants)}"
        n = int(np.prod(shape))
        value = np.linspace(-1.0, 1.0, n).reshape(shape) if n else np.zeros(shape)
        self.constants[name] = value
        self.static.add(name)
        self.module_lines.append(f"{name} = np.linspace(-1.0, 1.0, {n}).reshape({shape!r})")
        return name

    # -- expressions -----------------------------------------------------------------------------
    # Each returns source text or raises Reject. `a`, `b` are operand texts (names).

    UNARY = [
        "np.sin({a})", "np.cos({a})", "np.tanh({a})", "np.arctan({a})", "np.exp(-{a} * {a})",
        "np.log({a} * {a} + 1)", "np.sqrt({a} * {a} + 0.5)", "{a} ** 2", "np.square({a})",
        "1 / ({a} * {a} + 1)", "-{a}", "0.5 * {a}", "{a} / 3", "{a} ** 3",
        "np.exp(np.sin({a}))", "np.log1p({a} * {a})", "np.sinh(np.tanh({a}))",
        "np.arcsin(0.9 * np.tanh({a}))", "np.cosh(np.cos({a}))", "np.expm1(np.sin({a}))",
        "(np.abs({a}) + 0.5) ** 1.5",
    ]
    BINARY = [
        "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b} * {b} + 1)", "{a} * 2.0 - {b}",
        "np.add({a}, {b})", "np.multiply({a}, {b})", "np.subtract({a}, {b})",
        "(np.abs({a}) + 0.5) ** np.tanh({b})",
    ]

    def expr_unary(self):
        a = self.pick(self.operands())
        return self.draw(st.sampled_from(self.UNARY), label="unary").format(a=a)

    def expr_binary(self):
        a, b = self.pick(self.operands()), self.pick(self.operands())
        return self.draw(st.sampled_from(self.BINARY), label="binary").format(a=a, b=b)

    def expr_kinked(self):
        """abs, maximum, minimum, where, clip: used only away from their kinks."""
        a, b = self.pick(self.operands()), self.pick(self.operands())
        va, vb = self.val(a), self.val(b)
        kind = self.draw(st.sampled_from(["abs", "maximum", "minimum", "where", "clip",
                                          "relu"]), label="kinked")
        if kind == "abs":
            if not _far_from(va, 0):
                raise Reject("kink")
            return f"np.abs({a})"
        if kind in ("maximum", "minimum"):
            if not _far_from(np.subtract(va, vb), 0):
                raise Reject("kink")
            return f"np.{kind}({a}, {b})"
        if kind == "relu":
            if not _far_from(va, 0):
                raise Reject("kink")
            return f"np.maximum({a}, 0.0)"
        if kind == "clip":
            lo, hi = -0.5, 0.75
            if not (_far_from(va, lo) and _far_from(va, hi)):
                raise Reject("kink")
            return f"np.clip({a}, {lo}, {hi})"
        c = self.pick(self.operands())
        if not _far_from(va, 0.25):
            raise Reject("kink")
        if self.avoid_known_bugs and va.shape != np.broadcast_shapes(va.shape, vb.shape,
                                                                     self.val(c).shape):
            # see test_compile_ops's xfail test_where_condition_smaller_than_the_result
            raise Reject("known bug: a where() condition broadcast to a larger result")
        op = self.draw(st.sampled_from([">", "<", ">=", "<="]), label="cmp")
        return f"np.where({a} {op} 0.25, {b}, {c})"

    def axis_arg(self, ndim):
        """(text of the axis= argument or None, whether keepdims)."""
        keep = self.draw(st.booleans(), label="keepdims")
        if ndim == 0:
            return None, keep
        choice = self.draw(st.integers(0, 2 if ndim >= 2 else 1), label="axis kind")
        if choice == 0:
            return None, keep
        if choice == 1:
            ax = self.draw(st.integers(-ndim, ndim - 1), label="axis")
            return str(ax), keep
        axes = self.draw(st.lists(st.integers(0, ndim - 1), min_size=2, max_size=2,
                                  unique=True), label="axes")
        return str(tuple(axes)), keep

    REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std", "logsumexp"]

    def expr_reduce(self):
        a = self.pick(self.operands())
        va = self.val(a)
        kind = self.draw(st.sampled_from(self.REDUCTIONS), label="reduction")
        axis, keep = self.axis_arg(va.ndim)
        args = "" if axis is None else f"axis={axis}"
        if keep:
            args = (args + ", " if args else "") + "keepdims=True"
        if kind in ("max", "min"):
            self._check_reduce_ties(va, axis)
        if kind == "std":
            s = np.std(va, axis=None if axis is None else eval(axis))
            if np.any((s > 0) & (s < KINK_GAP)):
                raise Reject("std near 0")
        if kind == "logsumexp":
            inner = f"np.exp({a})" if not args else f"np.exp({a}), {args}"
            return f"np.log(np.sum({inner}))"
        spelling = self.draw(st.sampled_from(["function", "method"]), label="spelling")
        if spelling == "method" and kind not in ("logsumexp",):
            return f"{a}.{kind}({args})"
        return f"np.{kind}({a}{', ' + args if args else ''})"

    @staticmethod
    def _check_reduce_ties(va, axis):
        """Reject max/min whose reduced groups hold two values closer than KINK_GAP."""
        if axis is None:
            groups = va.reshape(1, -1)
        else:
            ax = eval(axis)
            ax = ax if isinstance(ax, tuple) else (ax,)
            k = len(ax)
            moved = np.moveaxis(va, ax, tuple(range(va.ndim - k, va.ndim)))
            groups = moved.reshape(-1, int(np.prod(moved.shape[va.ndim - k:])))
        if groups.shape[-1] < 2:
            return
        gaps = np.diff(np.sort(groups, axis=-1), axis=-1)
        if float(gaps.min()) < KINK_GAP:
            raise Reject("tie in max/min")

    def expr_shape(self):
        a = self.pick(self.operands())
        va = self.val(a)
        nd = va.ndim
        options = ["reshape_flat", "expand"]
        if nd >= 1:
            options += ["T", "slice", "reverse", "int_index", "take", "concat", "stack",
                        "reshape_row"]
        if nd >= 2:
            options += ["swap", "transpose_method", "column", "moveaxis"]
        if 1 in va.shape:
            options.append("squeeze")
        kind = self.draw(st.sampled_from(options), label="shape op")
        if kind == "reshape_flat":
            return f"{a}.reshape(-1)" if nd else f"np.reshape({a}, (1,))"
        if kind == "reshape_row":
            return f"np.reshape({a}, (1, -1))"
        if kind == "expand":
            return f"np.expand_dims({a}, 0)" if self.draw(st.booleans()) else f"{a}[None]"
        if kind == "T":
            return f"{a}.T"
        if kind == "slice":
            if va.shape[0] < 2:
                return f"{a}[0:1]"
            return f"{a}[1:]"
        if kind == "reverse":
            return f"{a}[..., ::-1]"
        if kind == "int_index":
            return f"{a}[0]"
        if kind == "take":
            n = va.shape[0]
            idx = [self.draw(st.integers(-n, n - 1), label="index") for _ in range(3)]
            return f"{a}[np.array({idx})]"
        if kind in ("concat", "stack"):
            same = [n for n in self.values if self.val(n).shape == va.shape]
            b = self.pick(same)
            ax = self.draw(st.integers(-nd, nd - 1), label="axis") if kind == "concat" else \
                self.draw(st.integers(-nd - 1, nd), label="axis")
            return f"np.{'concatenate' if kind == 'concat' else 'stack'}([{a}, {b}], " \
                   f"axis={ax})"
        if kind == "swap":
            return f"np.swapaxes({a}, 0, -1)"
        if kind == "transpose_method":
            perm = self.draw(st.permutations(list(range(nd))), label="perm")
            return f"{a}.transpose({', '.join(map(str, perm))})"
        if kind == "column":
            return f"{a}[:, 0]"
        if kind == "moveaxis":
            return f"np.moveaxis({a}, 0, -1)"
        if kind == "squeeze":
            return f"np.squeeze({a})"
        raise AssertionError(kind)

    def expr_mask(self):
        """A boolean-mask selection, reduced right away (its length depends on values)."""
        a = self.pick(self.operands())
        same = [n for n in self.values if self.val(n).shape == self.val(a).shape]
        b = self.pick(same)
        if self.val(a).ndim == 0 or not _far_from(self.val(b), 0.1):
            raise Reject("mask")
        red = self.draw(st.sampled_from(["np.sum", "np.mean"]), label="mask reduction")
        if red == "np.mean" and not np.any(self.val(b) > 0.1):
            raise Reject("empty mean")
        return f"{red}({a}[{b} > 0.1] ** 2)"

    def expr_matmul(self):
        a, b = self.pick(self.operands()), self.pick(self.operands())
        va, vb = self.val(a), self.val(b)
        if va.ndim == 0 or vb.ndim == 0:
            raise Reject("matmul of a scalar")
        kind = self.draw(st.sampled_from(["@", "dot", "self", "weight"]), label="matmul")
        if kind == "@":
            return f"{a} @ {b}"
        if kind == "dot":
            return f"np.dot({a}, {b})"
        if kind == "self":
            return f"{a} @ {a}" if va.ndim == 1 else f"{a} @ np.swapaxes({a}, -1, -2)"
        # a fresh parameter shaped to fit: a @ W
        if len(self.params) >= self.max_params + 1:
            raise Reject("too many parameters")
        m = self.draw(st.integers(1, 3), label="width")
        w = self.add_param((va.shape[-1], m), name=f"W{len(self.params)}")
        return f"{a} @ {w}"

    def expr_constant(self):
        a = self.pick(self.operands())
        shape = self.val(a).shape
        if int(np.prod(shape)) <= 16:
            # small arrays are folded into the code as literals: also worth covering
            lit = np.round(np.linspace(-1, 1, int(np.prod(shape))), 3).reshape(shape)
            return f"{a} * np.array({lit.tolist()!r})"
        c = self.add_constant(shape)
        return f"{a} * {c}"

    def expr_builtin(self):
        """Python builtins on values: abs/pow/max/min of 0-d values, sum of a list."""
        a = self.pick(self.operands())
        va = self.val(a)
        if va.ndim == 0:
            kind = self.draw(st.sampled_from(["abs", "pow", "max", "min"]), label="builtin")
            if kind == "pow":
                return f"pow({a}, 2)"
            if not (_far_from(va, 0.3) and _far_from(va, -0.3)):
                raise Reject("kink")
            return {"abs": f"abs({a} - 0.3)", "max": f"max({a}, -0.3)",
                    "min": f"min({a}, 0.3)"}[kind]
        return f"sum([{a}, {a} * 0.5, np.sin({a})])"

    EXPRESSIONS = [(6, "expr_unary"), (6, "expr_binary"), (2, "expr_kinked"),
                   (3, "expr_reduce"), (3, "expr_shape"), (1, "expr_mask"),
                   (2, "expr_matmul"), (1, "expr_constant"), (1, "expr_builtin")]

    def expression(self):
        """A new expression over the current values: (source text, value)."""
        kinds = [k for w, k in self.EXPRESSIONS for _ in range(w)]
        for _ in range(20):
            kind = self.draw(st.sampled_from(kinds), label="expression")
            try:
                text = getattr(self, kind)()
                return text, self.evaluate(text)
            except (Reject, ValueError, IndexError):  # e.g. shapes that do not broadcast
                continue
        a = self.pick(self.operands())
        text = f"np.sin({a})"
        return text, self.evaluate(text)

    # -- statements ------------------------------------------------------------------------------

    def assign(self, name, text, value):
        self.emit(f"{name} = {text}")
        self._bind(name, text, value)

    def _bind(self, name, text, value):
        self.used.update(self.names_in(text))
        self.values.pop(name, None)  # a rebound name moves to the end (newest)
        if self.is_static(text):
            self.static.add(name)
        else:
            self.static.discard(name)
        self.values[name] = value
        if name not in self.locals:
            self.locals.append(name)

    def stmt_assign_new(self):
        text, value = self.expression()
        self.assign(self.fresh(), text, value)

    def stmt_rebind(self):
        if not self.locals:
            return self.stmt_assign_new()
        name = self.pick(self.locals, label="rebind")
        text, value = self.expression()
        self.assign(name, text, value)

    def stmt_tuple_assign(self):
        t1, v1 = self.expression()
        t2, v2 = self.expression()
        n1, n2 = self.fresh(), self.fresh()
        self.emit(f"{n1}, {n2} = {t1}, {t2}")
        for n, t, v in ((n1, t1, v1), (n2, t2, v2)):
            self._bind(n, t, v)
            self.locals.append(n)

    def stmt_if(self):
        """`if np.sum(a) > threshold:` on data, each side assigning the same name; the
        threshold keeps its distance from the sum, so no finite-difference step flips it."""
        a = self.pick(self.operands(), label="condition")
        total = float(np.sum(self.val(a)))
        offset = self.draw(st.sampled_from([-0.5, 0.5]), label="branch taken")
        threshold = round(total + offset, 3)
        t1, v1 = self.expression()
        t2, v2 = self.expression()
        name = self.fresh()
        self.emit(f"if np.sum({a}) > {threshold!r}:")
        self.emit(f"    {name} = {t1}")
        self.emit("else:")
        self.emit(f"    {name} = {t2}")
        self.used.update(self.names_in(t2) | {a})
        self._bind(name, t1 if total > threshold else t2, v1 if total > threshold else v2)
        self.static.discard(name)

    def stmt_for(self):
        """A loop over a random-length range carrying a value: t = t * 0.5 + tanh(e) * i."""
        if not self.locals:
            return self.stmt_assign_new()
        t = self.pick(self.locals, label="carried")
        vt = np.asarray(self.val(t))
        e, ve = self.expression()
        term = np.tanh(np.asarray(ve))
        try:
            if np.broadcast_shapes(vt.shape, term.shape) != vt.shape:
                raise Reject("the loop would change the carried value's shape")
        except ValueError:
            raise Reject("shapes that do not broadcast") from None
        k = self.draw(st.integers(0, 3), label="trip count")
        i = self.fresh("i")
        value = self.values[t]  # as the program holds it (a Python float stays one)
        for step in range(k):
            value = value * 0.5 + np.tanh(ve) * step
        self.emit(f"for {i} in range({k}):")
        self.emit(f"    {t} = {t} * 0.5 + np.tanh({e}) * {i}")
        self.used.update(self.names_in(e) | {t})
        self.values.pop(t, None)
        self.values[t] = value
        self.static.discard(t)

    def statement(self):
        kinds = [k for w, k in self.STATEMENTS for _ in range(w)]
        kind = self.draw(st.sampled_from(kinds), label="statement")
        try:
            getattr(self, kind)()
        except Reject:
            self.stmt_assign_new()

    def output(self):
        """The return statement: a scalar that adds up (reductions of) the values no
        statement used, so that most of the program reaches the output."""
        leaves = [n for n in self.locals if n not in self.used] or \
            [self.locals[-1] if self.locals else self.params[0]]
        terms = leaves[-4:]
        if self.draw(st.booleans(), label="more outputs"):
            terms.append(self.pick(self.operands()))
        parts = []
        for t in terms:
            reducer = self.draw(st.sampled_from(["np.sum", "np.mean", ".sum"]), label="out")
            text = f"{t}.sum()" if reducer == ".sum" else f"{reducer}({t})"
            try:
                self.check(text)
            except Reject:
                text = f"np.sum({t})"
            parts.append(text)
        self.emit("return " + " + ".join(parts))

    # -- the whole function ------------------------------------------------------------------------

    def write(self) -> Program:
        full = self.base_shape()
        n_params = self.draw(st.integers(1, self.max_params), label="params")
        for i in range(n_params):
            shape = full if i == 0 else self.param_shape(full)
            self.add_param(shape, python_scalar=self.draw(st.booleans(), label="py scalar"))
        if self.draw(st.booleans(), label="module constant"):
            c = self.add_constant(full)
            self.values[c] = self.constants[c]
            # constants are operands too, but never assigned: keep them out of `locals`
        for _ in range(self.draw(st.integers(1, self.max_statements), label="statements")):
            self.statement()
        self.output()
        for c in self.constants:
            self.values.pop(c, None)
        params = list(self.params)
        header = [f"def {self.name}({', '.join(params)}):"]
        source = "\n".join(["import numpy as np", "", *self.module_lines, "", "",
                            *header, *self.lines]) + "\n"
        k = self.draw(st.integers(1, len(params)), label="n wrt")
        wrt = tuple(self.draw(st.permutations(params), label="wrt")[:k])
        return Program(self.name, source, params, list(self.args), wrt, dict(self.constants))


def program_source(draw, name="f", **kw) -> str:
    """Source text of one random program (the generator's reusable entry point)."""
    return ProgramWriter(draw, name=name, **kw).write().source


@st.composite
def programs(draw, name="f", **kw) -> Program:
    """Hypothesis strategy: a random numpy program (assignments, data-dependent `if`s and
    `for` loops over random-length ranges) and its arguments."""
    return ProgramWriter(draw, name=name, **kw).write()
