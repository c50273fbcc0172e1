"""In-place updates in generated code never touch an array that a live view (a slice,
.T, reshape, expand_dims, a broadcast gradient...) or an alias still reads."""
import numpy as np
import pytest

import inplace_views_functions as F
from compiler_helpers import check_grad

rng = np.random.default_rng(5)

CASES = [
    (F.transpose_then_update, [rng.normal(size=(3, 4))], (0,)),
    (F.ravel_then_update, [rng.normal(size=(2, 3))], (0,)),
    (F.reduce_then_update, [rng.normal(size=(3, 2))], (0,)),
    (F.concat_then_update, [rng.normal(size=3), rng.normal(size=2)], (0, 1)),
    (F.slice_view_in_forward, [rng.normal(size=6)], (0,)),
    (F.expand_view_in_forward, [rng.normal(size=4)], (0,)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_with_views_and_in_place_candidates(fn, args, wrt):
    before = [a.copy() for a in args]
    check_grad(fn, args, wrt)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # the inputs are left alone too
