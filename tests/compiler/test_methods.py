"""Methods and other callables, written as people write them: `grad(model.loss)`,
`@srcgrad.grad` on a method, `self.helper(x)`, `self.W` and `self.cfg["lr"]` reads,
class attributes, name-mangled attributes, callable objects, staticmethods,
classmethods and functools.partial. Each gradient is checked against the tape and
finite differences; attributes changed between calls are seen by the next call."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad
from modules_user import Linear, Scaled, Sequential, Tanh

rng = np.random.default_rng(5)


class Activation:
    def __init__(self, slope):
        self.slope = slope

    def __call__(self, z):
        return np.tanh(z) + self.slope * z


class Dense:
    scale = 0.5  # a class attribute

    def __init__(self, n_in, n_out, act):
        self.W = rng.normal(size=(n_in, n_out))
        self.b = np.zeros(n_out)
        self.act = act
        self.cfg = {"l2": 1e-2}
        self.__eps = 1e-3  # name-mangled: _Dense__eps

    def forward(self, x):
        return self.act(x @ self.W + self.b) * Dense.scale

    def penalty(self):
        return self.cfg["l2"] * np.sum(self.W ** 2) + self.__eps

    def loss(self, x, y):
        out = self.forward(x)
        return np.mean((out - y) ** 2) + self.penalty()

    def loss_wrt_weights(self, W, x, y):
        return np.mean((self.act(x @ W + self.b) * self.scale - y) ** 2)

    @staticmethod
    def huber(r, delta=1.0):
        return np.where(np.abs(r) < delta, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta))

    @classmethod
    def double(cls, z):
        return 2.0 * z * cls.scale

    def robust(self, x, y):
        r = self.forward(x) - y
        return np.sum(Dense.huber(r)) + np.sum(self.double(x))

    @srcgrad.grad(wrt="x", cache=False)
    def dloss_dx(self, x, y):
        return self.loss(x, y)


X = rng.normal(size=(5, 3))
Y = rng.normal(size=(5, 2))


@pytest.fixture
def layer():
    return Dense(3, 2, Activation(0.1))


@pytest.mark.parametrize("wrt", [0, "y", ("x", "y")])
def test_grad_of_a_bound_method(layer, wrt):
    check_grad(layer.loss, (X, Y), wrt, compiled=srcgrad.grad(layer.loss, wrt=wrt,
                                                              cache=False))


def test_weights_as_the_argument(layer):
    check_grad(layer.loss_wrt_weights, (layer.W, X, Y))


def test_staticmethods_and_classmethods(layer):
    check_grad(layer.robust, (X, Y), (0, 1))


def test_decorated_method(layer):
    got = layer.dloss_dx(X, Y)
    check_grad(layer.loss, (X, Y), compiled=lambda x, y: got)
    assert layer.dloss_dx is layer.dloss_dx  # one transformation per object


def test_decorated_method_with_respect_to_self_is_refused():
    class Bad:
        @srcgrad.grad(cache=False)
        def f(self, x):
            return np.sum(x)

    with pytest.raises(srcgrad.SrcgradError, match="self"):
        Bad().f


def test_attributes_changed_between_calls(layer):
    g = srcgrad.grad(layer.loss, cache=False)
    check_grad(layer.loss, (X, Y), compiled=g)
    layer.W = rng.normal(size=(3, 2))  # an array: read at every call
    check_grad(layer.loss, (X, Y), compiled=g)
    assert g.compile_count == 1
    layer.act.slope = -0.3  # a number: guarded, compiled again
    layer.cfg["l2"] = 0.5
    check_grad(layer.loss, (X, Y), compiled=g)
    assert g.compile_count == 2
    layer.act = np.sin
    check_grad(layer.loss, (X, Y), compiled=g)
    Dense.scale = 2.0
    try:
        check_grad(layer.loss, (X, Y), compiled=g)
    finally:
        Dense.scale = 0.5


def test_two_objects_two_gradients():
    a, b = Dense(3, 2, Activation(0.1)), Dense(3, 2, np.sin)
    ga, gb = srcgrad.grad(a.loss, cache=False), srcgrad.grad(b.loss, cache=False)
    for _ in range(2):
        check_grad(a.loss, (X, Y), compiled=ga)
        check_grad(b.loss, (X, Y), compiled=gb)


def weighted(w, z):
    return np.sum(w * np.cos(z))


def test_partial_and_callable_objects():
    act = Activation(0.2)
    part = functools.partial(weighted, np.linspace(0.5, 1.5, 3))

    def f(z):
        return np.sum(act(z)) + part(z=z)

    check_grad(f, (rng.normal(size=3),))


def test_methods_through_the_disk_cache(layer, _private_srcgrad_cache):
    g1 = srcgrad.grad(layer.loss)
    check_grad(layer.loss, (X, Y), compiled=g1)
    other = Dense(3, 2, Activation(0.7))  # same code, other values: must not reuse them
    g2 = srcgrad.grad(other.loss)
    check_grad(other.loss, (X, Y), compiled=g2)
    assert g2.compile_count == 1
    same = Dense(3, 2, Activation(0.7))
    g3 = srcgrad.grad(same.loss)
    check_grad(same.loss, (X, Y), compiled=g3)
    assert g3.compile_count == 0  # the values the last build saw: its module is reused


# -- lambdas -------------------------------------------------------------------------------------

def test_lambdas():
    w = rng.normal(size=3)
    f = lambda x: np.sum(np.sin(x) * w)  # noqa: E731
    check_grad(f, (rng.normal(size=3),))
    g = srcgrad.grad(lambda a, b: np.sum(a * b ** 2), wrt=1, cache=False)
    a, b = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(g(a, b), 2 * a * b)
    assert "def grad_lambda(a, b):" in g.source


def lambda_inside(x, k=2.0):
    sq = lambda v, p=k: v ** p  # noqa: E731
    acts = [np.tanh, lambda v: v * np.exp(-v)]
    total = np.sum(sq(x))
    for act in acts:
        total = total + np.sum(act(x))
    return total


def test_lambdas_inside_the_function():
    check_grad(lambda_inside, (rng.normal(size=4),))


class _Decorated:
    def __init__(self):
        self.W = np.array([1.0, -2.0, 0.5])

    @srcgrad.grad(wrt=1)
    def dx(self, x, y):
        return np.sum(self.W * np.sin(x) * y)

    @srcgrad.grad(wrt="y")
    def dy(self, x, y):
        return np.sum(self.W * np.sin(x) * y)

    @srcgrad.grad
    def of_self(self, x, y):
        return np.sum(self.W * x * y)


def test_wrt_of_a_decorated_method_counts_self_first():
    """As README says: `wrt` counts the parameters as the def writes them, `self` first,
    and the default wrt=0 (`self`) is refused with what to write instead."""
    m = _Decorated()
    x, y = np.array([0.3, -0.7, 1.1]), np.array([2.0, 0.5, -1.0])
    np.testing.assert_allclose(m.dx(x, y), m.W * np.cos(x) * y, rtol=1e-12)
    np.testing.assert_allclose(m.dy(x, y), m.W * np.sin(x), rtol=1e-12)
    with pytest.raises(srcgrad.SrcgradError, match="with respect to `self`.*wrt=1"):
        m.of_self(x, y)


# -- PyTorch-style modules: a base class's __call__ entered again for each submodule, and
# super() in a method (both were refused: "recursive call", and super() run as written)

NET = Sequential(Sequential(Linear(3, 4), Tanh()), Sequential(Scaled(4, 2, 1.5), Tanh()))


def module_loss(x):
    return np.sum(NET(x) ** 2)


class TreeNode:
    def __init__(self, w, kids=()):
        self.w, self.kids = w, list(kids)

    def value(self, x):
        out = np.sum(np.sin(self.w * x))
        for k in self.kids:
            out = out + k.value(x)  # the same method, for another node
        return out


TREE = TreeNode(0.5, [TreeNode(1.5, [TreeNode(2.0)]), TreeNode(-1.0)])


def tree_loss(x):
    return TREE.value(x)


class Halving:
    def f(self, x, n):
        return x if n <= 0 else self.f(x * 0.5, n - 1)  # the same object: recursion


HALVING = Halving()


def recursive_loss(x):
    return np.sum(HALVING.f(x, 3))


@pytest.mark.parametrize("fn", [module_loss, tree_loss])
def test_a_method_entered_again_for_another_object(fn):
    check_grad(fn, (rng.normal(size=3),))


def test_a_method_entered_again_for_the_same_object_is_recursion():
    with pytest.raises(srcgrad.SrcgradError, match="recursive call to 'f'"):
        srcgrad.grad(recursive_loss)(rng.normal(size=3))


def test_super_finds_the_base_method_and_sees_it_replaced(monkeypatch):
    x = rng.normal(size=3)
    g = srcgrad.grad(module_loss, cache=False)
    check_grad(module_loss, (x,), compiled=g)

    def forward(self, x):
        return np.sin(x @ self.W) + self.b

    monkeypatch.setattr(Linear, "forward", forward)  # what Scaled's super() now finds
    check_grad(module_loss, (x,), compiled=g)
    assert g.compile_count == 2
