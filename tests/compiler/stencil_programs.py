"""Random stencil programs (hypothesis): a loss of sums of elementwise terms of two shifted
slices of x, of one or two axes, written to a file of its own and loaded, for the tests of
sums of shifted slices (tests/compiler/test_numba_stencils.py, test_blocked.py)."""
from __future__ import annotations

import importlib.util
import itertools
import os

from hypothesis import strategies as st

TERMS = ["u * v", "(u - v) ** 2", "np.sin(u) * v", "np.exp(0.3 * u) - v * v",
         "np.sqrt(u * u + v * v + 1.0)", "w * u * np.cos(v)", "np.tanh(u - w * v)"]


def _cut(o: int, m: int) -> str:
    """The slice of an axis that drops `o` elements at its start and `m - o` at its end."""
    return f"{o or ''}:{o - m if o < m else ''}"


@st.composite
def stencils(draw):
    """(source, shape): a loss of sums of elementwise terms of two shifted slices of x."""
    ndim = draw(st.integers(1, 2), label="ndim")
    shape = tuple(draw(st.lists(st.integers(3, 7), min_size=ndim, max_size=ndim),
                       label="shape"))
    lines = ["import numpy as np", "", "", "def stencil(x, w=0.7):"]
    total = []
    for t in range(draw(st.integers(1, 4), label="terms")):
        m = [draw(st.integers(0, 2), label="narrower by") for _ in shape]
        cuts = []
        for _ in range(2):
            parts = [_cut(draw(st.integers(0, mk), label="offset"), mk) for mk in m]
            cuts.append("x" if all(p == ":" for p in parts) else f"x[{', '.join(parts)}]")
        lines.append(f"    u, v = {cuts[0]}, {cuts[1]}")
        lines.append(f"    t{t} = {draw(st.sampled_from(TERMS), label='term')}")
        total.append(f"np.sum(t{t})")
    lines.append(f"    return {' + '.join(total)}")
    return "\n".join(lines) + "\n", shape


_count = itertools.count()


def load(source, directory, name="stencil"):
    """The function `name` of a module made of `source`, written to a file of its own."""
    path = os.path.join(str(directory), f"{name}_{os.getpid()}_{next(_count)}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


