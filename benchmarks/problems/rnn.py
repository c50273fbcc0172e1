"""rnn: a tanh RNN unrolled by a Python loop over T steps; gradient w.r.t. the weights.

The loss is the squared norm of the last hidden state. Two hand-written gradients run
the same forward loop and back-propagate through time; the suite takes the faster one
in each run as the reference:
- `grad_hand` keeps the states in one preallocated array and computes the weight
  gradients after the loop, one matmul each over all T steps (fewer, larger numpy calls:
  the faster way at batch 1),
- `grad_hand_per_step` is textbook BPTT, accumulating the weight gradients inside the
  loop (at batch 256 the long-K matmuls of the first are slower in OpenBLAS, very much
  so when its threads compete with other processes for the cores).
"""
import numpy as np

WRT = ("Wx", "Wh", "b")
SIZES = {"tiny": {"T": 4, "batch": 2, "d_in": 3, "d_hidden": 5},
         "small": {"T": 50, "batch": 1, "d_in": 32, "d_hidden": 32},
         "large": {"T": 50, "batch": 256, "d_in": 32, "d_hidden": 32}}


def describe(T, batch, d_in, d_hidden):
    return f"T={T}, batch {batch}, {d_in}->{d_hidden}"


def make_inputs(rng, T, batch, d_in, d_hidden):
    Wx = rng.normal(0.0, 1.0 / np.sqrt(d_in), (d_in, d_hidden))
    Wh = rng.normal(0.0, 0.9 / np.sqrt(d_hidden), (d_hidden, d_hidden))
    b = rng.normal(0.0, 0.1, d_hidden)
    X = rng.normal(size=(T, batch, d_in))
    h0 = np.zeros((batch, d_hidden))
    return Wx, Wh, b, X, h0


def loss(Wx, Wh, b, X, h0):
    T = X.shape[0]
    h = h0
    for t in range(T):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def grad_hand(Wx, Wh, b, X, h0):
    T, batch, d_in = X.shape
    H = np.empty((T + 1,) + h0.shape)        # H[t + 1] is the state after step t
    H[0] = h0
    for t in range(T):
        H[t + 1] = np.tanh(X[t] @ Wx + H[t] @ Wh + b)
    dA = np.empty((T,) + h0.shape)           # cotangents of the pre-activations
    dh = 2.0 * H[T]
    WhT = Wh.T
    for t in range(T - 1, -1, -1):
        h = H[t + 1]
        dA[t] = da = dh * (1.0 - h * h)
        if t:
            dh = da @ WhT
    dA2 = dA.reshape(T * batch, -1)
    dWx = X.reshape(T * batch, d_in).T @ dA2
    dWh = H[:T].reshape(T * batch, -1).T @ dA2
    return dWx, dWh, np.sum(dA2, axis=0)


def grad_hand_per_step(Wx, Wh, b, X, h0):
    """Textbook BPTT: the weight gradients accumulated inside the loop."""
    T = X.shape[0]
    hs = [h0]
    h = h0
    for t in range(T):
        h = np.tanh(X[t] @ Wx + h @ Wh + b)
        hs.append(h)
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    dh = 2.0 * h
    for t in range(T - 1, -1, -1):
        h = hs[t + 1]
        da = dh * (1.0 - h * h)
        dWx += X[t].T @ da
        dWh += hs[t].T @ da
        db += np.sum(da, axis=0)
        dh = da @ Wh.T
    return dWx, dWh, db


HAND_VARIANTS = {"per step": grad_hand_per_step}


def make_torch_loss(torch):
    def loss_torch(Wx, Wh, b, X, h0):
        h = h0
        for t in range(X.shape[0]):
            h = torch.tanh(X[t] @ Wx + h @ Wh + b)
        return torch.sum(h * h)
    return loss_torch
