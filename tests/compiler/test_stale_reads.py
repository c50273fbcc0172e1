"""What the compiled code took from outside the function at compile time stays checked:
an attribute found missing (hasattr False, getattr's default), an object's class
(isinstance), and a class's protocol methods (the __iter__ and __len__ a `for` and `len()`
ran). Each was once compiled in unguarded: a change between calls left the gradient of
the old function, silently, in this process and, through the disk cache, in the next."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcgrad

import stale_reads_user as U

X = np.array([0.5, -1.0, 2.0])


@pytest.fixture(autouse=True)
def restore():
    stages_class, stages_len = U.STAGES.__class__, U.Stages.__len__
    yield
    for name in ("cube", "scale"):
        if hasattr(U.CFG, name):
            delattr(U.CFG, name)
    U.MODE.__class__ = U.Plain
    U.STAGES.__class__, U.Stages.__len__ = stages_class, stages_len


def _calls(g, n=3):
    return [g(X) for _ in range(n)][-1]


def test_an_attribute_added_after_hasattr_found_none():
    g = srcgrad.grad(U.optional_cube)
    np.testing.assert_allclose(_calls(g), 2 * X)
    U.CFG.cube = True
    np.testing.assert_allclose(_calls(g), 3 * X ** 2)
    del U.CFG.cube
    np.testing.assert_allclose(_calls(g), 2 * X)


def test_an_attribute_added_after_getattr_gave_its_default():
    g = srcgrad.grad(U.optional_scale)
    np.testing.assert_allclose(_calls(g), 4 * X)
    U.CFG.scale = 5.0
    np.testing.assert_allclose(_calls(g), 10 * X)


def test_an_objects_class_changed_after_isinstance():
    g = srcgrad.grad(U.by_class)
    np.testing.assert_allclose(_calls(g), 2 * X)
    U.MODE.__class__ = U.Special
    np.testing.assert_allclose(_calls(g), 3 * X ** 2)


def test_a_protocol_method_replaced_on_the_class_or_the_objects_class_changed():
    g = srcgrad.grad(U.staged)
    np.testing.assert_allclose(_calls(g), 2 * 2 * 3.0 * X)  # len 2, weights sum to 3
    U.Stages.__len__ = lambda self: 5
    np.testing.assert_allclose(_calls(g), 5 * 2 * 3.0 * X)
    U.Stages.__len__ = lambda self: len(self.weights)
    U.STAGES.__class__ = U.Doubled
    np.testing.assert_allclose(_calls(g), 2 * 2 * 6.0 * X)


CHILD = textwrap.dedent('''
    import numpy as np, srcgrad, stale_model
    x = np.array([0.5, -1.0, 2.0])
    print(repr([srcgrad.grad(stale_model.loss)(x) for _ in range(3)][-1].tolist()))
''')


def test_a_protocol_method_edited_in_another_module_is_seen_by_the_disk_cache(tmp_path):
    """The next process must not reuse the module compiled with the old `__len__`."""
    (tmp_path / "stale_model.py").write_text(textwrap.dedent('''
        import numpy as np
        from stale_data import batch


        def loss(x):
            return np.sum(x ** 2) * len(batch)
    '''))
    (tmp_path / "child.py").write_text(CHILD)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, SRCGRAD_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), root]))
    got = []
    for n, later in ((2, 0), (3, 5)):
        data = tmp_path / "stale_data.py"
        data.write_text(f"class Batch:\n    def __len__(self):\n        return {n}\n\n\n"
                        "batch = Batch()\n")
        st = os.stat(data)  # (a later modification time, as an edit a while after gives)
        os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + later * 10 ** 9))
        out = subprocess.run([sys.executable, "child.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        got.append(eval(out.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(got[0], 2 * 2 * X)
    np.testing.assert_allclose(got[1], 2 * 3 * X)


def test_a_number_nested_deeper_than_a_snapshot_goes():
    g = srcgrad.grad(U.deep_scale)
    np.testing.assert_allclose(_calls(g), 4 * X)
    inner = U.DEEP
    for _ in range(9):
        inner = inner[0]
    inner[0] = 5.0
    try:
        np.testing.assert_allclose(_calls(g), 10 * X)
    finally:
        inner[0] = 2.0


def test_a_list_that_holds_itself():
    g = srcgrad.grad(U.looped_scale)
    np.testing.assert_allclose(_calls(g), np.full(3, 3.0))
    U.LOOPED[0] = 4.0
    try:
        np.testing.assert_allclose(_calls(g), np.full(3, 4.0))
    finally:
        U.LOOPED[0] = 3.0
