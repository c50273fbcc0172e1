"""Property tests: random numpy programs (tests/programs.py), written to a
module file, differentiated by srcgrad and checked against the tape engine and float64
central finite differences."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from compiler_helpers import assert_close, finite_differences, tape_grads
from programs import program_source, programs


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("programs"))


def check_program(program, directory):
    """srcgrad == tape (tight) and == finite differences (loose) for one program."""
    module = program.load(directory)
    fn = getattr(module, program.name)
    args = program.args
    indices = program.wrt_indices()
    note = f"\n{program.source}\nwrt={program.wrt}"
    value = float(np.asarray(fn(*args)))
    scale = 1.0 + abs(value)
    g = srcgrad.grad(fn, wrt=program.wrt, cache=False)
    got = g(*args)
    if len(program.wrt) == 1:  # a 1-tuple wrt still returns a tuple
        assert isinstance(got, tuple) and len(got) == 1, note
    expected = tape_grads(fn, args, indices)
    for i, gi, ti in zip(indices, got, expected):
        assert np.shape(gi) == np.shape(args[i]), note
        assert_close(gi, ti, 1e-6, 1e-9 * scale, f"srcgrad vs tape, argument {i}{note}")
        num = finite_differences(fn, args, i)
        gscale = 1.0 + float(np.max(np.abs(num), initial=0.0))
        assert_close(gi, num, 1e-4, 1e-6 * gscale * scale,
                     f"srcgrad vs finite differences, argument {i}{note}")
    return g


# the number of programs follows the hypothesis profile (tests/conftest.py): 300 by
# default, thousands with --hypothesis-profile=deep
N = settings.default.max_examples


@settings(max_examples=N)
@given(programs())
def test_random_program(program_dir, program):
    check_program(program, program_dir)


@settings(max_examples=max(10, N // 6))
@given(programs(max_statements=12, max_params=4))
def test_random_long_program(program_dir, program):
    check_program(program, program_dir)


@settings(max_examples=20)
@given(st.data())
def test_program_source_entry_point(data):
    """`program_source(draw)` is the generator's reusable entry point (a draw in, source
    text out), for properties that build their own programs around it."""
    text = program_source(data.draw, name="g")
    tree = ast.parse(text)
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef) and fn.name == "g"
    assert isinstance(fn.body[-1], ast.Return)
