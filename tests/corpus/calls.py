"""Calls to other user functions (in this module, in another module, nested defs and
closures) from straight-line code, loops and branches."""
import numpy as np

from . import helpers_other_module as hm
from .helpers_other_module import layer, softplus

SCALE = 1.5
OFFSETS = np.linspace(-1.0, 1.0, 20)  # a module-level array, referenced not copied


def bump(x):
    return np.exp(-x * x)


def twice(x):
    return bump(bump(x))


def call_in_loop(x, w, b, n):
    h = x
    for _ in range(n):
        h = layer(h, w, b)
    return np.sum(h)


def call_in_branch(x):
    if x.sum() > 0:
        y = softplus(x)
    else:
        y = hm.square(x)
    return np.sum(y)


def call_chain_other_module(x):
    return np.sum(hm.chain_outer(x))


def call_with_loop_inside(x, n):
    if n > 2:
        y = hm.repeat_tanh(x, n)
    else:
        y = x * n
    return np.sum(y ** 2)


def call_returning_tuple(x):
    m, ss = hm.split_stats(x)
    return m * ss + ss


def call_with_keywords(x):
    y = hm.scaled(x, shift=1.0) + hm.scaled(x, scale=3.0)
    return np.sum(np.sin(y))


def call_with_branch_and_return(x, limit):
    y = hm.clip_norm(x, limit)
    return np.sum(y * np.arange(3.0))


def call_local_helpers(x):
    return np.sum(twice(x) + bump(x * 2.0))


def nested_def_const(x):
    def f(v):
        return np.sin(v) * SCALE
    return np.sum(f(x) + f(x * 2.0))


def nested_def_closure_array(x, w):
    def layer_w(v):
        return np.tanh(v * w)
    return np.sum(layer_w(layer_w(x)))


def nested_def_in_loop(x, n):
    k = 0.5

    def step(v):
        return v + k * np.cos(v)
    y = x
    for _ in range(n):
        y = step(y)
    return np.sum(y)


def nested_def_with_branch(x):
    def act(v):
        if np.sum(v) > 0:
            return np.tanh(v)
        return v * 0.1
    return np.sum(act(x) + act(-2.0 * x))


def nested_def_calls_nested_def(x):
    def inner(v):
        return v * v + 1.0

    def outer(v):
        return np.log(inner(v))
    return np.sum(outer(x) * inner(x))


def nested_def_default_arg(x):
    def affine(v, a=2.0, c=0.5):
        return v * a + c
    return np.sum(affine(x) * affine(x, 3.0) + affine(x, c=1.0))


def module_array_closure(x):
    return np.sum(np.tanh(x * OFFSETS))


def module_constant_in_loop(x, n):
    h = x
    for _ in range(n):
        h = hm.decay(h) + np.sin(h)
    return np.sum(h)


def helper_with_early_return_in_loop(X):
    total = 0.0
    for row in X:
        total = total + np.sum(hm.smooth_step(row))
    return total


def softmax_attention(Q, K):
    total = 0.0
    for q in Q:
        w = hm.softmax(K @ q)
        total = total + np.sum(w * w)
    return total


def make_scaler(k):
    def scaled_sum(x):
        return np.sum(np.sin(x) * k)
    return scaled_sum


def make_affine(W, b):
    def affine_loss(x):
        y = x
        for _ in range(2):
            y = np.tanh(W @ y + b)
        return np.sum(y * y)
    return affine_loss


scaled_sum_3 = make_scaler(3.0)
affine_loss_fixed = make_affine(np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]]),
                                np.array([0.1, -0.2, 0.3]))
