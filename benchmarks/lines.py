"""Line timing of srcgrad's generated gradient: where a call spends its time.

    python -m benchmarks.lines poly large          # the costliest lines
    python -m benchmarks.lines rnn small --all     # every line, in source order

Each simple statement of the generated function (at any depth inside its loops) is
wrapped in `perf_counter()` calls; the instrumented copy runs in the generated module's
namespace on the problem's inputs. The wrapping adds ~0.1 µs a statement, so at small
sizes the shares are indicative only; the uninstrumented call time is printed beside.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from collections import defaultdict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Delete, ast.Return)


class _Instrument(ast.NodeTransformer):
    def _wrap(self, stmt):
        n = stmt.lineno
        start = ast.parse("__t0 = __pc()").body[0]
        stop = ast.parse(f"__acc[{n}] += __pc() - __t0; __cnt[{n}] += 1").body
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            tmp = ast.Assign(targets=[ast.Name("__r", ast.Store())], value=stmt.value)
            return [start, tmp] + stop + [ast.Return(ast.Name("__r", ast.Load()))]
        return [start, stmt] + stop

    def _body(self, body):
        out = []
        for s in body:
            if isinstance(s, _SIMPLE):
                out.extend(self._wrap(s))
            else:
                out.append(self.visit(s))
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, self._body(getattr(node, field)))
        return node


def line_times(g, args, calls: int = 20):
    """{line number: (seconds per call, executions per call)} and the source lines."""
    src = g.source
    impl = g._impl
    tree = ast.parse(src)
    fn = next(n for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name == impl.__name__)
    fn.body = _Instrument()._body(fn.body)
    mod = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(mod)
    acc, cnt = defaultdict(float), defaultdict(int)
    ns = dict(impl.__globals__)
    ns.update(__pc=time.perf_counter, __acc=acc, __cnt=cnt)
    exec(compile(mod, "<instrumented>", "exec"), ns)
    f = ns[impl.__name__]
    f(*args)
    acc.clear()
    cnt.clear()
    for _ in range(calls):
        f(*args)
    per_call = {n: (acc[n] / calls, cnt[n] / calls) for n in acc}
    return per_call, src.splitlines()


def main(argv=None):
    import srcgrad

    from benchmarks import problems
    from benchmarks.timing import compare

    ap = argparse.ArgumentParser(prog="python -m benchmarks.lines")
    ap.add_argument("problem", choices=problems.NAMES)
    ap.add_argument("size", choices=("tiny", "small", "large"))
    ap.add_argument("--all", action="store_true", help="every line, in source order")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    os.environ["SRCGRAD_CACHE_DIR"] = ""      # what the current compiler generates
    p = problems.get(a.problem)
    args = p.inputs(a.size)
    g = srcgrad.grad(p.loss, wrt=p.wrt)
    g(*args)
    t = compare({"generated": lambda: g._impl(*args)}, 5, 0.05)["generated"]
    per_call, lines = line_times(g, args, calls=5 if a.size == "large" else 200)
    total = sum(s for s, _ in per_call.values())
    print(f"{p.name} {a.size} ({p.describe(a.size)}): generated call {t * 1e6:.1f} µs; "
          f"sum of instrumented lines {total * 1e6:.1f} µs")
    order = sorted(per_call) if a.all else sorted(per_call, key=lambda n: -per_call[n][0])[
        :a.top]
    for n in order:
        s, c = per_call[n]
        print(f"{s * 1e6:10.1f} µs {100 * s / total:5.1f}%  x{c:<4g} {n:4d}  "
              f"{lines[n - 1].strip()}")


if __name__ == "__main__":
    main()
