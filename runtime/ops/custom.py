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

An op is not taken to be pure: the compiler calls it wherever the user's code does, also
on constant arguments. `@srcgrad.primitive(pure=True)` (or `op.pure = True`) lets it
evaluate such calls once at compile time and merge equal calls.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import re
import threading
import weakref
from typing import Any, Callable

from .core import RESERVED_NAMES, Primitive, call

__all__ = ["CustomPrimitive", "primitive", "REGISTRY", "live_ops"]

#: name -> op, for every live custom op. Each op has a name of its own: the user's function
#: name, or that name with a suffix (`scaled_2`) when another live op, an op of the set, or
#: a name that generated code uses already has it (two ops made by one factory share their
#: function's name). Generated code calls an op by that name, bound to the op itself.
REGISTRY: "weakref.WeakValueDictionary[str, CustomPrimitive]" = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()

# names generated code reads besides the op set's: its module's imports and builtins
_CODE_NAMES = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {
    "np", "ndarray", "as_float", "check_scalar", "pullback"}


def _register(op, base: str) -> str:
    """Give `op` a unique name derived from `base` and enter it in REGISTRY."""
    base = re.sub(r"\W", "_", base) or "op"
    if base[0].isdigit():
        base = "op_" + base
    with _registry_lock:
        name, k = base, 1
        while name in REGISTRY or name in RESERVED_NAMES or name in _CODE_NAMES:
            k += 1
            name = f"{base}_{k}"
        REGISTRY[name] = op
    return name


def live_ops() -> list:
    """Every live custom op (a snapshot: other threads may be making ops meanwhile)."""
    with _registry_lock:
        return list(REGISTRY.values())


class CustomPrimitive(Primitive):
    """A user's op; see the module docstring."""

    _reserves_name = False  # a unique name of its own instead (see REGISTRY)

    def __init__(self, fun: Callable[..., Any], pure: bool = False) -> None:
        n = len([p for p in inspect.signature(fun).parameters.values()
                 if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)])
        name = _register(self, fun.__name__)
        super().__init__(name, fun, vjps=(), broadcasts=True, reads_out=True,
                         spell=call(name), pure=pure)
        self.rules = {}  # "vjp"/"jvp" -> the user's rule (the disk cache key reads them)
        self.custom = True
        self.fun = fun
        self.arity = n
        functools.update_wrapper(self, fun, updated=())

    def defvjp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
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

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Attach the forward-mode rule `(tangents, out, *inputs) -> output tangent`."""
        self.jvp = rule
        self.rules["jvp"] = rule
        return rule

    def __repr__(self):
        return f"<srcgrad.primitive {self.name}>"


def primitive(fun: Callable[..., Any] | None = None, *, pure: bool = False
              ) -> CustomPrimitive | Callable[[Callable[..., Any]], CustomPrimitive]:
    """Turn `fun` (written with numpy) into an op with user-supplied derivative rules.

    `@primitive(pure=True)` declares that equal arguments always give equal results and
    that a call does nothing else: the compiler may then evaluate a call on constant
    arguments at compile time, and merge or drop calls. Without it every call in the
    user's code is a call at run time (an op may draw random numbers, say)."""
    if fun is None:
        return functools.partial(CustomPrimitive, pure=pure)
    return CustomPrimitive(fun, pure=pure)
