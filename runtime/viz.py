"""`to_dot`: the backward graph of a Tensor as Graphviz DOT text."""
from __future__ import annotations

from .tape import AccumulateGrad

__all__ = ["to_dot"]


def to_dot(t) -> str:
    """DOT text of the graph that `t.backward()` would walk (render it with `dot -Tpng`)."""
    lines = ["digraph backward {", '  node [shape=box, fontname="monospace"];']
    root = t.grad_fn if t.grad_fn is not None else (t._accumulator() if t.requires_grad
                                                      else None)
    if root is None:
        lines.append(f'  n0 [label="Tensor {tuple(t.shape)} (no grad)"];')
        return "\n".join(lines + ["}"])
    ids = {}
    stack = [root]
    ids[root] = 0
    edges = []
    while stack:
        node = stack.pop()
        for nxt in node.next_functions:
            if nxt is None:
                continue
            if nxt not in ids:
                ids[nxt] = len(ids)
                stack.append(nxt)
            edges.append((ids[node], ids[nxt]))
    for node, i in sorted(ids.items(), key=lambda kv: kv[1]):
        if isinstance(node, AccumulateGrad):
            label = f"AccumulateGrad\\n{tuple(node.variable.shape)}"
        else:
            out = node.out_ref()
            shape = f"\\n{tuple(out.shape)}" if out is not None else ""
            label = f"{node.name()}{shape}"
        lines.append(f'  n{i} [label="{label}"];')
    lines.append(f'  out [label="output {tuple(t.shape)}", shape=ellipse];')
    lines.append("  out -> n0;")
    for a, b in edges:
        lines.append(f"  n{a} -> n{b};")
    return "\n".join(lines + ["}"])
