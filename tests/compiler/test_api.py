"""The public API: grad / value_and_grad / vjp options, dtypes, errors at call time, the
generated source and IR, shape polymorphism, tracebacks, show() and the command line."""
from __future__ import annotations

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest
import scipy.optimize

import runtime as rt
import srcgrad
from compiler_helpers import check_grad, finite_differences, tape_grads

from paths import ROOT  # noqa: E402  (tests/paths.py)
rng = np.random.default_rng(7)


def model(w, b, x, y):
    z = x @ w + b
    return np.mean((np.tanh(z) - y) ** 2)


W0, B0, X0, Y0 = rng.normal(size=3), 0.3, rng.normal(size=(5, 3)), rng.normal(size=5)
ARGS = [W0, B0, X0, Y0]


# ---- wrt / argnums ------------------------------------------------------------------------

def test_default_wrt_is_the_first_parameter():
    g = srcgrad.grad(model)(*ARGS)
    assert isinstance(g, np.ndarray) and g.shape == (3,)
    np.testing.assert_allclose(g, tape_grads(model, ARGS, [0])[0], rtol=1e-10)


@pytest.mark.parametrize("wrt, indices", [
    (1, [1]), ("b", [1]), (-3, [1]), ((0, 1), [0, 1]), (("w", "b"), [0, 1]),
    (["x", 0], [2, 0]), ((3,), [3]), (("y", "x", "b", "w"), [3, 2, 1, 0]),
])
def test_wrt_by_index_name_or_tuple(wrt, indices):
    got = srcgrad.grad(model, wrt=wrt)(*ARGS)
    if isinstance(wrt, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(indices)
    else:
        assert not isinstance(got, tuple)
        got = (got,)
    expected = tape_grads(model, ARGS, indices)
    for g, e, i in zip(got, expected, indices):
        assert np.shape(g) == np.shape(ARGS[i])
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(g, finite_differences(model, ARGS, i), rtol=1e-5,
                                   atol=1e-8)


@pytest.mark.parametrize("argnums, wrt", [(1, 1), ((0, 2), (0, 2)), ([3, 1], (3, 1))])
def test_argnums_is_wrt_by_index(argnums, wrt):
    a = srcgrad.grad(model, argnums=argnums)(*ARGS)
    b = srcgrad.grad(model, wrt=wrt)(*ARGS)
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(x, y)


def test_wrt_and_argnums_together_are_refused():
    with pytest.raises(TypeError, match="wrt= or argnums="):
        srcgrad.grad(model, wrt=1, argnums=1)
    with pytest.raises(TypeError, match="argnums"):
        srcgrad.grad(model, argnums="w")


def test_decorator_forms():
    @srcgrad.grad
    def f(x):
        return np.sum(x ** 3)

    @srcgrad.grad(wrt="y")
    def h(x, y):
        return np.sum(x * y ** 2)

    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [3.0, 12.0])
    np.testing.assert_allclose(h(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [6.0, 16.0])


def test_keyword_arguments_and_defaults_at_call_time():
    def f(x, scale=2.0, *, shift=1.0):
        return np.sum(scale * (x - shift) ** 2)

    g = srcgrad.grad(f)
    x = np.array([0.0, 3.0])
    np.testing.assert_allclose(g(x), 2 * 2.0 * (x - 1.0))
    np.testing.assert_allclose(g(x, 0.5), 2 * 0.5 * (x - 1.0))
    np.testing.assert_allclose(g(x, shift=-1.0, scale=3.0), 2 * 3.0 * (x + 1.0))
    np.testing.assert_allclose(g(x=x), 2 * 2.0 * (x - 1.0))
    gs = srcgrad.grad(f, wrt=("scale", "shift"))(x, shift=0.5)
    np.testing.assert_allclose(gs, (np.sum((x - 0.5) ** 2), np.sum(-2 * 2.0 * (x - 0.5))))


# ---- has_aux, value_and_grad -----------------------------------------------------------------

def loss_with_aux(w, x):
    pred = x @ w
    loss = np.sum(pred ** 2)
    return loss, {"pred": pred, "norm": np.sum(w * w)}


def test_has_aux_returns_grad_and_aux():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    g, aux = srcgrad.grad(loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g, 2 * x.T @ (x @ w))
    np.testing.assert_allclose(aux["pred"], x @ w)
    assert float(aux["norm"]) == pytest.approx(float(w @ w))


def test_value_and_grad_with_and_without_aux():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    (value, aux), g = srcgrad.value_and_grad(loss_with_aux, has_aux=True)(w, x)
    assert float(value) == pytest.approx(float(np.sum((x @ w) ** 2)))
    np.testing.assert_allclose(aux["pred"], x @ w)
    np.testing.assert_allclose(g, 2 * x.T @ (x @ w))
    value, (gw, gb) = srcgrad.value_and_grad(model, wrt=("w", "b"))(*ARGS)
    assert float(value) == pytest.approx(float(model(*ARGS)))
    tw, tb = tape_grads(model, ARGS, [0, 1])
    np.testing.assert_allclose(gw, tw, rtol=1e-10)
    np.testing.assert_allclose(gb, tb, rtol=1e-10)


def test_has_aux_needs_a_pair():
    def f(x):
        return np.sum(x)

    with pytest.raises(TypeError, match="pair"):
        srcgrad.grad(f, has_aux=True)(np.ones(2))


def rosenbrock(p):
    return (1.0 - p[0]) ** 2 + 100.0 * (p[1] - p[0] ** 2) ** 2


def test_value_and_grad_drives_scipy_minimize_on_rosenbrock():
    vg = srcgrad.value_and_grad(rosenbrock)
    v, g = vg(np.array([-1.2, 1.0]))
    assert float(v) == pytest.approx(24.2)
    np.testing.assert_allclose(g, [-215.6, -88.0])
    np.testing.assert_allclose(g, tape_grads(rosenbrock, [np.array([-1.2, 1.0])], [0])[0])
    res = scipy.optimize.minimize(vg, np.array([-1.2, 1.0]), jac=True, method="BFGS",
                                  options={"gtol": 1e-10})
    assert res.success
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-6)


# ---- vjp -----------------------------------------------------------------------------------

def layer(x, w):
    return np.tanh(x @ w) * np.sum(w ** 2, axis=0)


def test_vjp_matches_the_tapes_backward_with_gradient():
    x, w = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    ct = rng.normal(size=(2, 4))
    out, pullback = srcgrad.vjp(layer, x, w, wrt=(0, 1))
    np.testing.assert_allclose(out, layer(x, w))
    gx, gw = pullback(ct)
    tx, tw = rt.tensor(x, requires_grad=True), rt.tensor(w, requires_grad=True)
    layer(tx, tw).backward(gradient=ct)
    np.testing.assert_allclose(gx, tx.grad.data, rtol=1e-10)
    np.testing.assert_allclose(gw, tw.grad.data, rtol=1e-10)
    # and the same through finite differences of <ct, layer>
    num = finite_differences(lambda w_: np.sum(ct * layer(x, w_)), [w], 0)
    np.testing.assert_allclose(gw, num, rtol=1e-5, atol=1e-8)


def test_vjp_pullback_is_reusable_and_linear():
    x, w = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    _, pullback = srcgrad.vjp(layer, x, w, wrt=1)
    a, b = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    np.testing.assert_allclose(pullback(a + 2 * b), pullback(a) + 2 * pullback(b),
                               rtol=1e-10, atol=1e-12)


# ---- dtypes and argument kinds ----------------------------------------------------------------

def test_float32_in_float32_out():
    args32 = [W0.astype(np.float32), np.float32(B0), X0.astype(np.float32),
              Y0.astype(np.float32)]
    gw, gb = srcgrad.grad(model, wrt=(0, 1))(*args32)
    assert gw.dtype == np.float32 and np.asarray(gb).dtype == np.float32
    tw, tb = tape_grads(model, ARGS, [0, 1])
    np.testing.assert_allclose(gw, tw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gb, tb, rtol=1e-4, atol=1e-6)


def test_mixed_float32_and_float64_arguments():
    def f(x, y):
        return np.sum(x * y)

    gx, gy = srcgrad.grad(f, wrt=(0, 1))(np.ones(2, np.float32), np.full(2, 3.0))
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    np.testing.assert_array_equal(gy, [1.0, 1.0])


def test_python_float_and_int_arguments():
    def f(x, y):
        return x ** 2 * y + np.sin(y)

    gx, gy = srcgrad.grad(f, wrt=(0, 1))(3, 2.0)
    assert float(gx) == 12.0 and float(gy) == pytest.approx(9.0 + np.cos(2.0))
    assert np.asarray(gx).dtype == np.float64 and np.asarray(gx).shape == ()
    gx2, gy2 = srcgrad.grad(f, wrt=(0, 1))(3.0, 2)
    assert float(gx2) == 12.0 and float(gy2) == pytest.approx(9.0 + np.cos(2.0))
    check_grad(f, [3.0, 2.0], (0, 1))


def test_integer_array_wrt_is_refused():
    def f(x):
        return np.sum(x * 2.0)

    with pytest.raises(TypeError, match="floating"):
        srcgrad.grad(f)(np.arange(3))
    with pytest.raises(TypeError, match="floating"):
        srcgrad.grad(f)(np.array([True, False]))
    # an integer array that is not differentiated is fine
    def h(w, idx):
        return np.sum(w[idx] * idx)

    np.testing.assert_array_equal(srcgrad.grad(h)(np.ones(3), np.array([0, 2, 2])),
                                  [0.0, 0.0, 4.0])


def test_non_scalar_output_is_refused():
    def f(x):
        return x * 2

    with pytest.raises(TypeError) as info:
        srcgrad.grad(f)(np.ones(3))
    assert "Gradient only defined for scalar-output functions. Output had shape: (3,)" in \
        str(info.value)


def test_size_one_output_is_not_a_scalar():
    def f(x):
        return np.sum(x, keepdims=True)

    with pytest.raises(TypeError, match=r"Output had shape: \(1,\)"):
        srcgrad.grad(f)(np.ones(3))


# ---- the generated source and IR ----------------------------------------------------------------

def poly(x, y):
    z = 3.0 * x ** 2 + np.sin(x * y)
    return np.sum(z)


def test_source_is_deterministic_across_fresh_compilations():
    a = srcgrad.grad(poly, wrt=("x", "y"), cache=False).source
    srcgrad.clear_cache()
    b = srcgrad.grad(poly, wrt=("x", "y"), cache=False).source
    assert a == b
    assert "def grad_poly(x, y):" in a
    assert "dx" in a and "dy" in a
    # it is the source that runs: exec it and call it
    ns = {}
    exec(compile(a, "<test>", "exec"), ns)
    x, y = rng.normal(size=3), rng.normal(size=3)
    got = ns["grad_poly"](x, y)
    expected = srcgrad.grad(poly, wrt=("x", "y"))(x, y)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_source_in_a_fresh_process_is_the_same(tmp_path):
    mine = srcgrad.grad(poly, wrt=("x", "y"), cache=False).source
    code = ("import sys; sys.path.insert(0, 'tests'); sys.path.insert(0, 'tests/compiler'); import test_api, srcgrad; "
            "print(srcgrad.grad(test_api.poly, wrt=('x', 'y'), cache=False).source, end='')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONHASHSEED="123"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == mine


def test_ir_prints_equations():
    g = srcgrad.grad(poly)
    ir = g.ir
    lines = ir.splitlines()
    assert lines[0].startswith("poly(")
    # sin's value is not needed by the gradient (only its shape): the IR keeps cos, its
    # derivative
    assert any("= cos(" in ln for ln in lines)
    assert any("= multiply(" in ln for ln in lines)
    assert lines[-1].strip().startswith("return ")
    assert "test_api.py:" in ir  # equations point at the user's lines


def test_shape_polymorphism_compiles_once():
    g = srcgrad.grad(poly, wrt=(0, 1))
    for shape in [(3,), (5,), (2, 4), (), (1, 1, 7)]:
        x, y = rng.normal(size=shape), rng.normal(size=shape)
        gx, gy = g(x, y)
        assert np.shape(gx) == shape
        tx, ty = tape_grads(poly, [x, y], [0, 1])
        np.testing.assert_allclose(gx, tx, rtol=1e-10)
        np.testing.assert_allclose(gy, ty, rtol=1e-10)
    assert g.compile_count == 1
    # broadcasting between differently shaped arguments reuses it too
    gx, gy = g(rng.normal(size=(2, 3)), rng.normal(size=3))
    assert gx.shape == (2, 3) and gy.shape == (3,)
    # and dtypes
    gx, _ = g(np.ones(2, np.float32), np.ones(2, np.float32))
    assert gx.dtype == np.float32
    assert g.compile_count == 1


def wrong_shapes(a, b):
    c = a @ b
    return np.sum(c)


def test_traceback_shows_the_generated_line(tmp_path):
    for cache in (True, False):
        g = srcgrad.grad(wrong_shapes, cache=cache)
        with pytest.raises(ValueError) as info:
            g(np.ones((2, 3)), np.ones((2, 3)))
        text = "".join(traceback.format_exception(info.value))
        assert "in grad_wrong_shapes" in text
        assert "c = a @ b" in text or "c_1 = a @ b" in text
        # the frame's line number is the line in the generated code
        frame = [f for f in traceback.extract_tb(info.value.__traceback__)
                 if f.name == "grad_wrong_shapes"][-1]
        assert "a @ b" in frame.line
        if cache:
            assert frame.filename == g.cache_path and os.path.exists(frame.filename)
            with open(frame.filename) as f:
                assert "a @ b" in f.read().splitlines()[frame.lineno - 1]
        else:
            assert frame.filename.startswith("<srcgrad")
        srcgrad.clear_cache()


def test_show_prints_source_and_ir(capsys):
    srcgrad.show(poly, wrt=("x", "y"))
    out = capsys.readouterr().out
    assert "def grad_poly(x, y):" in out
    srcgrad.show(poly, ir=True)
    out = capsys.readouterr().out
    assert out.startswith("poly(") and "cos(" in out
    g = srcgrad.value_and_grad(poly)
    srcgrad.show(g)
    assert "def value_and_grad_poly(" in capsys.readouterr().out
    srcgrad.show(poly, mode="vjp")
    assert "def pullback(" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown mode"):
        srcgrad.show(poly, mode="hessian-of-nothing")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "srcgrad", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_command_line_show():
    out = _cli("show", "examples/quickstart.py:loss", "--wrt", "W,b")
    assert out.returncode == 0, out.stderr
    assert "def grad_loss(W, b, X, y):" in out.stdout
    assert "return (dW" in out.stdout and "db" in out.stdout
    # the CLI's output is the same source the API gives
    import importlib.util

    spec = importlib.util.spec_from_file_location("quickstart_for_cli_test",
                                                  os.path.join(ROOT, "examples/quickstart.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert srcgrad.grad(mod.loss, wrt=("W", "b")).source.strip() == out.stdout.strip()


def test_command_line_ir_and_errors():
    out = _cli("show", "examples/quickstart.py:loss", "--wrt", "W,b", "--ir")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("loss(") and "matmul" in out.stdout
    bad = _cli("show", "examples/quickstart.py:nothing_here")
    assert bad.returncode != 0 and "no function" in bad.stderr
    bad = _cli("show", "examples/quickstart.py:loss", "--wrt", "nope")
    assert bad.returncode != 0 and "nope" in bad.stderr


def test_command_line_forward_mode_and_hvp():
    out = _cli("show", "examples/readme_examples.py:energy", "--mode", "jvp")
    assert out.returncode == 0, out.stderr
    assert "def jvp_energy(x, tx):" in out.stdout
    out = _cli("show", "examples/readme_examples.py:energy", "--mode", "hvp")
    assert out.returncode == 0, out.stderr
    assert "def hvp_energy(x, v):" in out.stdout


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_where_with_an_unselected_branch_of_infinite_slope_as_readme_says():
    """README: the unselected branch gets a zero cotangent, and 0 * inf is nan (as in
    PyTorch and JAX); the safe spelling is finite, and right (finite differences)."""
    x = np.array([0.0, 1.0, 4.0])
    plain = srcgrad.grad(lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)))(x)
    assert np.isnan(plain[0]) and np.allclose(plain[1:], [0.5, 0.25])

    def safe(x):
        return np.sum(np.where(x > 0, np.sqrt(np.where(x > 0, x, 1.0)), 0.0))

    np.testing.assert_allclose(srcgrad.grad(safe)(x), [0.0, 0.5, 0.25], rtol=1e-12)


def reversed_from(p0, n1):
    v1 = p0[n1 - 1::-1]  # (the slice's start, n1 - 1, is read again by the pullback)
    v2 = np.sin(v1)
    return np.sum(v2)


def test_vjp_pullback_reads_the_values_of_a_slice_written_inline():
    """The forward function deleted `n1 - 1` after the slice, where the pullback's
    `slice(v1_1, None, -1)` reads it again: NameError (found by the deep property run)."""
    x = np.array([-1.0, 2.0, 0.5])
    for n in (0, 1, 3):
        out, pullback = srcgrad.vjp(reversed_from, x, n, wrt=0)
        np.testing.assert_allclose(pullback(1.0), srcgrad.grad(reversed_from)(x, n))
