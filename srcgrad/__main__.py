"""Command line:

    python -m srcgrad show path/to/file.py:func [--wrt x,y] [--ir] [--mode M]
    python -m srcgrad ops [NAME ...]      (also `srcgrad ops` once installed)
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
        import difflib

        want = set(names)
        picked = [r for r in rows if r[0] in want or r[0].rsplit(".", 1)[-1] in want or
                  any(r[0].endswith("." + w) for w in want)]
        missing = [n for n in names if not any(n in r or r[0].endswith("." + n)
                                               for r in picked)]
        for n in missing:
            close = difflib.get_close_matches(n.rsplit(".", 1)[-1], [r[1] for r in rows], 3)
            hint = f"; closest supported: {', '.join(close)}" if close else ""
            print(f"{n}: not differentiated by srcgrad{hint}")
        rows = picked
    width = max((len(r[0]) for r in rows), default=0)
    for public, short in rows:
        prim = PRIMITIVES.get(short)
        if prim is None:
            orders = "all orders (made of ops)"
        elif prim.vjps and prim.jvp is not None:
            orders = "all orders"
        elif prim.declares_zero((), {}) if not callable(prim.zero_grad) else False:
            orders = "zero derivative"
        else:
            orders = "first order"
        note = f"  [{prim.convention}]" if prim is not None and prim.convention else ""
        print(f"{public:<{width}}  {orders}{note}")
    if not names:
        np_names = [n for n in found if not n.startswith("scipy.")]
        sp_names = [n for n in found if n.startswith("scipy.")]
        print(f"\n{len({id(found[n]) for n in np_names})} numpy callables "
              f"({len(np_names)} names) and {len(METHODS)} array methods"
              + (f"; {len(sp_names)} scipy functions" if sp_names else ""))
    return 0 if not names or rows else 1


def main(argv=None) -> int:
    from . import api
    from .errors import SrcgradError

    parser = argparse.ArgumentParser(prog="python -m srcgrad",
                                     description="Show the gradient code srcgrad generates, "
                                     "and the numpy functions it differentiates.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated source of a function's gradient")
    show.add_argument("target", help="path/to/file.py:function")
    show.add_argument("--wrt", help="parameter names or indices, comma separated (default 0)")
    show.add_argument("--ir", action="store_true", help="print the IR graph instead")
    show.add_argument("--mode", default="grad",
                      choices=["grad", "value_and_grad", "vjp", "jvp", "hvp"])
    ops = sub.add_parser("ops", help="list the numpy functions srcgrad differentiates")
    ops.add_argument("names", nargs="*", help="only these (np.tanh, tanh, ndarray.sum...)")
    args = parser.parse_args(argv)
    if args.command == "ops":
        return _ops(args.names)
    fn = _load(args.target)
    if isinstance(fn, api._CompiledBase):
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
