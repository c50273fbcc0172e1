"""The numba backend (`grad(f, backend="numba")`, srcgrad.jit).

Every corpus program (every fourth one by default, tests/conftest.py; all of them with
`--all-cases` or the deep hypothesis profile, as CI runs it) and every elementwise op a
fused loop may contain is run through the backend and compared with the numpy backend (to
1e-10, float64); the benchmark-style programs must compile without falling back;
reductions written as loops keep numpy's semantics (axes, keepdims, NaN); what numba
cannot compile falls back to numpy with a warning that names the user's line; without
numba, asking for it says how to install it.
Skipped where numba is not installed.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import jit

numba = pytest.importorskip("numba")

import numba_user as U  # noqa: E402
import python_builtins_user as PB  # noqa: E402
import test_corpus as C  # noqa: E402


def numba_grad(fn, **kw):
    return srcgrad.grad(fn, backend="numba", **kw)


def compiled_without_warning(g, *args):
    """g(*args), asserting numba compiled it (no fallback warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = g(*args)
    src = g.specialized_source(*args)
    assert "by numba (nopython mode)" in src
    return out, src


def assert_same(got, want, what=""):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert np.shape(a) == np.shape(b), f"{what} result {k}: shape"
        scale = 1.0 + float(np.nanmax(np.abs(b), initial=0.0))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * scale,
                                   err_msg=f"{what} result {k}: numba vs numpy")


# ---- programs that must compile ---------------------------------------------------------

PROGRAMS = [
    ("mlp", U.mlp_loss, (0, 1, 2, 3), lambda: U.mlp_inputs(8)),
    ("logreg", U.logreg, (0, 1), lambda: (np.linspace(-1, 1, 5), np.array(0.3),
                                          np.random.default_rng(1).standard_normal((10, 5)),
                                          np.sign(np.linspace(-1, 1, 10)) + 0.0)),
    ("rosenbrock", U.rosenbrock, 0, lambda: (np.linspace(-1.5, 1.5, 12),)),
    ("elementwise", U.elementwise, (0, 1), lambda: (np.linspace(-2, 2, 30),
                                                    np.linspace(0.5, 1.5, 30))),
    ("reductions", U.reductions, 0,
     lambda: (np.random.default_rng(2).standard_normal((5, 7)),)),
    # a slice written into a copy (setitem), a reversed cumsum (np.flip along an axis)
    ("heat_steps", U.heat_steps, 0,
     lambda: (np.random.default_rng(3).standard_normal(12), 0.2)),
    ("cumulative", U.cumulative_energy, 0, lambda: (np.linspace(-1.0, 1.5, 9),)),
    ("float_and_math", U.normalized_energy, 0, lambda: (np.linspace(-1.0, 1.5, 9),)),
]


@pytest.mark.parametrize("name,fn,wrt,make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_compiles_and_agrees_with_numpy(name, fn, wrt, make):
    args = make()
    got, src = compiled_without_warning(numba_grad(fn, wrt=wrt), *args)
    assert_same(got, srcgrad.grad(fn, wrt=wrt, specialize=False)(*args), name)
    assert "@njit" in src and "_compiled(" in src


def test_value_and_grad_and_dtypes_of_results():
    args = U.mlp_inputs(8)
    vg = srcgrad.value_and_grad(U.mlp_loss, wrt=(0, 1), backend="numba")
    (v, (g0, g1)), _ = compiled_without_warning(vg, *args)
    v_ref, (r0, r1) = srcgrad.value_and_grad(U.mlp_loss, wrt=(0, 1), specialize=False)(*args)
    assert_same((v, g0, g1), (v_ref, r0, r1))
    assert g0.dtype == r0.dtype and type(g0) is np.ndarray
    lg = numba_grad(U.logreg, wrt=(0, 1))
    w, b, X, y = PROGRAMS[1][3]()
    dw, db = lg(w, b, X, y)
    assert np.shape(db) == () and np.asarray(db).dtype == np.float64  # 0-d: an array


def test_elementwise_chains_become_one_loop_and_reductions_loops():
    _, src = compiled_without_warning(numba_grad(U.elementwise, wrt=(0, 1)),
                                      np.linspace(-2, 2, 30), np.linspace(0.5, 1.5, 30))
    assert "for i in range(30):" in src and "np.sin(x[i])" in src
    _, src = compiled_without_warning(numba_grad(U.mlp_loss), *U.mlp_inputs(8))
    assert "def _max(x):" in src and "keepdims" not in src.split("_compiled(")[1]


def test_the_large_form_is_for_gradients_that_make_large_arrays():
    """A large input that the gradient only reads (a matmul's matrix) leaves it compiled
    whole; a large array it makes, or exp (a call per element) of a middling one, gives the
    large-array form."""
    w = np.linspace(-1, 1, 5)
    want = srcgrad.grad(U.least_squares, specialize=False)
    for rows, whole in ((jit.LARGE // 8, True), (jit.LARGE, False)):
        X = np.random.default_rng(3).standard_normal((rows, 5))
        y = np.sin(np.arange(rows))
        got, src = compiled_without_warning(numba_grad(U.least_squares), w, X, y)
        assert ("_compiled(" in src) == whole and ("loops compiled by numba" in src) != whole
        assert_same(got, want(w, X, y))
    X = np.random.default_rng(3).standard_normal((jit.VECTOR_CALLS, 5))
    y = np.sign(X @ w) + 0.0
    args = (w, np.array(0.3), X, y)
    got, src = compiled_without_warning(numba_grad(U.logreg, wrt=(0, 1)), *args)
    assert "loops compiled by numba" in src
    assert_same(got, srcgrad.grad(U.logreg, wrt=(0, 1), specialize=False)(*args))


def test_large_loops_run_in_parallel_threads():
    x = np.linspace(-1, 1, 300_000)
    g = numba_grad(U.elementwise, wrt=(0, 1))
    got, src = compiled_without_warning(g, x, x + 1.5)
    assert "@njit(cache=True, parallel=True, " in src and "in prange(300000)" in src
    # large arrays: numpy allocates them (results of megabytes: in arrays reused once the
    # caller drops them), only the loops are compiled
    assert "loops compiled by numba" in src and \
        "= reuse_result(grad_elementwise_dx_arrays, (300000,), float64)" in src
    assert_same(got, srcgrad.grad(U.elementwise, wrt=(0, 1), specialize=False)(x, x + 1.5))


def _flat(tree):
    if isinstance(tree, dict):
        return [a for k in sorted(tree, key=repr) for a in _flat(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in _flat(t)]
    return [tree]


def _snapshot(tree):
    return [np.array(a, copy=True) for a in _flat(tree)]


def test_large_arrays_reuse_scratch_arrays_but_never_results_held():
    """The large form keeps the values nothing sees after the call in scratch arrays that
    the next call reuses; a result the caller holds is never written again."""
    n = jit.LARGE + 1
    g = numba_grad(U.cumulative_energy)
    want = srcgrad.grad(U.cumulative_energy, specialize=False)
    x1, x2 = np.linspace(-1.2, 1.3, n), np.linspace(0.4, -0.9, n)
    r1, src = compiled_without_warning(g, x1)
    assert "= take_scratch(" in src and f"np.empty(({n},), np.float64)," in src
    kept = r1.copy()
    r2 = g(x2)
    np.testing.assert_array_equal(r1, kept)  # the second call left the first's result alone
    assert not np.shares_memory(r1, r2)
    assert_same(r2, want(x2))
    assert_same(g(x1), kept)


def test_large_form_called_from_many_threads():
    """Each call in progress holds its own scratch arrays."""
    from concurrent.futures import ThreadPoolExecutor

    n = jit.LARGE
    g = numba_grad(U.elementwise, wrt=(0, 1))
    want = srcgrad.grad(U.elementwise, wrt=(0, 1), specialize=False)
    xs = [np.linspace(-1.0, 1.0 + k / 7, n) for k in range(6)] * 3
    g(xs[0], xs[1] + 2.0)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: g(x, x[::-1] + 2.0), xs))
    for x, out in zip(xs, outs):
        assert_same(out, want(x, x[::-1] + 2.0))


def vector_fn(x, y):
    return np.tanh(x * y) + np.sin(x) ** 2 * y


@pytest.mark.parametrize("n", [40, jit.LARGE + 1])
def test_hvp_through_numba(n):
    x, v = np.linspace(-1.2, 1.3, n), np.linspace(0.5, -0.4, n)
    h = srcgrad.hvp(U.rosenbrock, backend="numba")
    got, src = compiled_without_warning(h, x, v)
    assert "@njit" in src and "v.dtype == float64" in src  # v is in the guard
    want = srcgrad.hvp(U.rosenbrock)
    assert_same(got, want(x, v))
    assert_same(h(x[::-1].copy(), v), want(x[::-1].copy(), v))
    # a v of another dtype than x's is no signature a variant takes: numpy runs it
    v32 = v.astype(np.float32)
    assert_same(h(x, v32), want(x, v32))
    h2 = srcgrad.hvp(U.elementwise, wrt=1, backend="numba")
    assert_same(h2(x, x + 2.0, v), srcgrad.hvp(U.elementwise, wrt=1)(x, x + 2.0, v))
    # a function with a default argument: the source of the variant a call runs, for the
    # call as written (the default bound before v; it was taken for v's place)
    h3 = srcgrad.hvp(U.penalized, backend="numba")
    for lam in ({}, {"lam": 2.0}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = h3(x, v, **lam)
            src = h3.specialized_source(x, v, **lam)
        assert "by numba (nopython mode)" in src and "type(lam) is float" in src
        assert_same(got, srcgrad.hvp(U.penalized)(x, v, **lam))


def test_vjp_through_numba():
    x, y = np.linspace(-1, 1, 50), np.linspace(0.5, 2, 50)
    c = np.linspace(1.0, 2.0, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out, pullback = srcgrad.vjp(vector_fn, x, y, wrt=(0, 1), backend="numba")
        grads = pullback(c)
    want_out, want_pullback = srcgrad.vjp(vector_fn, x, y, wrt=(0, 1))
    assert_same(out, want_out)
    assert_same(grads, want_pullback(c))
    with pytest.raises(ValueError, match="backend='jax' is not one of"):
        srcgrad.vjp(vector_fn, x, y, backend="jax")


def test_source_shows_what_numba_compiles():
    g = numba_grad(U.elementwise, wrt=(0, 1))
    assert "@njit" not in g.source  # no call yet: the shape-polymorphic code
    x = np.linspace(-2, 2, 30)
    compiled_without_warning(g, x, x + 2.0)
    assert g.source == g.specialized_source(x, x + 2.0)
    assert "@njit" in g.source and "for i in range(30):" in g.source


def test_arrays_in_another_memory_layout_run_numpy_quietly():
    """numba compiled the variant for C-ordered arrays: the same shapes in Fortran order or
    strided run the numpy code (no compiling, no warning inside the call)."""
    args = U.mlp_inputs(8)
    g = numba_grad(U.mlp_loss, wrt=(0, 1, 2, 3))
    compiled_without_warning(g, *args)
    other = tuple(np.asfortranarray(a) if a.ndim == 2 else np.repeat(a, 2)[::2]
                  for a in args)
    assert not any(a.flags.c_contiguous for a in other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = g(*other)
    assert_same(got, srcgrad.grad(U.mlp_loss, wrt=(0, 1, 2, 3), specialize=False)(*args))


def test_a_new_signature_gets_its_own_compiled_variant_and_others_run_numpy():
    g = numba_grad(U.rosenbrock)
    for n in (6, 7, 8, 9, 10, 11):
        x = np.linspace(-1.2, 1.3, n)
        assert_same(g(x), srcgrad.grad(U.rosenbrock, specialize=False)(x), f"n={n}")
    assert g.variant_count == 4  # the bound: later shapes run the polymorphic code


def test_methods_and_dict_parameters():
    m = U.Model()
    w, x = np.linspace(-1, 1, 9), np.linspace(0, 2, 9)
    got, _ = compiled_without_warning(srcgrad.grad(m.loss, backend="numba"), w, x)
    assert_same(got, srcgrad.grad(m.loss, specialize=False)(w, x))

    def loss(params, x):
        return np.sum(np.tanh(params["w"] * x + params["b"]))

    p = {"w": np.linspace(-1, 1, 9), "b": np.linspace(0, 1, 9)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = srcgrad.grad(loss, backend="numba")(p, x)
    want = srcgrad.grad(loss, specialize=False)(p, x)
    assert set(got) == {"w", "b"}
    assert_same((got["w"], got["b"]), (want["w"], want["b"]))


def test_arrays_read_from_outside_are_passed_to_the_compiled_code():
    """A global array, an object's attribute (`self.W` of a model called as a function)
    are read by the Python entry at each call and passed to what numba compiled (numba's
    code cannot reach a module's dict: it ran the numpy code, with a warning). A rebound
    array is seen; one of another dtype runs the numpy code, and is right."""
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    old = U.W_GLOBAL
    try:
        for W in (old, old * 2.0):
            U.W_GLOBAL = W
            g = srcgrad.grad(U.reads_a_global, backend="numba")
            got, src = compiled_without_warning(g, x)
            assert "main_globals" not in src.split("@njit")[-1]
            for _ in range(2):
                assert_same(g(x), srcgrad.grad(U.reads_a_global, specialize=False)(x))
        U.W_GLOBAL = old.astype(np.float32)  # rebound after compiling: another dtype
        assert_same(g(x), srcgrad.grad(U.reads_a_global, specialize=False)(x))
    finally:
        U.W_GLOBAL = old
    layer = U.Layer(np.linspace(0.5, -0.5, 6).reshape(3, 2))
    g = srcgrad.grad(layer, backend="numba")
    compiled_without_warning(g, x)
    for scale in (1.0, 3.0):
        layer.W = layer.W * scale
        assert_same(g(x), srcgrad.grad(layer, specialize=False)(x))


# ---- every elementwise op a loop may contain ----------------------------------------------

def _op_case(name):
    ns = {"np": np}
    two = {"add", "subtract", "multiply", "divide", "power", "arctan2", "hypot", "maximum",
           "minimum", "fmax", "fmin", "fmod", "remainder", "floor_divide", "logaddexp",
           "logaddexp2", "equal", "not_equal", "less", "less_equal", "greater",
           "greater_equal", "logical_and", "logical_or"}
    if name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "logical_and", "logical_or"):
        body = f"np.where(np.{name}(x, y), x * x, y * x)"
    elif name in ("isfinite", "isinf", "isnan", "logical_not"):
        body = f"np.where(np.{name}(x), x * x, 2.0 * x)"
    elif name in ("floor", "ceil", "trunc", "rint", "sign"):
        body = f"np.{name}(x) * x"
    elif name in two:
        body = f"np.{name}(x, y)"
    elif name == "copy":
        body = "np.copy(x) * x"
    else:
        body = f"np.{name}(x)"
    src = f"def f(x, y):\n    return np.sum(np.sin({body}) * x * y)\n"
    return src, ns


DOMAIN = {"arccos": (-0.9, 0.9), "arcsin": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
          "arccosh": (1.1, 3.0), "log": (0.1, 3.0), "log10": (0.1, 3.0), "log2": (0.1, 3.0),
          "sqrt": (0.1, 3.0), "log1p": (0.1, 3.0), "reciprocal": (0.5, 2.0),
          "power": (0.5, 2.0), "fmod": (0.5, 2.0), "remainder": (0.5, 2.0),
          "floor_divide": (0.5, 2.0), "divide": (0.5, 2.0)}


@pytest.mark.parametrize("name", sorted(jit.SCALAR_OPS))
def test_every_loop_op_compiles_and_agrees_with_numpy(name, tmp_path):
    src, ns = _op_case(name)
    path = tmp_path / f"op_{name}.py"
    path.write_text("import numpy as np\n\n" + src)
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"op_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lo, hi = DOMAIN.get(name, (-2.0, 2.0))
    x = np.linspace(lo, hi, 11)
    y = np.linspace(hi, lo, 11) * 0.9 + 0.05
    got, text = compiled_without_warning(numba_grad(mod.f, wrt=(0, 1)), x, y)
    assert_same(got, srcgrad.grad(mod.f, wrt=(0, 1), specialize=False)(x, y), name)


# ---- reductions as loops keep numpy's semantics -------------------------------------------

@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), (-1, False),
                                           ((0, 1), True)])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "mean"])
def test_reduction_loops(kind, axis, keepdims, tmp_path):
    path = tmp_path / f"red_{kind}.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n"
                    f"    r = np.{kind}(np.exp(x), axis={axis!r}, keepdims={keepdims!r})\n"
                    "    return np.sum(r * r)\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"red_{kind}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.random.default_rng(3).standard_normal((4, 5))
    got, src = compiled_without_warning(numba_grad(mod.f), x)
    assert_same(got, srcgrad.grad(mod.f, specialize=False)(x), kind)
    if kind in ("max", "min"):  # a NaN wins, as in numpy
        x[1, 2] = np.nan
        assert_same(numba_grad(mod.f)(x), srcgrad.grad(mod.f, specialize=False)(x))
        assert np.isnan(numba_grad(mod.f)(x)).any()


def sum_over_axes(x, w):
    return np.sum(np.sum(np.sin(x * w), axis=(0, 2)) ** 2) + \
        np.sum(np.sum(x * x, axis=(-1, 0)) * 0.5)


def sum_of_all_axes(x, w):
    return np.sum(np.sin(np.sum(x, axis=(1, 0)) * w) * w)


def test_reductions_over_several_axes_compile():
    """The adjoint of a sum over a tuple of axes puts them back (`np.expand_dims(g, (0,
    2))`), which numba takes one axis at a time; a number's axes (the sum of all of them)
    by a reshape."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((3, 4, 5)), rng.standard_normal(5)
    got, src = compiled_without_warning(numba_grad(sum_over_axes, wrt=(0, 1)), x, w)
    assert "expand_dims(np.expand_dims(" in src, src
    assert_same(got, srcgrad.grad(sum_over_axes, wrt=(0, 1), specialize=False)(x, w))
    x, w = rng.standard_normal((2, 3)), rng.standard_normal(4)
    got, src = compiled_without_warning(numba_grad(sum_of_all_axes, wrt=(0, 1)), x, w)
    assert "np.reshape(np.asarray(" in src, src
    assert_same(got, srcgrad.grad(sum_of_all_axes, wrt=(0, 1), specialize=False)(x, w))


def square_plus_sum(a, x):
    return a * a + np.sum(x) + np.max(x * a)


def test_a_sum_to_one_number_is_a_number_a_float_adds_to():
    """numba's loop for a reduction to one number gives a number, as numpy's sum does (a
    0-d array would not add in place to a float parameter's value)."""
    x = np.linspace(-1.0, 2.0, 7)
    for a in (1.5, -0.5):
        g = srcgrad.value_and_grad(square_plus_sum, wrt=(0, 1), backend="numba")
        got, src = compiled_without_warning(g, a, x)
        want = srcgrad.value_and_grad(square_plus_sum, wrt=(0, 1), specialize=False)(a, x)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])


# ---- what numba cannot compile ------------------------------------------------------------

def test_a_fallback_warns_with_the_users_line_and_is_right():
    g = numba_grad(U.with_sort)
    x = np.array([0.3, -1.0, 2.0, 0.5])
    with pytest.warns(RuntimeWarning, match=r"numba could not compile the gradient of "
                                            r"'with_sort'.*numba_user\.py:\d+.*numpy code"):
        got = g(x)
    assert_same(got, srcgrad.grad(U.with_sort, specialize=False)(x))
    with warnings.catch_warnings():  # once per signature
        warnings.simplefilter("error", RuntimeWarning)
        assert_same(g(x), got)


def test_a_fallbacks_reason_keeps_the_signature_numba_names_on_its_next_line():
    text = "def f(x):\n    y = x[0]\n    return y\n"
    err = RuntimeError("Failed in nopython mode pipeline (step: nopython frontend)\n"
                       "No implementation of function Function(<built-in function iadd>) "
                       "found for signature:\n \n >>> iadd(float64, array(float64, 0d, C))\n"
                       " \nThere are 18 candidate implementations:\n"
                       'File "gen.py", line 2:\n')
    msg = jit.failure(err, text, "/somewhere/gen.py", "f")
    assert "at `y = x[0]` (line 2 of the generated code)" in msg
    assert "found for signature: iadd(float64, array(float64, 0d, C)). It runs the numpy " \
        "code instead (`.specialized_source(*args)` shows that code)." in msg


def test_without_numba_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(ImportError, match=r'pip install "srcgrad\[jit\]"'):
        srcgrad.grad(U.rosenbrock, backend="numba")
    with pytest.raises(ImportError, match=r'pip install "srcgrad\[jit\]"'):
        srcgrad.hvp(U.rosenbrock, backend="numba")
    with pytest.raises(ImportError, match=r'pip install "srcgrad\[jit\]"'):
        srcgrad.vjp(U.rosenbrock, np.ones(3), backend="numba")


def test_backend_values_are_checked():
    with pytest.raises(ValueError, match="backend='cuda' is not one of"):
        srcgrad.grad(U.rosenbrock, backend="cuda")
    with pytest.raises(ValueError, match="specialize=False"):
        srcgrad.value_and_grad(U.rosenbrock, backend="numba", specialize=False)
    with pytest.raises(ValueError, match="grad of grad"):
        srcgrad.grad(srcgrad.grad(U.rosenbrock), backend="numba")
    with pytest.raises(ValueError, match="backend='cuda' is not one of"):
        srcgrad.hvp(U.rosenbrock, backend="cuda")


def test_numba_caches_beside_srcgrads_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path / "c"))
    x = np.linspace(-1, 1, 7)
    got, src = compiled_without_warning(numba_grad(U.rosenbrock), x)
    assert "@njit(cache=True, " in src
    index = list((tmp_path / "c").rglob("*.nbi"))
    assert index, "numba wrote no cache index beside srcgrad's cache"
    # a second transformation (a new process would do the same) loads both caches
    again = numba_grad(U.rosenbrock)
    assert_same(again(x), got)
    assert again.variant_count == 0  # srcgrad's module came from the disk cache


_CHILD = """
import sys, warnings
import numpy as np
import srcgrad
sys.path.insert(0, {tests!r})
import numba_user as U
warnings.simplefilter("error", RuntimeWarning)
g = srcgrad.grad(U.rosenbrock, backend="numba")
x = np.linspace(-1, 1, 7)
for _ in range(4):
    g(x)
assert "by numba (nopython mode)" in g.specialized_source(x)
print(float(np.sum(g(x))))
"""


def test_a_later_process_loads_numbas_cache(tmp_path):
    """numba's cache loads a function by the name of its module: the generated module
    was not registered under one, and every later process fell back to the numpy code
    (with a warning) instead of loading what the first compiled."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, SRCGRAD_CACHE_DIR=str(tmp_path / "c"),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    code = _CHILD.format(tests=os.path.dirname(os.path.abspath(__file__)))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    assert list((tmp_path / "c").rglob("*.nbi"))


# ---- the corpus ---------------------------------------------------------------------------

# numba compiles each program for a second or more: the default run takes every fourth
# corpus program (tests/conftest.py), `--all-cases` and the deep profile (and CI) every one
_CORPUS = [c for c in C.CASES if not c.xfail]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in _CORPUS])
def test_corpus_through_numba(case):
    """Each corpus program at its first input: the numba backend (compiled, or fallen
    back to numpy with a warning) gives what the numpy backend gives."""
    args = case.inputs[0](np.random.default_rng(sum(map(ord, case.id))))
    want = srcgrad.grad(case.fn, wrt=case.wrt, specialize=False)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a fallback is allowed here
        got = srcgrad.grad(case.fn, wrt=case.wrt, backend="numba")(*args)
    assert_same(got, want, case.id)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in _CORPUS])
def test_corpus_through_numba_large_form(case, monkeypatch):
    """Each corpus program in the large-array form (scratch arrays reused across calls),
    called twice: the second call gives what numpy gives and leaves the first call's
    results as they were (no result lives in a reused array)."""
    monkeypatch.setattr(jit, "LARGE", 1)
    monkeypatch.setattr(jit, "STREAMING", 1)  # every op a loop may take, in loops
    seed = sum(map(ord, case.id))
    first = case.inputs[0](np.random.default_rng(seed))
    second = case.inputs[0](np.random.default_rng(seed + 1))
    want = srcgrad.grad(case.fn, wrt=case.wrt, specialize=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a fallback is allowed here
        g = srcgrad.grad(case.fn, wrt=case.wrt, backend="numba")
        got = g(*first)
        kept = _snapshot(got)
        got2 = g(*second)
    for a, b in zip(_flat(got), kept):
        np.testing.assert_array_equal(a, b, err_msg=f"{case.id}: a later call changed it")
    assert_same(tuple(_flat(got)), tuple(_flat(want(*first))), case.id)
    assert_same(tuple(_flat(got2)), tuple(_flat(want(*second))), case.id)


@pytest.mark.parametrize("fn,args", [
    (U.row_energy, (np.arange(12.0).reshape(4, 3), 5)),
    (U.row_energy, (np.arange(12.0).reshape(4, 3), -6)),
    (U.embedding, (np.arange(12.0).reshape(4, 3), np.array([1, 9]))),
], ids=["past_the_end", "before_the_start", "token_past_the_vocabulary"])
def test_an_index_out_of_range_raises(fn, args):
    """numba reads and writes past an array's end unless told to check: the value was
    garbage and the gradient's scatter wrote past its buffer (a crash)."""
    g = srcgrad.value_and_grad(fn, backend="numba")
    for _ in range(3):
        with pytest.raises(IndexError):
            g(*args)


@pytest.mark.parametrize("fn,args", [
    (U.ratio, (np.array([1.0, 2.0]), np.array([0.0, 1.0]))),
    (U.distance, (np.array([1.0, 2.0]), np.array([1.0, 2.0]))),
], ids=["division_by_zero", "sqrt_at_zero"])
def test_a_division_by_zero_is_inf_or_nan_as_in_numpy(fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = srcgrad.grad(fn, wrt=(0, 1))(*args)
        g = srcgrad.grad(fn, wrt=(0, 1), backend="numba")
        for _ in range(3):
            for a, b in zip(g(*args), want):
                np.testing.assert_array_equal(a, b)
    assert "by numba (nopython mode)" in g.specialized_source(*args)


@pytest.mark.parametrize("fn,k", [
    (U.scaled_counts, np.array([100, 1, -7], np.int8)),
    (U.shifted_counts, np.array([1, 10, 200], np.uint8)),
    (U.shifted_counts, np.array([1, 10, 200], np.uint64)),
], ids=["int8", "uint8", "uint64"])
def test_integer_arithmetic_keeps_numpys_dtypes(fn, k):
    """numpy 2 computes `k * 3` of an int8 k in int8 (it wraps), numba in int64: the
    numpy code runs, with a warning that names the line."""
    x = np.array([1.0, 2.0, 3.0])
    want = srcgrad.value_and_grad(fn)(x, k)
    g = srcgrad.value_and_grad(fn, backend="numba")
    with pytest.warns(RuntimeWarning, match=r"integer arithmetic .*numba_user.py:\d+"):
        g(x, k)
    for _ in range(3):
        value, grad = g(x, k)
        assert value == want[0]
        np.testing.assert_array_equal(grad, want[1])


def test_a_random_draw_comes_from_numpys_generator():
    """np.random.rand in compiled code draws from numba's own generator: np.random.seed
    did not reach it, and the mask (the gradient) was another one."""
    x = np.ones(8)
    np.random.seed(0)
    want = (np.random.rand(8) > 0.5).astype(float)
    g = srcgrad.grad(U.dropout, backend="numba")
    with pytest.warns(RuntimeWarning, match="runs as written"):
        np.random.seed(0)
        g(x)
    for _ in range(3):
        np.random.seed(0)
        np.testing.assert_array_equal(g(x), want)


def test_a_float32_sum_keeps_float32_precision():
    """A loop that adds 60000 float32 numbers one at a time loses about 1e-3 of the sum;
    it adds them in float64."""
    x = np.full(60000, 0.1, np.float32)
    exact = float(np.mean(x.astype(np.float64))) ** 2
    g = srcgrad.value_and_grad(U.squared_mean, backend="numba")
    for _ in range(3):
        value, grad = g(x)
        assert abs(float(value) - exact) <= 1e-6 * exact
        assert grad.dtype == np.float32
        np.testing.assert_allclose(grad, 2 * np.sqrt(exact) / x.size, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_products_are_loops(dtype):
    """A product of a few hundred multiply-adds at most is a loop in the compiled code
    (calling BLAS costs more), summing in the product's dtype, for any layout."""
    rng = np.random.default_rng(3)
    w, V, X = (rng.normal(size=s).astype(dtype) for s in ((4,), (6, 4), (6, 4)))
    want = srcgrad.grad(U.small_products, wrt=(0, 1, 2))(w, V, X)
    g = srcgrad.grad(U.small_products, wrt=(0, 1, 2), backend="numba")
    if dtype == np.float64:
        got, src = compiled_without_warning(g, w, V, X)
        assert src.count("as a loop.\"\"\"") >= 3 and "def _matmul" in src
    else:  # (numba may fall back: float32 cotangents of float64 seeds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = g(w, V, X)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=1e-10 if dtype == np.float64 else 1e-4)


def test_float32_work_keeps_numpys_float32_meaning():
    """numba computed float32 work with float64 constants: `np.maximum(x, 0.1)` at
    x = float32(0.1) was no tie (gradient 1, numpy 0.5), `x // 0.1` another integer. The
    numpy code runs, with a warning."""
    x = np.array([0.1, 3.7, 6.9, 0.0], np.float32)
    want = srcgrad.value_and_grad(U.floored_to_a_tie)(x)
    g = srcgrad.value_and_grad(U.floored_to_a_tie, backend="numba")
    with pytest.warns(RuntimeWarning, match="float32 arithmetic"):
        g(x)
    for _ in range(3):
        value, grad = g(x)
        assert value == want[0] and grad.dtype == np.float32
        np.testing.assert_array_equal(grad, want[1])


def test_values_and_aux_come_back_as_numpy_gives_them():
    """The value of value_and_grad is a numpy scalar (it was a 0-d array); a dict in the
    aux runs the numpy code (numba raised SystemError boxing it)."""
    x = np.linspace(-1.0, 1.0, 5)
    g = srcgrad.value_and_grad(U.rosenbrock, backend="numba")
    for _ in range(3):
        value, _ = compiled_without_warning(g, x)[0]
        assert type(value) is np.float64 == type(U.rosenbrock(x))
    # the large form too, where work on numbers alone (here with a float argument) stays
    # numpy's, not a loop over no axes making a 0-d array
    # the function compiled whole, a result of unknown shape beside it (a loop's)
    g = srcgrad.value_and_grad(U.heat_steps, backend="numba")
    for _ in range(3):
        value, _ = compiled_without_warning(g, x, 0.1)[0]
        assert type(value) is np.float64 == type(U.heat_steps(x, 0.1))
    # float(x), math.exp(x) of float32 values: float64, as Python computes them
    x32 = x.astype(np.float32)
    g = srcgrad.value_and_grad(U.exp_of_an_element, has_aux=True, backend="numba")
    for _ in range(3):
        (value, s), _ = compiled_without_warning(g, x32)[0]
        assert value == s == U.exp_of_an_element(x32)[1]
    big = np.linspace(-1.0, 1.0, jit.LARGE + 1)
    g = srcgrad.value_and_grad(U.penalized, backend="numba")
    for _ in range(3):
        value, _ = compiled_without_warning(g, big)[0]
        assert type(value) is np.float64 == type(U.penalized(big))
    h = srcgrad.grad(U.loss_and_stats, has_aux=True, backend="numba")
    with pytest.warns(RuntimeWarning, match="a dict in what the function returns"):
        h(x)
    for _ in range(3):
        dx, aux = h(x)
        np.testing.assert_array_equal(dx, 2 * x)
        assert aux == {"m": 0.0, "n": 5}


def _stacked(axis, rows):
    def loss(M):
        parts = []
        for i in range(rows):  # (a list of arrays: numba's own np.stack takes a tuple)
            parts.append(M[i] * (i + 1.0))
        return np.sum(np.sin(np.stack(parts, axis=axis)) ** 2)
    return loss


@pytest.mark.parametrize("axis", [0, 1, -1, 2, -3])
@pytest.mark.parametrize("ndim", [1, 2])
def test_stack_of_a_list_along_any_axis(axis, ndim):
    # along an axis other than the first, the compiled code raised a ValueError
    if axis in (2, -3) and ndim == 1:
        pytest.skip("out of range for items of one dimension")
    M = np.linspace(-1.0, 1.0, 24).reshape((3, 8) if ndim == 1 else (3, 4, 2))
    fn = _stacked(axis, 3)
    expected = srcgrad.grad(fn)(M)
    g = numba_grad(fn)
    for _ in range(3):
        np.testing.assert_allclose(compiled_without_warning(g, M)[0], expected, rtol=1e-10,
                                   atol=1e-12)


# ---- Python numbers: Python's meaning, not numba's --------------------------------------

PYTHON_NUMBERS = [  # (function, the other arguments): numba would compute another value
    (U.squared_count, (2 ** 40,)),
    (U.halved_by_index, (2,)),
    (PB.power_of_count, (5,)),
    (PB.halved_by_distance, (4,)),
    (PB.clamped, (0, 1.0, 0.5)),  # (an int among them: Python's max may return it)
]


@pytest.mark.parametrize("fn,rest", PYTHON_NUMBERS,
                         ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(PYTHON_NUMBERS)])
def test_python_number_arithmetic_numba_computes_otherwise_runs_as_numpy(fn, rest):
    """Arithmetic on Python ints that numba's int64 would wrap or truncate, and Python's
    max() and min() of an int (Python's result may be the int): the numpy code runs, with
    a warning that names the line; the value is Python's."""
    x = np.array([0.5, -1.25, 2.0, 0.75])
    g = srcgrad.value_and_grad(fn, wrt=0, backend="numba")
    with pytest.warns(RuntimeWarning, match=r"does not compile .* with numba: .*Python"):
        value, _ = g(x, *rest)
    np.testing.assert_array_equal(value, fn(x, *rest))


@pytest.mark.parametrize("fn,args", [(U.by_count, (np.ones(3), 2 ** 40)),
                                     (U.weighted_rows, (np.linspace(-1, 1, 12).reshape(3, 4),))],
                         ids=["floor-division-by-a-constant", "loop-index"])
def test_python_int_arithmetic_numba_computes_alike_compiles(fn, args):
    got, _ = compiled_without_warning(srcgrad.value_and_grad(fn, backend="numba"), *args)
    assert_same(got, srcgrad.value_and_grad(fn, specialize=False)(*args), fn.__name__)


NAN, INF = float("nan"), float("inf")
FLOAT_MAX_MIN = [  # Python's max() and min() of floats, where numba's own would differ
    (PB.floored_setting, (NAN,)), (PB.floored_setting, (-0.0,)), (PB.floored_setting, (3.5,)),
    (PB.clamped, (0.0, 1.0, NAN)), (PB.clamped, (NAN, 1.0, 0.5)), (PB.clamped, (0.0, NAN, 2.0)),
    (PB.clamped, (-0.0, 0.0, -1.0)), (PB.clamped, (0.0, -0.0, 1.0)), (PB.clamped, (-INF, INF, 7.0)),
    (PB.widest, (NAN, 1.0, 2.0)), (PB.widest, (1.0, NAN, 0.5)), (PB.widest, (0.5, 2.0, NAN)),
    (PB.widest, (-0.0, 0.0, -0.0)),
]


@pytest.mark.parametrize("fn,rest", FLOAT_MAX_MIN,
                         ids=[f"{f.__name__}-{r}" for f, r in FLOAT_MAX_MIN])
def test_python_max_and_min_of_floats_compile_with_pythons_values(fn, rest):
    """Python's max() and min() of floats compile (written `b if b > a else a`, Python's
    rule): the value, nan and the sign of zero included, is Python's, and the gradient the
    numpy backend's (numba's own max(1.0, nan) is nan)."""
    x = np.array([0.5, -1.25, 2.0, 0.75])
    g = srcgrad.value_and_grad(fn, wrt=0, backend="numba")
    for _ in range(3):
        (value, grad), src = compiled_without_warning(g, x, *rest)
        want = fn(x, *rest)
        np.testing.assert_array_equal(value, want)
        assert np.signbit(value) == np.signbit(want)
        assert_same(grad, srcgrad.grad(fn, specialize=False)(x, *rest), fn.__name__)
    assert " if " in src and "builtins_max" not in src and "builtins_min" not in src, src


def test_a_loops_exp_tanh_and_logs_are_srcgrads_vectorized_ones():
    """A fused loop over float64 arrays calls srcgrad.jit_math's exp, tanh, log and log1p
    (numba compiles np.exp and the like of a number to a C library call per element, which
    keeps the loop from being vectorized), in a loop over 512 elements or more (1000: the
    large logistic regression's): the value and gradient agree with the numpy backend's.
    Where a large variant leaves them to numpy (arrays that fit in cache), numpy's own run;
    in a small loop, numba's."""
    want = srcgrad.value_and_grad(U.gated_softplus, wrt=(0, 1), specialize=False)
    n = jit.STREAMING + 3
    x, y = np.linspace(-6.0, 6.0, n), np.cos(np.linspace(0.0, 9.0, n))
    for k in (n, 40, 1000, jit.LARGE):
        xs, ys = x[:k].copy(), y[:k].copy()
        vg = srcgrad.value_and_grad(U.gated_softplus, wrt=(0, 1), backend="numba")
        got, src = compiled_without_warning(vg, xs, ys)
        loops = src.split("@njit", 1)[1]
        if k == jit.LARGE:  # (numpy's exp and tanh on arrays in cache)
            assert "vector_" not in src and "np.tanh(x)" in src
        elif k == 40:  # (numba's own: a small loop does not earn back compiling them)
            assert "vector_" not in src and "= np.tanh(x[i])" in loops
        else:
            assert "from srcgrad.jit_math import vector_exp, vector_log1p, vector_tanh" in src
            assert "vector_tanh(x[i])" in loops and "= np.exp(" not in loops
        assert_same(got, want(xs, ys))


def test_a_loops_sines_and_cosines_are_srcgrads_vectorized_ones_with_the_c_librarys_past_their_range():
    """A large variant's loop over float64 arrays calls srcgrad.jit_math's sin and cos
    (numpy's, like numba's, call the C library's for each element: five times the time),
    from 2048 elements on, even where the arrays fit in cache. Their range ends at 2**20: a
    call that brings an argument past it (or one that makes one) runs the same loop again
    with the C library's, compiled then; values and gradients agree with the numpy
    backend's either way."""
    from srcgrad.jit_math import TRIG_FAR

    assert TRIG_FAR == 2.0 ** 20  # (what the generated docstrings say)
    want = srcgrad.value_and_grad(U.WAVES.loss, wrt=(0, 1), specialize=False)
    for n in (jit.VECTOR_CALLS, jit.STREAMING + 5):
        t = np.linspace(-40.0, 40.0, n)
        vg = srcgrad.value_and_grad(U.WAVES.loss, wrt=(0, 1), backend="numba")
        got, src = compiled_without_warning(vg, t, 1.5)
        loops = src.split("@njit", 1)[1]
        assert "vector_sin(" in loops and "vector_cos(" in loops and "= np.sin(" in loops
        assert "trig_far(" in loops and "_exact" in src
        _same_flat(got, want(t, 1.5))
        # past the range: an argument itself, and one the loop makes (freq * t)
        for far in (t + 3e6, t * 3e5):
            got, _ = compiled_without_warning(vg, far, 1.5)
            assert np.all(np.isfinite(got[1][0]))
            _same_flat(got, want(far, 1.5))
        # infinities and nan: nan, as numpy gives them, without the C library's loop
        bad = t.copy()
        bad[[1, 7]] = [np.inf, np.nan]
        with np.errstate(invalid="ignore"):
            got, _ = compiled_without_warning(vg, bad, 1.5), None
            ref = want(bad, 1.5)
        got = got[0]
        assert np.isnan(got[0]) and np.isnan(ref[0])
        np.testing.assert_array_equal(np.isnan(got[1][0]), np.isnan(ref[1][0]))
    # below 2048 elements: numba's own sin (a small loop does not earn back compiling them)
    small = np.linspace(-4.0, 4.0, 40)
    got, src = compiled_without_warning(
        srcgrad.value_and_grad(U.WAVES.loss, wrt=(0, 1), backend="numba"), small, 1.5)
    assert "vector_sin" not in src
    _same_flat(got, want(small, 1.5))


def _same_flat(got, want):
    """assert_same of (value, (gradients...)) results."""
    assert_same((got[0],) + tuple(got[1]), (want[0],) + tuple(want[1]))


def test_value_and_grads_forward_and_backward_are_one_loop():
    """value_and_grad of a sum of elementwise work over large arrays: the forward pass's and
    the backward pass's loops are one, which writes the summed values and the gradients
    (the sum, which ended the first loop, moves after the second: fusion.gather); they
    were two, the first writing every value the second reads, four times the time of
    grad's one loop."""
    n = jit.STREAMING + 3
    x, y = np.linspace(-3.0, 3.0, n), np.cos(np.linspace(0.0, 9.0, n))
    want = srcgrad.value_and_grad(U.elementwise, wrt=(0, 1), specialize=False)(x, y)
    vg = srcgrad.value_and_grad(U.elementwise, wrt=(0, 1), backend="numba")
    got, src = compiled_without_warning(vg, x, y)
    assert "_fused_1(" in src and "_fused_2" not in src
    _same_flat(got, want)


@pytest.mark.parametrize("fn,arg,warns", [
    (U.sine_of_flag, True, True),            # np.sin(True): numpy's float16, numba's float64
    (U.truncated_scale, 1e19, True),         # int(1e19): numba's int64 wraps
    (U.truncated_scale, 3.7, True),
    (U.scaled_sines, 2 ** 63, False),        # numba cannot take the int: the numpy code runs
    (U.scaled_sines, 3, False),
], ids=["sin-of-a-bool", "int-of-a-large-float", "int-of-a-float", "int-past-int64", "int"])
def test_python_numbers_numba_would_compute_otherwise_run_the_numpy_code(fn, arg, warns):
    """Python numbers where numba's meaning is not numpy's or Python's: a numpy function of a
    Python bool (numpy computes it in float16), int() of a float (numba's int64 wraps past
    2**63, and makes a number of nan), an int past int64 (numba cannot take it: it raised
    OverflowError from the call). Each runs the numpy code (with a warning that says why,
    where numba is refused), and gives numpy's answer; they were silently different, or
    raised."""
    x = np.linspace(-1.0, 1.0, 5)
    want = srcgrad.grad(fn, specialize=False)(x, arg)
    g = srcgrad.grad(fn, backend="numba")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = g(x, arg)
    np.testing.assert_array_equal(got, want)
    assert any("numpy code instead" in str(w.message) for w in seen) == warns


@pytest.mark.parametrize("fn,shape", [(U.cubic_first, (3,)), (U.cubic_first, (5000,)),
                                      (U.corner_terms, (3, 3)), (U.corner_terms, (3000, 3))])
def test_a_number_added_into_one_element_compiles(fn, shape):
    """The cotangent of one element (`x[0] ** 3`) is a number; a fused loop makes it as a
    0-d array, `x[0]` reads it as a number, and numba adds neither into an element of the
    other's kind (`dx[0] += dout` failed to compile: the numpy code ran, with a warning).
    It is added as its number."""
    x = np.linspace(0.1, 1.0, int(np.prod(shape))).reshape(shape)
    g = srcgrad.grad(fn, backend="numba")
    got, src = compiled_without_warning(g, x)
    if "_compiled(" in src:  # (the small form: all of it compiled; the large form adds
        assert "np.asarray(" in src  # the elements in Python, as numpy does)
    assert_same(got, srcgrad.grad(fn, specialize=False)(x))


@pytest.mark.parametrize("n", [7, jit.STREAMING + 5])
def test_masks_combined_with_and_or_xor_and_not_compile(n):
    """&, |, ^ and ~ of bool arrays: numba computes numpy's bools (they were refused as
    integer arithmetic, and the numpy code ran with a warning)."""
    x, y = np.linspace(-1.0, 1.0, n), np.cos(np.linspace(0.0, 9.0, n)) + 0.5
    g = srcgrad.grad(U.gated, wrt=(0, 1), backend="numba")
    got, _ = compiled_without_warning(g, x, y)
    assert_same(got, srcgrad.grad(U.gated, wrt=(0, 1), specialize=False)(x, y))


@pytest.mark.parametrize("n", [7, jit.STREAMING + 5])
def test_astype_to_a_dtype_by_name_compiles(n):
    """`.astype(float)`, `np.asarray(k, dtype=np.float64)`: the generated code named the
    dtype ('float64'), which numba's astype and asarray do not take (the numpy code ran,
    with a warning about 'UnicodeType')."""
    x, k = np.linspace(-1.0, 1.0, n), np.arange(n) % 7
    for fn, args in ((U.relu_mask, (x,)), (U.counts_as_floats, (x, k))):
        g = srcgrad.grad(fn, backend="numba")
        got, _ = compiled_without_warning(g, *args)
        assert_same(got, srcgrad.grad(fn, specialize=False)(*args))
