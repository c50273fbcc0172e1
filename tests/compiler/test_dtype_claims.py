"""What the IR claims of a result's dtype is what numpy computes: for every op spec of
tests/ops/test_ops.py, with its arrays as values of known shape and dtype (float64, and
float32), and with one of them instead as a constant array (a folded value, numpy's own
dtype), the dtype the staging gives the result, where it claims an exact one, is the dtype
of numpy's result. A wrong claim lets a specialized variant drop a cast (a float32
argument's gradient came back float64) or write in place into an array of another dtype."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from runtime.ops import PRIMITIVES
from srcgrad.ir import Var
from srcgrad.staging import Builder, dtype_class, known

from ops.test_ops import SPECS


def _cases():
    out = []
    for s in SPECS:
        prim = PRIMITIVES[s.prim]
        if s.check is not None or prim.meta or prim.creator or not prim.pure:
            continue
        out.append(s)
    return out


CASES = _cases()


def _float32(a):
    return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a


def _claimed(prim, args, params, constant):
    """The dtype the staging claims for prim(*args) with args' arrays as Vars of known
    classes (the `constant`-th array left a constant), or None where it claims none."""
    vals, k = [], 0
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind in "fiub":
            if k != constant:
                a = Var("a", "array", known(a.shape), dtype_class(a.dtype))
            k += 1
        vals.append(a)
    if not any(isinstance(v, Var) for v in vals):
        return "skip"
    out = Var("out", "array")
    Builder().classify(prim, vals, params, out)
    d = out.dclass
    if d == ("bool",):
        return np.dtype(bool)
    if isinstance(d, tuple) and len(d) == 2 and isinstance(d[1], str):
        return np.dtype(d[1])
    return None


def _numpys(prim, args, params):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = prim.impl(*args, **params)
    except Exception:  # (numpy refuses this form: nothing to claim)
        return None
    return None if isinstance(result, (tuple, list)) else np.asarray(result).dtype


@pytest.mark.parametrize("s", CASES, ids=lambda s: s.id)
@pytest.mark.parametrize("width", ["float64", "float32", "float32 with a float64 constant",
                                   "float32 with a Python float"])
def test_a_claimed_dtype_is_numpys(s, width):
    prim = PRIMITIVES[s.prim]
    base, _ = s.materialize()
    arrays = sum(isinstance(a, np.ndarray) and a.dtype.kind in "fiub" for a in base)
    for constant in [None] + list(range(arrays if arrays > 1 else 0)):
        if width == "float64":
            args = base
        else:
            args, k = [], 0
            for a in base:
                is_array = isinstance(a, np.ndarray) and a.dtype.kind in "fiub"
                keep = width != "float32" and is_array and k == constant
                if keep and width.endswith("Python float"):
                    a = 1.5 if a.dtype.kind == "f" else a  # (a seed: numpy's weak scalar)
                args.append(a if keep else _float32(a))
                k += is_array
        want = _numpys(prim, args, s.params)
        got = _claimed(prim, args, s.params, constant)
        if want is None or got == "skip" or got is None:
            continue
        assert got == want, (f"{s.prim}: the IR claims {got}, numpy gives {want} "
                             f"(constant operand: {constant})")


_INTS = ["int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("s", CASES, ids=lambda s: s.id)
def test_a_claimed_dtype_of_integer_operands_is_numpys(s):
    # (a float function of integers, np.sin of int64, is claimed float64 where the ufunc
    # gives it: numba then compiles it; np.sin of int8 is float16; np.square of a bool is
    # int8. The dtypes are looped here, not parametrized: one test item per op)
    prim = PRIMITIVES[s.prim]
    base, _ = s.materialize()
    for dtype in _INTS:
        args = [a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                for a in base]
        want = _numpys(prim, args, s.params)
        got = _claimed(prim, args, s.params, None)
        if want is None or got == "skip" or got is None:
            continue
        assert got == want, f"{s.prim} of {dtype}: the IR claims {got}, numpy gives {want}"


def _mixed(base, dtype, other):
    """`base`'s operands with the first float array made `dtype`, the others `other` (a
    dtype, a Python int or float, or the same dtype)."""
    args, k = [], 0
    for a in base:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            if k == 0:
                a = a.astype(dtype)
            elif other == "Python int":
                a = 3
            elif other == "Python float":
                a = 1.5
            else:
                a = a.astype(dtype if other == "same" else other)
            k += 1
        args.append(a)
    return args


@pytest.mark.parametrize("s", CASES, ids=lambda s: s.id)
def test_a_claimed_dtype_of_mixed_integer_operands_is_numpys(s):
    # (the first operand an integer or bool array, the others arrays of another dtype or
    # Python numbers; constants among them stay what they are)
    prim = PRIMITIVES[s.prim]
    base, _ = s.materialize()
    for dtype in ["int64", "int8", "uint8", "bool"]:
        for other in ["float64", "float32", "Python int", "Python float", "same"]:
            args = _mixed(base, dtype, other)
            want = _numpys(prim, args, s.params)
            got = _claimed(prim, args, s.params, None)
            if want is None or got == "skip" or got is None:
                continue
            assert got == want, f"{s.prim} of {dtype} and {other}: the IR claims {got}, " \
                f"numpy gives {want}"
