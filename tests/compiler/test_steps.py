"""A specialized variant's loops over time (srcgrad.optimize.stacks_as_steps,
hoist_step_maps): the values a loop saves for its adjoint are kept in arrays of steps,
and elementwise work on every step's values is made once before the loop. Each gradient
is checked against finite differences and the shape-polymorphic code (which keeps its
stacks), on numpy and, where numba is installed, on the numba backend; the generated
source shows what was rewritten and what was left alone."""
from __future__ import annotations

import importlib.util
import re
import warnings

import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

import steps_user as U

BACKENDS = ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])

CASES = {
    "rnn": (U.rnn, U.rnn_inputs(), (0, 1, 2)),
    "gru": (U.gru_like, U.gru_inputs(), (0, 1, 3)),
    "decayed_sum": (U.decayed_sum, (np.linspace(-1.0, 1.0, 4),
                                    np.linspace(-2.0, 2.0, 20).reshape(5, 4)), (0,)),
    "break": (U.rnn_break, U.rnn_inputs(), (0, 1, 2)),
    "branch": (U.rnn_branch, U.rnn_inputs(), (0, 1, 2)),
    "nested": (U.rnn_nested, U.rnn_inputs(T=3), (0, 1, 2)),
    "logged": (U.rnn_logged, U.rnn_inputs(), (0, 1)),
    "decayed_sum_dx": (U.decayed_sum, (np.linspace(-1.0, 1.0, 4),
                                       np.linspace(-2.0, 2.0, 20).reshape(5, 4)), (0, 1)),
    "decayed_from_one": (U.decayed_from_one, (np.linspace(-1.0, 1.0, 4),
                                              np.linspace(-2.0, 2.0, 20).reshape(5, 4)),
                         (0, 1)),
    "weighted_steps": (U.weighted_steps, (np.linspace(-1.0, 1.0, 4),
                                          np.linspace(-2.0, 2.0, 20).reshape(5, 4)), (0, 1)),
    "ema_1d": (U.ema_tanh, (np.array(0.6), np.linspace(-1.2, 0.9, 7)), (0, 1)),
    "decayed_sum_1d": (U.decayed_sum, (np.array(0.7), np.linspace(-2.0, 2.0, 9)), (0, 1)),
    "from_one": (U.rnn_from_one, U.rnn_inputs(), (0, 1, 2, 3)),
    "every_state": (U.rnn_every_state, U.rnn_inputs(), (0, 1, 2, 3, 4)),
    "twice": (U.rnn_twice, U.rnn_inputs(), (0, 1, 2, 3, 4)),
    "pooled": (U.rnn_pooled, U.rnn_inputs(), (0, 1, 2)),
    "pooled_feedback": (U.rnn_pooled_feedback, U.rnn_inputs(), (0, 1, 2)),
    "pooled_one_row": (U.rnn_pooled, U.rnn_inputs(batch=1), (0, 1, 2)),
    "broadcast_step": (U.rnn_broadcast_step, (
        np.linspace(-1.0, 1.0, 4), np.linspace(-2.0, 2.0, 40).reshape(5, 2, 4),
        np.linspace(0.2, 0.9, 8).reshape(2, 4)), (0, 1, 2)),
}


#: cases numba refuses (it runs the numpy code, with a warning): a statement run as
#: written (rnn_logged), a carried number that is a 0-d array on one path and a float on
#: another (the 1-d signals: "Cannot unify float64 and array(float64, 0d, C)")
_FALLS_BACK = {"logged", "ema_1d", "decayed_sum_1d"}


def _specialized(fn, args, wrt, backend, strict=True):
    g = srcgrad.grad(fn, wrt=wrt, cache=False, backend=backend)
    with warnings.catch_warnings():
        if strict:  # (no fallback to the numpy code)
            warnings.simplefilter("error", RuntimeWarning)
        else:  # (numba refuses the statement that runs as written in rnn_logged)
            warnings.simplefilter("ignore", RuntimeWarning)
        src = g.specialized_source(*args)
    return g, src


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_loops_over_time_give_the_gradient(case, backend):
    fn, args, wrt = CASES[case]
    g, _ = _specialized(fn, args, wrt, backend, strict=case not in _FALLS_BACK)
    want = srcgrad.grad(fn, wrt=wrt, specialize=False, cache=False)(*args)
    for _ in range(4):  # (the variant runs from the third call)
        got = g(*args)
        for k, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(a, finite_differences(fn, args, wrt[k]), rtol=1e-5,
                                       atol=1e-7)


def _body(src):
    return src.split("return general", 1)[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_rnn_saves_its_states_in_one_array_and_its_tanh_derivative_is_made_once(backend):
    _, src = _specialized(*CASES["rnn"], backend)
    body = _body(src)
    assert ".append(" not in body and ".pop()" not in body, src  # no stack
    lines = [ln for ln in body.splitlines() if not ln.strip().startswith("#")]
    adjoint = [i for i, ln in enumerate(lines) if ln.strip().startswith("for ")][-1]
    assert any("np.square(" in ln for ln in lines[:adjoint]), src  # 1 - h**2, all steps
    assert not any("np.square(" in ln for ln in lines[adjoint:]), src
    assert "np.concatenate((" in body, src  # the states before each step: h0, then ends


_OVER_SLOT = re.compile(r"^\s*(\w+) = (\w+)\[t_1\]\n\s*\1 \*= \w+$", re.M)


def test_the_adjoint_writes_each_step_over_the_derivative_it_reads():
    """`d = dh_all[t]; d *= dh`: the array of tanh's derivatives becomes the array of the
    pre-activations' cotangents, with no array of zeros made for it (codegen's
    `_slots_in_place`); also for an input's cotangent (decayed_sum's dX). (numba's compiled
    body makes the derivatives in a fused loop, and copies each step, which costs it
    little.)"""
    _, src = _specialized(*CASES["rnn"], "numpy")
    over = _OVER_SLOT.search(_body(src))
    assert over, src
    assert f"{over.group(2)} = np.zeros" not in src and "np.zeros_like(h_all" not in src, src
    _, src = _specialized(*CASES["decayed_sum_dx"], "numpy")
    assert _OVER_SLOT.search(_body(src)) and "np.zeros_like(X)" not in src, src


def test_elementwise_work_on_each_step_of_an_input_is_made_once_before_the_loop():
    _, src = _specialized(*CASES["decayed_sum"], "numpy")
    lines = [ln for ln in _body(src).splitlines() if not ln.strip().startswith("#")]
    loop = next(i for i, ln in enumerate(lines) if ln.strip().startswith("for t in range("))
    assert any("np.exp(" in ln for ln in lines[:loop]), src
    assert not any("np.exp(" in ln for ln in lines[loop:]), src


@pytest.mark.parametrize("case", ["break", "branch"])
def test_a_loop_of_unknown_length_or_a_value_saved_in_a_branch_keeps_its_stack(case):
    _, src = _specialized(*CASES[case], "numpy")
    assert ".pop()" in _body(src), src


def test_float32_steps_stay_float32():
    args = U.rnn_inputs(dtype=np.float32)
    g, src = _specialized(U.rnn, args, (0, 1, 2), "numpy")
    assert "'float32'" in src, src
    want = srcgrad.grad(U.rnn, wrt=(0, 1, 2), specialize=False, cache=False)(*args)
    for _ in range(4):
        for a, b in zip(g(*args), want):
            assert a.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _loops(src):
    """The lines of a variant's body (numba's: the function it compiles, without the
    fused loops it calls), and the indexes of its loops' first lines."""
    body = _body(src).split("\n@njit")[0]
    if "_compiled(" in body:
        body = src.split("_compiled(", 2)[2].split("\n@njit")[0]
    lines = [ln for ln in body.splitlines() if not ln.strip().startswith("#")]
    return lines, [i for i, ln in enumerate(lines) if ln.strip().startswith("for ")]


def _indented_after(lines, i):
    """The lines of the loop that starts at line i (its body: indented deeper)."""
    depth = len(lines[i]) - len(lines[i].lstrip())
    body = []
    for ln in lines[i + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= depth:
            break
        body.append(ln)
    return body


_SUM = re.compile(r"sum(_\d+)?\(")  # (np.sum(, x.sum(, numba's loop _sum_2(...)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sum_over_steps_of_reductions_is_reduced_once_after_the_loop(backend):
    """`acc = acc + np.sum(x, axis=0)` at every step (the adjoint of a bias added in a loop
    over time; a running total of the user's) adds the steps' x up in the loop and reduces
    once after it (srcgrad.optimize.sum_steps_first); the gradients are checked against
    finite differences in test_loops_over_time_give_the_gradient."""
    for case in ("rnn", "pooled"):
        _, src = _specialized(*CASES[case], backend)
        lines, loops = _loops(src)
        assert loops, src
        inside = [ln for i in loops for ln in _indented_after(lines, i) if _SUM.search(ln)]
        after = [ln for ln in lines[loops[-1]:] if _SUM.search(ln)]
        assert not inside and after, src


@pytest.mark.parametrize("case", ["pooled_feedback", "pooled_one_row"])
def test_a_running_sum_the_step_reads_or_that_reduces_nothing_stays_in_the_loop(case):
    """A running sum that the step reads is needed at every step; a reduction of one row
    to one row costs no more than the add that would replace it."""
    _, src = _specialized(*CASES[case], "numpy")
    lines, loops = _loops(src)
    assert any(_SUM.search(ln) for ln in _indented_after(lines, loops[0])), src


def test_the_transposed_weights_a_loop_multiplies_by_are_laid_out_in_rows_once():
    """The adjoint of `h @ Wh` in a loop multiplies by Wh.T at every step: a numpy variant
    copies it once, before the loop, into a contiguous array (BLAS is faster on it)."""
    _, src = _specialized(*CASES["rnn"], "numpy")
    lines, loops = _loops(src)
    made = [ln for ln in lines[:loops[-1]] if "np.ascontiguousarray(Wh.T)" in ln]
    assert len(made) == 1, src
    name = made[0].split("=")[0].strip()
    assert any(f".dot({name})" in ln for ln in _indented_after(lines, loops[-1])), src
    # a transpose read outside the loops stays a view
    args = (np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(-2.0, 2.0, 15).reshape(5, 3))
    _, src = _specialized(U.projected_then_scanned, args, (0, 1), "numpy")
    assert re.search(r"= W\.T\n", src) and "ascontiguousarray" not in src, src


@pytest.mark.skipif("numba" not in BACKENDS, reason="needs numba")
def test_numbas_large_form_also_copies_the_transposed_weights_once():
    """At large sizes numba compiles the loops' elementwise work and numpy runs the rest
    (the products among it): the transpose is copied as in a numpy variant."""
    args = U.rnn_inputs(T=3, batch=2048, d_in=8, d_hidden=32)
    g, src = _specialized(U.rnn, args, (0, 1, 2), "numba")
    assert "Its loops compiled by numba" in src and "np.ascontiguousarray(Wh.T)" in src, src
    want = srcgrad.grad(U.rnn, wrt=(0, 1, 2), specialize=False, cache=False)(*args)
    for _ in range(4):
        for a, b in zip(g(*args), want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
