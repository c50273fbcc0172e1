"""The main example: a gradient computed by srcgrad, checked against the tape, and the
Python source srcgrad generated for it."""
import numpy as np

import runtime as rt
import srcgrad


def loss(W, b, X, y):
    """Logistic regression with an L2 penalty."""
    z = X @ W + b
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    return nll + 0.01 * np.sum(W ** 2)


grad_loss = srcgrad.grad(loss, wrt=("W", "b"))


def main():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (X @ np.array([1.5, -2.0, 0.5]) > 0).astype(float)
    W, b = np.zeros(3), 0.0
    for step in range(201):
        dW, db = grad_loss(W, b, X, y)
        W, b = W - 0.5 * dW, b - 0.5 * db
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss(W, b, X, y):.4f}")

    # the same gradient from the tape engine, as an independent check
    Wt, bt = rt.tensor(W, requires_grad=True), rt.tensor(b, requires_grad=True)
    loss(Wt, bt, X, y).backward()
    dW, db = grad_loss(W, b, X, y)
    print("max |srcgrad - tape| =", max(np.abs(dW - Wt.grad.data).max(),
                                        abs(float(db) - float(bt.grad))))
    print("\nThe generated gradient code:\n")
    print(grad_loss.source)


if __name__ == "__main__":
    main()
