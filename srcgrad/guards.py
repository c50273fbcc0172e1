"""What compiled code read at compile time from outside the function, and the guards that
keep it true.

A gradient depends on more than its arguments: a module-level number (`SCALE`), a config
dict (`CFG["lr"]`), a helper reached as `mylib.f`, an object's attribute (`model.W`). The
lowerer reads these when it compiles, and records every read in a `Reads` as a
`scopes.Path` from the namespace it came from (a module's globals, or a closure cell):

- an array is never embedded: generated code reads it through its path at every call
  (`model_globals['params']['W1']`), so a rebound or mutated array is what the next call
  sees;
- anything else read at compile time gets a guard: a snapshot of the value (numbers and
  strings by type and value, lists/tuples/dicts item by item, functions, modules, objects
  by identity, a builtin name by its absence from the globals). Before each call the
  compiled function checks its guards (`make_check`); if one fails, the function is
  compiled again. The disk cache stores the same guards as fingerprints that another
  process can check (`fingerprint`, `describe`, `validate`).

Attributes of library modules (numpy, math, scipy...) are taken as fixed: `np.sin` is
not guarded, only that `np` still names numpy.
"""
from __future__ import annotations

import array
import enum
import hashlib
import math
import types

import numpy

from .scopes import Path, describe as describe_scope, resolve as resolve_scope

__all__ = ["Reads", "make_check", "fingerprint", "describe", "validate"]

_ATOMS = (bool, int, float, complex, str, bytes, type(None), range)
_LIBRARIES = frozenset({"numpy", "math", "cmath", "builtins", "scipy", "srcgrad", "runtime",
                        "cupy", "functools", "operator", "itertools", "collections"})
_MAX_DEPTH = 8
ABSENT = ("absent",)  # the snapshot of a builtin's name: absent from the globals
NOATTR = ("noattr",)  # the snapshot of an attribute the object has not (hasattr was False)


def _key_ok(k) -> bool:
    """Whether `k` can be an item step of a path (its repr is its source)."""
    if isinstance(k, tuple):
        return all(_key_ok(x) for x in k)
    if type(k) is float:
        return k == k and abs(k) != float("inf")  # its repr is its source
    return type(k) in (str, int, bool, type(None), bytes)


def is_library_module(obj) -> bool:
    return isinstance(obj, types.ModuleType) and \
        str(getattr(obj, "__name__", "")).split(".")[0] in _LIBRARIES


class Reads:
    """The reads of one compilation: where each object came from, and the guards."""

    def __init__(self):
        self.origins: dict[int, tuple] = {}  # id(obj) -> (Path, obj): keeps obj alive
        self.guards: dict[tuple, tuple] = {}  # key -> (Path, snapshot)
        self.arrays: dict[tuple, object] = {}  # Path.key -> the Var generated code reads
        self.seen: dict[int, dict] = {}  # id of an array -> {Path.key: Path} it was found at
        # what statements that run as written change at every call (srcgrad.verbatim):
        # nothing at or under these paths may be read at compile time
        self.changing: dict[tuple, Path] = {}
        self.deep: dict[int, object] = {}  # id -> a container guarded from its own path
        self.changing_objects: dict[int, tuple] = {}  # id -> (Path, obj) of those
        # whether the code compiled depends on which object a value is (`mode is TRAIN`,
        # a dict keyed by objects): another process's objects are others, so the disk
        # cache neither keeps nor loads this compilation
        self.by_identity = False

    def _found(self, path: Path, v):
        """Note where array `v` was found; it is read through its first path."""
        if isinstance(v, numpy.ndarray):
            self.seen.setdefault(id(v), {})[path.key] = path
        self.origins.setdefault(id(v), (path, v))

    def final_guards(self) -> dict:
        """The guards; an array found at two paths (`W` in two containers) is read through
        one of them, so both must keep holding that very array: guarded by identity."""
        out = dict(self.guards)
        for vid, paths in self.seen.items():
            if len(paths) > 1:
                arr = self.origins[vid][1]
                for key, path in paths.items():
                    out[key] = (path, ("is", arr))
        return out

    def changed(self, path: Path, obj=ABSENT):
        """A statement that runs as written changes the value at `path` (the object
        `obj`, where known) at every call: refuse if the compilation has read it (or
        something in it) at compile time, by that path or another (`lg.log` and
        `sched.items` one list), and refuse such reads from now on."""
        paths = [path]
        if _mutable(obj):
            found = self.origins.get(id(obj))
            if found is not None and found[1] is obj and found[0].key != path.key:
                paths.append(found[0])  # (the path it was first read at)
            self.changing_objects[id(obj)] = (path, obj)
        for p in paths:
            for key, var in self.arrays.items():
                if _under(var.const_value, p) and not isinstance(obj, numpy.ndarray):
                    raise TypeError(_changed_msg(path, var.const_value, before=True))
                guard = self.guards.get(key)
                is_array = guard is not None and guard[1][0] == "type"  # (see `array`)
                if is_array and (_under(p, var.const_value) or _under(var.const_value, p)):
                    # (`enc.W[0] = v` after a use of enc.W, or of the same array by another
                    # name: the array is read at every call, but its old values are gone)
                    raise TypeError(
                        f"a statement that runs as written changes `{path.text()}` at every "
                        f"call, the array the function read as `{var.const_value.text()}` "
                        "before it: changed in place, the gradient would read the new "
                        "values where the function used the old ones. Change a copy, or "
                        "make the change before the array is first used")
            for gpath, snap in self.guards.values():
                if _under(gpath, p) or (_under(p, gpath) and snap[0] in _CONTENTS):
                    raise TypeError(_changed_msg(path, gpath, before=True))
        self.changing[path.key] = path

    def _check_alias(self, path: Path, *objs):
        """Refuse a compile-time read at `path` of (or in) an object a statement run as
        written changes, reached by another path."""
        for obj in objs:
            found = self.changing_objects.get(id(obj))
            if found is not None and found[1] is obj and found[0].key != path.key:
                raise TypeError(_changed_msg(found[0], path, before=False))

    def _check(self, path: Path, snap=None):
        """Refuse a compile-time read of `path` (whose snapshot is `snap`) that a
        statement run as written has changed."""
        for d in self.changing.values():
            if _under(path, d) or (snap is not None and snap[0] in _CONTENTS and
                                   _under(d, path)):
                raise TypeError(_changed_msg(d, path, before=False))

    def _guard(self, path: Path, snap):
        self._check(path, snap)
        self.guards.setdefault(path.key, (path, snap))

    def runtime(self, path: Path, value):
        """The Var a statement that runs as written reads `value` (not an array) into:
        read through its path at every call, not guarded."""
        self._found(path, value)
        return self._read_var(path)

    def array(self, path: Path, value):
        """The Var generated code reads the array `value` at `path` into, at every call
        (guarded to stay an array of its type)."""
        self._check(path)
        self.guards.setdefault(path.key, (path, ("type", type(value))))
        self._found(path, value)
        return self._read_var(path)

    def _read_var(self, path: Path):
        from .ir import Var

        var = self.arrays.get(path.key)
        if var is None:
            var = Var(_hint(path), "array")
            var.const_name, var.const_value = var.hint, path
            self.arrays[path.key] = var
        return var

    def as_var(self, v):
        """`v`, or the Var of the user's array it is (found where it was read)."""
        path = self.path_of(v)
        return v if path is None else self.array(path, v)

    def path_of(self, obj) -> "Path | None":
        found = self.origins.get(id(obj))
        return None if found is None or found[1] is not obj else found[0]

    def root(self, path: Path, value):
        """`value`, read as `path.name` from its namespace."""
        self._check(path)
        self._guard(path, self.snapshot(value, path))
        return value

    def builtin(self, path: Path):
        """A builtin found because the namespace has no such name: it must stay absent."""
        self.guards.setdefault(("absent",) + path.key, (path, ABSENT))

    def absent_attr(self, obj, name: str):
        """`obj` has no attribute `name` (`hasattr(obj, name)` was False, `getattr` gave
        its default): it must keep having none, or the code is compiled again."""
        base = self.path_of(obj)
        if base is None or is_library_module(obj):
            return
        path = base.child("attr", name)
        self._check(path)
        self.guards.setdefault(("noattr",) + path.key, (path, NOATTR))

    def attr(self, obj, name: str, value):
        """`value`, read as `obj.name`."""
        base = self.path_of(obj)
        if base is None and _followed(obj):
            raise TypeError(
                f"srcgrad reads `.{name}` of a {type(obj).__name__} object it cannot find "
                "again at the next call (a dict's key or a set's item, say), so it could "
                "not notice a change: pass the value, or reach the object by a name, an "
                "attribute or an index")
        if base is None or is_library_module(obj):
            return value
        if type(obj) in (list, tuple, dict, set) or isinstance(obj, numpy.ndarray):
            return value  # a method of a container: its snapshot covers the contents
        path = base.child("attr", name)
        self._check_alias(path, obj, value)
        self._check(path)
        self._guard(path, self.snapshot(value, path))
        return value

    def item(self, obj, key, value):
        """`value`, read as `obj[key]` with a constant key."""
        base = self.path_of(obj)
        if base is None:
            return value
        self._check_alias(base, obj)
        if type(obj) in (list, tuple) and isinstance(key, slice):
            for j, i in enumerate(range(*key.indices(len(obj)))):  # the same objects
                self._found(base.child("item", i), value[j])
            return value
        if not _key_ok(key):
            if type(value) in _ATOMS or isinstance(value, numpy.generic):
                return value  # covered by the container's snapshot
            raise TypeError(f"srcgrad cannot follow the item {key!r} of a "
                            f"{type(obj).__name__} read from outside the function (its "
                            "arrays must be read at every call): use str, int or float keys")
        path = base.child("item", key)
        self._check(path)
        if type(obj) in (list, tuple, dict):  # the container's snapshot covers its items
            self._found(path, value)
        else:
            self._guard(path, self.snapshot(value, path))
        return value

    def snapshot(self, v, path: "Path | None", depth: int = 0):
        """What `make_check` compares `v` with; registers where the objects in it are.

        (Complexity about 27: one case per kind of Python value, side by side.)"""
        t = type(v)
        if t in _ATOMS or isinstance(v, numpy.generic):
            return ("=", v)
        if path is not None:
            self._found(path, v)
            if isinstance(v, numpy.ndarray):  # read at every call: only its type is fixed
                return ("type", t)
        if t in (list, tuple, dict) and depth >= _MAX_DEPTH and path is not None and \
                id(v) not in self.deep:
            # (nested deeper than a snapshot goes: a guard of its own, from here down, so
            # that `CFG[0]...[0] = 5.0` nine levels down is still seen; each container once,
            # a list that holds itself included)
            self.deep[id(v)] = v
            self._guard(path, self.snapshot(v, path))
            return ("is", v)
        if t in (list, tuple) and depth < _MAX_DEPTH:
            if all(type(x) in _ATOMS for x in v):
                # (0.0 == -0.0: the signs of its zeros are compared too, where it has any)
                zeros = tuple((i, z) for i, x in enumerate(v)
                              if (z := _zero_signs(x)) is not None)
                if zeros and all(type(x) is float for x in v):  # (their bits: one compare)
                    zeros = ("bits", array.array("d", v).tobytes())
                return ("atoms", t, tuple(v), tuple(map(type, v))) + ((zeros,) if zeros else ())
            return ("seq", t, tuple(self.snapshot(x, None if path is None else
                                                  path.child("item", i), depth + 1)
                                    for i, x in enumerate(v)))
        if t is dict and depth < _MAX_DEPTH:
            for k, x in v.items():
                if path is not None and not _key_ok(k) and not (
                        type(x) in _ATOMS or isinstance(x, numpy.generic)):
                    raise TypeError(f"srcgrad cannot follow the item {k!r} of a dict read "
                                    "from outside the function (its arrays must be read at "
                                    "every call): use str, int or float keys")
            return ("map", tuple((k, self.snapshot(
                x, path.child("item", k) if path is not None and _key_ok(k) else None,
                depth + 1)) for k, x in v.items()))
        if t in (set, frozenset) and all(_atomic(x) for x in v):
            # (a zero's sign is not seen by a set's ==: its items' reprs are compared too)
            signed = any(_zero_signs(y) for x in v for y in (x if type(x) is tuple else (x,)))
            return ("atoms", t, frozenset(v), frozenset(map(repr, v)) if signed else None)
        if isinstance(v, types.MethodType):
            return ("method", v.__func__, v.__self__, _code_of(v.__func__))
        if isinstance(v, types.FunctionType):  # its code and defaults were compiled in
            return ("fn", v) + _code_of(v)
        if isinstance(v, types.BuiltinMethodType) and \
                not isinstance(getattr(v, "__self__", None), (types.ModuleType, type(None))):
            return ("method", v.__name__, v.__self__)
        return ("is", v)


_CONTENTS = ("atoms", "seq", "map")  # snapshots that cover what a container holds


def _code_of(fn) -> tuple:
    """What of a Python function its compiled caller took as it was: the code (replaced
    in place by a reload: `f.__code__ = ...`) and the default values."""
    return (getattr(fn, "__code__", None), getattr(fn, "__defaults__", None),
            getattr(fn, "__kwdefaults__", None))


def _same_code(fn, code: tuple) -> bool:
    return getattr(fn, "__code__", None) is code[0] and \
        getattr(fn, "__defaults__", None) is code[1] and \
        getattr(fn, "__kwdefaults__", None) is code[2]


def _under(p: Path, q: Path) -> bool:
    """Is `p` at or under `q` (`q`, or reached from it through attributes/items)?"""
    return p.scope.key == q.scope.key and p.name == q.name and \
        p.steps[:len(q.steps)] == q.steps


def _changed_msg(changed: Path, read: Path, before: bool) -> str:
    when = "before" if before else "after"
    return (f"the function reads `{read.text()}` when srcgrad compiles it, {when} a statement "
            f"that runs as written changes `{changed.text()}` at every call: the value read "
            "would be stale (or the function compiled again at each call). Pass the value "
            "as an argument, or read it in a statement that runs as written")


def _hint(path: Path) -> str:
    hint = path.name
    for kind, key in path.steps:
        hint = key if kind == "attr" or isinstance(key, str) else f"{hint}_{key}"
    hint = "".join(c if c.isalnum() or c == "_" else "_" for c in str(hint))
    if not hint or hint[0].isdigit():
        hint = "a_" + hint
    return hint


def _followed(obj) -> bool:
    """An object whose attributes srcgrad guards by its path: an instance of a class of
    the user's (or of a library's written in Python), not a module, class, function or
    value of the builtins or numpy."""
    t = type(obj)
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.MethodType,
                        enum.Enum, numpy.ndarray, numpy.generic, numpy.dtype, tuple)):
        return False  # (a namedtuple's fields are its items: fixed)
    mod = str(getattr(t, "__module__", ""))
    return mod not in ("builtins", "functools", "types") and \
        not mod.startswith(("numpy", "srcgrad", "runtime", "scipy"))


def _mutable(v) -> bool:
    """A value a statement can change in place (not an atom, a tuple or a function)."""
    return v is not ABSENT and type(v) not in _ATOMS and not isinstance(
        v, (tuple, frozenset, types.FunctionType, types.ModuleType, type, numpy.generic))


def _atomic(v) -> bool:
    """An atom, or a tuple of them (a set of (i, j) pairs is compared by value)."""
    return type(v) in _ATOMS or (type(v) is tuple and all(type(x) in _ATOMS for x in v))


def _zero_signs(v):
    """The signs of a number's zero parts, or None where it has none: 0.0 == -0.0, but
    1 / x, arctan2, copysign and a log's branch tell them apart, so a guard that compares
    a float (or complex) with `==` also compares these."""
    if isinstance(v, (float, numpy.floating)):
        parts = (v,)
    elif isinstance(v, (complex, numpy.complexfloating)):
        parts = (v.real, v.imag)
    else:
        return None
    if not any(p == 0 for p in parts):
        return None
    return tuple(math.copysign(1.0, p) for p in parts)


def _is_nan(v) -> bool:
    try:
        return bool(v != v)
    except Exception:
        return False


def matches(v, snap) -> bool:
    """Whether `v` is still what `snap` recorded."""
    kind = snap[0]
    if kind == "is":
        return v is snap[1]
    if kind == "type":
        return type(v) is snap[1]
    if kind == "=":
        if _is_nan(snap[1]):
            return type(v) is type(snap[1]) and bool(v != v)
        return type(v) is type(snap[1]) and bool(v == snap[1]) and \
            _zero_signs(v) == _zero_signs(snap[1])
    if kind == "atoms":
        _, t, values, kinds = snap[:4]
        if type(v) is not t:
            return False
        if len(snap) > 4:  # (its zeros' signs: see `snapshot`)
            zeros = snap[4]
            return tuple(v) == values and tuple(map(type, v)) == kinds and (
                array.array("d", v).tobytes() == zeros[1] if zeros[0] == "bits" else
                all(_zero_signs(v[i]) == z for i, z in zeros))
        if kinds is None:
            return frozenset(v) == values
        if isinstance(kinds, frozenset):  # (a set with a signed zero: see `snapshot`)
            return frozenset(v) == values and frozenset(map(repr, v)) == kinds
        return tuple(v) == values and tuple(map(type, v)) == kinds
    if kind == "seq":
        _, t, items = snap
        return type(v) is t and len(v) == len(items) and \
            all(matches(x, s) for x, s in zip(v, items))
    if kind == "map":  # keys in order: iterating over the dict follows it
        items = snap[1]
        return type(v) is dict and tuple(v) == tuple(k for k, _ in items) and \
            all(matches(v[k], s) for k, s in items)
    if kind == "fn":
        return v is snap[1] and _same_code(v, snap[2:])
    if kind == "method":
        if isinstance(v, types.MethodType):
            return v.__func__ is snap[1] and v.__self__ is snap[2] and \
                _same_code(v.__func__, snap[3])
        return getattr(v, "__name__", None) == snap[1] and \
            getattr(v, "__self__", None) is snap[2]
    raise AssertionError(f"unknown guard {kind!r}")


def make_check(guards, fun=None, obj=None, func=None):
    """A function of no arguments: whether every guard still holds (False also when a
    value is gone). None when there is nothing to check.

    `guards` is a list of (Path, snapshot). `fun`: also false once its code or default
    argument values are replaced (its `__code__`, as a reload does, or its `__defaults__`
    or `__kwdefaults__` set anew: the compiled code took them as they were). `obj` and
    `func`: also false once `obj`'s class (or its `__call__`) is not what it was: the
    compiled code is that of `func`, the `__call__` that `obj(x)` ran then.

    The check is one generated Python function, run before each call: a path is read as
    generated code reads it, and compared with `is` and `==` inline (a dict of numbers
    costs a few attribute-free comparisons per call, not a walk)."""
    env: dict = {"_matches": matches, "_same_code": _same_code}
    terms = []
    fn = getattr(fun, "__func__", fun)
    code = _code_of(fn) if fun is not None else (None,)
    if code[0] is not None:
        env.update(F=fn, C=code[0], D=code[1], K=code[2], CODE=code)
        terms += ["F.__code__ is C", "F.__defaults__ is D", "F.__kwdefaults__ is K"] \
            if isinstance(fn, types.FunctionType) else ["_same_code(F, CODE)"]
    if obj is not None:
        env.update(O=obj, CLS=type(obj), FUNC=func)
        terms += ["type(O) is CLS", "CLS.__call__ is FUNC"]
    roots: dict[int, str] = {}
    for path, snap in guards:
        root = path.scope.obj
        r = roots.get(id(root))
        if r is None:
            r = roots[id(root)] = f"R{len(roots)}"
            env[r] = root
        if snap is ABSENT:
            terms.append(f"{path.name!r} not in {r}")
        elif snap is NOATTR:
            terms.append(f"not hasattr({_parent(path).source(r)}, {path.steps[-1][1]!r})")
        else:
            terms.append(_term(path.source(r), snap, env))
    if not terms:
        return None
    body = " and\n                ".join(f"({t})" for t in terms)
    # (`if`, not bool(): the truth of a value that is not a bool raises inside the try)
    text = (f"def check():\n    try:\n        if ({body}):\n            return True\n"
            f"    except Exception:\n        pass\n    return False\n")
    exec(compile(text, "<srcgrad guards>", "exec"), env)
    return env["check"]


def _term(read: str, snap, env: dict, depth: int = 0) -> str:
    """Source text of the test that the value `read` (source text) matches `snap`."""
    n = len(env)
    kind = snap[0]
    if kind == "is":
        env[f"E{n}"] = snap[1]
        return f"{read} is E{n}"
    if kind == "type":
        env[f"E{n}"] = snap[1]
        return f"type({read}) is E{n}"
    if kind == "=":
        env[f"E{n}"], env[f"T{n}"] = snap[1], type(snap[1])
        if _is_nan(snap[1]):
            return f"type(v{n} := {read}) is T{n} and v{n} != v{n}"
        signs = _zero_signs(snap[1])
        if signs is not None:  # (0.0 == -0.0: the sign is compared too)
            env["_zero_signs"], env[f"Z{n}"] = _zero_signs, signs
            return (f"type(v{n} := {read}) is T{n} and v{n} == E{n} and "
                    f"_zero_signs(v{n}) == Z{n}")
        return f"type(v{n} := {read}) is T{n} and v{n} == E{n}"
    items = snap[2] if kind == "seq" else snap[1] if kind == "map" else ()
    small = depth < 3 and len(items) <= 16 and (
        kind == "seq" or (kind == "map" and all(_key_ok(k) for k, _ in items)))
    if not small:
        env[f"S{n}"] = snap
        return f"_matches({read}, S{n})"
    v = f"v{n}"
    env[f"T{n}"] = snap[1] if kind == "seq" else dict
    parts = [f"type({v} := {read}) is T{n}", f"len({v}) == {len(items)}"]
    if kind == "map":  # keys in order: iterating over the dict follows it
        env[f"K{n}"] = tuple(k for k, _ in items)
        parts.append(f"tuple({v}) == K{n}")
    if kind == "seq":
        parts += [_term(f"{v}[{i}]", s, env, depth + 1) for i, s in enumerate(items)]
    else:
        parts += [_term(f"{v}[{k!r}]", s, env, depth + 1) for k, s in items]
    return " and ".join(f"({p})" for p in parts)


# -- the disk cache: guards another process can check --------------------------------------

def fingerprint(v, depth: int = 0) -> str:
    """A description of `v` that another process can compute from its own `v`: values by
    value, functions by their code (and what it reads), arrays as arrays (they are read
    at every call), slices, enum members and dtypes by value, other objects by type (their
    attributes are guards of their own)."""
    from .cache import function_fingerprint

    t = type(v)
    if t in _ATOMS:
        return f"{t.__name__}:{v!r}"
    if isinstance(v, numpy.generic):
        return f"{v.dtype.str}:{v!r}"
    if isinstance(v, numpy.ndarray):
        return "array"
    if t in (list, tuple) and depth < _MAX_DEPTH:
        return f"{t.__name__}[" + ",".join(fingerprint(x, depth + 1) for x in v) + "]"
    if t is dict and depth < _MAX_DEPTH:
        return "dict{" + ",".join(f"{fingerprint(k)}:{fingerprint(x, depth + 1)}"
                                  for k, x in v.items()) + "}"
    if t in (set, frozenset):
        return f"{t.__name__}" + repr(sorted(map(repr, v)))
    if isinstance(v, types.FunctionType):
        return "function:" + function_fingerprint(v)
    if isinstance(v, types.MethodType):
        return "method:" + fingerprint(v.__func__) + "@" + _qualname(type(v.__self__))
    if isinstance(v, types.ModuleType):
        return f"module:{v.__name__}"
    if isinstance(v, type):
        return "class:" + _qualname(v)
    # values compiled in whole, with no guards on their parts: by value too
    if t is slice:
        return "slice(" + ",".join(fingerprint(p, depth + 1)
                                   for p in (v.start, v.stop, v.step)) + ")"
    if isinstance(v, enum.Enum):
        return f"enum:{_qualname(t)}.{v.name}={fingerprint(v.value, depth + 1)}"
    if isinstance(v, numpy.dtype):
        return f"dtype:{v.str}:{v!r}"
    if v is Ellipsis or v is NotImplemented:
        return repr(v)
    if callable(v) and hasattr(v, "__name__") and not hasattr(v, "__dict__"):
        return f"builtin:{getattr(v, '__module__', '')}.{v.__name__}"
    if callable(v) and isinstance(getattr(v, "__name__", None), str):
        # numpy's ufuncs and dispatchers have a __dict__: by their names too (np.tanh
        # and np.sin are both a numpy.ufunc)
        name = getattr(v, "__qualname__", None) or v.__name__
        return f"callable:{_qualname(t)}:{getattr(v, '__module__', '')}.{name}"
    return "object:" + _qualname(t)


def _qualname(t) -> str:
    return f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', t.__name__)}"


def describe(guards, fun) -> "list | None":
    """The guards as JSON for the disk cache; None when one is in a namespace another
    process cannot find (the module is then never loaded from the cache)."""
    out = []
    groups: dict[int, int] = {}  # id of an array found at several paths -> its group
    for path, snap in guards:
        scope = describe_scope(path.scope, fun)
        if scope is None:
            return None
        steps = [[kind, key if kind == "attr" else repr(key)] for kind, key in path.steps]
        if snap is ABSENT:
            fp = "absent"
        elif snap is NOATTR:
            fp = "noattr"
        elif snap[0] == "is" and isinstance(snap[1], numpy.ndarray):
            fp = f"same-array:{groups.setdefault(id(snap[1]), len(groups))}"
        else:
            fp = _digest(fingerprint(path.get()))
        out.append([scope, path.scope.kind, path.name, steps, fp])
    return out


def _parent(path: Path) -> Path:
    """The path of the object whose attribute `path` names."""
    return Path(path.scope, path.name, path.steps[:-1])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def validate(described, fun, scope_for) -> "list | None":
    """The live guards of a cached module whose described guards all hold here, else
    None. `scope_for(desc, kind)` gives the Scope object for a described namespace."""
    import ast

    live = []
    reads = Reads()
    same: dict[str, object] = {}  # "same-array:k" -> the array its paths must all hold
    try:
        for scope_desc, kind, name, steps, fp in described:
            scope = scope_for(scope_desc, kind)
            path = Path(scope, name, tuple(
                (k, key if k == "attr" else ast.literal_eval(key)) for k, key in steps))
            if fp == "absent":
                if kind != "globals" or name in scope.obj:
                    return None
                live.append((path, ABSENT))
                continue
            if fp == "noattr":
                if not path.steps or path.steps[-1][0] != "attr" or \
                        hasattr(_parent(path).get(), path.steps[-1][1]):
                    return None
                live.append((path, NOATTR))
                continue
            value = path.get()
            if fp.startswith("same-array:"):
                if not isinstance(value, numpy.ndarray) or \
                        same.setdefault(fp, value) is not value:
                    return None
                live.append((path, ("is", value)))
                continue
            if _digest(fingerprint(value)) != fp:
                return None
            live.append((path, reads.snapshot(value, path)))
    except Exception:
        return None
    return live


def resolved_scope(desc, kind, fun, cache: dict):
    """The Scope a described namespace is in this process (LookupError if none)."""
    from .scopes import Scope

    key = (repr(desc), kind)
    if key not in cache:
        obj = resolve_scope(desc, fun)
        cache[key] = Scope(kind, obj, "", "")
    return cache[key]

