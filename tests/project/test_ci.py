"""The CI script runs what README.md advertises: the install and test command first, then
the deep property tests."""
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


def test_ci_runs_the_deep_property_tests_the_readme_names():
    readme = " ".join(_read("README.md").split())
    deep = ["python -m pytest tests/compiler/test_property.py --hypothesis-profile=deep",
            "python -m pytest tests/compiler/test_numba.py -k corpus "
            "--hypothesis-profile=deep"]
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
