"""The fusion planner, tested without a GPU: every fused region's numpy reference, wired
into the fused module, must give the unfused gradient (the whole control-flow corpus and
the benchmark-style problems), and the kernels' CUDA text is checked for its shape."""
import re

import numpy as np
import pytest

import srcgrad
from runtime.ops import PRIMITIVES

from test_corpus import CASES


def _fused_reference(g):
    """The fused module bound to numpy, each region's reference checked for what its cupy
    kernel does: an ElementwiseKernel allocates every output at the broadcast shape of the
    inputs, so each output must have that shape (else the kernel's would be wrong)."""
    fused = g._bind(None, g._fused_module())
    ns = fused.__globals__
    for name in [k for k in ns if k.startswith("_fused_") and not k.endswith("_cuda")]:
        ns[name] = _as_a_kernel_would(ns[name], name)
    return fused


def _as_a_kernel_would(ref, name):
    def checked(*args):
        out = ref(*args)
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        for o in out if isinstance(out, tuple) else (out,):
            assert np.shape(o) == shape, \
                f"{name}: an output of shape {np.shape(o)}, a kernel would make {shape}"
        return out
    return checked


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_fused_reference_equals_unfused_on_the_corpus(case):
    g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
    fused = _fused_reference(g)
    rng = np.random.default_rng(sum(map(ord, case.id)))
    for build in case.inputs:
        args = build(rng)
        want = g(*args)
        got = fused(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def chain(x):
    y = np.sin(x) * 0.5 + 1.0
    y = np.exp(-y * y) + np.tanh(y)
    y = y * np.cos(x) - 0.25 * y
    return np.sum(y * y)


def test_a_chain_of_elementwise_ops_and_its_gradient_is_one_kernel():
    g = srcgrad.grad(chain, cache=False)
    src = g.fused_source
    calls = re.findall(r"= (_fused_\d+)\(", src)
    assert len(calls) == 1  # forward and backward together: one kernel
    x = np.linspace(-2, 2, 11)
    np.testing.assert_allclose(_fused_reference(g)(x), g(x), rtol=1e-13)


def test_mlp_fused_reference_and_kernel_specs():
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(5, 4)), rng.normal(size=4), rng.normal(size=(4, 3)),
            rng.normal(size=3), rng.normal(size=(6, 5)), np.eye(3)[rng.integers(0, 3, 6)])
    g = srcgrad.grad(mlp, wrt=(0, 1, 2, 3), cache=False)
    for a, b in zip(_fused_reference(g)(*args), g(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    ns = {}
    exec(compile(g.fused_source, "<fused>", "exec"), ns)
    specs = {k: v for k, v in ns.items() if k.endswith("_cuda")}
    assert specs
    for name, (ins, outs, body, kname) in specs.items():
        assert name == kname + "_cuda"
        assert re.fullmatch(r"((T|bool) v_\w+)(, (T|bool) v_\w+)*", ins)
        assert re.fullmatch(r"((T|bool) v_\w+)(, (T|bool) v_\w+)*", outs)
        for out in outs.split(", "):  # every output is assigned in the body
            assert re.search(rf"(^|; ){out.split()[1]} = ", body)
        assert "np." not in body


def test_every_elementwise_primitive_has_a_cuda_spelling():
    missing = [n for n, p in PRIMITIVES.items() if p.elementwise and p.cuda is None]
    # scipy.special's functions run as calls (cupyx.scipy.special on the GPU): a run of
    # fused equations ends at one (CUDA C has no digamma, polygamma or log_ndtr); so do
    # floor_divide and remainder (numpy's come from the exact quotient: cupy's own)
    assert sorted(missing) == sorted(SPECIAL + ["floor_divide", "remainder"])


SPECIAL = ["gammaln", "digamma", "polygamma", "erf", "erfc", "erfinv", "ndtr", "log_ndtr",
           "xlogy", "xlog1py"]


def test_a_special_function_ends_a_fused_run():
    import scipy.special

    def f(x):
        return np.sum(np.exp(scipy.special.gammaln(np.sin(x) * 2 + 3)) * x + x)

    g = srcgrad.grad(f, cache=False)
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(g(x), srcgrad.grad(f, cache=False, fuse=False)(x),
                               rtol=1e-12)
    assert "gammaln(" in g.fused_source


def test_fuse_false_keeps_the_plain_source_for_cupy():
    g = srcgrad.grad(chain, cache=False, fuse=False)
    assert g.fuse is False
    assert "_fused_" not in g.source


def small_then_wide(a, d):
    b = np.exp(a)  # (5, 1), read again below: an output of the region
    c = b * d      # (5, 4)
    return np.sum(c) + np.sum(b * b)


def independent_shapes(w, x):
    u = 0.5 * w        # (3,)
    v = np.sin(x) * x  # (7,): consecutive elementwise work of another shape
    return np.sum(u * w) + np.sum(v)


@pytest.mark.parametrize("fn,args", [
    (small_then_wide, (np.linspace(0, 1, 5)[:, None], np.ones((5, 4)))),
    (independent_shapes, (np.linspace(-1, 1, 3), np.linspace(-1, 1, 7))),
])
def test_a_region_makes_outputs_of_one_shape(fn, args):
    """A value narrower than the region's broadcast shape (or of another shape
    altogether) is never a region output: the kernel would allocate it wide."""
    g = srcgrad.grad(fn, wrt=(0, 1), cache=False)
    want = g(*args)
    got = _fused_reference(g)(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
