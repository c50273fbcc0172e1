"""The same gradients on cupy. Runs only where CUDA works: `importorskip("cupy")` and a
device check (importing cupy alone proves nothing); CI has no GPU, so it skips there.

On a GPU machine: `PYTHONPATH=$PWD python3 -m pytest tests/test_gpu.py`.
"""
import numpy as np
import pytest

cp = pytest.importorskip("cupy")
try:
    _available = cp.is_available()
except Exception:  # a driver or runtime problem: no usable device
    _available = False
if not _available:
    pytest.skip("no CUDA device", allow_module_level=True)

import runtime as rt  # noqa: E402
import srcgrad  # noqa: E402

from test_corpus import CASES  # noqa: E402


def _to_gpu(args):
    return tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def _host(v):
    return tuple(cp.asnumpy(x) if isinstance(x, cp.ndarray) else np.asarray(x)
                 for x in (v if isinstance(v, tuple) else (v,)))


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_corpus_on_cupy_matches_numpy(case, fuse):
    g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False, fuse=fuse)
    rng = np.random.default_rng(sum(map(ord, case.id)))
    for build in case.inputs:
        args = build(rng)
        want = _host(g(*args))
        got = _host(g(*_to_gpu(args)))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_mlp_on_cupy(dtype, rtol):
    rng = np.random.default_rng(0)
    args = [a.astype(dtype) for a in (rng.normal(size=(20, 16)), rng.normal(size=16),
                                      rng.normal(size=(16, 4)), rng.normal(size=4),
                                      rng.normal(size=(32, 20)),
                                      np.eye(4)[rng.integers(0, 4, 32)])]
    g = srcgrad.grad(_mlp, wrt=(0, 1, 2, 3), cache=False)
    for a, b in zip(_host(g(*_to_gpu(args))), _host(g(*args))):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def test_tape_on_cupy_and_moving_between_devices():
    x = rt.tensor(np.linspace(-1, 1, 7), requires_grad=True)
    xg = x.cuda()
    assert xg.requires_grad and isinstance(xg.data, cp.ndarray)
    y = (np.sin(xg) * xg).sum()
    y.backward()
    np.testing.assert_allclose(cp.asnumpy(xg.grad.data),
                               np.cos(x.data) * x.data + np.sin(x.data), rtol=1e-12)
    back = xg.to("cpu")
    assert isinstance(back.data, np.ndarray) and back.requires_grad


def test_mixing_devices_is_a_type_error():
    g = srcgrad.grad(_mlp, wrt=(0,), cache=False)
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(2, 2)),
            rng.normal(size=2), rng.normal(size=(4, 3)), np.eye(2)[[0, 1, 0, 1]]]
    with pytest.raises(TypeError, match="mix numpy and cupy"):
        g(cp.asarray(args[0]), *args[1:])


from hypothesis import given, settings  # noqa: E402

from programs import programs  # noqa: E402


@settings(deadline=None, max_examples=100)
@given(programs())
def test_random_programs_on_cupy_match_numpy(tmp_path_factory, program):
    module = program.load(str(tmp_path_factory.mktemp("gpu_programs")))
    fn = getattr(module, program.name)
    for fuse in (True, False):
        g = srcgrad.grad(fn, wrt=program.wrt, cache=False, fuse=fuse)
        want = _host(g(*program.args))
        dev = _to_gpu(program.args)
        # the general code, then (fused) the variant specialized to these arguments
        for _ in range(srcgrad.specialize.HOT_CALLS + 1 if fuse else 1):
            got = _host(g(*dev))
            for a, b in zip(got, want):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12,
                                           err_msg=program.source)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_corpus_variants_on_cupy_match_numpy(case):
    """Called again and again with one signature, a cupy call runs the variant specialized
    to its shapes and dtypes, fused (api._gpu_variant): it agrees with numpy too."""
    g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
    rng = np.random.default_rng(sum(map(ord, case.id)) + 1)
    args = case.inputs[0](rng)
    want = _host(g(*args))
    dev = _to_gpu(args)
    for _ in range(srcgrad.specialize.HOT_CALLS + 1):
        got = _host(g(*dev))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
