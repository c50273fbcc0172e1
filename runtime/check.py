"""`gradcheck`: the tape's gradients against float64 central finite differences."""
from __future__ import annotations

import numpy

from .tensor import Tensor

__all__ = ["gradcheck", "numerical_grad"]


def numerical_grad(fn, arrays, index, eps=1e-6):
    """Central differences of the sum of `fn(*arrays)` w.r.t. `arrays[index]` (float64)."""
    # C order: the flat view below must write into the array (a transposed input's
    # reshape(-1) would be a copy, and every difference zero)
    arrays = [numpy.array(a, dtype=numpy.float64, order="C") if _floatish(a) else a
              for a in arrays]
    x = arrays[index]
    grad = numpy.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        hi = numpy.sum(numpy.asarray(_plain(fn(*arrays)), dtype=numpy.float64))
        flat[k] = orig - eps
        lo = numpy.sum(numpy.asarray(_plain(fn(*arrays)), dtype=numpy.float64))
        flat[k] = orig
        gflat[k] = (hi - lo) / (2 * eps)
    return grad


def _floatish(a):
    return isinstance(a, (float, numpy.ndarray, Tensor)) and numpy.asarray(
        a.data if isinstance(a, Tensor) else a).dtype.kind == "f"


def _plain(v):
    return v.data if isinstance(v, Tensor) else v


def _on_tensors(fn, arrays):
    """`fn` on the same kind of values as the tape saw (so Tensor methods work), untaped."""
    from .mode import no_grad

    with no_grad():
        return fn(*[Tensor(a) if isinstance(a, numpy.ndarray) else a for a in arrays])


def gradcheck(fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> bool:
    """Compare the tape's gradient of `sum(fn(*inputs))` with central differences.

    `inputs` is a sequence of arrays or Tensors; every floating input that is a Tensor with
    `requires_grad=True` (or every floating array, when no Tensor is given) is checked, in
    float64. Returns True, or raises AssertionError naming the input and worst element.
    """
    inputs = list(inputs)
    any_tensor = any(isinstance(a, Tensor) for a in inputs)
    check = [i for i, a in enumerate(inputs)
             if (a.requires_grad if isinstance(a, Tensor) else (not any_tensor and _floatish(a)))]
    if not check:
        raise ValueError("gradcheck: no input requires grad")
    arrays = [numpy.array(a.data if isinstance(a, Tensor) else a, dtype=numpy.float64)
              if _floatish(a) else a for a in inputs]
    leaves = [Tensor(a.copy(), requires_grad=(i in check)) if isinstance(a, numpy.ndarray)
              else a for i, a in enumerate(arrays)]
    out = fn(*leaves)
    if not isinstance(out, Tensor) or not out.requires_grad:
        raise ValueError("gradcheck: fn's output does not depend on the inputs that "
                         "require grad")
    out.backward(numpy.ones_like(out.data))
    for i in check:
        analytic = numpy.zeros_like(arrays[i]) if leaves[i].grad is None else \
            numpy.asarray(leaves[i].grad.data)
        numeric = numerical_grad(lambda *a: _on_tensors(fn, a), arrays, i, eps)
        err = numpy.abs(analytic - numeric) - (atol + rtol * numpy.abs(numeric))
        if numpy.any(err > 0) or numpy.any(numpy.isnan(analytic) != numpy.isnan(numeric)):
            k = numpy.unravel_index(numpy.nanargmax(err), err.shape) if err.size else ()
            raise AssertionError(
                f"gradcheck failed for input {i} at index {tuple(int(j) for j in k)}: "
                f"tape {analytic[k]!r}, finite differences {numeric[k]!r}")
    return True
