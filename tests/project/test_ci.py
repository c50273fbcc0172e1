"""The CI script runs what README.md advertises: the install and test command first, then
the deep property tests and every case the default run leaves out."""
import os
import re

from paths import ROOT  # noqa: E402  (tests/paths.py)


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def _commands(script):
    return [ln.strip() for ln in script.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def test_ci_runs_the_readme_test_command_first():
    readme = _read("README.md")
    block = re.search(r"Run the tests:\n\n```\n(.*?)\n```", readme, re.S).group(1).strip()
    commands = _commands(_read(".ci/run"))
    tests = [c for c in commands if "pytest" in c]
    assert tests[0] == block


def test_ci_runs_the_deeper_tests_the_readme_names():
    readme = " ".join(_read("README.md").split())
    deep = ["python -m pytest -n auto --dist worksteal tests/compiler/test_property.py "
            "--hypothesis-profile=deep",
            'python -m pytest -n auto --dist worksteal --all-cases -k "numba or sampled"']
    for command in deep:
        assert f"`{command}`" in readme
    tests = [c for c in _commands(_read(".ci/run")) if "pytest" in c]
    assert len(tests) == 3 and all(t.endswith(d) for t, d in zip(tests[1:], deep))


def test_default_runs_never_replay_saved_examples():
    """A failure a deep run saved in `.hypothesis/` never breaks a default run."""
    from hypothesis import settings

    assert settings.get_profile("default").database is None
    deep = settings.get_profile("deep").database
    assert os.path.join(ROOT, ".hypothesis") in str(getattr(deep, "path", ""))
    assert ".hypothesis/" in _read(".gitignore").split()


class _Item:
    def __init__(self, path, name, params=None, marked=False):
        self.path, self.originalname, self.name = path, name, f"{name}[{params}]"
        if params is not None:
            self.callspec = type("Spec", (), {"params": params})()
        self._marked = marked

    def get_closest_marker(self, name):
        return object() if self._marked and name == "sampled" else None


class _Config:
    def __init__(self, all_cases):
        self.all_cases, self.dropped = all_cases, []
        self.hook = type("Hook", (), {"pytest_deselected": lambda _, items:
                                      self.dropped.extend(items)})()

    def getoption(self, name):
        assert name == "--all-cases"
        return self.all_cases


def test_the_default_run_takes_a_sample_of_the_numba_cases_and_all_cases_every_one():
    import conftest

    numba = [_Item("tests/compiler/test_x.py", "test_f", {"backend": "numba", "k": k})
             for k in range(7)]
    numpy = [_Item("tests/compiler/test_x.py", "test_f", {"backend": "numpy", "k": k})
             for k in range(7)]
    module = [_Item("tests/compiler/test_numba_x.py", "test_g", {"op": k}) for k in range(4)]
    marked = [_Item("tests/compiler/test_y.py", "test_h", {"c": k}, marked=True)
              for k in range(3)]
    single = [_Item("tests/compiler/test_numba_x.py", "test_single")]
    items = numba + numpy + module + marked + single
    config = _Config(all_cases=False)
    kept = list(items)
    conftest.pytest_collection_modifyitems(config, kept)
    every = conftest.SAMPLE
    assert 1 < every < 7
    assert kept == numba[::every] + numpy + module[::every] + marked[::every] + single
    assert len(config.dropped) == len(items) - len(kept)
    config = _Config(all_cases=True)
    everything = list(items)
    conftest.pytest_collection_modifyitems(config, everything)
    assert everything == items and not config.dropped
