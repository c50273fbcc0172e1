"""Array-level functions that generated code imports by name.

Generated gradients call numpy (or cupy) directly where numpy has the function; the
ops numpy lacks (`sum_to`, `scatter_add`, `relu`, `logsumexp`, the matmul cotangents...)
are imported from here. Each is the primitive's forward implementation: it picks numpy or
cupy from its arguments, so the same generated source runs on both.
"""
from .core import PRIMITIVES

#: helper name -> function, for every primitive spelled as a bare call (no `np.` prefix)
HELPERS = {}
for _p in PRIMITIVES.values():
    HELPERS[_p.name] = _p.impl
globals().update(HELPERS)
__all__ = sorted(HELPERS)
