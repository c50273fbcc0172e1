"""Train a small model with the tape engine: one hidden relu layer, a sin output, mean
squared error and plain gradient descent on synthetic data.

    python examples/train_tape.py

Prints the loss every 25 steps and saves the loss curve as examples/loss.png when
matplotlib is installed (otherwise the curve is only printed).
"""
import os

import numpy as np

import runtime as rt

STEPS = 200
LEARNING_RATE = 0.1


def make_data(rng, n=64):
    x = rng.uniform(-2.0, 2.0, (n, 1))
    y = 0.8 * np.sin(2.0 * x + 0.5) + 0.5 * np.maximum(x, 0.0)
    return x, y + 0.05 * rng.standard_normal(y.shape)


def init_params(rng, hidden=8):
    return dict(
        W1=rt.tensor(rng.normal(0.0, 1.0, (1, hidden)), requires_grad=True),
        b1=rt.tensor(np.zeros(hidden), requires_grad=True),
        W2=rt.tensor(rng.normal(0.0, 0.3, (hidden, 1)), requires_grad=True),
        b2=rt.tensor(np.zeros(1), requires_grad=True),
    )


def model(p, x):
    h = (x @ p["W1"] + p["b1"]).relu()
    return np.sin(h @ p["W2"] + p["b2"])  # numpy's sin records on the tape


def mse(pred, y):
    return np.mean((pred - y) ** 2)


def train(steps=STEPS, lr=LEARNING_RATE, seed=0):
    rng = np.random.default_rng(seed)
    x, y = make_data(rng)
    params = init_params(rng)
    losses = []
    for step in range(steps + 1):
        loss = mse(model(params, x), y)
        losses.append(float(loss))
        if step % 25 == 0:
            print(f"step {step:3d}  loss {float(loss):.5f}")
        if step == steps:
            break
        for t in params.values():
            t.zero_grad()
        loss.backward()
        with rt.no_grad():  # the update itself is not part of the model
            for t in params.values():
                t -= lr * t.grad
    return losses


def save_curve(losses, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; the loss curve, every 10 steps:")
        print("  " + " ".join(f"{v:.4f}" for v in losses[::10]))
        return None
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(losses)
    ax.set_xlabel("step")
    ax.set_ylabel("mean squared error")
    ax.set_yscale("log")
    ax.set_title("gradient descent on the tape")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"saved the loss curve to {path}")
    return path


def main():
    losses = train()
    print(f"initial loss {losses[0]:.6f}")
    print(f"final loss {losses[-1]:.6f}")
    save_curve(losses, os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss.png"))


if __name__ == "__main__":
    main()
