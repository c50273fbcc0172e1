"""Textbook gradients on the tape engine (`runtime`), each printed with the value that the
calculus gives by hand.

    python examples/textbook.py
"""
import numpy as np

import runtime as rt


def polynomial():
    # y = 3x^2 + 2x + 1, dy/dx = 6x + 2 = 14 at x = 2
    x = rt.tensor(2.0, requires_grad=True)
    y = 3 * x ** 2 + 2 * x + 1
    y.backward()
    print(f"y = 3x^2 + 2x + 1 at x=2:   y = {float(y):g}, dy/dx = {float(x.grad):g}"
          "   (by hand: 17, 14)")


def linear():
    # y = w*x + b with x a constant: dy/dw = x, dy/db = 1, and x gets no gradient
    x = rt.tensor(3.0)
    w = rt.tensor(4.0, requires_grad=True)
    b = rt.tensor(5.0, requires_grad=True)
    y = w * x + b
    y.backward()
    print(f"y = w*x + b at x=3, w=4, b=5:   dy/dw = {float(w.grad):g}, "
          f"dy/db = {float(b.grad):g}, x.grad = {x.grad}   (by hand: 3, 1, None)")


def shared_input():
    # e = (a + b) * (b + 1): de/da = b + 1, de/db = (b + 1) + (a + b)
    a = rt.tensor(2.0, requires_grad=True)
    b = rt.tensor(1.0, requires_grad=True)
    e = (a + b) * (b + 1)
    e.backward()
    print(f"e = (a+b)*(b+1) at a=2, b=1:   de/da = {float(a.grad):g}, "
          f"de/db = {float(b.grad):g}   (by hand: 2, 5)")


def log_expression():
    # z = log(3x^2 + 5xy), with every intermediate's gradient kept
    x = rt.tensor(2.0, requires_grad=True)
    y = rt.tensor(3.0, requires_grad=True)
    a = x ** 2
    b = 3 * a
    c = x * y
    d = 5 * c
    e = b + d
    z = e.log()
    for t in (a, b, c, d, e, z):
        t.retain_grad()
    z.backward(retain_graph=True)
    print(f"z = log(3x^2 + 5xy) at x=2, y=3:   dz/dx = {float(x.grad):.4f}, "
          f"dz/dy = {float(y.grad):.4f}   (by hand: 27/42 = 0.6429, 10/42 = 0.2381)")
    grads = ", ".join(f"{n}: {float(t.grad):.4f}"
                      for n, t in zip("abcdez", (a, b, c, d, e, z)))
    print(f"    intermediates (a = x^2, b = 3a, c = xy, d = 5c, e = b + d): {grads}")
    z.backward()
    print(f"    after a second backward (retain_graph=True): dz/dx = {float(x.grad):.4f}, "
          f"dz/dy = {float(y.grad):.4f}   (accumulated: 1.2857, 0.4762)")


def sum_of_powers():
    # r = sum(x^2 + x^3), dr/dx = 2x + 3x^2 = 5 at x = 1
    x = rt.tensor(np.ones(3), requires_grad=True)
    r = (x ** 2 + x ** 3).sum()
    r.backward()
    print(f"r = sum(x^2 + x^3) at x = ones(3):   dr/dx = {x.grad.data.tolist()}"
          "   (by hand: [5, 5, 5])")


def sgd_step():
    # loss = (w*x - y)^2, dloss/dw = 2(wx - y)x = -2 at x=1, y=2, w=1
    x, y = rt.tensor(1.0), rt.tensor(2.0)
    w = rt.tensor(1.0, requires_grad=True)
    loss = (w * x - y) ** 2
    loss.backward()
    grad = float(w.grad)
    with rt.no_grad():
        w -= 0.01 * w.grad
    print(f"loss = (w*x - y)^2 at x=1, y=2, w=1:   dloss/dw = {grad:g}, "
          f"after one SGD step with lr 0.01: w = {float(w):g}   (by hand: -2, 1.02)")


def second_derivative():
    # d2/dx2 x^3 = 6x = 12 at x = 2, by differentiating the recorded backward pass
    x = rt.tensor(2.0, requires_grad=True)
    (x ** 3).backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.backward()
    print(f"d/dx x^3 and d2/dx2 x^3 at x=2:   {float(g):g}, {float(x.grad):g}"
          "   (by hand: 12, 12)")


def main():
    polynomial()
    linear()
    shared_input()
    log_expression()
    sum_of_powers()
    sgd_step()
    second_derivative()


if __name__ == "__main__":
    main()
