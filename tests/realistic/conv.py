"""A naive convolution and max-pool written with nested loops that fill preallocated
arrays, as in course assignments, and a small conv net loss built from them."""
import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    cache = (x, w, b, conv_param)
    return out, cache


def max_pool_forward_naive(x, pool_param):
    N, C, H, W = x.shape
    ph, pw = pool_param["pool_height"], pool_param["pool_width"]
    stride = pool_param["stride"]
    H_out = 1 + (H - ph) // stride
    W_out = 1 + (W - pw) // stride
    out = np.zeros((N, C, H_out, W_out))
    for n in range(N):
        for c in range(C):
            for i in range(H_out):
                for j in range(W_out):
                    out[n, c, i, j] = np.max(
                        x[n, c, i * stride:i * stride + ph, j * stride:j * stride + pw])
    cache = (x, pool_param)
    return out, cache


def conv_net_loss(w, b, x, target):
    conv_param = {"stride": 1, "pad": 1}
    pool_param = {"pool_height": 2, "pool_width": 2, "stride": 2}
    a, _ = conv_forward_naive(x, w, b, conv_param)
    r = np.maximum(a, 0)
    p, _ = max_pool_forward_naive(r, pool_param)
    return 0.5 * np.sum((p - target) ** 2)
