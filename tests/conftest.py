"""Shared test configuration.

Hypothesis profiles: "default" is sized for CI (the whole suite's property tests take well
under two minutes); "deep" runs thousands of examples per property:

    python -m pytest tests --hypothesis-profile=deep

Every test gets its own srcgrad disk cache (SRCGRAD_CACHE_DIR in a tmp dir), so the suite
never reads or writes ~/.cache/srcgrad and tests cannot see each other's cache files.
"""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# `tests/` holds plain helper modules (compiler_helpers, programs) imported by the tests
sys.path.insert(0, os.path.dirname(__file__))

# max_examples is the number of random programs of tests/test_property.py's main property
# (the other properties take a fraction of it)
settings.register_profile(
    "default", max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "deep", max_examples=5000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _private_srcgrad_cache(tmp_path_factory, monkeypatch):
    """A fresh, private disk cache per test (never ~/.cache/srcgrad)."""
    d = tmp_path_factory.mktemp("srcgrad-cache")
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(d / "cache"))
    yield str(d / "cache")
