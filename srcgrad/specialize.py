"""Variants specialized to a call's shapes and dtypes, beside the shape-polymorphic code.

A gradient called again and again with arrays of the same shapes and dtypes (a training
loop, an optimizer) gets, after `HOT_CALLS` such calls, a second generated module
compiled for that signature: every input's shape and dtype is known at compile time
(`lower(spec=...)`), so staging knows each value's shape from the primitives' shape rules
(`staging.known`), `x.shape` and `len(x)` are numbers, and the optimizer drops every
`sum_to`, `broadcast_to` and `cast_like` that changes nothing and folds what it computed
from shapes. The variant starts with a guard: a call it does not fit (another shape,
dtype or type) goes to the shape-polymorphic function, through `Variants.miss`.

At most `MAX_VARIANTS` variants per function; after `GIVE_UP` calls whose signature got
no variant, the polymorphic function is called directly and signatures are no longer
looked at (a function called with ever new shapes pays nothing for this).

A signature (`signature`) is one entry per graph input: `(shape, dtype)` for a numpy
array (exactly `numpy.ndarray`, not a subclass), the type for a Python float, int or
bool, `type(None)` for None. Any other argument (a list, an object, a dask array) gives
None: that call is not specialized. Calls on cupy arrays get variants of their own, the
same with `cupy.ndarray` for the array type, fused into kernels (`api._gpu_variant`). The guard the generated code tests
(`codegen._spec_guard`) is the same test, written out.
"""
from __future__ import annotations

import threading

import numpy

__all__ = ["HOT_CALLS", "MAX_VARIANTS", "GIVE_UP", "signature", "describe", "Variants"]

#: calls with one signature before its variant is compiled
HOT_CALLS = 3
#: variants per function (per structure of arguments)
MAX_VARIANTS = 4
#: calls that got no variant after which signatures are no longer looked at
GIVE_UP = 64

_SCALARS = (float, int, bool, type(None))


def signature(values, array_type=numpy.ndarray) -> "tuple | None":
    """What a variant for these argument values is specialized to, or None when one of
    them is not an array (of `array_type`: numpy's, or cupy's for the variants of calls
    on cupy arrays), a Python number or None."""
    sig = []
    for a in values:
        t = type(a)
        if t is array_type:
            if a.dtype.kind not in "fiub" or a.dtype.hasobject:
                return None
            sig.append((a.shape, a.dtype))
        elif t in _SCALARS:
            sig.append(t)
        else:
            return None
    return tuple(sig)


def describe(sig, names) -> str:
    """A signature as text, for the cache key and the generated module's header."""
    parts = []
    for name, what in zip(names, sig):
        if isinstance(what, tuple):
            dtype = what[1].name if what[1].isnative else what[1].str  # ('>f8': swapped)
            parts.append(f"{name}: {dtype} {'x'.join(map(str, what[0])) or '0-d'}")
        else:
            parts.append(f"{name}: {what.__name__}")
    return ", ".join(parts)


class Variants:
    """The variants of one compiled function and the calls counted towards them.

    `build(sig)` compiles the variant for a signature and returns it bound (its guard's
    fallback bound to `miss`); `general` is the shape-polymorphic function; `bind(args,
    kwargs)` gives the values a signature is taken of; `settle(f)` is told what calls
    should run first from now on (the newest variant; `general` once they are given up);
    `stored(sig)`, when given, says whether the disk cache holds the variant for `sig`:
    a signature's first call then loads it (a process that runs a training loop again
    runs the variant an earlier run built from its first call)."""

    def __init__(self, general, build, bind, settle, hot: int = HOT_CALLS, stored=None):
        self.general = general
        self.hot = hot  # calls with one signature before its variant is built
        self._build = build
        self._stored = stored  # sig -> whether its variant is in the disk cache
        self._bind = bind
        self._settle = settle
        self.by_sig: dict = {}
        self.counts: dict = {}
        self.unspecialized = 0
        self._lock = threading.Lock()
        self._within = threading.local()  # a variant called by `miss` is running

    @property
    def done(self) -> bool:
        return len(self.by_sig) >= MAX_VARIANTS or self.unspecialized >= GIVE_UP

    def add(self, sig):
        """The variant for `sig`, built now if there is none yet and room for one."""
        variant = self.by_sig.get(sig)
        if variant is None and len(self.by_sig) < MAX_VARIANTS:
            variant = self.by_sig[sig] = self._build(sig)
            self._settle(variant)
        return variant

    def miss(self, *args, **kwargs):
        """A call that no variant's guard let through: the variant for its signature if
        there is one (built now when the signature has been seen `hot` times),
        else the shape-polymorphic function."""
        if self.done or getattr(self._within, "on", False):
            # (a variant whose guard sent back the very call `miss` gave it: never again)
            return self.general(*args, **kwargs)
        sig = signature(self._bind(args, kwargs))
        variant = self.by_sig.get(sig) if sig is not None else None
        if variant is None and sig is not None:
            with self._lock:
                n = self.counts[sig] = self.counts.get(sig, 0) + 1
                # (a variant another process built and stored is loaded at its first call)
                if n >= self.hot or (n == 1 and self._stored is not None and
                                     self._stored(sig)):
                    variant = self.add(sig)
        if variant is None:
            self.unspecialized += 1
            if self.unspecialized >= GIVE_UP and not self.by_sig:
                self._settle(self.general)
            return self.general(*args, **kwargs)
        self._within.on = True
        try:
            return variant(*args, **kwargs)
        finally:
            self._within.on = False
