"""First-call times of `grad(f, backend="numba")`, each in a fresh process.

For each problem at each size: `cold` is the first call with empty caches (srcgrad
generates the modules, numba compiles them); `warm` is the first call of another fresh
process that finds both caches filled by the cold one (srcgrad loads its modules, numba
loads its machine code). Both include importing numba (`import numba` alone is reported
too) and the call itself. A line says where numba fell back to numpy.

    python -m benchmarks.numba_compile [--problems poly,mlp] [--sizes small,large]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

if __package__ in (None, ""):          # run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import numba
t_numba = time.perf_counter() - t0
from benchmarks import problems
import srcgrad
p = problems.get(sys.argv[1])
args = p.inputs(sys.argv[2])
g = srcgrad.grad(p.loss, wrt=p.wrt, backend="numba")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", RuntimeWarning)
    t1 = time.perf_counter()
    g(*args)
    first = time.perf_counter() - t1
fell = [str(w.message).split(". It runs")[0] for w in caught
        if "numba could not compile" in str(w.message)]
print(json.dumps({"first": first, "since_start": time.perf_counter() - t0,
                  "import_numba": t_numba, "variants": g.variant_count,
                  "fell": fell[0] if fell else ""}))
"""


def _child(name, size, cache):
    env = dict(os.environ, SRCGRAD_CACHE_DIR=cache,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _CHILD, name, size], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    from benchmarks import problems

    ap = argparse.ArgumentParser(prog="python -m benchmarks.numba_compile")
    ap.add_argument("--problems", default=",".join(problems.NAMES))
    ap.add_argument("--sizes", default="small,large")
    a = ap.parse_args(argv)
    print(f"{'problem':<11} {'size':<6} {'cold first call':>16} {'warm-cache first call':>22}"
          f" {'import numba':>13}  note")
    for name in a.problems.split(","):
        for size in a.sizes.split(","):
            with tempfile.TemporaryDirectory(prefix="srcgrad-numba-") as d:
                cache = os.path.join(d, "cache")
                cold = _child(name, size, cache)
                warm = _child(name, size, cache)
            note = f"numpy fallback: {cold['fell'][:90]}" if cold["fell"] else ""
            print(f"{name:<11} {size:<6} {cold['first'] * 1e3:13.0f} ms "
                  f"{warm['first'] * 1e3:19.0f} ms {warm['import_numba'] * 1e3:10.0f} ms  "
                  f"{note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
