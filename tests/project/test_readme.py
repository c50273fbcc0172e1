"""README.md shows generated code: it must be what srcgrad generates today."""
import os
import re
import sys

import numpy as np
import pytest

import srcgrad

from paths import ROOT  # noqa: E402  (tests/paths.py)
sys.path.insert(0, os.path.join(ROOT, "examples"))
import readme_examples as m  # noqa: E402


def _body(src):
    return src[src.index("def "):].rstrip()


def _readme_blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return re.findall(r"```python\n(def (?:grad|hvp)_.*?)\n```", text, re.S)


def _grad_mlp():
    import numpy as np

    g = srcgrad.grad(m.mlp)
    params = {"W1": np.ones((3, 8)), "b1": np.zeros(8), "W2": np.ones((8, 1)),
              "b2": np.zeros(1)}
    g(params, np.ones((4, 3)), np.ones((4, 1)))  # the entry for a dict of four arrays
    return g


@pytest.mark.parametrize("make", [
    lambda: srcgrad.grad(m.f, wrt=("x", "y")),
    lambda: srcgrad.grad(m.rnn, wrt=("W", "U")),
    lambda: srcgrad.hvp(m.energy),
    _grad_mlp,
    lambda: srcgrad.grad(m.noisy_loss),
], ids=["grad_f", "grad_rnn", "hvp_energy", "grad_mlp", "grad_noisy_loss"])
def test_readme_shows_the_generated_code(make):
    blocks = _readme_blocks()
    assert _body(make().source) in blocks


def test_readme_method_example_runs_and_is_right():
    from compiler_helpers import check_grad

    rng = np.random.default_rng(0)
    model = m.Model()
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    check_grad(model.loss, (x, y), compiled=srcgrad.grad(model.loss, cache=False))
    f = lambda W: np.sum(np.tanh(x @ W))  # noqa: E731
    check_grad(f, (model.W,), compiled=srcgrad.grad(f, cache=False))


def test_readme_lists_five_generated_listings():
    assert len(_readme_blocks()) == 5
