"""Command line (`srcgrad ...` once installed, or `python -m srcgrad ...`):

    srcgrad show path/to/file.py:func [--wrt x,y] [--ir] [--mode M]
    srcgrad ops [NAME ...]
    srcgrad cache info | clear | prune
    srcgrad --version
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys


def _load(target: str):
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"error: expected path/to/file.py:function, got {target!r}")
    if not os.path.exists(path):
        raise SystemExit(f"error: no such file: {path}")
    modname = "srcgrad_cli_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"error: {path} has no function {name!r}")
        obj = getattr(obj, part)
    return obj


def _wrt(text):
    if text is None:
        return 0
    items = [int(t) if t.strip().lstrip("-").isdigit() else t.strip()
             for t in text.split(",") if t.strip()]
    return tuple(items) if len(items) > 1 else items[0]


def _pick(rows, names) -> list:
    """The rows `names` asks for (np.tanh, tanh, ndarray.sum...); a name with none gets a
    line saying so, with the closest supported spellings."""
    import difflib

    want = set(names)
    picked = [r for r in rows if r[0] in want or r[0].rsplit(".", 1)[-1] in want or
              any(r[0].endswith("." + w) for w in want)]
    for n in names:
        if any(n in r or r[0].endswith("." + n) for r in picked):
            continue
        close = difflib.get_close_matches(n.rsplit(".", 1)[-1], [r[1] for r in rows], 3)
        hint = f"; closest supported: {', '.join(close)}" if close else ""
        print(f"{n}: not differentiated by srcgrad{hint}")
    return picked


def _orders(prim) -> str:
    """Which derivative orders the op's rules give."""
    if prim is None:
        return "all orders (made of ops)"
    if prim.vjps and prim.jvp is not None:
        return "all orders"
    if not callable(prim.zero_grad) and prim.declares_zero((), {}):
        return "zero derivative"
    return "first order"


def _ops(names) -> int:
    """List the numpy functions and array methods srcgrad differentiates: for each, the
    op of the same name where there is one, whether its rules give every derivative order
    (a VJP and a JVP rule written with ops), and its documented convention."""
    from runtime.ops import PRIMITIVES
    from runtime.ops.numpy_api import METHODS, OP_NAMES, public_names

    found = public_names(scipy=True)  # scipy's spellings too, where it is installed
    rows = [(n, OP_NAMES.get(n) or getattr(found[n], "__name__", n.rsplit(".", 1)[-1]))
            for n in sorted(found)]
    rows += [(f"ndarray.{m}", m) for m in sorted(METHODS)]
    if names:
        rows = _pick(rows, names)
    width = max((len(r[0]) for r in rows), default=0)
    for public, short in rows:
        prim = PRIMITIVES.get(short)
        note = f"  [{prim.convention}]" if prim is not None and prim.convention else ""
        print(f"{public:<{width}}  {_orders(prim)}{note}")
    if not names:
        np_names = [n for n in found if not n.startswith("scipy.")]
        sp_names = [n for n in found if n.startswith("scipy.")]
        print(f"\n{len({id(found[n]) for n in np_names})} numpy callables "
              f"({len(np_names)} names) and {len(METHODS)} array methods"
              + (f"; {len(sp_names)} scipy functions" if sp_names else ""))
    return 0 if not names or rows else 1


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def _cache(action: str) -> int:
    """`srcgrad cache info|clear|prune`: the disk cache's location and contents, emptying
    it, or deleting its stale entries (and enforcing the size cap)."""
    from . import cache

    d = cache.cache_dir()
    if d is None:
        print("the disk cache is off (SRCGRAD_CACHE_DIR is set to the empty string)")
        return 0
    if action == "clear":
        n = cache.clear()
        print(f"removed {n} file{'s' * (n != 1)} from {d}")
        return 0
    if action == "prune":
        done = cache.prune(stale=True)
        print(f"removed {done['removed']} entr{'y' if done['removed'] == 1 else 'ies'} "
              f"({_size(done['freed'])}) from {d}")
        return 0
    found = cache.info()
    cap = found["max_bytes"]
    print(f"location: {d}")
    if not os.path.isdir(d):
        state = "not created yet"
    elif not found["usable"]:
        state = "not used: not a private directory of this user's (chmod 700 it)"
    else:
        state = "in use"
    print(f"state:    {state}")
    print(f"entries:  {found['entries']}"
          + (f" ({found['stale']} stale: from another srcgrad version or build)"
             if found["stale"] else ""))
    print(f"size:     {_size(found['bytes'])} ({found['bytes']} bytes)")
    print("cap:      " + ("none (SRCGRAD_CACHE_MAX_MB=0)" if cap is None else
                          f"{_size(cap)} (SRCGRAD_CACHE_MAX_MB; stale, then least recently "
                          "used entries are pruned beyond it)"))
    return 0


def main(argv=None) -> int:
    from . import __version__, api
    from .errors import SrcgradError

    parser = argparse.ArgumentParser(prog="srcgrad",
                                     description="Show the gradient code srcgrad generates, "
                                     "the numpy functions it differentiates, and its disk "
                                     "cache.")
    parser.add_argument("--version", action="version", version=f"srcgrad {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated source of a function's gradient")
    show.add_argument("target", help="path/to/file.py:function")
    show.add_argument("--wrt", help="parameter names or indices, comma separated (default 0)")
    show.add_argument("--ir", action="store_true", help="print the IR graph instead")
    show.add_argument("--mode", default="grad",
                      choices=["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian",
                               "jacobian"])
    ops = sub.add_parser("ops", help="list the numpy functions srcgrad differentiates")
    ops.add_argument("names", nargs="*", help="only these (np.tanh, tanh, ndarray.sum...)")
    cache = sub.add_parser("cache", help="the disk cache of generated code: info, clear, "
                           "prune")
    cache.add_argument("action", choices=["info", "clear", "prune"],
                       help="info: location, entries and size; clear: delete every entry; "
                       "prune: delete the stale entries (another srcgrad version or build) "
                       "and enforce the size cap")
    args = parser.parse_args(argv)
    if args.command == "ops":
        return _ops(args.names)
    if args.command == "cache":
        return _cache(args.action)
    fn = _load(args.target)
    if isinstance(fn, api.CompiledFunction):
        if args.wrt is None and args.mode == fn.kind:
            api.show(fn, ir=args.ir)
            return 0
        fn = fn.fun
    try:
        api.show(fn, args.mode, wrt=_wrt(args.wrt), ir=args.ir)
    except SrcgradError as e:
        print(f"srcgrad: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
