"""A Python object the function makes (its class's code runs as written) stays that object
through a loop that carries it and a branch that merges it: its methods are its own, not
numpy's (`c.add()` was compiled as np.add of the counter, and crashed the optimizer;
`a.add(v * v)` in a loop as `a + v * v`). Gradients checked against the tape and finite
differences; what srcgrad cannot differentiate is refused with the line."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad
from srcgrad.errors import SrcgradError

import objects_made_inside_user as U

X = np.array([1.0, 2.0, 0.5, -0.75])


@pytest.mark.parametrize("fn,rest", [
    (U.counted_loss, ()), (U.rebound_counter, ()), (U.branch_counter, (1.0,)),
    (U.branch_counter, (-1.0,)), (U.counter_scale, ()),
], ids=["carried-counter", "rebound-counter", "branch-then", "branch-else", "counter-mean"])
def test_an_object_carried_or_merged_keeps_its_methods(fn, rest):
    check_grad(fn, (X.copy(),) + rest, 0)


@pytest.mark.parametrize("fn,what,line", [
    (U.accumulated_in_a_loop, "a.add", "s = a.add(v * v)"),
    (U.accumulated_total, "made when the function runs", "return a.total + np.sum(x)"),
    # (the call named as written: it was named by the hoisted call's internal name,
    # `Shift.0.140236288891904.add`)
    (U.made_and_called, "call to Shift(scale).add,", "return Shift(scale).add(x).sum()"),
], ids=["method-of-a-differentiated-value", "attribute", "method-of-an-object-made-there"])
def test_what_cannot_be_differentiated_is_refused_with_the_line(fn, what, line):
    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(fn)(X.copy())
    text = str(info.value)
    assert what in text and line in text and "objects_made_inside_user.py" in text, text


def test_an_arguments_method_by_a_name_arrays_lack_is_refused():
    """`model.add(x)` of an object argument was staged as numpy's add(model, x): the
    object's `__add__` then gave a wrong gradient, silently."""
    with pytest.raises(SrcgradError, match=r"`model.add` reads the attribute 'add' of the "
                       r"argument `model`") as info:
        srcgrad.grad(U.shifted_loss, wrt=1)(U.Shift(0.5), X.copy())
    assert "objects_made_inside_user.py" in str(info.value)


def test_an_array_method_that_is_an_op_compiles():
    check_grad(U.clipped_loss, (X.copy(),), 0)


@pytest.mark.parametrize("fn,line", [
    (U.scaled_by_int8_max, "np.iinfo(np.int8).max"),
    (U.shifted_by_int16_range, "info.max"),
])
def test_an_attribute_of_numpys_info_object_made_in_the_function_is_refused(fn, line):
    """np.iinfo(t) made in the function runs as written: its `.max` was taken for the
    array method max, and codegen failed with an internal TypeError ("no literal spelling
    for _BoundMethod"). It is refused at its line, as an object made there."""
    with pytest.raises(SrcgradError) as info:
        srcgrad.grad(fn)(X.copy())
    text = str(info.value)
    assert f"`{line}` reads the attribute 'max'" in text and "iinfo object" in text, text
    assert "objects_made_inside_user.py" in text and "outside the function" in text


def test_numpy_scalars_made_in_the_function_are_numbers():
    check_grad(U.scaled_by_a_numpy_scalar_made_here, (X.copy(),), 0)
