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


class NoGPU(RuntimeError):
    """A kernel the stand-in was asked to run (after checking its inputs as cupy does)."""


class StrictArray(FakeArray):
    """Stands in for cupy.ndarray where cupy is stricter than numpy: a numpy array among
    a ufunc's operands is refused (cupy raises 'Unsupported type numpy.ndarray')."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        for a in inputs + (out or ()):
            if type(a) is np.ndarray:
                raise TypeError("Unsupported type <class 'numpy.ndarray'>")
        host = [a.view(np.ndarray) if isinstance(a, np.ndarray) else a for a in inputs]
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) for o in out)
        r = getattr(ufunc, method)(*host, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(r, tuple):
            return tuple(np.asarray(x).view(StrictArray) for x in r)
        return np.asarray(r).view(StrictArray)


@pytest.fixture
def strict_cupy(fake_cupy):
    """The stand-in made as strict as cupy where cupy differs from numpy: its arrays
    refuse numpy arrays as operands, broadcast_to and asarray make device arrays,
    broadcast_to refuses a number, ufuncs of numbers alone return device arrays, a kernel
    with no array input has no size, and a kernel's inputs must share one dtype."""
    def asarray(x, dtype=None):
        return np.asarray(x, dtype=dtype).view(StrictArray)

    def broadcast_to(x, shape):
        if not isinstance(x, StrictArray):
            raise TypeError("Argument 'array' has incorrect type (expected cupy ndarray)")
        return np.broadcast_to(x, shape).view(StrictArray)

    def minimum(a, b):
        return np.asarray(np.minimum(a, b)).view(StrictArray)  # 0-d: range() refuses it

    def zeros(shape, dtype=float):
        return np.zeros(shape, dtype).view(StrictArray)

    def ElementwiseKernel(in_params, out_params, body, name):
        fake_cupy.kernels.append((in_params, out_params, body, name))

        def run(*args):
            if not any(isinstance(a, StrictArray) for a in args):
                raise ValueError("Loop size is undecided.")
            types = [p.split()[0] for p in in_params.split(",")]
            of_t = {a.dtype for t, a in zip(types, args)
                    if t == "T" and isinstance(a, (np.ndarray, np.generic))}
            if len(of_t) > 1 or any(
                    t != "T" and isinstance(a, (np.ndarray, np.generic)) and a.dtype != t
                    for t, a in zip(types, args)):
                raise TypeError("Type is mismatched.")
            raise NoGPU("no GPU: this stand-in cannot run CUDA")
        return run

    def on_device(f):  # a function's arrays and numbers come back as device arrays
        def call(*args, **kwargs):
            r = f(*args, **kwargs)
            if isinstance(r, (np.ndarray, np.generic)) and not isinstance(r, StrictArray):
                return np.asarray(r).view(StrictArray)
            return r
        return call

    for name in dir(np):
        f = getattr(fake_cupy, name, None)
        if callable(f) and not isinstance(f, (np.ufunc, type)) and not name.startswith("_"):
            setattr(fake_cupy, name, on_device(f))
    fake_cupy.ndarray = StrictArray
    fake_cupy.asarray, fake_cupy.broadcast_to, fake_cupy.minimum = asarray, broadcast_to, minimum
    fake_cupy.zeros, fake_cupy.ElementwiseKernel = zeros, ElementwiseKernel
    return fake_cupy


def zip_rows(xs, ys):
    total = 0.0
    for a, b in zip(xs, ys):  # (the trip count: np.minimum of two ints)
        total = total + np.dot(a, b) ** 2
    return total


def mean_of_sin(p):
    return np.mean(np.sin(p))  # (its cotangent: np.broadcast_to of a number)


def scaled_by_a_number(x, n):
    k = 2.0 * n + 1.0  # a region of numbers alone
    return np.sum(np.tanh(x)) * k


W_HOST = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def reads_a_module_array(x):
    return np.sum(np.tanh(W_HOST @ x))  # (a numpy array read at each call)


def running_product(x):
    p = x[0]
    for i in range(1, x.shape[0]):  # no step for one element: dp stays the number 1.0
        p = p * x[i]
    return p


def half_float32(x):
    return np.sum(np.sin(x)) * np.float64(0.5)  # a float64 cotangent beside float32 x


def shifted_exp(x):
    return np.sum(np.exp(x - np.max(x))) * np.float64(0.5)  # a bool mask in a kernel


def _device(args):
    return tuple(a.view(StrictArray) if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize("fn,args", [
    (zip_rows, (np.ones((3, 2)), np.ones((4, 2)))),
    (mean_of_sin, (np.linspace(0, 1, 5),)),
    (scaled_by_a_number, (np.linspace(0, 1, 5), 3)),
    (reads_a_module_array, (np.linspace(0, 1, 4),)),
    (running_product, (np.array([1.5]),)),
    (half_float32, (np.linspace(0, 1, 5, dtype=np.float32),)),
    (shifted_exp, (np.linspace(0, 1, 5, dtype=np.float32),)),
], ids=["trip_count", "broadcast_number", "number_region", "module_array",
        "number_spread_to_a_shape", "float64_cotangent", "mask_and_float64"])
def test_numbers_stay_numbers_and_data_goes_to_the_device(strict_cupy, fn, args):
    """Generated code passes numbers and shapes to numpy's functions where cupy refuses
    them or makes device arrays of them, reads the user's numpy arrays, spreads number
    cotangents to shapes, and meets float64 numbers in float32 kernels
    (runtime.cupy_backend): bound to cupy, numbers go to numpy and data to the device
    (first found on a GPU: most of the corpus failed there)."""
    g = srcgrad.grad(fn, wrt=0, cache=False, fuse=False)
    want = g(*args)
    got = g(*_device(args))
    assert isinstance(got, StrictArray)
    np.testing.assert_allclose(got.view(np.ndarray), want, rtol=1e-6)
    fused = srcgrad.grad(fn, wrt=0, cache=False)
    try:  # runs to the end, or to the first kernel over arrays (numbers run the reference)
        got = fused(*_device(args))
    except RuntimeError as e:
        assert "no GPU" in str(e)
    else:
        np.testing.assert_allclose(got.view(np.ndarray), want, rtol=1e-6)


def matvec(W, x):
    return np.sum(W @ x)


def poly(x, y):
    return np.sum(np.log(3 * x ** 2 + 5 * x * y))


def test_calls_on_cupy_arrays_get_fused_variants(strict_cupy):
    """Calls on cupy arrays with one signature get, after HOT_CALLS of them, a variant
    specialized to it and fused (api._gpu_variant): poly's forward and backward, split
    into three kernels by the shape-polymorphic code's sum_tos, become one kernel."""
    W, x = np.linspace(0, 1, 12).reshape(3, 4), np.linspace(-1, 1, 4)
    g = srcgrad.grad(matvec, wrt=(0, 1), cache=False)
    want = g(W, x)
    for _ in range(srcgrad.specialize.HOT_CALLS + 1):
        got = g(*_device((W, x)))
    assert len(g._gpu_found) == 1 and next(iter(g._gpu_found.values())) is not g._gpu
    for a, b in zip(got, want):
        assert isinstance(a, StrictArray)
        np.testing.assert_allclose(a.view(np.ndarray), b, rtol=1e-12)

    h = srcgrad.grad(poly, wrt=(0, 1), cache=False)
    x, y = np.linspace(1, 2, 5), np.linspace(2, 3, 5)
    for n in range(srcgrad.specialize.HOT_CALLS):
        with pytest.raises(RuntimeError, match="no GPU"):
            h(*_device((x, y)))
        if n == 0:
            assert len(strict_cupy.kernels) == 3  # the general code's kernels
    assert len(strict_cupy.kernels) == 4  # and the variant's one
    assert "v_dx" in strict_cupy.kernels[-1][1] and "v_dy" in strict_cupy.kernels[-1][1]


def test_a_kernel_promotes_its_inputs_of_type_T_only(strict_cupy):
    """A fused kernel's parameters of type T share one dtype: a float64 number beside
    float32 arrays makes them float64 first (numpy's promotion), a parameter the spec
    types itself (a bool mask) is left as it is; numbers alone run the reference."""
    from runtime.cupy_backend import kernel

    got = []

    def ElementwiseKernel(in_params, out_params, body, name):
        def run(*args):
            got.append([getattr(a, "dtype", type(a)) for a in args])
            return "ran"
        return run

    strict_cupy.ElementwiseKernel = ElementwiseKernel
    k = kernel(strict_cupy, lambda *a: "reference",
               ("T v_a, bool v_m, T v_b", "T v_o", "v_o = v_m ? v_a : v_b;", "k"))
    a = np.ones(3, np.float32).view(StrictArray)
    m = np.array([True, False, True]).view(StrictArray)
    assert k(a, m, np.float64(2.0)) == "ran"
    assert got[-1] == [np.float64, np.bool_, np.float64]
    assert k(a, m, 2.0) == "ran" and got[-1] == [np.float32, np.bool_, float]
    assert k(1.0, True, 2.0) == "reference"
    n = np.arange(3).view(StrictArray)  # T an integer type: `n / 2` would divide as ints
    assert k(n, m, 2) == "reference" and k(n, m, np.int64(2)) == "reference"


@pytest.fixture
def device_cupy(strict_cupy, monkeypatch):
    """The strict stand-in whose fused kernels, once their inputs pass cupy's checks, run
    their numpy reference on the device arrays (what a kernel computes): whole programs
    run through the cupy binding on this machine."""
    real = srcgrad.api.cupy_kernel

    def kernel(cp, reference, spec):
        k = real(cp, reference, spec)

        def run(*args):
            try:
                return k(*args)
            except NoGPU:
                return reference(*args)
        return run

    monkeypatch.setattr(srcgrad.api, "cupy_kernel", kernel)
    return strict_cupy


def _on_host(v):
    if isinstance(v, (tuple, list)):
        return type(v)(_on_host(x) for x in v)
    return v.view(np.ndarray) if isinstance(v, StrictArray) else v


@pytest.mark.parametrize("kind", ["grad", "vjp", "hvp"])
def test_the_corpus_through_the_cupy_binding(device_cupy, kind):
    """Every corpus program's grad (the general code, then the fused variant), vjp's
    pullback and hvp, called with device arrays, agree with the numpy results (the
    pullback and hvp once lost the device of a number cotangent: helpers_on)."""
    from test_corpus import CASES

    failed = []
    for case in CASES:
        if case.xfail:
            continue
        args = case.inputs[0](np.random.default_rng(sum(map(ord, case.id))))
        wrt = case.wrt if len(case.wrt) > 1 else case.wrt[0]
        try:
            if kind == "grad":
                g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
                want = g(*args)
                for _ in range(srcgrad.specialize.HOT_CALLS + 1):
                    got = g(*_device(args))
            elif kind == "vjp":
                want = srcgrad.vjp(case.fn, *args, wrt=wrt)[1](1.0)
                got = srcgrad.vjp(case.fn, *_device(args), wrt=wrt)[1](1.0)
            else:
                h = srcgrad.hvp(case.fn, wrt=case.wrt[0], cache=False)
                v = np.ones_like(args[case.wrt[0]]) * 0.5
                want, got = h(*args, v), h(*_device(args), *_device((v,)))
            got, want = _on_host(got), want
            for a, b in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,), strict=True):
                np.testing.assert_allclose(np.asarray(a), b, rtol=1e-10, atol=1e-12)
        except Exception as e:  # noqa: BLE001 (all of them listed)
            failed.append(f"{case.id}: {type(e).__name__}: {str(e)[:200]}")
    assert not failed, "\n".join(failed)


def test_numpy_code_inside_a_cupy_call_stays_numpy(device_cupy, tmp_path, monkeypatch):
    """A user's op that calls a numpy gradient while a gradient runs on cupy arrays: the
    inner numpy call makes numpy arrays (no device default leaks into it)."""
    (tmp_path / "leaky_user.py").write_text(
        "import numpy as np\nimport srcgrad\n\n\n"
        "def horner(x, coeffs):\n    y = 0.0\n    for c in coeffs:\n        y = y * x + c\n"
        "    return np.sum(y)\n\n\n"
        "g_host = srcgrad.grad(horner, wrt=(0, 1), cache=False)\nSEEN = []\n\n\n"
        "@srcgrad.primitive\ndef host_helper(x):\n"
        "    gx, gc = g_host(np.array([0.5]), np.array([1.0, 2.0, 3.0]))\n"
        "    SEEN.append((type(gx), type(gc)))\n    return x * float(np.sum(gc))\n\n\n"
        "@host_helper.defvjp\ndef _(g, out, x):\n    return g * 1.0\n\n\n"
        "def outer(x):\n    return np.sum(host_helper(x))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import leaky_user

    g = srcgrad.grad(leaky_user.outer, cache=False)
    g(*_device((np.ones(3),)))
    assert leaky_user.SEEN and all(t == (np.ndarray, np.ndarray) for t in leaky_user.SEEN)


def test_cupy_calls_with_ever_new_shapes_stop_counting(device_cupy):
    """As numpy calls do (specialize.GIVE_UP): calls that got no variant stop being
    counted, and their signatures are no longer looked at."""
    g = srcgrad.grad(mean_of_sin, cache=False)
    for n in range(1, srcgrad.specialize.GIVE_UP + 3):
        g(*_device((np.linspace(0, 1, n),)))
    assert g._gpu_seen is None and not g._gpu_found
