"""The disk cache: reuse across processes, refusal of tampered / truncated / unsafe files
(which are never executed), a private directory, concurrent writers, and turning it off.

Each test gets its own SRCGRAD_CACHE_DIR (tests/conftest.py)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import cache as sgcache

from paths import ROOT  # noqa: E402  (tests/paths.py)

MODULE = '''
import numpy as np


def f(x, w):
    h = np.tanh(x @ w)
    return np.sum(h ** 2) + 0.5 * np.sum(w * w)
'''

X = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
W = np.linspace(0.5, -0.5, 12).reshape(3, 4)


def expected_grad(x, w):
    h = np.tanh(x @ w)
    return x.T @ (2 * h * (1 - h ** 2)) + w


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user module on disk (so its source can be read, also by other processes)."""
    d = tmp_path / "user"
    d.mkdir()
    (d / "cached_user_mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(d))
    sys.modules.pop("cached_user_mod", None)
    import cached_user_mod

    yield cached_user_mod
    sys.modules.pop("cached_user_mod", None)


def run_in_new_process(user_dir, cache_dir, extra_env=None):
    """Compile and call grad(f, wrt='w') in a fresh interpreter; returns its report."""
    code = textwrap.dedent(f"""
        import json, sys, warnings
        import numpy as np
        sys.path.insert(0, {str(user_dir)!r})
        import srcgrad, cached_user_mod
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = srcgrad.grad(cached_user_mod.f, wrt="w")
            x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
            w = np.linspace(0.5, -0.5, 12).reshape(3, 4)
            out = g(x, w)
        print(json.dumps({{"grad": out.tolist(), "compile_count": g.compile_count,
                          "path": g.cache_path, "variants": len(g._variants.by_sig),
                          "warnings": [str(w.message) for w in caught]}}))
    """)
    env = dict(os.environ, SRCGRAD_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def cache_files(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".py")) if os.path.isdir(d) else []


def test_second_process_loads_from_disk_without_compiling(user_module, tmp_path):
    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    g = srcgrad.grad(user_module.f, wrt="w")
    np.testing.assert_allclose(g(X, W), expected_grad(X, W))
    assert g.compile_count == 1
    assert os.path.dirname(g.cache_path) == cache_dir
    assert cache_files(cache_dir) == [os.path.basename(g.cache_path)]
    report = run_in_new_process(tmp_path / "user", cache_dir)
    assert report["compile_count"] == 0
    assert report["path"] == g.cache_path
    assert report["warnings"] == []
    np.testing.assert_allclose(report["grad"], expected_grad(X, W))


def test_same_process_new_object_loads_from_disk(user_module):
    g1 = srcgrad.grad(user_module.f, wrt="w")
    g1(X, W)
    g2 = srcgrad.grad(user_module.f, wrt="w")
    np.testing.assert_allclose(g2(X, W), expected_grad(X, W))
    assert g2.compile_count == 0 and g2.cache_path == g1.cache_path
    assert g2.source == g1.source


def test_a_different_function_or_option_gets_a_different_file(user_module):
    g1 = srcgrad.grad(user_module.f, wrt="w")
    g2 = srcgrad.grad(user_module.f, wrt="x")
    g3 = srcgrad.value_and_grad(user_module.f, wrt="w")
    for g in (g1, g2, g3):
        g(X, W)
    assert len({g1.cache_path, g2.cache_path, g3.cache_path}) == 3
    assert g1.compile_count == g2.compile_count == g3.compile_count == 1


def test_editing_the_source_recompiles(user_module, tmp_path):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    path = tmp_path / "user" / "cached_user_mod.py"
    path.write_text(MODULE.replace("0.5 * np.sum(w * w)", "1.5 * np.sum(w * w)"))
    report = run_in_new_process(tmp_path / "user", os.environ["SRCGRAD_CACHE_DIR"])
    assert report["compile_count"] == 1 and report["path"] != g.cache_path
    np.testing.assert_allclose(report["grad"], expected_grad(X, W) + 2 * W)


def _marker_payload(marker):
    return f"\nopen({str(marker)!r}, 'w').write('executed')\n"


def _assert_rejected_and_regenerated(user_module, path, marker, reason):
    g = srcgrad.grad(user_module.f, wrt="w")
    with pytest.warns(srcgrad.CacheWarning, match=reason):
        got = g(X, W)
    assert not marker.exists(), "a rejected cache file was executed"
    np.testing.assert_allclose(got, expected_grad(X, W))
    assert g.compile_count == 1 and g.cache_path == str(path)
    # the file was rewritten, valid and private: the next load takes it without a warning
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode & 0o077 == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g2 = srcgrad.grad(user_module.f, wrt="w")
        np.testing.assert_allclose(g2(X, W), expected_grad(X, W))
    assert g2.compile_count == 0


def test_tampered_file_is_not_executed_and_is_regenerated(user_module, tmp_path):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    marker = tmp_path / "tampered-marker"
    with open(g.cache_path, "a") as f:
        f.write(_marker_payload(marker))
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "hash")


def test_tampered_body_with_the_same_length_is_detected(user_module, tmp_path):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    text = open(g.cache_path).read()
    assert "np.tanh(" in text
    with open(g.cache_path, "w") as f:
        f.write(text.replace("np.tanh(", "np.sinh(", 1))
    marker = tmp_path / "unused"
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "hash")


def test_truncated_file_is_not_executed_and_is_regenerated(user_module, tmp_path):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    text = open(g.cache_path).read()
    marker = tmp_path / "truncated-marker"
    # keep the header, then code that would leave a marker, then cut mid-function
    head = text.split("\n", 2)
    with open(g.cache_path, "w") as f:
        f.write(head[0] + "\n" + head[1] + "\n" + _marker_payload(marker) +
                head[2][: len(head[2]) // 2])
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "hash")
    # cut inside the header
    with open(g.cache_path, "w") as f:
        f.write(text[:20])
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "header")
    # an empty file
    open(g.cache_path, "w").close()
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "header")


def _forge(path, marker):
    """A cache file with a correct hash whose code leaves a marker when executed."""
    text = open(path).read()
    _, meta_line, body = text.split("\n", 2)
    body = _marker_payload(marker) + body
    key = os.path.basename(str(path))[:-3]
    digest = sgcache._digest(key, meta_line, body)
    with open(path, "w") as f:
        f.write(f"{sgcache._MAGIC} sha256={digest}\n{meta_line}\n{body}")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_group_or_world_writable_file_is_rejected(user_module, tmp_path, mode):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    marker = tmp_path / "writable-marker"
    _forge(g.cache_path, marker)
    os.chmod(g.cache_path, mode)
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "writable")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_forged_file_with_private_mode_is_trusted(user_module, tmp_path):
    # the control for the test above: the forged file itself is well-formed, so it is
    # the permission bits that got it rejected there
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    marker = tmp_path / "control-marker"
    _forge(g.cache_path, marker)
    os.chmod(g.cache_path, 0o600)
    g2 = srcgrad.grad(user_module.f, wrt="w")
    g2(X, W)
    assert marker.exists() and g2.compile_count == 0


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks")
def test_symlinked_cache_file_is_rejected(user_module, tmp_path):
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    elsewhere = tmp_path / "elsewhere.py"
    os.replace(g.cache_path, elsewhere)
    marker = tmp_path / "symlink-marker"
    _forge(elsewhere, marker)
    os.chmod(elsewhere, 0o600)
    os.symlink(elsewhere, g.cache_path)
    _assert_rejected_and_regenerated(user_module, g.cache_path, marker, "regular file")
    assert not os.path.islink(g.cache_path)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_cache_dir_is_created_private(user_module, tmp_path, monkeypatch):
    d = tmp_path / "deep" / "new" / "cache"
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(d))
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(g.cache_path).st_mode) == 0o600
    assert cache_files(d) == [os.path.basename(g.cache_path)]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_group_writable_cache_dir_is_not_used(user_module, tmp_path, monkeypatch):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(d))
    g = srcgrad.grad(user_module.f, wrt="w")
    with pytest.warns(srcgrad.CacheWarning, match="writable by group or others"):
        np.testing.assert_allclose(g(X, W), expected_grad(X, W))
    assert os.listdir(d) == []
    assert not os.path.exists(str(g.cache_path))


def expected_grad_x(x, w):
    h = np.tanh(x @ w)
    return (2 * h * (1 - h ** 2)) @ w.T


def _two_entries(user_module):
    """Cache files of grad wrt w and grad wrt x of the same function (two keys)."""
    gw = srcgrad.grad(user_module.f, wrt="w")
    gx = srcgrad.grad(user_module.f, wrt="x")
    np.testing.assert_allclose(gw(X, W), expected_grad(X, W))
    np.testing.assert_allclose(gx(X, W), expected_grad_x(X, W))
    assert gw.cache_path != gx.cache_path
    return gw.cache_path, gx.cache_path


@pytest.mark.parametrize("with_bytecode", [True, False])
def test_a_file_copied_to_another_key_is_not_executed(user_module, tmp_path, with_bytecode):
    """A well-formed entry (here one whose code leaves a marker) is valid only under the key
    it was written for: copied over another entry's name, with or without its .pyc, it is
    refused, and that entry is regenerated with the right gradient."""
    path_w, path_x = _two_entries(user_module)
    marker = tmp_path / "copied-marker"
    _forge(path_w, marker)
    os.chmod(path_w, 0o600)
    for suffix in ("", "c") if with_bytecode else ("",):
        with open(path_w + suffix, "rb") as src, open(path_x + suffix, "wb") as dst:
            dst.write(src.read())
    g = srcgrad.grad(user_module.f, wrt="x")
    with pytest.warns(srcgrad.CacheWarning, match="another key"):
        got = g(X, W)
    assert not marker.exists(), "a file copied from another key was executed"
    np.testing.assert_allclose(got, expected_grad_x(X, W))
    assert g.compile_count == 1 and g.cache_path == path_x
    # the control: under its own name the forged file is well-formed, and is executed
    g2 = srcgrad.grad(user_module.f, wrt="w")
    g2(X, W)
    assert marker.exists() and g2.compile_count == 0


def test_a_file_copied_to_another_key_is_refused_in_a_new_process(user_module, tmp_path):
    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    # grad wrt x's entry where grad wrt w's should be: executed, it would give d/dx
    path_w, path_x = _two_entries(user_module)
    for suffix in ("", "c"):
        os.replace(path_x + suffix, path_w + suffix)
    report = run_in_new_process(tmp_path / "user", cache_dir)
    assert any("another key" in w for w in report["warnings"]), report["warnings"]
    assert report["compile_count"] == 1 and report["path"] == path_w
    np.testing.assert_allclose(report["grad"], expected_grad(X, W))


def test_the_bytecode_of_another_entry_is_not_used(tmp_path):
    """Two entries with the very same source: the .pyc of one beside the other's .py is
    ignored (its recorded hash covers the key), and the verified source is compiled."""
    text = "def entry():\n    return 1\n"
    key_a, key_b = "a" * 64, "b" * 64
    path_a = sgcache.store(key_a, text, {"entry": "entry"})
    path_b = sgcache.store(key_b, text, {"entry": "entry"})
    loaded = sgcache.load(key_b)
    assert loaded is not None and sgcache.load_code(path_b, loaded[1], loaded[0]) is not None
    with open(path_a + "c", "rb") as src, open(path_b + "c", "wb") as dst:
        dst.write(src.read())
    loaded = sgcache.load(key_b)
    assert loaded is not None and loaded[2] == path_b
    assert sgcache.load_code(path_b, loaded[1], loaded[0]) is None


def _forged_entry_in(user_module, tmp_path, monkeypatch, d):
    """A well-formed entry for grad(f, wrt="w") in directory `d` (made the cache), whose
    code leaves a marker when executed; (path, marker)."""
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(d))
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    marker = tmp_path / "dir-marker"
    _forge(g.cache_path, marker)
    os.chmod(g.cache_path, 0o600)
    return g.cache_path, marker


def _assert_dir_refused(user_module, d, path, marker, reason):
    before = sorted(os.listdir(d)), open(path).read()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for wrt in ("w", "w", "x"):  # the directory is reported once
            g = srcgrad.grad(user_module.f, wrt=wrt)
            got = g(X, W)
            assert g.compile_count == 1 and g.cache_path.startswith("<srcgrad")
            np.testing.assert_allclose(got, (expected_grad if wrt == "w" else
                                             expected_grad_x)(X, W))
    assert not marker.exists(), "a file in an unsafe cache directory was executed"
    reports = [str(w.message) for w in caught if issubclass(w.category, srcgrad.CacheWarning)]
    assert len(reports) == 1 and str(d) in reports[0] and reason in reports[0], reports
    assert (sorted(os.listdir(d)), open(path).read()) == before  # nothing written either


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=oct)
def test_a_group_or_world_writable_cache_dir_is_not_read(user_module, tmp_path,
                                                         monkeypatch, mode):
    d = tmp_path / f"cache-{mode:o}"
    path, marker = _forged_entry_in(user_module, tmp_path, monkeypatch, d)
    os.chmod(d, mode)
    _assert_dir_refused(user_module, d, path, marker, "writable by group or others")
    # the control: the same directory made private again is read, and the file executed
    os.chmod(d, 0o700)
    g = srcgrad.grad(user_module.f, wrt="w")
    g(X, W)
    assert marker.exists() and g.compile_count == 0


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a directory to another user needs root")
def test_a_cache_dir_owned_by_another_user_is_not_read(user_module, tmp_path, monkeypatch):
    d = tmp_path / "cache-other"
    path, marker = _forged_entry_in(user_module, tmp_path, monkeypatch, d)
    os.chown(d, 4242, -1)
    _assert_dir_refused(user_module, d, path, marker, "owned by another user")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_an_unsafe_cache_dir_is_reported_in_a_new_process(user_module, tmp_path,
                                                           monkeypatch):
    d = tmp_path / "cache-shared"
    path, marker = _forged_entry_in(user_module, tmp_path, monkeypatch, d)
    os.chmod(d, 0o777)
    report = run_in_new_process(tmp_path / "user", d)
    assert not marker.exists()
    assert report["compile_count"] == 1 and report["path"].startswith("<srcgrad")
    assert [w for w in report["warnings"] if "writable by group or others" in w] and \
        len(report["warnings"]) == 1, report["warnings"]
    np.testing.assert_allclose(report["grad"], expected_grad(X, W))


def test_concurrent_writers_leave_a_valid_file(user_module, tmp_path):
    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    code = textwrap.dedent(f"""
        import json, sys, time
        import numpy as np
        sys.path.insert(0, {str(tmp_path / 'user')!r})
        import srcgrad, cached_user_mod
        start = float(sys.argv[1])
        while time.time() < start:  # line the processes up
            time.sleep(0.001)
        g = srcgrad.grad(cached_user_mod.f, wrt="w")
        x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
        w = np.linspace(0.5, -0.5, 12).reshape(3, 4)
        print(json.dumps({{"grad": g(x, w).tolist(), "path": g.cache_path}}))
    """)
    import time

    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.time() + 3.0
    procs = [subprocess.Popen([sys.executable, "-c", code, str(start)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    paths = {r["path"] for r in reports}
    assert len(paths) == 1
    for r in reports:
        np.testing.assert_allclose(r["grad"], expected_grad(X, W))
    # exactly one source file (and its bytecode), no temporaries left behind, and it loads
    # cleanly
    name = os.path.basename(paths.pop())
    assert sorted(os.listdir(cache_dir)) == [name, name + "c"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = srcgrad.grad(user_module.f, wrt="w")
        np.testing.assert_allclose(g(X, W), expected_grad(X, W))
    assert g.compile_count == 0


def test_readers_never_see_a_partial_file_while_writers_replace_it(tmp_path):
    """Writers in several processes store versions of one entry over and over while this
    process loads it: every load gives one complete version (never a CacheWarning)."""
    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    key = "ab" * 32
    versions = {i: f"def entry():\n    return {i}\n" + "# padding\n" * (i * 500)
                for i in range(3)}
    code = textwrap.dedent(f"""
        import sys
        from srcgrad import cache
        i = int(sys.argv[1])
        text = {versions!r}[i]
        for _ in range(150):
            assert cache.store({key!r}, text, {{"entry": "entry", "consts": []}})
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env=env,
                              stderr=subprocess.PIPE, text=True) for i in versions]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        while any(p.poll() is None for p in procs):
            loaded = sgcache.load(key)
            if loaded is not None:
                text, meta, path = loaded
                body = text.split("\n", 2)[2]
                assert body in versions.values()
                seen.add(body)
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    assert seen, "the writers finished before any load"
    assert cache_files(cache_dir) == [key + ".py"]  # no temporaries left behind


def test_empty_cache_dir_variable_turns_the_disk_cache_off(user_module, tmp_path,
                                                           monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", "")
    assert sgcache.cache_dir() is None
    g = srcgrad.grad(user_module.f, wrt="w")
    np.testing.assert_allclose(g(X, W), expected_grad(X, W))
    assert g.compile_count == 1 and g.cache_path.startswith("<srcgrad")
    assert list(home.rglob("*")) == []
    g2 = srcgrad.grad(user_module.f, wrt="w")
    g2(X, W)
    assert g2.compile_count == 1  # nothing on disk to load


def test_cache_false_writes_nothing(user_module):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    g = srcgrad.grad(user_module.f, wrt="w", cache=False)
    np.testing.assert_allclose(g(X, W), expected_grad(X, W))
    v = srcgrad.value_and_grad(user_module.f, wrt="w", cache=False)
    v(X, W)
    assert cache_files(d) == []
    assert g.cache_path.startswith("<srcgrad")


def test_default_location_is_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("SRCGRAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sgcache.cache_dir() == str(tmp_path / "xdg" / "srcgrad")


def test_clear_cache_empties_the_directory(user_module):
    d = os.environ["SRCGRAD_CACHE_DIR"]
    g1 = srcgrad.grad(user_module.f, wrt="w")
    g2 = srcgrad.grad(user_module.f, wrt="x")
    g1(X, W)
    g2(X, W)
    assert len(cache_files(d)) == 2
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not ours")
    srcgrad.clear_cache()
    assert cache_files(d) == []
    assert os.listdir(d) == ["notes.txt"]  # files that are not cache entries stay
    # the in-memory caches were dropped too: the next call compiles again
    np.testing.assert_allclose(g1(X, W), expected_grad(X, W))
    assert g1.compile_count == 2


def test_a_stored_variant_runs_from_the_first_call_of_a_new_object(user_module):
    from srcgrad import specialize

    g1 = srcgrad.grad(user_module.f, wrt="w")
    for _ in range(specialize.HOT_CALLS):
        g1(X, W)
    assert g1.variant_count == 1
    g2 = srcgrad.grad(user_module.f, wrt="w")
    np.testing.assert_allclose(g2(X, W), expected_grad(X, W))
    # loaded from the disk at the first call, not built and not after HOT_CALLS calls
    assert g2.compile_count == 0 and g2.variant_count == 0
    assert list(g2._variants.by_sig) == list(g1._variants.by_sig)
    assert g2.specialized_source(X, W) == g1.specialized_source(X, W)
    # other shapes: no variant stored, the shape-polymorphic code runs, none is built yet
    x3, w3 = X[:, :2].copy(), W[:2].copy()
    np.testing.assert_allclose(g2(x3, w3), expected_grad(x3, w3))
    assert len(g2._variants.by_sig) == 1 and g2.variant_count == 0


def test_a_stored_variant_is_loaded_in_a_new_process(user_module, tmp_path):
    from srcgrad import specialize

    cache_dir = os.environ["SRCGRAD_CACHE_DIR"]
    g = srcgrad.grad(user_module.f, wrt="w")
    for _ in range(specialize.HOT_CALLS):
        g(X, W)
    report = run_in_new_process(tmp_path / "user", cache_dir)
    assert report["compile_count"] == 0 and report["warnings"] == []
    np.testing.assert_allclose(report["grad"], expected_grad(X, W))
    assert report["variants"] == 1
