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
    _graph(ops.sin, [x], Var("y")).check().check_types()


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
