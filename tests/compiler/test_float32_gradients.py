"""A float32 argument's gradient is float32 at every call, the specialized variant's
included: the variant's cotangents met float64 constants (a seed folded to an array,
`np.array([[2.0]]) / s`; np.tensordot's array of a Python float seed) that the IR took for
float32, and its gradient came back float64 from the third call. Checked against the
tape (which computes in float32 throughout) on both backends."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import tape_grads

import float32_gradients_user as U

RNG = np.random.default_rng(11)
CASES = [
    (U.max_over_axis, (3,)), (U.amax_over_all_axes, (2, 2)), (U.product_over_none, (2, 2)),
    (U.min_over_all_axes, (3, 2)), (U.trace_of_sine, (2, 3)), (U.trace_of_sine, (0, 3)),
    (U.traces, (3, 3)), (U.dotted, (4,)), (U.inner, (3,)), (U.contracted, (2, 2)),
    (U.kron_sum, (2, 3)),
]


@pytest.mark.parametrize("fn,shape", CASES, ids=[f"{f.__name__}-{s}" for f, s in CASES])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_float32_arguments_gradient_is_float32_at_every_call(fn, shape, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    x = RNG.uniform(0.5, 1.5, shape).astype(np.float32)
    want = tape_grads(fn, (x,), [0])[0]
    assert want.dtype == np.float32
    g = srcgrad.grad(fn, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numba: float32 runs the numpy code, warned)
        for k in range(4):
            got = g(x)
            assert got.dtype == np.float32 and got.shape == x.shape, \
                f"call {k + 1}: {got.dtype} {got.shape}"
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"call {k + 1}")


def test_a_cotangent_is_computed_in_the_arguments_dtype_at_every_call():
    """The seed of `np.sum(np.exp(x) * 1e-300)` is the Python float 1e-300: in float32 it
    is 0, and inf * 0 is nan, as the tape (and numpy's float32 function) gives. The
    variant wrote it np.broadcast_to(1e-300, (1,)), a float64 array: inf from the third
    call on."""
    x = np.array([800.0], dtype=np.float32)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = tape_grads(U.tiny_scale, (x,), [0])[0]
        g = srcgrad.grad(U.tiny_scale)
        got = [g(x) for _ in range(4)]
    assert np.isnan(want).all()
    for k, v in enumerate(got):
        assert v.dtype == np.float32 and np.isnan(v).all(), f"call {k + 1}: {v}"
