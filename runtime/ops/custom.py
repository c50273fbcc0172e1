"""User-defined primitives: a function with hand-written derivative rules.

    @srcgrad.primitive                  # the same object as runtime.ops.custom.primitive
    def log1pexp(x):
        return np.logaddexp(0.0, x)

    @log1pexp.defvjp
    def _(g, out, x):
        return g / (1 + np.exp(-x))

The op runs its function on arrays; the tape engine and the compiler treat it like any
primitive of the set (the compiler emits a call to it and stages its rule instead of
differentiating its body). Rules are written with ordinary numpy spellings and Python
operators, which work on arrays, Tensors and the compiler's values alike.
- `defvjp(rule)`: `rule(g, out, *inputs)` returns the cotangent of the single input, or a
  tuple with one entry per input (None for "no gradient").
- `defjvp(rule)`: `rule(tangents, out, *inputs)` returns the output tangent; `tangents`
  has one entry per input, None where an input has no tangent.
"""
from __future__ import annotations

import functools
import inspect

from .core import Primitive, call

__all__ = ["CustomPrimitive", "primitive", "REGISTRY"]

#: name -> op, so generated code loaded from a cache can find the op it calls
REGISTRY: dict = {}


class CustomPrimitive(Primitive):
    """A user's op; see the module docstring."""

    def __init__(self, fun):
        n = len([p for p in inspect.signature(fun).parameters.values()
                 if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)])
        super().__init__(fun.__name__, fun, vjps=(), broadcasts=True, reads_out=True,
                         spell=call(fun.__name__))
        self.rules = {}  # "vjp"/"jvp" -> the user's rule (the disk cache key reads them)
        self.custom = True
        self.fun = fun
        self.arity = n
        functools.update_wrapper(self, fun, updated=())
        REGISTRY[fun.__name__] = self

    def defvjp(self, rule):
        """Attach the reverse-mode rule `(g, out, *inputs) -> cotangent(s)`."""

        def per_input(i):
            def vjp(g, out, *args, **params):
                r = rule(g, out, *args, **params)
                if isinstance(r, tuple):
                    if len(r) != len(args):
                        raise TypeError(f"the VJP rule of {self.name!r} returned {len(r)} "
                                        f"cotangents for {len(args)} inputs")
                    return r[i]
                if len(args) != 1:
                    raise TypeError(f"the VJP rule of {self.name!r} must return a tuple of "
                                    f"{len(args)} cotangents")
                return r

            vjp.__name__ = f"vjp_{self.name}_{i}"
            return vjp

        self.vjps = tuple(per_input(i) for i in range(max(self.arity, 1)))
        self.rules["vjp"] = rule
        return rule

    def defjvp(self, rule):
        """Attach the forward-mode rule `(tangents, out, *inputs) -> output tangent`."""
        self.jvp = rule
        self.rules["jvp"] = rule
        return rule

    def __repr__(self):
        return f"<srcgrad.primitive {self.name}>"


def primitive(fun) -> CustomPrimitive:
    """Turn `fun` (written with numpy) into an op with user-supplied derivative rules."""
    return CustomPrimitive(fun)
