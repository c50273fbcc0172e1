"""What an object's own `__iter__`, `__len__`, `__float__` or `__bool__` reads is guarded like
any value from outside: the methods are inlined. They were called once, at compile time,
and their answer kept: a layer added to a model iterated by `for layer in model` left the
gradient of the old model, in the same process and from the disk cache, without a word."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import protocol_user as U

X = np.random.default_rng(1).normal(size=(2, 3))


def check(g, fn):
    value, grad = g(X)
    np.testing.assert_allclose(value, fn(X), rtol=1e-12)
    np.testing.assert_allclose(grad, finite_differences(fn, (X,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [U.network, U.depth_scaled])
def test_a_layer_added_to_a_model(monkeypatch, fn):
    monkeypatch.setattr(U, "MODEL", U.Sequential(*U.MODEL.layers))
    g = srcgrad.value_and_grad(fn)
    check(g, fn)
    U.MODEL.add(U.Dense(U.RNG.normal(size=(3, 3)) * 0.5))
    check(g, fn)                                  # the same object
    check(srcgrad.value_and_grad(fn), fn)         # a new one (the disk cache)


@pytest.mark.parametrize("fn", [U.bag_number, U.bag_truth, U.bag_choice])
def test_a_bag_that_grows(monkeypatch, fn):
    monkeypatch.setattr(U.BAG, "items", [])
    g = srcgrad.value_and_grad(fn)
    check(g, fn)
    U.BAG.items.append(1.5)
    check(g, fn)
    check(srcgrad.value_and_grad(fn), fn)
