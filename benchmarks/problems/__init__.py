"""The benchmark problems: one module each, so that `inspect.getsource` finds every loss.

A problem module defines
- `loss(...)`: the plain numpy loss (what srcgrad compiles, what the tape runs on Tensors,
  and, with `np` rebound, what HIPS autograd and JAX differentiate),
- `grad_hand(...)`: the hand-written numpy gradient, the reference every other gradient
  is checked against and timed against (a tuple, in the order of `WRT`),
- optionally `HAND_VARIANTS`: {label: function}, other hand-written gradients (written
  another careful way). All are timed; the fastest in each run is the reference.
- `make_torch_loss(torch)`: the same loss spelled in PyTorch,
- `WRT`: the parameter names the gradient is taken for,
- `SIZES`: keyword parameters of `make_inputs` for "tiny" (tests), "small" and "large",
- `make_inputs(rng, **params)` and `describe(**params)`.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType

import numpy as np

NAMES = ("poly", "rosenbrock", "mlp", "logreg", "rnn", "chain")
SIZE_NAMES = ("small", "large")


@dataclass(frozen=True)
class Problem:
    name: str
    module: ModuleType

    @property
    def loss(self):
        return self.module.loss

    @property
    def grad_hand(self):
        return self.module.grad_hand

    @property
    def hand_variants(self) -> dict:
        """{label: hand-written gradient}; the label of `grad_hand` is ""."""
        return {"": self.module.grad_hand, **getattr(self.module, "HAND_VARIANTS", {})}

    @property
    def wrt(self) -> tuple:
        return tuple(self.module.WRT)

    @property
    def wrt_index(self) -> tuple:
        params = list(inspect.signature(self.loss).parameters)
        return tuple(params.index(w) for w in self.wrt)

    @property
    def sizes(self) -> dict:
        return self.module.SIZES

    def describe(self, size: str) -> str:
        return self.module.describe(**self.sizes[size])

    def inputs(self, size: str, seed: int = 0) -> tuple:
        """The loss's positional arguments (float64 arrays) at a named size."""
        rng = np.random.default_rng(seed)
        return tuple(self.module.make_inputs(rng, **self.sizes[size]))


def get(name: str) -> Problem:
    if name not in NAMES:
        raise KeyError(f"unknown problem {name!r} (known: {', '.join(NAMES)})")
    return Problem(name, importlib.import_module(f"{__name__}.{name}"))


def all_problems(names=None) -> list:
    return [get(n) for n in (names or NAMES)]
