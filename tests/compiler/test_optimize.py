"""Each optimizer pass on a tiny graph: its effect on the printed IR, graph.check() after
it, and the optimized graph computing the same values as the original (an interpreter
runs both on arrays)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import srcgrad
from runtime import ops
from srcgrad.ir import Eqn, Graph, Var
from srcgrad.lower import lower
from srcgrad import optimize as optimize_module
from srcgrad.optimize import PASSES, optimize
from srcgrad.reverse import reverse

rng = np.random.default_rng(3)


def run_graph(graph, *args):
    """Evaluate a straight-line graph on concrete values with each primitive's impl."""
    env = {v.id: a for v, a in zip(graph.inputs, args)}

    def val(a):
        if isinstance(a, Var):
            return a.const_value if a.const_name is not None else env[a.id]
        if isinstance(a, tuple):
            return tuple(val(x) for x in a)
        if isinstance(a, list):
            return [val(x) for x in a]
        return a

    for e in graph.eqns:
        assert not e.blocks(), "run_graph handles straight-line graphs only"
        out = e.prim.impl(*[val(a) for a in e.ins], **e.params)
        env[e.outs[0].id] = out
    return val(graph.outputs[0]) if len(graph.outputs) == 1 else \
        tuple(val(o) for o in graph.outputs)


def count(graph, prim):
    """How many equations of `prim` the printed IR has."""
    return len(re.findall(rf"= {prim}\(", str(graph)))


def _floats(fn):
    """Every parameter floating, as grad makes its `wrt` arguments (rewrites that keep a
    dtype only for floats apply)."""
    import inspect

    return tuple(range(len(inspect.signature(fn).parameters)))


def forward(fn):
    graph, _, _ = lower(fn, floats=_floats(fn))
    return Graph(graph.inputs, graph.eqns, graph.outputs[:1], graph.name)


def adjoint(fn, wrt=(0,)):
    """The unoptimized forward + adjoint graph of fn, returning the gradients."""
    graph, _, _ = lower(fn, floats=_floats(fn))
    fwd = Graph(graph.inputs, graph.eqns, graph.outputs[:1], graph.name)
    b, grads = reverse(fwd, [graph.inputs[i] for i in wrt], 1.0)
    return Graph(graph.inputs, b.eqns, [tuple(grads)], graph.name)


def assert_same_values(before, after, *args):
    a, b = run_graph(before, *args), run_graph(after, *args)
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        assert np.asarray(x).dtype == np.asarray(y).dtype  # (a rewrite keeps the dtype)
        np.testing.assert_allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                                   rtol=1e-12, atol=1e-15)


# ---- simplify ------------------------------------------------------------------------------

def identities(x):
    a = x * 1.0
    b = a + 0.0
    c = b - 0
    d = c / 1
    e = d ** 1
    f = -(-e)
    return np.sum(f * np.sin(x))


def test_simplify_removes_algebraic_identities():
    g = forward(identities)
    before = str(g)
    assert count(g, "multiply") == 2 and count(g, "add") == 1 and count(g, "negative") == 2
    opt = optimize(g, passes=("simplify",)).check()
    after = str(opt)
    assert before != after
    assert count(opt, "multiply") == 1  # only f * sin(x) is left, and it reads x itself
    assert re.search(r"= multiply\(%x\d+, %\w+\)", after), after
    for prim in ("add", "subtract", "divide", "power"):
        assert count(opt, prim) == 0, after
    # -(-e) -> e leaves the inner negation unused: dead code is dce's job
    assert count(opt, "negative") == 1
    assert count(optimize(g, passes=("simplify", "dce")).check(), "negative") == 0
    assert count(opt, "sin") == 1 and count(opt, "sum") == 1
    x = rng.normal(size=4)
    assert_same_values(g, opt, x)


def test_simplify_drops_sum_to_of_the_same_shape():
    def f(x, w):
        return np.sum(np.tanh(x * 2.0) * w)

    g = adjoint(f)
    before = count(g, "sum_to") + count(g, "cast_like")
    opt = optimize(g, passes=("simplify",)).check()
    # x's cotangent already has x's shape and dtype: no sum_to or cast_like is needed for
    # it (w may broadcast against x, so that sum_to stays)
    assert count(opt, "sum_to") + count(opt, "cast_like") < before
    x, w = rng.normal(size=(2, 3)), rng.normal(size=3)
    assert_same_values(g, opt, x, w)


def test_simplify_where_with_a_constant_condition_in_the_backward_pass():
    def f(y):
        return np.sum(0.5 ** y)

    g = adjoint(f)
    assert "where(False" in str(g)  # the rule's `where(x == 0, ...)` with x = 0.5
    opt = optimize(g, passes=("simplify",)).check()
    assert count(opt, "where") == 0
    assert_same_values(g, opt, rng.normal(size=3))


def two_slices(x):
    return np.sum(np.sin(x[1:]) * np.cos(x[1:] * 2.0) + x[:-1] ** 2 * x[1:])


def two_indices(x):
    return np.sum(np.exp(x[1:]) + np.tanh(x[:-1]))


def test_simplify_merges_two_scatters_of_one_index():
    """The cotangents of three reads of x[1:] are summed, then scattered once (where their
    dtypes are known to be one: a specialized variant); reads of two different slices keep
    a scatter each."""
    x = rng.normal(size=6)
    g = srcgrad.grad(two_slices, cache=False)
    src = g.specialized_source(x)
    assert src.count("[1:] +=") + src.count("slice(1, None, None)") == 1, src
    gx = g(x)
    eps, fd = 1e-6, np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        fd[i] = (two_slices(x + d) - two_slices(x - d)) / (2 * eps)
    np.testing.assert_allclose(gx, fd, rtol=1e-6, atol=1e-8)
    g = adjoint(two_indices)
    assert count(optimize(g).check(), "scatter_add") == 2
    assert_same_values(g, optimize(g), x)


def negated_scaling(x, y):
    s = (0.1 / (x + 1.0)) * y
    return np.sum(-s * y)


def scaling_read_twice(x, y):
    r = 0.1 / (x + 1.0)
    s = r * y
    return np.sum(-s * y) + np.sum(r)


def test_a_negation_moves_into_the_constant_of_a_scaling_read_once():
    """-((c / u) * y) -> ((-c) / u) * y where c / u and its product are read once: one op
    fewer (the adjoint of a negation writes such chains); where the scaling is read again
    the negation stays (moving it would add an op)."""
    x, y = rng.uniform(0.5, 2.0, 5), rng.normal(size=5)
    g = forward(negated_scaling)
    opt = optimize(g).check()
    assert count(g, "negative") == 1 and count(opt, "negative") == 0, str(opt)
    assert count(opt, "divide") == 1 and re.search(r"= divide\(-0\.1, ", str(opt)), str(opt)
    assert_same_values(g, opt, x, y)
    g = forward(scaling_read_twice)
    opt = optimize(g).check()
    assert count(opt, "negative") == 1 and count(opt, "divide") == 1, str(opt)
    assert_same_values(g, opt, x, y)


def two_scalings(x, y):
    return np.sum((3.0 * x) * (2.0 * y))


def scaling_read_again(x, y):
    a = 3.0 * x
    return np.sum(a * (2.0 * y)) + np.sum(a)


def test_constants_of_two_scalings_read_once_fold_into_one():
    """(c1 * x) * (c2 * y) -> (c1 * c2) * (x * y) where both scalings are read once (one op
    fewer: the adjoint of a power times a constant writes such products); not where a
    scaling is read again."""
    x, y = rng.normal(size=5), rng.normal(size=5)
    g = forward(two_scalings)
    opt = optimize(g).check()
    assert count(g, "multiply") == 3 and count(opt, "multiply") == 2, str(opt)
    assert re.search(r"= multiply\(6\.0, ", str(opt)), str(opt)
    assert_same_values(g, opt, x, y)
    g = forward(scaling_read_again)
    opt = optimize(g).check()
    assert count(opt, "multiply") == 3, str(opt)
    assert_same_values(g, opt, x, y)


# ---- fold -------------------------------------------------------------------------------------

def test_fold_evaluates_constant_equations():
    x = Var("x")
    t, u, y = Var("t"), Var("u"), Var("y")
    eqns = [Eqn(ops.multiply, [2.0, 3.0], [t]), Eqn(ops.add, [t, 1.0], [u]),
            Eqn(ops.multiply, [x, u], [y])]
    g = Graph([x], eqns, [y]).check()
    assert count(g, "multiply") == 2 and count(g, "add") == 1
    opt = optimize(g, passes=("fold",)).check()
    assert str(opt).splitlines()[1:] == ["  %y{} = multiply(%x{}, 7.0)".format(y.id, x.id),
                                         f"  return %y{y.id}"]
    assert_same_values(g, opt, np.arange(3.0))


def test_fold_leaves_array_creators_as_code():
    x, z, y = Var("x"), Var("z"), Var("y")
    eqns = [Eqn(ops.zeros, [(1000,)], [z]), Eqn(ops.add, [x, z], [y])]
    opt = optimize(Graph([x], eqns, [y]), passes=("fold",)).check()
    assert count(opt, "zeros") == 1  # a big constant is not embedded in the source


# ---- cse ----------------------------------------------------------------------------------------

def repeats(x):
    a = np.sin(x) * np.sin(x)
    b = np.sin(x) + np.exp(x * 2.0)
    return np.sum(a + b + np.exp(x * 2.0))


def test_cse_merges_repeated_subexpressions():
    g = forward(repeats)
    assert count(g, "sin") == 3 and count(g, "exp") == 2 and count(g, "multiply") == 3
    opt = optimize(g, passes=("cse",)).check()
    assert count(opt, "sin") == 1 and count(opt, "exp") == 1 and count(opt, "multiply") == 2
    assert_same_values(g, opt, rng.normal(size=5))


def test_cse_keeps_equations_with_different_params():
    def f(x):
        return np.sum(np.sum(x, axis=0)) + np.sum(np.sum(x, axis=1)) + np.sum(np.sum(x, axis=0))

    g = forward(f)
    opt = optimize(g, passes=("cse",)).check()
    # sum(x, axis=0) is computed twice, and so is the sum of it
    assert count(g, "sum") == 6 and count(opt, "sum") == 4
    assert "axis=0" in str(opt) and "axis=1" in str(opt)
    assert_same_values(g, opt, rng.normal(size=(2, 3)))


# ---- dce ----------------------------------------------------------------------------------------

def dead_code(x, y):
    unused = np.exp(y) * 3.0  # noqa: F841
    also_unused = np.tanh(x) ** 5  # noqa: F841
    return np.sum(x ** 2)


def test_dce_removes_values_that_never_reach_the_output():
    g = forward(dead_code)
    assert count(g, "exp") == 1 and count(g, "tanh") == 1
    opt = optimize(g, passes=("dce",)).check()
    assert count(opt, "exp") == 0 and count(opt, "tanh") == 0
    assert count(opt, "power") == 1 and count(opt, "sum") == 1
    assert len(opt.eqns) == 2
    assert_same_values(g, opt, rng.normal(size=3), rng.normal(size=3))


def test_dce_removes_cotangents_of_inputs_not_asked_for():
    def f(x, y):
        return np.sum(np.sin(x) * np.cos(y))

    g = adjoint(f, wrt=(0,))
    opt = optimize(g, passes=("dce",)).check()
    # sin(y) appears only in the cotangent of y, which was not requested
    assert count(opt, "cos") == 2  # cos(y) forward, cos(x) in dx
    assert "sin(%y" not in str(opt)
    assert_same_values(g, opt, rng.normal(size=3), rng.normal(size=3))


def test_dce_keeps_what_is_asked_for():
    g = forward(dead_code)
    unused = next(e.outs[0] for e in g.eqns if e.prim.name == "exp")
    opt = optimize(g, passes=("dce",), keep=[unused]).check()
    assert count(opt, "exp") == 1 and count(opt, "tanh") == 0


# ---- all passes together ----------------------------------------------------------------------

def mlp(w1, w2, x):
    h = np.tanh(x @ w1 * 1.0 + 0.0)
    out = h @ w2
    return np.mean((out - 1.0) ** 2) + 0.0 * np.sum(np.exp(x))


def test_all_passes_shrink_the_adjoint_and_keep_its_values():
    g = adjoint(mlp, wrt=(0, 1))
    opt = optimize(g, passes=PASSES).check()
    assert len(opt.eqns) < len(g.eqns)
    assert count(opt, "exp") == 0  # 0.0 * sum(exp(x)) has no gradient w.r.t. w1, w2
    args = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(5, 3))
    assert_same_values(g, opt, *args)
    # the values are the gradient: compare with the compiled function
    gw1, gw2 = srcgrad.grad(mlp, wrt=(0, 1))(*args)
    ow1, ow2 = run_graph(opt, *args)
    np.testing.assert_allclose(ow1, gw1, rtol=1e-12)
    np.testing.assert_allclose(ow2, gw2, rtol=1e-12)


def test_optimize_reaches_a_fixed_point():
    g = adjoint(mlp, wrt=(0, 1))
    once = optimize(g)
    twice = optimize(once)
    assert str(once) == str(twice)


@pytest.mark.parametrize("passes", [(p,) for p in PASSES] + [PASSES])
@pytest.mark.parametrize("fn", [identities, repeats, dead_code, mlp])
def test_every_pass_keeps_the_graph_valid(fn, passes):
    n = fn.__code__.co_argcount
    g = adjoint(fn, wrt=tuple(range(n)))
    optimize(g, passes=passes).check()


# ---- names --------------------------------------------------------------------------------------

def test_cotangent_names_stay_off_forward_values():
    def f(x):
        return np.sum(np.sin(x) * np.cos(x))

    src = srcgrad.grad(f, cache=False).source
    forward_part = src.split("# grad of:")[0]
    # CSE merges the backward pass's sin(x) into the forward one: that value must keep a
    # forward name, not `dout` (which reads as a cotangent)
    assigned = re.findall(r"^\s+(\w+) = np\.(?:sin|cos)\(x\)", forward_part, re.M)
    assert assigned and not any(name.startswith("d") for name in assigned), src
    x = rng.normal(size=4)
    np.testing.assert_allclose(srcgrad.grad(f, cache=False)(x), np.cos(2 * x), rtol=1e-12)


# ---- the derivative of log1p(exp(u)) ------------------------------------------------------

def test_compiled_softplus_gradients_match_the_tape_at_extremes():
    from compiler_helpers import check_grad

    def f(w, x):
        z = x @ w
        return np.sum(np.log1p(np.exp(z))) - np.sum(z * 0.5)

    x = rng.normal(size=(6, 3))
    for scale in (0.1, 1.0, 30.0):
        w = rng.normal(size=3) * scale
        check_grad(f, (w, x), compiled=srcgrad.grad(f, cache=False))


def test_a_softplus_gradient_overflows_only_where_the_function_does():
    # exp(-m) of a well-classified point (m large) underflows quietly in the function; its
    # gradient must not compute exp(m) instead, which overflows (a warning at every call of
    # a converged fit, an error under np.errstate(over="raise"))
    import warnings

    def loss(w, X, y):
        return np.mean(np.log1p(np.exp(-y * (X @ w))))

    for dtype, scale in ((np.float32, 90.0), (np.float64, 800.0)):
        X = np.ones((4, 2), dtype)
        y = np.ones(4, dtype)
        w = np.array([scale / 2 + 10, scale / 2], dtype)
        g = srcgrad.grad(loss, cache=False)
        with warnings.catch_warnings(), np.errstate(over="raise"):
            warnings.simplefilter("error")
            loss(w, X, y)  # (the function itself: no overflow)
            for _ in range(4):  # (the general code, then the specialized variant)
                got = g(w, X, y)
        assert got.dtype == dtype and np.all(np.isfinite(got))


# ---- terms with a common factor ---------------------------------------------------------

def _product_rules():
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def quadratic(x, y):
        return np.sum((1.0 - x) ** 2 + 3.0 * x ** 2 * y - x * y)

    def broadcast(x, y):  # x (3, 1), y (1, 4): the collected terms broadcast as before
        return np.sum(x * y * (2.0 - x) + (x - 0.5) ** 2)

    def negated(x, y):
        return np.sum(-(x * y) - (x * np.sin(y)) + 4.0)

    return [(rosen, (rng.normal(size=7),)),
            (quadratic, (rng.normal(size=5), rng.normal(size=5))),
            (broadcast, (rng.normal(size=(3, 1)), rng.normal(size=(1, 4)))),
            (negated, (rng.normal(size=4), rng.normal(size=4)))]


@pytest.mark.parametrize("k", range(4))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_terms_with_a_common_factor_are_collected(k, dtype):
    from compiler_helpers import check_grad

    fn, args = _product_rules()[k]
    args = [a.astype(dtype) for a in args]
    wrt = tuple(range(len(args)))
    g = srcgrad.grad(fn, wrt=wrt, cache=False)
    if dtype == np.float64:
        check_grad(fn, args, wrt, compiled=g)
    for _ in range(3):  # (the general code, then the specialized variant)
        got = g(*args)
        assert all(d.dtype == dtype and d.shape == a.shape for d, a in zip(got, args))
    want = srcgrad.grad(fn, wrt=wrt, cache=False)(*(a.astype(np.float64) for a in args))
    for d, w in zip(got, want):
        np.testing.assert_allclose(d, w, rtol=1e-4 if dtype == np.float32 else 1e-12,
                                   atol=1e-4 if dtype == np.float32 else 1e-12)


def _statements(fn):
    src = srcgrad.grad(fn, cache=False).source
    return [ln for ln in src.split("def ", 1)[1].splitlines()[1:]
            if "=" in ln and not ln.lstrip().startswith(("#", "del"))]


def test_the_product_rule_takes_its_common_factor_out(monkeypatch):
    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    # -2 (1 - x0) - 400 d x0 = (2 - 400 d) x0 - 2, x0 = x[:-1]: two products by x0, one
    collected = _statements(f)
    monkeypatch.setattr(optimize_module, "_collected", lambda e, c: optimize_module._KEEP)
    assert len(collected) < len(_statements(f)), collected
