"""The compiler bugs the program generator (tests/programs.py) found, each as a minimal
program checked against finite differences: each gives the right gradient or, where the
feature properties accept one, a refusal located at the user's line. (A bug found later
and not yet fixed goes into KNOWN_BUGS in tests/programs.py, which keeps the pattern out
of the generated programs, with a strict-xfail repro here.) The other findings (an update
after a view, iterating over a run-time list, `v[None]` of a 0-d value) are in
tests/test_soundness.py, which also checks that their refusals are located."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import srcgrad
from compiler_helpers import check_grad
from srcgrad.errors import InternalError, SrcgradError

SOURCE = '''
import numpy as np

G = np.array(0.5)


def scalar_alias_python_float(x):
    v = x * 2.0
    w = v
    v *= x
    return v + w


def scalar_alias_numpy_float(x):
    v = np.sin(x)
    w = v
    w *= v
    return v + w


def reads_a_global(x):
    return np.sum(x + G)
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    path = os.path.join(str(tmp_path_factory.mktemp("known_bugs")), "known_bugs_src.py")
    with open(path, "w") as f:
        f.write(SOURCE)
    spec = importlib.util.spec_from_file_location("known_bugs_src", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


X = np.array([[0.4, -0.7], [0.3, 0.9]])
# (bug, function, argument, whether a located refusal would fix it: as the feature
# properties accept one; the base language must compile)
CASES = [
    ("alias:immutable_scalar", "scalar_alias_python_float", 0.3, True),
    ("alias:immutable_scalar", "scalar_alias_numpy_float", 0.3, True),
]


@pytest.mark.parametrize("bug, name, x, refusal_ok", CASES, ids=[c[1] for c in CASES])
def test_generator_finding(mod, bug, name, x, refusal_ok):
    fn = getattr(mod, name)
    try:
        check_grad(fn, [x], tape=False, compiled=srcgrad.grad(fn, cache=False))
    except SrcgradError as err:
        if not refusal_ok or isinstance(err, InternalError) or err.lineno is None:
            raise


def test_global_rebound_to_a_float(mod):
    g = srcgrad.grad(mod.reads_a_global, cache=False)
    x = X[0]
    check_grad(mod.reads_a_global, [x], compiled=g)
    mod.G = 0.7
    check_grad(mod.reads_a_global, [x], compiled=g)
