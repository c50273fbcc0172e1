"""What filling a preallocated array in a run-time loop costs.

    python -m benchmarks.setitem_loop

`H[t] = v` is lowered as `H = setitem(H, t, v)`, which copies H, so an RNN keeping its
states in a preallocated (T+1, n) array does O(T) copies of it forward and backward; the
same RNN appending its states to a list and stacking them once is the baseline. The
gradient of each is timed (median of 5 calls after one warm-up) for a few T.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

import srcgrad


def rnn_prealloc(W, xs):
    T = xs.shape[0]
    H = np.zeros((T + 1, W.shape[0]))
    for t in range(1, T + 1):
        H[t] = np.tanh(W @ H[t - 1] + xs[t - 1])
    return np.sum(H[1:] ** 2)


def rnn_list(W, xs):
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def main():
    rng = np.random.default_rng(0)
    n = 32
    print(f"n = {n}; gradient w.r.t. W, median of 5 calls")
    for T in (100, 400, 1600):
        W = rng.uniform(-0.3, 0.3, (n, n))
        xs = rng.uniform(-1.0, 1.0, (T, n))
        row = [f"T = {T:5d}"]
        for f in (rnn_prealloc, rnn_list):
            g = srcgrad.grad(f)
            g(W, xs)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                g(W, xs)
                times.append(time.perf_counter() - t0)
            row.append(f"{f.__name__} {statistics.median(times) * 1e3:8.2f} ms")
        print("   ".join(row))


if __name__ == "__main__":
    main()
