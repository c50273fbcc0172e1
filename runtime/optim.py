"""Optimizers for Tensors, with PyTorch's interface and update formulas.

    opt = runtime.optim.Adam(model_params, lr=1e-2)
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()

`params` is an iterable of leaf Tensors that require grad, or of dicts (parameter groups:
`{"params": [...], "lr": ...}`, options missing from a group take the constructor's).
`step()` updates each parameter that has a `.grad` in place, under `no_grad` (the update is
no part of any graph); `zero_grad(set_to_none=True)` sets the grads to None, as PyTorch's
default does (`set_to_none=False` zeroes them in place instead).

The formulas are PyTorch's (torch.optim.SGD and torch.optim.Adam, maximize=False):

SGD, with g the gradient and b the momentum buffer:
    g = g + weight_decay * p
    b = g (first step), else b = momentum * b + (1 - dampening) * g
    g = g + momentum * b if nesterov else b          (when momentum != 0)
    p = p - lr * g

Adam, at step t (from 1):
    g = g + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v) if amsgrad
    p = p - lr / (1 - beta1 ** t) * m / (sqrt(v or v_max) / sqrt(1 - beta2 ** t) + eps)
"""
from __future__ import annotations

import math

from .mode import no_grad
from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """What SGD and Adam share: parameter groups, per-parameter state, zero_grad."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}  # Tensor -> its state (Tensors hash by identity)
        self.param_groups: list = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self._check(group)
        self.param_groups.append(group)

    def _check(self, group):
        if group["lr"] < 0.0:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if group.get("weight_decay", 0.0) < 0.0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's `.grad` to None (PyTorch's default), or to zeros in place
        with `set_to_none=False`."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:  # a grad made with create_graph
                        p.grad = p.grad.detach()
                    try:
                        with no_grad():
                            p.grad.zero_()
                    except ValueError:  # read-only memory (a broadcast view): new zeros
                        p.grad = Tensor(p.grad.xp.zeros_like(p.grad.data))

    def _params_with_grad(self, group):
        return [p for p in group["params"] if p.grad is not None]

    def step(self, closure=None):
        """One update of every parameter that has a gradient. `closure` (optional)
        re-evaluates the loss with grad mode on and returns it; step returns its value."""
        loss = None
        if closure is not None:
            from .mode import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in self._params_with_grad(group):
                    g = p.grad.detach() if isinstance(p.grad, Tensor) else Tensor(p.grad)
                    self._update(p, g, self.state.setdefault(p, {}), group)
        return loss

    def _update(self, p, g, state, group):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(group):
                if k != "params":
                    lines.append(f"    {k}: {group[k]}")
        return "\n".join(lines + [")"])


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (Nesterov's too) and weight
    decay: torch.optim.SGD's formulas (see the module docstring)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _update(self, p, g, state, group):
        wd, mu = group["weight_decay"], group["momentum"]
        if wd != 0:
            g = g + wd * p
        if mu != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.copy()
            else:
                buf.mul_(mu)
                buf.add_((1.0 - group["dampening"]) * g)
            g = g + mu * buf if group["nesterov"] else buf
        p.sub_(group["lr"] * g)


class Adam(Optimizer):
    """Adam (Kingma and Ba), with L2 weight decay added to the gradient and optionally
    AMSGrad: torch.optim.Adam's formulas (see the module docstring)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False):
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad))

    def _update(self, p, g, state, group):
        beta1, beta2 = group["betas"]
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        if not state:
            state["step"] = 0
            state["exp_avg"] = Tensor(p.xp.zeros_like(p.data))
            state["exp_avg_sq"] = Tensor(p.xp.zeros_like(p.data))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = Tensor(p.xp.zeros_like(p.data))
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.mul_(beta1)
        m.add_((1.0 - beta1) * g)
        v.mul_(beta2)
        v.add_((1.0 - beta2) * (g * g))
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"]
            vmax.data[...] = vmax.xp.maximum(vmax.data, v.data)
            v = vmax
        step_size = group["lr"] / (1.0 - beta1 ** t)
        denom = v.sqrt() / math.sqrt(1.0 - beta2 ** t) + group["eps"]
        p.sub_(step_size * (m / denom))
