"""Binding generated code to an array module chosen at call time.

Without CUDA these tests use a stand-in "cupy" module (numpy under another name, with an
ndarray subclass) to check the dispatch: cupy arguments run the same generated source
bound to cupy, numpy programs never import cupy, and mixing raises TypeError. The real
GPU checks are in test_gpu.py and skip without a device.
"""
import subprocess
import sys
import types

import numpy as np
import pytest

import srcgrad


def loss(W, x):
    h = np.tanh(W @ x)
    return np.sum(h * h)


class FakeArray(np.ndarray):
    """Stands in for cupy.ndarray."""


@pytest.fixture
def fake_cupy(monkeypatch):
    mod = types.ModuleType("cupy")
    for name in dir(np):
        if not name.startswith("__"):
            setattr(mod, name, getattr(np, name))
    mod.ndarray = FakeArray
    calls = []

    def tanh(x, *a, **k):
        calls.append("tanh")
        return np.tanh(x, *a, **k)

    mod.tanh = tanh
    mod.calls = calls
    mod.kernels = []

    def ElementwiseKernel(in_params, out_params, body, name):
        mod.kernels.append((in_params, out_params, body, name))

        def not_on_this_machine(*args):
            raise RuntimeError("no GPU: this stand-in cannot run CUDA")
        return not_on_this_machine

    mod.ElementwiseKernel = ElementwiseKernel
    monkeypatch.setitem(sys.modules, "cupy", mod)
    return mod


def test_cupy_arguments_run_the_same_source_bound_to_cupy(fake_cupy):
    g = srcgrad.grad(loss, cache=False, fuse=False)
    rng = np.random.default_rng(0)
    W, x = rng.normal(size=(3, 4)), rng.normal(size=4)
    ref = g(W, x)
    assert fake_cupy.calls == []  # numpy arguments: numpy
    got = g(W.view(FakeArray), x.view(FakeArray))
    assert fake_cupy.calls == ["tanh"]  # the generated np.tanh went to "cupy"
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12)
    assert g.compile_count == 1  # the same generated module, bound twice


def test_fused_binding_makes_one_kernel_per_region(fake_cupy):
    g = srcgrad.grad(loss, cache=False)
    W, x = np.ones((3, 4)).view(FakeArray), np.ones(4).view(FakeArray)
    with pytest.raises(RuntimeError, match="no GPU"):
        g(W, x)
    ns = {}
    exec(compile(g.fused_source, "<fused>", "exec"), ns)
    specs = sorted(v for k, v in ns.items() if k.endswith("_cuda"))
    assert specs and sorted(fake_cupy.kernels) == specs
    assert "_fused_" not in g.source  # numpy calls keep the unfused code


def test_mixing_numpy_and_cupy_arrays_is_a_type_error(fake_cupy):
    g = srcgrad.grad(loss, cache=False)
    with pytest.raises(TypeError, match="mix numpy and cupy"):
        g(np.ones((2, 2)).view(FakeArray), np.ones(2))


def test_numpy_programs_never_import_cupy():
    script = (
        "import sys, numpy as np, srcgrad, runtime, tests.compiler.test_backends as t\n"
        "g = srcgrad.grad(t.loss, cache=False)\n"
        "g(np.ones((2, 3)), np.ones(3))\n"
        "rt = runtime.tensor(np.ones(3), requires_grad=True)\n"
        "(rt * rt).sum().backward()\n"
        "print('cupy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
