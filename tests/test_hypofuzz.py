"""HypoFuzz (``hypothesis fuzz``, an optional extra) fuzzes the suite's
items and users' ``@given(meta_tensors())`` tests.

HypoFuzz collects with ``pytest --collect-only`` and then calls the
Hypothesis tests itself in worker processes; these tests run it for real,
briefly, and read what its workers recorded in the example database.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hypofuzz") is None,
    reason="hypofuzz is not installed (pip install 'pytest-metafidelity[fuzz]'; "
           "non-commercial licence)")

HYPOTHESIS_CLI = Path(sys.executable).parent / "hypothesis"
# What runs under HypoFuzz is fuzzed for real, with random examples: the
# targets are the metadata of dense tensors and views, which stock torch
# converts faithfully (the behaviour check's random programs could find a
# new torch difference on any night, which is not what this file tests).
SUITE_ARGS = ["--metafidelity", "--metafidelity-kinds=dense,view",
              "--metafidelity-converters=fake", "--metafidelity-checks=metadata",
              "-p", "no:cacheprovider"]
USER_TEST = '''
from hypothesis import given, settings
from pytest_metafidelity import assert_faithful, meta_tensors

@settings(deadline=None)
@given(meta_tensors(kinds=["view"]))
def test_views_fakeify_faithfully(t):
    assert_faithful(t, converters=["meta"], checks=["metadata"])
'''
COLLECT = """
import json, sys
from hypofuzz import detection
from hypofuzz.collection import collect_tests
detection._in_hypofuzz_run = True
found = collect_tests(sys.argv[1:])
print(json.dumps({"targets": [t.nodeid for t in found.fuzz_targets],
                              "not_collected": {k: str(v) for k, v in found.not_collected.items()}}))
"""


def _clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment without the outer test run's pytest and
    metafidelity settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "METAFIDELITY_"))}
    return {**env, **extra}


def _python(args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    """The JSON a Python command prints on its last line."""
    result = subprocess.run([sys.executable, *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def _fuzz_until(done: Callable[[dict], bool], args: list[str], cwd: Path,
                env: dict[str, str], *, first_look: float) -> tuple[dict, str, bool]:
    """Run ``hypothesis fuzz -n 1 -- ARGS`` until what its workers recorded
    (``pytest_metafidelity.hypofuzz_runs``) satisfies ``done``, 240 s pass or
    it exits by itself; stop it.  Returns what was recorded, its output and
    whether it had exited by itself."""
    command = [str(HYPOTHESIS_CLI), "fuzz", "--no-dashboard", "-n", "1", "--", *args]
    fuzz = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    found: dict = {}
    exited = False
    try:
        deadline = time.monotonic() + 240
        time.sleep(first_look)
        while True:
            found = _python(["-m", "pytest_metafidelity.hypofuzz_runs", *args], cwd, env)
            exited = fuzz.poll() is not None
            if done(found) or exited or time.monotonic() > deadline:
                break
            time.sleep(5)
    finally:
        if fuzz.poll() is None:
            os.killpg(fuzz.pid, signal.SIGTERM)
        output = fuzz.communicate(timeout=60)[0]
    return found, output, exited


def test_hypofuzz_collects_the_items_under_any_profile(tmp_path: Path) -> None:
    """The ``ci`` profile derandomizes and keeps no database; HypoFuzz would
    skip such tests, so under HypoFuzz both are left to the profile."""
    found = _python(["-c", COLLECT, *SUITE_ARGS], tmp_path, _clean_env(METAFIDELITY_PROFILE="ci"))
    assert found["not_collected"] == {}
    assert sorted(t.rsplit("::", 1)[1] for t in found["targets"]) == [
        "test_fidelity[dense-fake]", "test_fidelity[view-fake]"]


@pytest.mark.skipif(not HYPOTHESIS_CLI.exists(), reason=f"no {HYPOTHESIS_CLI}")
def test_hypothesis_fuzz_runs_suite_items_and_user_tests(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    # The shared database, as the nightly workflow gives it: HypoFuzz
    # writes where pytest --metafidelity runs read.
    env = _clean_env(METAFIDELITY_DATABASE=str(tmp_path / "shared-db"))
    args = [*SUITE_ARGS, "test_user.py"]
    found, output, exited = _fuzz_until(
        lambda found: len(found) == 3 and all(r["examples"] > 0 for r in found.values()),
        args, tmp_path, env, first_look=40)
    if exited or any(r["failures"] or r["fatal"] for r in found.values()):
        # HypoFuzz found something -- make it readable: the suite replays a
        # failure HypoFuzz saved for one of its items first.
        replay = subprocess.run(
            [sys.executable, "-m", "pytest", *SUITE_ARGS, "--metafidelity-examples=1"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        pytest.fail(f"HypoFuzz exited={exited}, records={found}\n--- its output:\n"
                    f"{output[-3000:]}\n--- pytest --metafidelity replaying the shared "
                    f"database:\n{replay.stdout[-4000:]}")
    assert "using 1 process to fuzz 3 tests" in output, output[-3000:]
    names = {nodeid.rsplit("::", 1)[1]: record for nodeid, record in found.items()}
    assert set(names) == {"test_fidelity[dense-fake]", "test_fidelity[view-fake]",
                          "test_views_fakeify_faithfully"}, found
    for name, record in names.items():
        assert record["examples"] > 0, (name, found, output[-3000:])
        # Stock torch: no fidelity failure on these items; a failure here
        # is the plugin broken under HypoFuzz (e.g. a closed journal).
        assert record["failures"] == 0 and record["fatal"] == 0, (name, found)
    assert (tmp_path / "shared-db").is_dir()


FAULTY_CONFTEST = '''
from pytest_metafidelity.converters import CONVERTERS, FakeConverter, register_converter


class OffsetDroppingFake(FakeConverter):
    """``fake``, except that a tensor at storage offset 2 or more is
    converted from a copy (offset 0): a fault fuzzing finds quickly and the
    simplest example does not show."""

    name = "offset-dropping"

    def _convert(self, t):
        return super()._convert(t.clone() if t.storage_offset() >= 2 else t)


if OffsetDroppingFake.name not in CONVERTERS:  # HypoFuzz collects more than once
    register_converter(OffsetDroppingFake)
'''
FAULTY_ARGS = ["--metafidelity", "--metafidelity-kinds=view",
               "--metafidelity-converters=offset-dropping", "--metafidelity-checks=metadata",
               "-p", "no:cacheprovider"]


def _one_example(cwd: Path, database: Path) -> subprocess.CompletedProcess[str]:
    """``pytest --metafidelity`` running one example of the faulty item (the
    simplest, unless the database holds one to replay first)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", *FAULTY_ARGS, "--metafidelity-examples=1",
         f"--metafidelity-database={database}"],
        cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not HYPOTHESIS_CLI.exists(), reason=f"no {HYPOTHESIS_CLI}")
def test_a_failure_hypofuzz_finds_is_replayed_first_by_pytest(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(FAULTY_CONFTEST)
    # Without a failure to replay, one example does not find the fault.
    control = _one_example(tmp_path, tmp_path / "empty-db")
    assert control.returncode == 0, control.stdout[-3000:]

    shared = tmp_path / "shared-db"
    env = _clean_env(METAFIDELITY_DATABASE=str(shared))
    found, output, _ = _fuzz_until(lambda found: any(r["failures"] for r in found.values()),
                                   FAULTY_ARGS, tmp_path, env, first_look=20)
    assert any(r["failures"] for r in found.values()), (found, output[-3000:])
    # The worker shrank it and lived: with the Hypothesis the [fuzz] extra
    # allows (see pyproject.toml), not hypofuzz 25.11.1's AttributeError.
    assert "Traceback (most recent call last)" not in output, output[-3000:]

    replay = _one_example(tmp_path, shared)
    assert replay.returncode == 1, replay.stdout[-3000:]
    assert "storage_offset()" in replay.stdout, replay.stdout[-3000:]
