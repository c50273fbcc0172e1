"""Each operation of the form on Python floats (srcgrad.scalars) against numpy's, on
special values: where every operand and the result are finite, the form gives numpy's
value (to two ulps for `math`'s functions, exactly for arithmetic) with numpy's sign of
zero; where Python raises, or an operand or the result is not finite, the form hands the
call to the numpy code, so only these are compared."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from runtime import ops
from srcgrad import scalars

VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300,
          0.7853981633974483, 710.0, -745.5, 1e16]
EXACT = {ops.add, ops.subtract, ops.multiply, ops.divide, ops.negative, ops.square,
         ops.reciprocal, ops.sign, ops.maximum, ops.minimum, ops.sum, ops.mean,
         ops.absolute, ops.fabs}
TABLE = sorted(((p, spec) for p, spec in scalars._SPELL.items()
                if spec[1] and set(spec[1]) == {"f"} and spec[2] == "f"),
               key=lambda item: item[0].name)


def _python(spelling, args):
    names = [f"a{k}" for k in range(len(args))]  # (operands are names in the form)
    return eval(spelling.format(*names, m="math"), {"math": math, **dict(zip(names, args))})


def _numpy(prim, args):
    out = prim.impl(*[np.array([a]) for a in args])
    return float(np.asarray(out).reshape(-1)[0])


@pytest.mark.parametrize("prim,spec", TABLE, ids=[p.name for p, _ in TABLE])
def test_each_spelling_gives_numpys_value_and_sign(prim, spec):
    spelling, takes, _ = spec
    checked = 0
    for args in itertools.product(VALUES, repeat=len(takes)):
        try:
            got = _python(spelling, args)
        except (ArithmeticError, ValueError):
            continue  # (the numpy code answers)
        if not math.isfinite(got):
            continue  # (the same)
        with np.errstate(all="ignore"):
            want = _numpy(prim, args)
        assert math.isfinite(want), (prim.name, args, got, want)
        assert math.copysign(1.0, got) == math.copysign(1.0, want), (prim.name, args, got,
                                                                      want)
        if prim in EXACT:
            assert got == want, (prim.name, args, got, want)
        else:
            assert abs(got - want) <= 2 * math.ulp(want) + 1e-300, (prim.name, args, got, want)
        checked += 1
    assert checked, prim.name


@pytest.mark.parametrize("prim", sorted(scalars._SPELL, key=lambda p: p.name),
                         ids=lambda p: p.name)
def test_an_inf_or_nan_operand_never_vanishes_unchecked(prim):
    # an operand that is inf or nan gives a result that is inf or nan (checked at the end),
    # an exception, or the operand is one the form checks (scalars._HIDES)
    spelling, takes, gives = scalars._SPELL[prim]
    if set(takes) != {"f"}:
        pytest.skip("takes a bool")
    for k in range(len(takes)):
        for bad in (math.inf, -math.inf, math.nan):
            for other in VALUES[:8]:
                args = [other] * len(takes)
                args[k] = bad
                try:
                    got = _python(spelling, args)
                except (ArithmeticError, ValueError):
                    continue
                if gives == "b" or math.isfinite(got):
                    assert k in scalars._HIDES.get(prim, ()), (prim.name, args, got)
