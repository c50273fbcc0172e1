"""rnn: a tanh RNN unrolled by a Python loop over T steps; gradient w.r.t. the weights.

The loss is the squared norm of the last hidden state. The hand-written gradients all run
a forward loop and back-propagate through time; the suite times them all and takes the
fastest in each run as the reference:
- `grad_hand` stacks [Wh; Wx; b] into one (H + D + 1, H) matrix and keeps [h_t, x_t, 1]
  in one preallocated array Z, so each forward step is one matmul and one tanh written
  into Z; the backward loop is one multiply and one matmul per step, the tanh
  derivatives 1 - h^2 are formed for all steps at once, and the three weight gradients
  come out of a single matmul Z^T dA after the loop (fewest numpy calls: the fastest at
  batch 1),
- "per step, in place" is BPTT with the weight gradients accumulated inside the loop
  from small per-step arrays (nothing of size T x batch is allocated: at batch 256 the
  time goes to the matmuls and tanh, the same work in every variant, and to touching
  freshly allocated memory, and this is the fastest); the bias is broadcast once, the
  pre-activation cotangent is written over the stored state, the bias gradient is
  reduced over the batch once after the loop, and Wh^T is made contiguous for the
  per-step matmul (hoisting the input projection, or forming the weight gradients from
  slabs of steps, was slower),
- "simple" (the previous `grad_hand`) keeps the states in one preallocated array and
  computes each weight gradient after the loop with one matmul over all T steps,
- "per step" is textbook BPTT, accumulating the weight gradients inside the loop.
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
    T, B, D = X.shape
    Hd = Wh.shape[0]
    K = Hd + D + 1
    W = np.empty_like(Wh, shape=(K, Hd))         # [Wh; Wx; b]
    W[:Hd] = Wh
    W[Hd:Hd + D] = Wx
    W[Hd + D] = b
    Z = np.empty_like(X, shape=(T + 1, B, K))    # Z[t] = [h_t, x_t, 1]
    Z[0, :, :Hd] = h0
    Z[:T, :, Hd:Hd + D] = X
    Z[:, :, Hd + D] = 1.0
    A = np.empty_like(X, shape=(B, Hd))
    tanh, mul = np.tanh, np.multiply
    for z, h_next in zip(Z[:T], Z[1:, :, :Hd]):  # views made by iteration: cheaper
        z.dot(W, out=A)                          # than indexing inside the loop (and the
        tanh(A, out=h_next)                      # method: cheaper than np.dot)
    Dm = Z[1:, :, :Hd] * Z[1:, :, :Hd]
    np.subtract(1.0, Dm, out=Dm)                 # tanh' = 1 - h^2, every step
    dA = np.empty_like(X, shape=(T, B, Hd))      # cotangents of the pre-activations
    dh = Z[T, :, :Hd] * 2.0
    WhT = Wh.T
    for da, dm in zip(dA[:0:-1], Dm[:0:-1]):     # t = T - 1, ..., 1
        mul(dh, dm, out=da)
        da.dot(WhT, out=dh)
    mul(dh, Dm[0], out=dA[0])
    dW = Z[:T].reshape(T * B, K).T.dot(dA.reshape(T * B, Hd))   # [dWh; dWx; db]
    return dW[Hd:Hd + D], dW[:Hd], dW[Hd + D]


def grad_hand_per_step_in_place(Wx, Wh, b, X, h0):
    T = X.shape[0]
    dot, tanh, mul = np.dot, np.tanh, np.multiply
    bb = np.empty_like(h0)
    bb[...] = b                                  # b broadcast once, not at every step
    hs = [h0]
    h = h0
    for t in range(T):
        a = dot(X[t], Wx)
        a += bb
        a += dot(h, Wh)
        h = tanh(a, out=a)
        hs.append(h)
    dWx, dWh = np.zeros_like(Wx), np.zeros_like(Wh)
    WhT = np.ascontiguousarray(Wh.T)
    dh = h * 2.0
    dsum = np.zeros_like(h)                      # sum over the steps of da
    for t in range(T - 1, -1, -1):
        da = hs[t + 1]                           # h_{t+1} is not read again: reuse it
        mul(da, da, out=da)
        np.subtract(1.0, da, out=da)
        da *= dh
        dWx += dot(X[t].T, da)
        dWh += dot(hs[t].T, da)
        dsum += da
        if t:
            dh = dot(da, WhT)
    return dWx, dWh, dsum.sum(axis=0)


def grad_hand_simple(Wx, Wh, b, X, h0):
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


HAND_VARIANTS = {"per step, in place": grad_hand_per_step_in_place,
                 "simple": grad_hand_simple, "per step": grad_hand_per_step}


def make_torch_loss(torch):
    def loss_torch(Wx, Wh, b, X, h0):
        h = h0
        for t in range(X.shape[0]):
            h = torch.tanh(X[t] @ Wx + h @ Wh + b)
        return torch.sum(h * h)
    return loss_torch
