"""Functions on Tensors, `runtime.exp(t)`, `runtime.sum(t, dim=0)`, `runtime.zeros(2, 3)`:
the names a PyTorch user types first, made from the op set's tables rather than written one
by one.

- Every numpy function the op set maps (`runtime.ops.numpy_api.NUMPY`, listed by
  `public_names()`) is here under numpy's name (`np.linalg.*` under `runtime.linalg`),
  with numpy's signature and semantics; where it takes `axis=`/`keepdims=` it also takes
  PyTorch's `dim=`/`keepdim=`.
- Elementwise primitives with no numpy spelling (`relu`, `sigmoid`, `softplus`...) are here
  under their own names.
- PyTorch's spellings of the same ops (`cat`, `clamp`, `mul`, `div`...) are aliases; the
  few functions PyTorch defines differently from numpy are written below: creation from
  `*sizes` with `requires_grad=` (`zeros`, `ones`, `empty`, `randn`, `rand`...),
  `softmax(t, dim)` and `log_softmax(t, dim)`.
- scipy's functions the op set maps (runtime.ops.scipy_api's tables) are `runtime.special`,
  `runtime.stats` (`norm.logpdf(x, loc, scale)`, and frozen: `norm(loc, scale).logpdf(x)`)
  and `runtime.linalg` (solve_triangular, cho_factor, cho_solve), with scipy's signatures.

Each returns a Tensor (a result computed from arrays only is a Tensor that does not require
grad) and records on the tape like the op it calls. Shapes, sizes and other non-array
results come back as numpy gives them. Default dtypes are numpy's (float64), not PyTorch's.
"""
from __future__ import annotations

import functools
import inspect
import types

import numpy

from .backend import is_array
from .ops import PRIMITIVES
from .ops import numpy_api as _api
from .ops import reduce as _R
from .ops import elementwise as _E
from .tensor import Tensor

__all__ = ["FUNCTIONS", "LINALG", "SPECIAL", "STATS", "SCIPY_LINALG", "manual_seed",
           "TORCH_ALIASES", "Distribution", "FrozenDistribution"]


def _as_tensor(r):
    """A result as a Tensor; tuples (namedtuples too) of arrays element by element; other
    values (shapes, sizes, Python ints) as they are."""
    if isinstance(r, Tensor):
        return r
    if is_array(r) or isinstance(r, numpy.generic):
        return Tensor(r)
    if isinstance(r, (tuple, list)) and r and any(
            isinstance(v, (Tensor, numpy.generic)) or is_array(v) for v in r):
        items = [_as_tensor(v) for v in r]
        if isinstance(r, list):
            return items
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    return r


def _keywords(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set()
    return set(params)


#: PyTorch's keyword -> numpy's, translated where the numpy function takes the latter
_TORCH_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}


def _functional(name: str, fn, origin: str, module: str = "runtime"):
    """`fn` (an adapter with numpy's signature) as a function on Tensors named `name`, in
    the namespace `module`."""
    accepted = _keywords(fn)
    renames = {t: n for t, n in _TORCH_KEYWORDS.items() if n in accepted and t not in accepted}

    @functools.wraps(fn)
    def f(*args, **kwargs):
        for torch_kw, numpy_kw in renames.items():
            if torch_kw in kwargs:
                if numpy_kw in kwargs:
                    raise TypeError(f"{module}.{name}() got both {torch_kw}= and "
                                    f"{numpy_kw}=")
                kwargs[numpy_kw] = kwargs.pop(torch_kw)
        return _as_tensor(fn(*args, **kwargs))

    f.__name__ = name
    f.__qualname__ = f"{module}.{name}"[len("runtime."):] if module != "runtime" else name
    f.__module__ = module
    extra = (" Takes PyTorch's " + " and ".join(f"{t}=" for t in renames) + " too."
             if renames else "")
    f.__doc__ = (f"{origin} on Tensors and arrays, recorded on the tape; returns a Tensor."
                 f"{extra}")
    f.__wrapped__ = fn
    return f


# ---- generated from the tables -----------------------------------------------------------------

FUNCTIONS: dict = {}
LINALG: dict = {}

for _public, _obj in sorted(_api.public_names(scipy=False).items()):  # numpy's own
    _prefix, _, _short = _public.rpartition(".")
    _table = FUNCTIONS if _prefix == "np" else LINALG
    _table[_short] = _functional(_short, _api.NUMPY[_obj], f"numpy{_public[2:]}")

for _name, _prim in sorted(PRIMITIVES.items()):
    # elementwise ops of the set that numpy has no function for (relu, sigmoid, softplus)
    if _prim.elementwise and not _prim.custom and _name not in FUNCTIONS:
        FUNCTIONS[_name] = _functional(_name, _prim, f"the op `{_name}`")

#: PyTorch's name -> the numpy name it is an alias of (same semantics)
TORCH_ALIASES = {
    "cat": "concatenate", "concat": "concatenate", "clamp": "clip", "add": "add",
    "sub": "subtract", "mul": "multiply", "div": "divide", "neg": "negative",
    "pow": "power", "abs": "absolute", "arccos": "arccos", "acos": "arccos",
    "asin": "arcsin", "atan": "arctan", "atan2": "arctan2", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "amax": "max", "amin": "min", "t": "transpose",
}
for _alias, _target in TORCH_ALIASES.items():
    if _alias not in FUNCTIONS and _target in FUNCTIONS:
        _fn = FUNCTIONS[_target]
        FUNCTIONS[_alias] = _functional(_alias, _fn.__wrapped__,
                                        f"`{_target}` (PyTorch's name `{_alias}`)")


# ---- scipy's functions: runtime.special, runtime.stats, runtime.linalg ------------------------
# Generated from runtime.ops.scipy_api's tables, which need no scipy: scipy is imported by the
# primitives the first time one runs (gammaln, erf, solve_triangular...), never by
# `import runtime`. scipy's signatures; the names are torch.special's where it has them.

SPECIAL: dict = {}
STATS: dict = {}
SCIPY_LINALG: dict = {}


class Distribution:
    """scipy.stats.`name` on Tensors: its mapped methods with scipy's signatures
    (`runtime.stats.norm.logpdf(x, loc, scale)`), and frozen with its parameters
    (`runtime.stats.norm(loc, scale).logpdf(x)`)."""

    def __init__(self, name: str, methods: dict):
        self.name = name
        self.methods = tuple(methods)
        for method, fn in methods.items():
            setattr(self, method, _functional(method, fn, f"scipy.stats.{name}.{method}",
                                              f"runtime.stats.{name}"))

    def __call__(self, *args, **kwds):
        return FrozenDistribution(self, args, kwds)

    def __repr__(self):
        return f"<runtime.stats.{self.name}: {', '.join(self.methods)}>"


class FrozenDistribution:
    """`runtime.stats.<dist>(*args, **kwds)`: each method takes x and passes the frozen
    parameters after it, as scipy's frozen distributions do."""

    def __init__(self, dist: Distribution, args, kwds):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    def __getattr__(self, method):
        if method.startswith("_") or method not in self.dist.methods:
            raise AttributeError(f"runtime.stats.{self.dist.name}(...) has no method "
                                 f"{method!r} (it has {', '.join(self.dist.methods)})")
        fn = getattr(self.dist, method)

        def frozen(x):
            return fn(x, *self.args, **self.kwds)

        frozen.__name__ = method
        frozen.__doc__ = f"{fn.__doc__} Parameters frozen: x only."
        return frozen

    def __repr__(self):
        return f"<runtime.stats.{self.dist.name}(...), frozen>"


def _scipy_functions():
    from .ops import scipy_api

    for name, fn in sorted(scipy_api.special_adapters().items()):
        SPECIAL[name] = _functional(name, fn, f"scipy.special.{name}", "runtime.special")
    for dist in sorted({d for d, _ in scipy_api.STATS}):
        STATS[dist] = Distribution(dist, {m: scipy_api.STATS[(dist, m)]
                                          for m in scipy_api.stats_methods(dist)})
    for name, fn in sorted(scipy_api.LINALG.items()):
        if name not in LINALG:  # cholesky stays numpy's (lower); scipy's is upper by default
            SCIPY_LINALG[name] = _functional(name, fn, f"scipy.linalg.{name}",
                                             "runtime.linalg")


_scipy_functions()


# ---- what PyTorch defines differently ----------------------------------------------------------

_rng = numpy.random.default_rng()


def manual_seed(seed: int):
    """Seed the generator that `randn`, `rand` and `randint` draw from; returns it."""
    global _rng
    _rng = numpy.random.default_rng(seed)
    return _rng


def _sizes(size, kw, name):
    """PyTorch's `*size` (ints, or one tuple or list), or numpy's `shape=`/PyTorch's `size=`."""
    given = [k for k in ("size", "shape") if k in kw]
    if given:
        if size:
            raise TypeError(f"runtime.{name}() got sizes both positionally and as "
                            f"{given[0]}=")
        size = (kw.pop(given[0]),)
    if kw:
        raise TypeError(f"runtime.{name}() got unexpected keyword arguments {sorted(kw)}")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    elif len(size) == 1 and hasattr(size[0], "__index__"):
        size = (size[0],)
    return tuple(int(s) for s in size)


def _leaf(r, requires_grad):
    t = _as_tensor(r)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _creation_from_sizes(name):
    adapter = _api.NUMPY[getattr(numpy, name)]

    def create(*size, dtype=None, requires_grad=False, **kw):
        shape = _sizes(size, kw, name)
        return _leaf(adapter(shape, dtype=float if dtype is None else dtype), requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__module__ = "runtime"
    create.__doc__ = (f"A new leaf Tensor, numpy.{name} of the shape `*size` (`{name}(2, 3)` "
                      f"or `{name}((2, 3))`), float64 unless `dtype=`; `requires_grad=` as "
                      "in PyTorch.")
    return create


def _creation_leaf(name):
    fn = FUNCTIONS[name].__wrapped__

    @functools.wraps(fn)
    def create(*args, requires_grad=False, **kw):
        return _leaf(fn(*args, **kw), requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__module__ = "runtime"
    create.__doc__ = (f"numpy.{name} as a new leaf Tensor (it carries no gradient of its "
                      "arguments); `requires_grad=` as in PyTorch.")
    return create


for _name in ("zeros", "ones", "empty"):
    FUNCTIONS[_name] = _creation_from_sizes(_name)
for _name in ("zeros_like", "ones_like", "empty_like", "full_like", "full", "eye",
              "identity", "arange", "linspace"):
    if _name in FUNCTIONS:
        FUNCTIONS[_name] = _creation_leaf(_name)


def randn(*size, dtype=None, requires_grad=False, generator=None, **kw):
    """Standard normal samples of the shape `*size`, a new leaf Tensor (float64 unless
    `dtype=`). Draws from `generator` (a numpy Generator) or the one `manual_seed` seeds."""
    shape = _sizes(size, kw, "randn")
    data = (generator or _rng).standard_normal(shape)
    return _leaf(data if dtype is None else data.astype(dtype), requires_grad)


def rand(*size, dtype=None, requires_grad=False, generator=None, **kw):
    """Uniform samples on [0, 1) of the shape `*size`, a new leaf Tensor (float64 unless
    `dtype=`). Draws from `generator` (a numpy Generator) or the one `manual_seed` seeds."""
    shape = _sizes(size, kw, "rand")
    data = (generator or _rng).random(shape)
    return _leaf(data if dtype is None else data.astype(dtype), requires_grad)


def randint(low, high=None, size=(), *, generator=None):
    """Integers drawn uniformly from [low, high) (from [0, low) when `high` is None)."""
    if high is None:
        low, high = 0, low
    return Tensor((generator or _rng).integers(low, high, size=_sizes((size,), {}, "randint")))


def log_softmax(input, dim):
    """log(softmax(input, dim)), computed as `input - logsumexp(input, dim)` (stable)."""
    return _as_tensor(_E.subtract(input, _R.logsumexp(input, axis=dim, keepdims=True)))


def softmax(input, dim):
    """exp(input) / sum(exp(input), dim), computed as exp(log_softmax(input, dim))."""
    return _as_tensor(_E.exp(log_softmax(input, dim)))


for _fn in (randn, rand, randint, log_softmax, softmax, manual_seed):
    _fn.__module__ = "runtime"
    FUNCTIONS[_fn.__name__] = _fn


class _Joiner:
    """`runtime.r_[a, b]` / `runtime.c_[a, b]`: numpy's index tricks on Tensors (numpy's own
    turn their items into arrays, which a Tensor on the tape refuses). Items are arrays and
    numbers; slices and string directives are not supported."""

    def __init__(self, join, name):
        self._join, self._name = join, name

    def __getitem__(self, items):
        items = items if isinstance(items, tuple) else (items,)
        if any(isinstance(i, (slice, str)) for i in items):
            raise TypeError(f"runtime.{self._name}[...] joins arrays and numbers; slices and "
                            "string directives are not supported")
        return _as_tensor(self._join(items))

    def __repr__(self):
        return f"runtime.{self._name}"


FUNCTIONS["r_"] = _Joiner(_api.r_items, "r_")
FUNCTIONS["c_"] = _Joiner(_api.c_items, "c_")


def install(namespace: dict) -> list:
    """Put the functions into `namespace` (the runtime package's), leaving names it already
    has alone; returns the names added. `runtime.linalg` holds the np.linalg ones."""
    added = []
    for name, fn in FUNCTIONS.items():
        if name not in namespace:
            namespace[name] = fn
            added.append(name)
    docs = {"linalg": "numpy.linalg's functions on Tensors, and scipy.linalg's "
                      "solve_triangular, cho_factor, cho_solve (see runtime.functional).",
            "special": "scipy.special's functions on Tensors (see runtime.functional).",
            "stats": "scipy.stats' distributions on Tensors: runtime.stats.norm.logpdf(x, "
                     "loc, scale), runtime.stats.norm(loc, scale).logpdf(x) (see "
                     "runtime.functional)."}
    for part, tables in (("linalg", (LINALG, SCIPY_LINALG)), ("special", (SPECIAL,)),
                         ("stats", (STATS,))):
        if part in namespace:
            continue
        mod = types.ModuleType(f"runtime.{part}", docs[part])
        for table in tables:
            for name, fn in table.items():
                setattr(mod, name, fn)
        mod.__all__ = sorted(n for t in tables for n in t)
        namespace[part] = mod
        added.append(part)
    return added
