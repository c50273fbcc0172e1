"""What an object's own operators read (`__eq__`, `__lt__`, `__contains__`, `__bool__`,
`__mul__`, `__neg__`, `__abs__`, `__radd__`, a key function of min/max, a dict key's
`__eq__`) is guarded like any value from outside: the methods are inlined. They were
called at compile time and their answer kept: a phase object renamed from "train" to
"eval" left the training gradient, without a word (11 of these programs did; 4 more
stopped with an internal error)."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import operators_user as U

X = np.random.default_rng(1).normal(size=(2, 3)) * 0.7


def rename(name):
    def change(state):
        state["phase"].name = name
    return change


def setitem(key, value):
    def change(state):
        state[key] = value
    return change


CHANGES = {
    "dropout_like": rename("eval"),
    "not_training": rename("eval"),
    "by_level": lambda s: setattr(s["level"], "n", 5),
    "regularized": lambda s: s["cfg"].opts.pop("l2"),
    "phase_in_list": rename("eval"),
    "no_options": lambda s: s["cfg"].opts.clear(),
    "options_and": rename("test"),
    "options_counted": lambda s: s["cfg"].opts.update(l1=1.0, drop=0.5),
    "scaled": lambda s: setattr(s["scale"], "c", -1.5),
    "summed_scales": lambda s: setattr(s["scale"], "c", 4.0),
    "enabled_layers": lambda s: setattr(s["layers"][1], "enabled", False),
    "widest": lambda s: setattr(s["layers"][0], "W", U.RNG.normal(size=(3, 4))),
    "weighted": rename("eval"),
    "phase_position": rename("eval"),
    "default_options": lambda s: setattr(s["opts"], "decay", 0.3),
    "versioned": lambda s: setattr(s["version"], "major", 1),
}


def check(g, fn):
    value, grad = g(X)
    np.testing.assert_allclose(value, fn(X), rtol=1e-12)
    np.testing.assert_allclose(grad, finite_differences(fn, (X,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_an_object_changed_between_calls(monkeypatch, name):
    state = U.fresh_state()
    monkeypatch.setattr(U, "STATE", state)
    fn = getattr(U, name)
    g = srcgrad.value_and_grad(fn)
    for _ in range(3):  # (the general code, then the specialized variant)
        check(g, fn)
    CHANGES[name](state)
    for _ in range(3):
        check(g, fn)                              # the same transformed object
    check(srcgrad.value_and_grad(fn), fn)         # a new one (the disk cache)


def test_an_array_times_an_object_is_refused_at_the_line():
    # numpy calls the object's __rmul__ on every item (an array of objects)
    def loss(x):
        return np.sum(x * U.STATE["scale"])

    with pytest.raises(srcgrad.SrcgradError, match=r"__rmul__ in Python.*every item") as e:
        srcgrad.grad(loss)(X)
    assert "test_operator_protocols.py" in str(e.value)


def test_comparing_lists_of_objects_is_refused():
    def loss(x):
        return np.sum(x) if [U.STATE["phase"]] == [U.TRAIN] else np.sum(x ** 2)

    with pytest.raises(srcgrad.SrcgradError, match="compare the items"):
        srcgrad.grad(loss)(X)
