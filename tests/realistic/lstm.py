"""An LSTM and a vanilla RNN unrolled over T steps, hidden states stored into a
preallocated array in the loop, then a regression loss on the states."""
import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_forward(x, h0, Wx, Wh, b):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    prev_h = h0
    prev_c = np.zeros_like(h0)
    for t in range(T):
        a = x[:, t, :].dot(Wx) + prev_h.dot(Wh) + b
        i = sigmoid(a[:, :H])
        f = sigmoid(a[:, H:2 * H])
        o = sigmoid(a[:, 2 * H:3 * H])
        g = np.tanh(a[:, 3 * H:])
        next_c = f * prev_c + i * g
        next_h = o * np.tanh(next_c)
        h[:, t, :] = next_h
        prev_h, prev_c = next_h, next_c
    return h


def lstm_loss(Wx, Wh, b, x, h0, y):
    h = lstm_forward(x, h0, Wx, Wh, b)
    return np.mean((h - y) ** 2)


def rnn_loss(params, xs, targets):
    Wxh, Whh, Why = params["Wxh"], params["Whh"], params["Why"]
    bh, by = params["bh"], params["by"]
    T = xs.shape[0]
    hidden = Whh.shape[0]
    H = np.zeros((T, hidden))
    h = np.zeros(hidden)
    for t in range(T):
        h = np.tanh(Wxh @ xs[t] + Whh @ h + bh)
        H[t] = h
    ys = H @ Why.T + by
    loss = 0.0
    for t in range(T):
        loss += 0.5 * np.sum((ys[t] - targets[t]) ** 2)
    return loss / T
