"""The disk cache stays bounded: stale entries (another cache format, srcgrad version or
build) and then the least recently used go when SRCGRAD_CACHE_MAX_MB is exceeded; the
`srcgrad cache info|clear|prune` commands and `srcgrad --version`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import cache as sgcache
from srcgrad.errors import CacheWarning

from paths import ROOT  # noqa: E402  (tests/paths.py)
KIB = 1024


def _key(i: int) -> str:
    return f"{i:064x}"


def _store(i: int, size_kib: int = 8, age: float = 0.0) -> str:
    """A valid entry of about `size_kib` KiB (source and bytecode), last used `age`
    seconds ago."""
    source = f"VALUE = {i}\n" + "#" * (size_kib * KIB) + "\n"
    path = sgcache.store(_key(i), source, {})
    assert path is not None
    if age:
        t = time.time() - age
        os.utime(path, (t, t))
        os.utime(path + "c", (t, t))
    return path


def _keys(d):
    return sorted({n.split(".")[0] for n in os.listdir(d) if sgcache._ENTRY_NAME.fullmatch(n)})


def _total(d):
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)
               if sgcache._ENTRY_NAME.fullmatch(n))


def test_the_cap_is_a_setting_with_a_default(monkeypatch):
    monkeypatch.delenv("SRCGRAD_CACHE_MAX_MB", raising=False)
    assert sgcache.max_bytes() == sgcache.DEFAULT_MAX_MB * KIB * KIB
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", "1.5")
    assert sgcache.max_bytes() == int(1.5 * KIB * KIB)
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", "0")
    assert sgcache.max_bytes() is None  # no cap
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", "lots")
    with pytest.warns(CacheWarning, match="SRCGRAD_CACHE_MAX_MB"):
        assert sgcache.max_bytes() == sgcache.DEFAULT_MAX_MB * KIB * KIB


def test_least_recently_used_entries_go_beyond_the_cap(monkeypatch):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", str(60 / 1024))  # 60 KiB
    for i in range(6):  # about 6 * 8.5 KiB: under the cap
        _store(i, age=1000 - 100 * i)  # entry 0 is the oldest
    assert _keys(d) == [_key(i) for i in range(6)]
    assert sgcache.load(_key(1)) is not None  # used now: the newest use
    for i in range(6, 10):
        _store(i)
        assert _total(d) <= 60 * KIB
    left = _keys(d)
    assert [k for k in map(_key, range(6)) if k not in left] == [_key(0), _key(2),
                                                                 _key(3), _key(4)]
    assert _key(1) in left  # loaded a moment ago: kept
    assert all(_key(i) in left for i in range(6, 10))  # just written: kept
    # every entry left still loads (its .py and .pyc are removed together)
    for k in left:
        assert sgcache.load(k) is not None
        assert os.path.exists(os.path.join(d, k + ".pyc"))


def test_stale_entries_go_first_even_when_recently_used(monkeypatch):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", str(60 / 1024))
    for i in range(3):
        _store(i, size_kib=10, age=1000)  # old but current
    # an entry of another srcgrad version, and one of an older cache format: recent
    path = _store(10, size_kib=10)
    with open(path, encoding="utf-8") as f:
        head, meta_line, body = f.read().split("\n", 2)
    meta = json.loads(meta_line[len("# meta="):])
    meta["version"] = "0.0.1"
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}\n# meta={json.dumps(meta)}\n{body}")
    path = _store(11, size_kib=10)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(sgcache._MAGIC, "# srcgrad-cache v1", 1))
    assert sgcache.info()["stale"] == 2
    _store(12, size_kib=10)  # over the cap now
    left = _keys(d)
    assert _key(10) not in left  # a stale entry went, not an old current one
    assert all(_key(i) in left for i in (0, 1, 2, 12))
    assert _total(d) <= 60 * KIB
    assert sgcache.prune(stale=True)["removed"] == 1  # the other stale one, on demand
    assert _keys(d) == [_key(i) for i in (0, 1, 2, 12)]


def test_an_entry_of_another_build_is_stale(monkeypatch):
    _store(1)
    monkeypatch.setattr(sgcache, "_COMPILER_ID", "another build")
    assert sgcache.info()["stale"] == 1
    monkeypatch.setattr(sgcache, "_COMPILER_ID", None)
    assert sgcache.info()["stale"] == 0


def test_prune_removes_stale_entries_under_the_cap_too():
    d = os.environ["SRCGRAD_CACHE_DIR"]
    _store(1)
    path = _store(2)
    os.unlink(path)  # a bytecode file without its source
    _store(3)
    assert sgcache.prune()["removed"] == 0  # far under the cap: nothing to do
    done = sgcache.prune(stale=True)
    assert done["removed"] == 1 and done["freed"] > 0
    assert _keys(d) == [_key(1), _key(3)]


def test_no_cap_keeps_everything(monkeypatch):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", "0")
    for i in range(20):
        _store(i)
    assert len(_keys(d)) == 20


def test_files_that_are_not_entries_are_left_alone_and_old_temporaries_cleaned(monkeypatch):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", str(20 / 1024))
    _store(0, age=100)
    for name in ("notes.txt", "README.py", ".tmp-fresh.py", ".tmp-old.py"):
        with open(os.path.join(d, name), "w") as f:
            f.write("x" * 30 * KIB)
    t = time.time() - 7200
    os.utime(os.path.join(d, ".tmp-old.py"), (t, t))
    for i in range(1, 5):
        _store(i)
    names = set(os.listdir(d))
    assert {"notes.txt", "README.py", ".tmp-fresh.py"} <= names  # another writer's, live
    assert ".tmp-old.py" not in names  # left by a writer that died
    assert _key(0) not in _keys(d)


def test_a_tiny_cap_keeps_the_entry_just_written_and_compiled_code_works(monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_MAX_MB", "0.0001")

    def f(x):
        return np.sum(np.sin(x) ** 2)

    g = srcgrad.grad(f)
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(g(x), np.sin(2 * x), rtol=1e-14)
    assert g.cache_path is not None and os.path.exists(g.cache_path)
    g2 = srcgrad.grad(f)
    np.testing.assert_allclose(g2(x), np.sin(2 * x), rtol=1e-14)
    assert g2.compile_count == 0  # loaded from the entry the cap spared


def _cli(*args, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT)
    e.update(env or {})
    out = subprocess.run([sys.executable, "-m", "srcgrad", *args], capture_output=True,
                         text=True, env=e, timeout=120, cwd=ROOT)
    return out


def test_cli_version_and_prog_name():
    out = _cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"srcgrad {srcgrad.__version__}"
    out = _cli("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: srcgrad ")
    assert "cache" in out.stdout


def test_cli_cache_info_and_clear():
    d = os.environ["SRCGRAD_CACHE_DIR"]
    _store(1)
    _store(2)
    out = _cli("cache", "info")
    assert out.returncode == 0, out.stderr
    lines = dict(ln.split(":", 1) for ln in out.stdout.splitlines())
    assert lines["location"].strip() == d
    assert lines["entries"].strip() == "2"
    assert f"({_total(d)} bytes)" in lines["size"]
    assert "MiB" in lines["cap"]
    out = _cli("cache", "clear")
    assert out.returncode == 0 and out.stdout.strip() == f"removed 4 files from {d}"
    assert _keys(d) == []
    assert "entries:  0" in _cli("cache", "info").stdout
    out = _cli("cache", "info", env={"SRCGRAD_CACHE_DIR": ""})
    assert out.returncode == 0 and "off" in out.stdout


def test_cli_cache_prune():
    d = os.environ["SRCGRAD_CACHE_DIR"]
    _store(1)
    os.unlink(_store(2))
    out = _cli("cache", "prune")
    assert out.returncode == 0 and out.stdout.startswith("removed 1 entry ")
    assert _keys(d) == [_key(1)]


def test_a_corrupt_entry_is_still_refused_with_a_warning_not_pruned_silently():
    """Pruning never weakens the checks: load still verifies what it reads."""
    path = _store(5)
    with open(path, "a", encoding="utf-8") as f:
        f.write("import os\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sgcache.load(_key(5)) is None
    assert any("does not match its recorded hash" in str(w.message) for w in caught)
