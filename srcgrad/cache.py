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

The cache is bounded: after each store, when its entries take more than
`$SRCGRAD_CACHE_MAX_MB` megabytes (default 256; 0 turns the cap off), entries are deleted
down to 90% of the cap: first the stale ones (another cache format, another srcgrad version
or build: never read again by this one, whose keys differ), then the least recently used
(a load touches its entry's modification time). `info()` and `clear()` back the
`srcgrad cache info|clear|prune` commands.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import json
import marshal
import linecache
import os
import re
import time
import stat
import sys
import tempfile
import types
import warnings

import numpy

from . import __version__
from .errors import CacheWarning
from .frontend import code_names
from .scopes import unwrap

__all__ = ["cache_dir", "source_of", "cache_key", "load", "store", "clear", "exec_source", "info",
           "prune", "max_bytes"]

VERSION = __version__
_MAGIC = "# srcgrad-cache v2"


def source_of(text: str) -> str:
    """The generated module without the cache entry's two header lines (if it has them)."""
    return text.split("\n", 2)[2] if text.startswith(_MAGIC) else text
#: the size cap's default, in megabytes (`$SRCGRAD_CACHE_MAX_MB` overrides it)
DEFAULT_MAX_MB = 256
#: an entry's files: `<64 hex digits>.py` and `.pyc`
_ENTRY_NAME = re.compile(r"([0-9a-f]{64})\.pyc?")


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
    # (looked up without calling the object's code: a __getattr__ of the user's may raise
    # anything)
    rules = inspect.getattr_static(value, "rules", None)
    if isinstance(rules, dict) and \
            inspect.getattr_static(value, "fun", None) is not None:  # a custom op
        head = f"op(pure={getattr(value, 'pure', False)}):"  # a pure op's calls may be folded
        return head + "|".join([_function_text(value.fun, seen, depth + 1)] + [
            f"{k}={_function_text(r, seen, depth + 1)}" for k, r in sorted(rules.items())])
    try:
        mod = getattr(value, "__name__", None)
    except Exception:  # (a __getattr__ of the user's that raises a KeyError, say)
        mod = None
    return f"{type(value).__name__}:{mod if isinstance(mod, str) else None}"


def _function_text(fn, seen: set, depth: int = 0) -> str:
    fn = unwrap(fn)  # (what is compiled: a wrapper's own code)
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
        folders = [os.path.dirname(__file__), os.path.dirname(runtime.__file__)]
        while folders:  # (os.scandir: the cost is the stat of each file, a fresh
            with os.scandir(folders.pop()) as entries:  # process's first call pays it)
                for e in entries:
                    if e.name.endswith(".py"):
                        st = e.stat()
                        parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
                    elif e.name != "__pycache__" and e.is_dir():
                        folders.append(e.path)
        _COMPILER_ID = hashlib.sha256("|".join(sorted(parts)).encode()).hexdigest()
    return _COMPILER_ID


def cache_key(fn, options: dict) -> str:
    """Hex sha256 of everything the generated source depends on."""
    h = hashlib.sha256()
    h.update(f"{VERSION}|{_compiler_id()}|{sys.version_info[:2]}|"
             f"{sorted(options.items())!r}\n".encode())
    h.update(_function_text(fn, set()).encode())
    return h.hexdigest()


def entry_path(key: str) -> str | None:
    """The file an entry of this key is (or would be) stored in; None when the cache is
    off."""
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
    path = entry_path(key)
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
    try:  # used now: the last to go when the cache is pruned
        os.utime(path)
    except OSError:
        pass
    return text, meta, path


def store(key: str, source: str, meta: dict) -> str | None:
    """Write atomically; returns the path, or None when the cache is off or unusable."""
    path = entry_path(key)
    if path is None or not _usable_dir(os.path.dirname(path), create=True):
        return None
    # the compiled module goes beside the source (a later process skips compiling it); the
    # source's hashed header records the bytecode's hash, so neither is trusted alone
    blob = marshal.dumps(compile("\n\n" + source, path, "exec"))
    meta = dict(meta, key=key, code=_code_digest(key, blob, source), version=VERSION,
                compiler=_compiler_id())
    meta_line = "# meta=" + json.dumps(meta, sort_keys=True)
    text = f"{_MAGIC} sha256={_digest(key, meta_line, source)}\n{meta_line}\n{source}"
    try:
        _write_atomic(path + "c", blob)
        _write_atomic(path, text.encode("utf-8"))
    except OSError:
        return None
    try:
        _enforce_cap(os.path.dirname(path), keep=key)
    except OSError:  # pruning is housekeeping: a failure never fails the store
        pass
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
    source = source_of(text)
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
        if _ENTRY_NAME.fullmatch(name) or (name.startswith(".tmp-") and name.endswith(".py")):
            try:
                os.unlink(os.path.join(d, name))
                n += 1
            except OSError:
                pass
    return n


# ---- the size cap --------------------------------------------------------------------------------

_WARNED_CAP = []


def max_bytes() -> int | None:
    """The cache's size cap in bytes (`$SRCGRAD_CACHE_MAX_MB`, default DEFAULT_MAX_MB
    megabytes), or None when it is turned off (0). A value that is not a number is reported
    once, with a CacheWarning, and the default used."""
    env = os.environ.get("SRCGRAD_CACHE_MAX_MB", "").strip()
    mb = DEFAULT_MAX_MB
    if env:
        try:
            mb = float(env)
            if mb != mb or mb < 0:
                raise ValueError(env)
        except ValueError:
            mb = DEFAULT_MAX_MB
            if env not in _WARNED_CAP:
                _WARNED_CAP.append(env)
                warnings.warn(f"SRCGRAD_CACHE_MAX_MB={env!r} is not a number of megabytes "
                              f">= 0; using {DEFAULT_MAX_MB}", CacheWarning, stacklevel=3)
    return None if mb == 0 else int(mb * 1024 * 1024)


class _Entry:
    __slots__ = ("key", "paths", "size", "used")

    def __init__(self, key):
        self.key, self.paths, self.size, self.used = key, [], 0, 0.0


def _entries(d: str) -> tuple[dict, list]:
    """key -> _Entry for the entry files in `d` (regular files only), and the paths of
    temporary files left more than an hour ago by writers that died."""
    entries, leftovers = {}, []
    now = time.time()
    with os.scandir(d) as it:
        for de in it:
            m = _ENTRY_NAME.fullmatch(de.name)
            try:
                st = de.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if m is None:
                if de.name.startswith(".tmp-") and now - st.st_mtime > 3600:
                    leftovers.append(de.path)
                continue
            e = entries.setdefault(m.group(1), _Entry(m.group(1)))
            e.paths.append(de.path)
            e.size += st.st_size
            if de.name.endswith(".py"):  # loads touch the source file
                e.used = max(e.used, st.st_mtime)
            elif not e.used:
                e.used = st.st_mtime
    return entries, leftovers


def _is_stale(d: str, key: str) -> bool:
    """An entry this srcgrad never reads again: no source file, another cache format, or
    written by another srcgrad version or build (its key can never be asked for)."""
    try:
        with open(os.path.join(d, key + ".py"), encoding="utf-8") as f:
            head, meta_line = f.readline(), f.readline()
        meta = json.loads(meta_line[len("# meta="):]) if meta_line.startswith("# meta=") \
            else None
    except (OSError, UnicodeDecodeError, ValueError):
        return True
    return not (head.startswith(_MAGIC + " sha256=") and isinstance(meta, dict) and
                meta.get("version") == VERSION and meta.get("compiler") == _compiler_id())


def _remove(entry) -> int:
    freed = 0
    for p in entry.paths:
        try:
            size = os.lstat(p).st_size
            os.unlink(p)
            freed += size
        except OSError:
            pass
    return freed


def prune(limit: int | None = None, keep: str | None = None, stale: bool = False) -> dict:
    """Delete entries until the cache takes at most `limit` bytes (default: 90% of
    `max_bytes()`, nothing when there is no cap): stale entries first, then the least
    recently used; never `keep`. With `stale=True` every stale entry goes, whatever the
    size. Returns {"removed": entries, "freed": bytes}."""
    d = cache_dir()
    done = {"removed": 0, "freed": 0}
    if d is None or not _usable_dir(d, create=False):
        return done
    if limit is None:
        cap = max_bytes()
        limit = None if cap is None else int(cap * 0.9)
    entries, leftovers = _entries(d)
    for p in leftovers:
        try:
            os.unlink(p)
        except OSError:
            pass
    total = sum(e.size for e in entries.values())
    if not stale and (limit is None or total <= limit):
        return done
    candidates = sorted((e for e in entries.values() if e.key != keep),
                        key=lambda e: e.used)
    stale_ones = [e for e in candidates if _is_stale(d, e.key)]
    stale_keys = {e.key for e in stale_ones}
    order = stale_ones + [e for e in candidates if e.key not in stale_keys]
    for i, e in enumerate(order):
        if i >= len(stale_ones) or not stale:
            if limit is None or total <= limit:
                break
        total -= e.size
        done["freed"] += _remove(e)
        done["removed"] += 1
    return done


def _enforce_cap(d: str, keep: str):
    cap = max_bytes()
    if cap is None:
        return
    total = 0
    with os.scandir(d) as it:
        for de in it:
            if _ENTRY_NAME.fullmatch(de.name):
                try:
                    total += de.stat(follow_symlinks=False).st_size
                except OSError:
                    pass
    if total > cap:
        prune(int(cap * 0.9), keep=keep)


def info() -> dict:
    """Where the cache is and what it holds: {"dir", "enabled", "usable", "entries",
    "bytes", "stale", "max_bytes"} (`stale`: entries another srcgrad wrote)."""
    d = cache_dir()
    out = {"dir": d, "enabled": d is not None, "usable": False, "entries": 0, "bytes": 0,
           "stale": 0, "max_bytes": max_bytes()}
    if d is None or not os.path.isdir(d):
        return out
    out["usable"] = _usable_dir(d, create=False)
    if not out["usable"]:
        return out
    entries, _ = _entries(d)
    out["entries"] = len(entries)
    out["bytes"] = sum(e.size for e in entries.values())
    out["stale"] = sum(_is_stale(d, k) for k in entries)
    return out


def exec_source(text: str, filename: str, namespace: dict, code=None, transform=None) -> dict:
    """Execute generated source as if loaded from `filename` (tracebacks show its lines).

    `text` may be the module without the cache file's header lines (right after `store`):
    it is then compiled shifted down by those lines, so that line numbers in tracebacks
    are the file's. `transform`, when given, rewrites the parsed module first (the
    bytecode `code` is then not used)."""
    if code is not None and transform is None:  # verified bytecode of this very file
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
    code = compile(text if transform is None else transform(ast.parse(text)), filename, "exec")
    exec(code, namespace)
    return namespace
