"""Blocked regions of specialized numpy variants (srcgrad.fusion.block_regions).

A variant whose elementwise work runs on large arrays computes each run of elementwise
statements a block of rows at a time, in a function of the region's own statements, and
copies the results into arrays of the full shape. Checked here: the variant's gradient
equals the shape-polymorphic code's (which the corpus tests check against the tape and
finite differences) on every corpus program with blocks of one or two rows, and on
programs written for large arrays against finite differences; the block loop shows in
the source; what must stay out of a region does; the thresholds key the disk cache.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from srcgrad import fusion
from compiler_helpers import check_specialized, finite_differences, tape_grads, tree_leaves
from programs import programs

import blocked_user as U
import numba_user as N  # (the same user code: plain numpy)
import test_corpus as C
import test_property as P
from stencil_programs import load, stencils


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of two elements (rows of one or two), from arrays of 8 elements."""
    monkeypatch.setattr(fusion, "BLOCKED_MIN", 8)
    monkeypatch.setattr(fusion, "BLOCK", 2)


def variant(g, *args):
    """(the variant's source, its gradient) for these arguments."""
    src = g.specialized_source(*args)
    return src, g(*args)


def assert_same(got, want, what=""):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        rtol = 1e-13 if np.asarray(b).dtype != np.float32 else 1e-6  # (float32 sin: by lane)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-300, err_msg=f"{what} {k}")


def fd_check(fn, args, wrt, got, rtol=1e-5):
    for k, i in enumerate(wrt):
        fd = finite_differences(fn, args, i)
        np.testing.assert_allclose(got[k], fd, rtol=rtol, atol=1e-6 * (1 + np.abs(fd).max()))


RNG = np.random.default_rng(7)

PROGRAMS = [
    ("chain", U.softplus_energy, (0, 1), lambda: (RNG.uniform(-2, 2, 37), RNG.uniform(-2, 2, 37))),
    ("row_and_bias", U.dense_layer, (0, 1, 2),
     lambda: (RNG.normal(size=(13, 3)), RNG.normal(size=3), RNG.normal(size=(1, 3)))),
    ("column", U.column_scaled, (0, 1),
     lambda: (RNG.normal(size=(11, 4)), RNG.uniform(0.5, 1.5, (11, 1)))),
    ("where", U.leaky, (0,), lambda: (RNG.normal(size=25), 0.1)),
    ("loop", U.Oscillator(0.05, 4).energy, (0, 1),
     lambda: (RNG.uniform(-1, 1, 21), RNG.uniform(-1, 1, 21))),
    ("rosenbrock", U.rosenbrock, (0,), lambda: (RNG.uniform(-1.5, 1.5, 19),)),
]


@pytest.mark.parametrize("name,fn,wrt,make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_blocked_variants_give_the_gradient(tiny_blocks, name, fn, wrt, make):
    args = make()
    want = srcgrad.grad(fn, wrt=wrt, specialize=False, cache=False)(*args)
    g = srcgrad.grad(fn, wrt=wrt, cache=False)
    src, got = variant(g, *args)
    assert "at a time" in src, f"{name}: no blocked region\n{src}"
    assert_same(got, want, name)
    fd_check(fn, args, wrt, got if isinstance(got, tuple) else (got,))
    again = make()  # new values, same shapes: the same variant
    assert_same(g(*again), srcgrad.grad(fn, wrt=wrt, specialize=False, cache=False)(*again))


STENCILS = [
    ("rosenbrock", U.rosenbrock, lambda: (RNG.uniform(-1.5, 1.5, 19),), True),
    ("total_variation", N.total_variation, lambda: (RNG.normal(size=(7, 6)),), False),
    ("smoothness", U.smoothness, lambda: (RNG.normal(size=23),), True),
    ("path_curvature", U.path_curvature, lambda: (RNG.normal(size=(11, 3)),), True),
]


@pytest.mark.parametrize("name,fn,make,shared", STENCILS, ids=[p[0] for p in STENCILS])
def test_sums_of_shifted_slices_in_blocks(tiny_blocks, name, fn, make, shared):
    """The cotangents of neighbouring elements' slices are summed into the gradient a block
    of rows at a time, each term computed at its offset (no zeros, scatter, add); what
    the terms compute alike (rosenbrock's x[1:] - x[:-1] ** 2) is computed once per block,
    on the rows they cover together (total variation's terms are shifted along both axes:
    each computes its own)."""
    args = make()
    g = srcgrad.grad(fn, cache=False)
    src, got = variant(g, *args)
    assert "a sum of shifted slices" in src and "scatter_add(" not in src, src
    assert ("_shared(" in src) == shared, src
    assert_same(got, srcgrad.grad(fn, specialize=False, cache=False)(*args), name)
    fd_check(fn, args, (0,), (got,))
    again = make()
    assert_same(g(*again), srcgrad.grad(fn, specialize=False, cache=False)(*again))


@settings(max_examples=max(20, settings.default.max_examples // 10))
@given(stencils(), st.integers(0, 2**32 - 1))
def test_random_stencils_in_blocks(program_dir, program, seed):
    """Random stencils (tests/compiler/stencil_programs.py) in blocks of one or two rows,
    against the tape and the polymorphic code."""
    source, shape = program
    fn = load(source, program_dir)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    saved = fusion.BLOCKED_MIN, fusion.BLOCK
    fusion.BLOCKED_MIN, fusion.BLOCK = 2, 2
    try:
        g = srcgrad.grad(fn, cache=False)
        got = [g(x) for _ in range(3)][-1]
        assert "Specialized to" in g.specialized_source(x)
    finally:
        fusion.BLOCKED_MIN, fusion.BLOCK = saved
    (tape,) = tape_grads(fn, (x,), [0])
    np.testing.assert_allclose(got, tape, rtol=1e-9, atol=1e-9 * (1 + np.abs(tape).max()),
                               err_msg=source)
    assert_same(got, srcgrad.grad(fn, specialize=False, cache=False)(x), source)


def test_float32_and_a_short_last_block(monkeypatch):
    monkeypatch.setattr(fusion, "BLOCKED_MIN", 8)
    monkeypatch.setattr(fusion, "BLOCK", 4)
    x, y = (np.linspace(-1, 1, 23, dtype=np.float32), np.linspace(0.5, -0.3, 23, dtype=np.float32))
    g = srcgrad.grad(U.softplus_energy, wrt=(0, 1), cache=False)
    src, got = variant(g, x, y)
    assert "range(0, 23, 4)" in src
    want = srcgrad.grad(U.softplus_energy, wrt=(0, 1), specialize=False, cache=False)(x, y)
    assert_same(got, want)
    assert got[0].dtype == np.float32


def test_value_and_grad_and_two_outputs(tiny_blocks):
    x = RNG.uniform(-1, 1, 17)
    vg = srcgrad.value_and_grad(U.softplus_energy, wrt=(0, 1), cache=False)
    want = srcgrad.value_and_grad(U.softplus_energy, wrt=(0, 1), specialize=False,
                                  cache=False)(x, x[::-1].copy())
    vg.specialized_source(x, x[::-1].copy())
    got = vg(x, x[::-1].copy())
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    assert_same(got[1], want[1])
    g = srcgrad.grad(U.energy_and_field, has_aux=True, cache=False)
    src, (gx, aux) = variant(g, x)
    assert "at a time" in src
    wx, waux = srcgrad.grad(U.energy_and_field, has_aux=True, specialize=False, cache=False)(x)
    assert_same((gx, aux), (wx, waux))
    fd_check(lambda x: U.energy_and_field(x)[0], (x,), (0,), (gx,))


def test_the_source_shows_the_blocks(tiny_blocks):
    x, y = RNG.uniform(-2, 2, 10), RNG.uniform(-2, 2, 10)
    src = srcgrad.grad(U.softplus_energy, wrt=(0, 1), cache=False).specialized_source(x, y)
    assert "for at in range(0, 10, 2):  # 2 elements at a time" in src
    assert "block = slice(at, at + 2)" in src
    assert "on one block of rows." in src
    X = RNG.normal(size=(9, 2))
    src = srcgrad.grad(U.dense_layer, wrt=(0,), cache=False).specialized_source(
        X, np.ones(2), np.zeros((1, 2)))
    assert "range(0, 9, 1):  # 1 row at a time" in src


def test_small_arrays_are_not_blocked():
    x = RNG.uniform(-2, 2, 1000)
    src = srcgrad.grad(U.softplus_energy, wrt=(0, 1), cache=False).specialized_source(x, x)
    assert "at a time" not in src


def test_a_broadcast_that_needs_the_first_axis_ends_the_region(tiny_blocks):
    """(n, 1) against (n, m): both are cut into blocks; a (k, m) operand read whole by
    every block of an (n, m) region would be wrong, so shapes that broadcast along the
    first axis are not taken."""
    x = RNG.normal(size=(12, 1))
    y = RNG.normal(size=(1, 12))
    fn = U.column_scaled  # X (12, 1) * c (1, 12): a (12, 12) result from two thin arrays
    g = srcgrad.grad(fn, wrt=(0, 1), cache=False)
    src, got = variant(g, x, y)
    want = srcgrad.grad(fn, wrt=(0, 1), specialize=False, cache=False)(x, y)
    assert_same(got, want)
    fd_check(fn, (x, y), (0, 1), got)


def test_thresholds_key_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    x = RNG.uniform(-2, 2, 10)
    big = srcgrad.grad(U.softplus_energy, wrt=(0, 1)).specialized_source(x, x)
    monkeypatch.setattr(fusion, "BLOCKED_MIN", 8)
    monkeypatch.setattr(fusion, "BLOCK", 2)
    small = srcgrad.grad(U.softplus_energy, wrt=(0, 1)).specialized_source(x, x)
    assert "at a time" not in big and "at a time" in small


# ---- the corpus -----------------------------------------------------------------------------

_CORPUS = [c for c in C.CASES if not c.xfail]


def test_corpus_in_blocks(monkeypatch):
    """Every corpus program at its inputs, its variant in blocks of one row, from arrays of
    two elements: what the shape-polymorphic code gives; called again at other inputs, it
    leaves the first call's results as they were (the blocks' values that nothing sees
    after a call live in scratch arrays that the next call reuses: never a result). (Many
    take the blocks: the count guards the test.)"""
    monkeypatch.setattr(fusion, "BLOCKED_MIN", 2)
    monkeypatch.setattr(fusion, "BLOCK", 1)
    blocked = 0
    for case in _CORPUS:
        for k, make in enumerate(case.inputs):
            seed = sum(map(ord, case.id)) + k
            args = make(np.random.default_rng(seed))
            want = srcgrad.grad(case.fn, wrt=case.wrt, specialize=False, cache=False)(*args)
            g = srcgrad.grad(case.fn, wrt=case.wrt, cache=False)
            check_specialized(g, case.fn, args, want)
            first = [leaf for _, leaf in tree_leaves(g(*args))]
            kept = [np.array(a, copy=True) for a in first]
            g(*make(np.random.default_rng(seed + 1000)))
            for a, b in zip(first, kept):
                np.testing.assert_array_equal(a, b, err_msg=f"{case.id}: a later call "
                                              "changed an earlier call's result")
            if getattr(g, "_spec_sources", None) and any(
                    "at a time" in s for s in g._spec_sources.values()):
                blocked += 1
    assert blocked >= 100, blocked


@contextlib.contextmanager
def blocks_of_one_row():
    saved = fusion.BLOCKED_MIN, fusion.BLOCK
    fusion.BLOCKED_MIN, fusion.BLOCK = 2, 1
    try:
        yield
    finally:
        fusion.BLOCKED_MIN, fusion.BLOCK = saved


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("blocked_programs"))


@settings(max_examples=max(30, settings.default.max_examples // 3))
@given(programs())
def test_random_programs_in_blocks(program_dir, program):
    """Random programs (tests/compiler/programs.py), checked against the tape and finite
    differences, their variants in blocks of one row against the polymorphic code."""
    with blocks_of_one_row():
        P.check_program(program, program_dir)


def test_a_region_holding_many_arrays_takes_smaller_blocks():
    """A blocked region's block size follows the arrays it holds at once (fusion.peak_live):
    a long chain's forward values and cotangents in blocks of fewer elements, so that its
    temporaries stay within LIVE_ELEMENTS elements; a short region keeps BLOCK."""
    import tracemalloc

    x = RNG.uniform(-2, 2, 1 << 18)
    g = srcgrad.grad(U.long_chain, cache=False)
    src, got = variant(g, x)
    (size,) = {int(n) for n in __import__("re").findall(r"# (\d+) elements at a time", src)}
    assert fusion.BLOCK_MIN <= size < fusion.BLOCK, src
    assert_same(got, srcgrad.grad(U.long_chain, specialize=False, cache=False)(x))
    tracemalloc.start()
    try:
        g(x)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        kept = g(x)
        peak = tracemalloc.get_traced_memory()[1] - base - kept.nbytes
    finally:
        tracemalloc.stop()
    assert peak <= 1.25 * fusion.LIVE_ELEMENTS * 8, peak
    src = srcgrad.grad(U.softplus_energy, wrt=(0, 1), cache=False).specialized_source(x, x)
    assert f"# {fusion.BLOCK} elements at a time" in src


@pytest.mark.parametrize("n", [9, 12])
def test_equal_terms_of_a_sum_of_shifted_slices(tiny_blocks, n):
    """Two equal terms (the cotangent of t0 and of t2, one value): what they share holds
    each term's own value too; that value was computed inside the shared function and never
    handed out (KeyError in codegen: the variant failed to build and the polymorphic code
    ran, with a warning)."""
    x = np.linspace(-1.0, 1.0, n)
    g = srcgrad.grad(U.repeated_term, cache=False)
    src, got = variant(g, x)
    assert "a sum of shifted slices" in src, src
    assert_same(got, srcgrad.grad(U.repeated_term, specialize=False, cache=False)(x))
    fd_check(U.repeated_term, (x,), (0,), (got,))
