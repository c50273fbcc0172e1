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

Features beyond that base language are opt-in, `programs(features={"lists", ...})` (see
`FEATURES`), so the other properties that draw programs keep the programs they had. Every
line a feature writes carries a tag "feature:sub-pattern" (`Program.line_tags`), so a
property that accepts a located refusal can say which feature was refused
(`record_outcome`, summed up in `FEATURE_STATS` and printed at the end of the session).
Sub-patterns srcgrad is known to get wrong are left out unless `known_bugs=True` (or
SRCGRAD_PROPS_KNOWN_BUGS=1): see `KNOWN_BUGS`.
"""
from __future__ import annotations

import ast
import collections
import copy
import hashlib
import importlib.util
import io
import os
import re
import sys
import tokenize
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

KINK_GAP = 1e-3
MAX_ABS = 1e3
_EVAL_GLOBALS = {"np": np}

#: opt-in generator features (ProgramWriter(features=...)):
#: lists    lists grown with .append in a loop over a run-time range, read by np.stack, sum(),
#:          items (inside the loop and after) and iteration
#: slices   multi-axis slices whose bounds are an int argument or come from a shape
#: ints     integer intermediates (np.arange, astype(int), //, %) mixed with floats
#: mod      %, np.mod, np.remainder, np.fmod and // on floats (a literal or a computed divisor)
#: boolops  `and` / `or` / `not` / `x if c else y` on run-time values (conditions and values)
#: alias    numpy aliasing: `v = x; v += e`, views, in-place updates of arguments
#: names    user names equal to names the compiler generates (dx, dout, out_1, np, sum_to...)
#: globals  module-level arrays of any size, read by name (the test mutates and rebinds them)
FEATURES = ("lists", "slices", "ints", "mod", "boolops", "alias", "names", "globals")

#: sub-patterns that make the property fail because of a known srcgrad bug: left out of the
#: programs unless ProgramWriter(known_bugs=True) or SRCGRAD_PROPS_KNOWN_BUGS=1
KNOWN_BUGS: dict[str, str] = {
    # "feature:subpattern": "what goes wrong, with a minimal program" (none known now; the
    # ones the generator found are regression tests in tests/compiler/test_generator_findings.py)
}

#: names the generated code uses (or derives from the user's), for the "names" feature
GENERATED_NAMES = ("dx", "dout", "out", "out_1", "np", "sum_to", "z_1", "t", "x", "x_1",
                   "dx_1", "z", "dz", "dz_1", "broadcast_shapes", "as_float", "ndarray",
                   "cast_like", "check_scalar", "pullback", "grad_f", "grad_f_same_shapes",
                   "x_shape_1", "dt", "g", "i", "n", "k", "stack", "ct", "dp0", "v1_1")

#: (tag, outcome) -> count over the session; outcome is "generated", "refused", ...
FEATURE_STATS: collections.Counter = collections.Counter()
#: tag -> the first refusal message seen (its first line)
FEATURE_REFUSALS: dict[str, str] = {}


def known_bugs_from_env() -> bool:
    return os.environ.get("SRCGRAD_PROPS_KNOWN_BUGS", "") not in ("", "0")


def record_outcome(program, outcome: str, tags=None, message: str | None = None):
    """Count `outcome` for each feature tag of `program` (or the given `tags`)."""
    from hypothesis import event

    for tag in sorted(program.features_used if tags is None else tags):
        FEATURE_STATS[tag, outcome] += 1
        event(f"{tag}: {outcome}")
        if message and outcome == "refused":
            FEATURE_REFUSALS.setdefault(tag, message.splitlines()[0])


def feature_summary() -> list[str]:
    """Lines of a table: per feature tag, the programs generated, checked (their gradient
    compared) and refused (at a line of that tag), with the first refusal message; a tag
    whose programs were never checked is marked."""
    tags = sorted({t for t, _ in FEATURE_STATS})
    first = ["generated", "checked"]
    outcomes = first + sorted({o for _, o in FEATURE_STATS} - set(first))
    if not tags:
        return []
    width = max(len(t) for t in tags)
    lines = [f"{'feature tag':<{width}}  " + "  ".join(outcomes)]
    for t in tags:
        row = f"{t:<{width}}  " + "  ".join(f"{FEATURE_STATS[t, o]:>{len(o)}}"
                                             for o in outcomes)
        if FEATURE_STATS[t, "generated"] and not FEATURE_STATS[t, "checked"]:
            row += "   <- never checked"
        lines.append(row)
    for t, msg in sorted(FEATURE_REFUSALS.items()):
        lines.append(f"  {t} refused: {msg}")
    return lines


@dataclass
class Program:
    """A generated function: its module source, parameters and the arguments to test at."""

    name: str
    source: str
    params: list
    args: list = field(repr=False)
    wrt: tuple
    constants: dict = field(default_factory=dict, repr=False)
    #: file line number -> the feature tags of that line ("lists:stack", ...)
    line_tags: dict = field(default_factory=dict, repr=False)
    #: parameters that take ints (never differentiated)
    int_params: tuple = ()
    #: the number of statements the writer wrote (the body's top-level and nested ones)
    statements: int = 0

    @property
    def features_used(self) -> set:
        return set().union(*self.line_tags.values()) if self.line_tags else set()

    def tags_at(self, lineno) -> set:
        return set(self.line_tags.get(lineno, ()))

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


def _broadcasts_into(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _far_from(values, point, gap=KINK_GAP):
    d = np.abs(np.asarray(values, dtype=float) - point)
    return d.size == 0 or float(d.min()) >= gap


class ProgramWriter:
    """Writes one random function. `draw` is hypothesis' draw; values come from `rng`."""

    #: (weight, method name) of statement kinds
    STATEMENTS = [(6, "stmt_assign_new"), (2, "stmt_rebind"), (1, "stmt_tuple_assign"),
                  (1, "stmt_if"), (2, "stmt_for")]

    def __init__(self, draw, name="f", max_statements=6, max_params=3, avoid_known_bugs=False,
                 features=(), min_statements=1, straight_line=False, known_bugs=None,
                 one_element=False):
        self.draw = draw
        self.one_element = one_element  # every argument holds one number (dims of 1)
        self.name = name
        self.max_statements = max_statements
        self.min_statements = min_statements
        self.max_params = max_params
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
        self.lines: list[str] = []
        self.line_tags: list[set] = []  # the feature tags of each line of `lines`
        self.module_lines: list[str] = []
        self.depth = 1
        # name -> current value (a Python float for a parameter passed as one); a parameter's
        # value is a copy of its argument, so that in-place updates (feature "alias") change
        # the writer's values as they change the program's, and never the arguments
        self.values: dict[str, object] = {}
        self.ints: dict[str, object] = {}  # integer values (Python ints, int arrays)
        self.int_params: list[str] = []
        self.locals: list[str] = []  # user variables (assigned in the body)
        self.params: list[str] = []
        self.args: list = []
        self.constants: dict[str, np.ndarray] = {}
        self.counter = 0
        self.n_statements = 0
        self.static: set[str] = set()  # names whose values depend on no parameter
        self.used: set[str] = set()  # names read by some statement
        self.branch_bound: set[str] = set()  # names last bound in an if/else
        # Steer clear of the compiler bugs that have their own xfail tests, so the property
        # tests keep checking everything else. Set to False to look for them.
        self.avoid_known_bugs = avoid_known_bugs
        unknown = set(features) - set(FEATURES)
        assert not unknown, f"unknown features {unknown}"
        self.features = frozenset(features)
        self.known_bugs = known_bugs_from_env() if known_bugs is None else known_bugs
        self.straight_line = straight_line
        self.expr_tags: set[str] = set()  # the tags of the expression being written
        self.statements = list(self.STATEMENTS)
        self.expressions = list(self.EXPRESSIONS)
        if straight_line:
            self.statements = [(w, k) for w, k in self.statements
                               if k not in ("stmt_if", "stmt_for")]
        for feature, stmts, exprs in self.FEATURE_KINDS:
            if feature in self.features:
                self.statements += stmts
                self.expressions += exprs

    #: feature -> (statement kinds, expression kinds) it adds, as (weight, method name)
    FEATURE_KINDS = [
        ("lists", [(4, "stmt_lists")], []),
        ("slices", [(1, "stmt_shape_bound")], [(5, "expr_runtime_slice")]),
        ("ints", [(3, "stmt_int")], [(5, "expr_int_mix")]),
        ("mod", [], [(6, "expr_mod")]),
        ("boolops", [(3, "stmt_if_boolop")], [(4, "expr_boolop_value")]),
        ("alias", [(5, "stmt_alias")], []),
        ("globals", [], [(3, "expr_global")]),
        ("names", [], []),
    ]

    def allowed(self, tag) -> bool:
        """Whether sub-pattern `tag` may be written (not a known bug, or known bugs on)."""
        return self.known_bugs or tag not in KNOWN_BUGS

    # -- output -----------------------------------------------------------------------------

    def emit(self, line: str, tags=()):
        self.lines.append("    " * self.depth + line)
        self.line_tags.append(set(tags))

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

    def env(self) -> dict:
        """The program's local names at this point: float values and integers."""
        return {**self.values, **self.ints}

    def module_env(self) -> dict:
        return dict(_EVAL_GLOBALS, **self.constants)

    def evaluate(self, text):
        if self.avoid_known_bugs and self._method_on_static(text):
            raise Reject("known bug: array method on a compile-time constant")
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # the mean of an empty slice...
            try:
                v = eval(text, self.module_env(), self.env())
            except (FloatingPointError, ValueError, IndexError, TypeError, AttributeError,
                    ZeroDivisionError, OverflowError, RuntimeWarning) as e:
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
        if self.one_element:
            return (1,) * rank
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
        arg = self.args[-1]
        self.values[name] = arg.copy() if isinstance(arg, np.ndarray) else arg
        return name

    def add_int_param(self, lo=1, hi=3, name=None):
        """An int parameter (a loop bound, a slice bound), never differentiated."""
        name = name or f"n{len(self.params)}"
        value = self.draw(st.integers(lo, hi), label="int argument")
        self.params.append(name)
        self.int_params.append(name)
        self.args.append(value)
        self.ints[name] = value
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
            if self.draw(st.booleans()) or (nd == 0 and not self.allowed(
                    "base:none_index_of_0d")):  # (see KNOWN_BUGS)
                return f"np.expand_dims({a}, 0)"
            return f"{a}[None]"
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
            if n == 0:
                raise Reject("take from an empty array")
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
        """A new expression over the current values: (source text, value). The feature
        tags of the expression are left in `self.last_tags`."""
        kinds = [k for w, k in self.expressions for _ in range(w)]
        for _ in range(20):
            kind = self.draw(st.sampled_from(kinds), label="expression")
            self.expr_tags = set()
            try:
                with warnings.catch_warnings():  # (np.std of an empty slice...)
                    warnings.simplefilter("ignore", RuntimeWarning)
                    text = getattr(self, kind)()
                value = self.evaluate(text)
                self.last_tags = self.expr_tags
                return text, value
            except (Reject, ValueError, IndexError):  # e.g. shapes that do not broadcast
                continue
        a = self.pick(self.operands())
        text = f"np.sin({a})"
        self.last_tags = set()
        return text, self.evaluate(text)

    def tag(self, tag):
        """Mark the expression being written as using feature sub-pattern `tag`."""
        self.expr_tags.add(tag)

    # -- statements ------------------------------------------------------------------------------

    def assign(self, name, text, value, tags=()):
        self.emit(f"{name} = {text}", tags)
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
        self.assign(self.fresh(), text, value, self.last_tags)

    def stmt_rebind(self):
        if not self.locals:
            return self.stmt_assign_new()
        name = self.pick(self.locals, label="rebind")
        text, value = self.expression()
        self.assign(name, text, value, self.last_tags)

    def stmt_tuple_assign(self):
        t1, v1 = self.expression()
        tags = self.last_tags
        t2, v2 = self.expression()
        n1, n2 = self.fresh(), self.fresh()
        self.emit(f"{n1}, {n2} = {t1}, {t2}", tags | self.last_tags)
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
        tags1 = self.last_tags
        t2, v2 = self.expression()
        name = self.fresh()
        self.emit(f"if np.sum({a}) > {threshold!r}:")
        self.emit(f"    {name} = {t1}", tags1)
        self.emit("else:")
        self.emit(f"    {name} = {t2}", self.last_tags)
        self.used.update(self.names_in(t2) | {a})
        self._bind(name, t1 if total > threshold else t2, v1 if total > threshold else v2)
        self.branch_bound.add(name)
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
        tags = self.last_tags
        k = self.draw(st.integers(0, 3), label="trip count")
        i = self.fresh("i")
        body = f"{t} = {t} * 0.5 + np.tanh({e}) * {i}"
        # or a row of an array per step (acc = acc * 0.5 + X[i]: its gradient is stored
        # row by row while the carried cotangent is updated)
        rows = [a for a in self.params + self.locals if a != t and a in self.values and
                self.val(a).ndim >= 1 and self.val(a).shape[0] >= 1 and
                _broadcasts_to(self.val(a).shape[1:], vt.shape)]
        if rows and self.draw(st.booleans(), label="row per step"):
            a = self.pick(rows, label="rows")
            k = min(k, self.val(a).shape[0])
            linear = self.draw(st.booleans(), label="linear")
            if not linear and not _broadcasts_to(
                    np.broadcast_shapes(self.val(a).shape[1:], term.shape), vt.shape):
                raise Reject("the loop would change the carried value's shape")
            body = f"{t} = {t} * 0.5 + {a}[{i}]" if linear else \
                f"{t} = np.tanh({t}) + {a}[{i}] * {e}"
        # run the loop as the program will (`e` may read `t`); a Python float stays one
        ns = self.env()
        try:
            with np.errstate(all="ignore"):
                exec(f"for {i} in range({k}):\n    {body}", self.module_env(), ns)
        except (ValueError, TypeError, IndexError, ArithmeticError) as err:
            raise Reject(f"the loop fails: {err}") from None
        value = ns[t]
        if np.shape(value) != vt.shape:
            raise Reject("the loop changes the carried value's shape")
        if not np.all(np.isfinite(value)) or np.max(np.abs(value), initial=0) > MAX_ABS:
            raise Reject("out of range")
        self.emit(f"for {i} in range({k}):")
        self.emit(f"    {body}", tags)
        self.used.update(self.names_in(e) | {t})
        self.values.pop(t, None)
        self.values[t] = value
        self.static.discard(t)

    # -- feature "globals": module-level arrays of any size, read by name -------------------

    def add_global(self, shape):
        """A module-level array of any size, read by name (small ones too)."""
        name = f"G{sum(1 for c in self.constants if c.startswith('G'))}"
        n = int(np.prod(shape))
        value = np.cos(np.arange(n) * 1.3 + 0.2).reshape(shape)
        self.constants[name] = value
        self.static.add(name)
        self.module_lines.append(
            f"{name} = np.cos(np.arange({n}) * 1.3 + 0.2).reshape({shape!r})")
        return name

    def expr_global(self):
        """A module array read by name: `a * G0`, `np.sin(G0) + a`, `G0[0] * a`..."""
        a = self.pick(self.operands())
        va = self.val(a)
        fits = [c for c in self.constants if c.startswith("G") and
                _broadcasts_into(self.constants[c].shape, va.shape)]
        if fits and self.draw(st.booleans(), label="existing global"):
            g = self.pick(fits, label="global")
        else:
            g = self.add_global(self.param_shape(va.shape) if va.ndim else ())
        kind = self.draw(st.sampled_from(["mul", "sin_add", "index", "dot", "mean", "large"]),
                         label="global use")
        if kind == "large":  # more than 16 elements: once bound into the generated module
            g = self.add_global(self.draw(st.sampled_from([(20,), (4, 6), (2, 3, 5)]),
                                          label="large shape"))
            self.tag("globals:large")
            return f"{a} * np.mean(np.cos({g})) + np.sum({g}.reshape(-1)[:3])"
        self.tag("globals:" + ("small" if self.constants[g].size <= 16 else "large"))
        if kind == "mul":
            return f"{a} * {g}"
        if kind == "sin_add":
            return f"np.sin({g}) * 0.5 + {a}"
        if kind == "index" and self.constants[g].ndim >= 1:
            return f"{a} * {g}[0]"
        if kind == "dot":
            return f"{a} * np.sum({g} * {g})"
        return f"{a} - np.mean({g})"

    # -- feature "ints": integer intermediates mixed with floats -----------------------------

    def int_names(self, kind=None):
        """Integer names: kind "python" (Python ints), "array" (int arrays) or any."""
        out = []
        for n, v in self.ints.items():
            is_array = isinstance(v, np.ndarray) and v.ndim >= 1
            if kind is None or (kind == "array") == is_array:
                out.append(n)
        return out

    def evaluate_int(self, text):
        with np.errstate(all="raise"):
            try:
                v = eval(text, self.module_env(), self.env())
            except (FloatingPointError, ValueError, IndexError, TypeError, AttributeError,
                    ZeroDivisionError) as e:
                raise Reject(str(e)) from None
        a = np.asarray(v)
        if a.dtype.kind not in "iu" or (a.size and int(np.abs(a).max()) > 100):
            raise Reject("not a small integer")
        return v

    def float_arrays(self, min_ndim=1):
        return [n for n in self.operands() if isinstance(self.values[n], np.ndarray)
                and self.values[n].ndim >= min_ndim]

    def stmt_int(self):
        """`k = np.arange(a.shape[-1])`, `k = a.astype(int)`, `k = (k // 2) % 3`..."""
        arrays = self.float_arrays()
        options = ["arange_param"]
        if arrays:
            options += ["arange_shape", "astype", "floor_astype", "shape_int"]
        if self.ints:
            options += ["floordiv_mod", "affine"]
        kind = self.draw(st.sampled_from(options), label="int statement")
        if kind == "arange_param":
            n = self.pick(self.int_params) if self.int_params and self.draw(
                st.booleans(), label="existing int") else self.add_int_param(1, 4)
            text = f"np.arange({n})"
        elif kind == "arange_shape":
            a = self.pick(arrays)
            text = f"np.arange({a}.shape[-1])"
        elif kind in ("astype", "floor_astype"):
            a = self.pick(arrays)
            va = self.val(a) * (2 if kind == "floor_astype" else 1)
            if not _far_from(va - np.round(va), 0):
                raise Reject("near an integer")
            text = f"{a}.astype(int)" if kind == "astype" else f"np.floor({a} * 2).astype(int)"
        elif kind == "shape_int":
            a = self.pick(arrays)
            text = f"{a}.shape[0] // 2 + {a}.shape[-1] % 2"
        elif kind == "floordiv_mod":
            k = self.pick(self.ints)
            text = f"({k} // 2) % 3"
        else:
            k = self.pick(self.ints)
            text = f"{k} * 2 - 1"
        value = self.evaluate_int(text)
        name = self.fresh("k")
        self.emit(f"{name} = {text}", {f"ints:{kind}"})
        self.used.update(self.names_in(text))
        self.ints[name] = value

    def expr_int_mix(self):
        """A float expression over an integer value: `a * k`, `a[k % a.shape[0]]`..."""
        if not self.ints:
            raise Reject("no integers yet")
        k = self.pick(self.ints, label="int")
        a = self.pick(self.operands())
        kind = self.draw(st.sampled_from(["mul", "add", "floordiv_mul", "mod_mul", "div",
                                          "index", "last_index", "pow", "float_floordiv"]),
                         label="int mix")
        self.tag(f"ints:{kind}")
        if kind == "mul":
            return f"{a} * {k}"
        if kind == "add":
            return f"{a} + {k} * 0.5"
        if kind == "floordiv_mul":
            return f"{a} * ({k} // 2)"
        if kind == "mod_mul":
            return f"{a} * ({k} % 3 - 1)"
        if kind == "div":
            return f"{a} / ({k} * {k} + 1)"
        if kind == "index":
            if self.val(a).ndim == 0:
                raise Reject("index of a scalar")
            return f"{a}[{k} % {a}.shape[0]]"
        if kind == "last_index":
            if self.val(a).ndim == 0:
                raise Reject("index of a scalar")
            return f"{a}[..., {k} % {a}.shape[-1]]"
        if kind == "pow":
            return f"({a} * {a} + 1) ** ({k} % 3)"
        va = self.val(a) / 0.5
        if not _far_from((va - np.round(va)) * 0.5, 0):
            raise Reject("near a step of //")
        return f"{a} * ({a} // 0.5)"

    # -- feature "mod": %, np.mod, np.fmod, // on floats ------------------------------------

    def expr_mod(self):
        """`a % 0.7`, `np.fmod(a, b * b + 0.5)`, `a // 0.4`... away from their jumps."""
        a = self.pick(self.operands())
        kind = self.draw(st.sampled_from(["%", "np.mod", "np.remainder", "np.fmod", "//"]),
                         label="mod op")
        computed = self.draw(st.booleans(), label="computed divisor")
        if computed:
            b = self.pick(self.operands())
            d = f"({b} * {b} + 0.5)"
        else:
            d = repr(self.draw(st.sampled_from([0.3, 0.7, 1.1, 2.5, -0.6]), label="divisor"))
        vd = np.asarray(self.evaluate(d), dtype=float)
        va = np.asarray(self.val(a), dtype=float)
        r = va / vd
        if not _far_from((r - np.round(r)) * np.abs(vd), 0):
            raise Reject("near a jump")
        self.tag(f"mod:{kind}{'_computed' if computed else '_literal'}")
        if kind == "%":
            return f"{a} % {d}"
        if kind == "//":
            return f"{a} * ({a} // {d})"
        return f"{kind}({a}, {d})"

    # -- feature "slices": multi-axis slices with run-time bounds -----------------------------

    def stmt_shape_bound(self):
        """`H = a.shape[0] - 1`: an int from a shape, a bound for later slices."""
        arrays = self.float_arrays()
        if not arrays:
            raise Reject("no arrays")
        a = self.pick(arrays)
        nd = self.val(a).ndim
        d = self.draw(st.integers(-nd, nd - 1), label="dim")
        form = self.draw(st.sampled_from(["{a}.shape[{d}] - 1", "{a}.shape[{d}] // 2 + 1",
                                          "len({a})"]), label="bound form")
        text = form.format(a=a, d=d)
        value = self.evaluate_int(text)
        name = self.fresh("H")
        self.emit(f"{name} = {text}", {"slices:shape_bound"})
        self.used.add(a)
        self.ints[name] = value

    SLICES = {1: ["{a}[:{H}]", "{a}[{H}:]", "{a}[1:{H}:2]", "{a}[{H} - 1::-1]"],
              2: ["{a}[:, :{H}]", "{a}[1:{H}, ::2]", "{a}[:{H}, {H}:]", "{a}[::-1, :{H}]",
                  "{a}[{H}:, 1:]", "{a}[:{H}][:, ::-1]"],
              3: ["{a}[:, :{H}, 1:]", "{a}[..., :{H}]", "{a}[1:{H}, :, ::2]",
                  "{a}[:{H}, ::-1, {H}:]"]}

    def expr_runtime_slice(self):
        """`a[:, :H]`, `a[1:H, ::2]`... with H an int argument or an int from a shape."""
        arrays = self.float_arrays()
        if not arrays:
            raise Reject("no arrays")
        a = self.pick(arrays)
        nd = self.val(a).ndim
        bounds = self.int_names("python")
        shaped = [n for n in bounds if n not in self.int_params]
        if shaped and self.draw(st.booleans(), label="a bound from a shape"):
            h = self.pick(shaped, label="bound")
        elif bounds and self.draw(st.booleans(), label="existing bound"):
            h = self.pick(bounds, label="bound")
        else:
            h = self.add_int_param(0, 4)
        pattern = self.draw(st.sampled_from(self.SLICES[min(nd, 3)]), label="slice")
        self.tag("slices:" + ("param" if h in self.int_params else "shape"))
        return pattern.format(a=a, H=h)

    # -- feature "boolops": and / or / not / if-else expressions on run-time values ----------

    def comparison(self):
        """(text, truth) of `np.sum(a) > t` with t 0.5 away from the sum."""
        a = self.pick(self.operands(), label="condition")
        stat = self.draw(st.sampled_from(["sum", "mean"]), label="statistic")
        if stat == "mean" and self.val(a).size == 0:
            raise Reject("the mean of an empty array")
        value = float(getattr(np, stat)(self.val(a)))
        offset = self.draw(st.sampled_from([-0.5, 0.5]), label="side")
        op = self.draw(st.sampled_from([">", "<"]), label="cmp")
        t = round(value + offset, 3)
        truth = value > t if op == ">" else value < t
        self.used.add(a)
        return f"np.{stat}({a}) {op} {t!r}", truth

    def condition(self):
        """(text, truth) of two or three comparisons joined by and / or, maybe negated."""
        c1, v1 = self.comparison()
        c2, v2 = self.comparison()
        op = self.draw(st.sampled_from(["and", "or"]), label="boolop")
        text, truth = f"{c1} {op} {c2}", (v1 and v2) if op == "and" else (v1 or v2)
        if self.draw(st.booleans(), label="third"):
            c3, v3 = self.comparison()
            op = self.draw(st.sampled_from(["and", "or"]), label="boolop")
            text = f"({text}) {op} {c3}"
            truth = (truth and v3) if op == "and" else (truth or v3)
        if self.draw(st.booleans(), label="not"):
            text, truth = f"not ({text})", not truth
        return text, truth

    def stmt_if_boolop(self):
        """`if np.sum(a) > t1 and np.mean(b) < t2:` (and or, not), each side assigning."""
        cond, truth = self.condition()
        t1, v1 = self.expression()
        tags1 = self.last_tags
        t2, v2 = self.expression()
        name = self.fresh()
        self.emit(f"if {cond}:", {"boolops:if"})
        self.emit(f"    {name} = {t1}", tags1)
        self.emit("else:")
        self.emit(f"    {name} = {t2}", self.last_tags)
        self.used.update(self.names_in(t2) | self.names_in(t1))
        self._bind(name, t1 if truth else t2, v1 if truth else v2)
        self.branch_bound.add(name)
        self.static.discard(name)

    def expr_boolop_value(self):
        """`(np.sum(a) > t and s) or u`, `s or u`, `s if c else u` on 0-d values."""
        scalars = [n for n in self.operands() if np.ndim(self.values[n]) == 0]
        if not scalars:
            raise Reject("no scalars")
        s, u = self.pick(scalars), self.pick(scalars)
        if not _far_from(self.val(s), 0):
            raise Reject("truth value near 0")
        kind = self.draw(st.sampled_from(["and_or", "or", "and", "ifexp"]),
                         label="bool value")
        self.tag(f"boolops:{kind}")
        if kind == "or":
            return f"{s} or {u}"
        if kind == "and":
            return f"{s} and {u}"
        cond, _ = self.comparison()
        if kind == "ifexp":
            return f"{s} if {cond} else {u}"
        return f"({cond} and {s}) or {u}"

    # -- feature "alias": numpy aliasing and in-place updates --------------------------------

    def stmt_alias(self):
        """`v = a; v += e` (or a view of `a`, or `a += e` after `v = a`, or `a += e` on an
        argument): srcgrad must compute the right gradient or refuse with a location."""
        # never a module array or a view of one: the program would change its own globals
        # at every call (and finite differences would measure that)
        targets = [n for n in self.operands() if n not in self.constants and not any(
            np.shares_memory(np.asarray(self.values[n]), c) for c in self.constants.values())]
        if not targets:
            raise Reject("nothing to alias")
        a = self.pick(targets, label="aliased")
        va = self.values[a]
        if not isinstance(va, np.ndarray) and a not in self.params and \
                not self.allowed("alias:immutable_scalar"):
            raise Reject("known bug: in-place update of a shared scalar (see KNOWN_BUGS)")
        kind = self.draw(st.sampled_from(["plain", "view", "mutate_original", "direct",
                                          "setitem"]), label="alias kind")
        op = self.draw(st.sampled_from(["+=", "-=", "*=", "/="]), label="in-place op")
        e, ve = self.expression()
        etags = self.last_tags
        rhs = f"({e} * {e} + 1)" if op == "/=" else f"({e})" if " " in e else e
        v = self.fresh()
        if kind == "view":
            if not (isinstance(va, np.ndarray) and va.ndim >= 1):
                raise Reject("no view of a scalar")
            view = self.draw(st.sampled_from(["{a}[1:]", "{a}.T", "{a}.reshape(-1)",
                                              "{a}[...]", "{a}[::-1]"]), label="view")
            lines = [f"{v} = {view.format(a=a)}", f"{v} {op} {rhs}"]
        elif kind == "plain":
            lines = [f"{v} = {a}", f"{v} {op} {rhs}"]
        elif kind == "mutate_original":
            lines = [f"{v} = {a}", f"{a} {op} {rhs}"]
        elif kind == "direct":
            lines = [f"{a} {op} {rhs}"]
        else:
            if not (isinstance(va, np.ndarray) and va.ndim >= 1):
                raise Reject("no item of a scalar")
            lines = [f"{v} = {a}", f"{v}[0] = {rhs}"]
        # a trial run on copies (a failing in-place op may have written already), then the
        # writer runs the lines as the program will: aliases and views change together
        trial = copy.deepcopy(self.env())
        with np.errstate(all="raise"):
            try:
                exec("\n".join(lines), self.module_env(), trial)
            except (FloatingPointError, ValueError, IndexError, TypeError,
                    ZeroDivisionError) as err:
                raise Reject(str(err)) from None
        changed = [n for n in (v, a) if n in trial]
        for n in changed:
            x = np.asarray(trial[n])
            if x.dtype.kind != "f" or not np.all(np.isfinite(x)) or \
                    (x.size and float(np.abs(x).max()) > MAX_ABS):
                raise Reject("out of range")
        if not self.allowed("alias:update_with_live_view"):
            updated = v if kind in ("plain", "view", "setitem") else a
            # (the view kind updates `a` through its view `v`: a pattern of its own)
            if self._has_live_view(updated, self.env(), lines,
                                   ignore={a} if kind == "view" else set()):
                raise Reject("known bug: an in-place update with a live view (see KNOWN_BUGS)")
        ns = self.env()
        with np.errstate(all="ignore"):
            exec("\n".join(lines), self.module_env(), ns)
        # from here on the writer's arrays may have changed in place: no Reject below
        tags = {f"alias:{kind}"} | ({"alias:argument"} if a in self.params else set()) | \
            ({"alias:scalar"} if not isinstance(va, np.ndarray) else set())
        for line in lines:
            self.emit(line, tags | etags)
        self.used.update(self.names_in(e))
        for n in changed:
            self._bind(n, n, ns[n])
            self.static.discard(n)
        self.used.discard(v)
        self.used.discard(a)  # both are worth reading again (the output reads leaves)

    def _has_live_view(self, updated, ns_before, lines, ignore=()) -> bool:
        """Whether the array that `lines` update in place (bound to `updated` after the
        first line) has another name that is a view of it (a different object sharing its
        memory) or that was bound to it in a branch."""
        ns = copy.copy(ns_before)
        if len(lines) > 1:  # `v = <a or a view of a>`, then the update
            exec(lines[0], self.module_env(), ns)
        target = ns[updated]
        if not isinstance(target, np.ndarray):
            return False
        for n, val in ns.items():
            if n == updated or n in ignore or not isinstance(val, np.ndarray) or \
                    not np.shares_memory(val, target):
                continue
            if val is not target or n in self.branch_bound or updated in self.branch_bound:
                return True
        return False

    # -- feature "lists": lists grown in a run-time loop --------------------------------------

    def stmt_lists(self):
        """Lists grown with .append in a loop over range(n) (n an int argument, a shape, a
        literal), read after the loop (np.stack, sum(), items, iteration) and inside it."""
        a = self.pick(self.operands(), label="carried start")
        bound_kind = self.draw(st.sampled_from(["param", "shape", "literal"]), label="bound")
        arrays = self.float_arrays()
        if bound_kind == "param":
            bound = self.pick(self.int_params) if self.int_params and self.draw(
                st.booleans(), label="existing int") else self.add_int_param(1, 3)
            if self.ints[bound] < 1:
                raise Reject("an empty loop")
        elif bound_kind == "shape" and arrays:
            bound = f"{self.pick(arrays)}.shape[0]"
        else:
            bound_kind = "literal"
            bound = str(self.draw(st.integers(1, 3), label="trip count"))
        h, i = self.fresh("h"), self.fresh("i")
        e1, _ = self.expression()
        tags = set(self.last_tags)
        e2, _ = self.expression()
        tags |= self.last_tags
        n_lists = self.draw(st.integers(1, 3), label="lists")
        names = [self.fresh("L") for _ in range(n_lists)]
        items = [h, f"np.cos({e2}) * {i} + {h}", f"np.sin({h}) * ({e1})"]
        # a recurrence through the list, as RNNs are written: the first list starts with
        # an item, and each step appends a function of its last one (or the one before)
        recur = self.allowed("lists:recur") and self.draw(st.booleans(), label="recurrence")
        loop = [f"{h} = np.tanh({a})"] + [f"{n} = []" for n in names]
        if recur:
            back = self.draw(st.sampled_from(["-1", "-2", "len(%s) - 1" % names[0]]),
                             label="read back")
            loop[1] = f"{names[0]} = [{h}, {h} * 0.5]"
            items[0] = f"np.tanh({names[0]}[{back}]) * 0.5 + {h}"
        loop.append(f"for {i} in range({bound}):")
        loop.append(f"    {h} = np.tanh({h}) * 0.5 + ({e1}) * {i}")
        for n, item in zip(names, items):
            loop.append(f"    {n}.append({item})")
        # half the loops read their lists only in the ways srcgrad supports (np.stack), so
        # that most programs with lists get checked and not refused
        supported_only = self.draw(st.booleans(), label="supported reads only")
        inside = not supported_only and self.allowed("lists:read_inside") and \
            self.draw(st.booleans(), label="read inside")
        u = self.fresh("u")
        if inside:
            loop.append(f"    {u} = {names[-1]}[-1] * 0.5 + {names[0]}[{i}]")
        after = []
        outs = []
        n_after = self.draw(st.integers(1, 3), label="reads after")
        for _ in range(n_after):
            lst = self.pick(names, label="list read")
            ways = ["stack", "stack_axis", "mean_stack"] + ([] if supported_only else [
                "sum", "item", "iterate", "concat", "len"])
            how = self.draw(st.sampled_from(ways), label="read after")
            tag = f"lists:{how}"
            if not self.allowed(f"{tag}_{bound_kind}_bound") or not self.allowed(tag):
                how, tag = "stack", "lists:stack"  # (see KNOWN_BUGS)
            s = self.fresh("s")
            if how == "stack":
                text = f"np.stack({lst})"
            elif how == "stack_axis":
                text = f"np.stack({lst}, axis=-1)"
            elif how == "sum":
                text = f"sum({lst})"
            elif how == "item":
                text = f"{lst}[-1] * 2.0 + {lst}[0]"
            elif how == "concat":
                text = f"np.concatenate({lst})"
            elif how == "mean_stack":
                text = f"np.mean(np.stack({lst}), axis=0)"
            elif how == "len":
                text = f"np.stack({lst}) / len({lst})"
            else:
                after.append((f"{s} = 0.0", tag))
                after.append((f"for w_{s} in {lst}:", tag))
                after.append((f"    {s} = {s} + np.sum(w_{s} ** 2)", tag))
                outs.append(s)
                continue
            after.append((f"{s} = {text}", tag))
            outs.append(s)
        if inside:
            outs.append(u)
        ns = self.env()
        code = "\n".join(loop + [line for line, _ in after])
        with np.errstate(all="raise"):
            try:
                exec(code, self.module_env(), ns)
            except (FloatingPointError, ValueError, IndexError, TypeError,
                    ZeroDivisionError) as err:
                raise Reject(str(err)) from None
        if recur and len({np.shape(item) for item in ns[names[0]]}) > 1:
            # (items broadcast to a later shape than the first ones: srcgrad refuses such a
            # list at run time, since its gradient stacks the items; test_list_positions)
            raise Reject("a list of items of several shapes")
        for n in outs:
            x = np.asarray(ns[n])
            if x.dtype.kind != "f" or not np.all(np.isfinite(x)) or \
                    (x.size and float(np.abs(x).max()) > MAX_ABS):
                raise Reject("out of range")
        base = {f"lists:{bound_kind}_bound"}
        for line in loop:
            t = set(base)
            if "append" in line or line.lstrip().startswith(f"{h} ="):
                t |= tags
            if recur and (f"{names[0]}.append" in line or line.startswith(f"{names[0]} =")):
                t.add("lists:recur")
            if line.lstrip().startswith(f"{u} ="):
                t.add("lists:read_inside")
            self.emit(line, t)
        for line, tag in after:
            self.emit(line, base | {tag})
        self.used.update(self.names_in(e1) | self.names_in(e2) | {a})
        for n in outs:
            self._bind(n, n, ns[n])
            self.static.discard(n)

    def statement(self):
        kinds = [k for w, k in self.statements for _ in range(w)]
        kind = self.draw(st.sampled_from(kinds), label="statement")
        self.n_statements += 1
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
        if "globals" in self.features:
            g = self.add_global(self.param_shape(full))
            self.values[g] = self.constants[g]
        n = self.draw(st.integers(self.min_statements, self.max_statements), label="statements")
        for _ in range(n):
            self.statement()
        self.output()
        for c in self.constants:
            self.values.pop(c, None)
        params = list(self.params)
        header = [f"def {self.name}({', '.join(params)}):"]
        prefix = ["import numpy as np", "", *self.module_lines, "", ""]
        source = "\n".join([*prefix, *header, *self.lines]) + "\n"
        first = len(prefix) + 2  # the file line of the body's first line
        line_tags = {first + k: set(t) for k, t in enumerate(self.line_tags)}
        for k, line in enumerate(self.lines):
            for g in re.findall(r"\bG\d+\b", line):
                size = self.constants[g].size
                line_tags[first + k].add("globals:" + ("small" if size <= 16 else "large"))
        line_tags = {k: t for k, t in line_tags.items() if t}
        floats = [p for p in params if p not in self.int_params]
        k = self.draw(st.integers(1, len(floats)), label="n wrt")
        wrt = tuple(self.draw(st.permutations(floats), label="wrt")[:k])
        program = Program(self.name, source, params, list(self.args), wrt,
                          dict(self.constants), line_tags, tuple(self.int_params),
                          self.n_statements)
        if "names" in self.features:
            program = self.rename(program)
        return program

    # -- feature "names": user names equal to names the compiler generates -----------------

    def rename(self, program: Program) -> Program:
        """`program` with some of its names (parameters, locals, loop indices, module
        arrays) replaced by names the generated code uses; `np` among them makes the
        program import numpy as `numpy`."""
        user = []
        for tok in _name_tokens(program.source):
            if re.fullmatch(r"[A-Za-z]{1,2}\d+", tok) and tok not in user:
                user.append(tok)
        builtins_read = set(_name_tokens(program.source)) - set(user) - {"np"}
        pool = [n for n in GENERATED_NAMES if n not in builtins_read and n != self.name]
        new = self.draw(st.permutations(pool), label="new names")
        order = self.draw(st.permutations(user), label="renamed")
        k = self.draw(st.integers(1, min(len(user), len(pool))), label="how many renamed")
        mapping = dict(zip(order[:k], new[:k]))
        if "np" in mapping.values():
            mapping["np"] = "numpy"
        source = rename_names(program.source, mapping)
        tags = {n: t | {"names"} for n, t in program.line_tags.items()}
        first = source.index(f"def {self.name}(")
        body = source[:first].count("\n") + 2
        for k in range(body, source.count("\n") + 1):
            tags.setdefault(k, set()).add("names")
        m = lambda n: mapping.get(n, n)  # noqa: E731
        return Program(program.name, source, [m(p) for p in program.params], program.args,
                       tuple(m(w) for w in program.wrt),
                       {m(c): v for c, v in program.constants.items()}, tags,
                       tuple(m(p) for p in program.int_params), program.statements)


def _name_tokens(source):
    """NAME tokens of `source` that are not attribute names (`np` in `np.sin`, not `sin`)."""
    prev = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and not (prev is not None and prev.string == "."):
            yield tok.string
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                            tokenize.INDENT, tokenize.DEDENT):
            prev = tok


def rename_names(source: str, mapping: dict) -> str:
    """`source` with the names in `mapping` renamed, token by token: every line stays where
    it was (attribute names and keyword-argument names are left alone)."""
    lines = source.splitlines(keepends=True)
    edits = []
    prev = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in mapping and \
                not (prev is not None and prev.string == "."):
            edits.append(tok)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                            tokenize.INDENT, tokenize.DEDENT):
            prev = tok
    for tok in reversed(edits):
        (row, col), (_, end) = tok.start, tok.end
        line = lines[row - 1]
        lines[row - 1] = line[:col] + mapping[tok.string] + line[end:]
    return "".join(lines)


def program_source(draw, name="f", **kw) -> str:
    """Source text of one random program (the generator's reusable entry point)."""
    return ProgramWriter(draw, name=name, **kw).write().source


@st.composite
def programs(draw, name="f", **kw) -> Program:
    """Hypothesis strategy: a random numpy program (assignments, data-dependent `if`s and
    `for` loops over random-length ranges) and its arguments."""
    return ProgramWriter(draw, name=name, **kw).write()


def _broadcasts_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False
