"""The stabilizing max of log-softmax and softmax has a zero derivative: its reverse pass is
not generated (reverse.shift_stabilizers). Where the max is used in any other way, or the
shifted values are, its derivative is kept; every gradient here is checked against finite
differences and the tape."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad


def log_softmax_loss(z, y):
    zs = z - np.max(z, axis=1, keepdims=True)
    logp = zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))
    return -np.sum(y * logp)


def softmax_loss(z, y):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return np.sum((p - y) ** 2)


def global_max_logsumexp(z):
    zs = z - np.max(z)
    return np.log(np.sum(np.exp(zs))) - zs[0, 0]  # zs used elsewhere: m stays


def global_max_lse(z):
    m = np.max(z)
    zs = z - m
    return np.sum(zs - np.log(np.sum(np.exp(zs))))


def shifted_values_used_too(z, y):
    zs = z - np.max(z, axis=1, keepdims=True)
    logp = zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))
    return -np.sum(y * logp) + np.sum(zs ** 2)


def sum_over_another_axis(z):
    zs = z - np.max(z, axis=1, keepdims=True)
    return np.sum(zs - np.log(np.sum(np.exp(zs), axis=0, keepdims=True)))


def max_used_twice(z):
    m = np.max(z, axis=1, keepdims=True)
    zs = z - m
    return np.sum(zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))) + np.sum(m)


def exp_used_elsewhere(z):
    zs = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(zs)
    return np.sum(e / np.sum(e, axis=1, keepdims=True)) + np.sum(e)


Z = np.array([[0.3, -1.2, 2.0, 0.5], [1.0, 1.5, -0.4, 0.2], [-2.0, 0.1, 0.7, 0.9]])
Y = np.eye(4)[[2, 0, 3]]

DROPPED = [(log_softmax_loss, (Z, Y)), (softmax_loss, (Z, Y)), (global_max_lse, (Z,))]
KEPT = [(global_max_logsumexp, (Z,)), (shifted_values_used_too, (Z, Y)),
        (sum_over_another_axis, (Z,)), (max_used_twice, (Z,)), (exp_used_elsewhere, (Z,))]


@pytest.mark.parametrize("fn,args", DROPPED + KEPT, ids=lambda v: getattr(v, "__name__", ""))
def test_gradient_is_right(fn, args):
    check_grad(fn, args, 0)


@pytest.mark.parametrize("fn,args", DROPPED, ids=lambda v: getattr(v, "__name__", ""))
def test_the_stabilizer_has_no_reverse_pass(fn, args):
    src = srcgrad.grad(fn, cache=False).source
    assert "np.where(" not in src and "==" not in src, src


@pytest.mark.parametrize("fn,args", KEPT, ids=lambda v: getattr(v, "__name__", ""))
def test_other_uses_keep_the_max_differentiated(fn, args):
    src = srcgrad.grad(fn, cache=False).source
    assert "np.where(" in src, src
