"""Command line: `python -m srcgrad show path/to/file.py:func [--wrt x,y] [--ir] [--mode M]`."""
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


def main(argv=None) -> int:
    from . import api
    from .errors import SrcgradError

    parser = argparse.ArgumentParser(prog="python -m srcgrad",
                                     description="Show the gradient code srcgrad generates.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated source of a function's gradient")
    show.add_argument("target", help="path/to/file.py:function")
    show.add_argument("--wrt", help="parameter names or indices, comma separated (default 0)")
    show.add_argument("--ir", action="store_true", help="print the IR graph instead")
    show.add_argument("--mode", default="grad",
                      choices=["grad", "value_and_grad", "vjp", "jvp", "hvp"])
    args = parser.parse_args(argv)
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
