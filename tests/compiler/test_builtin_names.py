"""A statement that runs as written calls Python's builtins by their names (`any`, `all`,
`sum`, `max`, `min`, `round`), not srcgrad's op helpers of the same names: `if any(v > 3
for v in ns)` called numpy's any on the generator, always true, and took the wrong branch
from the first call, without a word."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

NS = [1, 2]
LOG = []
X = np.array([1.0, 2.0, -0.5])


def with_any(x):
    if any(v > 3 for v in NS):
        return np.sum(x ** 2)
    return np.sum(x)


def with_all(x):
    if all(v > 1 for v in NS):
        return np.sum(x ** 2)
    return np.sum(x)


def logged(x):
    loss = np.sum(np.sin(x) ** 2)
    LOG.append((round(float(loss), 3), max(NS), min(NS), sum(v for v in NS)))
    return loss


@pytest.mark.filterwarnings("ignore:srcgrad does not compile")  # (numba: numpy code)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("fn", [with_any, with_all])
def test_any_and_all_of_a_generator(backend, fn):
    if backend == "numba":
        pytest.importorskip("numba")
    g = srcgrad.grad(fn, backend=backend)
    for ns in ([1, 2], [1, 2], [1, 2], [2, 5], [4, 5], [0, 0]):
        NS[:] = ns
        np.testing.assert_allclose(g(X), finite_differences(fn, (X,), 0), rtol=1e-6,
                                   atol=1e-9)
    NS[:] = [1, 2]


def test_builtins_in_a_logged_statement():
    LOG.clear()
    g = srcgrad.grad(logged)
    for _ in range(3):
        g(X)
    loss = float(np.sum(np.sin(X) ** 2))
    assert LOG == [(round(loss, 3), 2, 1, 3)] * 3
    assert type(LOG[0][0]) is float  # Python's round of a float
