"""Functions written the way users write them, for tests/compiler/test_specialize.py."""
import numpy as np

import srcgrad

SCALE = 1.0


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    zs = z - np.max(z, axis=1, keepdims=True)
    logp = zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def mlp_inputs(batch, seed=0):
    rng = np.random.default_rng(seed)
    W1 = rng.normal(0.0, 0.25, (16, 16))
    b1 = rng.normal(0.0, 0.1, 16)
    W2 = rng.normal(0.0, 0.25, (16, 4))
    b2 = rng.normal(0.0, 0.1, 4)
    X = rng.normal(size=(batch, 16))
    Y = np.eye(4)[rng.integers(0, 4, batch)]
    return W1, b1, W2, b2, X, Y


def scaled_norm(x, s):
    return s * np.sum(x * x)


def with_options(w, X, scale=1.0, *, power=2):
    return scale * np.sum((X @ w) ** power)


def uses_global(x):
    return SCALE * np.sum(x ** 2)


def list_sum(x, weights):
    return np.sum(x) * weights[0]


def dict_mlp(params, X):
    h = np.maximum(X @ params["W"] + params["b"], 0.0)
    return np.mean(h ** 2)


def dict_params():
    return {"W": np.linspace(-1.0, 1.0, 6).reshape(3, 2), "b": np.array([0.1, -0.2])}


class Linear:
    def __init__(self, n):
        self.w = np.linspace(-1.0, 1.0, n)

    @srcgrad.grad(wrt="w")
    def loss_grad(self, w, X):
        return np.sum((X @ w - 1.0) ** 2)


def local_named_like_a_dtype(x):
    float32 = x * 2
    return np.sum(float32 * x)


def parameter_named_like_a_dtype(float64, y):
    return np.sum(float64 * y)


def sines(x):
    return np.sum(np.sin(x))


def rnn(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def rnn_inputs(T=6, batch=2, d=3, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 0.5, (d, hidden)), rng.normal(0, 0.5, (hidden, hidden)),
            rng.normal(0, 0.1, hidden), rng.normal(size=(T, batch, d)),
            np.zeros((batch, hidden)))


def growing(x, n):
    """A carried array whose shape changes from one iteration to the next."""
    acc = x[:1]
    for _ in range(n):
        acc = np.concatenate([acc, np.sin(acc[-1:]) * x[:1]])
    return np.sum(acc * acc)


def widening(x, w):
    """A carried float32 array that becomes float64 after the first iteration (its
    cotangent, too, has another dtype at each end of the loop)."""
    h = x
    for t in range(3):
        h = np.tanh(h * w[t])
    return np.sum(h)


def broadcast_carry(x, y):
    """A carry that starts narrow and broadcasts wider."""
    h = x
    for _ in range(3):
        h = np.tanh(h + y)
    return np.sum(h)


def partial_rnn(Wx, Wh, b, X, h0):
    """The loop skips the first step: no product of all of X is made for it."""
    h = h0
    for t in range(1, X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def vector_sequence(W, xs):
    """A sequence of vectors (rows of xs), one matrix-vector product per step."""
    s = 0.0
    for t in range(xs.shape[0]):
        s = s + np.sum(np.tanh(xs[t] @ W))
    return s


def leaky(w, X, h0):
    """Each step reads X[t] (no product to take out of the loop)."""
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(h * w + X[t])
    return np.sum(h * h)


def nested_sums(w, X):
    """An inner loop that sums into an array made once, before the outer loop: each run of
    the inner loop starts from that array afresh."""
    start = np.zeros_like(X[0])
    total = 0.0
    for k in range(3):
        acc = start
        for t in range(X.shape[0]):
            acc = acc + X[t]
        total = total + np.sum(np.tanh(acc * w * (k + 1.0)))
    return total


def heads(x, W):
    """x[t] @ W with W a stack of matrices (one per head): (x @ W)[t] is not x[t] @ W."""
    s = 0.0
    for t in range(x.shape[0]):
        y = x[t] @ W
        s = s + np.sum(np.tanh(y[0]))
    return s


def phase(w, x):
    """A carried sum that each step also reads (the reverse pass saves it)."""
    ph = np.zeros(x.shape)
    s = 0.0
    for t in range(6):
        ph = ph + 0.25
        s = s + np.sum(np.sin(ph * x) * w)
    return s


def drift(v, x):
    """The same with an array term."""
    pos = np.zeros(x.shape) + 0.0 * x[0]
    s = 0.0
    for t in range(5):
        pos = pos + v
        s = s + np.sum(np.cos(pos * x))
    return s


def two_outputs(x):
    a = np.tanh(x)
    return a, a * 2.0


def reductions_of_both(X, s):
    """Reductions of an array and of a number (a Python float has no `.sum` method)."""
    col = np.sum(X * X, axis=0)
    return np.max(col) * np.sum(s * s) + np.mean(np.transpose(X) @ X)


C0 = np.linspace(-1.0, 1.0, 1).reshape(())


def empty_loop_then_maximum(p0, p1, p2):
    """A 0-d value carried by a loop that runs no step, then np.maximum (found by the
    random programs: a rewrite lost the dtype of the adjoint loop's initial value)."""
    v1 = np.sin(p1)
    for i2 in range(0):
        v1 = v1 * 0.5 + np.tanh(np.sin(v1)) * i2
    v3 = np.maximum(v1, C0)
    return np.mean(v3)


# ---- a bias added at each step: added once, to the product made before the loop -----------

def rnn_bias_first(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(b + X[t] @ Wx + h @ Wh)      # (b + x W) + h U
    return np.sum(h * h)


def rnn_bias_on_the_input(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        u = X[t] @ Wx + b                        # (x W)[t] + b
        h = np.tanh(u + h @ Wh)
    return np.sum(h * h)


def rnn_pre_activation_read_twice(Wx, Wh, b, X, h0):
    h, total = h0, 0.0
    for t in range(X.shape[0]):
        pre = X[t] @ Wx + h @ Wh
        h = np.tanh(pre + b)
        total = total + np.sum(pre ** 2)         # the sum without b is read again
    return np.sum(h * h) + 0.1 * total


def rnn_bias_per_row(Wx, Wh, B, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + B)      # B of the batch's shape (batch, hidden)
    return np.sum(h * h)


def rnn_bias_per_step(Wx, Wh, Bt, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + Bt)     # Bt (T, batch, hidden): broadcasts h
    return np.sum(h * h)


# ---- products summed over a loop's steps: one product of the stacked steps after it -------

def rnn_vectors(Wx, Wh, b, xs, h0):
    h = h0                                       # one sequence: states are vectors
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def gram_of_steps(A, X):
    G = np.zeros((A.shape[1], A.shape[1]))
    for t in range(X.shape[0]):
        Y = np.tanh(X[t] @ A)
        G = G + Y.T @ Y                          # a sum of products written by the user
    return np.sum(G * G)


def rnn_with_break(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        if t == 2:
            break
    return np.sum(h * h)


def rnn_every_other_step(Wx, Wh, b, X, h0):
    h = h0
    for t in range(0, X.shape[0], 2):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def sum_read_in_the_step(A, X):
    G = np.zeros((A.shape[1], A.shape[1]))
    for t in range(X.shape[0]):
        Y = np.tanh(X[t] @ A + np.sum(G) * 0.01)  # the running sum is read by the step
        G = G + Y.T @ Y
    return np.sum(G * G)


def rnn_state_made_inside(Wx, Wh, b, X):
    h = np.zeros((X.shape[1], Wh.shape[0]))      # the state starts as zeros made here
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + b + h @ Wh)
    return np.sum(h * h)


def rnn_last_steps(Wx, Wh, b, X, h0):
    h = h0
    for t in range(-3, 0):                       # negative indices: X[-3], X[-2], X[-1]
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def rnn_read_twice(Wx, Wh, b, X, h0):
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] @ Wx + h @ Wh + b) * np.cos(X[t][:, :1])
    return np.sum(h * h)


class Huber:
    """A robust regression loss with its constants written inline, as users write them."""

    def __init__(self, delta=1.0):
        self.delta = delta

    def loss(self, w, X, y):
        r = X @ w - y
        a = np.abs(r)
        quad = 0.5 * r * r
        lin = self.delta * (a - 0.5 * self.delta)
        small = np.minimum(a, 1.0)
        return np.mean(np.where(a <= self.delta, quad, lin)) + 1e-3 * np.sum(w * w) \
            - np.sum(np.maximum(0.0, -w)) / 3 + np.sum(small * 2 - 1)


def scale_of(c):
    assert isinstance(c, float), "c must be a float"
    return c


def shadows_a_builtin(x, c):
    s = scale_of(c)
    for isinstance in range(2):  # (a local named like the builtin the assert reads)
        x = x * x * 0.5 + s * x
    return np.sum(x)
