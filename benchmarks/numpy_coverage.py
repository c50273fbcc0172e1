"""How much of numpy's API the op set answers to.

    PYTHONPATH=$PWD python -m benchmarks.numpy_coverage [--list]

Counts the numpy callables mapped in `runtime.ops.numpy_api.NUMPY` (functions and ufuncs of
`numpy`, `numpy.linalg`, reached under at least one public name), and the array methods in
`METHODS`. `--list` prints the names.
"""
from __future__ import annotations

import sys

from runtime.ops.numpy_api import METHODS, public_names


def numpy_names() -> dict:
    return public_names()


def main(argv):
    names = numpy_names()
    distinct = {id(o) for o in names.values()}
    print(f"numpy callables mapped: {len(distinct)} ({len(names)} public names)")
    print(f"array methods mapped: {len(METHODS)}")
    if "--list" in argv:
        for n in sorted(names):
            print(" ", n)
        print("  methods:", " ".join(sorted(METHODS)))


if __name__ == "__main__":
    main(sys.argv[1:])
