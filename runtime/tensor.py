"""`Tensor`: an array that records the primitives applied to it, in PyTorch's style.

Every operation on Tensors goes through the op set (`runtime.ops`): Python operators,
methods (`t.sum(axis=0)`, `t.relu()`), and numpy functions via `__array_ufunc__` and
`__array_function__`, so an unmodified numpy function runs on Tensors and records a tape.
"""
from __future__ import annotations

import numpy

from . import ops
from .backend import get_xp, is_array
from .mode import is_grad_enabled
from .ops import PRIMITIVES
from .ops.numpy_api import ATTRIBUTES, METHODS, NUMPY
from . import tape as _tape
from .tape import AccumulateGrad, Node, _retain
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


class Tensor:
    """An array with autograd: `requires_grad`, `grad`, `grad_fn`, `backward()`."""

    __slots__ = ("data", "grad", "grad_fn", "_requires_grad", "_version_box", "_acc",
                 "_retains_grad", "__weakref__")

    def __init__(self, data, requires_grad: bool = False):
        if isinstance(data, Tensor):
            data = data.data
        if not is_array(data):
            data = numpy.asarray(data)
        self.data = data
        self.grad = None
        self.grad_fn = None
        self._requires_grad = False
        self._version_box = [0]
        self._acc = None
        self._retains_grad = False
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _wrap(cls, data, node=None):
        t = cls.__new__(cls)
        t.data = data
        t.grad = None
        t.grad_fn = node
        t._requires_grad = node is not None
        t._version_box = [0]
        t._acc = None
        t._retains_grad = False
        return t

    # ---- autograd attributes ------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
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
            _retain(self.grad_fn, self)
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
        d = self.data if isinstance(self.data, numpy.ndarray) else self.data.get()
        return d if dtype is None else d.astype(dtype)

    def __repr__(self):
        body = numpy.array2string(numpy.asarray(self.__array__()), separator=", ",
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
                needs.append(record and a._requires_grad and prim.is_diff_input(i))
            else:
                datas.append(_unwrap_index(a) if prim.name == "getitem" else a)
                needs.append(False)
        out = prim.impl(*datas, **params)
        if prim.meta:
            return out
        if not is_array(out):
            out = get_xp(*datas).asarray(out)
        t = Tensor._wrap(out)
        base = _view_of(out, args)
        if base is not None:
            t._version_box = base._version_box
        if not any(needs) or not _is_float(out):
            return t
        nexts = tuple((a.grad_fn or a._accumulator()) if n else None
                      for a, n in zip(args, needs))
        saved = tuple(args) if prim.name != "getitem" else (args[0], _unwrap_index(args[1]))
        t.grad_fn = Node(prim, params, saved, tuple(needs), nexts, t)
        t._requires_grad = True
        return t

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            raise TypeError(f"numpy.{ufunc.__name__}.{method} is not supported on Tensor")
        adapter = NUMPY.get(ufunc)
        if adapter is None:
            raise TypeError(f"numpy.{ufunc.__name__} has no primitive in the op set, so it "
                            "cannot run on Tensor")
        return adapter(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        adapter = NUMPY.get(func)
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

    def __and__(self, o):
        return ops.logical_and(self, o)

    def __rand__(self, o):
        return ops.logical_and(o, self)

    def __or__(self, o):
        return ops.logical_or(self, o)

    def __ror__(self, o):
        return ops.logical_or(o, self)

    def __invert__(self):
        return ops.logical_not(self)

    def __getitem__(self, idx):
        return ops.getitem(self, idx)

    # ---- in-place operations --------------------------------------------------------------

    def _inplace(self, prim, other):
        """Apply `prim(self, other)` in place: the data is overwritten, the version bumped."""
        if self.is_leaf and self._requires_grad and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        other_t = other if isinstance(other, Tensor) else None
        tracked = is_grad_enabled() and (self._requires_grad or
                                         (other_t is not None and other_t._requires_grad))
        if tracked:
            # the old value lives on in a shell that takes over this Tensor's graph position
            old = Tensor._wrap(self.data.copy(), self.grad_fn)
            old._requires_grad = self._requires_grad
            if self.grad_fn is not None:
                self.grad_fn.out_ref = _weak(old)
                if self.grad_fn.out_data is not None:
                    # the node reads its output (exp, sqrt...): it must see the old value,
                    # not the buffer that is about to be overwritten
                    self.grad_fn.out_data = old.data
            new = prim(old, other)
            self.data[...] = new.data
            self.grad_fn = new.grad_fn
            self.grad_fn.out_ref = _weak(self)
            self.grad_fn.out_version = self._version_box[0] + 1
            self._requires_grad = True
        else:
            o = other.data if isinstance(other, Tensor) else other
            self.data[...] = prim.impl(self.data, o)
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
        return self._inplace(ops.multiply, 0.0)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def __setitem__(self, idx, value):
        if self._requires_grad and is_grad_enabled():
            raise RuntimeError("assignment into a Tensor that requires grad is not supported; "
                               "build the new value with where() or concatenate() instead")
        self.data[_unwrap_index(idx)] = value.data if isinstance(value, Tensor) else value
        self._version_box[0] += 1

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
    """The Tensor among `args` whose memory `out` shares (a slice, a reshape, or the very
    same array), or None for a fresh array. Such a view shares its base's version counter,
    as in PyTorch, so that an in-place op through the view is seen by the nodes that saved
    the base."""
    for a in args:
        if isinstance(a, Tensor) and out is a.data:
            return a
    if getattr(out, "base", None) is None:
        return None
    xp = get_xp(out)
    for a in args:
        if isinstance(a, Tensor) and xp.may_share_memory(out, a.data):
            return a
    return None


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
