"""The runtime's example scripts run as a user would run them, in a fresh interpreter."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

from paths import ROOT  # noqa: E402  (tests/paths.py)
EXAMPLES = os.path.join(ROOT, "examples")


def run_example(name: str, *argv: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_textbook_prints_the_hand_computed_values():
    out = run_example("textbook.py")
    assert "y = 17, dy/dx = 14 " in out
    assert "dy/dw = 3, dy/db = 1, x.grad = None " in out
    assert "de/da = 2, de/db = 5 " in out
    assert "dz/dx = 0.6429, dz/dy = 0.2381 " in out
    assert "a: 0.0714, b: 0.0238, c: 0.1190, d: 0.0238, e: 0.0238, z: 1.0000" in out
    assert "dz/dx = 1.2857, dz/dy = 0.4762 " in out
    assert "dr/dx = [5.0, 5.0, 5.0] " in out
    assert "dloss/dw = -2, after one SGD step with lr 0.01: w = 1.02 " in out
    assert "at x=2:   12, 12 " in out


def test_train_tape_decreases_the_loss_with_both_optimizers():
    out = run_example("train_tape.py")
    initial = float(re.search(r"^initial loss ([0-9.eE+-]+)$", out, re.M).group(1))
    sections = re.split(r"^== (\w+) \(.*\) ==$", out, flags=re.M)[1:]
    assert [sections[0], sections[2]] == ["SGD", "Adam"]
    for name, text in zip(sections[::2], sections[1::2]):
        final = float(re.search(rf"^final loss {name} ([0-9.eE+-]+)$", out, re.M).group(1))
        assert final < 0.1 * initial, name  # it really trains, not just a lucky step
        steps = [int(m) for m in re.findall(r"^step +(\d+) +loss", text, re.M)]
        assert steps == list(range(0, 201, 25)), name
        first = float(re.search(r"^step +0 +loss ([0-9.]+)$", text, re.M).group(1))
        assert abs(first - initial) < 1e-5  # both start from the same weights
    if importlib.util.find_spec("matplotlib") is not None:
        assert os.path.getsize(os.path.join(EXAMPLES, "loss.png")) > 0
    else:
        assert "matplotlib is not installed" in out and 'pip install "srcgrad[plot]"' in out


def test_quickstart_trains_checks_against_the_tape_and_prints_the_source():
    out = run_example("quickstart.py")
    losses = [float(v) for v in re.findall(r"^step +\d+ +loss ([0-9.]+)$", out, re.M)]
    assert len(losses) == 5 and losses[-1] < losses[0]
    diff = float(re.search(r"^max \|srcgrad - tape\| = ([0-9.eE+-]+)$", out, re.M).group(1))
    assert diff < 1e-12
    assert "def grad_loss(W, b, X, y):" in out
    if importlib.util.find_spec("matplotlib") is not None:
        path = os.path.join(EXAMPLES, "quickstart_loss.png")
        assert f"saved the loss curve to {path}" in out and os.path.getsize(path) > 0
    else:
        assert 'install matplotlib: pip install "srcgrad[plot]"' in out


def test_readme_examples_prints_what_the_readme_says_it_computes():
    out = run_example("readme_examples.py")
    assert "dx = [0.6429], dy = [0.2381]" in out  # README: `# [0.6429], [0.2381]`
    assert "[[0.96 0.  ]\n [0.   0.  ]]" in out  # README: `# [[0.96, 0.], [0., 0.]]`
    assert "hvp of energy at [ 0.5 -1. ], v = [1. 1.]: [0.96 0.  ]" in out
    before = float(re.search(r"^mlp loss ([0-9.]+);", out, re.M).group(1))
    after = float(re.search(r"^mlp loss after 50 gradient steps: ([0-9.]+)$", out,
                            re.M).group(1))
    assert after < 0.5 * before
    assert "evaluating at [1. 2.]" in out  # the verbatim print ran


def test_dask_cluster_example_fits_the_model_on_a_cluster():
    if importlib.util.find_spec("distributed") is None:
        import pytest

        pytest.skip("needs the dask extra")
    out = run_example("dask_cluster.py", "--rows", "300000", "--iterations", "8")
    assert re.search(r"^2 workers, 256 MiB each; data 300,000 x 20 float64", out, re.M)
    err = float(re.search(r"\|w - w_true\| / \|w_true\| = ([0-9.]+)", out).group(1))
    assert err < 0.05  # the fit recovers the weights the labels were drawn with
    assert re.search(r"^gradient calls: \d+; time per gradient: first \d+ ms", out, re.M)
