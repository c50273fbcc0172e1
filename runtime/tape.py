"""The backward graph and its traversal.

A `Node` is recorded for each primitive applied to Tensors that require grad. It keeps the
primitive, its params, the inputs its rules read (with their version counters at the time)
and edges (`next_functions`) to the nodes of its inputs: another op's node, or an
`AccumulateGrad` node that writes into a leaf's `.grad`. Edges point at nodes, not at
Tensors, so an in-place op that later gives a Tensor a new `grad_fn` does not re-route
gradients that were recorded before it.

`backward` walks the graph iteratively (no recursion limit) in dependency order, summing
cotangents of values used more than once, and applies each primitive's VJP rules through
`runtime.ops.apply_vjp`, the helper the compiler uses too.
"""
from __future__ import annotations

import weakref

from .mode import enable_grad, no_grad
from .ops import apply_vjp
from .ops.elementwise import add

__all__ = ["Node", "AccumulateGrad", "backward"]

Tensor = None  # runtime.tensor sets this once its class exists (it imports this module)

_SHORT = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "negative": "Neg",
    "power": "Pow", "matmul": "MatMul", "absolute": "Abs", "getitem": "Index",
    "maximum": "Maximum", "minimum": "Minimum", "logsumexp": "LogSumExp",
}


def _camel(name: str) -> str:
    return _SHORT.get(name) or "".join(p.capitalize() for p in name.split("_"))


class AccumulateGrad:
    """The node at a leaf: adds the incoming cotangent to `variable.grad`."""

    __slots__ = ("_variable", "__weakref__")
    next_functions = ()

    def __init__(self, variable):
        # weak: the leaf owns this node (Tensor._acc), not the other way round, so a leaf
        # and its gradient are freed without waiting for the garbage collector
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        return self._variable()

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"


class Node:
    """One recorded primitive application (a Tensor's `grad_fn`)."""

    __slots__ = ("prim", "params", "args", "versions", "needs", "next_functions", "out_ref",
                 "out_data", "out_version", "retained", "freed", "__weakref__")

    def __init__(self, prim, params, args, needs, next_functions, out):
        self.prim = prim
        self.params = params
        self.args = args
        # version of every Tensor argument when it was saved (checked only where the
        # rules read values, as PyTorch does for saved tensors)
        self.versions = tuple(getattr(a, "_version_box", (None,))[0] for a in args)
        self.needs = needs
        self.next_functions = next_functions
        self.out_ref = weakref.ref(out)
        self.out_data = out.data if prim.reads_out else None
        self.out_version = out._version_box[0]
        self.retained = None
        self.freed = False

    def name(self) -> str:
        return f"{_camel(self.prim.name)}Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    def _check_versions(self):
        if self.prim.reads_inputs:
            for a, v in zip(self.args, self.versions):
                if isinstance(a, Tensor) and a._version_box[0] != v:
                    _raise_inplace(a, v, self)
        if self.prim.reads_out:
            out = self.out_ref()
            if out is not None and out._version_box[0] != self.out_version:
                _raise_inplace(out, self.out_version, self)

    def output(self, create_graph: bool):
        """The forward output, as a Tensor when the backward pass is being recorded."""
        if not create_graph:
            return self.out_data
        out = self.out_ref()
        if out is None:
            out = Tensor._wrap(self.out_data, self)
        return out

    def apply(self, g, create_graph: bool):
        if self.freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access "
                "saved tensors after they have already been freed). Saved intermediate "
                "values of the graph are freed when you call .backward(). Specify "
                "retain_graph=True if you need to backward through the graph a second time "
                "or if you need to access saved tensors after calling backward.")
        self._check_versions()
        if create_graph:
            with enable_grad():
                return apply_vjp(self.prim, g, self.output(True), self.args, self.params,
                                 self.needs)
        # plain arrays: the rules run on them directly (backward() has turned recording off)
        args = [a.data if isinstance(a, Tensor) else a for a in self.args]
        return apply_vjp(self.prim, g, self.out_data, args, self.params, self.needs)

    def free(self):
        self.args = None
        self.out_data = None
        self.freed = True


def _raise_inplace(t, expected, node):
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [Tensor of shape {tuple(t.shape)}], which is output 0 of "
        f"{t.grad_fn.name() if t.grad_fn is not None else 'a leaf'}, is at version "
        f"{t._version_box[0]}; expected version {expected} instead (needed by "
        f"{node.name()}).")


def retain(node, tensor):
    if node.retained is None:
        node.retained = []
    node.retained.append(weakref.ref(tensor))


def _accumulate(tensor, g, create_graph: bool):
    """Add cotangent `g` into `tensor.grad` (a fresh array the first time)."""
    from .ops.shapes import broadcast_to, cast_like
    from .tensor import Tensor

    if create_graph:
        gt = g if isinstance(g, Tensor) else Tensor(g)
        if gt.dtype != tensor.dtype:  # a leaf's grad has the leaf's dtype, as without
            gt = cast_like(gt, tensor)  # create_graph; cast_like keeps it differentiable
        if tuple(gt.shape) != tuple(tensor.shape):
            gt = broadcast_to(gt, tuple(tensor.shape))
        tensor.grad = gt if tensor.grad is None else tensor.grad + gt
        return
    xp = tensor.xp
    data = g.data if isinstance(g, Tensor) else g
    data = xp.broadcast_to(xp.asarray(data, dtype=tensor.dtype), tensor.shape)
    if tensor.grad is None:
        tensor.grad = Tensor(data.copy())
    else:
        tensor.grad = Tensor(tensor.grad.data + data)


def backward(root, gradient=None, retain_graph=None, create_graph=False):
    """Accumulate d(root)/d(leaf) into `.grad` of every leaf that requires grad."""
    if not root.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        g = root.xp.ones_like(root.data)
    else:
        g = gradient.data if isinstance(gradient, Tensor) else root.xp.asarray(gradient)
        if tuple(g.shape) != tuple(root.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                               f"{tuple(g.shape)} and output[0] has a shape of "
                               f"{tuple(root.shape)}.")
        g = g.astype(root.data.dtype, copy=False)
    if create_graph:
        g = gradient if isinstance(gradient, Tensor) else Tensor(g)

    start = root.grad_fn if root.grad_fn is not None else root._accumulator()
    # count incoming edges (iterative DFS)
    deps = {start: 0}
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in node.next_functions:
            if nxt is None:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                stack.append(nxt)

    # without create_graph the rules run on arrays with recording off, once for the walk
    with (enable_grad() if create_graph else no_grad()):
        _walk(start, g, deps, retain_graph, create_graph)


def _walk(start, g, deps, retain_graph, create_graph):
    grads = {start: g}
    ready = [start]
    while ready:
        node = ready.pop()
        g = grads.pop(node, None)
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if g is not None and leaf is not None:
                _accumulate(leaf, g, create_graph)
            continue
        if node.retained and g is not None:
            for ref in node.retained:
                t = ref()
                if t is not None:
                    _accumulate(t, g, create_graph)
        cts = node.apply(g, create_graph) if g is not None else [None] * len(
            node.next_functions)
        for nxt, ct in zip(node.next_functions, cts):
            if nxt is None:
                continue
            if ct is not None:
                prev = grads.get(nxt)
                grads[nxt] = ct if prev is None else add(prev, ct)
            deps[nxt] -= 1
            if deps[nxt] == 0:
                ready.append(nxt)
        if not retain_graph:
            node.free()
