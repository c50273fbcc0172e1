"""Boolean and integer values that feed a float computation keep numpy's dtypes through
lowering and optimization: `&`, `|`, `^`, `~` are numpy's bitwise operators (logical on
masks, bitwise on integers), and no algebraic identity (`m + 0 -> m`, `m + m -> 2 * m`,
`k / 1 -> k`, `k * 1 -> k`) drops an op that changes its operand's dtype. Each program's
gradient, polymorphic and specialized, is checked against finite differences and the
tape engine."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences, tape_grads

import dtype_user as U

RNG = np.random.default_rng(11)
X = RNG.normal(size=(6, 4))
K = RNG.integers(-7, 8, size=(6, 4))

CASES = [
    (U.even_rows, (X, np.arange(6)[:, None])),
    (U.inverted_ints, (X, K)),
    (U.xor_mask, (X, K)),
    (U.doubled_mask, (X, K)),
    (U.mask_plus_zero_inverted, (X, K)),
    (U.mask_times_one_inverted, (X, K)),
    (U.int8_divided_by_one, (X, (K * 20).astype(np.int8))),
    (U.int_power_one, (X, K)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_masks_and_integers_keep_numpys_dtypes(fn, args, specialize):
    g = srcgrad.grad(fn, cache=False, specialize=specialize)
    fd = finite_differences(fn, args, 0)
    tape = tape_grads(fn, args, [0])[0]
    np.testing.assert_allclose(tape, fd, rtol=1e-6, atol=1e-7)
    for _ in range(4):  # (the specialized variant runs from the third call)
        got = g(*args)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7, err_msg=fn.__name__)
    if specialize:
        assert "Specialized" in g.specialized_source(*args)
