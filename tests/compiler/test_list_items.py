"""Items of lists read with an index known only at run time: `hs[t]` of a list grown in a
run-time loop, `layers[k]` of a list or tuple indexed by a run-time integer. First and
second derivatives are checked against finite differences."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

X = np.array([0.3, 0.9, -0.2])


def pick_by_argmax(x):
    hs = [x, x * 2, np.sin(x)]
    n = np.argmax(x)
    return np.sum(hs[n] ** 2)


def states_read_back(x, T):
    hs = []
    h = x
    for t in range(T):
        h = np.tanh(h * 1.5 + 0.1)
        hs.append(h)
    total = 0.0
    for t in range(T):
        total = total + np.sum(hs[t] * (t + 1))
    return total + np.sum(hs[-1]) + np.sum(hs[0] ** 2)


def weight_by_length(x):
    ws = (1.0, 2.0, 3.0)
    k = x.shape[0] - 1
    return np.sum(x ** 2) * ws[k]


CASES = [(pick_by_argmax, [X]), (states_read_back, [X, 4]), (weight_by_length, [X])]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient(f, args):
    np.testing.assert_allclose(srcgrad.grad(f)(*args), finite_differences(f, args, 0),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_hessian_vector_product(f, args):
    v = np.array([1.0, -0.5, 2.0])
    g = srcgrad.grad(f)

    def along(s):
        return g(args[0] + s * v, *args[1:])

    eps = 1e-5
    want = (along(eps) - along(-eps)) / (2 * eps)
    np.testing.assert_allclose(srcgrad.hvp(f)(*args, v), want, rtol=1e-5, atol=1e-7)


def test_a_slice_of_a_run_time_list_is_refused():
    def f(x, T):
        hs = []
        for t in range(T):
            hs.append(x * t)
        return np.sum(np.stack(hs[1:]))

    with pytest.raises(srcgrad.errors.UnsupportedSyntaxError, match="integer index"):
        srcgrad.grad(f)(X, 3)


# ---- numpy functions of a list of arrays: numpy takes the list as one array -----------------

def sum_of_list(xs, w):
    return np.sum(np.sum(xs) * w)                # np.sum(xs): every element, a scalar


def mean_of_errors(x, w):
    errs = [np.square(x - w), np.square(x + w)]
    return np.mean(errs).sum() + np.prod([x, w]) + np.max([x * w, x + w], axis=0).sum()


def elementwise_of_list(x, w):
    hs = [x * w, x + w]
    return np.sum(np.exp(hs)) + np.sum(np.dot(hs, w)) + np.linalg.norm(hs) + \
        np.sum(np.where(True, hs, 0.0)) + np.sum(np.clip(hs, 0.2, 0.8))


LIST_CASES = [(sum_of_list, ([np.array([1.0, 2.0]), np.array([3.0, 4.0])], np.array([0.5, -1.0])), 1),
              (mean_of_errors, (np.array([0.3, 0.5, 0.9]), np.array([0.4, 0.7, 0.2])), 1),
              (elementwise_of_list, (np.array([0.3, 0.5, 0.9]), np.array([0.4, 0.7, 0.25])), 1)]


@pytest.mark.parametrize("f, args, wrt", LIST_CASES, ids=[c[0].__name__ for c in LIST_CASES])
def test_numpy_functions_of_a_list_of_arrays(f, args, wrt):
    """np.sum([a, b]) reduces every element (numpy makes the list an array); it reduced
    over the items only, as Python's sum would: a silently wrong value and gradient."""
    vg = srcgrad.value_and_grad(f, wrt=wrt, cache=False)
    for _ in range(3):
        value, g = vg(*args)
        np.testing.assert_allclose(value, f(*args), rtol=1e-12)
        np.testing.assert_allclose(g, finite_differences(f, args, wrt), rtol=1e-6, atol=1e-8)


def passed_through(a, b):
    M = np.asarray([a, b]) * 3.0 + np.real([a, b]) + np.atleast_2d((a, b))
    return np.sum(M ** 2) + np.sum(np.real([a, b]) @ np.ones(3)) + \
        np.sum(np.max(np.atleast_1d([a, b]), axis=1) * np.array([1.0, 3.0]))


def test_numpy_functions_that_return_their_argument_make_a_list_an_array():
    """np.asarray, np.real, np.atleast_2d of a list of arrays are arrays (they returned
    the list, and `list * 3.0` raised)."""
    a, b = np.array([0.3, 0.5, 0.9]), np.array([0.4, 0.7, 0.25])
    vg = srcgrad.value_and_grad(passed_through, wrt=(0, 1), cache=False)
    for _ in range(3):
        value, (ga, gb) = vg(a, b)
        np.testing.assert_allclose(value, passed_through(a, b), rtol=1e-12)
        np.testing.assert_allclose(ga, finite_differences(passed_through, (a, b), 0),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gb, finite_differences(passed_through, (a, b), 1),
                                   rtol=1e-6, atol=1e-8)
