"""Stage 6, cache: generated source on disk, keyed by what it was generated from.

The key is a sha256 of the compiler version, the options, the function's source, the
sources of the user functions it can call and the values of the module-level scalars it
reads. Files live under `$SRCGRAD_CACHE_DIR` (or `~/.cache/srcgrad`); `SRCGRAD_CACHE_DIR=""`
turns the disk cache off. An entry is `<key>.py`, the generated module under two header
lines, and `<key>.pyc` beside it, that module compiled.

What is checked before anything is executed:
- the directory, before any file in it is read or written: it must be a directory owned by
  the user and not writable by group or others (it is created so, 0700, when missing; its
  parents are not checked). Otherwise the disk cache is off for it, loading and storing,
  with one CacheWarning per process;
- `<key>.py`: a regular file (not a symlink) owned by the user, not writable by group or
  others, whose header records the key it was written for, equal to the key asked for (a
  file copied or renamed to another entry's name is refused), and a sha256 over that key,
  the metadata line and the module, equal to one computed from the file's content;
- `<key>.pyc`: a regular file owned by the user, not writable by group or others, whose
  sha256 with the key and the verified source equals the one recorded in that source's
  header (so a `.pyc` of another entry, or of another version of this one, never passes).
A rejected `.py` is not executed: it is regenerated, with a CacheWarning. A rejected
`.pyc` is ignored silently (the verified source is compiled instead): concurrent writers
can legitimately leave one from another write of the same entry.

Not checked here: that the function's file still holds the code that runs (the key is
computed from the code object); srcgrad.frontend refuses a function whose file was edited
since it was defined (SourceChangedError).

Files are written to a temporary name and renamed into place, so a reader never sees a
half-written file and concurrent writers cannot corrupt one.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import marshal
import linecache
import os
import stat
import sys
import tempfile
import types
import warnings

import numpy

from .errors import CacheWarning
from .frontend import code_names

__all__ = ["cache_dir", "cache_key", "load", "store", "clear", "exec_source"]

VERSION = "0.1.0"
_MAGIC = "# srcgrad-cache v2"


def cache_dir() -> str | None:
    """The cache directory, or None when the disk cache is off."""
    env = os.environ.get("SRCGRAD_CACHE_DIR")
    if env is not None:
        return env or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "srcgrad")


def _describe(value, seen: set, depth: int = 0) -> str:
    if isinstance(value, (bool, int, float, complex, str, type(None))):
        return repr(value)
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str, type(None)))
                                        for v in value):
        return repr(value)
    if isinstance(value, numpy.ndarray):  # read by name at every call: its value is no
        return "array-by-name"  # part of the generated source (see srcgrad.scopes)
    if isinstance(value, types.FunctionType):
        return _function_text(value, seen, depth + 1)
    rules = getattr(value, "rules", None)
    if isinstance(rules, dict) and hasattr(value, "fun"):  # a custom op: body and rules
        head = f"op(pure={getattr(value, 'pure', False)}):"  # a pure op's calls may be folded
        return head + "|".join([_function_text(value.fun, seen, depth + 1)] + [
            f"{k}={_function_text(r, seen, depth + 1)}" for k, r in sorted(rules.items())])
    mod = getattr(value, "__name__", None)
    return f"{type(value).__name__}:{mod}"


def _function_text(fn, seen: set, depth: int = 0) -> str:
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    # each function object once (recursion ends there), not each code object: closures made
    # by one factory share their code but differ in what they close over and their defaults
    if code is None or fn in seen or depth > 50:
        return f"fn:{getattr(fn, '__qualname__', '?')}"
    seen.add(fn)
    # the compiled code object stands for the source (cheaper than re-reading the file):
    # it changes with every change of code, names, constants or line numbers
    parts = [hashlib.sha256(marshal.dumps(code)).hexdigest(),
             f"@{code.co_filename}:{code.co_firstlineno}"]
    names = code_names(code)
    g = fn.__globals__
    for name in sorted(names):
        if name in g:
            parts.append(f"{name}={_describe(g[name], seen, depth)}")
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                parts.append(f"{name}~{_describe(cell.cell_contents, seen, depth)}")
            except ValueError:
                parts.append(f"{name}~<empty>")
    if fn.__defaults__:
        parts.append("defaults=" + ",".join(_describe(d, seen, depth) for d in fn.__defaults__))
    return "\n".join(parts)


def function_fingerprint(fn) -> str:
    """Hex sha256 of what a function is: its code, and what it reads and closes over."""
    return hashlib.sha256(_function_text(fn, set()).encode()).hexdigest()


def op_fingerprint(op) -> str:
    """What a user's op is (its function and rules, and what they read and close over):
    generated code loaded from the disk cache finds the ops it calls by this."""
    text = f"{op.__name__}|{_describe(op, set())}"
    return hashlib.sha256(text.encode()).hexdigest()


def find_op(fingerprint: str):
    """The live user's op with this fingerprint; None when there is none, or several
    (ops that close over objects the fingerprint cannot tell apart): the caller then
    compiles afresh rather than guess."""
    from runtime.ops.custom import live_ops

    found = [op for op in live_ops() if op_fingerprint(op) == fingerprint]
    return found[0] if len(found) == 1 else None


_COMPILER_ID = None


def _compiler_id() -> str:
    """The compiler's own files (size and modification time): generated code from another
    build of srcgrad or runtime is never reused, version bump or not."""
    global _COMPILER_ID
    if _COMPILER_ID is None:
        import runtime

        parts = []
        for pkg in (os.path.dirname(__file__), os.path.dirname(runtime.__file__)):
            for root, _, files in os.walk(pkg):
                for f in sorted(files):
                    if f.endswith(".py"):
                        st = os.stat(os.path.join(root, f))
                        parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        _COMPILER_ID = hashlib.sha256("|".join(sorted(parts)).encode()).hexdigest()
    return _COMPILER_ID


def cache_key(fn, options: dict) -> str:
    """Hex sha256 of everything the generated source depends on."""
    h = hashlib.sha256()
    h.update(f"{VERSION}|{_compiler_id()}|{sys.version_info[:2]}|"
             f"{sorted(options.items())!r}\n".encode())
    h.update(_function_text(fn, set()).encode())
    return h.hexdigest()


def _path(key: str) -> str | None:
    d = cache_dir()
    return None if d is None else os.path.join(d, key + ".py")


_WARNED_DIRS = set()  # unsafe directories already reported (once per process each)


def _dir_problem(st) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return "is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by group or others"
    return None


def _usable_dir(d: str, create: bool) -> bool:
    """Whether files in `d` may be read (and written): a directory of this user's that no
    one else can write to (else anyone who can could plant or swap files in it). Created
    private when missing and `create`; an unsafe one is reported once, with a
    CacheWarning, and the disk cache is then off for it."""
    try:
        st = os.stat(d)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
            os.chmod(d, 0o700)
            st = os.stat(d)
        except OSError:
            return False
    except OSError:
        return False
    problem = _dir_problem(st)
    if problem is None:
        return True
    if d not in _WARNED_DIRS:
        _WARNED_DIRS.add(d)
        warnings.warn(f"srcgrad cache directory {d} {problem}; the disk cache is not used "
                      "(make it private to you: chmod 700, or point SRCGRAD_CACHE_DIR "
                      "elsewhere)", CacheWarning, stacklevel=4)
    return False


def _digest(key: str, meta: str, body: str) -> str:
    # over the key too: a file is valid only under the name it was written for
    return hashlib.sha256((key + "\n" + meta + "\n" + body).encode()).hexdigest()


def load(key: str):
    """(source, meta, path) from the disk cache, or None. Unsafe or corrupt files are
    never executed: they are reported with a CacheWarning and treated as missing."""
    path = _path(key)
    if path is None or not _usable_dir(os.path.dirname(path), create=False):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = "is not a regular file"
    elif hasattr(os, "getuid") and st.st_uid != os.getuid():
        problem = "is owned by another user"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = "is writable by group or others"
    text = None
    if problem is None:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            problem = "cannot be read"
    if problem is None:
        head, _, rest = text.partition("\n")
        meta_line, _, body = rest.partition("\n")
        if not head.startswith(_MAGIC + " sha256=") or not meta_line.startswith("# meta="):
            problem = "has no valid header"
        else:
            try:
                meta = json.loads(meta_line[len("# meta="):])
            except ValueError:
                meta = None
            if not isinstance(meta, dict):
                problem = "has unreadable metadata"
            elif meta.get("key") != key:
                problem = "was written for another key (copied or renamed)"
            elif head.split("sha256=", 1)[1].strip() != _digest(key, meta_line, body):
                problem = "does not match its recorded hash (truncated or modified)"
    if problem is not None:
        warnings.warn(f"srcgrad cache file {path} {problem}; it was not executed and will be "
                      "regenerated", CacheWarning, stacklevel=4)
        return None
    return text, meta, path


def store(key: str, source: str, meta: dict) -> str | None:
    """Write atomically; returns the path, or None when the cache is off or unusable."""
    path = _path(key)
    if path is None or not _usable_dir(os.path.dirname(path), create=True):
        return None
    # the compiled module goes beside the source (a later process skips compiling it); the
    # source's hashed header records the bytecode's hash, so neither is trusted alone
    blob = marshal.dumps(compile("\n\n" + source, path, "exec"))
    meta = dict(meta, key=key, code=_code_digest(key, blob, source))
    meta_line = "# meta=" + json.dumps(meta, sort_keys=True)
    text = f"{_MAGIC} sha256={_digest(key, meta_line, source)}\n{meta_line}\n{source}"
    try:
        _write_atomic(path + "c", blob)
        _write_atomic(path, text.encode("utf-8"))
    except OSError:
        return None
    return path


def _write_atomic(path: str, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _code_digest(key: str, blob: bytes, source: str) -> str:
    # over the bytecode, the source it was compiled from and the key: bytecode never stands
    # in for a source file that says something else, nor for another entry's
    return hashlib.sha256(key.encode() + b"\0" + blob + b"\0" +
                          source.encode("utf-8")).hexdigest()


def load_code(path: str, meta: dict, text: str):
    """The compiled module stored beside a verified source file (`text`, read from it),
    or None (then the source is compiled): it is used only if safe and its recorded hash
    matches it and this source."""
    want, key = meta.get("code"), meta.get("key")
    if not want or not key or os.path.basename(path) != key + ".py":
        return None
    try:
        st = os.lstat(path + "c")
        if not stat.S_ISREG(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or \
                (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        with open(path + "c", "rb") as f:
            blob = f.read()
    except OSError:
        return None
    source = text.split("\n", 2)[2] if text.startswith(_MAGIC) else text
    if _code_digest(key, blob, source) != want:
        return None
    try:
        return marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None


def clear() -> int:
    """Delete the cache files; returns how many were removed."""
    d = cache_dir()
    if d is None or not os.path.isdir(d):
        return 0
    n = 0
    for name in os.listdir(d):
        if name.endswith((".py", ".pyc")) and (len(name) in (67, 68) or
                                                  name.startswith(".tmp-")):
            try:
                os.unlink(os.path.join(d, name))
                n += 1
            except OSError:
                pass
    return n


def exec_source(text: str, filename: str, namespace: dict, code=None) -> dict:
    """Execute generated source as if loaded from `filename` (tracebacks show its lines).

    `text` may be the module without the cache file's header lines (right after `store`):
    it is then compiled shifted down by those lines, so that line numbers in tracebacks
    are the file's."""
    if code is not None:  # verified bytecode of this very file
        exec(code, namespace)
        return namespace
    if not os.path.exists(filename):
        lines = text.splitlines(keepends=True)
        linecache.cache[filename] = (len(text), None, lines, filename)
    else:
        try:
            with open(filename, encoding="utf-8") as f:
                on_disk = f.read()
        except (OSError, UnicodeDecodeError):
            on_disk = text
        if on_disk != text and on_disk.endswith(text):
            text = "\n" * on_disk[:-len(text)].count("\n") + text
    code = compile(text, filename, "exec")
    exec(code, namespace)
    return namespace
