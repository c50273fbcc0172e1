"""The CUDA C spelling of the elementwise primitives: what a fused GPU kernel writes for
each (srcgrad.fusion). `T` is the kernel's floating type; `{0}`, `{1}`... the operands;
`{name}` a param. An op without a spelling (scipy.special's functions: CUDA C has no
digamma, polygamma or log_ndtr) ends a fused run and runs as a call.

Declared here, beside the op table, as facts of each primitive: `prim.cuda` (the
expression) and `prim.cuda_when(ins, params)` (whether the spelling covers these operands
and params, where it covers them only in part).
"""
from __future__ import annotations

import numbers

from .core import PRIMITIVES

__all__ = ["SPELLINGS"]

#: elementwise primitive's name -> CUDA C expression over its operands
SPELLINGS = {
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}",
    "divide": "{0} / {1}", "negative": "-{0}", "power": "pow({0}, {1})",
    "exp": "exp({0})", "log": "log({0})", "log1p": "log1p({0})", "expm1": "expm1({0})",
    "sqrt": "sqrt({0})", "square": "{0} * {0}", "reciprocal": "(T)1 / {0}",
    "sin": "sin({0})", "cos": "cos({0})", "tan": "tan({0})", "tanh": "tanh({0})",
    "sinh": "sinh({0})", "cosh": "cosh({0})", "arcsin": "asin({0})",
    "arccos": "acos({0})", "arctan": "atan({0})", "absolute": "fabs({0})",
    "floor": "floor({0})", "ceil": "ceil({0})", "trunc": "trunc({0})",
    # (floor_divide and remainder have none: numpy takes them from the exact quotient,
    # fmod's, where floor(x / y) rounds first: -3.7 // -0.1 is 36, not 37; cupy's own
    # functions run them)
    "fmod": "fmod({0}, {1})",
    # NaN in, NaN out, as numpy's (a comparison with NaN is false)
    "sign": "(isnan({0}) ? {0} : (T)(({0} > 0) - ({0} < 0)))",
    "relu": "(({0} > 0 || isnan({0})) ? {0} : (T)0)",
    "sigmoid": "(T)1 / ((T)1 + exp(-{0}))",
    "softplus": "(({0} > 0 ? {0} : (T)0) + log1p(exp(-fabs({0}))))",
    "maximum": "(({0} > {1} || isnan({0})) ? {0} : (({0} < {1} || isnan({1})) ? {1} : {0}))",
    "minimum": "(({0} < {1} || isnan({0})) ? {0} : (({0} > {1} || isnan({1})) ? {1} : {0}))",
    # clip is numpy's minimum(maximum(x, lo), hi): hi where lo > hi, NaN from any operand
    "where": "({0} ? {1} : {2})",
    "clip": "((isnan({0}) || isnan({1}) || isnan({2})) ? {0} + {1} + {2} : ({1} > {2} ? {2} "
            ": ({0} < {1} ? {1} : ({0} > {2} ? {2} : {0}))))",
    "less": "{0} < {1}", "less_equal": "{0} <= {1}", "greater": "{0} > {1}",
    "greater_equal": "{0} >= {1}", "equal": "{0} == {1}", "not_equal": "{0} != {1}",
    "logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_not": "!{0}",
    "isfinite": "(isfinite({0}) != 0)",
    "arcsinh": "asinh({0})", "arccosh": "acosh({0})", "arctanh": "atanh({0})",
    "log2": "log2({0})", "log10": "log10({0})", "exp2": "exp2({0})", "fabs": "fabs({0})",
    "rint": "rint({0})", "round": "rint({0})", "copy": "{0}", "isnan": "(isnan({0}) != 0)",
    "isinf": "(isinf({0}) != 0)",  # (C's may be -1 for -inf: a mask is 0 or 1)
    "arctan2": "atan2({0}, {1})", "hypot": "hypot({0}, {1})",
    "fmax": "fmax({0}, {1})", "fmin": "fmin({0}, {1})", "cbrt": "cbrt({0})",
    "copysign": "copysign({0}, {1})",
    "heaviside": "(isnan({0}) ? {0} : ({0} < (T)0 ? (T)0 : ({0} > (T)0 ? (T)1 : {1})))",
    "sinc": "({0} == (T)0 ? (T)1 : sin((T)3.141592653589793 * {0})"
            " / ((T)3.141592653589793 * {0}))",
    # numpy's forms: exact at ties, NaN when x - y is NaN (inf - inf)
    "logaddexp": "({0} == {1} ? {0} + (T)0.6931471805599453 : ({0} > {1} ? "
                 "{0} + log1p(exp({1} - {0})) : ({0} < {1} ? {1} + log1p(exp({0} - {1}))"
                 " : {0} - {1})))",
    "logaddexp2": "({0} == {1} ? {0} + (T)1 : ({0} > {1} ? "
                  "{0} + log1p(exp2({1} - {0})) * (T)1.4426950408889634 : ({0} < {1} ? "
                  "{1} + log1p(exp2({0} - {1})) * (T)1.4426950408889634 : {0} - {1})))",
    # on booleans only (see _masks): a kernel's values are booleans or of its floating T
    "bitwise_and": "{0} && {1}", "bitwise_or": "{0} || {1}", "bitwise_xor": "{0} != {1}",
    "invert": "!{0}",
    # fused only with finite replacements given (see _fusible): numpy's defaults are the
    # largest values of the dtype
    "nan_to_num": "(isnan({0}) ? {nan} : ({0} == (T)INFINITY ? {posinf} : "
                  "({0} == -(T)INFINITY ? {neginf} : {0})))",
}


def _no_decimals(ins, params) -> bool:
    return not params.get("decimals", 0)


def _finite_replacements(ins, params) -> bool:
    # numpy's defaults are the largest values of the dtype: fused only with finite ones given
    vals = [params.get("nan", 0.0), params.get("posinf"), params.get("neginf")]
    return all(isinstance(v, numbers.Real) and abs(float(v)) < float("inf") for v in vals)


def _both_bounds(ins, params) -> bool:
    return not any(a is None for a in ins)  # np.clip(x, None, hi): one comparison only


def _masks(ins, params) -> bool:
    """Every operand a boolean array or a Python bool: the logical operators (an integer
    operand is bitwise, and a kernel holds no integers)."""
    return all(isinstance(a, bool) or getattr(a, "dclass", None) == ("bool",) for a in ins)


_WHEN = {"round": _no_decimals, "nan_to_num": _finite_replacements, "clip": _both_bounds,
         "bitwise_and": _masks, "bitwise_or": _masks, "bitwise_xor": _masks, "invert": _masks}

for _name, _spelling in SPELLINGS.items():
    PRIMITIVES[_name].cuda = _spelling
    PRIMITIVES[_name].cuda_when = _WHEN.get(_name)
