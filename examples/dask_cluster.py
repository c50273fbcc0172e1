"""Logistic regression on more data than one worker may hold, with srcgrad's gradient.

A `dask.distributed.LocalCluster` of several worker processes, each with a memory limit,
fits a logistic regression on a dataset larger than one worker's limit. The rows are
generated in chunks on the workers (`dask.array.random`, the same chunks again in every
pass over the data), never in one process and never whole in any worker. The loss is ordinary numpy code; the
compiled gradient is called with the dask arrays and the numpy parameters, and its
`compute=True` option computes each (value, gradient) in one pass over the chunks, which
`scipy.optimize.minimize` (L-BFGS) then uses. The fit and the time of each gradient are
printed.

    pip install ".[dask]" && python examples/dask_cluster.py [--rows N] [--workers K]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import srcgrad

try:
    import dask.array as da
    from dask.distributed import Client, LocalCluster
except ImportError:  # pragma: no cover - the message is the point
    raise SystemExit("this example needs dask: pip install \".[dask]\"") from None


def loss(w, b, X, y):
    """Mean logistic loss with a small L2 penalty (labels y in {0, 1})."""
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 1e-4 * np.sum(w ** 2)


def make_data(rows, features, chunk_rows, seed=0):
    """X (rows x features) and labels y, generated chunk by chunk on the workers."""
    rs = da.random.RandomState(seed)
    X = rs.normal(size=(rows, features), chunks=(chunk_rows, features))
    w_true = np.linspace(-1.0, 1.0, features)
    noise = rs.logistic(size=rows, chunks=chunk_rows)
    y = (X @ w_true + 0.5 + noise > 0).astype(np.float64)
    return X, y, w_true


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="256MiB", help="per worker")
    ap.add_argument("--iterations", type=int, default=30)
    args = ap.parse_args(argv)

    chunk_rows = 100_000
    nbytes = args.rows * (args.features + 1) * 8
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        limit = min(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
        print(f"{args.workers} workers, {limit / 2**20:.0f} MiB each; data "
              f"{args.rows:,} x {args.features} float64 = {nbytes / 2**20:.0f} MiB "
              f"({nbytes / limit:.1f}x one worker's limit), in chunks of {chunk_rows:,} rows")
        X, y, w_true = make_data(args.rows, args.features, chunk_rows)

        value_and_grad = srcgrad.value_and_grad(loss, wrt=("w", "b"), compute=True)
        times = []

        def objective(theta):
            t0 = time.perf_counter()
            value, (gw, gb) = value_and_grad(theta[:-1], theta[-1], X, y)
            times.append(time.perf_counter() - t0)
            return float(value), np.append(gw, gb)

        from scipy.optimize import minimize

        t0 = time.perf_counter()
        fit = minimize(objective, np.zeros(args.features + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": args.iterations})
        total = time.perf_counter() - t0
        w, b = fit.x[:-1], fit.x[-1]
        print(f"fit: loss {fit.fun:.5f} after {fit.nit} iterations ({fit.message})")
        print(f"     |w - w_true| / |w_true| = "
              f"{np.linalg.norm(w - w_true) / np.linalg.norm(w_true):.3f}, b = {b:.3f} "
              f"(true 0.5)")
        print(f"gradient calls: {len(times)}; time per gradient: first "
              f"{times[0] * 1e3:.0f} ms, median {np.median(times) * 1e3:.0f} ms, "
              f"min {min(times) * 1e3:.0f} ms; total {total:.1f} s")


if __name__ == "__main__":
    main()
