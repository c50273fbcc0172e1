"""runtime: the op set and a define-by-run tape engine on numpy (or cupy) arrays.

    >>> import runtime as rt
    >>> x = rt.tensor(2.0, requires_grad=True)
    >>> y = 3 * x ** 2 + 2 * x + 1
    >>> y.backward()
    >>> float(x.grad)
    14.0

Functions on Tensors under PyTorch's names (`rt.exp`, `rt.sum(t, dim=0)`, `rt.zeros(2, 3)`,
`rt.softmax(t, dim=-1)`...) come from `runtime.functional`; optimizers from `runtime.optim`.
scipy's functions are `runtime.special` (`rt.special.gammaln`, `rt.special.logsumexp`...),
`runtime.stats` (`rt.stats.norm.logpdf(x, loc, scale)`, `rt.stats.norm(loc, scale).logpdf(x)`)
and `runtime.linalg` (`solve_triangular`, `cho_factor`, `cho_solve` beside numpy.linalg's);
`import runtime` does not import scipy.
"""
import sys as _sys

from . import ops  # noqa: F401
from .check import gradcheck, numerical_grad  # noqa: F401
from .mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .tensor import Tensor, tensor  # noqa: F401
from .viz import to_dot  # noqa: F401
from . import functional as _functional
from . import optim  # noqa: F401

# runtime.exp, runtime.sum(t, dim=0), runtime.zeros(2, 3), runtime.softmax(t, dim)...: made
# from the op set's tables (runtime/functional.py); not in __all__, since several shadow
# builtins (sum, abs, max, min, round)
_functional.install(globals())
for _part in ("linalg", "special", "stats"):  # `from runtime.special import gammaln` too
    _sys.modules.setdefault(f"{__name__}.{_part}", globals()[_part])

__all__ = ["Tensor", "tensor", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "gradcheck", "numerical_grad", "to_dot", "ops", "optim",
           "functional"]
