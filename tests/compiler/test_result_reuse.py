"""Large results written into arrays reused from call to call (`reuse_result`).

A specialized gradient whose loops write large results (a numpy variant's blocked
regions, the numba backend's large-array form) writes them into an array it returned
before, once the caller has dropped that array; otherwise into a new one. The rule these
tests hold it to: no array a caller can still reach (by a name, a view, a container, a
weak reference) is ever written again, and the gradients stay right; and an array nobody
holds is reused (where that is what the tests ask for, it must happen, or the reuse is
dead code).
"""
from __future__ import annotations

import gc
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import srcgrad
from runtime.ops import helpers

N = 300_000  # 2.4 MB of float64: above RESULT_REUSE_MIN, and blocked on numpy

BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("numba") is None, reason="numba not installed"))]


def loss(x, y):
    return np.sum(np.log(3 * x ** 2 + 5 * x * y) + np.sin(x) * y)


def grad_by_hand(x, y):
    r = 1.0 / (3 * x ** 2 + 5 * x * y)
    return (6 * x + 5 * y) * r + np.cos(x) * y, 5 * x * r + np.sin(x)


def inputs(k):
    rng = np.random.default_rng(k)
    return rng.uniform(0.5, 2.0, N), rng.uniform(0.5, 2.0, N)


def address(a) -> int:
    return a.__array_interface__["data"][0]


def check(got, x, y):
    for a, b in zip(got, grad_by_hand(x, y)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.fixture(params=BACKENDS)
def g(request):
    g = srcgrad.grad(loss, wrt=(0, 1), backend=request.param)
    src = g.specialized_source(*inputs(0))
    assert "reuse_result(" in src, src
    return g


def test_a_dropped_result_is_reused_and_right(g):
    x1, y1 = inputs(1)
    dx, dy = g(x1, y1)
    check((dx, dy), x1, y1)
    where = {address(dx), address(dy)}
    del dx, dy
    x2, y2 = inputs(2)
    got = g(x2, y2)
    assert {address(a) for a in got} == where  # the same memory, no new pages
    check(got, x2, y2)


def test_results_held_are_never_written_again(g):
    """A caller that keeps every result (a list of gradients) gets new arrays each time,
    and the ones it keeps keep their values."""
    kept, copies = [], []
    for k in range(5):
        x, y = inputs(k)
        got = g(x, y)
        check(got, x, y)
        kept.append(got)
        copies.append([a.copy() for a in got])
    for got, want in zip(kept, copies):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert len({address(a) for got in kept for a in got}) == 10


def _view(a):
    return a[10:20]


def _in_a_dict(a):
    return {"g": a}


def _weak(a):
    return weakref.ref(a)


def _memoryview(a):
    return memoryview(a)


def _reshaped_array(a):
    return a.reshape(-1, 2)


@pytest.mark.parametrize("holder", [_view, _in_a_dict, _weak, _memoryview, _reshaped_array])
def test_an_array_reached_any_way_is_not_reused(g, holder):
    x1, y1 = inputs(1)
    dx, dy = g(x1, y1)
    held = (holder(dx), holder(dy))
    before = (dx.copy(), dy.copy())
    where = {address(dx), address(dy)}
    del dx, dy
    gc.collect()
    for k in (2, 3, 4):
        x, y = inputs(k)
        got = g(x, y)
        check(got, x, y)
        assert not {address(a) for a in got} & where
        del got
    reached = [h() if isinstance(h, weakref.ref) else h for h in held]
    for h, b in zip(reached, before):
        arr = h["g"] if isinstance(h, dict) else np.asarray(h)
        if arr.size == b.size:
            np.testing.assert_array_equal(arr.reshape(-1), b)


def test_an_array_its_caller_changed_is_not_reused(g):
    """Dropped, but made read-only or given another shape first: a new array."""
    x1, y1 = inputs(1)
    dx, dy = g(x1, y1)
    dx.flags.writeable = False
    dy.shape = (N // 2, 2)
    where = {address(dx), address(dy)}
    del dx, dy
    x2, y2 = inputs(2)
    got = g(x2, y2)
    assert not {address(a) for a in got} & where
    check(got, x2, y2)


def test_calls_from_many_threads_each_get_their_own_results(g):
    """Threads that keep their results get distinct, right arrays; threads that drop
    them leave the arrays to others, and nothing is written twice."""
    args = [inputs(k) for k in range(12)]
    g(*args[0])

    def keep(a):
        return g(*a)

    def drop(a):
        got = g(*a)
        check(got, *a)
        return None

    with ThreadPoolExecutor(4) as pool:
        kept = list(pool.map(keep, args))
        list(pool.map(drop, args * 2))
        kept2 = list(pool.map(keep, args))
    for got, a in zip(kept + kept2, args + args):
        check(got, *a)
    assert len({address(r) for got in kept + kept2 for r in got}) == 2 * 2 * len(args)


def test_the_reference_count_is_measured_and_tells_held_from_free():
    assert helpers._ALONE is not None  # (this interpreter has the global lock)
    pool = []
    a = helpers.reuse_result(pool, (4,), np.dtype(np.float64))
    b = helpers.reuse_result(pool, (4,), np.dtype(np.float64))
    assert a is not b and len(pool) == 2
    ida = id(a)
    del a
    c = helpers.reuse_result(pool, (4,), np.dtype(np.float64))
    assert id(c) == ida and len(pool) == 2
    d = helpers.reuse_result(pool, (4,), np.dtype(np.float64))  # b and c held: a new one
    assert d is not b and d is not c and len(pool) == helpers.RESULTS_KEPT
    assert helpers.reuse_result(pool, (5,), np.dtype(np.float64)).shape == (5,)
    assert helpers.reuse_result(pool, (4,), np.dtype(np.float32)).dtype == np.float32
