"""The functions whose generated code README.md shows (tests/project/test_readme.py keeps the
README's listings equal to what srcgrad generates for them)."""
import numpy as np


def f(x, y):
    z = np.log(3 * x ** 2 + 5 * x * y)
    return np.sum(z)


def rnn(W, U, xs, h):
    for t in range(len(xs)):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def energy(x):
    return np.sum(np.log(1 + x ** 2))


def mlp(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


class Model:
    """README.md, "Methods, lambdas, and what the function reads"."""

    def __init__(self):
        self.W = np.ones((3, 2))
        self.cfg = {"l2": 1e-2}

    def loss(self, x, y):
        r = np.tanh(x @ self.W) - y
        return np.mean(r ** 2) + self.cfg["l2"] * np.sum(self.W ** 2)


def noisy_loss(x, seed):
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=x.shape)
    print("evaluating at", x)
    return np.sum((x + 0.1 * noise) ** 2)


# ---- `python examples/readme_examples.py` prints what README.md computes with these ----------
# (README.md's listings name the lines above: new code goes here, at the end)

def main():
    import srcgrad

    np.set_printoptions(precision=4, suppress=True)
    rng = np.random.default_rng(0)

    dx, dy = srcgrad.grad(f, wrt=("x", "y"))(np.array([2.0]), np.array([3.0]))
    print(f"grad of f at x=2, y=3:        dx = {dx}, dy = {dy}")

    W, U = 0.5 * rng.normal(size=(3, 3)), 0.5 * rng.normal(size=(3, 2))
    xs, h0 = rng.normal(size=(4, 2)), np.zeros(3)
    dW, dU = srcgrad.grad(rnn, wrt=("W", "U"))(W, U, xs, h0)
    print(f"rnn over {len(xs)} steps:            |dW| = {np.linalg.norm(dW):.4f}, "
          f"|dU| = {np.linalg.norm(dU):.4f}")

    x = np.array([0.5, -1.0])
    print(f"hessian of energy at {x}:\n{srcgrad.hessian(energy)(x)}")
    v = np.array([1.0, 1.0])
    print(f"hvp of energy at {x}, v = {v}: {srcgrad.hvp(energy)(x, v)}")

    X, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
    params = {"W1": rng.normal(size=(3, 8)), "b1": np.zeros(8),
              "W2": rng.normal(size=(8, 1)), "b2": np.zeros(1)}
    g_mlp = srcgrad.value_and_grad(mlp)
    value, grads = g_mlp(params, X, y)
    print(f"mlp loss {value:.4f}; gradient norms: " + ", ".join(
        f"{k} {np.linalg.norm(g):.4f}" for k, g in grads.items()))
    for _ in range(50):
        value, grads = g_mlp(params, X, y)
        params = {k: params[k] - 0.05 * grads[k] for k in params}
    print(f"mlp loss after 50 gradient steps: {mlp(params, X, y):.4f}")

    model = Model()
    xm, ym = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    print(f"Model.loss, gradient wrt x:\n{srcgrad.grad(model.loss)(xm, ym)}")

    print("noisy_loss (its print runs at every call, as written):")
    print(f"  gradient: {srcgrad.grad(noisy_loss)(np.array([1.0, 2.0]), 0)}")


if __name__ == "__main__":
    main()
