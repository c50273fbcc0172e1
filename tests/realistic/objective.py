"""Benchmark objectives in the style of optimizer test suites: a class per function, with a
call counter and `fun(self, x, *args)`."""
import numpy as np


class Benchmark:
    def __init__(self, dimensions=2):
        self.N = dimensions
        self.nfev = 0
        self.fglob = 0.0

    def fun(self, x, *args):
        raise NotImplementedError


class Rosenbrock(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        return sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


class Rastrigin(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        return 10.0 * self.N + sum(x ** 2.0 - 10.0 * np.cos(2.0 * np.pi * x))


class Ackley(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        u = sum(x ** 2)
        v = sum(np.cos(2 * np.pi * x))
        return (-20. * np.exp(-0.2 * np.sqrt(u / self.N))
                - np.exp(v / self.N) + 20. + np.exp(1.))


class StyblinskiTang(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        return sum(x ** 4 - 16 * x ** 2 + 5 * x) / 2.0


class Griewank(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        i = np.arange(1., np.size(x) + 1.)
        return np.sum(x ** 2 / 4000) - np.prod(np.cos(x / np.sqrt(i))) + 1


class Levy(Benchmark):
    def fun(self, x, *args):
        self.nfev += 1
        w = 1 + (x - 1) / 4
        term1 = np.sin(np.pi * w[0]) ** 2
        term2 = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
        term3 = (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2)
        return term1 + term2 + term3
