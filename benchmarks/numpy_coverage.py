"""How much of numpy's API the op set answers to.

    PYTHONPATH=$PWD python -m benchmarks.numpy_coverage [--list]

Counts the numpy callables mapped in `runtime.ops.numpy_api.NUMPY` (functions and ufuncs of
`numpy`, `numpy.linalg`, reached under at least one public name), the array methods in
`METHODS`, and, where scipy is installed, the scipy functions mapped (scipy.special,
scipy.linalg, the scipy.stats distributions' methods). `--list` prints the names.
"""
from __future__ import annotations

import sys

from runtime.ops.numpy_api import METHODS, public_names


def numpy_names() -> dict:
    return {n: o for n, o in public_names().items() if not n.startswith("scipy.")}


def scipy_names() -> dict:
    return {n: o for n, o in public_names(scipy=True).items() if n.startswith("scipy.")}


def main(argv):
    names = numpy_names()
    distinct = {id(o) for o in names.values()}
    print(f"numpy callables mapped: {len(distinct)} ({len(names)} public names)")
    print(f"array methods mapped: {len(METHODS)}")
    sp = scipy_names()
    print(f"scipy functions mapped: {len(sp)}" if sp else "scipy functions mapped: "
          "scipy is not installed")
    if "--list" in argv:
        for n in sorted(names) + sorted(sp):
            print(" ", n)
        print("  methods:", " ".join(sorted(METHODS)))


if __name__ == "__main__":
    main(sys.argv[1:])
