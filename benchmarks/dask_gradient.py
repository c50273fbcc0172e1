"""A gradient over more data than one worker may hold: srcgrad on dask against hand-written dask.

    python -m benchmarks.dask_gradient [--factor 4] [--workers 2] [--memory-limit 256MiB]

A `LocalCluster` of worker processes, each with a memory limit, and a logistic-regression
dataset `--factor` times one worker's limit, generated in chunks on the workers in every
pass (never whole in one process). Timed, interleaved, `--repeats` times each:
- srcgrad: `value_and_grad(loss, compute=True)` called with the dask data and numpy
  parameters (the generated numpy code, bound to dask);
- hand-written: the same value and gradient written with dask.array by hand (one
  `dask.compute` over the three results).
Both are checked against each other first (rtol 1e-10). Prints the medians and the ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import srcgrad


def loss(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 1e-4 * np.sum(w ** 2)


def value_and_grad_by_hand(w, b, X, y):
    import dask
    import dask.array as da

    n = X.shape[0]
    z = X @ w + b
    value = da.mean(da.logaddexp(0.0, z) - y * z) + 1e-4 * np.sum(w ** 2)
    r = (1.0 / (1.0 + da.exp(-z)) - y) / n
    gw, gb = X.T @ r, da.sum(r)
    value, gw, gb = dask.compute(value, gw, gb)
    return value, (gw + 2e-4 * w, gb)


def data(rows, features, chunk_rows, seed=0):
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.normal(size=(rows, features), chunks=(chunk_rows, features))
    w_true = np.linspace(-1.0, 1.0, features)
    y = (X @ w_true + rs.logistic(size=rows, chunks=chunk_rows) > 0).astype(np.float64)
    return X, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=float, default=4.0,
                    help="data size as a multiple of one worker's memory limit")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="256MiB")
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--chunk-rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit("needs dask: pip install \".[dask]\"") from None

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        limit = min(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
        rows = int(args.factor * limit / ((args.features + 1) * 8))
        X, y = data(rows, args.features, args.chunk_rows)
        rng = np.random.default_rng(1)
        w, b = rng.normal(size=args.features) / 4, 0.1
        compiled = srcgrad.value_and_grad(loss, wrt=("w", "b"), compute=True)
        ours, hand = compiled(w, b, X, y), value_and_grad_by_hand(w, b, X, y)
        np.testing.assert_allclose(ours[0], hand[0], rtol=1e-10)
        for a, h in zip(ours[1], hand[1]):
            np.testing.assert_allclose(a, h, rtol=1e-10, atol=1e-14)
        times = {"srcgrad": [], "hand-written dask": []}
        for _ in range(args.repeats):
            for name, fn in (("srcgrad", compiled), ("hand-written dask", value_and_grad_by_hand)):
                t0 = time.perf_counter()
                fn(w, b, X, y)
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{args.workers} workers x {limit / 2**20:.0f} MiB; data {rows:,} x "
              f"{args.features + 1} float64 = {rows * (args.features + 1) * 8 / 2**20:.0f} MiB "
              f"({args.factor:g}x one worker's limit), chunks of {args.chunk_rows:,} rows; "
              f"median of {args.repeats}, interleaved")
        print("| gradient | median time | / hand-written |")
        print("|---|---:|---:|")
        for k in times:
            print(f"| {k} | {med[k]:.2f} s | {med[k] / med['hand-written dask']:.2f}x |")


if __name__ == "__main__":
    main()
