"""mlp: two dense layers with tanh, softmax cross-entropy on one-hot labels.

Hand-written gradients (all timed; the suite takes the fastest in each run as the reference):
- `grad_hand`: softmax and cross-entropy fused into one cotangent, (softmax(z) - Y) / N,
  built in place in one array, and the method `a.dot(b)` rather than `@` or `np.dot`
  (a small product's call costs half; at the large size the matmuls take nearly all the
  time, and writing every step with `out=` was no faster),
- "simple": the forward pass with new arrays, then the textbook backward pass.
"""
import numpy as np

WRT = ("W1", "b1", "W2", "b2")
SIZES = {"tiny": {"batch": 3, "d_in": 4, "d_hidden": 5, "d_out": 3},
         "small": {"batch": 8, "d_in": 16, "d_hidden": 16, "d_out": 4},
         "large": {"batch": 64, "d_in": 784, "d_hidden": 256, "d_out": 10}}


def describe(batch, d_in, d_hidden, d_out):
    return f"batch {batch}, {d_in}-{d_hidden}-{d_out}"


def make_inputs(rng, batch, d_in, d_hidden, d_out):
    W1 = rng.normal(0.0, 1.0 / np.sqrt(d_in), (d_in, d_hidden))
    b1 = rng.normal(0.0, 0.1, d_hidden)
    W2 = rng.normal(0.0, 1.0 / np.sqrt(d_hidden), (d_hidden, d_out))
    b2 = rng.normal(0.0, 0.1, d_out)
    X = rng.normal(size=(batch, d_in))
    Y = np.eye(d_out)[rng.integers(0, d_out, batch)]
    return W1, b1, W2, b2, X, Y


def loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    zs = z - np.max(z, axis=1, keepdims=True)
    logp = zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def grad_hand(W1, b1, W2, b2, X, Y):
    h = X.dot(W1)
    h += b1
    h = np.tanh(h)
    dz = h.dot(W2)
    dz += b2
    dz -= dz.max(axis=1, keepdims=True)
    dz = np.exp(dz)
    dz /= dz.sum(axis=1, keepdims=True)  # softmax
    dz -= Y                              # the rows of Y are one-hot: they sum to 1
    dz *= 1.0 / X.shape[0]
    da = dz.dot(W2.T)
    da *= 1.0 - h * h                    # through tanh
    return X.T.dot(da), da.sum(axis=0), h.T.dot(dz), dz.sum(axis=0)


def grad_hand_simple(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    dz = (p - Y) / X.shape[0]          # the rows of Y are one-hot: they sum to 1
    dW2 = h.T @ dz
    db2 = np.sum(dz, axis=0)
    da = (dz @ W2.T) * (1.0 - h * h)
    return X.T @ da, np.sum(da, axis=0), dW2, db2


HAND_VARIANTS = {"simple": grad_hand_simple}


def make_torch_loss(torch):
    def loss_torch(W1, b1, W2, b2, X, Y):
        h = torch.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        zs = z - torch.amax(z, dim=1, keepdim=True)
        logp = zs - torch.log(torch.sum(torch.exp(zs), dim=1, keepdim=True))
        return -torch.sum(Y * logp) / X.shape[0]
    return loss_torch
