"""The compiled module stored beside a cached source file: used on a cache hit when it
matches, ignored (the source is compiled instead) when it does not."""
import os
import textwrap

import numpy as np
import pytest

import srcgrad


@pytest.fixture
def module(tmp_path, monkeypatch):
    src = tmp_path / "bc_user_mod.py"
    src.write_text(textwrap.dedent("""
        import numpy as np

        def f(x):
            return np.sum(np.sin(x) * x)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module("bc_user_mod")


def test_a_cache_hit_runs_the_stored_bytecode(module):
    x = np.linspace(-1, 1, 5)
    g = srcgrad.grad(module.f)
    want = g(x)
    assert os.path.exists(g.cache_path + "c")
    g2 = srcgrad.grad(module.f)
    np.testing.assert_allclose(g2(x), want)
    assert g2.compile_count == 0 and g2._code is not None


def test_bytecode_that_does_not_match_is_not_used(module):
    x = np.linspace(-1, 1, 5)
    g = srcgrad.grad(module.f)
    want = g(x)
    with open(g.cache_path + "c", "r+b") as f:  # corrupt the stored bytecode
        f.seek(20)
        f.write(b"\xff\xff\xff\xff")
    g2 = srcgrad.grad(module.f)
    np.testing.assert_allclose(g2(x), want)
    assert g2.compile_count == 0 and g2._code is None  # compiled from the verified source
