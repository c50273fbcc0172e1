"""How much of numpy's API the op set answers to.

    PYTHONPATH=$PWD python -m benchmarks.numpy_coverage [--list]

Counts the numpy callables mapped in `runtime.ops.numpy_api.NUMPY` (functions and ufuncs of
`numpy`, `numpy.linalg`, reached under at least one public name), and the array methods in
`METHODS`. `--list` prints the names.
"""
from __future__ import annotations

import sys

import numpy

from runtime.ops.numpy_api import METHODS, NUMPY


def numpy_names() -> dict:
    """Public name (np.x or np.linalg.x) -> object, for every callable mapped in NUMPY."""
    found = {}
    for prefix, mod in (("np", numpy), ("np.linalg", numpy.linalg)):
        for name in dir(mod):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type):
                try:
                    if obj in NUMPY:
                        found[f"{prefix}.{name}"] = obj
                except TypeError:  # unhashable
                    pass
    return found


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
