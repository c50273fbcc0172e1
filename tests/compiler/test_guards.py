"""What a gradient reads from outside the function when it is compiled (a global number, a
config dict, a module attribute, an object attribute, a helper function, the defaults of
an inlined function, a builtin's name) is guarded: the next call after a change sees it
(compiled again), in memory and in another process through the disk cache. Arrays
reached through a dict, list or attribute are read at every call, like arrays read by
name (tests/test_live_globals.py)."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import guarded_helper as helper
import srcgrad
from compiler_helpers import check_grad

from paths import ROOT  # noqa: E402  (tests/paths.py)
THIS = sys.modules[__name__]
rng = np.random.default_rng(11)

SCALE = 1.5
CFG = {"s": 2.0, "act": np.tanh, "depth": 2}
LAYERS = [(np.linspace(0.5, 1.0, 4), 0.5), (np.linspace(-1.0, 1.0, 4), -0.25)]
NAN = float("nan")
DEFAULT_S = [1.0]  # a default argument, changed in place by a test


class Model:
    def __init__(self):
        self.k = 0.5
        self.W = np.linspace(1.0, 2.0, 4)
        self.act = np.sin


model = Model()


def reads_scalar(x):
    return np.sum(np.sin(x)) * SCALE


def reads_dict(x):
    y = x
    for _ in range(CFG["depth"]):
        y = CFG["act"](y * CFG["s"])
    return np.sum(y)


def reads_module(x):
    return np.sum(helper.f(x) * helper.PARAMS["W"]) + helper.PARAMS["b"] * np.sum(x)


def reads_object(x):
    return model.k * np.sum(model.act(x) * model.W)


def reads_list(x):
    total = 0.0
    for W, c in LAYERS:
        total = total + c * np.sum(np.tanh(W * x))
    return total


def helper_fn(x):
    return np.sin(x)


def reads_function(x):
    return np.sum(helper_fn(x) * x)


def with_default(x, scale=[1.0]):
    return x * scale[0]


def reads_default(x):
    return np.sum(with_default(x) ** 2)


def reads_builtin(x):
    return abs(np.sum(x * x) - 1.0)


def reads_nan(x):
    return np.sum(x * x) if NAN != NAN else np.sum(x)


def _grad(fn):
    return srcgrad.grad(fn, cache=False)


def _same_then(fn, change, n=4):
    """The gradient is right; unchanged values compile nothing; after `change`, right
    again (compiled anew)."""
    g = _grad(fn)
    x = rng.normal(size=n)
    for _ in range(3):
        check_grad(fn, (x,), compiled=g)
    assert g.compile_count == 1, "a guard failed although nothing changed"
    change()
    check_grad(fn, (x,), compiled=g)
    return g


def test_global_number(monkeypatch):
    g = _same_then(reads_scalar, lambda: monkeypatch.setattr(THIS, "SCALE", -3.0))
    assert g.compile_count == 2
    monkeypatch.setattr(THIS, "SCALE", 3)  # same value, another type: guarded too
    check_grad(reads_scalar, (np.ones(4),), compiled=g)


def test_dict_values_and_functions_in_it(monkeypatch):
    monkeypatch.setattr(THIS, "CFG", dict(CFG))
    _same_then(reads_dict, lambda: CFG.update(s=0.5))
    _same_then(reads_dict, lambda: CFG.update(act=np.sin, depth=3))
    _same_then(reads_dict, lambda: monkeypatch.setattr(THIS, "CFG", dict(CFG, depth=1)))


def test_module_attributes(monkeypatch):
    monkeypatch.setattr(helper, "PARAMS", {"W": helper.PARAMS["W"].copy(), "b": 0.25})
    _same_then(reads_module, lambda: monkeypatch.setattr(helper, "SCALE", 5.0))
    _same_then(reads_module, lambda: monkeypatch.setattr(helper, "f", helper.g))
    _same_then(reads_module, lambda: helper.PARAMS.update(b=-1.0))
    g = _same_then(reads_module, lambda: helper.PARAMS["W"].__setitem__(slice(None), 3.0))
    assert g.compile_count == 1  # an array is read at the call: nothing to compile
    _same_then(reads_module, lambda: helper.PARAMS.update(W=rng.normal(size=4)))


def test_object_attributes(monkeypatch):
    monkeypatch.setattr(THIS, "model", Model())
    _same_then(reads_object, lambda: setattr(model, "k", -2.0))
    _same_then(reads_object, lambda: setattr(model, "act", np.cos))
    g = _same_then(reads_object, lambda: setattr(model, "W", rng.normal(size=4)))
    assert g.compile_count == 1
    _same_then(reads_object, lambda: monkeypatch.setattr(THIS, "model", Model()))


def test_list_of_pairs(monkeypatch):
    layers = [(W.copy(), c) for W, c in LAYERS]
    monkeypatch.setattr(THIS, "LAYERS", layers)
    g = _same_then(reads_list, lambda: layers[0][0].__setitem__(slice(None), -2.0))
    assert g.compile_count == 1  # the arrays in the list are read at every call
    _same_then(reads_list, lambda: layers.__setitem__(1, (layers[1][0], 4.0)))
    _same_then(reads_list, lambda: layers.append((np.ones(4), 1.0)))


def test_helper_function_rebound(monkeypatch):
    _same_then(reads_function, lambda: monkeypatch.setattr(THIS, "helper_fn", np.cos))


def test_defaults_of_an_inlined_function():
    try:
        _same_then(reads_default, lambda: with_default.__defaults__[0].__setitem__(0, 3.0))
    finally:
        with_default.__defaults__[0][0] = 1.0


def test_builtin_hidden_by_a_global(monkeypatch):
    g = _grad(reads_builtin)
    x = rng.normal(size=4)
    check_grad(reads_builtin, (x,), compiled=g)
    monkeypatch.setattr(THIS, "abs", lambda v: v * v, raising=False)
    check_grad(reads_builtin, (x,), compiled=g)  # the new `abs` is what it now calls
    assert g.compile_count == 2


def test_nan_global_does_not_recompile():
    g = _grad(reads_nan)
    x = rng.normal(size=4)
    for _ in range(3):
        check_grad(reads_nan, (x,), compiled=g)
    assert g.compile_count == 1


def test_unchanged_guards_are_cheap():
    """A guard is a few comparisons in generated Python, not a walk over the values."""
    g = _grad(reads_dict)
    g(np.ones(3))
    assert g._check is not None and g._check()
    assert "_matches" not in g._check.__code__.co_names


# -- the disk cache, across processes -------------------------------------------------------

_MODULE = '''
import os
import numpy as np
import srcgrad
import {lib}

CFG = {{"s": float(os.environ["SCALE"])}}


def loss(x):
    return np.sum({lib}.f(x)) * CFG["s"]


g = srcgrad.grad(loss)
x = np.array([0.3, -0.7, 1.1])
print(repr(g(x).tolist()), g.compile_count)
'''


def _run(tmp, scale, cache):
    env = dict(os.environ, SCALE=str(scale), SRCGRAD_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join([str(tmp), ROOT]))
    out = subprocess.run([sys.executable, str(tmp / "main_prog.py")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    values, count = out.stdout.split("]")
    return np.array(eval(values + "]")), int(count)


def test_disk_cache_checks_values_and_functions_read(tmp_path, _private_srcgrad_cache):
    lib = "mylib_guarded"
    (tmp_path / f"{lib}.py").write_text("import numpy as np\n\ndef f(x):\n    return x ** 2\n")
    (tmp_path / "main_prog.py").write_text(textwrap.dedent(_MODULE.format(lib=lib)))
    x = np.array([0.3, -0.7, 1.1])
    got, count = _run(tmp_path, 2.0, _private_srcgrad_cache)
    np.testing.assert_allclose(got, 2.0 * 2 * x)
    assert count == 1
    got, count = _run(tmp_path, 2.0, _private_srcgrad_cache)
    np.testing.assert_allclose(got, 2.0 * 2 * x)
    assert count == 0  # from the disk cache
    got, count = _run(tmp_path, 3.0, _private_srcgrad_cache)  # same source, other value
    np.testing.assert_allclose(got, 3.0 * 2 * x)
    assert count == 1
    # the helper module edited: `lib.f` is reached as an attribute, not by name
    (tmp_path / f"{lib}.py").write_text("import numpy as np\n\ndef f(x):\n    return x ** 3\n")
    got, count = _run(tmp_path, 3.0, _private_srcgrad_cache)
    np.testing.assert_allclose(got, 3.0 * 3 * x ** 2)
    assert count == 1


SHARED = np.array([1.0, 2.0, 3.0, 4.0])
BY_NAME = {"W": SHARED}
IN_LIST = [SHARED]


def reads_one_array_two_ways(x):
    s = np.sum(BY_NAME["W"] * x)
    for w in IN_LIST:
        s = s + np.sum(w * x * x)
    return s


def test_one_array_at_two_paths(monkeypatch):
    """Generated code reads an array through one path; found at two, it is read through
    the first for both, so rebinding either one must compile again."""
    monkeypatch.setattr(THIS, "BY_NAME", dict(BY_NAME))
    _same_then(reads_one_array_two_ways,
               lambda: BY_NAME.update(W=np.array([10.0, 20.0, 30.0, 40.0])))


def _scaled(w, x, s=1.0):
    return np.sum(w * x * x) * s


PARTIAL = functools.partial(_scaled, np.linspace(1.0, 2.0, 4), s=2.0)


class Net:
    def __init__(self):
        self.w = np.linspace(0.5, 1.0, 4)

    def __call__(self, x, s=DEFAULT_S):
        return np.sum(self.w * np.sin(x)) * s[0]

    def helper(self, x, s=DEFAULT_S):
        return np.sum(np.cos(x)) * s[0]


NET = Net()
FLOAT_KEYS = {1.5: np.linspace(1.0, 2.0, 4)}
ORDERED = {"a": 1.0, "b": 3.0}


def calls_partial(x):
    return PARTIAL(x)


def calls_object(x):
    return NET(x) + NET.helper(x)


def reads_float_key(x):
    return np.sum(FLOAT_KEYS[1.5] * x)


def reads_first_key(x):
    first = list(ORDERED)[0]
    return ORDERED[first] * np.sum(x * x)


def test_partial_arguments_are_guarded_or_read_at_every_call():
    g = _same_then(calls_partial, lambda: PARTIAL.args[0].__setitem__(slice(None), 3.0))
    assert g.compile_count == 1
    _same_then(calls_partial, lambda: PARTIAL.keywords.__setitem__("s", 5.0))


def test_callable_objects_and_method_defaults(monkeypatch):
    _same_then(calls_object, lambda: DEFAULT_S.__setitem__(0, 4.0))
    _same_then(calls_object, lambda: monkeypatch.setattr(
        Net, "__call__", lambda self, x: np.sum(np.tanh(x))))


def test_float_keys_and_key_order(monkeypatch):
    _same_then(reads_float_key, lambda: FLOAT_KEYS[1.5].__setitem__(slice(None), -2.0))
    monkeypatch.setattr(THIS, "ORDERED", dict(ORDERED))
    _same_then(reads_first_key, lambda: (ORDERED.pop("a"), ORDERED.update(a=1.0)))


# -- values equal under == that compute differently: a zero's sign -------------------------

ZERO = 0.0
ZEROS = {"f": 0.0, "list": [0.0, 1.0], "np": np.float64(0.0), "set": {0.0}}


def reads_zero(x):  # x < 0: arctan2(+0.0, x) = pi, arctan2(-0.0, x) = -pi
    return np.sum(np.arctan2(ZERO, x) * x)


def reads_zeros(x):
    total = np.sum(np.arctan2(ZEROS["f"], x) * x) + np.sum(np.arctan2(ZEROS["np"], x) * x)
    total = total + np.sum(np.arctan2(ZEROS["list"][0], x) * x)
    for c in ZEROS["set"]:
        total = total + np.sum(np.arctan2(c, x) * x)
    return total


@pytest.mark.parametrize("key", [None, "f", "list", "np", "set"])
def test_a_zero_whose_sign_changes_is_a_change(monkeypatch, key):
    """0.0 == -0.0, but the gradient of arctan2(c, x) * x at x < 0 is +-pi: a guard that
    compared with == alone kept the first call's gradient without a word."""
    monkeypatch.setattr(THIS, "ZEROS", {k: (v.copy() if hasattr(v, "copy") else v)
                                        for k, v in ZEROS.items()})
    fn = reads_zero if key is None else reads_zeros
    g = _grad(fn)
    x = -rng.uniform(0.5, 2.0, size=4)
    check_grad(fn, (x,), compiled=g)
    if key is None:
        monkeypatch.setattr(THIS, "ZERO", -0.0)
    elif key == "list":
        ZEROS["list"][0] = -0.0
    else:
        ZEROS[key] = {"f": -0.0, "np": np.float64(-0.0), "set": {-0.0}}[key]
    before = g.compile_count
    check_grad(fn, (x,), compiled=g)
    assert g.compile_count == before + 1
    check_grad(fn, (x,), compiled=g)  # the new sign is kept: nothing compiled again
    assert g.compile_count == before + 1
