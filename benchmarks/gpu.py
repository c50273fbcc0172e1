"""The GPU section: the same problems on cupy, where CUDA is available.

    python -m benchmarks.gpu [--out FILE] [--repeats 20] [PROBLEM ...]

For poly, rosenbrock and chain at n = 1e7, the MLP at batch 4096 and the RNN at batch 1024
it times, as ratios to the hand-written gradient run on cupy (the problem's hand-written
numpy gradients with `np` bound to cupy, one kernel per call; the fastest of them is the
reference): srcgrad fused (elementwise runs as single kernels, the default on cupy),
srcgrad unfused (fuse=False), PyTorch CUDA eager and `jax.jit(jax.grad)` on the GPU, where
installed. Every gradient is first checked against the reference (rtol 1e-6). It also
reports the achieved memory bandwidth of the fused gradient (bytes of its inputs and
outputs over its time, a lower bound on what the kernels move) against the device's copy
bandwidth (a large device-to-device copy).

A problem or peer that fails is reported in the table with its error, and the run goes on.
The table is written to benchmarks/GPU.md (with the device, the versions and the commit),
which `python -m benchmarks` copies into BENCHMARKS.md's GPU section. Without a CUDA
device it says so, writes nothing and exits 0: CI never has one.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import numpy as np

import srcgrad

from . import report as _report
from .impls import version, with_numpy
from .problems import get

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "GPU.md")

GPU_SIZES = {
    "poly": {"n": 10_000_000},
    "rosenbrock": {"n": 10_000_000},
    "chain": {"n": 10_000_000},
    "mlp": {"batch": 4096, "d_in": 784, "d_hidden": 256, "d_out": 10},
    "rnn": {"T": 50, "batch": 1024, "d_in": 32, "d_hidden": 32},
}
BANDWIDTH_PROBLEMS = ("poly", "rosenbrock", "chain")


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


def _check(cp, got, ref, what):
    for a, b in zip(_flat(got), ref, strict=True):
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=1e-6, atol=1e-9,
                                   err_msg=what)


def _error(e) -> str:
    return f"FAIL ({type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})"


def device_name(cp) -> str:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def run(repeats=20, names=None):
    cp = _cupy()
    if cp is None:
        print("benchmarks.gpu: no CUDA device here; nothing to measure")
        return None
    rows = []
    copy_bw = _copy_bandwidth(cp)
    for name, size in GPU_SIZES.items():
        if names and name not in names:
            continue
        row = {"problem": name}
        rows.append(row)
        try:
            _problem_row(cp, get(name), size, repeats, row, copy_bw)
        except Exception as e:  # say what failed, measure the rest
            traceback.print_exc()
            row["error"] = _error(e)
        print(row, flush=True)
    return rows, copy_bw


def _problem_row(cp, prob, size, repeats, row, copy_bw):
    host = prob.module.make_inputs(np.random.default_rng(0), **size)
    args = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
    hands = {label: with_numpy(f, cp) for label, f in prob.hand_variants.items()}
    ref = _flat(hands[""](*args))
    t_hands = {}
    for label, h in hands.items():
        try:
            _check(cp, h(*args), ref, f"hand-written {label}")
            t_hands[label] = _time(cp, lambda h=h: h(*args), repeats)
        except Exception as e:  # a variant numpy-only in some call: left out, said
            row.setdefault("notes", []).append(f"hand ({label or 'default'}): {_error(e)}")
    best = min(t_hands, key=t_hands.get)
    t_hand = row["hand"] = t_hands[best]
    row["hand_label"] = best
    fused = srcgrad.grad(prob.loss, wrt=prob.wrt, cache=False)
    unfused = srcgrad.grad(prob.loss, wrt=prob.wrt, cache=False, fuse=False)
    for key, f in (("fused", fused), ("unfused", unfused)):
        try:
            for _ in range(srcgrad.specialize.HOT_CALLS + 1):  # (what repeated calls run:
                f(*args)                                        # the specialized variant)
            _check(cp, f(*args), ref, key)
            row[key] = _time(cp, lambda f=f: f(*args), repeats) / t_hand
        except Exception as e:
            traceback.print_exc()
            row[key] = _error(e)
    row.update(_peers(cp, prob, host, repeats, t_hand, ref))
    if prob.name in BANDWIDTH_PROBLEMS and isinstance(row["fused"], float):
        outs = _flat(fused(*args))
        moved = sum(a.nbytes for a in args if hasattr(a, "nbytes")) + \
            sum(o.nbytes for o in outs)
        row["bandwidth"] = moved / (row["fused"] * t_hand) / copy_bw


def _peers(cp, prob, host, repeats, t_hand, ref):
    out = {}
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA in torch")
        loss_t = prob.module.make_torch_loss(torch)
        targs = [torch.tensor(a, device="cuda") if isinstance(a, np.ndarray) else a
                 for a in host]
        idx = prob.wrt_index

        def torch_grad():
            leaves = [t.detach().requires_grad_(i in idx) if hasattr(t, "detach") else t
                      for i, t in enumerate(targs)]
            loss_t(*leaves).backward()
            return tuple(leaves[i].grad for i in idx)

        _check(cp, tuple(cp.asarray(g) for g in torch_grad()), ref, "torch")
        out["torch"] = _time(cp, lambda: (torch_grad(), torch.cuda.synchronize()),
                             repeats) / t_hand
    except Exception as e:  # the peer is optional; say why it is missing
        out["torch"] = f"n/a ({type(e).__name__}: {str(e)[:60]})"
    try:
        from .impls import jax_module

        jax = jax_module()
        import jax.numpy as jnp

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if not gpus:
            raise RuntimeError("no GPU in jax")
        g = jax.jit(jax.grad(with_numpy(prob.loss, jnp), argnums=prob.wrt_index))
        jargs = tuple(jax.device_put(a, gpus[0]) for a in host)
        _check(cp, tuple(cp.asarray(np.asarray(v)) for v in g(*jargs)), ref, "jax")
        out["jax"] = _time(cp, lambda: jax.block_until_ready(g(*jargs)), repeats) / t_hand
    except Exception as e:
        out["jax"] = f"n/a ({type(e).__name__}: {str(e)[:60]})"
    return out


def _ratio(v):
    return f"{v:.2f}x" if isinstance(v, float) else (v or "n/a")


def report(rows, copy_bw, device="") -> str:
    lines = [f"device: {device}" if device else "",
             f"device copy bandwidth: {copy_bw / 1e9:.0f} GB/s", "",
             "| problem | hand-written (cupy) | srcgrad fused | srcgrad unfused | PyTorch CUDA | "
             "JAX jit | fused bandwidth / copy |", "|---|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['problem']} | {r['error']} | | | | | |")
            continue
        hand = f"{r['hand'] * 1e3:.2f} ms"
        if r.get("hand_label"):
            hand += f" ({r['hand_label']})"
        bw = f"{r['bandwidth']:.0%}" if "bandwidth" in r else ""
        lines.append(f"| {r['problem']} | {hand} | {_ratio(r.get('fused'))} | "
                     f"{_ratio(r.get('unfused'))} | {_ratio(r.get('torch'))} | "
                     f"{_ratio(r.get('jax'))} | {bw} |")
        notes += [f"- {r['problem']}: {n}" for n in r.get("notes", [])]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default=DEFAULT_OUT,
                    help="Markdown output file (default benchmarks/GPU.md; '' writes nothing)")
    ap.add_argument("problems", nargs="*", help="only these problems (default: all)")
    a = ap.parse_args(argv)
    # JAX takes most of the device's memory at its first use unless told not to
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    result = run(a.repeats, a.problems)
    if result is None:
        return 0
    cp = _cupy()
    text = report(*result, device=device_name(cp))
    print(text)
    if a.out:
        # (the commit from the environment where the tree was copied without its history)
        commit = os.environ.get("SRCGRAD_COMMIT") or _report._revision()
        peers = ", ".join(f"{k} {version(k)}" for k in ("jax", "torch"))
        with open(a.out, "w") as f:
            f.write("# srcgrad on the GPU\n\n"
                    f"Generated by `python -m benchmarks.gpu` on {time.strftime('%Y-%m-%d')}"
                    f", commit {commit}; cupy {cp.__version__}, numpy {np.__version__}, "
                    f"{peers}. Times are medians of {a.repeats} device-synchronized calls, "
                    "float64; ratios are to the fastest hand-written gradient run on cupy, "
                    "in the same run (lower is better).\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
