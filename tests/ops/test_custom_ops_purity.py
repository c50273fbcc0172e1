"""A user's op is not taken to be pure: a call on constant arguments runs at every call of
the generated code (never folded at compile time, merged with an equal call, or dropped);
one declared pure (`@srcgrad.primitive(pure=True)` or `op.pure = True`) is folded."""
import numpy as np
import pytest

import srcgrad
from runtime.check import numerical_grad
from srcgrad import cache as _cache


@srcgrad.primitive
def noise(scale):
    return np.random.normal() * scale


@srcgrad.primitive(pure=True)
def triple(c):
    return 3.0 * c


@triple.defvjp
def _(g, out, c):
    return 3.0 * g


def noisy(x):
    return np.sum(x * noise(1.0))


def two_draws(x):
    return np.sum(x * noise(1.0)) + np.sum(x * x * noise(1.0))


def draws_in_a_loop(x):
    s = 0.0
    for _ in range(3):
        s = s + np.sum(x * noise(2.0))
    return s


def draw_not_needed_by_the_gradient(x):
    unused = noise(1.0)  # noqa: F841  (a call for its effect only)
    return np.sum(x * x) + noise(1.0)


def folded(x):
    return np.sum(x * triple(2.0))


X = np.array([0.5, -1.0, 2.0])


def calls(source, op):
    """Whether the generated code (its comments quote the user's lines) calls `op`."""
    return any(f"{op.name}(" in ln for ln in source.splitlines()
               if not ln.lstrip().startswith("#"))


def draws(seed, n, scale=1.0):
    rng = np.random.RandomState(seed)
    return [rng.normal() * scale for _ in range(n)]


@pytest.fixture(params=["disk cache off", "disk cache on"])
def cache_mode(request, monkeypatch, tmp_path):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR",
                       "" if request.param == "disk cache off" else str(tmp_path / "cache"))


def test_an_impure_op_on_constants_draws_at_every_call(cache_mode):
    g = srcgrad.grad(noisy)
    assert calls(g.source, noise)
    for seed in (0, 1, 2):
        np.random.seed(seed)
        (d,) = draws(seed, 1)
        np.testing.assert_allclose(g(X), np.full(3, d), rtol=1e-15)
    assert not np.array_equal(g(X), g(X))  # no seed between: two different draws


def test_two_equal_calls_are_two_draws(cache_mode):
    np.random.seed(3)
    d1, d2 = draws(3, 2)
    np.testing.assert_allclose(srcgrad.grad(two_draws)(X), d1 + 2 * X * d2, rtol=1e-14)


def test_a_call_inside_a_loop_draws_at_each_iteration(cache_mode):
    np.random.seed(4)
    want = np.full(3, sum(draws(4, 3, 2.0)))
    np.testing.assert_allclose(srcgrad.grad(draws_in_a_loop)(X), want, rtol=1e-14)


def test_a_call_the_gradient_does_not_need_still_runs(cache_mode):
    # the generated code draws as often as the function does: the draws after it agree
    g = srcgrad.grad(draw_not_needed_by_the_gradient)
    np.random.seed(5)
    np.testing.assert_allclose(g(X), 2 * X, rtol=1e-15)
    after_grad = np.random.normal()
    np.random.seed(5)
    draw_not_needed_by_the_gradient(X)
    assert np.random.normal() == after_grad


def test_a_pure_op_on_constants_is_folded(cache_mode):
    g = srcgrad.grad(folded)
    assert not calls(g.source, triple) and "6.0" in g.source
    want = numerical_grad(folded, [X], 0)
    np.testing.assert_allclose(g(X), want, rtol=1e-8)


def test_purity_declared_as_an_attribute(monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", "")

    @srcgrad.primitive
    def quadruple(c):
        return 4.0 * c

    def uses(x):
        return np.sum(x * quadruple(2.0))

    assert quadruple.pure is False and triple.pure is True
    assert calls(srcgrad.grad(uses).source, quadruple)
    key_impure = _cache.cache_key(uses, {"kind": "grad"})
    quadruple.pure = True
    g = srcgrad.grad(uses)
    assert not calls(g.source, quadruple) and "8.0" in g.source
    np.testing.assert_allclose(g(X), np.full(3, 8.0), rtol=1e-15)
    # the generated code differs, so does the key
    assert _cache.cache_key(uses, {"kind": "grad"}) != key_impure
