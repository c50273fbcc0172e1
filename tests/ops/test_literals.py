"""`ops.literal`, the spelling generated code gives a constant, reads back as the same
value: the same type, shape and dtype, the same numbers (nan, infinities and the sign of
zero included). A constant array with no elements once read back as shape (0,)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from runtime.ops.core import literal

DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.bool_])


def _read(text):
    return eval(text, {"np": np})  # noqa: S307 (the text under test)


@given(hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)))
def test_an_array_reads_back_as_itself(a):
    b = _read(literal(a))
    assert type(b) is np.ndarray and b.shape == a.shape and b.dtype == a.dtype
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if a.dtype.kind == "f":  # (the sign of zero; a nan's sign bit is not a value)
        numbers = ~np.isnan(a)
        assert np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


@given(st.one_of(st.floats(), st.integers(-2**80, 2**80), st.booleans(), st.none(),
                 st.slices(10), st.lists(st.integers(-5, 5), max_size=4).map(tuple)))
def test_a_python_value_reads_back_as_itself(v):
    w = _read(literal(v))
    assert type(w) is type(v)
    if isinstance(v, float):
        assert (w != w and v != v) or (w == v and np.signbit(w) == np.signbit(v))
    else:
        assert w == v
