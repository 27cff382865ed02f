"""The behaviour-only converter faults of ``benchmarks/behaviour_faults.py``
are what they claim: on each one's witness every static check passes and
the ``behaviour`` check fails, as a conversion bug; and the suite, run on a
fault's kind, passes with the static checks and fails with ``behaviour``.
(How fast the default run finds each is ``benchmarks/first_failure.py
--set behaviour``'s business.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_metafidelity.faithful import FAILED, PASSED

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import behaviour_faults  # noqa: E402


# (retain-grad-ignored: the fake side reads the .grad of a non-leaf that does not retain it)
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
@pytest.mark.parametrize("name", list(behaviour_faults.FAULTS))
def test_a_behaviour_fault_passes_every_static_check_and_fails_behaviour(name: str) -> None:
    static, behaviour = behaviour_faults.witness_outcomes(name)
    assert static.status == PASSED, static.describe()
    assert behaviour.status == FAILED, behaviour.describe()
    assert not behaviour.known, behaviour.describe()
    assert all(m.check == "behaviour" and "a conversion bug" in m.detail
               for m in behaviour.mismatches), behaviour.describe()


def test_a_fault_is_taken_off_again() -> None:
    from torch._subclasses.meta_utils import MetaConverter

    call = MetaConverter.__call__
    behaviour_faults.witness_outcomes("view-inplace-version-lost")
    assert MetaConverter.__call__ is call


def test_an_unknown_fault_names_the_faults() -> None:
    with pytest.raises(SystemExit, match="no-such.*expected one of view-backward-stops-at-view"):
        behaviour_faults.install("no-such")


# The fault as the benchmark loads it: a plugin reading METAFIDELITY_FAULT.
PLUGIN = f"""
import sys
sys.path.insert(0, {str(ROOT / "benchmarks")!r})
from behaviour_faults import *  # noqa
"""


def test_the_suite_sees_a_behaviour_fault_only_with_the_behaviour_check(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_metafidelity.checks import default_checks

    pytester.makepyfile(fault_plugin=PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path), prepend=":")
    monkeypatch.setenv(behaviour_faults.FAULT_VARIABLE, "inference-inplace-allowed")
    suite = ["-p", "fault_plugin", "--metafidelity", "--metafidelity-kinds=inference",
             "--metafidelity-converters=fake", "--metafidelity-examples=20",
             "--hypothesis-seed=0", "-p", "no:cacheprovider",
             "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    static = ",".join(c for c in default_checks() if c != "behaviour")
    pytester.runpytest_subprocess(*suite, f"--metafidelity-checks={static}").assert_outcomes(
        passed=1)
    result = pytester.runpytest_subprocess(*suite, "--metafidelity-checks=behaviour")
    result.assert_outcomes(failed=1)
    assert "[behaviour] *: raised differs" in result.stdout.str()
