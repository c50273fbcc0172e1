"""Compiled gradients called with dask arrays (srcgrad[dask]; skipped without dask).

The same generated source runs with `np` bound to numpy's API on dask
(runtime.dask_backend). Checked here:
- every primitive on dask arrays: the numpy result, lazily (a scheduler that refuses to
  run stands in while the op builds its graph), or an error; never a silent compute;
- the control-flow corpus and the golden-file functions, with their float arrays
  chunked three ways: gradients equal numpy's to 1e-10;
- the typical use (small numpy parameters, large chunked data): the call builds a graph
  and computes nothing; `compute=True` returns numpy arrays; value_and_grad drives
  scipy.optimize; a numpy function dask lacks is refused with its name;
- a LocalCluster of two worker processes computes the same gradient.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import srcgrad  # noqa: E402
from runtime import dask_backend  # noqa: E402

from paths import TESTS  # noqa: E402
for _p in (TESTS, TESTS + "/ops", TESTS + "/compiler"):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import golden_functions as gf  # noqa: E402
import test_ops as T  # noqa: E402
from test_corpus import CASES as CORPUS  # noqa: E402

RTOL, ATOL = 1e-10, 1e-12

#: chunkings of a float array argument: halves, one chunk, and chunks of one row
CHUNKINGS = {"halves": lambda s: tuple(max(1, (n + 1) // 2) for n in s),
             "one": lambda s: s,
             "rows": lambda s: (1,) + tuple(s[1:])}


class Computed(AssertionError):
    pass


def _refuse(*args, **kwargs):
    raise Computed("a dask graph was computed")


def lazily():
    """A context in which computing any dask graph raises `Computed`, and dask's
    fallback to numpy (its FutureWarning) is an error."""
    cfg = dask.config.set(scheduler=_refuse)

    class _Ctx:
        def __enter__(self):
            self.w = warnings.catch_warnings()
            self.w.__enter__()
            warnings.simplefilter("error", FutureWarning)
            cfg.__enter__()

        def __exit__(self, *exc):
            cfg.__exit__(*exc)
            self.w.__exit__(*exc)
    return _Ctx()


def to_dask(a, chunking="halves"):
    """Float arrays (the data) as dask arrays; ints, bools and indices stay numpy."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.ndim and a.size:
        return da.from_array(a, chunks=CHUNKINGS[chunking](a.shape))
    return a


def assert_same(got, want):
    got, want = dask.compute(got)[0], want
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=ATOL)


# ---- every primitive ---------------------------------------------------------------------

#: primitives whose dask.array counterpart is missing or limited: each spec either gives
#: numpy's value or raises (never computes silently); this set is what is known, so a
#: primitive newly failing on dask fails the test below until it is listed here
LIMITED = {
    # numpy functions dask.array does not have: NoDaskEquivalent names them
    "argsort", "cross", "det", "eigh_vectors", "eigvalsh", "inner", "kron", "logabsdet",
    "pinv", "slogdet_sign",
    # dask has them for some chunkings, shapes or arguments only (its own error otherwise)
    "cholesky", "inv", "solve", "qr_q", "qr_r", "svd_u", "svd_vh", "svdvals", "dot",
    "getitem", "linspace", "nan_to_num", "repeat", "reshape", "tril", "triu",
    # writes with several integer-array indices, or scatter-adds (numpy.add.at)
    "diag_grad", "diagonal_grad", "einsum_grad", "trace_transpose", "setitem",
    "scatter_add", "repeat_grad",
    # a copy between numpy and cupy
    "to_device",
}
#: primitives that compute a small value on purpose: whether weights sum to zero
COMPUTES = {"nonzero_divisor"}


@pytest.mark.parametrize("s", T.SPECS, ids=lambda s: s.id)
def test_primitive_on_dask_arrays(s):
    rng = np.random.default_rng(0)
    args = [a.make(rng) if isinstance(a, T.A) else a for a in s.args]
    try:
        want = T._call(s, args)
    except Exception:
        pytest.skip("the spec raises on numpy too")
    dargs = [to_dask(a) for a in args]
    if not any(dask_backend.is_dask(a) for a in dargs):
        pytest.skip("no float array argument")
    if s.prim in COMPUTES:
        assert_same(T._call(s, dargs), want)
        return
    try:
        with lazily():
            got = T._call(s, dargs)
    except Computed:
        raise AssertionError(f"{s.prim} computed its dask argument") from None
    except Exception as e:  # noqa: BLE001  (the documented limits)
        assert s.prim in LIMITED, f"{s.prim} fails on dask: {type(e).__name__}: {e}"
        return
    if isinstance(want, (list, tuple)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(dask.compute(g)[0], w, rtol=RTOL, atol=ATOL)
    else:  # (a boolean mask leaves the length unknown until computed)
        got = dask.compute(got)[0]
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)


def test_functions_dask_lacks_are_refused_by_name():
    x = da.ones((4, 3), chunks=2)
    with pytest.raises(dask_backend.NoDaskEquivalent, match="numpy.cross"):
        dask_backend.NUMPY_ON_DASK.cross(x, x)
    with pytest.raises(dask_backend.NoDaskEquivalent, match="numpy.linalg.det"):
        dask_backend.NUMPY_ON_DASK.linalg.det(x[:3])
    # numpy arguments still get numpy's function
    assert dask_backend.NUMPY_ON_DASK.cross(np.eye(3), np.eye(3)).shape == (3, 3)


# ---- whole programs ------------------------------------------------------------------------

def _corpus_inputs():
    for case in CORPUS:
        if case.xfail is None:
            for k, make in enumerate(case.inputs):
                yield pytest.param(case, make, id=f"{case.id}-{k}")


@pytest.mark.sampled  # (every fourth input by default, tests/conftest.py; all with --all-cases)
@pytest.mark.parametrize("case,make", list(_corpus_inputs()))
def test_corpus_gradient_on_dask_equals_numpy(case, make):
    g = srcgrad.grad(case.fn, wrt=case.wrt)
    args = make(np.random.default_rng(0))
    want = g(*args)
    for chunking in CHUNKINGS:
        assert_same(g(*[to_dask(a, chunking) for a in args]), want)


def _golden_cases():
    from test_golden import CASES
    return CASES


#: golden functions with branches or loops on data values: dask computes the condition
DATA_DEPENDENT = {"branch", "while_break"}
#: golden functions that index a dask value with integer arrays: dask cannot index with
#: several integer arrays at once, and the gradient of such an index (numpy.add.at) has no
#: dask equivalent; both refuse with an error
REFUSED = {"indexing", "softmax_cross_entropy"}


@pytest.mark.parametrize("name", sorted(_golden_cases()))
def test_golden_function_on_dask_is_lazy_and_equal(name):
    fn, wrt, make = _golden_cases()[name]
    g = srcgrad.grad(fn, wrt=wrt)
    args = make()
    want = g(*args)
    for chunking in CHUNKINGS:
        dargs = [to_dask(a, chunking) for a in args]
        if name in REFUSED:
            with pytest.raises((dask_backend.NoDaskEquivalent, NotImplementedError)):
                g(*dargs)
            continue
        if name in DATA_DEPENDENT:
            got = g(*dargs)
        else:
            with lazily():
                got = g(*dargs)
        assert_same(got, want)


# ---- the typical use -----------------------------------------------------------------------

def logistic_loss(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 1e-3 * np.sum(w ** 2)


def least_squares(w, X, y):
    r = X @ w - y
    return 0.5 * np.mean(r ** 2)


def mlp_loss(params, X, Y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return 0.5 * np.mean(np.sum((out - Y) ** 2, axis=1))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 7))
    w_true = rng.normal(size=7)
    y = (X @ w_true + 0.3 * rng.normal(size=600) > 0).astype(float)
    Y = rng.normal(size=(600, 2))
    return X, y, Y, rng


def test_gradient_call_builds_a_graph_and_computes_nothing(data):
    X, y, _, rng = data
    w, b = rng.normal(size=7), 0.2
    g = srcgrad.grad(logistic_loss, wrt=("w", "b"))
    want = g(w, b, X, y)
    Xd, yd = da.from_array(X, chunks=(100, 7)), da.from_array(y, chunks=100)
    with lazily():
        got = g(w, b, Xd, yd)
    assert all(dask_backend.is_dask(v) for v in got)
    assert_same(got, want)


def test_graph_sends_no_data_sized_numpy_array():
    """The lazy gradient's graph is small: no numpy array the size of the data (a mean's
    cotangent broadcast to the data's shape, say) is built in this process and shipped."""
    import pickle

    rs = da.random.RandomState(0)
    X = rs.normal(size=(200_000, 5), chunks=(50_000, 5))
    y = (rs.random(200_000, chunks=50_000) > 0.5).astype(float)
    value, grads = srcgrad.value_and_grad(logistic_loss, wrt=("w", "b"))(np.zeros(5), 0.0, X, y)
    for result in (value, *grads):
        size = len(pickle.dumps(dict(result.__dask_graph__())))
        assert size < X.nbytes / 100, f"a graph of {size} bytes for {X.nbytes} bytes of data"


def test_compute_option_returns_numpy_arrays(data):
    X, y, Y, rng = data
    Xd, yd, Yd = (da.from_array(a, chunks=(150,) + a.shape[1:]) for a in (X, y, Y))
    w = rng.normal(size=7)
    vg = srcgrad.value_and_grad(least_squares, compute=True)
    value, grad = vg(w, Xd, yd)
    want_value, want_grad = srcgrad.value_and_grad(least_squares)(w, X, y)
    assert isinstance(grad, np.ndarray) and not dask_backend.is_dask(value)
    np.testing.assert_allclose(value, want_value, rtol=RTOL)
    np.testing.assert_allclose(grad, want_grad, rtol=RTOL, atol=ATOL)
    # a dict of parameters (a pytree) too
    params = {"W1": rng.normal(size=(7, 5)) / 3, "b1": np.zeros(5),
              "W2": rng.normal(size=(5, 2)) / 3, "b2": np.zeros(2)}
    gm = srcgrad.grad(mlp_loss, compute=True)
    got = gm(params, Xd, Yd)
    want = srcgrad.grad(mlp_loss)(params, X, Y)
    assert set(got) == set(want)
    for k in want:
        assert isinstance(got[k], np.ndarray)
        np.testing.assert_allclose(got[k], want[k], rtol=RTOL, atol=ATOL)


def test_value_and_grad_drives_scipy_minimize(data):
    scipy_optimize = pytest.importorskip("scipy.optimize")
    X, y, _, _ = data
    Xd, yd = da.from_array(X, chunks=(200, 7)), da.from_array(y, chunks=200)
    vg = srcgrad.value_and_grad(least_squares, compute=True)
    fit = scipy_optimize.minimize(vg, np.zeros(7), args=(Xd, yd), jac=True, method="L-BFGS-B")
    exact = np.linalg.lstsq(X, y, rcond=None)[0]
    assert fit.success
    np.testing.assert_allclose(fit.x, exact, rtol=1e-4, atol=1e-5)


def test_an_op_dask_lacks_is_refused_with_its_name():
    def f(w, X):
        return np.sum(np.cross(X, w))

    g = srcgrad.grad(f)
    X = da.ones((6, 3), chunks=(3, 3))
    with pytest.raises(dask_backend.NoDaskEquivalent, match="numpy.cross"):
        g(np.ones(3), X)


def test_gradient_with_respect_to_a_dask_array():
    """The data itself as `wrt`: the gradient is a lazy array chunked like the data."""
    def f(X, w):
        return np.sum(np.tanh(X @ w) ** 2) + np.sum(X[:, 0] * X[:, 1])

    rng = np.random.default_rng(2)
    X, w = rng.normal(size=(40, 3)), rng.normal(size=3)
    g = srcgrad.grad(f)
    want = g(X, w)
    Xd = da.from_array(X, chunks=(10, 3))
    with lazily():
        got = g(Xd, w)
    assert dask_backend.is_dask(got) and got.chunks[0] == (10, 10, 10, 10)
    assert_same(got, want)


def test_preallocated_array_filled_with_dask_values_stays_lazy():
    """`out = np.zeros(...); out[i] = ...` with dask data: the array is made lazy, so the
    write does not compute the data."""
    def f(w, X):
        out = np.zeros((X.shape[0], 2))
        out[:, 0] = X @ w
        out[:, 1] = np.tanh(X @ w)
        return np.sum(out ** 2)

    rng = np.random.default_rng(3)
    X, w = rng.normal(size=(30, 4)), rng.normal(size=4)
    g = srcgrad.grad(f)
    want = g(w, X)
    with lazily():
        got = g(w, da.from_array(X, chunks=(10, 4)))
    assert_same(got, want)


# ---- a cluster -----------------------------------------------------------------------------

def test_gradient_on_a_local_cluster_of_two_processes(data):
    distributed = pytest.importorskip("dask.distributed")
    X, y, _, rng = data
    w, b = rng.normal(size=7), -0.1
    want = srcgrad.grad(logistic_loss, wrt=("w", "b"))(w, b, X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="400MiB") as cluster, \
            distributed.Client(cluster) as client:
        Xd, yd = da.from_array(X, chunks=(100, 7)), da.from_array(y, chunks=100)
        g = srcgrad.grad(logistic_loss, wrt=("w", "b"), compute=True)
        got = g(w, b, Xd, yd)
        assert len(client.scheduler_info()["workers"]) == 2
    for a, b_ in zip(got, want):
        np.testing.assert_allclose(a, b_, rtol=RTOL, atol=ATOL)


def test_arrays_made_at_the_data_size_are_chunked_like_the_data(data):
    """A mean's cotangent broadcast to the data's shape (and zeros preallocated at it) is
    chunked as the data is, not one chunk of the whole data in one worker."""
    from dask.callbacks import Callback

    X, y, _, rng = data
    Xd, yd = da.from_array(X, chunks=(100, 7)), da.from_array(y, chunks=100)
    ns = dask_backend.NUMPY_ON_DASK
    token = dask_backend.chunked_like([Xd, yd])
    try:
        assert ns.broadcast_to(0.5, (600,)).chunks == yd.chunks
        assert ns.zeros((600, 3)).chunks == ((100,) * 6, (3,))
    finally:
        dask_backend.reset_chunks(token)
    largest = []

    class Sizes(Callback):
        def _posttask(self, key, result, dsk, state, worker_id):
            if isinstance(result, np.ndarray):
                largest.append(result.shape[0] if result.ndim else 1)

    g = srcgrad.grad(logistic_loss, wrt=("w", "b"))
    got = g(rng.normal(size=7), 0.1, Xd, yd)
    with Sizes():
        got = dask.compute(got, scheduler="sync")[0]
    assert max(largest) <= 100, "a task made an array longer than the data's chunks"
