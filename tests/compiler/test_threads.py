"""Compilation is scoped to the compiling thread: the tape, and other compilations, run in
other threads at the same time and give the same answers as alone."""
import sys
import threading

import numpy as np
import pytest

import runtime as rt
import srcgrad


@pytest.fixture(autouse=True)
def _fast_switching(monkeypatch):
    # switch threads often, so that the two threads interleave inside each other's work
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", "")
    yield
    sys.setswitchinterval(old)


def poly(x, w):
    h = np.tanh(x * w) + x ** 2
    return np.sum(h * np.sin(x))


def dpoly_dx(x, w):
    t = np.tanh(x * w)
    h = t + x ** 2
    return (w * (1 - t ** 2) + 2 * x) * np.sin(x) + h * np.cos(x)


def rational(x, w):
    return np.sum(np.exp(-x) / (1.0 + w * x * x))


def drational_dx(x, w):
    d = 1.0 + w * x * x
    return -np.exp(-x) / d - np.exp(-x) * 2 * w * x / d ** 2


def _run_all(workers):
    """Run the workers in threads; re-raise the first failure in the main thread."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(w)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _compile_loop(fn, want, n):
    alone = srcgrad.grad(fn, cache=False).source  # compiled with no other thread about

    def work():
        x, w = np.linspace(-1.0, 1.5, 5), 0.7
        for _ in range(n):
            g = srcgrad.grad(fn, cache=False)  # a new object: compiled again each time
            np.testing.assert_allclose(g(x, w), want(x, w), rtol=1e-12, atol=1e-12)
            assert g.source == alone  # nothing of the other thread's compilation leaks in

    return work


def _tape_loop(n):
    def work():
        xv = np.array([0.3, -1.2, 2.0])
        for _ in range(n):
            x = rt.tensor(xv, requires_grad=True)
            y = (x * x).exp().sum() + (x.sin() * 3.0).sum()
            assert y.grad_fn is not None
            y.backward()
            want = 2 * xv * np.exp(xv ** 2) + 3.0 * np.cos(xv)
            np.testing.assert_allclose(np.asarray(x.grad.data), want, rtol=1e-12)

    return work


def test_the_tape_in_one_thread_while_another_compiles():
    _run_all([_compile_loop(poly, dpoly_dx, 15), _tape_loop(400)])


def test_two_threads_compile_different_functions_at_once():
    _run_all([_compile_loop(poly, dpoly_dx, 12), _compile_loop(rational, drational_dx, 12)])


def test_first_calls_of_one_function_from_two_threads_compile_it_once():
    g = srcgrad.grad(rational, cache=False)
    x = np.linspace(0.0, 1.0, 4)
    results = []
    barrier = threading.Barrier(2)

    def call():
        barrier.wait()
        results.append(g(x, 0.5))

    _run_all([call, call])
    assert g.compile_count == 1
    for r in results:
        np.testing.assert_allclose(r, drational_dx(x, 0.5), rtol=1e-12)
