"""`Tensor`: an array that records the primitives applied to it, in PyTorch's style.

Every operation on Tensors goes through the op set (`runtime.ops`): Python operators,
methods (`t.sum(axis=0)`, `t.relu()`), and numpy functions via `__array_ufunc__` and
`__array_function__`, so an unmodified numpy function runs on Tensors and records a tape.
"""
from __future__ import annotations

import numpy

from . import ops
from .backend import get_xp, is_array
from .mode import enable_grad, is_grad_enabled
from .ops import PRIMITIVES, apply_vjp
from .ops.numpy_api import ATTRIBUTES, METHODS, lookup
from . import tape as _tape
from .tape import AccumulateGrad, Node, retain
from .tape import backward as _backward

__all__ = ["Tensor", "tensor"]


def _is_float(data) -> bool:
    return getattr(data, "dtype", None) is not None and data.dtype.kind in "fc"


def _unwrap_index(idx):
    if isinstance(idx, Tensor):
        return idx.data
    if isinstance(idx, tuple):
        return tuple(_unwrap_index(i) for i in idx)
    if isinstance(idx, list):
        return [_unwrap_index(i) for i in idx]
    return idx


def _scipy_hint() -> str:
    """Where scipy's Python code asked for the array (scipy.special.logsumexp(t),
    scipy.stats.norm.logpdf(t)...), the tape's spelling of scipy's functions."""
    import sys

    frame = sys._getframe(2)
    part = None
    for _ in range(30):  # the innermost run of scipy's frames; its outermost mapped part
        if frame is None:
            break
        mod = frame.f_globals.get("__name__", "")
        if mod.startswith("numpy.lib") and "index_tricks" in mod:
            return ("; np.r_[...] and np.c_[...] read Tensors as arrays: use runtime.r_ / "
                    "runtime.c_")
        if mod == "scipy" or mod.startswith("scipy."):
            sub = mod.split(".")[1] if "." in mod else ""
            part = sub if sub in ("special", "stats", "linalg") else (part or "")
        elif part is not None:
            break
        frame = frame.f_back
    if part is None:
        return ""
    if part:
        return (f"; scipy.{part}'s functions read Tensors as arrays: on the tape use "
                f"runtime.{part} (the same names and signatures)")
    return ("; scipy's functions read Tensors as arrays: on the tape use runtime.special, "
            "runtime.stats or runtime.linalg")


class Tensor:
    """An array with autograd: `requires_grad`, `grad`, `grad_fn`, `backward()`."""

    # An autograd view (a slice, .T, a reshape that shares memory...) keeps its `_base` (a
    # Tensor that is not such a view) and the `_view_steps` that make it from the base, so
    # that an in-place write through it can rewrite the base's history and so that its own
    # `grad_fn` can be remade from the base's history once the shared memory was written
    # (`_view_version`: the version its grad_fn was made at).
    __slots__ = ("data", "grad", "_grad_fn", "_requires_grad", "_version_box", "_acc",
                 "_retains_grad", "_base", "_view_steps", "_view_version", "__weakref__")

    def __init__(self, data, requires_grad: bool = False):
        if isinstance(data, Tensor):
            data = data.data
        if not is_array(data):
            data = numpy.asarray(data)
        self.data = data
        self.grad = None
        self._grad_fn = None
        self._requires_grad = False
        self._version_box = [0]
        self._acc = None
        self._retains_grad = False
        self._base = None
        self._view_steps = None
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _wrap(cls, data, node=None):
        t = cls.__new__(cls)
        t.data = data
        t.grad = None
        t._grad_fn = node
        t._requires_grad = node is not None
        t._version_box = [0]
        t._acc = None
        t._retains_grad = False
        t._base = None
        t._view_steps = None
        return t

    # ---- autograd attributes ------------------------------------------------------------

    @property
    def grad_fn(self):
        if self._base is not None and self._view_version != self._version_box[0]:
            self._refresh_view()
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, node):
        self._grad_fn = node

    @property
    def requires_grad(self) -> bool:
        if self._base is not None and self._view_version != self._version_box[0]:
            self._refresh_view()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if value and not _is_float(self.data):
            raise RuntimeError("only Tensors of floating point dtype can require gradients "
                               f"(this one has dtype {self.data.dtype})")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _version(self) -> int:
        return self._version_box[0]

    def _accumulator(self) -> AccumulateGrad:
        if self._acc is None:
            self._acc = AccumulateGrad(self)
        return self._acc

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf Tensor after backward (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains_grad:
            retain(self.grad_fn, self)
            self._retains_grad = True

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False) -> None:
        """Accumulate the gradient of this Tensor into the `.grad` of the leaves."""
        _backward(self, gradient, retain_graph, create_graph)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory, like PyTorch)."""
        t = Tensor._wrap(self.data)
        t._version_box = self._version_box
        return t

    def zero_grad(self) -> None:
        self.grad = None

    # ---- array attributes ----------------------------------------------------------------

    @property
    def xp(self):
        return get_xp(self.data)

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def T(self):
        return ATTRIBUTES["T"](self)

    @property
    def mT(self):
        return ATTRIBUTES["mT"](self)

    @property
    def real(self):
        return ATTRIBUTES["real"](self)

    @property
    def imag(self):
        return ATTRIBUTES["imag"](self)

    def item(self):
        return self.data.item()

    def numpy(self):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        d = self.data
        return d if isinstance(d, numpy.ndarray) else d.get()

    def tolist(self):
        return self.data.tolist()

    def __len__(self):
        return len(self.data)

    def __iter__(self):
        for i in range(len(self.data)):
            yield self[i]

    def __float__(self):
        return float(self.data)

    def __int__(self):
        return int(self.data)

    def __bool__(self):
        return bool(self.data)

    def __array__(self, dtype=None, copy=None):
        if (self._requires_grad or self.grad_fn is not None) and is_grad_enabled():
            # numpy converting a tensor on the tape (`ndarray.dot(t)`, `np.asarray(t)`)
            # would drop it from the graph and give a wrong gradient without a word
            raise TypeError("a Tensor that requires grad cannot become a numpy array here "
                            "(numpy would compute on its values and lose the gradient): use "
                            "tensor.detach() for the values, or np.dot(a, t) / a @ t rather "
                            "than ndarray methods such as a.dot(t)" + _scipy_hint())
        d = self._numpy()
        return d if dtype is None else d.astype(dtype)

    def _numpy(self):
        return self.data if isinstance(self.data, numpy.ndarray) else self.data.get()

    def __repr__(self):
        body = numpy.array2string(numpy.asarray(self._numpy()), separator=", ",
                                  prefix="Tensor(")
        if self.grad_fn is not None:
            return f"Tensor({body}, grad_fn=<{self.grad_fn.name()}>)"
        if self._requires_grad:
            return f"Tensor({body}, requires_grad=True)"
        return f"Tensor({body})"

    __hash__ = object.__hash__

    # ---- dispatch: every op on Tensors lands here -------------------------------------------

    @staticmethod
    def __op_dispatch__(prim, args, params):
        datas = []
        needs = []
        record = prim.differentiable and is_grad_enabled()
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                datas.append(a.data)
                needs.append(record and a.requires_grad and prim.is_diff_input(i))
            else:
                datas.append(_unwrap_index(a) if prim.name == "getitem" else a)
                needs.append(False)
        out = prim.impl(*datas, **params)
        if prim.meta:
            return out
        if not is_array(out):
            out = get_xp(*datas).asarray(out)
        t = Tensor._wrap(out)
        k = _view_of(out, args)
        if k is not None:
            t._version_box = args[k]._version_box
            if prim.is_diff_input(k) and _is_float(out):
                # the parent's slot stays empty: a replay fills it, and a chain of views
                # keeps only its base alive, not each parent and its graph
                template = tuple(None if i == k else a for i, a in enumerate(args))
                _make_view(t, args[k], (prim, template, k, params), record)
        if not any(needs) or not _is_float(out):
            return t
        nexts = tuple((a.grad_fn or a._accumulator()) if n else None
                      for a, n in zip(args, needs))
        saved = tuple(args) if prim.name != "getitem" else (args[0], _unwrap_index(args[1]))
        t._grad_fn = Node(prim, params, saved, tuple(needs), nexts, t)
        t._requires_grad = True
        return t

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            raise TypeError(f"numpy.{ufunc.__name__}.{method} is not supported on Tensor")
        adapter = lookup(ufunc)
        if adapter is None:
            raise TypeError(f"numpy.{ufunc.__name__} has no primitive in the op set, so it "
                            "cannot run on Tensor")
        return adapter(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        adapter = lookup(func)
        if adapter is None:
            name = f"{getattr(func, '__module__', None) or 'numpy'}.{func.__name__}"
            raise TypeError(f"{name} has no primitive in the op set, so it cannot run on "
                            "Tensor")
        return adapter(*args, **kwargs)

    # ---- operators ------------------------------------------------------------------------

    def __add__(self, o):
        return ops.add(self, o)

    def __radd__(self, o):
        return ops.add(o, self)

    def __sub__(self, o):
        return ops.subtract(self, o)

    def __rsub__(self, o):
        return ops.subtract(o, self)

    def __mul__(self, o):
        return ops.multiply(self, o)

    def __rmul__(self, o):
        return ops.multiply(o, self)

    def __truediv__(self, o):
        return ops.divide(self, o)

    def __rtruediv__(self, o):
        return ops.divide(o, self)

    def __mod__(self, o):
        return ops.remainder(self, o)

    def __rmod__(self, o):
        return ops.remainder(o, self)

    def __floordiv__(self, o):
        return ops.floor_divide(self, o)

    def __rfloordiv__(self, o):
        return ops.floor_divide(o, self)

    def __pow__(self, o):
        return ops.power(self, o)

    def __rpow__(self, o):
        return ops.power(o, self)

    def __matmul__(self, o):
        return ops.matmul(self, o)

    def __rmatmul__(self, o):
        return ops.matmul(o, self)

    def __neg__(self):
        return ops.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ops.absolute(self)

    def __lt__(self, o):
        return ops.less(self, o)

    def __le__(self, o):
        return ops.less_equal(self, o)

    def __gt__(self, o):
        return ops.greater(self, o)

    def __ge__(self, o):
        return ops.greater_equal(self, o)

    def __eq__(self, o):
        return ops.equal(self, o)

    def __ne__(self, o):
        return ops.not_equal(self, o)

    # numpy's bitwise operators: logical on booleans, bitwise on integers
    def __and__(self, o):
        return ops.bitwise_and(self, o)

    def __rand__(self, o):
        return ops.bitwise_and(o, self)

    def __or__(self, o):
        return ops.bitwise_or(self, o)

    def __ror__(self, o):
        return ops.bitwise_or(o, self)

    def __xor__(self, o):
        return ops.bitwise_xor(self, o)

    def __rxor__(self, o):
        return ops.bitwise_xor(o, self)

    def __invert__(self):
        return ops.invert(self)

    def __getitem__(self, idx):
        return ops.getitem(self, idx)

    # ---- in-place operations --------------------------------------------------------------

    def _inplace(self, prim, other):
        """Apply `prim(self, other)` in place: the data is overwritten, the version bumped."""
        o = other.data if isinstance(other, Tensor) else other
        return self._write(lambda old: prim(old, other), lambda d: prim.impl(d, o), other)

    def _write(self, compute, compute_data, other=None):
        """Overwrite this Tensor with `compute(old value)`; unrecorded (grad mode off, or
        nothing requires grad) with `compute_data(data)` on the array instead."""
        _check_writable(self)
        other_grad = isinstance(other, Tensor) and other.requires_grad
        if not (is_grad_enabled() and (self.requires_grad or other_grad)):
            self.data[...] = compute_data(self.data)
        elif self._base is not None:
            _write_view(self._base, self._view_steps, compute)
        elif self._view_steps is _NO_GRAD_VIEW:
            raise RuntimeError(_NO_GRAD_VIEW_WRITE)
        else:
            _write_base(self, compute)
        self._version_box[0] += 1
        return self

    def add_(self, other):
        return self._inplace(ops.add, other)

    def sub_(self, other):
        return self._inplace(ops.subtract, other)

    def mul_(self, other):
        return self._inplace(ops.multiply, other)

    def div_(self, other):
        return self._inplace(ops.divide, other)

    def zero_(self):
        # where(False, x, 0) is exactly 0 with a zero gradient, also where x is inf or nan
        # (x * 0 would give nan there)
        def zero(old):
            return ops.where(old.xp.zeros(old.shape, dtype=bool), old, 0.0)

        return self._write(zero, lambda d: d.dtype.type(0))

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def __setitem__(self, idx, value):
        """`t[idx] = value`; recorded like PyTorch's: `t` becomes "t with the region
        replaced by value", differentiable in both."""
        _check_writable(self)
        value_grad = isinstance(value, Tensor) and value.requires_grad
        if not (is_grad_enabled() and (self.requires_grad or value_grad)):
            self.data[_unwrap_index(idx)] = value.data if isinstance(value, Tensor) else value
        elif self._view_steps is _NO_GRAD_VIEW:
            raise RuntimeError(_NO_GRAD_VIEW_WRITE)
        else:
            step = (ops.getitem, (self, idx), 0, {})
            if self._base is not None:
                base, steps = self._base, self._view_steps + (step,)
            else:
                base, steps = self, (step,)
            _write_view(base, steps, lambda old: _filled(old, value))
        self._version_box[0] += 1

    def _refresh_view(self):
        """Remake this view's grad_fn from its base's present history: the memory they
        share was written since the view was made."""
        with enable_grad():
            t = _replay(self._base, self._view_steps)
        self._view_version = self._version_box[0]
        _move_retain(self, self._grad_fn, t._grad_fn)
        self._grad_fn = t._grad_fn
        self._requires_grad = t._requires_grad
        if t._grad_fn is not None:
            t._grad_fn.out_ref = _weak(self)

    # ---- devices ---------------------------------------------------------------------------

    def to(self, device: str) -> "Tensor":
        """This Tensor on `"cpu"` (numpy) or `"cuda"` (cupy); differentiable, keeps
        `requires_grad` (a moved leaf is a new leaf, as in PyTorch's `.to()` of a leaf
        detached with `requires_grad_()`)."""
        device = "cuda" if str(device).startswith(("cuda", "gpu")) else str(device)
        if device not in ("cpu", "cuda"):
            raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")
        source = "cpu" if isinstance(self.data, numpy.ndarray) else "cuda"
        if source == device:
            return self
        if self.is_leaf:
            moved = ops.to_device(self.data, device=device, source=source)
            return Tensor(moved, requires_grad=self._requires_grad)
        return ops.to_device(self, device=device, source=source)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")


def _view_of(out, args):
    """The position of the Tensor among `args` whose memory `out` shares (a slice, a
    reshape, or the very same array), or None for a fresh array. Such a view shares its
    base's version counter, as in PyTorch, so that an in-place op through the view is seen
    by the nodes that saved the base."""
    for k, a in enumerate(args):
        if isinstance(a, Tensor) and out is a.data:
            return k
    if getattr(out, "base", None) is None:
        return None
    xp = get_xp(out)
    for k, a in enumerate(args):
        if isinstance(a, Tensor) and xp.may_share_memory(out, a.data):
            return k
    return None


# `_view_steps` of a view made while grad mode was off: it has no autograd link to its base
# (a write through it cannot be recorded), as a view made under torch.no_grad()
_NO_GRAD_VIEW = object()


def _make_view(t, parent, step, record: bool):
    """Make `t`, the output of `step` = (prim, args, position of parent, params), an
    autograd view of `parent`'s base."""
    if not record:
        t._view_steps = _NO_GRAD_VIEW
        return
    if parent._base is not None:
        t._base, t._view_steps = parent._base, parent._view_steps + (step,)
    elif parent._view_steps is _NO_GRAD_VIEW:
        t._view_steps = _NO_GRAD_VIEW  # a view of such a view is one too
        return
    else:
        t._base, t._view_steps = parent, (step,)
    t._view_version = t._version_box[0]


# ---- in-place writes: the base's history becomes "base with the view's region replaced" ----

_NO_GRAD_VIEW_WRITE = (
    "a view made while grad mode was off (inside no_grad()) is being modified in place with "
    "grad mode on: the write cannot be recorded in its base's history. Make the view with "
    "grad mode on, or write inside no_grad().")


def _check_writable(t):
    if not is_grad_enabled():
        return
    if t._base is None and t.is_leaf and t.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if t._base is not None and t._base.is_leaf and t._base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                           "an in-place operation.")


def _shell(t):
    """A copy of `t`'s value in `t`'s place in the graph (`t` is about to be overwritten)."""
    old = Tensor._wrap(t.data.copy(), t._grad_fn)
    old._requires_grad = t._requires_grad
    return old


def _hand_over(t, old, new):
    """`t`'s memory now holds `new`: the nodes recorded so far keep the old value (in the
    shell `old`), and `t` takes `new`'s place in the graph."""
    node = old._grad_fn
    if node is not None:
        node.out_ref = _weak(old)
        if node.out_data is not None:
            # the node reads its output (exp, sqrt...): it must see the old value, not the
            # buffer that is overwritten
            node.out_data = old.data
    node = new._grad_fn
    if node is None:
        return
    node.out_ref = _weak(t)
    node.out_version = t._version_box[0] + 1  # the version the caller is about to set
    _move_retain(t, old._grad_fn, node)
    t._grad_fn = node
    t._requires_grad = True


def _move_retain(t, old_node, node):
    """retain_grad() follows `t` to its new grad_fn (the gradient of its present value)."""
    if not t._retains_grad:
        return
    if old_node is not None and old_node.retained:
        old_node.retained = [r for r in old_node.retained if r() is not t]
    if node is not None:
        retain(node, t)


def _same_dtype(new, like):
    """`new` as the dtype of `like` (numpy casts that way when it writes in place)."""
    if not isinstance(new, Tensor):
        new = Tensor(like.xp.asarray(new))
    if new.dtype != like.dtype:
        new = ops.cast_like(new, like)
    return new


def _write_base(t, compute):
    """Recorded in-place write on a Tensor that is no view."""
    old = _shell(t)
    new = _same_dtype(compute(old), old)
    t.data[...] = new.data
    _hand_over(t, old, new)


def _write_view(base, steps, compute):
    """Recorded in-place write through the view that `steps` make from `base`: the view's
    region becomes `compute(old view)`, and `base` takes the history of
    where(region, scatter(new view), old base), as PyTorch's CopySlices. The scatter is the
    adjoint of the view steps (their VJP rules), so the whole record is ordinary primitives
    and create_graph and higher derivatives work through it."""
    old = _shell(base)
    old_view = _replay(old, steps)
    new_view = _same_dtype(compute(old_view), old_view)
    if tuple(new_view.shape) != tuple(old_view.shape):
        raise ValueError(f"an in-place result of shape {tuple(new_view.shape)} does not fit "
                         f"the view of shape {tuple(old_view.shape)} it is written to")
    trace = _trace_arrays(old.data, steps)
    counts = _scatter_back(old.xp.ones(old_view.shape), trace)
    if (counts > 1).any():
        raise RuntimeError("unsupported in-place write: several elements of the view are the "
                           "same memory location (a broadcast view, or an index that "
                           "repeats), so the result would depend on the order of writes")
    new_base = ops.where(counts > 0, _scatter_back(new_view, trace), old)
    base.data[...] = new_base.data
    _hand_over(base, old, new_base)


def _replay(t, steps):
    """The view that `steps` make from `t`, recorded like any op on Tensors."""
    for prim, args, k, params in steps:
        args = list(args)
        args[k] = t
        t = prim(*args, **params)
    return t


def _trace_arrays(data, steps):
    """(prim, args, position, params, out) of each step, run on plain arrays from `data`."""
    trace = []
    for prim, args, k, params in steps:
        args = [a.data if isinstance(a, Tensor) else a for a in args]
        if prim.name == "getitem":
            args[1] = _unwrap_index(args[1])
        args[k] = data
        data = prim.impl(*args, **params)
        trace.append((prim, args, k, params, data))
    return trace


def _scatter_back(g, trace):
    """The adjoint of the view steps applied to `g`: `g` placed in the region the view
    covers, zeros elsewhere (an array for an array `g`, a recorded Tensor for a Tensor)."""
    for prim, args, k, params, out in reversed(trace):
        needs = [i == k for i in range(len(args))]
        g = apply_vjp(prim, g, out, args, params, needs)[k]
    return g


def _filled(old, value):
    """The value `t[idx] = value` writes into the view `old` (numpy's broadcasting, which
    also drops leading axes of length 1)."""
    v = _same_dtype(value if isinstance(value, Tensor) else
                    Tensor(old.xp.asarray(value, dtype=old.dtype)), old)
    extra = v.ndim - old.ndim
    if extra > 0 and all(n == 1 for n in v.shape[:extra]):
        v = ops.reshape(v, tuple(v.shape[extra:]))
    return ops.broadcast_to(v, tuple(old.shape))


def _weak(t):
    import weakref

    return weakref.ref(t)


def _method(name, adapter):
    def method(self, *args, **kwargs):
        return adapter(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"`{name}` from the op set (see runtime.ops)."
    return method


def _install_methods():
    for name, adapter in METHODS.items():
        setattr(Tensor, name, _method(name, adapter))
    for name, prim in PRIMITIVES.items():
        if hasattr(Tensor, name) or prim.meta or name.endswith(("_grad_a", "_grad_b")):
            continue
        setattr(Tensor, name, _method(name, prim))
    Tensor.abs = Tensor.absolute


_install_methods()
_tape.Tensor = Tensor


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """A new leaf Tensor holding a copy of `data` (a list, scalar, numpy or cupy array)."""
    if isinstance(data, Tensor):
        data = data.data
    if is_array(data):
        arr = get_xp(data).array(data, dtype=dtype, copy=True)
    else:
        arr = numpy.array(data, dtype=dtype)
    return Tensor(arr, requires_grad=requires_grad)
