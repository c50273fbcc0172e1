"""numpy spellings (runtime.ops.numpy_api) of the functions that compose primitives.

For each case, the adapter called on plain arrays gives numpy's own result (values, shape,
dtype, and the result type: a tuple, a list, numpy's named tuples); called on Tensors, its
gradient (the tape) matches float64 central finite differences of numpy's function. The
compiled side of the same spellings is checked in tests/test_compile_ops.py. Argument
combinations the op set does not implement raise a clear error.
"""
from __future__ import annotations

import numpy as np
import pytest

from runtime.ops.numpy_api import NUMPY, UnsupportedArgument
from runtime.tensor import Tensor

from compiler_helpers import run_python

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")

rng = np.random.default_rng(7)
la = np.linalg


def distinct(*shape):
    """Values far apart and away from 0 (sort, norms with kinks, select's bounds)."""
    n = int(np.prod(shape))
    v = ((np.arange(n) + 1.0) * 0.29 + rng.uniform(0, 0.01, n)) * rng.choice([-1.0, 1.0], n)
    return rng.permutation(v).reshape(shape)


X = distinct(3, 4)
V = distinct(4)
C = distinct(2, 3, 4) / 3
M = rng.uniform(-1, 1, (4, 4)) + 3 * np.eye(4)
B = rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)
_m = rng.uniform(-1, 1, (4, 4))
SPD = _m @ _m.T + 4 * np.eye(4)
SYM = _m + _m.T + np.diag([0.0, 2.0, 4.0, 6.0])
NANS = np.where(X > 1.0, np.nan, X)

# (function, args, kwargs, check the gradient)
CASES = [
    (np.deg2rad, (X,), {}, True), (np.rad2deg, (X,), {}, True), (np.radians, (X,), {}, True),
    (np.degrees, (X,), {}, True), (np.real, (X,), {}, True), (np.imag, (X,), {}, False),
    (np.conj, (X,), {}, True), (np.around, (np.round(X, 1) + 0.02,), dict(decimals=1), True),
    (np.nan_to_num, (NANS,), dict(nan=2.0), True), (np.copy, (X,), {}, True),
    (np.cumsum, (X,), {}, True), (np.cumsum, (C,), dict(axis=1), True),
    (np.cumprod, (X,), dict(axis=-1), True),
    (np.diff, (X,), {}, True), (np.diff, (X,), dict(n=2, axis=0), True),
    (np.diff, (V,), dict(prepend=0.5, append=[1.0, 2.0]), True),
    (np.diag, (V,), dict(k=1), True), (np.diag, (X,), dict(k=-1), True),
    (np.diagonal, (C,), dict(offset=1, axis1=2, axis2=0), True),
    (np.tril, (X,), dict(k=1), True), (np.triu, (V,), {}, True),
    (np.trace, (X,), dict(offset=1), True),
    (np.repeat, (X, 2), {}, True), (np.repeat, (X, [1, 0, 2]), dict(axis=0), True),
    (np.tile, (V, (2, 1, 2)), {}, True),
    (np.pad, (X, 1), {}, True), (np.pad, (X, ((1, 0), (2, 3))), dict(constant_values=1.5), True),
    (np.pad, (X, 2), dict(mode="reflect"), True), (np.pad, (X, (1, 3)), dict(mode="edge"), True),
    (np.pad, (X, 5), dict(mode="wrap"), True), (np.pad, (X, 2), dict(mode="symmetric"), True),
    (np.roll, (X, 2), {}, True), (np.roll, (X, (1, -1)), dict(axis=(0, 1)), True),
    (np.rollaxis, (C, 2), {}, True), (np.rollaxis, (C, -1, 1), {}, True),
    (np.moveaxis, (C, 0, -1), {}, True),
    (np.rot90, (C,), {}, True), (np.rot90, (C, 2, (1, 2)), {}, True), (np.rot90, (C, 3), {}, True),
    (np.rot90, (C, -1, (2, 0)), {}, True), (np.fliplr, (X,), {}, True),
    (np.flipud, (X,), {}, True),
    (np.take, (X, [0, 2, -1]), {}, True), (np.take, (X, [[0, 2], [1, 1]]), dict(axis=1), True),
    (np.take_along_axis, (X, np.argsort(X, axis=1)), dict(axis=1), True),
    (np.take_along_axis, (X, np.argsort(X, axis=0)[:1]), dict(axis=0), True),
    (np.sort, (X,), {}, True), (np.sort, (X,), dict(axis=0), True),
    (np.sort, (X,), dict(axis=None), True), (np.sort, (X,), dict(stable=True), True),
    (np.argsort, (X,), {}, False), (np.argmax, (X,), dict(axis=1), False),
    (np.argmin, (X,), {}, False),
    (np.select, ([X > 0, X < -1], [X, X * 2], 0.5), {}, True),
    (np.atleast_1d, (V,), {}, True), (np.atleast_2d, (V,), {}, True),
    (np.atleast_3d, (V,), {}, True), (np.atleast_3d, (X, V), {}, True),
    (np.vstack, ([V, X],), {}, True), (np.dstack, ([X, X],), {}, True),
    (np.column_stack, ([V, X.T],), {}, True), (np.hstack, ([X, X],), {}, True),
    (np.hstack, ([V, V[:2], 1.5],), {}, True), (np.hstack, ([C, C[:, :1]],), {}, True),
    (np.choose, (np.array([[0, 1, 2, 1], [2, 0, 1, 1], [1, 1, 0, 2]]), [X, V, 2.0]), {}, True),
    (np.choose, (np.array([0, 3, -1, 1]), [V, X]), dict(mode="wrap"), True),
    (np.choose, (np.array([[0], [5], [-2]]), [V, X]), dict(mode="clip"), True),
    (np.append, (X, V), {}, True), (np.append, (X, X), dict(axis=0), True),
    (np.split, (X, 2), dict(axis=1), True), (np.array_split, (X, 3), dict(axis=1), True),
    (np.split, (V, [1, 3]), {}, True), (np.hsplit, (X, 2), {}, True),
    (np.vsplit, (C.reshape(6, 4), 3), {}, True), (np.dsplit, (C, [1]), {}, True),
    (np.average, (X,), dict(axis=0), True), (np.average, (X,), dict(weights=V, axis=1), True),
    (np.average, (X,), dict(weights=np.abs(X), returned=True), True),
    (np.average, (X,), dict(weights=V, axis=1, returned=True, keepdims=True), True),
    (np.nansum, (NANS,), dict(axis=1), True), (np.nanmean, (NANS,), {}, True),
    (np.nanmean, (NANS,), dict(axis=0, keepdims=True), True),
    (np.linspace, (0.0, 1.0, 7), {}, False),
    (np.linspace, (V, 2.0, 5), dict(axis=1, endpoint=False), False),
    (np.meshgrid, (V, V[:3], V[:2]), {}, True),
    (np.meshgrid, (V, V[:3]), dict(indexing="ij", sparse=True), True),
    (np.full_like, (np.arange(3), 2.5), {}, False), (np.full_like, (X, 2.5), {}, False),
    (np.kron, (X, V), {}, True), (np.kron, (C, X), {}, True),
    (np.cross, (X[:, :3], V[:3]), {}, True), (np.cross, (X[:3, :2], X[:, 2:]), dict(axis=0), True),
    (np.einsum, ("ij,jk->ik", X, X.T), {}, True), (np.einsum, ("ij,ij", X, X), {}, True),
    (np.einsum, ("...ij,...jk", C, X.T), {}, True), (np.einsum, ("ii->i", M), {}, True),
    (np.einsum, ("ij->i", X), {}, True), (np.einsum, ("i,j,k", V, V, V[:2]), {}, True),
    (la.inv, (M,), {}, True), (la.det, (B,), {}, True), (la.slogdet, (M,), {}, True),
    (la.solve, (M, V), {}, True), (la.solve, (B, X[:3, :2]), {}, True),
    (la.cholesky, (SPD,), {}, True), (la.cholesky, (SPD,), dict(upper=True), True),
    (la.eigh, (SYM,), {}, True), (la.eigvalsh, (SYM,), dict(UPLO="U"), True),
    (la.svd, (X,), dict(full_matrices=False), True), (la.svd, (C,), dict(compute_uv=False), True),
    (la.qr, (X.T,), {}, True), (la.qr, (M,), dict(mode="r"), True), (la.pinv, (X,), {}, True),
    (la.matrix_power, (M, 3), {}, True), (la.matrix_power, (M, 0), {}, False),
    (la.matrix_power, (B, -2), {}, True),
    (la.norm, (X,), {}, True), (la.norm, (X,), dict(axis=1), True),
    (la.norm, (C,), dict(axis=(0, 2), keepdims=True), True),
    (la.norm, (V,), dict(ord=1), True), (la.norm, (V,), dict(ord=np.inf), True),
    (la.norm, (V,), dict(ord=-np.inf), True), (la.norm, (V,), dict(ord=0), False),
    (la.norm, (V,), dict(ord=3), True), (la.norm, (X,), dict(ord="fro"), True),
    (la.norm, (X,), dict(ord="nuc"), True), (la.norm, (X,), dict(ord=2), True),
    (la.norm, (X,), dict(ord=-2), True), (la.norm, (X,), dict(ord=1), True),
    (la.norm, (X,), dict(ord=np.inf), True), (la.norm, (X,), dict(ord=-1), True),
    (la.norm, (X,), dict(ord=-np.inf), True), (la.norm, (C,), dict(ord=1, axis=(2, 0)), True),
    (la.norm, (C,), dict(ord=np.inf, axis=(-1, -3), keepdims=True), True),
    (la.norm, (C,), dict(ord=-1, axis=(-1, -2)), True),
    (la.norm, (C,), dict(ord=2, axis=(0, -1)), True),
]


def _id(case):
    f, args, kw, _ = case
    kinds = tuple(np.shape(a) if isinstance(a, np.ndarray) else type(a).__name__ for a in args)
    return f"{f.__name__}{kinds}{kw or ''}"


def _parts(r):
    return list(r) if isinstance(r, (list, tuple)) else [r]


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_adapter_gives_numpy_result(case):
    f, args, kw, _ = case
    want, got = f(*args, **kw), NUMPY[f](*args, **kw)
    assert type(got) is type(want)  # a tuple, a list, numpy's named results
    assert len(_parts(got)) == len(_parts(want))
    for w, g in zip(_parts(want), _parts(got)):
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _float_slots(args):
    """(i, None) for a float array argument, (i, j) for one inside a list argument."""
    slots = []
    for i, a in enumerate(args):
        if _is_float(a):
            slots.append((i, None))
        elif isinstance(a, list):
            slots += [(i, j) for j, b in enumerate(a) if _is_float(b)]
    return slots


def _get(args, slot):
    i, j = slot
    return args[i] if j is None else args[i][j]


def _put(args, slot, value):
    args = [list(a) if isinstance(a, list) else a for a in args]
    i, j = slot
    if j is None:
        args[i] = value
    else:
        args[i][j] = value
    return args


def _scalar(f, args, kw, vs):
    return sum(float(np.nansum(v * np.asarray(p, dtype=float)))
               for v, p in zip(vs, _parts(f(*args, **kw))))


GRAD_CASES = [c for c in CASES if c[3]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[_id(c) for c in GRAD_CASES])
def test_tape_gradient_matches_finite_differences(case):
    f, args, kw, _ = case
    slots = _float_slots(args)
    r = np.random.default_rng(0)
    vs = [r.standard_normal(np.shape(p)) for p in _parts(f(*args, **kw))]
    leaves = list(args)
    for slot in slots:
        leaves = _put(leaves, slot, Tensor(_get(args, slot).copy(), requires_grad=True))
    out = _parts(f(*leaves, **kw))
    total = None
    for v, o in zip(vs, out):
        if isinstance(o, Tensor) and o.requires_grad:
            term = (o * np.where(np.isnan(np.asarray(o.data)), 0.0, v)).sum()
            total = term if total is None else total + term
    assert total is not None, "no output depends on the inputs"
    total.backward()
    eps = 1e-6
    for slot in slots:
        x = _get(args, slot)
        g = _get(leaves, slot).grad
        g = np.zeros(x.shape) if g is None else np.asarray(g.data)
        num = np.zeros(x.shape)
        for k in np.ndindex(*x.shape):
            if np.isnan(x[k]):
                continue
            hi, lo = x.copy(), x.copy()
            hi[k] += eps
            lo[k] -= eps
            num[k] = (_scalar(f, _put(args, slot, hi), kw, vs)
                      - _scalar(f, _put(args, slot, lo), kw, vs)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6, err_msg=f"argument {slot}")


def _tensor_linspace_case():
    start = Tensor(np.array([0.5, -1.0]), requires_grad=True)
    stop = Tensor(np.array(2.0), requires_grad=True)
    y = NUMPY[np.linspace](start, stop, 5, axis=1)
    np.testing.assert_allclose(y.data, np.linspace([0.5, -1.0], 2.0, 5, axis=1), rtol=1e-15)
    y.sum().backward()
    # d/dstart of sum_k (start + k/4 (stop - start)) = 5 - 10/4; d/dstop = 2 * 10/4
    np.testing.assert_allclose(start.grad.data, [2.5, 2.5])
    np.testing.assert_allclose(stop.grad.data, 5.0)


def test_linspace_is_differentiable_in_its_endpoints():
    _tensor_linspace_case()


UNSUPPORTED = [
    (np.nan_to_num, (X,), dict(copy=False), "copy=False"),
    (np.take, (X, [0]), dict(mode="wrap"), "mode='wrap'"),
    (np.pad, (X, 1), dict(mode="mean"), "mode 'mean'"),
    (np.pad, (X, 1), dict(mode="reflect", reflect_type="odd"), "reflect_type"),
    (np.pad, (X, 1), dict(constant_values=((1, 2), (3, 4))), "constant_values"),
    (np.cross, (X[:, :3], V[:3]), dict(axisa=0, axisb=-1), "axisa"),
    (np.einsum, (X, [0, 1]), {}, "subscripts-string"),
    (la.svd, (X,), {}, "full_matrices=False"),
    (la.qr, (X.T,), dict(mode="complete"), "mode='complete'"),
    (la.pinv, (X,), dict(rcond=0.1), "rcond="),
    (np.sort, (X,), dict(order="a"), "order="),
    (np.cumsum, (X,), dict(dtype=np.float32), "dtype="),
    (np.real, (X + 1j,), {}, "complex"),
    (np.repeat, (X, 2.5), {}, "integers"),
]


@pytest.mark.parametrize("f, args, kw, words", UNSUPPORTED,
                         ids=[f"{c[0].__name__}-{c[3]}" for c in UNSUPPORTED])
def test_unsupported_arguments_are_refused(f, args, kw, words):
    with pytest.raises(UnsupportedArgument) as info:
        NUMPY[f](*args, **kw)
    assert words in str(info.value)


def test_numpy_errors_are_kept():
    with pytest.raises(ValueError, match="equal division"):
        NUMPY[np.split](np.zeros(5), 2)
    with pytest.raises(ValueError, match="Axes must be different"):
        NUMPY[np.rot90](X, 1, (0, -2))
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        NUMPY[np.average](X, axis=1, weights=np.array([1.0, -1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="length 3"):
        NUMPY[np.cross](X[:, :2], X[:, 2:])
    with pytest.raises(ValueError, match="tall or square"):
        NUMPY[la.qr](X)
    with pytest.raises(ValueError, match="1-D b with one matrix"):
        NUMPY[la.solve](B, V[:3])


def test_sort_gradient_follows_the_permutation_at_ties():
    """Between equal values the gradient goes where argsort (numpy's) sends each one."""
    x = Tensor(np.array([2.0, 1.0, 2.0, 1.0]), requires_grad=True)
    s = NUMPY[np.sort](x, stable=True)
    (s * Tensor(np.array([1.0, 10.0, 100.0, 1000.0]))).sum().backward()
    # stable order: x1, x3 (the 1s), then x0, x2 (the 2s)
    np.testing.assert_array_equal(x.grad.data, [100.0, 1.0, 1000.0, 10.0])


def full_svd(x):
    u, s, vh = np.linalg.svd(x)
    return np.sum(s)


def pad_mean(x):
    return np.sum(np.pad(x, 1, mode="mean"))


def solve_stack_vector(a, b):
    return np.sum(np.linalg.solve(a, b))


def test_compiled_refusals_point_at_the_line():
    import srcgrad
    from srcgrad.errors import SrcgradError

    for fn, words in ((full_svd, "full_matrices=False"), (pad_mean, "mode 'mean'")):
        with pytest.raises(SrcgradError, match=words) as info:
            srcgrad.grad(fn, cache=False)(X)
        assert info.value.filename == __file__
        assert info.value.lineno == fn.__code__.co_firstlineno + 1
    # a case only the shapes tell apart is refused when the function runs
    with pytest.raises(ValueError, match="1-D b with one matrix"):
        srcgrad.grad(solve_stack_vector, cache=False)(B, V[:3])


def test_ops_command_lists_every_mapped_name(capsys):
    from runtime.ops.numpy_api import METHODS, public_names
    from srcgrad.__main__ import main

    assert main(["ops"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {ln.split()[0] for ln in lines if ln.startswith(("np.", "ndarray.", "scipy."))}
    assert listed == set(public_names(scipy=True)) | {f"ndarray.{m}" for m in METHODS}
    assert any(ln.startswith("np.tanh ") and "all orders" in ln for ln in lines)
    assert any(ln.startswith("np.argmax ") and "zero derivative" in ln for ln in lines)


def test_ops_command_names_the_closest_spelling(capsys):
    from srcgrad.__main__ import main

    main(["ops", "atleast2d", "tanh"])
    out = capsys.readouterr().out
    assert "atleast2d: not differentiated by srcgrad; closest supported: atleast_2d" in out
    assert "np.tanh" in out
    assert main(["ops", "no_such_function_anywhere"]) == 1


def test_import_does_not_import_scipy():
    """scipy is optional and slow to import: srcgrad maps its spellings only once the
    program has imported it."""
    code = ("import sys, numpy, srcgrad, runtime; from runtime.ops import numpy_api; "
            "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m); "
            "assert numpy_api.lookup(numpy.sin) is not None; "
            "assert numpy_api.lookup(len) is None; "
            "assert 'scipy' not in sys.modules")
    r = run_python(code)
    assert r.returncode == 0, r.stderr


def test_scipy_spellings_register_once_scipy_is_imported():
    pytest.importorskip("scipy")
    code = ("import sys, srcgrad; from runtime.ops import numpy_api; "
            "import scipy.special as sp; "
            "assert numpy_api.lookup(sp.gammaln) is not None; "
            "assert 'scipy.stats' not in sys.modules; "  # only the part the program imported
            "import scipy.stats as st; "
            "assert numpy_api.lookup(st.norm.logpdf) is not None")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
