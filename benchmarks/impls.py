"""The gradient implementations that are checked and timed, behind one interface.

`build(kind, problem, args)` returns a zero-argument callable computing the gradient of
`problem.loss` at `args` w.r.t. `problem.wrt` (preparation such as compiling, jitting or
moving the data to the framework is done here, outside the timed call), and
`to_numpy(kind, result)` turns what it returns into a tuple of numpy arrays.

kinds: "hand" (the hand-written numpy gradient, the reference), "srcgrad" (the cached
generated gradient), "tape" (runtime's Tensor + backward), and the optional peers
"numba" (srcgrad's `backend="numba"`: the gradient compiled by numba; where numba could
not compile it, the row says so instead of timing the numpy fallback), "autograd" (HIPS
autograd), "jax" (jax.jit(jax.grad), float64) and "torch" (PyTorch eager, float64).
Peers are imported only when asked for; the project does not need them.
"""
from __future__ import annotations

import importlib
import importlib.util
import types

import numpy as np

CORE = ("hand", "srcgrad", "tape")
PEERS = ("autograd", "jax", "torch")
OPTIONAL = ("numba",)  # srcgrad's own, with an optional dependency
KINDS = CORE + OPTIONAL + PEERS
LABELS = {"hand": "hand-written", "srcgrad": "srcgrad", "tape": "tape (runtime)",
          "numba": "srcgrad numba",
          "autograd": "HIPS autograd", "jax": "JAX jit", "torch": "PyTorch eager"}
_PEER_MODULE = {"autograd": "autograd", "jax": "jax", "torch": "torch", "numba": "numba"}


def available(kind: str) -> bool:
    if kind in CORE:
        return True
    return importlib.util.find_spec(_PEER_MODULE[kind]) is not None


def version(kind: str) -> str:
    if kind == "hand":
        return np.__version__
    if kind in ("srcgrad", "tape"):
        from srcgrad import cache
        return cache.VERSION
    try:
        from importlib.metadata import version as v
        return v(_PEER_MODULE[kind])
    except Exception:
        return "?"


def with_numpy(fun, namespace):
    """`fun` with its global `np` bound to another numpy-like namespace (autograd.numpy,
    jax.numpy): the very same loss code, traced by a peer."""
    g = dict(fun.__globals__)
    g["np"] = namespace
    return types.FunctionType(fun.__code__, g, fun.__name__, fun.__defaults__,
                              fun.__closure__)


def build(kind: str, problem, args: tuple):
    """kind is one of KINDS, or "hand:LABEL" for one of the problem's HAND_VARIANTS."""
    if kind.startswith("hand:"):
        return _hand(problem, args, kind[len("hand:"):])
    return _BUILDERS[kind](problem, args)


def label(kind: str) -> str:
    if kind.startswith("hand:"):
        return f"hand-written ({kind[len('hand:'):]})"
    return LABELS[kind]


def to_numpy(kind: str, result) -> tuple:
    if kind == "torch":
        return tuple(r.detach().numpy() for r in result)
    return tuple(np.asarray(r) for r in result)


def _hand(problem, args, variant=""):
    f = problem.hand_variants[variant]
    return lambda: f(*args)


def _srcgrad(problem, args):
    import srcgrad

    g = srcgrad.grad(problem.loss, wrt=problem.wrt)
    g(*args)                        # compile (or load from the disk cache) before timing
    return lambda: g(*args)


def _numba(problem, args):
    import warnings

    import srcgrad

    g = srcgrad.grad(problem.loss, wrt=problem.wrt, backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        g(*args)                    # specialize and compile before timing
    fell = [str(w.message) for w in caught if "numba could not compile" in str(w.message)]
    if fell:
        raise RuntimeError(fell[0].split(". It runs")[0])
    return lambda: g(*args)


def _tape(problem, args):
    import runtime as rt

    loss, wrt = problem.loss, set(problem.wrt_index)
    n = len(args)

    def call():
        leaves = []
        targs = list(args)
        for i in range(n):
            if i in wrt:
                targs[i] = t = rt.tensor(args[i], requires_grad=True)
                leaves.append(t)
        loss(*targs).backward()
        return tuple(t.grad.data for t in leaves)

    return call


def _autograd(problem, args):
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(with_numpy(problem.loss, anp), problem.wrt_index)
    return lambda: g(*args)


def jax_module():
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def _jax(problem, args):
    jax = jax_module()
    import jax.numpy as jnp

    g = jax.jit(jax.grad(with_numpy(problem.loss, jnp), argnums=problem.wrt_index))
    jargs = tuple(jax.device_put(a) for a in args)
    jax.block_until_ready(g(*jargs))   # trace and compile before timing
    block = jax.block_until_ready
    return lambda: block(g(*jargs))


def _torch(problem, args):
    import torch

    loss = problem.module.make_torch_loss(torch)
    wrt = set(problem.wrt_index)
    targs = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    n = len(args)

    def call():
        leaves = []
        cargs = list(targs)
        for i in range(n):
            if i in wrt:   # a fresh leaf each call, as the tape's runtime.tensor (a copy)
                cargs[i] = t = torch.tensor(args[i], requires_grad=True)
                leaves.append(t)
        loss(*cargs).backward()
        return tuple(t.grad for t in leaves)

    return call


_BUILDERS = {"hand": _hand, "srcgrad": _srcgrad, "tape": _tape, "numba": _numba,
             "autograd": _autograd,
             "jax": _jax, "torch": _torch}


def max_error(got: tuple, ref: tuple) -> float:
    """The largest |got - ref| / (1e-6 |ref| + 1e-8 max|ref| + 1e-300) over all gradients:
    <= 1 means allclose with rtol=1e-6 and atol=1e-8 of the gradient's scale."""
    if len(got) != len(ref):
        return float("inf")
    worst = 0.0
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        if g.shape != r.shape:
            return float("inf")
        if r.size == 0:
            continue
        scale = float(np.max(np.abs(r)))
        err = np.abs(g - r) / (1e-6 * np.abs(r) + 1e-8 * scale + 1e-300)
        e = float(np.max(err))
        if not np.isfinite(e):
            return float("inf")
        worst = max(worst, e)
    return worst
