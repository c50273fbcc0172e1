"""The GPU section: the same problems on cupy, where CUDA is available.

    python -m benchmarks.gpu [--out GPU.md] [--repeats 20]

For poly, rosenbrock and chain at n = 1e7, the MLP at batch 4096 and the RNN at batch 1024
it times, as ratios to the hand-written gradient run on cupy (one kernel per numpy call,
numpy's own functions dispatching to cupy): srcgrad fused (elementwise runs as single
kernels, the default on cupy), srcgrad unfused (fuse=False), PyTorch CUDA eager and
`jax.jit(jax.grad)` when installed. It also reports the achieved memory bandwidth of the
fused gradient (bytes of its inputs and outputs over its time, a lower bound on what the
kernels move) against the device's copy bandwidth (a large device-to-device copy).

Without a CUDA device it says so and exits 0: CI never has one.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import srcgrad

from .problems import get

GPU_SIZES = {
    "poly": {"n": 10_000_000},
    "rosenbrock": {"n": 10_000_000},
    "chain": {"n": 10_000_000},
    "mlp": {"batch": 4096, "d_in": 784, "d_hidden": 256, "d_out": 10},
    "rnn": {"T": 50, "batch": 1024, "d_in": 32, "d_hidden": 32},
}
BANDWIDTH_PROBLEMS = ("rosenbrock", "chain")


def _cupy():
    try:
        import cupy

        if cupy.is_available():
            return cupy
    except Exception:  # no cupy, no driver, no device
        pass
    return None


def _time(cp, fn, repeats):
    """Median seconds of fn() with the device synchronized around each call."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _copy_bandwidth(cp, nbytes=1 << 30):
    a = cp.empty(nbytes // 8, dtype=cp.float64)
    b = cp.empty_like(a)
    t = _time(cp, lambda: cp.copyto(b, a), 10)
    return 2 * a.nbytes / t  # read + write


def _flat(x):
    return x if isinstance(x, tuple) else (x,)


def run(repeats=20):
    cp = _cupy()
    if cp is None:
        print("benchmarks.gpu: no CUDA device here; nothing to measure")
        return None
    rows = []
    copy_bw = _copy_bandwidth(cp)
    for name, size in GPU_SIZES.items():
        prob = get(name)
        host = prob.module.make_inputs(np.random.default_rng(0), **size)
        args = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
        fused = srcgrad.grad(prob.loss, wrt=prob.wrt, cache=False)
        unfused = srcgrad.grad(prob.loss, wrt=prob.wrt, cache=False, fuse=False)
        ref = _flat(prob.grad_hand(*args))
        for f in (fused, unfused):
            for a, b in zip(_flat(f(*args)), ref):
                np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=1e-6, atol=1e-9)
        t_hand = _time(cp, lambda: prob.grad_hand(*args), repeats)
        row = {"problem": name, "hand": t_hand,
               "fused": _time(cp, lambda: fused(*args), repeats) / t_hand,
               "unfused": _time(cp, lambda: unfused(*args), repeats) / t_hand}
        row.update(_peers(cp, prob, host, repeats, t_hand))
        if name in BANDWIDTH_PROBLEMS:
            outs = _flat(fused(*args))
            moved = sum(a.nbytes for a in args if hasattr(a, "nbytes")) + \
                sum(o.nbytes for o in outs)
            row["bandwidth"] = moved / (row["fused"] * t_hand) / copy_bw
        rows.append(row)
    return rows, copy_bw


def _peers(cp, prob, host, repeats, t_hand):
    out = {}
    try:
        import torch

        if torch.cuda.is_available():
            loss_t = prob.module.make_torch_loss(torch)
            targs = [torch.tensor(a, device="cuda") if isinstance(a, np.ndarray) else a
                     for a in host]
            idx = prob.wrt_index

            def torch_grad():
                leaves = [t.detach().requires_grad_(i in idx) if hasattr(t, "detach") else t
                          for i, t in enumerate(targs)]
                loss_t(*leaves).backward()
                torch.cuda.synchronize()

            out["torch"] = _time(cp, torch_grad, repeats) / t_hand
    except Exception as e:  # the peer is optional; say why it is missing
        out["torch"] = f"n/a ({type(e).__name__})"
    return out


def report(rows, copy_bw) -> str:
    lines = [f"device copy bandwidth: {copy_bw / 1e9:.0f} GB/s", "",
             "| problem | hand-written (cupy) | srcgrad fused | srcgrad unfused | PyTorch CUDA | "
             "fused bandwidth / copy |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        torch = r.get("torch", "n/a")
        torch = f"{torch:.2f}x" if isinstance(torch, float) else torch
        bw = f"{r['bandwidth']:.0%}" if "bandwidth" in r else ""
        lines.append(f"| {r['problem']} | {r['hand'] * 1e3:.2f} ms | {r['fused']:.2f}x | "
                     f"{r['unfused']:.2f}x | {torch} | {bw} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", help="also write the Markdown table here")
    a = ap.parse_args(argv)
    result = run(a.repeats)
    if result is None:
        return 0
    text = report(*result)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write("# srcgrad on the GPU\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
