"""Shared test configuration.

Hypothesis profiles: "default" is sized for CI (the whole suite's property tests take well
under two minutes); "deep" runs many more examples per property (the whole suite in about
ten minutes on two cores; CI runs the deep property tests, tests/compiler/test_property.py):

    python -m pytest --hypothesis-profile=deep

The example database (`.hypothesis/`, ignored by git): the default profile uses none, so a
default run never replays an example saved by another run, and two default runs of one
checkout behave alike; a deep run saves the failures it finds in `.hypothesis/deep` and
replays them first the next time it runs (what one wants while fixing them), without ever
breaking a default run. A failing example is reproduced from what hypothesis prints (the
falsifying example and `@reproduce_failure`), not from the database.

The numba backend compiles each program for one to fifteen seconds: the default run takes a
sample of the tests that compile with it (every fourth parametrization of each such test:
the ones parametrized with the backend "numba", and those of the test_numba*.py modules),
and of the tests marked `sampled` (the corpus on dask); `--all-cases` or the deep profile
takes every one (CI runs them all):

    python -m pytest --all-cases -k "numba or sampled"

At the end of a session that ran feature programs (tests/compiler/test_property.py), a table counts
per feature tag the programs generated, checked and refused (programs.feature_summary).

Every test gets its own srcgrad disk cache (SRCGRAD_CACHE_DIR in a tmp dir), so the suite
never reads or writes ~/.cache/srcgrad and tests cannot see each other's cache files.
"""
from __future__ import annotations

import collections
import os
import sys

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

# every compiler pass checks the IR it hands on (srcgrad.ir.checked); set before srcgrad is
# imported, since the flag is read once
os.environ.setdefault("SRCGRAD_CHECK_IR", "1")

# `tests/` holds plain helper modules (compiler_helpers, programs) imported by the tests
sys.path.insert(0, os.path.dirname(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# max_examples is the number of random programs of tests/compiler/test_property.py's main property
# (the other properties take a fraction of it)
settings.register_profile(
    "default", max_examples=300, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "deep", max_examples=5000, deadline=None,
    database=DirectoryBasedExampleDatabase(os.path.join(ROOT, ".hypothesis", "deep")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _private_srcgrad_cache(tmp_path_factory, monkeypatch):
    """A fresh, private disk cache per test (never ~/.cache/srcgrad)."""
    d = tmp_path_factory.mktemp("srcgrad-cache")
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(d / "cache"))
    yield str(d / "cache")


def pytest_terminal_summary(terminalreporter):
    """Per feature tag of the generated programs: how many, checked, refused."""
    programs = sys.modules.get("programs")
    lines = programs.feature_summary() if programs is not None else []
    if lines:
        terminalreporter.write_sep("-", "generated program features (refusals are accepted "
                                        "only with a location)")
        for line in lines:
            terminalreporter.write_line(line)


# ---- the default run's sample of the numba items -----------------------------------------

#: the default run takes every SAMPLE-th parametrization of a test that compiles with numba
SAMPLE = 4


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sampled: the default run takes every %d-th parametrization (see "
                   "tests/conftest.py); --all-cases every one" % SAMPLE)


def pytest_addoption(parser):
    parser.addoption("--all-cases", action="store_true", default=False,
                     help="run every parametrization of the tests that compile with numba "
                          "(the default run takes every %d-th; the deep profile all)" % SAMPLE)


def _sampled(item) -> bool:
    """A parametrized test item of the default run's sample: marked `sampled`, or one that
    compiles with the numba backend (a `numba` parameter value, a test_numba*.py module)."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return False
    return (item.get_closest_marker("sampled") is not None or
            any(isinstance(v, str) and v == "numba" for v in spec.params.values()) or
            os.path.basename(str(item.path)).startswith("test_numba"))


def pytest_collection_modifyitems(config, items):
    """The default run's sample (see the module's docstring); the same items every run."""
    if config.getoption("--all-cases") or settings.default.max_examples >= 1000:
        return
    seen = collections.Counter()
    keep, drop = [], []
    for item in items:
        if _sampled(item):
            key = (str(item.path), getattr(item, "originalname", item.name))
            seen[key] += 1
            if (seen[key] - 1) % SAMPLE:
                drop.append(item)
                continue
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
