"""Each primitive's shape rule (`Primitive.out_shape`) against running the op.

Every spec of the op table (tests/ops/test_ops.py) is run on its arrays, and the rule is
asked for the output's shape from the operands' shapes alone (`Shaped`), the other
operands (shapes, indices, axes) given as values: where it tells a shape, that is the
shape the op makes. Rules the declared kind gives (broadcasting, reductions, shape_arg,
shape_like, a shape_rule) must tell one. Also: the codegen facts (`inplace_op`, `adds_at`,
`positional_dtype`, `subscript`, `py_spell`, `updatable`) against what numpy does.
"""
from __future__ import annotations

import collections
import inspect

import numpy as np
import pytest

import test_ops as T  # the spec table (tests/ is on sys.path, see conftest.py)
from runtime.ops import PRIMITIVES
from runtime.ops import helpers
from runtime.ops.shape_rules import UNKNOWN, ShapeMismatch, Shaped

_ARRAY_SPECS = [s for s in T.SPECS if not PRIMITIVES[s.prim].meta and s.check is None]


def _described(s, args):
    """The operands as the rule sees them: arrays by shape and dtype only."""
    return [Shaped(np.shape(a), np.asarray(a).dtype) if isinstance(spec_a, T.A) else a
            for spec_a, a in zip(s.args, args)]


def _must_tell(p) -> bool:
    """Does the declared kind give the rule (not the abstract evaluation)?"""
    return p.kind in ("elementwise", "reduction") or p.shape_rule is not None or \
        p.shape_arg is not None or p.shape_like is not None


@pytest.mark.parametrize("s", _ARRAY_SPECS, ids=lambda s: s.id)
def test_rule_agrees_with_the_op(s):
    args, _ = s.materialize()
    p = PRIMITIVES[s.prim]
    with np.errstate(all="ignore"):
        out = p.impl(*args, **s.params)
    told = p.out_shape(_described(s, args), s.params)
    if _must_tell(p):
        assert told is not None, f"{s.prim}: its declared kind gives no shape"
    if told is not None:
        assert told == np.shape(out)
    # given the arrays themselves (constants in the IR), the rule tells the same
    told_on_values = p.out_shape(args, s.params)
    assert told_on_values is None or told_on_values == np.shape(out)


def test_most_ops_have_a_rule():
    told = collections.Counter()
    for s in _ARRAY_SPECS:
        args, _ = s.materialize()
        if PRIMITIVES[s.prim].out_shape(_described(s, args), s.params) is not None:
            told[s.prim] += 1
    array_ops = {s.prim for s in _ARRAY_SPECS}
    assert len(told) >= 0.95 * len(array_ops), sorted(array_ops - set(told))


@pytest.mark.parametrize("name, args, params, shape", [
    ("add", [Shaped((3, 1)), Shaped((4,))], {}, (3, 4)),
    ("where", [Shaped((2, 1), bool), 1.0, Shaped((3,))], {}, (2, 3)),
    ("sum", [Shaped((2, 3, 4))], {"axis": (0, -1), "keepdims": True}, (1, 3, 1)),
    ("sum", [Shaped((2, 3, 4))], {}, ()),
    ("mean", [Shaped((2, 3, 4))], {"axis": 1}, (2, 4)),
    ("reshape", [Shaped((3, 4)), (-1, 2)], {}, (6, 2)),
    ("broadcast_to", [1.0, (2, 3)], {}, (2, 3)),
    ("getitem", [Shaped((3, 4, 5)), (0, slice(None, 2))], {}, (2, 5)),
    ("getitem", [Shaped((3, 4)), (Ellipsis, None)], {}, (3, 4, 1)),
    ("matmul", [Shaped((5, 3, 4)), Shaped((4, 2))], {}, (5, 3, 2)),
    ("zeros", [(3, 4)], {}, (3, 4)),
    ("full", [5, 2.0], {}, (5,)),
    ("eye", [3, 4], {}, (3, 4)),
    ("arange", [2, 10, 3], {}, (3,)),
    ("zeros_like", [Shaped((2, 2))], {}, (2, 2)),
])
def test_rules(name, args, params, shape):
    assert PRIMITIVES[name].out_shape(args, params) == shape


def test_what_cannot_be_told():
    # a shape read from the values (a boolean mask's count), an unknown operand, meta ops
    assert PRIMITIVES["getitem"].out_shape([Shaped((3, 4)), Shaped((3, 4), bool)]) is None
    assert PRIMITIVES["repeat"].out_shape([Shaped((3,)), Shaped((3,), np.int64), 0]) is None
    assert PRIMITIVES["getitem"].out_shape([Shaped((3, 4)), UNKNOWN]) is None
    assert PRIMITIVES["add"].out_shape([Shaped((3,)), UNKNOWN]) is None
    assert PRIMITIVES["shape"].out_shape([Shaped((3,))]) is None
    assert PRIMITIVES["inv"].out_shape([Shaped((3, 3))]) is None  # singular on zeros


def test_mismatches_are_errors():
    with pytest.raises(ShapeMismatch):
        PRIMITIVES["multiply"].out_shape([Shaped((3,)), Shaped((4,))])
    with pytest.raises(ShapeMismatch):
        PRIMITIVES["sum"].out_shape([Shaped((3,))], {"axis": 1})
    with pytest.raises(ShapeMismatch):
        PRIMITIVES["reshape"].out_shape([Shaped((3, 4)), (5, -1)])


# ---- the facts codegen reads, against numpy ---------------------------------------------

def _with(fact):
    return sorted((p for p in PRIMITIVES.values() if getattr(p, fact)), key=lambda p: p.name)


@pytest.mark.parametrize("p", _with("inplace_op"), ids=lambda p: p.name)
def test_inplace_operator_computes_the_op(p):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (4,))
    expected = p.impl(a, b)
    before = a
    scope = {"a": a, "b": b}
    exec(f"a {p.inplace_op}= b", scope)
    assert scope["a"] is before  # in place
    np.testing.assert_array_equal(scope["a"], expected)


@pytest.mark.parametrize("p", _with("adds_at"), ids=lambda p: p.name)
def test_adds_at_is_an_update_of_zeros(p):
    rng = np.random.default_rng(1)
    g = rng.normal(size=(2, 3))
    idx = (slice(1, 3), slice(None))
    args = [g, None, (4, 3)]
    args[p.adds_at] = idx
    z = np.zeros((4, 3))
    z[idx] += g
    np.testing.assert_array_equal(p.impl(*args), z)


# the operands before the dtype's position, for each op that declares one
_LEADING = {"zeros": [(2, 3)], "ones": [(2, 3)], "full": [(2, 3), 7], "eye": [3, 4, 0]}


@pytest.mark.parametrize("p", _with("positional_dtype"), ids=lambda p: p.name)
def test_positional_dtype(p):
    at, default = p.positional_dtype
    args = _LEADING[p.name]
    assert len(args) == at
    got = p.impl(*args).dtype
    want = np.float64 if default == "float" else np.asarray(args[default[1]]).dtype
    assert got == want
    assert p.impl(*args, np.float32).dtype == np.float32  # the dtype at position `at`


@pytest.mark.parametrize("p", _with("subscript"), ids=lambda p: p.name)
def test_subscript(p):
    x = np.arange(24.0).reshape(2, 3, 4)
    idx = (1, slice(None, 2), None)
    np.testing.assert_array_equal(p.impl(x, idx), x[idx])


@pytest.mark.parametrize("p", _with("py_spell"), ids=lambda p: p.name)
@pytest.mark.parametrize("n", [2.5, 3, np.ones((2, 3))])
def test_py_spelling_reads_a_python_number(p, n):
    text = p.py_spell(["n"], {}, p.defaults)
    scope = {"np": np, "n": n, **{k: getattr(helpers, k) for k in helpers.HELPERS}}
    np.testing.assert_array_equal(eval(text, scope), p.impl(n))


@pytest.mark.parametrize("p", _with("updatable"), ids=lambda p: p.name)
def test_updatable_results_are_new_memory(p):
    rng = np.random.default_rng(2)
    n = sum(1 for q in inspect.signature(p.impl).parameters.values()
            if q.kind == q.POSITIONAL_ONLY or q.default is q.empty and
            q.kind == q.POSITIONAL_OR_KEYWORD)
    shapes = [(3, 4), (4, 2)] if p.name == "matmul" else [(3, 4)] * max(n, 1)
    args = [rng.uniform(0.5, 0.9, s) for s in shapes]
    with np.errstate(all="ignore"):
        out = p.impl(*args)
    assert isinstance(out, np.ndarray) and out.flags.writeable
    assert not any(np.shares_memory(out, a) for a in args)


def test_where_is_not_updatable():
    assert not PRIMITIVES["where"].updatable and PRIMITIVES["add"].updatable


_MATMUL_SHAPES = [(3,), (3, 4), (2, 3, 4), (4,), (4, 5), (1, 4, 5), (2, 1, 3, 4), (5, 4, 2),
                  (1, 3), (4, 1)]


@pytest.mark.parametrize("a", _MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("b", _MATMUL_SHAPES, ids=str)
def test_matmul_rule_is_numpys_for_vectors_matrices_and_stacks(a, b):
    """matmul's own rule (it is not evaluated: large operands would cost the product)."""
    try:
        want = np.matmul(np.ones(a), np.ones(b)).shape
    except ValueError:  # the rule tells no shape (or says they do not go together)
        try:
            told = PRIMITIVES["matmul"].out_shape([Shaped(a, np.float64),
                                                   Shaped(b, np.float64)])
        except ShapeMismatch:
            return
        assert told is None
        return
    assert PRIMITIVES["matmul"].out_shape([Shaped(a, np.float64), Shaped(b, np.float64)]) \
        == want


def test_views_of_large_operands_are_told():
    """x[1:] and x.T of an array beyond the evaluation limit: a view costs nothing."""
    big = Shaped((1000, 2000), np.float64)
    assert PRIMITIVES["getitem"].out_shape([big, (slice(1, None), 0)]) == (999,)
    assert PRIMITIVES["transpose"].out_shape([big]) == (2000, 1000)
