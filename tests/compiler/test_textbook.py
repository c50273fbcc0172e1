"""Textbook derivatives through @srcgrad.grad, with the values worked out by hand (and
each also checked against the tape and finite differences)."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad


def quadratic(x):
    return 3 * x ** 2 + 2 * x + 1


def test_quadratic_at_2_is_14():
    # d/dx (3x^2 + 2x + 1) = 6x + 2 = 14 at x = 2
    g = srcgrad.grad(quadratic)
    assert float(g(2.0)) == 14.0
    assert float(g(np.array(2.0))) == 14.0
    check_grad(quadratic, [2.0])


def linear(w, x, b):
    return w * x + b


def test_linear_neuron_grads():
    # d/dw (w x + b) = x, d/dx = w, d/db = 1
    dw, dx, db = srcgrad.grad(linear, wrt=(0, 1, 2))(3.0, 4.0, 5.0)
    assert (float(dw), float(dx), float(db)) == (4.0, 3.0, 1.0)
    check_grad(linear, [3.0, 4.0, 5.0], (0, 1, 2))


def graph_example(a, b):
    c = a + b
    d = b + 1
    return c * d


def test_computational_graph_a2_b1():
    # e = (a + b) * (b + 1): de/da = b + 1 = 2, de/db = (b + 1) + (a + b) = 5 at a=2, b=1
    da, db = srcgrad.grad(graph_example, wrt=("a", "b"))(2.0, 1.0)
    assert (float(da), float(db)) == (2.0, 5.0)
    check_grad(graph_example, [2.0, 1.0], (0, 1))


def log_poly(x, y):
    z = np.log(3 * x ** 2 + 5 * x * y)
    return np.sum(z)


def test_log_of_polynomial_at_2_3():
    # dz/dx = (6x + 5y) / (3x^2 + 5xy) = 27/42, dz/dy = 5x / (3x^2 + 5xy) = 10/42
    dx, dy = srcgrad.grad(log_poly, wrt=("x", "y"))(np.array([2.0]), np.array([3.0]))
    np.testing.assert_allclose(dx, [27 / 42])
    np.testing.assert_allclose(dy, [10 / 42])
    assert round(float(dx[0]), 4) == 0.6429 and round(float(dy[0]), 4) == 0.2381
    check_grad(log_poly, [np.array([2.0]), np.array([3.0])], (0, 1))


def square_plus_cube(x):
    return (x ** 2 + x ** 3).sum()


def test_sum_of_square_and_cube_at_ones():
    # d/dx_i sum(x^2 + x^3) = 2x_i + 3x_i^2 = 5 at x = 1
    g = srcgrad.grad(square_plus_cube)(np.ones(3))
    np.testing.assert_array_equal(g, [5.0, 5.0, 5.0])
    check_grad(square_plus_cube, [np.ones(3)])


def squared_error(w, x, y):
    return (w * x - y) ** 2


def test_squared_error_at_1_2_1():
    # at w=1, x=2, y=1: d/dy (wx - y)^2 = -2 (wx - y) = -2, d/dw = 2 (wx - y) x = 4
    dw, dy = srcgrad.grad(squared_error, wrt=("w", "y"))(1.0, 2.0, 1.0)
    assert float(dy) == -2.0
    assert float(dw) == 4.0
    check_grad(squared_error, [1.0, 2.0, 1.0], (0, 1, 2))


@pytest.mark.parametrize("x", [-1.5, 0.0, 0.5, 3.0])
def test_quadratic_matches_6x_plus_2_everywhere(x):
    assert float(srcgrad.grad(quadratic)(x)) == pytest.approx(6 * x + 2, abs=1e-12)
