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
    "phase_position": rename("eval"),
    "default_options": lambda s: setattr(s["opts"], "decay", 0.3),
    "versioned": lambda s: setattr(s["version"], "major", 1),
    "accumulated": lambda s: setattr(s["acc"], "scale", -2.0),
    "feature_on": lambda s: U.ENABLED.clear(),
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


@pytest.mark.parametrize("fn", [U.position_of_train, U.lenient_in_strict])
def test_a_container_asks_its_item_first(monkeypatch, fn):
    # list.index and `in` call item.__eq__(probe), not probe.__eq__(item): with two
    # classes whose __eq__ disagree, the other order took the other branch at every call
    monkeypatch.setattr(U, "STATE", U.fresh_state())
    g = srcgrad.value_and_grad(fn)
    for _ in range(3):
        check(g, fn)


@pytest.mark.parametrize("fn", [U.keyed_by_objects, U.in_a_set_of_objects, U.weighted])
def test_a_comparison_reading_an_object_with_no_path_is_refused(monkeypatch, fn):
    # a dict's keys and a set's items are found by no name: what their __eq__ reads could
    # not be checked at the next call (renaming a key kept the old gradient)
    monkeypatch.setattr(U, "STATE", U.fresh_state())
    with pytest.raises(srcgrad.SrcgradError, match="cannot find again") as e:
        srcgrad.grad(fn)(X)
    assert "operators_user.py" in str(e.value)


def test_an_object_known_by_identity_is_not_loaded_from_the_disk_cache(monkeypatch):
    # `mode is TRAIN` of sentinels: another process's TRAIN is another object, so the
    # module compiled for it was loaded for EVAL (each test has its own cache directory)
    fn = U.by_sentinel
    for mode in (U.SENTINEL_TRAIN, U.SENTINEL_EVAL, U.SENTINEL_TRAIN):
        monkeypatch.setitem(U.SENTINEL, "mode", mode)
        check(srcgrad.value_and_grad(fn), fn)


def test_a_set_of_pairs_changed_in_place(monkeypatch):
    monkeypatch.setattr(U, "PAIRS", {(0, 1)})
    g = srcgrad.value_and_grad(U.in_a_set_of_pairs)
    for _ in range(3):
        check(g, U.in_a_set_of_pairs)
    U.PAIRS.add((1, 2))
    for _ in range(3):
        check(g, U.in_a_set_of_pairs)


def test_an_object_argument_compared_with_a_global_is_refused_at_the_line():
    class Net:
        def __init__(self, p):
            self.p = p

        def __call__(self, x):
            return np.sum(x)

        def __eq__(self, other):
            return self.p == other.p

        __hash__ = object.__hash__

    n1 = Net(2.0)

    def loss(x, net):
        return np.sum(x ** 2) if net == n1 else np.sum(x ** 3)

    with pytest.raises(srcgrad.SrcgradError, match="Net object") as e:
        srcgrad.grad(loss)(X, n1)
    assert "test_operator_protocols.py" in str(e.value)


def test_an_object_made_when_the_function_runs_is_refused_in_an_op():
    # `t = Scale(2.0)` runs as written: the op took it for a number, and the gradient
    # used its __rmul__ where the value used its __mul__
    def loss(x):
        s = U.Scale(2.0)
        return np.sum(s * x)

    def negated(x):
        s = -U.STATE["scale"]  # (__neg__ makes a new Scale when the function runs)
        return np.sum(s * x)

    for fn in (loss, negated):
        with pytest.raises(srcgrad.SrcgradError, match="Scale object made when the "
                                                       "function runs"):
            srcgrad.grad(fn)(X)


class _Layer:
    def __init__(self, W):
        self.W = W

    def __matmul__(self, h):
        return np.tanh(h @ self.W)


def test_attributes_set_by_setattr_vars_and_dict_are_refused_when_read():
    # setattr(lay, "W", W), lay.__dict__["W"] = W and vars(lay).update(W=W) run as
    # written and change lay.W; its read at compile time was kept (a zero gradient)
    lay = _Layer(np.eye(3))
    cfg = type("Cfg", (), {"p": 2.0})()

    def by_setattr(W, x):
        setattr(lay, "W", W)
        return np.sum(lay @ x)

    def by_dict(W, x):
        lay.__dict__["W"] = W
        return np.sum(lay @ x)

    def by_vars(W, x):
        vars(lay).update(W=W)
        return np.sum(lay @ x)

    def power(x, p):
        setattr(cfg, "p", p)
        return np.sum(x ** cfg.p)

    for fn, args in ((by_setattr, (np.eye(3), X)), (by_dict, (np.eye(3), X)),
                     (by_vars, (np.eye(3), X)), (power, (X, 3.0))):
        with pytest.raises(srcgrad.SrcgradError, match="runs as written changes"):
            srcgrad.grad(fn)(*args)
