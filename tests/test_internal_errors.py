"""A check that crashes is an internal error, not a finding about torch: its
own status, the traceback, never explained by the known-difference registry,
shown by assert_faithful, the suite's table and the JSON records."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Iterator

import pytest
import torch

from pytest_metafidelity import checks, known_differences
from pytest_metafidelity.checks import CheckCrashed, Conversion, Mismatch, all_checks
from pytest_metafidelity.faithful import (INTERNAL, FidelityError, assert_faithful,
                                          check_faithful)
from pytest_metafidelity.report import Collector, failure_records, item_record


def _divides_by_zero(conv: Conversion) -> list[Mismatch]:
    return [Mismatch(check="crashy", path="t0", attribute="ratio", real=1,
                     fake=1 // len(conv.names[1:]))]


@pytest.fixture
def crashy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A check, registered for the test, that raises ZeroDivisionError."""
    all_checks()
    monkeypatch.setitem(checks._CHECKS, "crashy",
                        checks.CheckSpec("crashy", "crashes on purpose", _divides_by_zero))
    yield "crashy"


def _offset_lost(conv: Conversion) -> list[Mismatch]:
    return [Mismatch(check="lossy", path="t0", attribute="storage_offset()", real=1, fake=0)]


def test_a_crashing_check_is_an_internal_error_with_its_traceback(crashy: str) -> None:
    outcome = check_faithful(torch.ones(2), converters=["meta"],
                             checks=["metadata", crashy]).outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    assert outcome.mismatches == []  # not disguised as a mismatch
    [error] = outcome.internal_errors
    assert error.check == "crashy" and isinstance(error.error, ZeroDivisionError)
    text = outcome.describe()
    assert "internal error in check 'crashy'" in text
    assert "in _divides_by_zero" in text and "ZeroDivisionError" in text
    assert "in run_checks" not in text  # the runner's frame is hidden


def test_other_checks_still_run_and_report_beside_an_internal_error(
        crashy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(checks._CHECKS, "lossy", checks.CheckSpec("lossy", "test", _offset_lost))
    outcome = check_faithful(torch.ones(2), converters=["meta"],
                             checks=[crashy, "lossy"]).outcomes[0]
    assert outcome.status == INTERNAL
    assert [m.check for m in outcome.mismatches] == ["lossy"]
    assert [e.check for e in outcome.internal_errors] == ["crashy"]


def test_the_registry_can_never_explain_an_internal_error_away(
        crashy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real_triage = known_differences.triage

    def explains_everything(converter: str, mismatches: list[Any], conversion: Any,
                            ran: Any, *args: Any) -> Any:
        seen.append((list(mismatches), set(ran)))
        t = real_triage(converter, mismatches, conversion, ran, *args)
        t.explained += [("explains-everything", m) for m in t.unexplained]
        t.unexplained = []
        return t

    monkeypatch.setattr(known_differences, "triage", explains_everything)
    monkeypatch.setitem(checks._CHECKS, "lossy", checks.CheckSpec("lossy", "test", _offset_lost))
    outcome = check_faithful(torch.ones(2), converters=["meta"],
                             checks=[crashy, "lossy"]).outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [(mismatches, ran)] = seen
    # The registry saw the mismatch, never the crash, and judges no entry of
    # the check that crashed (it did not run).
    assert [m.check for m in mismatches] == ["lossy"]
    assert "crashy" not in ran and "lossy" in ran


def test_a_crash_in_the_triage_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise KeyError("no such entry")

    monkeypatch.setattr(known_differences, "triage", broken)
    outcome = check_faithful(torch.ones(2), converters=["meta"], checks=["metadata"]).outcomes[0]
    assert outcome.status == INTERNAL
    assert [e.check for e in outcome.internal_errors] == ["known-differences"]


def test_a_crash_setting_the_converter_up_is_an_internal_error_not_a_conversion_failure() -> None:
    from pytest_metafidelity.converters import (FakeConverter, register_converter,
                                                unregister_converter)

    class BrokenSetUp(FakeConverter):
        name = "broken-set-up"

        def __init__(self) -> None:
            raise AttributeError("a typo in our converter's set-up")

    register_converter(BrokenSetUp)
    try:
        outcome = check_faithful(torch.ones(2), converters=[BrokenSetUp.name]).outcomes[0]
    finally:
        unregister_converter(BrokenSetUp.name)
    assert outcome.status == INTERNAL, outcome.describe()
    assert outcome.mismatches == []  # never "conversion raised"
    [error] = outcome.internal_errors
    assert error.check == "converter set-up" and isinstance(error.error, AttributeError)


@pytest.mark.parametrize("failing_call", [1, 2], ids=["before", "after"])
def test_a_crash_in_the_snapshots_is_an_internal_error_not_a_conversion_failure(
        failing_call: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_metafidelity import snapshots

    real_capture = snapshots.capture
    calls: list[int] = []

    def capture(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == failing_call:
            raise TypeError("a bug in our snapshot code")
        return real_capture(*args)

    monkeypatch.setattr(snapshots, "capture", capture)
    outcome = check_faithful(torch.ones(2), converters=["fake"]).outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    assert outcome.mismatches == []
    assert [e.check for e in outcome.internal_errors] == ["snapshots"]
    assert isinstance(outcome.internal_errors[0].error, TypeError)


@pytest.mark.parametrize("module, name", [
    # The behaviour check reads the storage and autograd checks' findings at
    # the start of a program: a crash there is no longer swallowed.
    ("pytest_metafidelity.checks.storage", "storage_check"),
    # Only torch refusing the recipe's code means the program cannot run (or
    # that no control can be built); a crash of our own code copying or
    # comparing the rebuilt tensors is the check's internal error.
    ("pytest_metafidelity.checks.behaviour", "_copy_bytes"),
])
def test_a_crash_the_behaviour_check_meets_is_its_internal_error(
        monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    import importlib

    def broken(*args: Any) -> None:
        raise IndexError("a bug of ours")

    monkeypatch.setattr(importlib.import_module(module), name, broken)
    outcome = check_faithful(torch.ones(2), converters=["fake"], checks=["behaviour"],
                             program="t0.add_(1)").outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [error] = outcome.internal_errors
    assert error.check == "behaviour" and isinstance(error.error, IndexError)


def test_assert_faithful_raises_chained_to_the_checks_error(crashy: str) -> None:
    with pytest.raises(FidelityError) as info:
        assert_faithful(torch.ones(2), converters=["meta"], checks=[crashy])
    message = str(info.value)
    assert message.startswith("internal error in check 'crashy'")
    assert "not in torch" in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "checks=['crashy']" in info.value.result.reproducer


def test_a_crash_inside_an_inner_check_names_the_outer_check_and_chains(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_metafidelity.checks import wrappers
    from torch.testing._internal.two_tensor import TwoTensor

    all_checks()
    monkeypatch.setattr(wrappers, "INNER_CHECKS", ("crashy",))
    monkeypatch.setitem(checks._CHECKS, "crashy",
                        checks.CheckSpec("crashy", "crashes on purpose", _divides_by_zero))
    t = TwoTensor(torch.ones(2), torch.zeros(2))
    outcome = check_faithful(t, converters=["fake"], checks=["wrappers"]).outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [error] = outcome.internal_errors
    assert error.check == "wrappers" and isinstance(error.error, CheckCrashed)
    assert isinstance(error.error.__cause__, ZeroDivisionError)
    assert "internal error in check 'crashy'" in error.traceback()


def test_the_suite_reports_internal_errors_in_the_table_and_json(
        crashy: str, tmp_path: Any) -> None:
    result = check_faithful(torch.ones(2), converters=["meta"], checks=["metadata", crashy])
    records = failure_records(FidelityError(result), kind="dense", converter="meta",
                              nodeid="suite::test_fidelity[dense-meta]", directory=str(tmp_path))
    [record] = records
    assert record.internal_error is True and record.check == "crashy"
    assert record.traceback is not None and "_divides_by_zero" in record.traceback
    assert "internal error in check 'crashy'" in open(record.reproducer_file).read()
    tally = Counter({"examples": 1, result.outcomes[0].status: 1})
    collector = Collector()
    collector.add(item_record("suite::test_fidelity[dense-meta]", "dense", "meta", tally,
                              "failed", records, ""))
    header, _, row, total = collector.table().splitlines()
    column = header.split().index("internal-error")
    assert row.split()[column] == "1" and total.split()[column + 1] == "1"
    assert row.split()[header.split().index("failed")] == "0"
    text = collector.failures_text()
    assert text.startswith("[internal error in check 'crashy'] dense through meta")
    assert "ZeroDivisionError" in text and "_divides_by_zero" in text


CRASHING_CHECK = '''
from pytest_metafidelity.checks import check

@check("crashy", "crashes on purpose")
def crashy_check(conv):
    return [] if conv.real[0].dim() == 0 else [1 // 0]
'''


def test_a_suite_run_counts_and_lists_internal_errors_apart(pytester: pytest.Pytester) -> None:
    import json

    pytester.makeconftest(CRASHING_CHECK)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
        "--metafidelity-checks=metadata,crashy", "--metafidelity-examples=10",
        f"--metafidelity-report={report}", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "internal-error" in out  # the table's column
    assert "[internal error in check 'crashy'] dense through meta" in out
    assert "ZeroDivisionError" in out and "in crashy_check" in out
    doc = json.loads(report.read_text())
    [item] = doc["items"]
    assert item["counts"]["internal-error"] >= 1 and item["counts"]["failed"] == 0
    [record] = doc["failures"]
    assert record["internal_error"] and record["check"] == "crashy"
    assert "in crashy_check" in record["traceback"]


# -- predicates of the known-difference registry --------------------------------------------------


def _raises_key_error(case: Any) -> bool:
    return {}["no such fact"]


def test_a_crashing_known_difference_predicate_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Never "the entry does not apply": the entry would silently stop
    # explaining, and the bug in the predicate would look like one in torch.
    entry = known_differences.KnownDifference(
        id="crashing-predicate", check="metadata", attribute=r"stride\(\)",
        applies=_raises_key_error, reason="a test entry", link=known_differences.BY_DESIGN)
    monkeypatch.setattr(known_differences, "KNOWN_DIFFERENCES",
                        [*known_differences.KNOWN_DIFFERENCES, entry])

    def stride_lost(conv: Any, real: Any, fake: Any) -> Any:
        return fake.as_strided(fake.shape, (1,) * fake.dim()) if fake.dim() == 2 else fake

    from test_checks import faulty

    with faulty("meta", stride_lost):
        outcome = check_faithful(torch.ones(2, 3), converters=["faulty"],
                                 checks=["metadata"]).outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [error] = outcome.internal_errors
    assert error.check == "known-differences"
    assert isinstance(error.error, known_differences.PredicateError)
    assert isinstance(error.error.__cause__, KeyError)
    assert "_raises_key_error" in str(error.error) and "at t0" in str(error.error)


def test_a_crashing_operator_difference_predicate_is_an_internal_error_of_the_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from test_behaviour import ONLY, built

    entry = known_differences.by_id("op:view-unchecked-storage-bounds")
    assert entry.on_control is not None
    crashing = dataclasses.replace(entry, on_control=dataclasses.replace(
        entry.on_control, applies=lambda m, same_path: 1 // 0))
    monkeypatch.setattr(known_differences, "KNOWN_DIFFERENCES", [crashing])
    (t,) = built("t0 = torch.zeros(())", "t0.untyped_storage().resize_(0)", outputs=("t0",))
    outcome = check_faithful(t, converters=["fake"], checks=ONLY,
                             program="p0 = t0.expand((2,))").outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [error] = outcome.internal_errors
    assert error.check == "behaviour"
    assert isinstance(error.error, known_differences.PredicateError)
    assert isinstance(error.error.__cause__, ZeroDivisionError)
    assert "'view-unchecked-storage-bounds'" in str(error.error)


@pytest.mark.parametrize("where", ["the real side's copies", "the control"])
def test_an_error_of_ours_building_the_real_side_or_the_control_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    # What torch raises running the recipe's code means "no copies" / "no
    # control"; what our code around it raises is never taken for that.
    from pytest_metafidelity.checks import behaviour as behaviour_check
    from pytest_metafidelity.strategies import recipe as recipes_module
    from test_behaviour import ONLY, built

    (t,) = built("t0 = torch.zeros(())", "t0.untyped_storage().resize_(0)", outputs=("t0",))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("injected")

    if where == "the control":
        monkeypatch.setattr(behaviour_check, "_control_tensors", broken)
    else:  # inside Recipe.build, after the recipe's code ran
        monkeypatch.setattr(recipes_module, "_registry", broken)
    outcome = check_faithful(t, converters=["fake"], checks=ONLY,
                             program="p0 = t0.expand((2,))").outcomes[0]
    assert outcome.status == INTERNAL, outcome.describe()
    [error] = outcome.internal_errors
    assert error.check == "behaviour"
    assert isinstance(error.error, ZeroDivisionError)


def test_facts_about_plain_strided_tensors_leave_functorch_wrappers_out() -> None:
    # A wrapper is a torch.Tensor whose storage cannot be read: the storage
    # predicates crashed on every functorch kind before.
    from pytest_metafidelity.known_differences.facts import plain_strided

    seen: list[bool] = []

    def record(x: torch.Tensor) -> torch.Tensor:
        seen.append(plain_strided(x))
        return x

    torch.vmap(record)(torch.ones(2, 3))
    torch.func.grad(lambda x: record(x).sum())(torch.ones(3))
    assert seen == [False, False]
    assert plain_strided(torch.ones(2, 3))
