"""A corpus of programs written the way numpy ML and scientific code is usually written
(tests/realistic/): layer functions returning (out, cache), a model class with a params
dict and activation objects, benchmark objectives with call counters, a naive convolution
and max-pool filling preallocated arrays, an LSTM and an RNN storing states into a
preallocated array, and an autograd-style net over a list of (W, b) tuples.

Every differentiated leaf is checked against central finite differences, and against the
tape engine (runtime) where the program runs on Tensors. Programs srcgrad refuses as
written are kept as written and marked xfail(strict=True) with the error.

The generated source of three programs is kept in tests/golden/realistic_*.py:

    SRCGRAD_UPDATE_GOLDEN=1 python -m pytest tests/test_realistic.py   # rewrite them
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import runtime as rt
import srcgrad
from compiler_helpers import (FD_ATOL, FD_RTOL, TAPE_ATOL, TAPE_RTOL, check_golden,
                              finite_differences, golden_path, tree_get, tree_leaves,
                              tree_replace)
from realistic import conv, layers, lstm, model, nn_list, objective



# -- leaf-by-leaf checks ---------------------------------------------------------------------




def _fd(fn, args, index, path):
    def at(value):
        a = list(args)
        a[index] = tree_replace(args[index], path, value)
        return fn(*a)
    return finite_differences(at, [tree_get(args[index], path)], 0)


def _tape(fn, args, indices):
    a = list(args)
    tensors = {}
    for i in indices:
        for path, leaf in tree_leaves(args[i]):
            t = rt.tensor(np.asarray(leaf, dtype=np.float64), requires_grad=True)
            tensors[i, path] = t
            a[i] = tree_replace(a[i], path, t)
    fn(*a).backward()
    return {k: np.asarray(t.grad.data) for k, t in tensors.items()}


def check(fn, args, wrt, *, tape=True, grad=None):
    """srcgrad's gradient of fn w.r.t. args[i] for i in wrt (indices), leaf by leaf, against
    finite differences (and the tape); returns the gradients."""
    g = grad if grad is not None else srcgrad.grad(fn, wrt=wrt if len(wrt) > 1 else wrt[0])
    got = g(*args)
    got = list(got) if len(wrt) > 1 else [got]
    expected_tape = _tape(fn, args, wrt) if tape else None
    for i, gi in zip(wrt, got):
        arg = args[i]
        assert type(gi) is type(arg) or not isinstance(arg, (dict, list, tuple)), \
            (type(gi), type(arg))
        assert [p for p, _ in tree_leaves(gi)] == [p for p, _ in tree_leaves(arg)]
        for path, leaf in tree_leaves(arg):
            gl = tree_get(gi, path)
            assert np.shape(gl) == np.shape(leaf), (i, path)
            np.testing.assert_allclose(gl, _fd(fn, args, i, path), rtol=FD_RTOL,
                                       atol=FD_ATOL, err_msg=f"fd, argument {i} {path}")
            if tape:
                np.testing.assert_allclose(gl, expected_tape[i, path], rtol=TAPE_RTOL,
                                           atol=TAPE_ATOL, err_msg=f"tape, argument {i} {path}")
    return got


rng = np.random.default_rng(2024)


def _classification(N=5, D=4, C=3):
    X = rng.normal(size=(N, D))
    y = rng.integers(0, C, size=N)
    return X, y


# -- 1. layers.py: (out, cache) layer functions, params in a dict -------------------------------

def _layer_params(D=4, Hd=6, C=3):
    return {"W1": 0.3 * rng.normal(size=(D, Hd)), "b1": 0.1 * rng.normal(size=Hd),
            "W2": 0.3 * rng.normal(size=(Hd, C)), "b2": 0.1 * rng.normal(size=C)}


def test_layers_two_layer_loss_params_dict():
    # no tape here: affine_forward's `x_row.dot(w)` on a plain X and a Tensor w is numpy's
    # ndarray.dot, which returns a plain array and drops the tape (see the test below)
    X, y = _classification()
    check(layers.two_layer_loss, [_layer_params(), X, y, 0.1], [0], tape=False)


def test_the_tape_refuses_ndarray_dot_of_a_tensor():
    # affine_forward's `x_row.dot(w)` with a plain X and a Tensor w is numpy's ndarray.dot,
    # which would compute on w's values and lose W1's data term without a word: the tape
    # refuses to hand a tensor on the tape to numpy instead
    X, y = _classification()
    with pytest.raises(TypeError, match="requires grad cannot become a numpy array"):
        check(layers.two_layer_loss, [_layer_params(), X, y, 0.1], [0], tape=True)


def test_layers_two_layer_loss_wrt_input():
    X, y = _classification()
    check(layers.two_layer_loss, [_layer_params(), X, y, 0.0], [1])


def test_layers_affine_forward_on_4d_input():
    # affine_forward flattens an (N, C, H, W) input with x.reshape(N, -1)
    x = rng.normal(size=(2, 2, 3, 2))
    w, b = rng.normal(size=(12, 3)), rng.normal(size=3)

    def loss(x, w, b):
        out, _ = layers.affine_forward(x, w, b)
        return np.sum(out ** 2)

    check(loss, [x, w, b], [0, 1, 2])


# -- 2. model.py: a class with self.params, a config and activation objects ----------------------

def test_model_loss_from_wrt_params():
    net = model.TwoLayerNet(4, 6, 3, reg=0.1, seed=1)
    X, y = _classification()
    # no tape: `scores -= scores.max(...)` modifies in place a value the max needs, which
    # the tape refuses (as torch does)
    gp = check(net.loss_from, [net.params, X, y], [0], tape=False)[0]
    assert list(gp) == ["W1", "b1", "W2", "b2"]


def test_model_loss_method_wrt_input():  # `if y is None:` (model.py:52), tested at run time
    net = model.TwoLayerNet(4, 6, 3, reg=0.1, seed=2)
    X, y = _classification()
    check(net.loss, [X, y], [0], grad=srcgrad.grad(net.loss), tape=False)


def test_model_closure_over_the_net_sees_updated_params():
    net = model.TwoLayerNet(4, 6, 3, reg=0.1, seed=2)
    X, y = _classification()

    def data_loss(X, y):
        return net.loss_from(net.params, X, y)

    g = srcgrad.grad(data_loss)
    check(data_loss, [X, y], [0], grad=g, tape=False)
    # an optimiser step replaces the arrays in net.params; the next call must see them
    for k in net.params:
        net.params[k] = net.params[k] - 0.5
    check(data_loss, [X, y], [0], grad=g, tape=False)


def test_model_sgd_step_decreases_the_loss():
    net = model.TwoLayerNet(4, 6, 3, reg=0.01, seed=3)
    X, y = _classification(N=8)
    g = srcgrad.grad(net.loss_from)
    before = net.loss(X, y)
    for _ in range(5):
        grads = g(net.params, X, y)
        for k in net.params:
            net.params[k] -= 0.5 * grads[k]
    assert net.loss(X, y) < before


# -- 3. objective.py: benchmark classes with fun(self, x, *args) and nfev ------------------------

X_OBJ = np.array([0.3, -0.4, 1.2])

@pytest.mark.parametrize("cls", [
    objective.Rosenbrock,  # these four add with the builtin sum() over an array
    objective.Rastrigin,
    objective.Ackley,
    objective.StyblinskiTang,
    objective.Griewank,
    objective.Levy,
], ids=lambda c: c.__name__)
def test_objective_gradient_and_call_count(cls):
    obj = cls(dimensions=3)
    g = srcgrad.grad(obj.fun)
    for k in range(2):
        x = X_OBJ + 0.1 * k
        np.testing.assert_allclose(g(x, "extra-arg"), finite_differences(cls(3).fun, [x], 0),
                                   rtol=FD_RTOL, atol=FD_ATOL)
    assert obj.nfev == 2


# -- 4. conv.py: naive convolution and max-pool with nested loops -------------------------------

def test_conv_net_loss():
    x = rng.normal(size=(1, 2, 4, 4))
    w = 0.5 * rng.normal(size=(2, 2, 3, 3))
    b = 0.1 * rng.normal(size=2)
    target = rng.normal(size=(1, 2, 2, 2))
    check(conv.conv_net_loss, [w, b, x, target], [0, 1, 2], tape=False)


def test_conv_forward_naive_strided():
    x = rng.normal(size=(2, 1, 5, 5))
    w = rng.normal(size=(2, 1, 3, 3))
    b = rng.normal(size=2)

    def loss(w, b, x):
        out, _ = conv.conv_forward_naive(x, w, b, {"stride": 2, "pad": 0})
        return np.sum(np.sin(out))

    check(loss, [w, b, x], [0, 1, 2], tape=False)


# -- 5. lstm.py: LSTM and RNN storing states into a preallocated array --------------------------

def test_lstm_loss():
    N, T, D, H = 2, 3, 3, 2
    args = [0.5 * rng.normal(size=(D, 4 * H)), 0.5 * rng.normal(size=(H, 4 * H)),
            0.1 * rng.normal(size=4 * H), rng.normal(size=(N, T, D)), rng.normal(size=(N, H)),
            rng.normal(size=(N, T, H))]
    check(lstm.lstm_loss, args, [0, 1, 2, 4], tape=False)


def test_rnn_loss_params_dict():
    params = {"Wxh": 0.5 * rng.normal(size=(4, 3)), "Whh": 0.4 * rng.normal(size=(4, 4)),
              "Why": 0.5 * rng.normal(size=(2, 4)), "bh": 0.1 * rng.normal(size=4),
              "by": 0.1 * rng.normal(size=2)}
    check(lstm.rnn_loss, [params, rng.normal(size=(5, 3)), rng.normal(size=(5, 2))], [0],
          tape=False)


# -- 6. nn_list.py: autograd-style params, a list of (W, b) tuples ------------------------------

def test_nn_list_objective():
    params = nn_list.init_random_params(0.3, [4, 5, 3], rs=np.random.RandomState(1))
    X, y = _classification()
    T = np.eye(3)[y]
    gp = check(nn_list.objective, [params, X, T], [0])[0]
    assert isinstance(gp, list) and all(isinstance(layer, tuple) for layer in gp)


def test_nn_list_three_layers_and_l2_reg():
    params = nn_list.init_random_params(0.3, [3, 4, 4, 2], rs=np.random.RandomState(2))
    X = rng.normal(size=(4, 3))
    T = np.eye(2)[[0, 1, 1, 0]]
    check(lambda p, x, t: nn_list.objective(p, x, t, L2_reg=0.5), [params, X, T], [0])


# -- golden files of the generated source ---------------------------------------------------------

def _golden_two_layer_args():
    X, y = _classification()
    return [_layer_params(), X, y, 0.1]


def _golden_rnn_args():
    params = {"Wxh": 0.5 * rng.normal(size=(4, 3)), "Whh": 0.4 * rng.normal(size=(4, 4)),
              "Why": 0.5 * rng.normal(size=(2, 4)), "bh": 0.1 * rng.normal(size=4),
              "by": 0.1 * rng.normal(size=2)}
    return [params, rng.normal(size=(5, 3)), rng.normal(size=(5, 2))]


def _golden_nn_list_args():
    X, y = _classification()
    return [nn_list.init_random_params(0.3, [4, 5, 3], rs=np.random.RandomState(1)), X,
            np.eye(3)[y]]


GOLDEN = {
    # name: (function, wrt, arguments); structured arguments are compiled at the first call,
    # so the source is read after one
    "realistic_two_layer_loss": (layers.two_layer_loss, 0, _golden_two_layer_args),
    "realistic_rnn_loss": (lstm.rnn_loss, 0, _golden_rnn_args),
    "realistic_nn_list_objective": (nn_list.objective, 0, _golden_nn_list_args),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generated_source_matches_golden_file(name):
    fn, wrt, make_args = GOLDEN[name]
    g = srcgrad.grad(fn, wrt=wrt, cache=False)
    g(*make_args())
    check_golden(name, g.source)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_file_computes_the_gradient(name):
    """A golden file is working code: its entry point, called with the structured argument's
    leaves, agrees with finite differences leaf by leaf."""
    fn, wrt, make_args = GOLDEN[name]
    path = golden_path(name)
    with open(path) as f:
        text = f.read()
    assert text.startswith("# Gradient code generated by srcgrad")
    ns = {}
    exec(compile(text, path, "exec"), ns)
    entry = ns[f"grad_{fn.__name__}"]

    def from_golden(*args):
        bound = inspect.signature(fn).bind(*args)
        bound.apply_defaults()
        a = list(bound.arguments.values())
        return entry(*[leaf for _, leaf in tree_leaves(a[wrt])], *a[wrt + 1:])

    check(fn, make_args(), [wrt], grad=from_golden, tape=False)
