"""The op set: one table of primitives shared by the tape engine and the compiler.

Groups: `elementwise`, `reduce`, `shapes`, `linalg`, `special` (scipy.special's functions;
scipy itself is imported only when one runs). `numpy_api` maps numpy's spellings
(functions and array methods) onto primitives, and scipy's (`scipy_api`) once the program
has imported scipy; `helpers` holds the array-level functions
that generated code imports for ops numpy has no single function for.
"""
from .core import PRIMITIVES, Primitive, apply_jvp, apply_vjp, defop  # noqa: F401
from . import shapes  # noqa: F401  (before reduce and linalg, which use it)
from . import elementwise, linalg, reduce, special  # noqa: F401
from . import numpy_api  # noqa: F401
from . import jvps  # noqa: F401  (after every group: it reads the whole table)
from . import cuda  # noqa: F401  (the same: each elementwise op's CUDA spelling)
from .custom import CustomPrimitive, primitive  # noqa: F401
from .elementwise import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
