"""The primitive table: each op is declared once here and read by both engines.

A `Primitive` holds
- `impl`: the forward computation on concrete arrays (numpy or cupy, chosen from the
  arguments by `runtime.backend.get_xp`),
- `vjps`: one rule per input, `rule(g, out, *inputs, **params) -> cotangent or None`,
  written by calling other primitives (never raw numpy), so that the same rule runs on
  arrays (tape backward), on `runtime.Tensor` (create_graph) and on the compiler's
  symbolic values (staging into the adjoint graph),
- `spell`: how generated source writes a call (a format string or a function),
- flags the engines need: which inputs are differentiable, whether the op broadcasts
  its inputs, whether its rules read the primal inputs or output, whether it is pure
  (the op set is; a user's op only when declared so).

Calling a primitive dispatches on its arguments: the first argument whose type has an
`__op_dispatch__` hook (Tensor, the compiler's Var) takes the call; otherwise `impl` runs.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

from numpy import ndarray as _ndarray

__all__ = ["Primitive", "defop", "PRIMITIVES", "apply_vjp", "apply_jvp", "ZERO"]

#: name -> Primitive, the whole op set
PRIMITIVES: dict[str, "Primitive"] = {}

#: A rule returns None for "this input gets no gradient" (a structural zero).
ZERO = None

#: names of the op set's primitives and of the compiler's own (pack, cond...): the stages
#: tell ops apart by name, so a user's op (runtime.ops.custom) never takes one of these
RESERVED_NAMES: set = set()

# While the compiler lowers a function it installs a stager that sees every primitive call
# (also those whose arguments are all constants, so that `np.zeros(3)` stays code instead
# of becoming an embedded array). The stager belongs to the compiling thread: the tape, or
# another compilation, in another thread at the same time is not routed into it.
_local = threading.local()
# how many threads have a stager installed: while none has, a call skips the thread-local
# lookup (the common case for the tape and for custom ops called by generated code)
_staging_threads = 0
_count_lock = threading.Lock()


def set_stager(fn):
    """Install (or with None remove) the compiler's hook for the calling thread; returns
    the previous one."""
    global _staging_threads
    prev = getattr(_local, "stager", None)
    _local.stager = fn
    if (prev is None) != (fn is None):
        with _count_lock:
            _staging_threads += 1 if fn is not None else -1
    return prev


class Primitive:
    """One op of the set. See the module docstring for the fields."""

    __slots__ = (
        "name", "impl", "vjps", "nondiff", "broadcasts", "differentiable", "meta",
        "reads_inputs", "reads_out", "spell", "defaults", "elementwise", "doc",
        "convention", "variadic", "jvp", "custom", "zero_grad", "pure", "view", "creator",
        "structured", "kind", "dtype", "shape_arg", "shape_like", "shape_key", "on_meta",
        "fresh", "readonly", "cuda", "cuda_when", "py_spell", "array_spell", "array_ndim",
        "subscript",
        "positional_dtype", "inplace_op", "adds_at", "updatable", "inline", "shape_rule",
        "use_text",
    )
    _reserves_name = True  # see RESERVED_NAMES

    def __init__(self, name, impl, *, vjps=(), nondiff=(), broadcasts=False,
                 differentiable=True, meta=False, reads_inputs=True, reads_out=False,
                 spell=None, defaults=None, elementwise=False, convention="",
                 variadic=False, doc="", zero_grad=None, pure=True, view=False,
                 creator=False, structured=False, **facts):
        # One documented assignment per declared fact, nothing else; the facts the
        # compiler's stages read are set by `_stage_facts`, those codegen reads by
        # `_writing_facts` (`facts` holds both groups' keywords).
        self.name = name
        self.impl = impl
        self.vjps = tuple(vjps)
        self.nondiff = frozenset(nondiff)
        self.broadcasts = broadcasts
        self.differentiable = differentiable and not meta
        self.meta = meta
        self.reads_inputs = reads_inputs
        self.reads_out = reads_out
        self.spell = spell
        self.defaults = dict(defaults or {})
        self.elementwise = elementwise
        self.convention = convention
        self.variadic = variadic
        self.doc = doc
        #: forward-mode rule `jvp(tangents, out, *inputs, **params) -> output tangent`;
        #: `tangents[i]` is None where input i has no tangent. Set by `runtime.ops.jvps`.
        self.jvp = None
        self.custom = False  # a user's op (srcgrad.primitive): a missing rule is an error
        #: declared: the output carries no derivative of the inputs (a piecewise-constant op
        #: such as sign or floor, a predicate, a creator, or a meta op that reads only
        #: shapes). True, False, or a function `(args, params) -> bool` (astype is
        #: piecewise constant when it casts to an integer or boolean dtype).
        #: Ops with boolean outputs and creators (not differentiable, not meta) declare it
        #: by default; a meta op (pack, mod on ints...) never does unless it says so, so an
        #: active value reaching one is a soundness error rather than a silent zero.
        self.zero_grad = (not differentiable and not meta) if zero_grad is None else zero_grad
        #: declared: the output may share memory with an input (numpy returns a view, or
        #: the input itself): an in-place update of it may change that input
        self.view = view
        #: the same arguments always give the same result, and a call has no other effect:
        #: the compiler may evaluate a call on constants once, merge equal calls and drop
        #: unused ones. Not so for an op that draws random numbers, reads a clock, logs...
        self.pure = pure
        #: declared: makes a new array from shapes and constants (np.zeros, np.arange...):
        #: never folded into a literal, since each call must own fresh memory
        self.creator = creator
        #: declared: an equation of this op is control flow or a statement (cond, loops,
        #: the reverse pass's stacks, a statement run as written), with any number of
        #: outputs, that passes over it leave as it is
        self.structured = structured
        self._stage_facts(**facts)
        #: the CUDA C expression a fused kernel writes for it, and when it applies
        #: (`cuda_when(ins, params) -> bool`, None: always); set by runtime.ops.cuda
        self.cuda = None
        self.cuda_when = None
        if self._reserves_name:
            RESERVED_NAMES.add(name)

    def _stage_facts(self, *, kind=None, dtype=None, shape_arg=None, shape_like=None,
                     shape_key=None, shape_rule=None, on_meta=None, fresh=None, readonly=False,
                     use_text=None, **writing):
        """The facts the compiler's stages read instead of comparing op names."""
        #: what the op does to its operands: "elementwise", "reduction" (over `axis`),
        #: "movement" (moves or selects elements), "bilinear" (matmul, dot... and their
        #: cotangent ops), "creator", "shape_of" (its value is its operand's shape),
        #: "list" (a run-time Python list, runtime.ops.lists), "stack" (a copy of one of
        #: the reverse pass's stacks of saved values), "meta" or "other"
        self.kind = kind or ("elementwise" if self.elementwise else "creator" if self.creator
                             else "meta" if self.meta else "other")
        #: the output's dtype from its array operands' (when those agree): "same" (theirs),
        #: "float" (theirs when floating, else a float dtype), "same_if_float" (theirs when
        #: floating, else unknown: a sum of int8s is an int64), ("like", i) (input i's), or
        #: None (elementwise: numpy's promotion with weak Python scalars; others: unknown)
        self.dtype = dtype
        #: input `shape_arg` is the output's shape (a shape tuple: broadcast_to, reshape)
        self.shape_arg = shape_arg
        #: the output has the shape of input `shape_like` (zeros_like, matmul_grad_a)
        self.shape_like = shape_like
        #: `shape_key(index)`: a key equal for indices that give one shape from any array
        #: (getitem), or None when not sure
        self.shape_key = shape_key
        #: `shape_rule(args, params) -> shape or None`: the output's shape where neither
        #: the kind nor shape_arg / shape_like tells it (np.zeros(shape)); see `out_shape`
        self.shape_rule = shape_rule
        #: applied to meta values only (ints, shape tuples), the result is a meta value
        self.on_meta = self.elementwise if on_meta is None else on_meta
        #: declared: the output is new memory the op allocated, or a value that holds none
        #: of its inputs' (a shape): never an input, a view of one, or a container of one;
        #: by default so for elementwise ops, reductions, bilinear ops and creators
        self.fresh = (self.kind in ("elementwise", "reduction", "bilinear", "creator")
                      if fresh is None else fresh)
        #: declared: the output is a view that cannot be written (np.broadcast_to's)
        self.readonly = readonly
        #: how an error names what the op does with a value that has no derivative there
        #: ("indexing with it"), or None: "the operation 'name' (input i)"
        self.use_text = use_text
        self._writing_facts(**writing)

    def _writing_facts(self, *, py_spell=None, array_spell=None, array_ndim=None,
                       subscript=False,
                       positional_dtype=None, inplace_op=None, adds_at=None, updatable=None,
                       inline=False):
        """How generated source writes a call and may reuse its memory (srcgrad.codegen),
        beyond `spell`."""
        #: the spelling for when operand 0 may be a Python number rather than an array
        #: (`x.shape` fails on a float, `np.shape(x)` does not), or None: `spell` works
        self.py_spell = py_spell
        #: a cheaper spelling for when operand 0 is known to be a numpy array of one
        #: dimension or more (a specialized numpy variant's): the method `x.sum(axis=1)`
        #: skips the dispatch that costs `np.sum` a microsecond; or None
        self.array_spell = array_spell
        #: where set, `array_spell` is for operands that are all numpy arrays of known shapes
        #: of 1 to `array_ndim` dimensions (`a.dot(b)` is `a @ b` for matrices and vectors,
        #: at half the cost of a small product)
        self.array_ndim = array_ndim
        #: written in Python's subscript syntax, input 0 indexed by input 1 (`x[i, 1:]`):
        #: a tuple or slice made only for such an index is written in it, unnamed
        self.subscript = subscript
        #: a cheap meta value (x.shape, a tuple index...): used once, it is written where
        #: it is used instead of in a statement of its own
        self.inline = inline
        #: `(i, default)`: numpy takes the dtype as operand i when passed by position
        #: (`np.zeros(shape, dtype)`); a call with fewer operands and no dtype keyword
        #: gets `default`: "float" (float64) or ("like", j) (operand j's: np.full's fill)
        self.positional_dtype = positional_dtype
        #: the operator of the augmented assignment that computes it in place: with
        #: `inplace_op="+"`, `a = a + b` may be written `a += b` when `a` is dead after
        self.inplace_op = inplace_op
        #: the output is zeros with input 0 added at the index that input `adds_at` holds
        #: (repeats accumulate): `a + op(g, idx, shape)` may be written `a[idx] += g`
        self.adds_at = adds_at
        #: its output is an array the call allocated, which generated code may update in
        #: place once no one else reads it (`a += b`, `a[idx] += g`): by default so for
        #: differentiable elementwise ops; np.where, not a ufunc, declares it is not
        self.updatable = (self.elementwise and self.differentiable
                          if updatable is None else updatable)

    def __call__(self, *args, **params):
        if _staging_threads:
            stager = getattr(_local, "stager", None)
            if stager is not None:
                return stager(self, args, params)
        for a in args:
            hook = getattr(type(a), "__op_dispatch__", None)
            if hook is not None:
                return hook(self, args, params)
        return self.impl(*args, **params)

    def rule(self, i: int) -> Optional[Callable]:
        """The VJP rule for input `i` (variadic ops share one rule), or None."""
        if self.variadic:
            return self.vjps[0] if self.vjps else None
        return self.vjps[i] if i < len(self.vjps) else None

    def is_diff_input(self, i: int) -> bool:
        return self.differentiable and i not in self.nondiff

    def declares_zero(self, args, params) -> bool:
        """Is this op's output declared to have a zero derivative (for these operands)?"""
        z = self.zero_grad
        return z(args, params) if callable(z) else bool(z)

    def carries_derivative(self, i: int, args, params) -> bool:
        """Does input i pass a derivative on? False where declared zero or
        non-differentiable (an index, a shape, a condition)."""
        return self.is_diff_input(i) and not self.declares_zero(args, params)

    def sound_input(self, i: int, args, params) -> bool:
        """May an input that depends on a differentiated value reach position i? Only
        if a VJP rule covers it or a zero derivative is declared: never silently."""
        if self.declares_zero(args, params) or i in self.nondiff:
            return True
        return self.differentiable and self.rule(i) is not None

    def out_shape(self, args: Sequence[Any], params: Optional[dict] = None):
        """The output's shape from what is known of the operands, or None when that
        cannot be told: each of `args` is the operand's value, a `shape_rules.Shaped`
        (an array of known shape) or `shape_rules.UNKNOWN`. Raises
        `shape_rules.ShapeMismatch` where the shapes cannot go together (see
        runtime.ops.shape_rules)."""
        from .shape_rules import out_shape

        return out_shape(self, args, params)

    def __repr__(self):
        return f"<primitive {self.name}>"


def takes_operands(impl: Callable, n: int) -> Callable:
    """Give `impl` (written over `*args`) the signature of a function of `n` positional
    operands, so that its signature says how many it takes (the IR checker reads it)."""
    import inspect

    impl.__signature__ = inspect.Signature(
        [inspect.Parameter(f"x{i + 1}", inspect.Parameter.POSITIONAL_ONLY) for i in range(n)])
    return impl


def defop(name: str, impl: Callable, *vjps: Optional[Callable], **kw) -> Primitive:
    """Register a primitive: `defop("sin", impl, vjp_sin, spell="np.sin({0})")`."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} is declared twice")
    p = Primitive(name, impl, vjps=vjps, **kw)
    PRIMITIVES[name] = p
    return p


def apply_vjp(prim: Primitive, g, out, args: Sequence[Any], params: dict,
              needs: Sequence[bool]) -> list:
    """Cotangents of `args` (None where not needed or structurally zero).

    This is the one place where broadcasting is undone: for ops that broadcast, each
    cotangent is reduced to its input's shape with `sum_to`. The tape engine and the
    compiler both call this, each with its own kind of values.
    """
    from .shapes import shape, sum_to  # the shape group imports this module

    if prim.declares_zero(args, params):
        return [None] * len(needs)
    cts = []
    for i, need in enumerate(needs):
        if not need:
            cts.append(None)
            continue
        rule = prim.rule(i)
        if rule is None:  # never a silent zero: a zero derivative must be declared
            name = getattr(prim, "__name__", prim.name)  # a custom op: the user's own name
            hint = f"; attach one with @{name}.defvjp" if prim.custom else ""
            raise TypeError(f"no VJP rule for {name!r} (input {i}){hint}")
        elif prim.variadic:
            ct = rule(g, out, *args, index=i, **params)
        else:
            ct = rule(g, out, *args, **params)
        if ct is not None and prim.broadcasts:
            a = args[i]
            # plain arrays of equal shape (the tape's common case): nothing to undo
            if not (type(ct) is _ndarray and type(a) is _ndarray and ct.shape == a.shape):
                ct = sum_to(ct, shape(a))
        cts.append(ct)
    return cts


# ---- spellings: how generated source writes a call -------------------------------------
# A spelling maps operand source texts (names or literals) and the params to an expression.

def call(fn: str):
    """Spell as a function call `fn(a, b, k=v)`, leaving out params equal to their default."""

    def spell(ins: Sequence[str], params: dict, defaults: dict) -> str:
        parts = list(ins)
        for k, v in params.items():
            if k in defaults and _same(defaults[k], v):
                continue
            parts.append(f"{k}={literal(v)}")
        return f"{fn}({', '.join(parts)})"

    return spell


def method(name: str):
    """Spell as a method call of operand 0, `a.name(b, k=v)`, leaving out params equal to
    their default."""
    spell_call = call(name)

    def spell(ins: Sequence[str], params: dict, defaults: dict) -> str:
        return f"{ins[0]}.{spell_call(ins[1:], params, defaults)}"

    return spell


def fmt(template: str):
    """Spell with a template over the operands, e.g. `'{0} + {1}'` or `'{0}.T'`."""

    def spell(ins: Sequence[str], params: dict, defaults: dict) -> str:
        return template.format(*ins, **params)

    return spell


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b


def literal(v) -> str:
    """Source text for a constant: plain Python literals, never numpy reprs."""
    import math

    import numpy

    if isinstance(v, (bool, numpy.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, numpy.integer)):
        return repr(int(v))
    if isinstance(v, (float, numpy.floating)):
        f = float(v)
        if math.isnan(f):
            return "float('nan')"
        if math.isinf(f):
            return "float('inf')" if f > 0 else "-float('inf')"
        return repr(f)
    if isinstance(v, tuple):
        inner = ", ".join(literal(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    if isinstance(v, slice):
        return f"slice({literal(v.start)}, {literal(v.stop)}, {literal(v.step)})"
    if v is Ellipsis:
        return "..."
    if isinstance(v, numpy.ndarray):  # e.g. an integer-array index inside an index tuple
        if v.size == 0:  # (tolist() of a 0x3 array is [], which reads back as shape (0,))
            return f"np.empty({literal(v.shape)}, dtype={v.dtype.name!r})"
        return f"np.array({literal(v.tolist())}, dtype={v.dtype.name!r})"
    if v is None or isinstance(v, str):
        return repr(v)
    raise TypeError(f"no literal spelling for {type(v).__name__}")


def apply_jvp(prim: Primitive, tangents: Sequence, out, args: Sequence, params: dict):
    """The output tangent of `prim` given input tangents (None = zero); None if zero."""
    if all(t is None for t in tangents) or prim.declares_zero(args, params):
        return None
    if prim.jvp is None:
        name = getattr(prim, "__name__", prim.name)  # a user's op: the user's own name
        raise TypeError(f"no JVP rule for {name!r}"
                        + (f"; attach one with @{name}.defjvp" if prim.custom else ""))
    return prim.jvp(list(tangents), out, *args, **params)
