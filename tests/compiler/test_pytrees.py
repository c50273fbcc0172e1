"""Structured arguments (srcgrad.pytree): dicts, lists, tuples and namedtuples of arrays and
numbers as differentiated (and plain) arguments; the gradient has the argument's structure.
Every gradient is checked leaf by leaf against central finite differences, and against the
tape engine where the function runs on Tensors."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import runtime as rt
import srcgrad
from compiler_helpers import (FD_ATOL, FD_RTOL, TAPE_ATOL, TAPE_RTOL, finite_differences,
                              tree_get, tree_leaves, tree_replace)

Layer = collections.namedtuple("Layer", ["W", "b"])


# -- helpers: structures leaf by leaf ------------------------------------------------------




def fd_tree(fn, args, index):
    """Central differences of scalar fn(*args) w.r.t. every leaf of args[index]: a
    {path: gradient} dict (a float leaf gets a float)."""
    out = {}
    for path, leaf in tree_leaves(args[index]):
        def at(value, path=path):
            a = list(args)
            a[index] = tree_replace(args[index], path, value)
            return fn(*a)

        out[path] = finite_differences(at, [leaf], 0)
    return out


def tape_tree(fn, args, index):
    """The tape engine's gradients of the unmodified fn w.r.t. every leaf of args[index]."""
    tensors = {}
    tree = args[index]
    for path, leaf in tree_leaves(tree):
        tensors[path] = rt.tensor(np.asarray(leaf, dtype=np.float64), requires_grad=True)
        tree = tree_replace(tree, path, tensors[path])
    a = list(args)
    a[index] = tree
    fn(*a).backward()
    return {p: np.asarray(t.grad.data) for p, t in tensors.items()}


def same_structure(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same_structure(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_structure(x, y)


def check_tree(fn, args, index, grads, tape=True):
    """`grads` (srcgrad's gradient of args[index]) has the argument's structure and agrees
    with finite differences (and the tape) leaf by leaf."""
    arg = args[index]
    assert [p for p, _ in tree_leaves(grads)] == [p for p, _ in tree_leaves(arg)]
    if isinstance(arg, (dict, list, tuple)):
        assert type(grads) is type(arg)
    fd = fd_tree(fn, args, index)
    tp = tape_tree(fn, args, index) if tape else None
    for path, g in tree_leaves(grads):
        leaf = tree_get(arg, path)
        assert np.shape(g) == np.shape(leaf), path
        np.testing.assert_allclose(g, fd[path], rtol=FD_RTOL, atol=FD_ATOL, err_msg=str(path))
        if tp is not None:
            np.testing.assert_allclose(g, tp[path], rtol=TAPE_RTOL, atol=TAPE_ATOL,
                                       err_msg=str(path))


# -- user functions ------------------------------------------------------------------------

def mlp_dict(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


def mlp_layers(layers, X, y):
    h = X
    for W, b in layers[:-1]:
        h = np.tanh(h @ W + b)
    W, b = layers[-1]
    return np.mean((h @ W + b - y) ** 2)


def mlp_named(layer, X):
    return np.sum(np.tanh(X @ layer.W + layer.b) ** 2)


def nested(p, x):
    enc = np.sin(x @ p["enc"]["W"])
    dec = enc @ p["dec"]["W"] + p["dec"]["b"]
    return np.sum(dec ** 2) * p["scale"]


def with_aux(params, X, y):
    pred = X @ params["W"] + params["b"]
    loss = np.mean((pred - y) ** 2)
    return loss, {"pred": pred, "n": 3}


def normalized(x, cfg):
    eps = cfg.get("eps", 1e-5)
    for _ in range(cfg["steps"]):
        x = x / np.sqrt(np.sum(x * x) + eps)
    if cfg["act"] == "tanh":
        x = np.tanh(x)
    return np.sum(x * cfg["w"])


def _data(rng, n=5, d=3, k=4):
    return rng.normal(size=(n, d)), rng.normal(size=(n, 1))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# -- tests ---------------------------------------------------------------------------------

def test_dict_of_parameters(rng):
    X, y = _data(rng)
    params = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=4),
              "W2": rng.normal(size=(4, 1)), "b2": rng.normal(size=1)}
    g = srcgrad.grad(mlp_dict)
    grads = g(params, X, y)
    check_tree(mlp_dict, (params, X, y), 0, grads)
    src = g.source
    assert "def grad_mlp_dict(params_W1, params_b1, params_W2, params_b2, X, y):" in src
    assert "dparams_W1" in src and "return {'W1': " in src


def test_list_of_layer_pairs(rng):
    X, y = _data(rng)
    layers = [(rng.normal(size=(3, 4)), rng.normal(size=4)),
              (rng.normal(size=(4, 4)), rng.normal(size=4)),
              (rng.normal(size=(4, 1)), rng.normal(size=1))]
    grads = srcgrad.grad(mlp_layers)(layers, X, y)
    assert isinstance(grads, list) and all(type(p) is tuple for p in grads)
    check_tree(mlp_layers, (layers, X, y), 0, grads)


def test_value_and_grad_of_a_structure(rng):
    X, y = _data(rng)
    layers = [[rng.normal(size=(3, 2)), rng.normal(size=2)],
              [rng.normal(size=(2, 1)), rng.normal(size=1)]]
    vg = srcgrad.value_and_grad(mlp_layers)
    value, grads = vg(layers, X, y)
    np.testing.assert_allclose(value, mlp_layers(layers, X, y), rtol=1e-12)
    check_tree(mlp_layers, (layers, X, y), 0, grads)
    assert "layers_0_0" in vg.source and "dlayers_1_1" in vg.source


def test_namedtuple_gradient_is_the_namedtuple(rng):
    X = rng.normal(size=(5, 3))
    layer = Layer(rng.normal(size=(3, 2)), rng.normal(size=2))
    grads = srcgrad.grad(mlp_named)(layer, X)
    assert type(grads) is Layer
    check_tree(mlp_named, (layer, X), 0, grads)
    value, grads = srcgrad.value_and_grad(mlp_named)(layer, X)
    assert type(grads) is Layer
    np.testing.assert_allclose(value, mlp_named(layer, X), rtol=1e-12)
    check_tree(mlp_named, (layer, X), 0, grads)


def test_namedtuples_inside_a_list(rng):
    def f(layers, x):
        for layer in layers:
            x = np.tanh(x @ layer.W + layer.b)
        return np.sum(x)

    X = rng.normal(size=(4, 3))
    layers = [Layer(rng.normal(size=(3, 3)), rng.normal(size=3)) for _ in range(2)]
    grads = srcgrad.grad(f)(layers, X)
    assert all(type(p) is Layer for p in grads)
    check_tree(f, (layers, X), 0, grads)


def test_nested_dicts_and_a_float_leaf(rng):
    x = rng.normal(size=(4, 3))
    p = {"enc": {"W": rng.normal(size=(3, 2))},
         "dec": {"W": rng.normal(size=(2, 2)), "b": rng.normal(size=2)},
         "scale": 0.7}
    g = srcgrad.grad(nested)
    grads = g(p, x)
    assert np.ndim(grads["scale"]) == 0
    check_tree(nested, (p, x), 0, grads)
    assert "p_enc_W" in g.source and "dp_dec_b" in g.source


def test_float_and_int_leaves_are_differentiated(rng):
    def f(p):
        return p["a"] * p["a"] * p["k"] + np.sum(np.exp(p["w"]))

    p = {"a": 1.5, "k": 3, "w": rng.normal(size=3)}
    grads = srcgrad.grad(f)(p)
    check_tree(f, (p,), 0, grads, tape=False)
    np.testing.assert_allclose(grads["k"], 1.5 ** 2, rtol=1e-12)


def test_mixed_wrt_structure_and_array(rng):
    X, y = _data(rng)
    params = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=4),
              "W2": rng.normal(size=(4, 1)), "b2": rng.normal(size=1)}
    gp, gX = srcgrad.grad(mlp_dict, wrt=(0, "X"))(params, X, y)
    check_tree(mlp_dict, (params, X, y), 0, gp)
    check_tree(mlp_dict, (params, X, y), 1, gX)
    # the structure only as the second wrt, the array first
    gX2, gp2 = srcgrad.grad(mlp_dict, wrt=(1, 0))(params, X, y)
    np.testing.assert_allclose(gX2, gX, rtol=1e-12)
    for k in params:
        np.testing.assert_allclose(gp2[k], gp[k], rtol=1e-12)


def test_has_aux_with_a_structure(rng):
    X, y = _data(rng)
    params = {"W": rng.normal(size=(3, 1)), "b": rng.normal(size=1)}
    grads, aux = srcgrad.grad(with_aux, has_aux=True)(params, X, y)
    np.testing.assert_allclose(aux["pred"], X @ params["W"] + params["b"], rtol=1e-12)
    assert aux["n"] == 3
    loss_only = lambda p, X, y: with_aux(p, X, y)[0]  # noqa: E731
    check_tree(loss_only, (params, X, y), 0, grads)
    (value, aux2), grads2 = srcgrad.value_and_grad(with_aux, has_aux=True)(params, X, y)
    np.testing.assert_allclose(value, loss_only(params, X, y), rtol=1e-12)
    for k in params:
        np.testing.assert_allclose(grads2[k], grads[k], rtol=1e-12)


def test_has_aux_with_a_namedtuple(rng):
    def f(layer, X):
        out = np.tanh(X @ layer.W + layer.b)
        return np.sum(out ** 2), out

    X = rng.normal(size=(5, 3))
    layer = Layer(rng.normal(size=(3, 2)), rng.normal(size=2))
    grads, aux = srcgrad.grad(f, has_aux=True)(layer, X)
    assert type(grads) is Layer
    np.testing.assert_allclose(aux, np.tanh(X @ layer.W + layer.b), rtol=1e-12)
    check_tree(mlp_named, (layer, X), 0, grads)
    (value, _), grads = srcgrad.value_and_grad(f, has_aux=True)(layer, X)
    assert type(grads) is Layer
    check_tree(mlp_named, (layer, X), 0, grads)


def test_a_new_structure_compiles_a_new_entry_new_shapes_do_not(rng):
    g = srcgrad.grad(mlp_layers)
    X, y = _data(rng)
    two = [(rng.normal(size=(3, 4)), rng.normal(size=4)),
           (rng.normal(size=(4, 1)), rng.normal(size=1))]
    g(two, X, y)
    assert g.compile_count == 1
    # the same structure, new shapes: no compilation, right gradients
    X8, y8 = rng.normal(size=(7, 6)), rng.normal(size=(7, 1))
    two8 = [(rng.normal(size=(6, 8)), rng.normal(size=8)),
            (rng.normal(size=(8, 1)), rng.normal(size=1))]
    grads = g(two8, X8, y8)
    assert g.compile_count == 1
    check_tree(mlp_layers, (two8, X8, y8), 0, grads)
    # another length: a new entry
    three = [(rng.normal(size=(3, 4)), rng.normal(size=4))] + two[:0] + \
        [(rng.normal(size=(4, 4)), rng.normal(size=4)), two[1]]
    grads = g(three, X, y)
    assert g.compile_count == 2
    check_tree(mlp_layers, (three, X, y), 0, grads)
    # back to the first structure: its entry is still there
    g(two, X, y)
    assert g.compile_count == 2


def test_other_keys_or_key_order_compile_a_new_entry(rng):
    def f(p):
        total = 0.0
        for v in p.values():
            total = total + np.sum(v ** 2)
        return total

    g = srcgrad.grad(f)
    a = {"x": rng.normal(size=2), "y": rng.normal(size=3)}
    ga = g(a)
    assert g.compile_count == 1 and list(ga) == ["x", "y"]
    b = {"y": a["y"], "x": a["x"]}
    gb = g(b)
    assert g.compile_count == 2 and list(gb) == ["y", "x"]  # insertion order is kept
    for k in a:
        np.testing.assert_allclose(ga[k], 2 * a[k], rtol=1e-12)
        np.testing.assert_allclose(gb[k], 2 * a[k], rtol=1e-12)
    c = {"x": a["x"], "z": a["y"]}
    gc = g(c)
    assert g.compile_count == 3 and list(gc) == ["x", "z"]
    check_tree(f, (c,), 0, gc)


def test_structures_in_the_disk_cache(rng):
    X, y = _data(rng)
    params = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=4),
              "W2": rng.normal(size=(4, 1)), "b2": rng.normal(size=1)}
    first = srcgrad.grad(mlp_dict)
    g1 = first(params, X, y)
    assert first.compile_count == 1
    again = srcgrad.grad(mlp_dict)  # a new transformation: finds the entry on disk
    g2 = again(params, X, y)
    assert again.compile_count == 0
    for k in params:
        np.testing.assert_allclose(g2[k], g1[k], rtol=1e-12)
    other = {"W1": params["W1"], "b1": params["b1"], "W2": params["W2"]}
    mlp3 = lambda p, X, y: np.sum(np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"])  # noqa: E731
    g3 = srcgrad.grad(mlp3)
    grads = g3(other, X, y)
    check_tree(mlp3, (other, X, y), 0, grads)
    again(dict(params, extra=np.ones(2)), X, y)  # another structure: not the cached one
    assert again.compile_count == 1


def test_keyword_arguments_and_int_keys(rng):
    def f(x, p):
        return np.sum(np.sin(x * p[0]) + p[1] * x)

    x = rng.normal(size=3)
    p = {0: rng.normal(size=3), 1: 0.5}
    g = srcgrad.grad(f, wrt="p")
    grads = g(x=x, p=p)
    assert list(grads) == [0, 1]
    check_tree(f, (x, p), 1, grads)
    assert "p_0" in g.source and "dp_1" in g.source


def test_a_structure_that_is_not_differentiated(rng):
    x = rng.normal(size=4)
    cfg = {"eps": 1e-3, "steps": 2, "act": "tanh", "w": rng.normal(size=4)}
    g = srcgrad.grad(normalized)
    gx = g(x, cfg)
    check_tree(normalized, (x, cfg), 0, gx)
    # a float leaf and an array leaf are run-time inputs: no new compilation
    cfg2 = dict(cfg, eps=0.5, w=rng.normal(size=4))
    gx2 = g(x, cfg2)
    assert g.compile_count == 1
    check_tree(normalized, (x, cfg2), 0, gx2)
    # ints and strings are compile-time constants of the structure
    cfg3 = dict(cfg, steps=3, act="none")
    gx3 = g(x, cfg3)
    assert g.compile_count == 2
    check_tree(normalized, (x, cfg3), 0, gx3)
    # cfg.get's default when the key is absent
    cfg4 = {k: v for k, v in cfg.items() if k != "eps"}
    gx4 = g(x, cfg4)
    check_tree(normalized, (x, cfg4), 0, gx4)


def test_a_differentiated_list_of_numbers_is_a_structure():
    def f(x):
        a, b, c = x
        return a * b + np.sin(c)

    out = srcgrad.grad(f)([1.0, 2.0, 3.0])
    assert isinstance(out, list)
    check_tree(f, ([1.0, 2.0, 3.0],), 0, out)


def test_a_list_of_numbers_not_differentiated_is_one_value(rng):
    def f(x, idx):
        return np.sum(x[idx] ** 2)

    g = srcgrad.grad(f)
    x = rng.normal(size=5)
    gx = g(x, [0, 3])
    gx2 = g(x, [1, 2])
    assert g.compile_count == 1  # not a structure: no entry per value
    np.testing.assert_allclose(gx2, np.array([0, 2 * x[1], 2 * x[2], 0, 0]))
    np.testing.assert_allclose(gx, np.array([2 * x[0], 0, 0, 2 * x[3], 0]))


def test_float32_leaves_keep_their_dtype(rng):
    def f(p):
        return np.sum(p["w"] ** 2) + np.sum(p["v"])

    p = {"w": rng.normal(size=3).astype(np.float32), "v": rng.normal(size=2)}
    grads = srcgrad.grad(f)(p)
    assert grads["w"].dtype == np.float32 and grads["v"].dtype == np.float64
    np.testing.assert_allclose(grads["w"], 2 * p["w"], rtol=1e-6)
    np.testing.assert_allclose(grads["v"], np.ones(2))


def test_a_leaf_that_is_not_a_number_in_a_differentiated_structure():
    g = srcgrad.grad(lambda p: np.sum(p["w"]))
    with pytest.raises(TypeError, match=r"p\['name'\] is a str.*every leaf of a differentiated"):
        g({"w": np.ones(2), "name": "layer"})
    with pytest.raises(TypeError, match=r"p\['flag'\] is a bool"):
        g({"w": np.ones(2), "flag": True})


def test_keys_must_be_str_or_int():
    g = srcgrad.grad(lambda p: np.sum(p[(0, 1)]))
    with pytest.raises(TypeError, match=r"key \(0, 1\) of type tuple.*str or int keys"):
        g({(0, 1): np.ones(2)})


def test_unsupported_leaf_in_a_plain_structure():
    g = srcgrad.grad(lambda x, cfg: np.sum(x) * 2.0)
    with pytest.raises(TypeError, match=r"cfg\['f'\] is an object; the leaves of a structured"):
        g(np.ones(2), {"f": object()})


def test_a_dict_subclass_is_refused_clearly():
    g = srcgrad.grad(lambda p: np.sum(p["w"]))
    with pytest.raises(TypeError, match=r"p is an OrderedDict, a subclass of dict"):
        g(collections.OrderedDict(w=np.ones(2)))


def test_other_transformations_refuse_structures_clearly():
    def f(p):
        return np.sum(p["w"] ** 2)

    p = {"w": np.ones(3)}
    msg = "supported by grad, value_and_grad, vjp and jvp only"
    with pytest.raises(TypeError, match=msg):
        srcgrad.hessian(f)(p)
    with pytest.raises(TypeError, match=msg):
        srcgrad.hvp(f)(p, p)
    with pytest.raises(TypeError, match=msg):
        srcgrad.jacobian(f)(p)
    with pytest.raises(TypeError, match=msg):
        srcgrad.grad(srcgrad.grad(f))(p)


def test_vjp_of_a_structure(rng):
    def layer(p, x):
        return np.tanh(x @ p["W"] + p["b"])

    p = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    out, pullback = srcgrad.vjp(layer, p, x)
    np.testing.assert_allclose(out, layer(p, x), rtol=1e-12)
    ct = rng.normal(size=(4, 2))
    grads = pullback(ct)
    assert pullback(ct)["W"] is not grads["W"]  # callable again, fresh arrays
    inner = lambda p, x: np.sum(ct * layer(p, x))  # noqa: E731
    check_tree(inner, (p, x), 0, grads)
    # a namedtuple, and the structure beside an array
    lp = Layer(p["W"], p["b"])
    named = lambda lp, x: np.tanh(x @ lp.W + lp.b)  # noqa: E731
    g_named = srcgrad.vjp(named, lp, x)[1](ct)
    assert type(g_named) is Layer
    np.testing.assert_allclose(g_named.W, grads["W"], rtol=1e-12)
    gp, gx = srcgrad.vjp(layer, p, x, wrt=(0, 1))[1](ct)
    check_tree(inner, (p, x), 1, gx)
    np.testing.assert_allclose(gp["b"], grads["b"], rtol=1e-12)


def test_unpacking_and_len_of_a_structure(rng):
    def f(layers, x):
        n = len(layers)
        W, b = layers[0]
        h = np.tanh(x @ W + b)
        for i in range(1, n):
            h = h @ layers[i][0] + layers[i][1]
        return np.sum(h ** 2)

    x = rng.normal(size=(2, 3))
    layers = ((rng.normal(size=(3, 3)), rng.normal(size=3)),
              (rng.normal(size=(3, 2)), rng.normal(size=2)))
    grads = srcgrad.grad(f)(layers, x)
    assert type(grads) is tuple
    check_tree(f, (layers, x), 0, grads)


def test_dict_items_loop(rng):
    def f(p, x):
        total = 0.0
        for name, w in p.items():
            total = total + np.sum(np.cos(w * x))
        return total

    x = rng.normal(size=3)
    p = {"a": rng.normal(size=3), "b": rng.normal(size=3)}
    grads = srcgrad.grad(f)(p, x)
    check_tree(f, (p, x), 0, grads)


def test_range_len_loop_over_a_list_of_dicts(rng):
    def f(layers, x):
        for i in range(len(layers)):
            x = np.tanh(x @ layers[i]["W"] + layers[i]["b"])
        return np.sum(x ** 2)

    x = rng.normal(size=(3, 2))
    layers = [{"W": rng.normal(size=(2, 2)), "b": rng.normal(size=2)} for _ in range(3)]
    grads = srcgrad.grad(f)(layers, x)
    check_tree(f, (layers, x), 0, grads)


def test_a_method_a_keyword_only_structure_and_an_empty_one(rng):
    class Model:
        scale = 1.5

        @srcgrad.grad(wrt=1)
        def loss(self, p):
            return self.scale * np.sum(np.sin(p["w"]))

    p = {"w": rng.normal(size=3)}
    np.testing.assert_allclose(Model().loss(p)["w"], 1.5 * np.cos(p["w"]), rtol=1e-12)

    def k(x, *, p):
        return np.sum(x * p["a"] ** 2)

    x = rng.normal(size=2)
    gp = srcgrad.grad(k, wrt="p")(x, p={"a": np.full(2, 3.0)})
    np.testing.assert_allclose(gp["a"], 6.0 * x, rtol=1e-12)

    def h(p, x):
        return np.sum(x ** 2)

    gp, gx = srcgrad.grad(h, wrt=(0, 1))({}, x)
    assert gp == {}
    np.testing.assert_allclose(gx, 2 * x, rtol=1e-12)


def test_jvp_of_a_structure(rng):
    def f(p, x):
        return np.tanh(x @ p["W"] + p["b"]) * p["s"]

    p = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2), "s": 1.5}
    x = rng.normal(size=(4, 3))
    t = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2), "s": 0.3}
    tx = rng.normal(size=(4, 3))
    out, tout = srcgrad.jvp(f, (p, x), (t, tx))
    np.testing.assert_allclose(out, f(p, x), rtol=1e-12)
    eps = 1e-6
    plus = f({k: p[k] + eps * t[k] for k in p}, x + eps * tx)
    minus = f({k: p[k] - eps * t[k] for k in p}, x - eps * tx)
    np.testing.assert_allclose(tout, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-8)
    # None: a zero tangent for the whole structure
    _, t_only_x = srcgrad.jvp(f, (p, x), (None, tx))
    plus, minus = f(p, x + eps * tx), f(p, x - eps * tx)
    np.testing.assert_allclose(t_only_x, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-8)
    with pytest.raises(TypeError, match="must have its primal's structure"):
        srcgrad.jvp(f, (p, x), ({"W": t["W"], "b": t["b"]}, tx))


def test_source_before_a_structured_call_is_a_located_error():
    """`.source` compiles for array arguments; a string index into one was once emitted
    and failed in numpy at run time."""
    g = srcgrad.grad(lambda p: np.sum(p["W"]), cache=False)  # noqa: E731
    with pytest.raises(srcgrad.SrcgradError, match="string 'W'") as info:
        g.source
    assert info.value.filename == __file__
    np.testing.assert_allclose(g({"W": np.ones(2)})["W"], np.ones(2))


_DEFAULT_CFG = {"scale": 2.0, "shift": np.array([0.5, -1.0, 0.25])}


def _with_default_config(x, cfg=_DEFAULT_CFG):
    return np.sum(np.tanh(x * cfg["scale"] + cfg["shift"]) ** 2)


def _with_keyword_layers(x, *, layers=[np.array([1.0, 2.0, 0.5]), np.array([-1.0, 0.3, 2.0])]):
    for w in layers:
        x = np.sin(w * x)
    return np.sum(x)


@pytest.mark.parametrize("fn", [_with_default_config, _with_keyword_layers])
def test_a_structure_as_a_default_value(fn):
    """A dict or list default left out of the call is passed as the structure it is
    (it was taken for an array: "indexing an array with the string 'scale'")."""
    x = np.array([0.3, -0.7, 1.1])
    g = srcgrad.grad(fn, cache=False)
    for _ in range(4):  # (the specialized variant too)
        np.testing.assert_allclose(g(x), finite_differences(fn, (x,), 0), rtol=1e-6,
                                   atol=1e-9)


def test_a_default_dict_changed_in_place_between_calls(monkeypatch):
    cfg = {"scale": 2.0, "shift": np.zeros(3)}
    monkeypatch.setattr(_with_default_config, "__defaults__", (cfg,))
    x = np.array([0.3, -0.7, 1.1])
    g = srcgrad.grad(_with_default_config, cache=False)
    g(x)
    cfg["scale"] = -3.0
    cfg["shift"] += 1.0
    np.testing.assert_allclose(g(x), finite_differences(_with_default_config, (x,), 0),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g(x, {"scale": 1.0, "shift": np.ones(3)}),
                               finite_differences(_with_default_config,
                                                  (x, {"scale": 1.0, "shift": np.ones(3)}), 0),
                               rtol=1e-6, atol=1e-9)
