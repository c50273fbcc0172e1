"""Grad mode: `no_grad()` and `enable_grad()`, each a context manager and a decorator."""
from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled"]

_state = threading.local()


def is_grad_enabled() -> bool:
    """Whether operations on Tensors are recorded on the tape (per thread)."""
    return getattr(_state, "enabled", True)


class set_grad_enabled:
    """Turn recording on or off inside a `with` block (or for a decorated function)."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = []

    def __enter__(self):
        self._prev.append(is_grad_enabled())
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _state.enabled = self._prev.pop()
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(set_grad_enabled):
    """Results computed inside do not require grad: `with no_grad(): ...` or `@no_grad()`."""

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Record again inside a `no_grad` region: `with enable_grad(): ...`."""

    def __init__(self):
        super().__init__(True)
