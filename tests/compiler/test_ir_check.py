"""The IR checker (`Graph.check`, `Graph.check_types`) that every pass runs under the test
suite (SRCGRAD_CHECK_IR, set in conftest): it must reject IR that breaks what the
primitives declare."""
from __future__ import annotations

import numpy as np
import pytest

from runtime import ops
from runtime.ops.lists import LIST_FROM
from srcgrad import ir
from srcgrad.ir import Eqn, Graph, IRError, Var
from srcgrad.staging import LEN


def _graph(prim, ins, out):
    return Graph(list(i for i in ins if isinstance(i, Var)), [Eqn(prim, ins, [out], {})], [out])


def test_checks_run_after_every_pass_in_the_suite():
    assert ir.CHECK_EACH_PASS


def test_a_well_typed_equation_passes():
    x = Var("x")
    _graph(ops.sin, [x], Var("y", sclass=x.sclass)).check().check_types()


@pytest.mark.parametrize("prim,kind,message", [
    (LIST_FROM, "array", "makes a list"),
    (LEN, "array", "is meta"),
    (ops.zeros_like, "meta", "makes an array"),
])
def test_a_result_of_the_wrong_kind_is_refused(prim, kind, message):
    x = Var("x")
    with pytest.raises(IRError, match=message):
        _graph(prim, [x], Var("y", kind=kind)).check_types()


def test_an_op_with_two_results_is_refused():
    x = Var("x")
    g = Graph([x], [Eqn(ops.sin, [x], [Var("a"), Var("b")], {})], [])
    with pytest.raises(IRError, match="2 outputs"):
        g.check_types()


def test_use_before_definition_is_refused():
    x, y = Var("x"), Var("y")
    g = Graph([x], [Eqn(ops.sin, [y], [Var("z")], {})], [])
    with pytest.raises(IRError, match="used before definition"):
        g.check()


def test_the_failing_stage_is_named():
    x = Var("x")
    bad = _graph(LIST_FROM, [x], Var("y", kind="array"))
    with pytest.raises(IRError, match="after dce"):
        ir.checked(bad, "dce")


def _looped(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sin(x) * i
    return np.sum(s / 2)


def test_the_printer_shows_kinds_classes_and_carries():
    from srcgrad.lower import lower

    graph = lower(_looped)[0]
    text = graph.pretty()
    x = graph.inputs[0]
    assert f"%x{x.id}: array s=- d=-" in text.splitlines()[0]
    assert "carry=[%s" in text  # the loop's carried value by name, not `<list>`
    sin_line = next(ln for ln in text.splitlines() if "= sin(" in ln)
    assert f"s=s{x.id} " in sin_line  # known to have x's shape
    sum_line = next(ln for ln in text.splitlines() if "= sum(" in ln)
    assert "s=scalar" in sum_line  # a full reduction is 0-d at every call


# ---- arity: the operands and params an equation passes bind to the op's implementation ----

@pytest.mark.parametrize("prim,ins,params", [
    (ops.sin, 2, {}),  # a ufunc of one operand
    (ops.add, 1, {}),
    (ops.where, 2, {}),
    (ops.getitem, 1, {}),
    (ops.matmul, 3, {}),
    (ops.reduced_size, 1, {"keepdims": True}),  # a param it does not take
])
def test_a_wrong_number_of_operands_is_refused(prim, ins, params):
    xs = [Var(f"x{i}") for i in range(ins)]
    g = Graph(xs, [Eqn(prim, xs, [Var("y", kind="meta" if prim.meta else "array")], params)],
              [])
    with pytest.raises(IRError, match="cannot take"):
        g.check_types()


def test_the_operands_an_op_takes_pass():
    x, y, c = Var("x"), Var("y"), Var("c")
    g = Graph([x, y, c], [
        Eqn(ops.add, [x, 1.0], [Var("a", sclass=x.sclass)], {}),
        Eqn(ops.where, [c, x, y], [Var("b")], {}),
        Eqn(ops.sum, [x], [Var("s", sclass=ir.SCALAR)], {"axis": None, "keepdims": False}),
        Eqn(ops.getitem, [x, (0, slice(None))], [Var("i")], {}),
        Eqn(ops.concatenate, [x, y, x], [Var("j")], {"axis": 0}),
    ], [])
    g.check_types()


def test_control_flow_is_not_held_to_an_arity():
    x = Var("x")
    then, els = ir.Block([], [x]), ir.Block([], [x])
    g = Graph([x], [Eqn(ir.COND, [x, x, x, x], [Var("y")], {"then": then, "else": els})], [])
    g.check_types()


# ---- shapes where known ------------------------------------------------------------------

def test_an_elementwise_result_has_its_operands_shape_class():
    x = Var("x")
    with pytest.raises(IRError, match="one shape class"):
        _graph(ops.sin, [x], Var("y")).check_types()
    with pytest.raises(IRError, match="one shape class"):
        _graph(ops.multiply, [x, 2.0], Var("y")).check_types()
    # a constant array operand may widen the result: nothing is claimed
    _graph(ops.multiply, [x, np.ones(3)], Var("y")).check_types()


def test_a_class_with_two_known_shapes_is_refused():
    # a full reduction is 0-d (class SCALAR): a 0-d value broadcast with a (3,) constant
    # is not
    x = Var("x")
    s = Var("s", sclass=ir.SCALAR)
    g = Graph([x], [
        Eqn(ops.sum, [x], [s], {}),
        Eqn(ops.add, [s, np.ones(3)], [Var("y", sclass=ir.SCALAR)], {}),
    ], [])
    with pytest.raises(IRError, match=r"has shape \(3,\) by add's shape rule"):
        g.check_types()


def test_shapes_that_do_not_go_together_are_refused():
    z3, z4 = Var("z3"), Var("z4")
    g = Graph([], [
        Eqn(ops.zeros, [(3,)], [z3], {}),
        Eqn(ops.zeros, [(4,)], [z4], {}),
        Eqn(ops.add, [z3, z4], [Var("y")], {}),
    ], [])
    with pytest.raises(IRError, match="do not broadcast"):
        g.check_types()


def test_values_of_known_shape_classes_that_do_not_go_together_are_refused():
    """A specialized variant's values carry their shapes in their classes: a rewrite that
    adds a (2, 4) bias to the (10, 4) rows of a product is refused (numba, which checks
    no shape, wrote past the array)."""
    rows = Var("rows", sclass=("k", (10, 4)))
    bias = Var("bias", sclass=("k", (2, 4)))
    g = Graph([rows, bias], [
        Eqn(ops.add, [rows, bias], [Var("y", sclass=("k", (10, 4)))], {})], [])
    with pytest.raises(IRError, match="do not broadcast"):
        g.check_types()
    ok = Var("ok", sclass=("k", (4,)))
    Graph([rows, ok], [Eqn(ops.add, [rows, ok], [Var("y", sclass=("k", (10, 4)))], {})],
          []).check_types()


def test_a_creator_and_its_class():
    # two creators whose results share a class must make one shape
    a, b = Var("a"), Var("b")
    b.sclass = a.sclass
    ok = Graph([], [Eqn(ops.zeros, [(2, 3)], [a], {}), Eqn(ops.ones, [(2, 3)], [b], {})], [])
    ok.check_types()
    c = Var("c", sclass=a.sclass)
    bad = Graph([], [Eqn(ops.zeros, [(2, 3)], [a], {}), Eqn(ops.eye, [3], [c], {})], [])
    with pytest.raises(IRError, match=r"has shape \(3, 3\) by eye's shape rule"):
        bad.check_types()


def _two_steps(x, y):
    h = np.tanh(x * y)
    for i in range(3):
        h = h * 0.5 + np.sin(h)
    return np.sum(h * y)


def test_every_stage_checks_its_result(monkeypatch):
    import srcgrad
    from srcgrad import api, codegen, forward, lower, optimize, reverse

    seen = []

    def spy(graph, stage, extra_inputs=None):
        seen.append(stage)
        return ir.checked(graph, stage, extra_inputs)

    for module in (api, codegen, forward, lower, optimize, reverse):
        monkeypatch.setattr(module, "checked", spy)
    x, y = np.linspace(0.1, 0.9, 4), np.linspace(-1.0, 1.0, 4)
    srcgrad.grad(_two_steps)(x, y)
    for stage in ("lowering", "reverse", "simplify, fold and cse", "dce", "fresh returns"):
        assert stage in seen, stage
    seen.clear()
    srcgrad.jvp(_two_steps, (x, y), (y, x))
    assert "forward" in seen and "lowering" in seen
