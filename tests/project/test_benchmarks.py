"""Smoke test of the benchmark suite (benchmarks/): no timings, only correctness.

Every problem's hand-written gradients (`grad_hand` and each of `HAND_VARIANTS`) are
checked against central finite differences of its loss at the tiny size, and against the
straightforward one ("simple") at the small size to 1e-10 relative, the blocked ones also
cut into several short blocks; their results are fresh arrays and their inputs left as
they were. Every implementation the suite times (srcgrad, the tape, and the peers that
are installed) is checked against the hand-written gradient at the problems' tiny sizes.
The command line runs once in quick mode on one problem.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from paths import ROOT  # noqa: E402  (tests/paths.py)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import impls, problems  # noqa: E402


def _central_differences(problem, args, eps=1e-6):
    args = [np.array(a, dtype=np.float64) for a in args]
    grads = []
    for i in problem.wrt_index:
        x = args[i]
        g = np.zeros_like(x)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            hi = float(problem.loss(*args))
            flat[j] = old - eps
            lo = float(problem.loss(*args))
            flat[j] = old
            gflat[j] = (hi - lo) / (2 * eps)
        grads.append(g)
    return tuple(grads)


@pytest.mark.parametrize("name", problems.NAMES)
def test_hand_written_gradient_matches_finite_differences(name):
    p = problems.get(name)
    args = p.inputs("tiny")
    fd = _central_differences(p, args)
    for label, grad_hand in p.hand_variants.items():
        hand = grad_hand(*args)
        assert len(hand) == len(p.wrt)
        for h, f, w, i in zip(hand, fd, p.wrt, p.wrt_index):
            h = np.asarray(h)
            assert h.shape == np.shape(args[i]), w
            np.testing.assert_allclose(h, f, rtol=1e-5,
                                       atol=1e-7 * max(1.0, np.abs(f).max()),
                                       err_msg=f"{name} {label}: d/d{w}")


def _assert_fresh(name, label, got, args):
    """No result shares memory with an argument or with another result."""
    arrays = [g for g in got if isinstance(g, np.ndarray)]
    for k, g in enumerate(arrays):
        for a in args:
            assert not np.shares_memory(g, a), f"{name} {label}: result {k} aliases an input"
        for h in arrays[k + 1:]:
            assert not np.shares_memory(g, h), f"{name} {label}: results share memory"


def _assert_close(name, label, got, ref, p, args, rtol):
    assert len(got) == len(ref) == len(p.wrt)
    for g, r, w, i in zip(got, ref, p.wrt, p.wrt_index):
        g = np.asarray(g)
        assert g.shape == np.shape(args[i]), f"{name} {label}: d/d{w} shape"
        np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * max(1e-300, np.abs(r).max()),
                                   err_msg=f"{name} {label}: d/d{w}")


@pytest.mark.parametrize("name", problems.NAMES)
def test_every_hand_written_gradient_has_the_old_reference(name):
    p = problems.get(name)
    assert "simple" in p.hand_variants and len(p.hand_variants) >= 2


@pytest.mark.parametrize("name", problems.NAMES)
def test_hand_written_variants_agree_at_the_small_size(name, monkeypatch):
    p = problems.get(name)
    cases = [("small", None)]
    if hasattr(p.module, "BLOCK"):      # several blocks and a remainder
        cases += [("small", 7), ("tiny", 2)]
    for size, block in cases:
        args = p.inputs(size)
        copies = [np.array(a, copy=True) for a in args]
        ref = p.hand_variants["simple"](*args)
        if block is not None:
            monkeypatch.setattr(p.module, "BLOCK", block)
        for label, grad_hand in p.hand_variants.items():
            got = grad_hand(*args)
            _assert_close(name, f"{label or 'grad_hand'} (block {block})", got, ref, p, args,
                          rtol=1e-10)
            _assert_fresh(name, label or "grad_hand", got, args)
            for a, c in zip(args, copies):
                np.testing.assert_array_equal(a, c, err_msg=f"{name} {label}: input changed")
            # the caller may write into a result; the next call is unaffected and returns
            # new arrays
            for g in got:
                if isinstance(g, np.ndarray):
                    g[...] = np.nan
            again = grad_hand(*args)
            _assert_close(name, f"{label or 'grad_hand'} again", again, ref, p, args,
                          rtol=1e-10)
            _assert_fresh(name, f"{label or 'grad_hand'} again", again, args + tuple(got))


@pytest.mark.parametrize("kind", [k for k in impls.KINDS if k != "hand"])
@pytest.mark.parametrize("name", problems.NAMES)
def test_gradient_equals_the_hand_written_one(name, kind):
    if not impls.available(kind):
        pytest.skip(f"{kind} is not installed")
    p = problems.get(name)
    args = p.inputs("tiny")
    ref = impls.to_numpy("hand", impls.build("hand", p, args)())
    try:
        fn = impls.build(kind, p, args)
    except RuntimeError as err:
        if kind != "numba" or "numba could not compile" not in str(err):
            raise
        # the suite does not time the numpy code a numba variant fell back to; its
        # gradient must be right all the same
        import warnings

        import srcgrad

        g = srcgrad.grad(p.loss, wrt=p.wrt, backend="numba")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g(*args)

        def fn():
            return g(*args)
    got = impls.to_numpy(kind, fn())
    assert impls.max_error(got, ref) <= 1.0, (got, ref)
    # a second call (a cached or jitted path) gives the same gradient
    assert impls.max_error(impls.to_numpy(kind, fn()), ref) <= 1.0


def test_problem_sizes_are_described():
    for p in problems.all_problems():
        for size in ("tiny",) + problems.SIZE_NAMES:
            assert p.describe(size)
            args = p.inputs(size) if size != "large" else None
            if args is not None:
                assert all(np.asarray(a).dtype == np.float64 for a in args)


def test_command_line_quick_run(tmp_path, capsys):
    from benchmarks.run import main

    out = tmp_path / "bench.md"
    assert main(["--quick", "--problems", "poly", "--sizes", "small",
                 "--impls", "hand,srcgrad,tape", "--out", str(out)]) == 0
    md = out.read_text()
    assert "## Machine" in md and "numpy" in md
    row = next(line for line in md.splitlines() if line.startswith("| poly | small"))
    assert "FAIL" not in row
    assert "disk-cache hit" in md
    assert "## Failures" not in md
    assert "poly" in capsys.readouterr().out
