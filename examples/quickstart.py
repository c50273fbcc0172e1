"""The main example: a gradient computed by srcgrad, checked against the tape, and the
Python source srcgrad generated for it.

    python examples/quickstart.py

With matplotlib (`pip install "srcgrad[plot]"`, or `pip install ".[plot]"` in a clone) it
also shows the loss curve and saves it as examples/quickstart_loss.png.
"""
import os

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
    losses = []
    for step in range(201):
        dW, db = grad_loss(W, b, X, y)
        W, b = W - 0.5 * dW, b - 0.5 * db
        losses.append(loss(W, b, X, y))
        if step % 50 == 0:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")

    # the same gradient from the tape engine, as an independent check
    Wt, bt = rt.tensor(W, requires_grad=True), rt.tensor(b, requires_grad=True)
    loss(Wt, bt, X, y).backward()
    dW, db = grad_loss(W, b, X, y)
    print("max |srcgrad - tape| =", max(np.abs(dW - Wt.grad.data).max(),
                                        abs(float(db) - float(bt.grad))))
    print("\nThe generated gradient code:\n")
    print(grad_loss.source)
    show_curve(losses, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "quickstart_loss.png"))


def show_curve(losses, path):
    """The loss curve as a picture: saved to `path`, and shown in a window where
    matplotlib has one."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print('\nTo see the loss curve as a picture, install matplotlib: '
              'pip install "srcgrad[plot]" (in a clone: pip install ".[plot]")')
        return None
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(losses)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title("logistic regression, gradient from srcgrad")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"\nsaved the loss curve to {path}")
    if plt.get_backend().lower() not in ("agg", "pdf", "ps", "svg", "cairo", "template"):
        plt.show()  # an interactive backend: a window
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
