"""The CUDA C spelling of every elementwise primitive (runtime.ops.cuda, what a fused GPU
kernel computes) against the primitive's numpy implementation, on edge values: NaN,
infinities, signed zeros, negative divisors, ties.

CUDA's math library follows C99, as the host's C library does: each spelling is compiled
here as C with T = double by the machine's C compiler (skipped without one), run on a grid
of values, and its results (exact, printed in hexadecimal) compared with numpy's. A
spelling that swallows a NaN numpy propagates, or divides where numpy's floor division
and remainder take the exact quotient, gives a GPU gradient that differs from the numpy
one without an error; this finds it without a GPU.
"""
from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import numpy as np
import pytest

from runtime.ops.core import PRIMITIVES

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to compile the spellings")

VALUES = [-np.inf, -3.7, -2.5, -1.0, -0.5, -0.1, -0.0, 0.0, 0.1, 0.5, 1.0, 2.5, 3.7,
          np.inf, np.nan]
#: arity by the highest operand the spelling names; spellings with named params ({nan})
#: are checked where their params are given (nan_to_num: see fusion.fusible)
_OPERAND = re.compile(r"\{(\d+)\}")


def _spellings():
    out = {}
    for name, p in sorted(PRIMITIVES.items()):
        if p.cuda is None or re.search(r"\{[a-z_]+\}", p.cuda):
            continue
        out[name] = (p, 1 + max(int(k) for k in _OPERAND.findall(p.cuda)))
    return out


SPELLINGS = _spellings()


def _grid(arity):
    if arity == 3:  # where(c, x, y), clip(x, lo, hi): fewer values per axis
        vals = [-np.inf, -1.0, -0.0, 0.5, 2.5, np.inf, np.nan]
        return list(itertools.product(vals, repeat=3))
    return list(itertools.product(VALUES, repeat=arity))


@pytest.fixture(scope="module")
def c_results(tmp_path_factory):
    """{op name: [result of the C spelling at each grid point]}."""
    d = tmp_path_factory.mktemp("cuda_spellings")
    lines = ["#include <math.h>", "#include <stdio.h>", "typedef double T;", ""]
    body = []
    for name, (p, arity) in SPELLINGS.items():
        args = ", ".join(f"T a{k}" for k in range(arity))
        expr = p.cuda.format(*[f"a{k}" for k in range(arity)])
        lines.append(f"static T f_{name}({args}) {{ return (T)({expr}); }}")
        grid = _grid(arity)
        masks = _masks(name, arity)
        pts = ", ".join("{" + ", ".join(_c(float(bool(v)) if k in masks else v)
                                        for k, v in enumerate(pt)) + "}" for pt in grid)
        lines.append(f"static const T g_{name}[{len(grid)}][{arity}] = {{{pts}}};")
        call = ", ".join(f"g_{name}[i][{k}]" for k in range(arity))
        body.append(f'  printf("{name}");\n'
                    f'  for (int i = 0; i < {len(grid)}; i++) printf(" %a", '
                    f'f_{name}({call}));\n  printf("\\n");')
    lines += ["", "int main(void) {"] + body + ["  return 0;", "}"]
    src = d / "spellings.c"
    src.write_text("\n".join(lines) + "\n")
    exe = d / "spellings"
    subprocess.run([CC, "-O0", "-std=c99", str(src), "-o", str(exe), "-lm"], check=True,
                   capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    results = {}
    for line in out.splitlines():
        name, *vals = line.split()
        results[name] = [float.fromhex(v) if v not in ("nan", "-nan", "inf", "-inf")
                         else float(v.replace("-nan", "nan")) for v in vals]
    return results


def _masks(name, arity) -> set:
    """The operands that are masks in a kernel (booleans, 0 or 1)."""
    if name == "where":
        return {0}
    if name in ("logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
                "bitwise_xor", "invert"):
        return set(range(arity))
    return set()


def _c(v) -> str:
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return float(v).hex()


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_cuda_spelling_computes_what_numpy_does(c_results, name):
    p, arity = SPELLINGS[name]
    grid = _grid(arity)
    cols = [np.array([pt[k] for pt in grid]) for k in range(arity)]
    masks = _masks(name, arity)
    cols = [c.astype(bool) if k in masks else c for k, c in enumerate(cols)]
    with np.errstate(all="ignore"):
        want = np.asarray(p.impl(*cols), dtype=float)
    got = np.array(c_results[name])
    bad = []
    for pt, w, g in zip(grid, want, got):
        if np.isnan(w) != np.isnan(g) or (not np.isnan(w) and not np.isclose(
                g, w, rtol=1e-12, atol=0.0) and not (np.isinf(w) and g == w)):
            bad.append(f"{name}{tuple(float(v) for v in pt)}: numpy {w!r}, CUDA spelling {g!r}")
    assert not bad, f"{len(bad)} of {len(grid)} points differ:\n" + "\n".join(bad[:12])
