"""An array of indices changed in place (rng.shuffle, ndarray.sort) after an element or a
gather read through it, as a minibatch loop does: an element of an integer array
(`idx[0]`) is a copy, and what the gather `x[idx]` read of a folded array stays its
literal, so these compile (the in-place check refused them at first) and are checked
against calling the function and finite differences."""
import numpy as np
import pytest

from compiler_helpers import check_value_and_grad

X = np.array([0.3, -1.2, 0.7, 2.0, 0.1, -0.4])


def shuffle_in_for_loop_element_index(x):
    rng = np.random.default_rng(5)
    idx = np.arange(6)
    s = 0.0
    for k in range(2):
        rng.shuffle(idx)
        s = s + x[idx[0]] * x[idx[1]]
    return s


def shuffle_in_while_loop_element_index(x):
    rng = np.random.default_rng(5)
    idx = np.arange(6)
    s = 0.0
    k = 0
    while k < 2:
        rng.shuffle(idx)
        s = s + x[idx[0]] ** 2
        k += 1
    return s


def shuffle_twice_element_index(x):
    rng = np.random.default_rng(5)
    idx = np.arange(6)
    rng.shuffle(idx)
    a = x[idx[0]]
    rng.shuffle(idx)
    return a * x[idx[0]]


def element_bound_to_a_name(x):
    rng = np.random.default_rng(5)
    idx = np.arange(6)
    rng.shuffle(idx)
    j = idx[0]
    a = x[j]
    rng.shuffle(idx)
    return a * x[idx[0]]


def sort_indices_after_gather(x):
    idx = np.array([3, 1, 2, 0, 5, 4])
    a = x[idx]
    idx.sort()
    return np.sum(a * np.arange(6)) + np.sum(x[idx] ** 2)


@pytest.mark.parametrize("fn", [
    shuffle_in_for_loop_element_index,
    shuffle_in_while_loop_element_index,
    shuffle_twice_element_index,
    element_bound_to_a_name,
    sort_indices_after_gather,
])
def test_indices_changed_after_they_were_read(fn):
    check_value_and_grad(fn, X)
