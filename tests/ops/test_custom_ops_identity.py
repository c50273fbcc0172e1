"""Each user's op (srcgrad.primitive) is its own op: two made by one factory (same function
name, different constants) are never confused, in generated code, in the optimizer or in
the disk cache, and a user's op never takes the name of a variable, of an op of the set or
of a name the generated module uses."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcgrad
from runtime.ops.custom import REGISTRY
from srcgrad import cache as _cache

from compiler_helpers import check_grad


def make_scaled(c):
    @srcgrad.primitive
    def scaled(x):
        return c * x

    @scaled.defvjp
    def _(g, out, x):
        return g * c

    return scaled


s2 = make_scaled(2.0)
s3 = make_scaled(3.0)


def uses_s2(x):
    return np.sum(s2(x) ** 2)


def uses_s3(x):
    return np.sum(s3(x) ** 2)


def uses_both(x):
    return np.sum(s2(x) * s3(x) + np.sin(s3(x)))


def uses_op(x):
    return np.sum(op(x) ** 2)


op = s2  # rebound by a test


@srcgrad.primitive
def sq(x):
    return x * x


@sq.defvjp
def _(g, out, x):
    return 2.0 * g * x


square = sq


def local_named_like_the_op(x):
    sq = x + 1.0  # a variable with the op's name; the op is reached as `square`
    return np.sum(sq * square(x))


@srcgrad.primitive
def sigmoid(x):  # shares a name with an op of the set (and a helper generated code imports)
    return np.tanh(x)


@sigmoid.defvjp
def _(g, out, x):
    return g * (1.0 - out * out)


def uses_the_users_sigmoid(x):
    return np.sum(sigmoid(x) * x)


X = np.array([0.3, -1.1, 2.0])


@pytest.fixture(params=["disk cache off", "disk cache on"])
def cache_mode(request, monkeypatch, tmp_path):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR",
                       "" if request.param == "disk cache off" else str(tmp_path / "cache"))
    return request.param


@pytest.mark.parametrize("fn", [uses_s2, uses_s3, uses_both, local_named_like_the_op,
                                uses_the_users_sigmoid])
def test_gradient_of_functions_with_ops_of_one_name(fn, cache_mode):
    check_grad(fn, [X.copy()], (0,))


def test_each_op_of_a_factory_gets_its_own_name_and_the_code_calls_each():
    assert s2.name != s3.name and {s2.name, s3.name} <= {"scaled", "scaled_2", "scaled_3"}
    assert REGISTRY[s2.name] is s2 and REGISTRY[s3.name] is s3
    assert s2.__name__ == s3.__name__ == "scaled"  # the user's name stays the user's
    source = srcgrad.grad(uses_both, cache=False).source
    assert f"{s2.name}(x)" in source and f"{s3.name}(x)" in source
    assert sigmoid.name != "sigmoid"  # the op of the set keeps its name


def test_a_second_compilation_from_the_disk_cache_calls_the_right_ops(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    first = srcgrad.grad(uses_both)
    want = first(X)
    second = srcgrad.grad(uses_both)
    got = second(X)
    assert first.compile_count == 1 and second.compile_count == 0  # loaded, not compiled
    np.testing.assert_array_equal(got, want)
    check_grad(uses_both, [X.copy()], 0, compiled=second)


def test_the_cache_key_tells_ops_of_one_factory_apart(monkeypatch):
    opts = {"kind": "grad"}
    module = sys.modules[__name__]
    keys = {}
    for c in (2.0, 3.0, 2.5):
        monkeypatch.setattr(module, "op", make_scaled(c))
        keys[c] = _cache.cache_key(uses_op, opts)
    assert len(set(keys.values())) == 3
    # both ops in one function: the second op's constant counts too
    before = _cache.cache_key(uses_both, opts)
    monkeypatch.setattr(module, "s3", make_scaled(5.0))
    assert _cache.cache_key(uses_both, opts) != before


def test_rebinding_a_global_to_another_op_of_the_factory(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    module = sys.modules[__name__]
    for c in (2.0, 3.0, 2.0):
        monkeypatch.setattr(module, "op", make_scaled(c))
        g = srcgrad.grad(uses_op)(X)
        np.testing.assert_allclose(g, 2 * c * c * X, rtol=1e-14)


def test_ops_that_cannot_be_told_apart_are_never_guessed(monkeypatch, tmp_path):
    # two live ops with one fingerprint (they close over objects the fingerprint describes
    # by type only): a cached module is not bound to either, it is compiled again
    class Scale:
        def __init__(self, c):
            self.c = c

    def make(obj):
        @srcgrad.primitive
        def scaled_by(x):
            return obj.c * x

        @scaled_by.defvjp
        def _(g, out, x):
            return g * obj.c

        return scaled_by

    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    module = sys.modules[__name__]
    a, b = make(Scale(2.0)), make(Scale(7.0))
    assert _cache.op_fingerprint(a) == _cache.op_fingerprint(b)
    for chosen, c in ((a, 2.0), (b, 7.0), (a, 2.0)):
        monkeypatch.setattr(module, "op", chosen)
        f = srcgrad.grad(uses_op)
        np.testing.assert_allclose(f(X), 2 * c * c * X, rtol=1e-14)


FACTORY_MODULE = textwrap.dedent("""
    import os

    import numpy as np
    import srcgrad


    def make(c):
        @srcgrad.primitive
        def scaled(x):
            return c * x

        @scaled.defvjp
        def _(g, out, x):
            return g * c

        return scaled


    if os.environ["ORDER"] == "2 then 3":
        s2 = make(2.0)
        s3 = make(3.0)
    else:
        s3 = make(3.0)
        s2 = make(2.0)


    def f(x):
        return np.sum(s2(x) * s3(x) + s3(x))
""")

RUN = ("import json, sys, numpy as np, srcgrad, factory_ops as m; g = srcgrad.grad(m.f); "
       "d = g(np.array([1.0, 2.0])); "
       "print(json.dumps([d.tolist(), g.compile_count, m.s2.name, m.s3.name]))")


def test_a_cached_module_from_a_process_that_named_the_ops_the_other_way(tmp_path):
    (tmp_path / "factory_ops.py").write_text(FACTORY_MODULE)
    from paths import ROOT as root
    results = []
    for order in ("2 then 3", "3 then 2"):
        env = dict(os.environ, ORDER=order, SRCGRAD_CACHE_DIR=str(tmp_path / "cache"),
                   PYTHONPATH=os.pathsep.join([root, str(tmp_path)]))
        out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True,
                             text=True, cwd=str(tmp_path), check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    (g1, count1, a2, a3), (g2, count2, b2, b3) = results
    assert (a2, a3) == (b3, b2)  # each process named the two ops the other way round
    assert count1 == 1 and count2 == 0  # the second process loaded the first one's code
    want = 12.0 * np.array([1.0, 2.0]) + 3.0  # d/dx (2x * 3x + 3x)
    np.testing.assert_allclose(g1, want, rtol=1e-14)
    np.testing.assert_allclose(g2, want, rtol=1e-14)
