"""The control-flow corpus (tests/corpus) through srcgrad, the tape engine and finite
differences.

`CASES` registers every corpus function with the arguments to differentiate it at (several
inputs per case, chosen to take different branches and run different trip counts) and the
parameters it is differentiated with respect to. For each case one compiled gradient is
checked at every input against
- the tape: the same unmodified function called on `runtime.tensor(..., requires_grad=True)`
  arguments, then `.backward()`;
- float64 central finite differences of the function on plain arrays;
and it must not recompile between inputs (`compile_count` stays 1).

Every run on plain arrays is traced (which corpus instructions ran, how often), so the
tests also check that a case's inputs really take different paths through the function, and that no
finite-difference step flips a branch or changes a trip count (an input too close to a
branch condition would make the finite differences meaningless).
"""
from __future__ import annotations

import collections
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import runtime as rt
import srcgrad

from paths import TESTS as _TESTS  # noqa: E402
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import corpus  # noqa: E402
from corpus import branches, calls, combined, loops, unsupported, whiles  # noqa: E402
from compiler_helpers import check_specialized  # noqa: E402

CORPUS_DIR = os.path.dirname(os.path.abspath(corpus.__file__))
CORPUS_MODULES = (branches, loops, whiles, calls, combined)

FD_EPS = 1e-6
FD_RTOL, FD_ATOL = 1e-5, 1e-6
TAPE_RTOL, TAPE_ATOL = 1e-9, 1e-10

# Compiler bugs the corpus hits, each with a minimal reproduction.
#
#   def f(x, n):                       # srcgrad.grad(f)(np.ones(2), 3) gives [3, 3],
#       y = x                          # the tape and finite differences [4, 4]
#       for _ in range(n):
#           y = y + x
#       return np.sum(y)
#   def f(x, n):                       # compiling raises IndentationError: the adjoint of
#       y = x                          # the `if` has nothing in its then-block
#       for _ in range(n):
#           if np.sum(y) > 10.0:
#               break
#           y = y * 2.0
#       return np.sum(y)


# ---- the registry -----------------------------------------------------------------------

@dataclass
class Case:
    """A corpus function, builders of its arguments (each `rng -> tuple`) and its wrt."""

    fn: Callable
    inputs: list
    wrt: tuple = (0,)
    xfail: str | None = None
    #: at least this many distinct paths (lines run and how often) among the inputs
    min_paths: int = 2

    @property
    def id(self) -> str:
        return f"{self.fn.__module__.rsplit('.', 1)[-1]}.{self.fn.__name__}"


def U(r, *shape, lo=-1.0, hi=1.0):
    """Uniform floats in [lo, hi)."""
    return r.uniform(lo, hi, shape)


def near(r, base, noise=0.02):
    """`base` (nested lists) plus a little noise: structured inputs whose branch
    conditions stay far from flipping."""
    base = np.asarray(base, dtype=np.float64)
    return base + r.uniform(-noise, noise, base.shape)


def signed_rows(r, signs, width=3):
    """Rows whose entries all have the given signs (and magnitude >= 0.2)."""
    return np.stack([s * U(r, width, lo=0.2, hi=1.0) for s in signs]) if signs \
        else np.zeros((0, width))


def with_first(r, n, first, lo=-1.0, hi=0.8):
    x = U(r, n, lo=lo, hi=hi)
    x[0] = first
    return x


B, L, W, C = branches, loops, whiles, calls
M = combined

CASES = [
    # -- branches -----------------------------------------------------------------------
    Case(B.sign_branch, [lambda r: (U(r, 4, lo=0.2),), lambda r: (U(r, 4, hi=-0.2),),
                         lambda r: (U(r, 2, 3, lo=0.1),)]),
    Case(B.elif_chain, [lambda r: (U(r, 4, lo=0.6, hi=1.2),),
                        lambda r: (U(r, 4, lo=-0.3, hi=0.3),),
                        lambda r: (U(r, 4, lo=-1.2, hi=-0.6),)]),
    Case(B.int_threshold, [lambda r: (U(r, 3), 5), lambda r: (U(r, 3), 2),
                           lambda r: (U(r, 2, 2), 3)]),
    Case(B.nested_if, [lambda r: (U(r, 3, lo=0.2), U(r, 3, lo=0.2)),
                       lambda r: (U(r, 3, lo=0.2), U(r, 3, hi=-0.2)),
                       lambda r: (U(r, 3, hi=-0.2), U(r, 3, lo=0.2)),
                       lambda r: (U(r, 3, hi=-0.2), U(r, 3, hi=-0.2))],
         wrt=(0, 1), min_paths=4),
    Case(B.cond_expr, [lambda r: (U(r, 4, lo=0.2),), lambda r: (U(r, 4, hi=-0.2),)]),
    Case(B.cond_expr_nested, [lambda r: (U(r, 3), 2.0), lambda r: (U(r, 3), 0.5),
                              lambda r: (U(r, 3), -1.0)], min_paths=3),
    Case(B.cond_expr_in_call, [lambda r: (with_first(r, 3, 1.6),),
                               lambda r: (U(r, 3, hi=0.8),)]),
    Case(B.and_condition, [lambda r: (U(r, 3, lo=0.2), U(r, 3, lo=0.2)),
                           lambda r: (U(r, 3, lo=0.2), U(r, 3, hi=-0.2)),
                           lambda r: (U(r, 3, hi=-0.2), U(r, 3, lo=0.2))], wrt=(0, 1)),
    Case(B.or_condition, [lambda r: (U(r, 3, lo=2.2, hi=2.5), U(r, 3)),
                          lambda r: (U(r, 3), U(r, 3, lo=-2.5, hi=-2.2)),
                          lambda r: (U(r, 3), U(r, 3))], wrt=(0, 1), min_paths=3),
    Case(B.not_condition, [lambda r: (U(r, 3, hi=0.8),), lambda r: (U(r, 3, lo=1.2, hi=2.0),)]),
    Case(B.mixed_bool, [lambda r: (U(r, 3, lo=0.2), 3, True),
                        lambda r: (U(r, 3, hi=-0.2), 3, True),
                        lambda r: (U(r, 3, hi=-0.2), 1, False)], min_paths=3),
    Case(B.chained_compare, [lambda r: (U(r, 4, lo=-0.2, hi=0.2),),
                             lambda r: (U(r, 4, lo=0.5),), lambda r: (U(r, 4, hi=-0.5),)]),
    Case(B.early_return, [lambda r: (U(r, 3, lo=2.2, hi=3.0),), lambda r: (U(r, 3),)]),
    Case(B.return_both_sides, [lambda r: (U(r, 3, lo=0.2), U(r, 3, lo=0.2)),
                               lambda r: (U(r, 3, lo=0.2), U(r, 3, hi=-0.2))], wrt=(0, 1)),
    Case(B.return_in_elif, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1),
                            lambda r: (U(r, 3), 2), lambda r: (U(r, 3), 5)], min_paths=4),
    Case(B.branch_on_other_arg, [lambda r: (U(r, 3), U(r, 3, lo=0.2)),
                                 lambda r: (U(r, 3), U(r, 3, hi=-0.2))]),
    Case(B.branch_tuple_values, [lambda r: (with_first(r, 3, 0.5),),
                                 lambda r: (with_first(r, 3, -0.5),)]),
    Case(B.branch_if_without_else, [lambda r: (U(r, 3, hi=-0.2),), lambda r: (U(r, 3, lo=0.2),)]),
    Case(B.branch_constant_values, [lambda r: (U(r, 3, lo=0.2),),
                                    lambda r: (U(r, 3, hi=-0.2),)]),
    Case(B.branch_on_shape, [lambda r: (U(r, 5),), lambda r: (U(r, 3),), lambda r: (U(r, 2),)]),
    Case(B.branch_on_len_parity, [lambda r: (U(r, 4),), lambda r: (U(r, 3),)]),
    Case(B.branch_absolute_value, [lambda r: (U(r, 3, lo=1.0, hi=2.0), U(r, 3, hi=0.0)),
                                   lambda r: (U(r, 3, hi=0.0), U(r, 3, lo=1.0, hi=2.0))],
         wrt=(0, 1)),
    Case(B.branch_output_independent, [lambda r: (U(r, 3), 2), lambda r: (U(r, 3), 0)]),
    Case(B.branch_nested_returns, [lambda r: (U(r, 3, lo=0.2), 2), lambda r: (U(r, 3, lo=0.2), 1),
                                   lambda r: (U(r, 3, hi=-0.2), 3),
                                   lambda r: (U(r, 3, hi=-0.2), 0)], min_paths=4),
    Case(B.branch_after_branch, [lambda r: (near(r, [0.5, 0.7, -0.3]),),
                                 lambda r: (near(r, [-0.5, 0.7, 0.2]),),
                                 lambda r: (near(r, [0.5, -0.7, 0.1]),),
                                 lambda r: (near(r, [-0.4, -0.6, 0.9]),)], min_paths=4),

    # -- for loops ----------------------------------------------------------------------
    Case(L.range_n, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1), lambda r: (U(r, 2, 3), 5)]),
    Case(L.range_start_stop, [lambda r: (U(r, 3), 2, 5), lambda r: (U(r, 3), 0, 1),
                              lambda r: (U(r, 3), 3, 3)]),
    Case(L.range_step, [lambda r: (U(r, 3), 1, 7, 2), lambda r: (U(r, 3), 2, 9, 3),
                        lambda r: (U(r, 3), 1, 2, 1)]),
    Case(L.range_negative_step, [lambda r: (U(r, 3), 3), lambda r: (U(r, 3), 1),
                                 lambda r: (U(r, 3), 0)]),
    Case(L.power_loop, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1), lambda r: (U(r, 3), 4)]),
    Case(L.zip_arrays, [lambda r: (U(r, 3, 2), U(r, 3, 2)), lambda r: (U(r, 4, 2), U(r, 2, 2)),
                        lambda r: (U(r, 1, 3), U(r, 1, 3))], wrt=(0, 1)),
    Case(L.enumerate_rows, [lambda r: (U(r, 3, 2),), lambda r: (U(r, 1, 4),),
                            lambda r: (U(r, 5, 2),)]),
    Case(L.enumerate_start, [lambda r: (U(r, 3, 2), U(r, 2)), lambda r: (U(r, 2, 2), U(r, 2))],
         wrt=(0, 1)),
    Case(L.reversed_range, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 2),
                            lambda r: (U(r, 3), 4)]),
    Case(L.reversed_rows, [lambda r: (U(r, 3, 2), U(r, 2)), lambda r: (U(r, 1, 2), U(r, 2))],
         wrt=(0, 1)),
    Case(L.rows_loop, [lambda r: (U(r, 3, 2),), lambda r: (U(r, 5, 1),),
                       lambda r: (U(r, 0, 2),)]),
    Case(L.augassign_loop, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1),
                            lambda r: (U(r, 3), 4)]),
    Case(L.tuple_state, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1), lambda r: (U(r, 3), 3)]),
    Case(L.rnn_cell, [lambda r: (U(r, 3, 3), U(r, 3, 2), U(r, 3), U(r, 4, 2), U(r, 3)),
                      lambda r: (U(r, 3, 3), U(r, 3, 2), U(r, 3), U(r, 1, 2), U(r, 3)),
                      lambda r: (U(r, 3, 3), U(r, 3, 2), U(r, 3), U(r, 0, 2), U(r, 3))],
         wrt=(0, 1, 2, 3, 4)),
    Case(L.rnn_batched, [lambda r: (U(r, 3, 3), U(r, 2, 3), U(r, 3), U(r, 4, 2, 2), U(r, 2, 3)),
                         lambda r: (U(r, 3, 3), U(r, 2, 3), U(r, 3), U(r, 2, 5, 2),
                                    U(r, 5, 3))],
         wrt=(0, 1, 2, 3, 4)),
    Case(L.lstm_like, [lambda r: (U(r, 3, 2), U(r, 2, 4), U(r, 2, 4)),
                       lambda r: (U(r, 1, 2), U(r, 2, 4), U(r, 2, 4))], wrt=(0, 1, 2)),
    Case(L.break_loop, [lambda r: (U(r, 3, lo=0.5), 10), lambda r: (U(r, 3, lo=0.5), 2),
                        lambda r: (U(r, 3, hi=-0.2), 3)], min_paths=3),
    Case(L.continue_loop, [lambda r: (signed_rows(r, [1, -1, 1, -1]),),
                           lambda r: (signed_rows(r, [-1, -1]),),
                           lambda r: (signed_rows(r, [1, 1, 1]),)], min_paths=3),
    Case(L.break_and_continue, [
        lambda r: (near(r, [[0.5, 0.5, 0.5], [-0.5, 1, 1], [1, 1, 1], [1, 1, 1]]), 3.0),
        lambda r: (near(r, [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]), 3.0),
        lambda r: (near(r, [[-0.5, 1, 1], [2, 1, 1], [1, 1, 1]]), 3.0)], min_paths=3),
    Case(L.nested_for, [lambda r: (U(r, 2, 3), 0), lambda r: (U(r, 2, 3), 1),
                        lambda r: (U(r, 3, 2), 3)]),
    Case(L.triangular_loops, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 2),
                              lambda r: (U(r, 3), 4)]),
    Case(L.loop_scalar_state, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 2),
                               lambda r: (U(r, 3), 3)]),
    Case(L.zero_trip_possible, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 3)]),
    Case(L.index_with_loop_variable, [lambda r: (U(r, 3),), lambda r: (U(r, 1),),
                                      lambda r: (U(r, 5),)]),
    Case(L.neighbour_differences, [lambda r: (U(r, 4),), lambda r: (U(r, 2),),
                                   lambda r: (U(r, 1),)]),
    Case(L.python_tuple_loop, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)], min_paths=1),
    Case(L.zip_range_rows, [lambda r: (U(r, 4, 2), 2), lambda r: (U(r, 2, 2), 5),
                            lambda r: (U(r, 3, 2), 0)]),
    Case(L.list_then_stack, [lambda r: (U(r, 3), 1), lambda r: (U(r, 3), 3),
                             lambda r: (U(r, 2, 2), 4)]),
    Case(L.rnn_hidden_states, [lambda r: (U(r, 3, 3), U(r, 1, 3), U(r, 3)),
                               lambda r: (U(r, 3, 3), U(r, 3, 3), U(r, 3))], wrt=(0, 1, 2)),
    Case(L.list_stack_weighted, [lambda r: (U(r, 1, 3),), lambda r: (U(r, 3, 2),)]),
    Case(L.return_inside_loop, [lambda r: (U(r, 3, lo=0.5), 3), lambda r: (U(r, 3, lo=0.5), 0),
                                lambda r: (U(r, 3, hi=-0.2), 2)]),
    Case(L.return_first_big_row, [lambda r: (near(r, [[0.5, 0.2], [1.5, 0.3], [2.0, 2.0]]),),
                                  lambda r: (near(r, [[0.5, 0.2], [0.3, 0.1]]),)]),

    # -- while loops --------------------------------------------------------------------
    Case(W.grow_until, [lambda r: (near(r, [0.7, 0.8, 0.6]),),
                        lambda r: (near(r, [2.5, 2.2, 2.4]),),
                        lambda r: (near(r, [4.0, 4.5, 5.0]),)], min_paths=3),
    Case(W.counter_while, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1),
                           lambda r: (U(r, 3), 4)]),
    Case(W.newton_sqrt, [lambda r: (near(r, [1.5, 2.5, 3.5]),), lambda r: (near(r, [1.0, 1.1]),),
                         lambda r: (near(r, [9.0, 0.25]),)]),
    Case(W.while_true_break, [lambda r: (near(r, [2.0, 1.5, 2.5]),),
                              lambda r: (near(r, [0.3, -0.2, 0.1]),),
                              lambda r: (near(r, [3.0, 3.5, 4.0, 2.5]),)]),
    Case(W.while_continue, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 3),
                            lambda r: (U(r, 3), 4)]),
    Case(W.halve_until_small, [lambda r: (near(r, [0.5, -0.6, 0.2]),),
                               lambda r: (near(r, [2.5, -1.0, 0.5]),),
                               lambda r: (near(r, [5.0, 6.5, -3.0]),)], min_paths=3),
    Case(W.two_conditions, [lambda r: (U(r, 3, lo=0.5), 3), lambda r: (U(r, 3, lo=0.5), 30),
                            lambda r: (U(r, 3), 0)], min_paths=3),
    Case(W.fibonacci_like, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 1),
                            lambda r: (U(r, 3), 5)]),
    Case(W.countdown_parameter, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 3)]),
    Case(W.scalar_while, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)], min_paths=1),
    Case(W.while_break_data, [lambda r: (near(r, [1.0, 1.2, 0.8]), 5.0),
                              lambda r: (U(r, 3), 1e6)]),
    Case(W.while_return, [lambda r: (near(r, [1.0, 1.2, 0.8]),),
                          lambda r: (near(r, [30.0, 40.0, 31.0]),)]),

    # -- calls --------------------------------------------------------------------------
    Case(C.call_in_loop, [lambda r: (U(r, 3), U(r, 3), U(r, 3), 0),
                          lambda r: (U(r, 3), U(r, 3), U(r, 3), 1),
                          lambda r: (U(r, 3), U(r, 3), U(r, 3), 3)], wrt=(0, 1, 2)),
    Case(C.call_in_branch, [lambda r: (U(r, 3, lo=0.2),), lambda r: (U(r, 3, hi=-0.2),)]),
    Case(C.call_chain_other_module, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)],
         min_paths=1),
    Case(C.call_with_loop_inside, [lambda r: (U(r, 3), 1), lambda r: (U(r, 3), 3),
                                   lambda r: (U(r, 3), 5)]),
    Case(C.call_returning_tuple, [lambda r: (U(r, 3),), lambda r: (U(r, 5),)], min_paths=1),
    Case(C.call_with_keywords, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 3),)], min_paths=1),
    Case(C.call_with_branch_and_return, [lambda r: (U(r, 3, lo=0.5), 0.5),
                                         lambda r: (U(r, 3), 10.0)]),
    Case(C.call_local_helpers, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)], min_paths=1),
    Case(C.nested_def_const, [lambda r: (U(r, 3),), lambda r: (U(r, 4),)], min_paths=1),
    Case(C.nested_def_closure_array, [lambda r: (U(r, 3), U(r, 3)),
                                      lambda r: (U(r, 2, 3), U(r, 3))], wrt=(0, 1), min_paths=1),
    Case(C.nested_def_in_loop, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 2)]),
    Case(C.nested_def_with_branch, [lambda r: (U(r, 3, lo=0.2),), lambda r: (U(r, 3, hi=-0.2),)],
         min_paths=1),  # both inputs run both branches (act(x) and act(-2x))
    Case(C.nested_def_calls_nested_def, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)],
         min_paths=1),
    Case(C.nested_def_default_arg, [lambda r: (U(r, 3),), lambda r: (U(r, 2),)], min_paths=1),
    Case(C.module_array_closure, [lambda r: (U(r, 20),), lambda r: (U(r, 2, 20),)], min_paths=1),
    Case(C.module_constant_in_loop, [lambda r: (U(r, 3), 0), lambda r: (U(r, 3), 3)]),
    Case(C.helper_with_early_return_in_loop, [lambda r: (signed_rows(r, [1, -1, 1]),),
                                              lambda r: (signed_rows(r, [-1, -1]),)]),
    Case(C.softmax_attention, [lambda r: (U(r, 2, 3), U(r, 4, 3)),
                               lambda r: (U(r, 3, 3), U(r, 4, 3))], wrt=(0, 1)),
    Case(C.scaled_sum_3, [lambda r: (U(r, 3),), lambda r: (U(r, 2, 2),)], min_paths=1),
    Case(C.affine_loss_fixed, [lambda r: (U(r, 3),), lambda r: (U(r, 3) * 2.0,)], min_paths=1),

    # -- combined -----------------------------------------------------------------------
    Case(M.branch_in_loop, [lambda r: (signed_rows(r, [1, -1, 1]),),
                            lambda r: (signed_rows(r, [-1]),),
                            lambda r: (signed_rows(r, [1, 1]),)], min_paths=3),
    Case(M.loop_in_branch, [lambda r: (U(r, 3, lo=0.2), 2), lambda r: (U(r, 3, hi=-0.2), 2),
                            lambda r: (U(r, 3, lo=0.2), 0)], min_paths=3),
    Case(M.loops_in_both_branches, [lambda r: (U(r, 3, lo=0.5), 2),
                                    lambda r: (U(r, 3, lo=0.5), 0),
                                    lambda r: (near(r, [0.9, 0.7, 0.8]), 3)], min_paths=3),
    Case(M.loop_in_elif, [lambda r: (U(r, 3, lo=0.5), 2), lambda r: (U(r, 3, lo=-0.3, hi=0.3), 3),
                          lambda r: (U(r, 3, lo=-0.3, hi=0.3), 0),
                          lambda r: (near(r, [-1.5, -2.5, -0.5]), 1)], min_paths=4),
    Case(M.rows_loop_in_branch, [lambda r: (U(r, 3, 2), U(r, 2, lo=0.2)),
                                 lambda r: (U(r, 1, 2), U(r, 2, lo=0.2)),
                                 lambda r: (U(r, 2, 2), U(r, 2, hi=-0.2))], wrt=(0, 1)),
    Case(M.rnn_with_gate, [lambda r: (U(r, 3, 3), U(r, 1, 3), U(r, 3)),
                           lambda r: (U(r, 3, 3), U(r, 4, 3), U(r, 3))], wrt=(0, 1, 2)),
    Case(M.mlp_layers, [lambda r: (U(r, 3), U(r, 3, 3, 3), 2),
                        lambda r: (U(r, 3), U(r, 3, 3, 3), 3),
                        lambda r: (U(r, 3), U(r, 1, 3, 3), 0)], wrt=(0, 1)),
    Case(M.unrolled_descent, [lambda r: (U(r, 3), U(r, 3), 0, 0.1),
                              lambda r: (U(r, 3), U(r, 3), 1, 0.2),
                              lambda r: (U(r, 3), U(r, 3), 5, 0.1)], wrt=(0, 1, 3)),
    Case(M.early_exit_accumulate, [
        lambda r: (near(r, [[0.5, 0.2], [0.3, 0.6], [1.5, 0.1], [0.2, 0.2]]), 0.9),
        lambda r: (near(r, [[0.5, 0.2], [0.3, 0.6]]), 0.9),
        lambda r: (near(r, [[1.2, 0.5], [0.3, 0.6]]), 0.9)], min_paths=3),
    Case(M.nested_loops_inner_break, [
        lambda r: (near(r, [[0.6, 0.6, 0.6], [1.2, 0.5, 0.5], [0.2, 0.2, 0.2]]), 1.0),
        lambda r: (near(r, [[0.2, 0.3, 0.1]]), 1.0)]),
    Case(M.while_in_for, [lambda r: (near(r, [[0.2, -0.1], [1.5, 1.5], [-3.0, 3.0]]),),
                          lambda r: (near(r, [[0.3, 0.3]]),)]),
    Case(M.for_in_while, [lambda r: (near(r, [6.4, 6.5, 6.5]), 3),
                          lambda r: (U(r, 3), 0), lambda r: (near(r, [9.0, 12.0, 1.0]), 2)],
         min_paths=3),
    Case(M.calls_in_nested_loops, [lambda r: (U(r, 2, 3), 0), lambda r: (U(r, 2, 3), 2)]),
    Case(M.attention, [lambda r: (U(r, 1, 3), U(r, 4, 3), U(r, 4, 2)),
                       lambda r: (U(r, 3, 3), U(r, 4, 3), U(r, 4, 2))], wrt=(0, 1, 2)),
    Case(M.horner, [lambda r: (U(r, 3), U(r, 4)), lambda r: (U(r, 1), U(r, 4))], wrt=(0, 1)),
    Case(M.running_product, [lambda r: (U(r, 3, lo=0.5, hi=1.5),), lambda r: (U(r, 1),),
                             lambda r: (U(r, 5, lo=0.5, hi=1.5),)]),
    Case(M.piecewise_schedule, [lambda r: (U(r, 3), 4, 2), lambda r: (U(r, 3), 3, 0),
                                lambda r: (U(r, 3), 0, 1)]),
    Case(M.euler_ode, [lambda r: (U(r, 3), 0.7, 1), lambda r: (U(r, 3), 1.3, 10)], wrt=(0, 1)),
    Case(M.masked_accumulate, [
        lambda r: (near(r, [[1.0, 0.5], [-1.0, -0.5], [0.5, 1.0]]), near(r, [1.0, 0.5])),
        lambda r: (near(r, [[-1.0, -0.5]]), near(r, [1.0, 0.5]))], wrt=(0, 1)),
    Case(M.gated_branches_in_while, [lambda r: (U(r, 3, lo=0.5),),
                                     lambda r: (U(r, 3, lo=-1.0, hi=-0.5),)]),
    Case(M.loop_branch_return_after, [
        lambda r: (near(r, [[0.5, 0.5], [2.0, 1.0], [1.0, 1.0]]), 3),
        lambda r: (near(r, [[0.5, 0.5], [1.0, 0.2], [3.0, 3.0]]), 2)]),
    Case(M.seq2one_with_list, [lambda r: (U(r, 3, 3) * 0.5, U(r, 3, 3), U(r, 3)),
                               lambda r: (U(r, 3, 3) * 0.5, U(r, 1, 3), U(r, 3))],
         wrt=(0, 1, 2)),
    Case(M.stateful_pair_with_break, [lambda r: (U(r, 3, lo=0.5), 3),
                                      lambda r: (U(r, 3, lo=0.5), 50)]),
    Case(M.loop_return_from_branch_in_while, [lambda r: (near(r, [1.0, 1.2, 0.8]),),
                                              lambda r: (near(r, [5.0, 5.0, 5.0]),)]),
]

#: corpus functions that are not cases themselves: called by cases, or factories of cases
NOT_CASES = {"bump", "twice", "make_scaler", "make_affine"}


# ---- running a function three ways ------------------------------------------------------

def run_traced(fn, args):
    """fn(*args) on plain arrays, and its path: which bytecode instructions of corpus code
    ran how many times (instructions, not lines, so `a if c else b` has two paths)."""
    counts = collections.Counter()

    def local(frame, event, arg):
        if event == "opcode":
            counts[(frame.f_code, frame.f_lasti)] += 1
        return local

    def global_trace(frame, event, arg):
        if not frame.f_code.co_filename.startswith(CORPUS_DIR + os.sep):
            return None
        frame.f_trace_opcodes = True
        return local

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        out = fn(*args)
    finally:
        sys.settrace(previous)
    return out, frozenset(counts.items())


def as_scalar(out) -> float:
    a = np.asarray(out, dtype=np.float64)
    assert a.shape == (), f"the function's output is not a scalar: shape {a.shape}"
    return float(a)


def finite_differences(fn, args, index, path, label):
    """Central differences w.r.t. args[index]; every step must take the same path."""
    args = list(args)
    x0 = args[index]
    scalar = not isinstance(x0, np.ndarray)
    x = np.array(x0, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        vals = []
        for step in (FD_EPS, -FD_EPS):
            flat[k] = orig + step
            args[index] = float(x) if scalar else x.copy()
            out, p = run_traced(fn, args)
            assert p == path, (f"{label}: a finite-difference step on argument {index}, "
                               f"element {k}, changes the path through the function (a branch "
                               "condition or trip count sits within eps of flipping); pick "
                               "an input further from it")
            vals.append(as_scalar(out))
        flat[k] = orig
        gflat[k] = (vals[0] - vals[1]) / (2 * FD_EPS)
    return grad


def tape_grads(fn, args, wrt):
    """Gradients of the unmodified fn on runtime Tensors (zeros where nothing reached)."""
    targs = list(args)
    leaves = {}
    for i in wrt:
        leaves[i] = rt.tensor(np.array(args[i], dtype=np.float64), requires_grad=True)
        targs[i] = leaves[i]
    out = fn(*targs)
    # an output that does not depend on the inputs is a plain float (or a Tensor off the tape)
    if isinstance(out, rt.Tensor) and out.requires_grad:
        out.backward()
    grads = []
    for i in wrt:
        g = leaves[i].grad
        grads.append(np.zeros(np.shape(args[i])) if g is None else np.asarray(g.data))
    return grads


def reference(case, args, label):
    """The path fn takes at args, and the tape's gradients (checked against finite
    differences, each step of which must take the same path)."""
    value, path = run_traced(case.fn, args)
    assert np.isfinite(as_scalar(value)), f"{label}: f is not finite here"
    expected = tape_grads(case.fn, args, case.wrt)
    numeric = [finite_differences(case.fn, args, i, path, label) for i in case.wrt]
    return path, expected, numeric


def check_case_input(case, compiled, args, label):
    """srcgrad's gradient at one input, against the tape and finite differences."""
    path, expected, numeric = reference(case, args, label)
    got = compiled(*args)
    assert isinstance(got, tuple) and len(got) == len(case.wrt), \
        f"{label}: srcgrad returned {type(got).__name__}, not a tuple of {len(case.wrt)}"
    for i, g, t, num in zip(case.wrt, got, expected, numeric):
        g = np.asarray(g)
        assert g.shape == np.shape(args[i]), \
            f"{label}: gradient of argument {i} has shape {g.shape}, not {np.shape(args[i])}"
        np.testing.assert_allclose(g, t, rtol=TAPE_RTOL, atol=TAPE_ATOL,
                                   err_msg=f"{label}: srcgrad vs tape, argument {i}")
        np.testing.assert_allclose(g, num, rtol=FD_RTOL, atol=FD_ATOL,
                                   err_msg=f"{label}: srcgrad vs finite differences, "
                                           f"argument {i}")
    check_specialized(compiled, case.fn, args, got)
    return path


def _params():
    out = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


# ---- the corpus -------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params())
def test_corpus_case(case):
    compiled = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
    rng = np.random.default_rng(sum(map(ord, case.id)))
    paths = set()
    for k, build in enumerate(case.inputs):
        args = build(rng)
        paths.add(check_case_input(case, compiled, args, f"{case.id} input #{k}"))
    assert compiled.compile_count == 1, "a new input shape or trip count recompiled"
    assert len(paths) >= case.min_paths, \
        f"{case.id}: its inputs take {len(paths)} distinct path(s), expected " \
        f">= {case.min_paths}; add inputs that take other branches or trip counts"


@pytest.mark.parametrize("case", _params())
def test_corpus_vjp_and_value_and_grad_agree_with_grad(case):
    """vjp's pullback (called twice: it pops from copies of its stacks) and value_and_grad
    give grad's gradients and f's value at every input of the corpus, through every
    branch and trip count (a pullback whose forward pass skipped a loop in a branch
    once crashed on the missing stack)."""
    g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
    vg = srcgrad.value_and_grad(case.fn, wrt=case.wrt, cache=False)
    rng = np.random.default_rng(sum(map(ord, case.id)) + 7)
    for k, build in enumerate(case.inputs):
        args = build(rng)
        label = f"{case.id} input #{k}"
        want = g(*args)
        value, grads = vg(*args)
        np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12, err_msg=label)
        out, pullback = srcgrad.vjp(case.fn, *args, wrt=case.wrt)
        np.testing.assert_allclose(out, value, rtol=1e-12, err_msg=label)
        for got in (grads, pullback(1.0), pullback(1.0)):
            for a, b in zip(got, want, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=label)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_corpus_inputs_are_sound(case):
    """Independent of srcgrad (so also for its xfail'd cases): at every input the tape
    agrees with finite differences, no step flips a branch, and the inputs take
    different paths."""
    rng = np.random.default_rng(sum(map(ord, case.id)))
    paths = set()
    for k, build in enumerate(case.inputs):
        args = build(rng)
        label = f"{case.id} input #{k}"
        path, expected, numeric = reference(case, args, label)
        for i, t, num in zip(case.wrt, expected, numeric):
            np.testing.assert_allclose(t, num, rtol=FD_RTOL, atol=FD_ATOL,
                                       err_msg=f"{label}: tape vs finite differences, "
                                               f"argument {i}")
        paths.add(path)
    assert len(paths) >= case.min_paths, \
        f"{case.id}: its inputs take {len(paths)} distinct path(s), expected >= {case.min_paths}"


def test_registry_covers_the_corpus():
    registered = {id(c.fn) for c in CASES}
    assert len(registered) == len(CASES), "a corpus function is registered twice"
    missing = []
    for mod in CORPUS_MODULES:
        for name, obj in vars(mod).items():
            if inspect.isfunction(obj) and obj.__module__ == mod.__name__ and \
                    name not in NOT_CASES and id(obj) not in registered:
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, f"corpus functions without a case: {missing}"
    assert len(CASES) >= 80


# ---- sequence length, batch size and trip counts do not recompile -----------------------

def test_rnn_50_steps_matches_tape_and_finite_differences_without_recompiling():
    rng = np.random.default_rng(50)
    H, D = 4, 2
    W, U_, b = U(rng, H, H, lo=-0.5, hi=0.5), U(rng, D, H), U(rng, H, lo=-0.2, hi=0.2)
    case = Case(loops.rnn_batched, [], wrt=(0, 1, 2, 4))
    compiled = srcgrad.grad(loops.rnn_batched, wrt=case.wrt, cache=False)
    # T=50 against the tape and finite differences, then other lengths and batch sizes
    args = (W, U_, b, U(rng, 50, 3, D), U(rng, 3, H))
    check_case_input(case, compiled, args, "rnn T=50 B=3")
    for T, batch in ((20, 3), (50, 5), (1, 1)):
        args = (W, U_, b, U(rng, T, batch, D), U(rng, batch, H))
        got = compiled(*args)
        for i, g, t in zip(case.wrt, got, tape_grads(loops.rnn_batched, args, case.wrt)):
            np.testing.assert_allclose(g, t, rtol=TAPE_RTOL, atol=TAPE_ATOL,
                                       err_msg=f"rnn T={T} B={batch}: argument {i}")
    assert compiled.compile_count == 1


def test_range_n_trip_count_polymorphism():
    """One compiled function for n = 0, 1, 7: d/dx sum_i sum(x * i) = n(n-1)/2."""
    compiled = srcgrad.grad(loops.range_n, cache=False)
    x = np.array([0.3, -1.2, 2.0])
    for n in (0, 1, 7, 1, 0):
        g = compiled(x, n)
        np.testing.assert_array_equal(g, np.full(3, n * (n - 1) / 2))
        np.testing.assert_array_equal(g, tape_grads(loops.range_n, (x, n), (0,))[0])
    assert compiled.compile_count == 1


# ---- constructs outside the subset ------------------------------------------------------

def marked_line(fn, marker):
    """The absolute line number of the line in fn's source ending with `# <- marker`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if text.rstrip().endswith("# <- " + marker)]
    assert len(hits) == 1, f"{fn.__name__} must mark exactly one line with '# <- {marker}'"
    return hits[0]



REFUSED = [
    pytest.param(unsupported.return_in_nested_loops, "nested return",
                 srcgrad.UnsupportedSyntaxError, ["inside another run-time loop", "`break`"],
                 id="return-in-nested-loops"),
    pytest.param(unsupported.uses_try, "try", srcgrad.UnsupportedSyntaxError, ["`try`"],
                 id="try"),
    pytest.param(unsupported.uses_with, "with", srcgrad.UnsupportedSyntaxError, ["`with`"],
                 id="with"),
    pytest.param(unsupported.generator_statement, "yield", srcgrad.UnsupportedSyntaxError,
                 ["yield"], id="yield-statement"),
    pytest.param(unsupported.generator_expression_value, "yield",
                 srcgrad.UnsupportedSyntaxError, ["yield"], id="yield-expression"),
    pytest.param(unsupported.subscript_assignment, "subscript assignment",
                 srcgrad.UnsupportedSyntaxError, ["`x[0] = ...`", "`x = x.copy()`"],
                 id="subscript-assignment"),
    pytest.param(unsupported.subscript_assignment_in_loop, "subscript assignment",
                 srcgrad.UnsupportedSyntaxError, ["`y[i] = ...`", "the caller's argument"],
                 id="subscript-assignment-in-loop"),
    pytest.param(unsupported.recursive_power, "recursive call", srcgrad.RecursiveCallError,
                 ["recursive", "'recursive_power'"], id="recursion"),
    pytest.param(unsupported.recursive_in_loop, "recursive call", srcgrad.RecursiveCallError,
                 ["recursive", "'recursive_in_loop'"], id="recursion-in-loop"),
]


@pytest.mark.parametrize("fn, marker, error, words", REFUSED)
def test_refused_construct_points_at_its_line(fn, marker, error, words):
    compiled = srcgrad.grad(fn, cache=False)
    with pytest.raises(srcgrad.SrcgradError) as info:
        compiled.source
    err = info.value
    assert type(err) is error
    assert err.filename == inspect.getsourcefile(fn)
    assert err.lineno == marked_line(fn, marker)
    headline = str(err).splitlines()[0]
    for word in words:
        assert word in headline, f"the message {headline!r} does not say {word!r}"
    assert f"line {err.lineno}," in str(err)
    assert marker in str(err)  # the offending source line is quoted, marker comment and all


def test_refused_construct_location_printed_once():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(unsupported.uses_try, cache=False).source
    assert str(info.value).count('File "') == 1
    assert info.value.msg.count("\n") == 0
