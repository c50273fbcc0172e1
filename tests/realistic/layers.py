"""Layer functions in the style of course assignments: every forward returns (out, cache),
and a two-layer net's loss is composed from them. Parameters live in a dict."""
import numpy as np


def affine_forward(x, w, b):
    N = x.shape[0]
    x_row = x.reshape(N, -1)
    out = x_row.dot(w) + b
    cache = (x, w, b)
    return out, cache


def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache


def affine_relu_forward(x, w, b):
    a, fc_cache = affine_forward(x, w, b)
    out, relu_cache = relu_forward(a)
    cache = (fc_cache, relu_cache)
    return out, cache


def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    return loss


def two_layer_loss(params, X, y, reg=0.0):
    W1, b1 = params["W1"], params["b1"]
    W2, b2 = params["W2"], params["b2"]
    h, cache1 = affine_relu_forward(X, W1, b1)
    scores, cache2 = affine_forward(h, W2, b2)
    loss = softmax_loss(scores, y)
    loss += 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
    return loss
