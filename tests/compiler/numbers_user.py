"""Functions of a few numbers, written as people write them (formulas from physics,
statistics and optimization), for tests/compiler/test_numbers.py."""
import numpy as np

G = 9.81


def projectile_range(v, angle):
    return v ** 2 * np.sin(2 * angle) / G


def rosenbrock2(x, y):
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def gaussian_nll(mu, log_sigma, x):
    sigma = np.exp(log_sigma)
    z = (x - mu) / sigma
    return np.sum(log_sigma + 0.5 * z * z + 0.5 * np.log(2 * np.pi))


def logistic_loss(w, b, x, y):
    margin = y * (w * x + b)
    return np.mean(np.log1p(np.exp(-margin)))


def polar_energy(r, theta):
    x = r * np.cos(theta)
    y = r * np.sin(theta)
    return np.hypot(x - 1.0, y) + np.arctan2(y, x + 2.0) ** 2


def power_law(a, x):
    return np.sum(a * x ** 1.5 + np.sqrt(x) - np.abs(a) / x)


def hyperbolic(x):
    t = np.tanh(x) + np.sinh(x) * 0.1 - np.cosh(x) * 0.05
    return np.sum(np.arcsinh(t) + np.arctan(x) + np.log10(2.0 + x * x) + np.expm1(x / 4))


def reshaped(x, y):
    z = np.reshape(x * y, (1, 1))
    return z.sum() + np.mean(np.reshape(x, -1) ** 3)


def branchy(x):
    if x > 0:
        return np.sum(np.log(1 + x))
    return np.sum(x * x)


def log_of(x):
    return np.sum(np.log(x))


def sqrt_of(x):
    return np.sum(np.sqrt(x))


def exp_of(x):
    return np.sum(np.exp(x))


def product(x, y):
    return np.sum(x * y)


def arcsin_of(x):
    return np.sum(np.arcsin(x))


def fractional_power(x):
    return np.sum(x ** 0.5)


class Spring:
    """A damped spring's energy, a method reading the instance's constants."""

    def __init__(self, k, c):
        self.k = k
        self.c = c

    def energy(self, x, v):
        return 0.5 * self.k * x ** 2 + 0.5 * v ** 2 + self.c * x * v
