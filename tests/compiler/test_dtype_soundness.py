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


X1 = np.array([0.3, 1.6, -2.2, 0.45])  # no integer: truncation is constant near each
OTHER_DTYPE = [(U.shifted_in_preallocated, X1), (U.filled_like_counts, np.float64(2.7)),
               (U.converted_like, X1), (U.made_in_dtype_of, X1)]


@pytest.mark.parametrize("fn,x", OTHER_DTYPE, ids=[c[0].__name__ for c in OTHER_DTYPE])
@pytest.mark.parametrize("kdtype", [np.int64, np.int8, np.float64, np.float32, bool])
def test_another_arrays_dtype(fn, x, kdtype):
    """`x.dtype` is a dtype argument known when the code runs: a conversion to an integer
    or boolean dtype has no derivative (full_like of an int array passed the gradient of
    its fill value through the truncation)."""
    k = np.array([1, 0, 2, 1]).astype(kdtype)
    # (float32 rounding needs a longer step: the functions are at most quadratic in x)
    eps, rtol = (1e-2, 1e-4) if kdtype is np.float32 else (1e-6, 1e-5)
    fd = finite_differences(fn, (x, k), 0, eps=eps)
    for specialize in (False, True):
        g = srcgrad.value_and_grad(fn, cache=False, specialize=specialize)
        for _ in range(3):
            value, got = g(x, k)
            assert value == fn(x, k)
            np.testing.assert_allclose(got, fd, rtol=rtol, atol=1e-6, err_msg=fn.__name__)
    tangent = srcgrad.jvp(fn, (x, k), (np.ones_like(x), np.zeros(4)))[1]
    np.testing.assert_allclose(tangent, np.sum(fd), rtol=rtol, atol=1e-6)


def test_comparing_a_run_time_dtype_is_refused_where_it_is_written():
    with pytest.raises(srcgrad.SrcgradError, match=r"(?s)known only when the code runs.*"
                       r"dtype_user\.py"):
        srcgrad.grad(U.branch_on_dtype)(X1, np.ones(4))


def test_writes_into_arrays_made_like_another():
    """np.zeros_like(x, dtype=...), np.ones_like(x, dtype=...) and np.full_like(x, c) are
    new arrays: writing into them is numpy's, not refused as a view of x (writing floats
    into an integer one is refused: the truncation has no derivative)."""
    fn = U.written_into_new_arrays
    k = np.arange(4.0)
    g = srcgrad.grad(fn, cache=False)
    for _ in range(3):
        np.testing.assert_allclose(g(X1, k), finite_differences(fn, (X1, k), 0), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(TypeError, match="truncates"):
        g(X1, np.arange(4))


FOLDED = [U.scaled_twice, U.scalings_multiplied, U.negated_scaling, U.negated_ratio,
          U.int_scaled_twice]
NARROW = {np.float16: np.array([0.01, 0.02, 0.03, 0.05]), np.float32: np.array([1e-3, 2.0, 3.0, 5.0]),
          np.int8: np.array([1, 2, 3, 100]), np.uint8: np.array([1, 2, 3, 200]),
          np.int16: np.array([1, -2, 3, 300])}


@pytest.mark.parametrize("fn", FOLDED, ids=[f.__name__ for f in FOLDED])
@pytest.mark.parametrize("kdtype", list(NARROW), ids=[d.__name__ for d in NARROW])
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_folded_constants_fit_a_narrow_dtype(fn, kdtype, specialize):
    """`a * (b * k)`, `(a * k) * (b * y)`, `-(a * k)`: the optimizer folds the constants
    into one only where it fits k's dtype as the two did (90000 overflowed float16 to inf,
    silently; `(-2) * k` raised for a uint8 k where `-(2 * k)` wraps)."""
    w = np.linspace(0.5, 1.5, 4)
    with np.errstate(all="ignore"):
        k = NARROW[kdtype].astype(kdtype)
        want_value = fn(w, k)
        want = tape_grads(fn, (w, k), [0])[0]
        g = srcgrad.value_and_grad(fn, cache=False, specialize=specialize)
        for _ in range(4):  # (the specialized variant runs from the third call)
            value, got = g(w, k)
            np.testing.assert_allclose(value, want_value, rtol=1e-6)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=fn.__name__)


@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_folded_constants_in_the_reverse_pass_fit_float16(specialize):
    k = np.array([0.01, 0.02, 0.03], np.float16)
    want = tape_grads(U.scaled_square, (k,), [0])[0]
    assert np.all(np.isfinite(want))
    g = srcgrad.grad(U.scaled_square, cache=False, specialize=specialize)
    for _ in range(4):
        got = g(k)
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=2e-3)


@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_an_in_place_update_keeps_the_arrays_dtype(specialize):
    """`acc += x` stores into acc: a float32 acc stays float32 (it became float64: other
    values than numpy's); a float into an int array is numpy's TypeError (it gave a
    gradient)."""
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3) + 1e3
    g = srcgrad.grad(U.accumulated_in_float32, has_aux=True, cache=False,
                     specialize=specialize)
    want_acc = U.accumulated_in_float32(x)[1]
    for _ in range(4):
        dx, acc = g(x)
        assert acc.dtype == np.float32
        np.testing.assert_array_equal(acc, want_acc)
    h = srcgrad.value_and_grad(U.scaled_in_an_int_array, cache=False, specialize=specialize)
    for _ in range(4):
        with pytest.raises(TypeError, match="same_kind"):
            h(np.linspace(0.5, 1.5, 3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("lam", [0.5, -1.25])
def test_a_python_float_argument_keeps_the_arrays_dtype(dtype, lam):
    """A specialized variant takes a Python float argument as a float64 scalar, which with
    an array of another dtype must not make its results float64: numpy keeps the array's."""
    x = np.linspace(-1, 1, 7).astype(dtype)
    g = srcgrad.value_and_grad(U.scaled_with_defaults, has_aux=True, cache=False)
    want_value, want_aux = U.scaled_with_defaults(x, lam)
    for _ in range(4):  # (the specialized variant runs from the third call)
        (value, aux), grad = g(x, lam)
    assert "Specialized to" in g.specialized_source(x, lam)
    assert aux.dtype == want_aux.dtype == grad.dtype == dtype
    assert np.asarray(value).dtype == np.asarray(want_value).dtype
    np.testing.assert_allclose(aux, want_aux, rtol=1e-3 if dtype == np.float16 else 1e-6)
    x64 = x.astype(np.float64)
    fd = finite_differences(lambda v: U.scaled_with_defaults(v, lam)[0], (x64,), 0)
    np.testing.assert_allclose(grad, fd, rtol=2e-2 if dtype == np.float16 else 1e-4,
                               atol=1e-2 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_math_functions_and_float_give_python_floats(dtype, specialize):
    """math.sqrt(lam) and float(s) are Python floats (weak to numpy): with a float32 array
    the result is float32, as numpy gives it (they were float64 scalars: float64)."""
    x = np.linspace(-1, 1, 7).astype(dtype)
    g = srcgrad.value_and_grad(U.scaled_by_math, has_aux=True, cache=False,
                               specialize=specialize)
    want_value, want_aux = U.scaled_by_math(x)
    for _ in range(4):  # (the specialized variant runs from the third call)
        (value, aux), grad = g(x)
    assert aux.dtype == want_aux.dtype == grad.dtype == dtype
    assert np.asarray(value).dtype == np.asarray(want_value).dtype
    fd = finite_differences(lambda v: U.scaled_by_math(v)[0], (x.astype(np.float64),), 0)
    np.testing.assert_allclose(grad, fd, rtol=2e-2 if dtype == np.float16 else 1e-4,
                               atol=5e-2 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_a_python_float_updated_in_place_rebinds_its_name(specialize):
    """`s = float(x[0]); s += 1.0` (and of math.sin) rebinds s to a new float: no view of x
    to refuse, no array to read a shape from."""
    x = np.array([0.5, 2.0, -0.7])
    g = srcgrad.grad(U.updated_python_floats, cache=False, specialize=specialize)
    for _ in range(4):
        got = g(x)
    fd = finite_differences(U.updated_python_floats, (x,), 0)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("specialize", [False, True], ids=["polymorphic", "specialized"])
def test_a_0d_array_of_a_python_float_is_float64(specialize):
    """np.asarray(0.5) times a float32 array is float64 in numpy (a 0-d array is not a weak
    scalar); it was dropped to the Python float 0.5, which kept float32."""
    x = np.linspace(-1, 1, 5).astype(np.float32)
    g = srcgrad.value_and_grad(U.scaled_by_a_0d_array, cache=False, specialize=specialize)
    for _ in range(4):
        value, grad = g(x)
    want = U.scaled_by_a_0d_array(x)
    assert np.asarray(value).dtype == np.asarray(want).dtype == np.float64
    assert grad.dtype == np.float32
    np.testing.assert_allclose(value, want, rtol=1e-12)
    np.testing.assert_allclose(grad, np.full(5, 1.25), rtol=1e-6)  # 0.5 * 2 + 0.25


@pytest.mark.parametrize("n", [6, 300_000])  # (the large one: blocked regions, fused loops)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_ops_of_masks_that_numpy_computes_in_another_dtype(n, backend):
    """np.square of a bool array is int8, not bool: claimed bool, the arrays a region or a
    numba loop wrote were bool, and np.square(m) + np.square(m) was 1 where numpy's is 2
    (a silently wrong gradient at large sizes). The IR now asks numpy what its ufunc gives
    of integer and bool operands."""
    if backend == "numba":
        pytest.importorskip("numba")
    import warnings

    x = np.linspace(0.0, 1.0, n)
    want = 2.0 * (x > 0.5)
    g = srcgrad.grad(U.squared_masks, cache=False, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (numba: the numpy code runs)
        for _ in range(3):
            np.testing.assert_array_equal(g(x), want)


@pytest.mark.parametrize("kdtype", [np.int64, np.int32, np.int8, np.uint16, bool])
def test_float_functions_of_integer_arrays(kdtype):
    """np.sin of int64 is float64 (numba compiles it), of int8 float16 (numba refuses it:
    the numpy code runs); either way numpy's answer."""
    import warnings

    x = np.linspace(-1.0, 1.0, 7)
    k = (np.arange(7) % 5).astype(kdtype)
    want = srcgrad.grad(U.sines_of_counts, cache=False, specialize=False)(x, k)
    np.testing.assert_allclose(want, finite_differences(U.sines_of_counts, (x, k), 0),
                               rtol=1e-4 if np.dtype(kdtype).itemsize < 4 else 1e-6,
                               atol=1e-6)
    backends = ["numpy"] + (["numba"] if _has_numba() else [])
    for backend in backends:
        g = srcgrad.grad(U.sines_of_counts, cache=False, backend=backend)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for _ in range(3):
                got = g(x, k)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        fell_back = any("numpy code instead" in str(w.message) for w in seen)
        if backend == "numba":
            assert fell_back == (np.dtype(kdtype).itemsize < 4), [str(w.message) for w in seen]


def _has_numba() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("fn,extra", [("scaled_xlogy", ()), ("scaled_copysign", ("ones",)),
                                      ("trigamma_sum", ())])
@pytest.mark.parametrize("n", [7, 300_000])
def test_scipys_and_a_sign_operands_promotion(fn, extra, n):
    """What scipy.special's functions give of a float32 array and a Python number
    (float64), and copysign of float32 and float64 (float64), is asked of the functions
    themselves: claimed float32, a large variant's blocks were float32 arrays, 1e40 was
    inf there and the gradient 0, and trigamma's gradient came back float64 from the
    third call on."""
    pytest.importorskip("scipy")
    import warnings

    f = getattr(U, fn)
    x = np.linspace(0.5, 1.5, n, dtype=np.float32)
    args = (x,) + tuple(np.ones(n) for _ in extra)
    want = srcgrad.grad(f, cache=False, specialize=False)(*args)
    g = srcgrad.grad(f, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(4):  # (the variant from the third call)
            got = g(*args)
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if fn != "trigamma_sum" and n > 1000:  # (neighbours nearly equal: 1/x at the ends)
        np.testing.assert_allclose(got[:3], [1.0, 2.0, 2.0], rtol=1e-4)


def test_numba_refuses_arithmetic_on_the_bools_of_any_and_all():
    """m.any() + m.all(): numpy's bools add to True; numba's to 2 (np.any's result had no
    dtype in the IR, and numba's refusal of bool arithmetic looks at known dtypes): the
    numpy code runs, with a warning."""
    if not _has_numba():
        pytest.skip("numba is not installed")
    import warnings

    x, m = np.ones(5), np.ones(5, bool)
    g = srcgrad.grad(U.any_plus_all, cache=False, backend="numba")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = g(x, m)
    np.testing.assert_array_equal(got, np.ones(5))
    assert any("numpy code instead" in str(w.message) for w in seen)


K8 = np.array([100, 100, 3, 4, 5], np.int8)


@pytest.mark.parametrize("fn,k", [
    ("product_of_two_counts", K8), ("sum_of_two_flags", np.ones(5, bool)),
    ("squared_largest", K8), ("smallest_plus_100", K8),
    ("difference_of_counts", np.array([10, 20, 3, 4, 5], np.uint8)),
    ("running_product", K8)])
def test_numbers_read_from_small_integer_arrays_keep_numpys_dtype_under_numba(fn, k):
    """An element, the max or min of an int8, uint8 or bool array is numpy's int8, uint8 or
    bool scalar, whose arithmetic wraps (100 * 100 is 16) or stays bool (True + True is
    True); numba computes it in int64 (10000, 2). The whole small function compiled by
    numba gave numba's numbers, silently; now the numpy code runs."""
    if not _has_numba():
        pytest.skip("numba is not installed")
    import warnings

    f = getattr(U, fn)
    x = np.ones(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (numpy's overflow; the fallback)
        want = srcgrad.grad(f, cache=False, specialize=False)(x, k)
        got = srcgrad.grad(f, cache=False, backend="numba")(x, k)
    np.testing.assert_array_equal(got, want)
