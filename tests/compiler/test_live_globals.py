"""Generated code reads the user's module-level and closure arrays when it is called: a
rebound or changed array (small or large) is what the next call sees, in every
transformation, for arrays of inlined functions from other modules too, and for modules
loaded from the disk cache in another process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import live_globals_helper as helper
import srcgrad
from compiler_helpers import check_grad, finite_differences

from paths import ROOT  # noqa: E402  (tests/paths.py)
THIS = sys.modules[__name__]

W = np.linspace(0.5, 1.5, 5)  # small: once folded into the code as a literal
BIG = np.linspace(-1.0, 1.0, 30)  # large: once bound into the module at the first call
rng = np.random.default_rng(3)


def small_global(x):
    return np.sum(np.sin(x) * W)


def big_global(x):
    return np.sum(np.sin(x) * BIG)


def both_modules(x):
    """`W` here and `W` in the helper module are different arrays."""
    return np.sum(x * W) + helper.weighted(x) + helper.weighted_big(x)


def make_closure(a):
    def closure(x):
        return np.sum(np.tanh(x) * a)

    def rebind(new):
        nonlocal a
        a = new

    return closure, rebind


def _grad(fn, **kw):
    return srcgrad.grad(fn, cache=False, **kw)


@pytest.mark.parametrize("fn, name, n", [(small_global, "W", 5), (big_global, "BIG", 30)])
def test_rebound_global(monkeypatch, fn, name, n):
    g = _grad(fn)
    x = rng.normal(size=n)
    check_grad(fn, (x,), compiled=g)
    monkeypatch.setattr(THIS, name, rng.normal(size=n))
    check_grad(fn, (x,), compiled=g)
    assert g.compile_count == 1  # read at the call, not compiled again


@pytest.mark.parametrize("fn, name, n", [(small_global, "W", 5), (big_global, "BIG", 30)])
def test_global_changed_in_place(monkeypatch, fn, name, n):
    monkeypatch.setattr(THIS, name, getattr(THIS, name).copy())
    g = _grad(fn)
    x = rng.normal(size=n)
    check_grad(fn, (x,), compiled=g)
    getattr(THIS, name)[:] = rng.normal(size=n)
    check_grad(fn, (x,), compiled=g)


@pytest.mark.parametrize("n", [4, 25])
def test_closure_array_rebound_and_changed(n):
    closure, rebind = make_closure(np.linspace(1.0, 2.0, n))
    g = _grad(closure)
    x = rng.normal(size=n)
    check_grad(closure, (x,), compiled=g)
    rebind(rng.normal(size=n))
    check_grad(closure, (x,), compiled=g)
    closure.__closure__[0].cell_contents[:] = rng.normal(size=n)
    check_grad(closure, (x,), compiled=g)


def test_inlined_function_reads_its_own_module(monkeypatch):
    g = _grad(both_modules)
    x = rng.normal(size=5)
    check_grad(both_modules, (x,), compiled=g)
    monkeypatch.setattr(helper, "W", rng.normal(size=5))
    check_grad(both_modules, (x,), compiled=g)
    helper.BIG[:5] = rng.normal(size=5)  # (restored below)
    try:
        check_grad(both_modules, (x,), compiled=g)
    finally:
        helper.BIG[:] = np.linspace(0.0, 2.0, 40)


def test_closure_of_another_module():
    scaled = helper.make_scaled(np.linspace(1.0, 2.0, 3))
    g = _grad(scaled)
    x = rng.normal(size=3)
    check_grad(scaled, (x,), compiled=g)
    scaled.__closure__[0].cell_contents[:] = [3.0, -1.0, 0.5]
    check_grad(scaled, (x,), compiled=g)


def two_outputs(x):
    return np.sin(x) * W


def test_every_transformation_reads_at_call_time(monkeypatch):
    monkeypatch.setattr(THIS, "W", W.copy())
    x = rng.normal(size=5)
    v = rng.normal(size=5)
    vg = srcgrad.value_and_grad(small_global, cache=False)
    hv = srcgrad.hvp(small_global, cache=False)
    hess_dd = srcgrad.grad(srcgrad.grad(lambda_free_scalar, cache=False), cache=False)
    for _ in range(2):
        value, grad = vg(x)
        np.testing.assert_allclose(value, small_global(x))
        np.testing.assert_allclose(grad, finite_differences(small_global, (x,), 0),
                                   rtol=1e-5, atol=1e-8)
        # the Hessian of sum(sin(x) * W) is diag(-sin(x) * W)
        np.testing.assert_allclose(hv(x, v), -np.sin(x) * W * v, rtol=1e-10)
        out, pullback = srcgrad.vjp(two_outputs, x)
        np.testing.assert_allclose(out, np.sin(x) * W)
        np.testing.assert_allclose(pullback(v), np.cos(x) * W * v, rtol=1e-10)
        out, tangent = srcgrad.jvp(two_outputs, (x,), (v,))
        np.testing.assert_allclose(tangent, np.cos(x) * W * v, rtol=1e-10)
        d2 = hess_dd(0.3)
        np.testing.assert_allclose(d2, -np.sin(0.3) * W[0], rtol=1e-10)
        W[:] = rng.normal(size=5)  # the second round sees new values


def lambda_free_scalar(t):
    return np.sin(t) * W[0]


def test_array_named_like_a_temporary(monkeypatch):
    """Generated temporaries (out_1, dx...) never overwrite the user's array."""
    code = textwrap.dedent("""
        import numpy as np
        out_1 = np.linspace(0.0, 1.0, 20)
        dx = np.linspace(1.0, 2.0, 20)

        def f(x):
            out = np.sin(x) * out_1
            return np.sum(out * x * dx)
    """)
    mod = _module_from_source(code, "named_like_temporaries", monkeypatch)
    x = rng.normal(size=20)
    g = _grad(mod.f)
    check_grad(mod.f, (x,), compiled=g)
    mod.out_1 = rng.normal(size=20)
    check_grad(mod.f, (x,), compiled=g)


def _module_from_source(code, name, monkeypatch):
    import importlib
    import tempfile

    d = tempfile.mkdtemp()
    with open(os.path.join(d, name + ".py"), "w") as f:
        f.write(code)
    monkeypatch.syspath_prepend(d)
    sys.modules.pop(name, None)
    return importlib.import_module(name)


CROSS = '''
import numpy as np
import cross_helper

W = np.linspace(0.5, 1.5, 4)


def make(a):
    def inner(x):
        return np.sum(x * a)
    return inner


scaled = make(np.linspace(1.0, 2.0, 4))


def f(x):
    return np.sum(np.sin(x) * W) + cross_helper.g(x) + scaled(x)
'''

CROSS_HELPER = '''
import numpy as np

W = np.linspace(-1.0, 1.0, 4)


def g(x):
    return np.sum(np.cos(x) * W)
'''


def _cross_process(user_dir, cache_dir, new_w):
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        sys.path.insert(0, {str(user_dir)!r})
        import srcgrad, cross_mod, cross_helper
        cross_mod.W = np.array({new_w!r})
        cross_helper.W[:] = np.array({new_w!r})[::-1]
        cross_mod.scaled.__closure__[0].cell_contents[:] = 2.0
        g = srcgrad.grad(cross_mod.f)
        x = np.linspace(-1.0, 1.0, 4)
        print(json.dumps({{"grad": g(x).tolist(), "compile_count": g.compile_count}}))
    """)
    env = dict(os.environ, SRCGRAD_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_disk_cache_binds_the_arrays_of_the_loading_process(tmp_path):
    """A module cached by one process reads the arrays of the process that loads it:
    its own globals, another module's globals, and a closure cell of an inlined function
    (which another process cannot find again from the cached file: rebuilt there)."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "cross_mod.py").write_text(CROSS)
    (user / "cross_helper.py").write_text(CROSS_HELPER)
    cache_dir = tmp_path / "cache"
    x = np.linspace(-1.0, 1.0, 4)
    for new_w in ([1.0, 2.0, 3.0, 4.0], [-2.0, 0.5, 0.25, 3.0]):
        report = _cross_process(user, cache_dir, new_w)
        w = np.array(new_w)
        expected = np.cos(x) * w - np.sin(x) * w[::-1] + 2.0
        np.testing.assert_allclose(report["grad"], expected, rtol=1e-12)
    assert any(p.endswith(".py") for p in os.listdir(cache_dir))


CROSS_SIMPLE = '''
import numpy as np
import cross_helper

W = np.linspace(0.5, 1.5, 4)


def f(x):
    return np.sum(np.sin(x) * W) + cross_helper.g(x)
'''


def test_disk_cache_reused_across_processes_with_live_arrays(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "cross_mod.py").write_text(CROSS_SIMPLE.replace("+ cross_helper.g(x)",
                                                            "+ cross_helper.g(x) + 0.0"))
    (user / "cross_helper.py").write_text(CROSS_HELPER)
    cache_dir = tmp_path / "cache"
    x = np.linspace(-1.0, 1.0, 4)
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        sys.path.insert(0, {str(user)!r})
        import srcgrad, cross_mod, cross_helper
        w = np.array(json.loads(sys.argv[1]))
        cross_mod.W = w
        cross_helper.W[:] = w[::-1]
        g = srcgrad.grad(cross_mod.f)
        x = np.linspace(-1.0, 1.0, 4)
        print(json.dumps({{"grad": g(x).tolist(), "compile_count": g.compile_count}}))
    """)
    env = dict(os.environ, SRCGRAD_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    counts = []
    for new_w in ([1.0, 2.0, 3.0, 4.0], [-2.0, 0.5, 0.25, 3.0]):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(new_w)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout.strip().splitlines()[-1])
        w = np.array(new_w)
        np.testing.assert_allclose(report["grad"], np.cos(x) * w - np.sin(x) * w[::-1],
                                   rtol=1e-12)
        counts.append(report["compile_count"])
    assert counts == [1, 0]  # the second process loaded the first one's module
