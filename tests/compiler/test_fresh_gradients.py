"""Every array a generated gradient returns (grad, value_and_grad, a vjp pullback, hvp, a
jvp tangent) is a fresh, writeable array: it shares no memory with an input, a module
array, another returned array or the arrays an earlier call returned."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import srcgrad
from compiler_helpers import check_grad
from programs import programs
from test_property import check_program

rng = np.random.default_rng(17)
C = np.linspace(-1.0, 1.0, 3)  # small module array
BIG = np.linspace(-1.0, 1.0, 24).reshape(4, 6)  # large module array


def assert_fresh(results, others, what=""):
    """`results`: the returned arrays; `others`: arrays the caller can see besides."""
    arrays = [r for r in results if isinstance(r, np.ndarray)]
    for k, r in enumerate(arrays):
        assert r.flags.writeable, f"{what}: returned array {k} is read-only"
        for o in others:
            if isinstance(o, np.ndarray):
                assert not np.shares_memory(r, o), f"{what}: returned array {k} aliases " \
                                                    "an input or a module array"
        for j in range(k):
            assert not np.shares_memory(r, arrays[j]), \
                f"{what}: returned arrays {j} and {k} share memory"


def _flat(obj):
    if isinstance(obj, (tuple, list)):
        return [x for o in obj for x in _flat(o)]
    return [obj]


def product(x, y):
    return np.sum(x * y)


def total(x, y):
    return np.sum(x + y)


def times_small(x):
    return np.sum(x * C)


def times_big(x, y):
    return np.sum(x * BIG) + np.sum(y * BIG)


def times_transposed(x, y):
    return np.sum(x * y.T)


def plain_sum(x):
    return np.sum(x)


@pytest.mark.parametrize("fn, args, wrt", [
    (product, (rng.normal(size=(2, 3)), rng.normal(size=(2, 3))), (0, 1)),  # same shapes
    (product, (rng.normal(size=(2, 3)), rng.normal(size=(1, 3))), (0, 1)),  # broadcast
    (product, (rng.normal(size=3), rng.normal(size=3)), 0),
    (total, (rng.normal(size=(2, 3)), rng.normal(size=(2, 3))), (0, 1)),
    (total, (rng.normal(size=(2, 3)), rng.normal(size=3)), (0, 1)),
    (times_small, (rng.normal(size=3),), 0),
    (times_big, (rng.normal(size=(4, 6)), rng.normal(size=(4, 6))), (0, 1)),
    (times_transposed, (rng.normal(size=(2, 3)), rng.normal(size=(3, 2))), (0, 1)),
    (plain_sum, (rng.normal(size=4),), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_reported_aliases(fn, args, wrt):
    inputs = [a.copy() for a in args]
    for kind in ("grad", "value_and_grad"):
        g = getattr(srcgrad, kind)(fn, wrt=wrt, cache=False)
        got = g(*args)
        grads = got[1] if kind == "value_and_grad" else got
        grads = list(grads) if isinstance(wrt, tuple) else [grads]
        assert_fresh(grads + _flat(got[0] if kind == "value_and_grad" else []),
                     list(args) + [C, BIG], kind)
        for gi in grads:
            gi[...] = 1e6  # writing into a gradient changes nothing the caller had
        for a, b in zip(args, inputs):
            np.testing.assert_array_equal(a, b)
        check_grad(fn, args, wrt, compiled=getattr(srcgrad, "grad")(fn, wrt=wrt, cache=False))
    np.testing.assert_array_equal(C, np.linspace(-1.0, 1.0, 3))
    np.testing.assert_array_equal(BIG, np.linspace(-1.0, 1.0, 24).reshape(4, 6))


def identity(x):
    return x * 1.0


def transposed(x):
    return x.T


def quadratic(x):
    return 0.5 * np.sum(x * x)


def scaled_by_forward_value(x):
    w = np.sin(C)
    return x * w


def test_pullback_returns_fresh_arrays():
    x = rng.normal(size=3)
    for fn in (identity, transposed, scaled_by_forward_value):
        out, pullback = srcgrad.vjp(fn, x)
        ct = rng.normal(size=np.shape(out))
        first = pullback(ct)
        second = pullback(ct)
        assert_fresh([first, second], [x, ct, out, C], fn.__name__)
        eps = 1e-6
        fd = [(np.sum(ct * fn(x + eps * e)) - np.sum(ct * fn(x - eps * e))) / (2 * eps)
              for e in np.eye(3)]
        np.testing.assert_allclose(first, fd, rtol=1e-6, atol=1e-9)


def test_jvp_tangent_and_hvp_are_fresh():
    x, t = rng.normal(size=3), rng.normal(size=3)
    for fn in (identity, transposed):
        out, tangent = srcgrad.jvp(fn, (x,), (t,))
        assert_fresh([tangent], [x, t, out], fn.__name__)
        np.testing.assert_allclose(tangent, fn(t))  # linear: the tangent is f(t)
    hv = srcgrad.hvp(quadratic, cache=False)
    first, second = hv(x, t), hv(x, t)
    assert_fresh([first, second], [x, t], "hvp")
    grad = srcgrad.grad(quadratic, cache=False)  # H t by differences of the gradient
    check_grad(quadratic, (x,), compiled=grad)
    eps = 1e-3
    fd = (grad(x + eps * t) - grad(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(first, fd, rtol=1e-8, atol=1e-10)


def test_no_copy_where_the_gradient_is_made_fresh():
    """The least copying: a gradient the function computes itself is returned as is."""
    g = srcgrad.grad(lambda_free_square, cache=False)
    assert ".copy()" not in g.source and "np.copy(" not in g.source
    x = rng.normal(size=4)
    check_grad(lambda_free_square, (x,), compiled=g)
    assert_fresh([g(x)], [x], "square")


def lambda_free_square(x):
    return np.sum(np.sin(x) ** 2)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fresh_programs"))


@settings(max_examples=max(20, settings.default.max_examples // 4))
@given(programs())
def test_random_programs_return_fresh_gradients(program_dir, program):
    g = check_program(program, program_dir)
    module = program.load(program_dir)
    fn = getattr(module, program.name)
    args = program.args
    seen = [getattr(module, c) for c in program.constants] + list(args)
    first = list(g(*args))
    assert_fresh(first + list(g(*args)), seen, f"grad\n{program.source}")
    value, grads = srcgrad.value_and_grad(fn, wrt=program.wrt, cache=False)(*args)
    assert_fresh(list(grads) + [value], seen, f"value_and_grad\n{program.source}")
    out, pullback = srcgrad.vjp(fn, *args, wrt=program.wrt)
    ct = np.ones_like(np.asarray(out, dtype=float))
    got = list(pullback(ct)) + list(pullback(ct))
    assert_fresh(got, seen + [out, ct], f"vjp\n{program.source}")
    for a, b in zip(got, first):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    if len(args) <= len(_AUX):  # the inputs returned as aux: the gradients are not them
        wrt = tuple(program.params.index(w) if isinstance(w, str) else w
                    for w in program.wrt)
        (grads, aux) = srcgrad.grad(_AUX[len(args) - 1](fn), wrt=wrt, has_aux=True,
                                    cache=False)(*args)
        # (an array is returned as f returns it; a Python number as the array it became)
        assert all(a is b for a, b in zip(aux, args) if isinstance(b, np.ndarray))
        assert_fresh(list(grads), seen, f"grad, has_aux\n{program.source}")


def _aux1(fn):
    def f(a):
        return fn(a), (a,)
    return f


def _aux2(fn):
    def f(a, b):
        return fn(a, b), (a, b)
    return f


def _aux3(fn):
    def f(a, b, c):
        return fn(a, b, c), (a, b, c)
    return f


def _aux4(fn):
    def f(a, b, c, d):
        return fn(a, b, c, d), (a, b, c, d)
    return f


_AUX = (_aux1, _aux2, _aux3, _aux4)


# ---- the function's own value beside its gradients -------------------------------------------

def loss_returning_y(x, y):
    return np.sum(x * y), y                      # d/dx is y, the very array f returns


def loss_returning_params(p, X):
    return np.sum(p["w"] * p["s"] + X), {"s": p["s"], "X": X}


def loss_with_prediction(x, y):
    pred = x * 1.0                               # a new array in numpy
    return np.sum((pred - y) ** 2), pred


def plus_zero(x):
    return x + 0.0


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_gradient_that_is_the_array_f_returns_as_aux_is_fresh(backend):
    """d/dx sum(x * y) is y; with has_aux returning y, the gradient was the caller's y
    itself (its identity was taken for f's own value), and an in-place update of x by
    that gradient followed the update of y."""
    if backend == "numba":
        pytest.importorskip("numba")
    x, y = np.arange(1.0, 6.0), np.arange(10.0, 15.0)
    for make in (srcgrad.grad, srcgrad.value_and_grad):
        t = make(loss_returning_y, wrt=(0, 1), has_aux=True, cache=False, backend=backend)
        for _ in range(3):
            r = t(x, y)
            (dx, dy), aux = (r[1], r[0][1]) if make is srcgrad.value_and_grad else r
            assert aux is y or backend == "numba"  # f's own value, as f returns it
            np.testing.assert_array_equal(aux, y)
            assert_fresh([dx, dy], [x, y], make.__name__)
            np.testing.assert_array_equal(dx, y)
    p = {"w": np.ones(4), "s": np.arange(4.0)}
    X = np.arange(4.0)
    g = srcgrad.grad(loss_returning_params, wrt=(0, 1), has_aux=True, cache=False)
    for _ in range(3):
        (gp, gX), aux = g(p, X)
        assert aux["s"] is p["s"] and aux["X"] is X
        assert_fresh([gp["w"], gp["s"], gX], [p["w"], p["s"], X], "dict of parameters")


def test_f_s_own_value_is_a_new_array_where_numpy_makes_one():
    """`x * 1.0` and `x + 0.0` are new arrays in numpy; the optimizer finds them equal to
    x, but the value returned (aux, vjp's output) must not be the caller's x, which an
    in-place update of it would change."""
    x, y = np.arange(1.0, 6.0), np.zeros(5)
    vg = srcgrad.value_and_grad(loss_with_prediction, has_aux=True, cache=False)
    for _ in range(3):
        (_, pred), _ = vg(x, y)
        assert not np.shares_memory(pred, x)
        np.testing.assert_array_equal(pred, x)
    out, _ = srcgrad.vjp(plus_zero, x)
    assert not np.shares_memory(out, x)


def _zeros_plus_rows(W, xs):
    g = np.zeros(W.shape) + xs[:3]          # a new array in numpy
    return np.sum(W * g), g


def _rows_times_one(W, xs):
    g = xs[:3] * 1
    return np.sum(W * g), g


def _transposed_twice(W, xs):
    g = xs[:3].T.T * 1.0
    return np.sum(W * g), g


def _a_view_itself(W, xs):
    g = xs[:3]                              # a view in numpy too: kept a view
    return np.sum(W * g), g


@pytest.mark.parametrize("fn,view", [(_zeros_plus_rows, False), (_rows_times_one, False),
                                     (_transposed_twice, False), (_a_view_itself, True)],
                         ids=["zeros_plus", "times_one", "transposed_twice", "view"])
def test_f_s_own_value_is_no_view_of_an_input_where_numpy_makes_a_new_array(fn, view):
    """`np.zeros(s) + xs[:3]` (or `xs[:3] * 1`) is a new array in numpy; the optimizer
    finds it equal to the view xs[:3], which the specialized variant returned as aux:
    writing into it changed the caller's xs."""
    W, xs = np.ones((3, 4)), np.arange(20.0).reshape(5, 4)
    g = srcgrad.grad(fn, wrt=0, has_aux=True, cache=False)
    for _ in range(4):  # (the specialized variant runs from the third call)
        _, aux = g(W, xs)
        assert np.shares_memory(aux, xs) == view
        np.testing.assert_array_equal(aux, xs[:3])
