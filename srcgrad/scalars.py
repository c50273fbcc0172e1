"""A specialized variant's form on Python floats, for arguments that hold one number each.

numpy spends about half a microsecond on every call, whatever the size of its operands; a
gradient of arguments of one element (a Python float, a 0-d array, an array of shape (1,))
is all calls. When every argument of a variant's signature holds one float64 number (or is
None) and its gradient is straight-line elementwise code, the variant first computes it on
Python floats, an operation a few tens of nanoseconds (`math.log` for `np.log`), and
returns what the numpy code returns: an array of the shape it would have, a numpy float64
where it gives a scalar. Each operation is spelled to give numpy's value bit for bit where
IEEE arithmetic decides it (the sign of a zero too: a sum of -0.0 is 0.0, `maximum` of a
tie is its second operand) and within an ulp or two for `math`'s functions.

Python and numpy disagree where a number leaves a function's domain: Python raises
(`ZeroDivisionError`, `ValueError: math domain error`, `OverflowError`) or goes on with
inf or nan without a word, numpy answers inf or nan with a warning (or an error, under
`np.errstate`). The form therefore runs inside `try`, and returns only when numpy's error
handling is its default and every result is finite, and so is every operand of an
operation that could turn inf or nan back into a finite number (a division's denominator,
`exp`, `tanh`, a comparison, `where`...): an overflow or an invalid operation on the way
would show there. Otherwise the numpy code that follows it runs and answers as numpy does.
`plan` decides whether the form applies; codegen writes it (`codegen._emit_numbers`).
"""
from __future__ import annotations

import math

import numpy

from runtime import ops
from runtime.ops.core import literal

from .ir import Var
from .staging import dtype_class, known_shape

__all__ = ["plan", "NumberForm"]

_FLOAT64 = dtype_class(numpy.float64)

# primitive -> (its spelling on Python numbers, what it takes, what it gives): "f" a float,
# "b" a bool ({m}: the name `math` has in the module; an operand is a name or a literal)
_SPELL = {
    ops.add: ("{0} + {1}", "ff", "f"), ops.subtract: ("{0} - {1}", "ff", "f"),
    ops.multiply: ("{0} * {1}", "ff", "f"), ops.divide: ("{0} / {1}", "ff", "f"),
    ops.negative: ("-{0}", "f", "f"), ops.square: ("{0} * {0}", "f", "f"),
    ops.reciprocal: ("1.0 / {0}", "f", "f"),
    ops.arctan2: ("{m}.atan2({0}, {1})", "ff", "f"),
    ops.hypot: ("{m}.hypot({0}, {1})", "ff", "f"),
    ops.absolute: ("{m}.fabs({0})", "f", "f"), ops.fabs: ("{m}.fabs({0})", "f", "f"),
    # (numpy's sign, maximum and minimum give nan for nan, as these do; sign(-0.0) is
    # 0.0, and maximum or minimum of a tie its second operand, 0.0 or -0.0)
    ops.sign: ("1.0 if {0} > 0 else -1.0 if {0} < 0 else {0} + 0.0", "f", "f"),
    ops.maximum: ("{0} if {0} > {1} or {0} != {0} else {1}", "ff", "f"),
    ops.minimum: ("{0} if {0} < {1} or {0} != {0} else {1}", "ff", "f"),
    # (a sum of one element is 0.0 + it: -0.0 becomes 0.0, as in numpy)
    ops.sum: ("{0} + 0.0", "f", "f"), ops.mean: ("{0} + 0.0", "f", "f"),
    ops.where: ("{1} if {0} else {2}", "bff", "f"),
    ops.less: ("{0} < {1}", "ff", "b"), ops.less_equal: ("{0} <= {1}", "ff", "b"),
    ops.greater: ("{0} > {1}", "ff", "b"), ops.greater_equal: ("{0} >= {1}", "ff", "b"),
    ops.equal: ("{0} == {1}", "ff", "b"), ops.not_equal: ("{0} != {1}", "ff", "b"),
    ops.logical_and: ("{0} and {1}", "bb", "b"), ops.logical_or: ("{0} or {1}", "bb", "b"),
    ops.logical_not: ("not {0}", "b", "b"),
}
_SPELL.update({getattr(ops, name): (f"{{m}}.{py}({{0}})", "f", "f") for name, py in (
    ("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"),
    ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"),
    ("sinh", "sinh"), ("cosh", "cosh"), ("arcsin", "asin"), ("arccos", "acos"),
    ("arctan", "atan"), ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
    ("log2", "log2"), ("log10", "log10"))})
# primitives that give back the one number they are given (a sum of one element, a
# reshape of it, its cast to the dtype it has...)
_SAME = {ops.reshape, ops.transpose, ops.expand_dims, ops.squeeze,
         ops.broadcast_to, ops.sum_to, ops.cast_like, ops.like_arg, ops.copy, ops.astype}
_BOOL = (dtype_class(numpy.bool_), ("bool",))  # (a comparison's class: a bool)
# primitive -> the operands through which an inf or a nan may leave no trace in its result
# (1 / inf is 0, tanh(inf) 1, a comparison with nan False): they are checked finite too
_HIDES = {ops.divide: (1,), ops.reciprocal: (0,), ops.exp: (0,), ops.expm1: (0,),
          ops.tanh: (0,), ops.arctan: (0,), ops.arctan2: (0, 1), ops.hypot: (0, 1),
          ops.sign: (0,), ops.maximum: (0, 1), ops.minimum: (0, 1), ops.where: (1, 2),
          ops.power: (0, 1), ops.less: (0, 1), ops.less_equal: (0, 1), ops.greater: (0, 1),
          ops.greater_equal: (0, 1), ops.equal: (0, 1), ops.not_equal: (0, 1)}


class NumberForm:
    """What codegen writes: `inputs` [(input Var, whether it is an array: `.item()`)],
    `steps` [(out Var, spelling, operands)] in order, `same` {out id: the Var or constant
    it is}, `leaves` {returned Var id: ("array", shape) or ("scalar",)}, `returns` the
    structure of what it returns, `checked` the operands it returns only if finite."""

    def __init__(self, returns):
        self.returns = returns
        self.inputs: list = []
        self.steps: list = []
        self.same: dict = {}
        self.leaves: dict = {}
        self.checked: list = []  # operands that must be finite (`_HIDES`), in order


def _one(v, kind: str) -> bool:
    """A value of one element, of a shape the variant knows: a bool (kind "b"), or (kind
    "f") a float of dtype float64 or of a floating dtype the IR does not name (a Python
    float met a float64 one). Every argument is float64 and every operation of the form
    gives float64 on float64 operands and Python or float64 constants (an `astype` must
    name float64), so such a value is float64 too."""
    shape = known_shape(v)
    if shape is None or math.prod(shape) != 1:
        return False
    if kind == "b":
        return v.dclass in _BOOL
    return v.dclass[0] == "f" and (v.dclass == _FLOAT64 or not isinstance(v.dclass[1], str))


def _operand(a, kind: str) -> bool:
    if isinstance(a, Var):
        return _one(a, kind)
    if kind == "b":
        return isinstance(a, (bool, numpy.bool_))
    return constant(a) is not None


def constant(c) -> "str | None":
    """`c` as a Python literal, None where it is not a bool or a real number of float64 or
    Python's. A number is written as a float (`0` as `0.0`): every value of the form is a
    float, as numpy's float64 arithmetic makes it, so `where(c, x, 0)` gives 0.0."""
    if isinstance(c, (bool, numpy.bool_)):
        return repr(bool(c))
    if isinstance(c, numpy.ndarray):
        if c.size != 1 or c.dtype != numpy.float64:
            return None
        c = c.item()
    if isinstance(c, numpy.floating) and c.dtype != numpy.float64:
        return None
    if not isinstance(c, (int, float, numpy.float64)) or isinstance(c, numpy.integer):
        return None
    if isinstance(c, int) and abs(c) > 2 ** 53:
        return None  # (not a float exactly: numpy's conversion of it is its own)
    text = literal(float(c))
    return f"({text})" if text.startswith("-") else text


def _power(base, exponent) -> str:
    """`x * x` for 2, `x ** 3` for another integer exponent; `math.pow` otherwise (Python's `**` of a negative
    base and a fractional exponent is a complex number, math.pow raises)."""
    if not isinstance(exponent, Var) and float(exponent) == 2.0:
        return "{0} * {0}"  # (numpy squares: the same product, correctly rounded)
    if not isinstance(exponent, Var) and float(exponent).is_integer():
        return "{0} ** {1}"
    return "{m}.pow({0}, {1})"


def plan(eqns, returns, spec, converted=()) -> "NumberForm | None":
    """The form on Python floats of a variant with signature `spec` ([(input Var, what it
    was)]) computing `eqns` then `returns`, or None where it does not apply. `converted`:
    the ids of the inputs the numpy code makes numpy scalars (as_float)."""
    form = NumberForm(returns)
    kinds = {}
    # what each value of shape () is in the numpy code, where that is sure: "np" a numpy
    # float64, "in0" a 0-d array argument, "py" a Python float argument
    scalar = {}
    for v, what in spec:
        if what is type(None):
            continue
        if what is float:
            form.inputs.append((v, False))
            scalar[v.id] = "np" if v.id in converted else "py"
        elif isinstance(what, tuple) and math.prod(what[0]) == 1 and \
                numpy.dtype(what[1]) == numpy.float64:
            form.inputs.append((v, True))
            if what[0] == ():
                scalar[v.id] = "in0"
        else:
            return None
        kinds[v.id] = what
    producer = {}
    for e in eqns:
        if e.blocks() or len(e.outs) != 1:
            return None
        out = e.outs[0]
        producer[out.id] = e
        if e.prim in (ops.sum, ops.mean):
            scalar[out.id] = "np"  # (numpy's reductions give numpy scalars)
        if e.prim is ops.sum_to and known_shape(out) != known_shape(e.ins[0]):
            # (a sum to fewer dimensions: 0.0 + the element, as numpy's sum gives it)
            if not (_one(out, "f") and _operand(e.ins[0], "f")):
                return None
            form.steps.append((out, "{0} + 0.0", [e.ins[0]]))
            continue
        if e.prim in _SAME or e.prim is ops.getitem and not isinstance(e.ins[1], Var):
            # (an index known now, of one element by one: that element; staging checked
            # the index against the shape)
            x = e.ins[0]
            if not (_one(out, "f") and _operand(x, "f")) or isinstance(x, bool) or \
                    e.prim is ops.astype and out.dclass != _FLOAT64:
                return None
            form.same[out.id] = form.same.get(x.id, x) if isinstance(x, Var) else x
            continue
        spelling, takes, gives = _SPELL.get(e.prim, (None, "", ""))
        if e.prim is ops.power and len(e.ins) == 2:
            spelling, takes, gives = _power(*e.ins), "ff", "f"
        if spelling is None or len(e.ins) != len(takes) or not _one(out, gives) or \
                not any(isinstance(a, Var) for a in e.ins) or \
                not all(_operand(a, k) for a, k in zip(e.ins, takes)):
            return None
        form.steps.append((out, spelling, list(e.ins)))
        hides = _HIDES.get(e.prim, ())
        if e.prim is ops.power and not isinstance(e.ins[1], Var) and float(e.ins[1]) > 0:
            hides = ()  # (inf ** 2 is inf, nan ** 2 nan: a positive power keeps them)
        form.checked += [e.ins[k] for k in hides
                         if isinstance(e.ins[k], Var) and _one(e.ins[k], "f")]
        got = [scalar.get(a.id) for a in e.ins if isinstance(a, Var)]
        if e.prim is not ops.where and {"np", "in0"} & set(got) and \
                set(got) <= {"np", "in0", "py"}:
            # (an operator or a ufunc of a numpy scalar or a 0-d array gives a numpy scalar;
            # np.where gives a 0-d array)
            scalar[out.id] = "np"
    for v in _leaves(returns):
        if not isinstance(v, Var) or not (_one(v, "f") or v.id in kinds):
            return None
        form.leaves[v.id] = _leaf_kind(v, producer, kinds, scalar)
        if form.leaves[v.id] is None:
            return None
    return form if form.leaves else None


def _leaves(obj):
    if isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _leaves(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _leaves(o)
    else:
        yield obj


def _leaf_kind(v, producer, kinds, scalar):
    """What the numpy code returns for `v`: ("array", shape), or ("scalar",) for a numpy
    float64; None where that is not known."""
    e = producer.get(v.id)
    if e is not None and e.prim is ops.like_arg and isinstance(e.ins[1], Var) and \
            e.ins[1].id in kinds:  # a gradient takes its argument's kind
        what = kinds[e.ins[1].id]
        return ("array", what[0]) if isinstance(what, tuple) and what[0] else ("scalar",)
    shape = known_shape(v)
    if shape:  # (numpy's operations on arrays of one dimension or more give arrays)
        return ("array", shape)
    return ("scalar",) if scalar.get(v.id) == "np" else None
