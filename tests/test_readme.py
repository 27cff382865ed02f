"""The README is a contract: every command it shows runs, and its reference
sections name every option, kind, converter and check."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from process_time_limits import run_limited

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
# Keep README commands quick: 1 example per item, a few kinds and converters,
# unless the command itself chooses them (the command line wins over the env).
QUICK_ENV = {
    "METAFIDELITY_EXAMPLES": "1",
    "METAFIDELITY_KINDS": "dense,view",
    "METAFIDELITY_CONVERTERS": "fake",
}


def _commands(prefix: str) -> list[str]:
    lines = [line.split("#")[0].strip() for lang, body in BLOCKS if not lang
             for line in body.splitlines()]
    return [line for line in lines if line.startswith(prefix)]


PYTEST_COMMANDS = _commands("pytest ")


def test_readme_starts_with_the_two_commands() -> None:
    first_block = BLOCKS[0][1]
    assert "python3 dev.py fidelity" in first_block and "python3 dev.py test" in first_block
    assert README.index("```") < 200


@pytest.mark.parametrize("command", PYTEST_COMMANDS)
def test_readme_pytest_command_runs(command: str, pytester: pytest.Pytester) -> None:
    args = shlex.split(command)[1:]
    env = {k: v for k, v in QUICK_ENV.items() if f"--{k.lower().replace('_', '-')}" not in command}
    for key, value in env.items():
        pytester._monkeypatch.setenv(key, value)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*metafidelity: kinds x converters*"])
    for arg in args:
        if arg.startswith("--metafidelity-report="):
            assert (pytester.path / arg.split("=", 1)[1]).exists()


def test_readme_fidelity_command_runs() -> None:
    env = {**os.environ, **QUICK_ENV}
    result = run_limited([sys.executable, str(ROOT / "dev.py"), "fidelity", "-q",
                          "-p", "no:cacheprovider"], cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "metafidelity: kinds x converters" in result.stdout


def test_readme_python_examples_pass(pytester: pytest.Pytester) -> None:
    examples = [body for lang, body in BLOCKS if lang == "python"]
    assert examples
    for i, body in enumerate(examples):
        pytester.makepyfile(**{f"test_readme_example_{i}": body})
    # Hypothesis' own "ci" profile (derandomized), CI or not: the examples
    # are a fixed sample, so a difference torch newly shows is not reported
    # as a broken README on one machine and not another.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-profile=ci",
                                           "-W", "ignore::UserWarning")
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert result.parseoutcomes().get("passed", 0) >= len(examples)


def test_readme_documents_every_option() -> None:
    from pytest_metafidelity.options import OPTIONS

    for name, env, _, _ in OPTIONS:
        assert f"`--{name.replace('_', '-')}" in README, name
        assert env in README, env


def test_readme_documents_every_kind_converter_and_check() -> None:
    from pytest_metafidelity.checks import all_checks
    from pytest_metafidelity.converters import CONVERTERS
    from pytest_metafidelity.strategies import all_kinds

    for name in [*all_kinds(), *CONVERTERS, *all_checks()]:
        assert f"`{name}`" in README, f"{name} is not documented in README.md"
