"""srcgrad: the gradient of a numpy function, as Python source you can read.

    >>> import numpy as np, srcgrad
    >>> @srcgrad.grad
    ... def f(x):
    ...     return np.sum(np.sin(x) ** 2)
    >>> f(np.array([0.5]))          # doctest: +SKIP
    array([0.84147098])
    >>> print(f.source)             # doctest: +SKIP

Pipeline (one module each): frontend (parse) -> lower (AST to IR, through the builder of
`staging`) -> reverse (adjoint IR) or forward (tangent IR) -> optimize -> codegen (Python
source) -> cache. `ir` holds the IR, its control-flow primitives and its checker. Derivative
rules and the facts the stages read about each op come from the op set in `runtime.ops`,
shared with the tape engine `runtime`.
"""
__version__ = "0.1.0"  # the one place it is written (pyproject.toml reads it from here)

from .api import (clear_cache, grad, hessian, hvp, jacobian, jvp, show,  # noqa: F401
                  value_and_grad, vjp)
from .api import (CompiledFunction, ForwardJacobianFunction, GradFunction,  # noqa: F401
                  HessianFunction, HVPFunction, JacobianFunction, JVPFunction,
                  NestedGradFunction, ValueAndGradFunction, VJPFunction, Wrt)
from .errors import (CacheWarning, RecursiveCallError, SourceChangedError,  # noqa: F401
                     SourceUnavailableError, SrcgradError, UnknownFunctionError,
                     UnsupportedSyntaxError, WrtError)

from runtime.ops import stop_gradient  # noqa: F401  (x with no gradient: the tape's detach)
from runtime.ops.custom import primitive  # noqa: F401

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian", "show",
           "primitive", "stop_gradient", "clear_cache", "SrcgradError",
           "UnsupportedSyntaxError", "UnknownFunctionError", "SourceUnavailableError",
           "SourceChangedError", "RecursiveCallError", "WrtError", "CacheWarning",
           # what the transformations return (for type annotations and isinstance)
           "CompiledFunction", "GradFunction", "ValueAndGradFunction", "VJPFunction",
           "JVPFunction", "HVPFunction", "HessianFunction", "JacobianFunction",
           "ForwardJacobianFunction", "NestedGradFunction", "Wrt"]
