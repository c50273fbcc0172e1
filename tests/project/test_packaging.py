"""The package's metadata: the license, the version written in one place, py.typed, and an
sdist that ships everything its tests read."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tarfile

import pytest

import srcgrad

from paths import ROOT  # noqa: E402  (tests/paths.py)


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def _pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _git_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    except OSError:
        return None
    return out.stdout.split() if out.returncode == 0 and out.stdout.strip() else None


def test_mit_license_file():
    text = _read("LICENSE")
    assert text.startswith("MIT License")
    assert re.search(r"^Copyright \(c\) \d{4} the srcgrad authors$", text, re.M)
    assert "WITHOUT WARRANTY OF ANY KIND" in text


def test_pyproject_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    data = _pyproject()
    project = data["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    # a License :: classifier beside an SPDX expression is an error for setuptools
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert "Typing :: Typed" in project["classifiers"]
    req = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    assert req and int(re.search(r">=(\d+)", req[0]).group(1)) >= 77  # PEP 639 support


def test_the_version_is_written_once():
    data = _pyproject()
    assert "version" not in data["project"] and "version" in data["project"]["dynamic"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "srcgrad.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]\d+|rc\d+|\.dev\d+)?", srcgrad.__version__)
    from srcgrad import cache

    assert cache.VERSION == srcgrad.__version__
    literal = f'"{srcgrad.__version__}"'
    holders = []
    for pkg in ("srcgrad", "runtime"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                        if literal in fh.read():
                            holders.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    assert holders == [os.path.join("srcgrad", "__init__.py")]
    assert literal not in _read("pyproject.toml")


def test_py_typed_is_shipped_as_package_data():
    assert os.path.isfile(os.path.join(ROOT, "srcgrad", "py.typed"))
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["srcgrad"]


def test_manifest_names_every_tracked_file_outside_the_packages():
    """What the sdist ships beside the packages is what MANIFEST.in names: every tracked
    file the tests may read (tests, examples, benchmarks, README, .ci/run...)."""
    files = _git_files()
    if files is None:
        pytest.skip("not a git checkout")
    rules = [ln.split() for ln in _read("MANIFEST.in").splitlines()
             if ln.strip() and not ln.startswith("#")]
    included = {p for r in rules if r[0] == "include" for p in r[1:]}
    grafted = {p for r in rules if r[0] == "graft" for p in r[1:]}
    pruned = {p for r in rules if r[0] == "prune" for p in r[1:]}
    missing = []
    for f in files:
        top = f.split("/", 1)[0]
        if top in ("srcgrad", "runtime") or f in ("pyproject.toml", "MANIFEST.in"):
            continue  # setuptools ships these itself
        if f in included or (top in grafted and not any(f.startswith(p + "/") for p in pruned)):
            continue
        missing.append(f)
    assert missing == []


@pytest.mark.skipif(importlib.util.find_spec("build") is None,
                    reason="the sdist check needs `pip install build`")
def test_the_sdist_holds_every_tracked_file(tmp_path):
    """Built without isolation (no download): needs setuptools >= 77 installed."""
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("the sdist check needs setuptools >= 77 installed")
    files = _git_files()
    if files is None:
        pytest.skip("not a git checkout")
    out = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                          "--outdir", str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (sdist,) = tmp_path.glob("srcgrad-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert sorted(set(files) - names) == []
    assert "LICENSE" in names and "srcgrad/py.typed" in names
