"""Train a small model on the tape engine, PyTorch style: a one-hidden-layer relu network
fitted to a noisy curve by mean squared error, once with SGD (momentum) and once with Adam
from `runtime.optim`, from the same initial weights.

    python examples/train_tape.py

Prints the loss every 25 steps and saves both loss curves as examples/loss.png when
matplotlib is installed (`pip install "srcgrad[plot]"`); otherwise prints the curves.
"""
import os

import numpy as np

import runtime as rt

STEPS = 200
OPTIMIZERS = {  # name -> (class, options)
    "SGD": (rt.optim.SGD, dict(lr=0.05, momentum=0.9)),
    "Adam": (rt.optim.Adam, dict(lr=0.02)),
}


def make_data(rng, n=64):
    x = rng.uniform(-2.0, 2.0, (n, 1))
    y = 0.8 * np.sin(2.0 * x + 0.5) + 0.5 * np.maximum(x, 0.0)
    return x, y + 0.05 * rng.standard_normal(y.shape)


def init_params(seed, hidden=16):
    g = np.random.default_rng(seed)
    return dict(
        W1=rt.randn(1, hidden, generator=g, requires_grad=True),
        b1=rt.zeros(hidden, requires_grad=True),
        W2=(0.3 * rt.randn(hidden, 1, generator=g)).requires_grad_(),
        b2=rt.zeros(1, requires_grad=True),
    )


def model(p, x):
    h = rt.relu(rt.matmul(x, p["W1"]) + p["b1"])
    return rt.matmul(h, p["W2"]) + p["b2"]


def mse(pred, y):
    return rt.mean((pred - y) ** 2)


def train(name, steps=STEPS, seed=0):
    x, y = make_data(np.random.default_rng(seed))
    params = init_params(seed + 1)
    cls, options = OPTIMIZERS[name]
    opt = cls(params.values(), **options)
    print(f"== {name} ({', '.join(f'{k}={v}' for k, v in options.items())}) ==")
    losses = []
    for step in range(steps + 1):
        opt.zero_grad()
        loss = mse(model(params, x), y)
        losses.append(float(loss))
        if step % 25 == 0:
            print(f"step {step:3d}  loss {float(loss):.5f}")
        if step == steps:
            break
        loss.backward()
        opt.step()
    return losses


def save_curves(curves, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed (pip install "srcgrad[plot]" to save the loss '
              "curves as a picture); the losses every 10 steps:")
        for name, losses in curves.items():
            print(f"  {name}: " + " ".join(f"{v:.4f}" for v in losses[::10]))
        return None
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, losses in curves.items():
        ax.plot(losses, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("mean squared error")
    ax.set_yscale("log")
    ax.set_title("a small network trained on the tape")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"saved the loss curves to {path}")
    return path


def main():
    curves = {name: train(name) for name in OPTIMIZERS}
    print(f"initial loss {curves['SGD'][0]:.6f}")
    for name, losses in curves.items():
        print(f"final loss {name} {losses[-1]:.6f}")
    save_curves(curves, os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss.png"))


if __name__ == "__main__":
    main()
