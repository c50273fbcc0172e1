"""Checking a compiled gradient three ways.

`check_grad(fn, args, wrt)` runs
- srcgrad: `srcgrad.grad(fn, wrt=...)(*args)`,
- the tape: the same unmodified `fn` on `runtime.Tensor`s (numpy dispatch records a tape),
  then `.backward()`,
- float64 central finite differences of `fn` on plain arrays,
and asserts that srcgrad agrees with the tape (tight) and with finite differences (looser).
It returns the compiled gradients so callers can check more (dtypes, exact values).
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

import runtime as rt
import srcgrad

TAPE_RTOL, TAPE_ATOL = 1e-6, 1e-9
FD_EPS = 1e-6
FD_RTOL, FD_ATOL = 1e-4, 1e-6


def _as_tuple(wrt):
    return tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)


def wrt_indices(fn, wrt):
    """Parameter indices of `wrt` (ints or names) for `fn`."""
    import inspect

    names = list(inspect.signature(fn).parameters)
    return [w if isinstance(w, int) else names.index(w) for w in _as_tuple(wrt)]


def _scalar(v) -> float:
    v = v.data if isinstance(v, rt.Tensor) else v
    a = np.asarray(v, dtype=np.float64)
    assert a.shape == (), f"the function's output is not a scalar: shape {a.shape}"
    return float(a)


def finite_differences(fn, args, index, eps=FD_EPS, kwargs=None):
    """Central differences of the scalar `fn(*args)` w.r.t. `args[index]`, in float64."""
    kwargs = kwargs or {}
    args = list(args)
    x0 = args[index]
    scalar_input = not isinstance(x0, np.ndarray)
    x = np.array(x0, dtype=np.float64, order="C")  # reshape(-1) below is then a view
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        vals = []
        for step in (eps, -eps):
            flat[k] = orig + step
            args[index] = float(x) if scalar_input else x.copy()
            vals.append(_scalar(fn(*args, **kwargs)))
        flat[k] = orig
        gflat[k] = (vals[0] - vals[1]) / (2 * eps)
    return grad


def tape_grads(fn, args, indices, kwargs=None):
    """The tape engine's gradients of the unmodified `fn` w.r.t. `args[i]`, i in indices."""
    kwargs = kwargs or {}
    targs = list(args)
    leaves = {}
    for i in indices:
        leaves[i] = rt.tensor(np.asarray(args[i]), requires_grad=True)
        targs[i] = leaves[i]
    out = fn(*targs, **kwargs)
    if isinstance(out, rt.Tensor) and out.requires_grad:
        out.backward()
    # else: the output does not depend on the inputs, every gradient is zero
    grads = []
    for i in indices:
        g = leaves[i].grad
        grads.append(np.zeros_like(np.asarray(args[i], dtype=float)) if g is None
                     else np.asarray(g.data))
    return grads


def assert_close(actual, expected, rtol, atol, what):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, \
        f"{what}: shape {actual.shape} != expected {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def check_grad(fn, args, wrt=0, *, tape=True, fd=True, kwargs=None, fd_rtol=FD_RTOL,
               fd_atol=FD_ATOL, tape_rtol=TAPE_RTOL, tape_atol=TAPE_ATOL, compiled=None):
    """srcgrad's gradient of `fn` at `args` against the tape and finite differences.

    `tape=False` for functions the tape cannot run (math.* on scalars, float() of a
    0-d value...). Returns the compiled gradients as a list (one per wrt entry).
    """
    kwargs = kwargs or {}
    indices = wrt_indices(fn, wrt)
    g = compiled if compiled is not None else srcgrad.grad(fn, wrt=wrt)
    got = g(*args, **kwargs)
    got = list(got) if isinstance(wrt, (tuple, list)) else [got]
    assert len(got) == len(indices)
    for i, gi in zip(indices, got):
        shape = np.shape(args[i])
        assert np.shape(gi) == shape, f"grad of argument {i}: shape {np.shape(gi)} != {shape}"
    if tape:
        expected = tape_grads(fn, args, indices, kwargs)
        for i, gi, ti in zip(indices, got, expected):
            assert_close(gi, ti, tape_rtol, tape_atol, f"srcgrad vs tape, argument {i}")
    if fd:
        for i, gi in zip(indices, got):
            num = finite_differences(fn, args, i, kwargs=kwargs)
            assert_close(gi, num, fd_rtol, fd_atol, f"srcgrad vs finite differences, "
                         f"argument {i}")
    check_specialized(g, fn, args, got if isinstance(wrt, (tuple, list)) else got[0], kwargs)
    return got


def check_value_and_grad(fn, x):
    """srcgrad's value and gradient of fn at array x against calling fn and against finite
    differences (on copies: fn may change arrays in place)."""
    import srcgrad

    value, got = srcgrad.value_and_grad(fn)(x.copy())
    np.testing.assert_allclose(value, fn(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(got, finite_differences(fn, [x.copy()], 0), rtol=1e-6,
                               atol=1e-8)


def check_specialized(g, fn, args, want, kwargs=None):
    """The variant of `g` specialized to these arguments' shapes and dtypes
    (srcgrad.specialize) gives what the shape-polymorphic code gave (`want`), up to
    rounding. Skipped where there is no variant to make: `g` is not a transformation that
    specializes, or an argument is not a numpy array, a number or None."""
    import inspect

    from srcgrad import specialize

    kwargs = kwargs or {}
    if not getattr(g, "specialize", False):
        return
    params = inspect.signature(fn).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    if specialize.signature(bound.arguments.values()) is None:
        return
    source = g.specialized_source(*args, **kwargs)
    assert "Specialized to" in source
    got = g(*args, **kwargs)  # the variant runs first now
    for k, (a, b) in enumerate(zip(_flat(got), _flat(want))):
        scale = 1.0 + float(np.max(np.abs(b), initial=0.0))
        assert type(a) is type(b), f"specialized variant, result {k}: {type(a)}, not " \
            f"{type(b)}"
        assert np.shape(a) == np.shape(b), f"specialized variant, result {k}: shape"
        assert np.asarray(a).dtype == np.asarray(b).dtype, f"specialized variant, result {k}"
        assert_close(a, b, 1e-9, 1e-12 * scale, f"specialized variant vs general, result {k}")


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _flat(v)]
    return [x]


# ---- structures (dicts, lists, tuples, namedtuples) leaf by leaf ---------------------------

def tree_leaves(x, path=()):
    """[(path, leaf)] of a structure, in its order."""
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in tree_leaves(v, path + (k,))]
    if isinstance(x, (list, tuple)):
        return [p for i, v in enumerate(x) for p in tree_leaves(v, path + (i,))]
    return [(path, x)]


def tree_replace(x, path, value):
    """A copy of structure `x` with the leaf at `path` replaced."""
    if not path:
        return value
    k, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {kk: (tree_replace(v, rest, value) if kk == k else v) for kk, v in x.items()}
    items = [(tree_replace(v, rest, value) if i == k else v) for i, v in enumerate(x)]
    if hasattr(type(x), "_fields"):
        return type(x)(*items)
    return items if isinstance(x, list) else tuple(items)


def tree_get(x, path):
    for k in path:
        x = x[k]
    return x


# ---- golden files ----------------------------------------------------------------------------

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
UPDATE_GOLDEN = os.environ.get("SRCGRAD_UPDATE_GOLDEN") == "1"


def golden_path(name):
    return os.path.join(GOLDEN_DIR, f"{name}.py")


def check_golden(name, source):
    """Compare generated `source` with tests/golden/<name>.py (rewrite it with
    SRCGRAD_UPDATE_GOLDEN=1)."""
    import difflib

    import pytest

    path = golden_path(name)
    if UPDATE_GOLDEN:
        os.makedirs(GOLDEN_DIR, exist_ok=True)
        with open(path, "w") as f:
            f.write(source)
        return
    assert os.path.exists(path), f"no golden file {path}: run with SRCGRAD_UPDATE_GOLDEN=1"
    with open(path) as f:
        golden = f.read()
    if source != golden:
        diff = "".join(difflib.unified_diff(golden.splitlines(True), source.splitlines(True),
                                            f"golden/{name}.py", "generated"))
        pytest.fail(f"the generated source of {name} changed (rerun with "
                    f"SRCGRAD_UPDATE_GOLDEN=1 if the change is intended):\n{diff}")


def run_python(code: str):
    """Run `python -c code` in a fresh interpreter from the checkout's root (its srcgrad and
    runtime first on the path, then tests/ for the shared helpers); returns the
    CompletedProcess."""
    import subprocess
    import sys

    tests = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(tests)
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": root + os.pathsep + tests})


def check_hessian(fn, args, wrt):
    """The compiled Hessian of `fn` in each argument of `wrt` against central differences
    of its compiled gradient (the rules' own derivatives)."""
    for i in wrt:
        h = np.asarray(srcgrad.hessian(fn, wrt=i, cache=False)(*args))
        g = srcgrad.grad(fn, wrt=i, cache=False)
        n = np.size(args[i])
        x0 = np.asarray(args[i], dtype=float)
        num = np.zeros((n, n))
        for k in range(n):
            cols = []
            for step in (1e-5, -1e-5):
                x = x0.copy().reshape(-1)
                x[k] += step
                a = list(args)
                a[i] = x.reshape(x0.shape)
                cols.append(np.asarray(g(*a)).reshape(-1))
            num[:, k] = (cols[0] - cols[1]) / 2e-5
        np.testing.assert_allclose(h.reshape(n, n), num, rtol=1e-5, atol=1e-6,
                                   err_msg=f"input {i}")


def module_from_source(path, source: str):
    """The module of `source`, written to the file `path` (srcgrad reads the source of the
    functions it compiles from their file) and imported."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

