"""The parts of long runs, one at a time: the time budget, the progress
line, the journal, crash classification, child processes and known crashes
run in them."""

from __future__ import annotations

import ctypes
import json
import os
import time

import pytest
import torch

from pytest_metafidelity import check_faithful
from pytest_metafidelity.child import Ending, run_in_child
from pytest_metafidelity.crash_guards import (ConversionCrash, known_crash,
                                              run_known_crashes_in_children)
from pytest_metafidelity.report import Failure, ItemRecord
from pytest_metafidelity.suite import crashes, journal
from pytest_metafidelity.suite.budget import FIRST_PASS_EXAMPLES, MIN_EXAMPLES, TimeBudget
from pytest_metafidelity.suite.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- the time budget ----------------------------------------------------------


def test_budget_slices_what_is_left_among_the_items_left() -> None:
    clock = Clock()
    budget = TimeBudget(100.0, n_items=4, clock=clock)
    first = budget.start_item()
    assert first.slice == 25.0
    clock.now += 10.0  # the first item gave 15 s back
    assert budget.start_item().slice == 30.0  # 90 s over 3 items


def test_budget_rounds_fill_the_slice_from_the_latest_rounds_cost() -> None:
    clock = Clock()
    budget = TimeBudget(10.0, n_items=1, clock=clock)
    item = budget.start_item()
    assert budget.next_round(item) == MIN_EXAMPLES  # nothing measured yet
    clock.now += 3.0  # warm-up: 1 s per example
    budget.finish_round(item, MIN_EXAMPLES, 3.0, found_new=True)
    # 7 s left at 1 s per example: 7, within the growth cap (4x 3 examples).
    assert budget.next_round(item) == 7
    clock.now += 0.3
    budget.finish_round(item, 7, 0.3, found_new=False)  # 0.04 s per example
    assert budget.next_round(item) == 28  # 4x the last round, though 167 would fit
    clock.now = budget.started + 10.0
    assert budget.next_round(item) == 0  # the slice is spent


def test_budget_extends_an_item_only_out_of_time_that_earlier_items_left() -> None:
    clock = Clock()
    budget = TimeBudget(120.0, n_items=3, clock=clock)
    first = budget.start_item()
    assert first.slice == 40.0
    budget.finish_round(first, 3, 1.0, found_new=True)
    budget.finish_round(first, 3, 1.0, found_new=True)
    # Nothing left over yet: finding something new earns no time from the
    # items still to run.
    assert first.slice == 40.0 and not first.extended
    clock.now += 10.0
    budget.finish_item(first)  # it stopped early (it failed, say): 30 s left over
    second = budget.start_item()
    assert second.slice == 40.0  # 80 s for two, less the 30 s kept for extensions
    budget.finish_round(second, 3, 1.0, found_new=True)  # the first round always does
    assert second.slice == 40.0 and not second.extended
    budget.finish_round(second, 3, 1.0, found_new=True)
    assert second.slice == 60.0 and second.extended and budget.left_over == 10.0
    budget.finish_round(second, 3, 1.0, found_new=True)
    assert second.slice == 60.0  # once
    clock.now += 60.0
    budget.finish_item(second)
    assert budget.start_item().slice == 50.0  # the last item gets what is left, all of it


def test_budget_keeps_the_overhead_of_the_items_left_out_of_each_slice() -> None:
    clock = Clock()
    budget = TimeBudget(100.0, n_items=5, clock=clock)
    first = budget.start_item()
    assert first.slice == 20.0
    clock.now += 22.0  # its rounds overran, and pytest's own work took time
    second = budget.start_item()
    assert budget.overhead == 2.0
    # 78 s left; the 3 items after this one will cost 2 s each beyond their slices.
    assert second.slice == (78.0 - 3 * 2.0) / 4


def test_budget_counts_a_first_pass_round_as_the_items_first() -> None:
    clock = Clock()
    budget = TimeBudget(10.0, n_items=1, clock=clock)
    item = budget.start_item()
    assert budget.next_round(item) == FIRST_PASS_EXAMPLES  # not yet run
    budget.count_first_pass(item, FIRST_PASS_EXAMPLES, 0.3)  # it ran before the item's turn
    assert (item.rounds, item.examples, item.first_pass) == (1, 3, 3)
    # 10 s at 0.1 s per example would fit 100: rounds grow at most 4x, from
    # the first pass's 3.
    assert budget.next_round(item) == 12
    assert item.as_record().share == 10.0 and item.as_record().first_pass == 3


# -- the progress line --------------------------------------------------------


def _record(examples: int, *, failed: bool = False, crashed: int = 0) -> ItemRecord:
    failure = Failure(signature="oracle|dense|meta|x", kind="dense", converter="meta")
    return ItemRecord(nodeid="dense-meta", kind="dense", converter="meta",
                      counts={"examples": examples, "crashed": crashed, "hung": 0},
                      failures=[failure] if failed else [])


def test_a_later_rounds_seed_is_the_same_in_every_process_and_checkout() -> None:
    """--hypothesis-seed reproduces a budget run's later rounds too: their
    seeds do not come from Python's hash(), which differs between processes
    for strings (PYTHONHASHSEED), nor from the node id's path, which differs
    between checkouts."""
    import subprocess
    import sys

    script = ("from pytest_metafidelity.suite.runner import round_seed\n"
              "print([round_seed(7, p + '::test_fidelity[view-fake]', r)\n"
              "       for p in ('a/test_fidelity.py', 'b/c/test_fidelity.py') for r in (1, 2)])")
    seen = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": hash_seed}
                           ).stdout.strip()
            for hash_seed in ("1", "2")}
    assert len(seen) == 1
    first, second, other_path_first, other_path_second = json.loads(seen.pop())
    assert (first, second) == (other_path_first, other_path_second)
    assert first != second  # each round draws fresh examples


def test_progress_line_is_rate_limited_and_says_how_far() -> None:
    clock, lines = Clock(), []
    progress = Progress(lines.append, budget=3600.0, clock=clock, interval=5.0, total_items=10)
    clock.now += 1.0
    progress.item_done(_record(100))
    assert lines == []  # less than 5 s since the start
    clock.now += 9.0
    progress.item_done(_record(100, failed=True, crashed=1))
    assert lines == ["metafidelity progress: 2/10 items, 200 examples (20.0/s), 1 failed, "
                     "1 crashed, 0 hung, 59 min 50 s left"]
    clock.now += 1.0
    progress.item_done(_record(5))
    assert len(lines) == 1


def test_progress_without_a_budget_estimates_the_time_left() -> None:
    clock = Clock()
    progress = Progress(lambda line: None, budget=None, clock=clock, total_items=4)
    clock.now += 30.0
    progress.item_done(_record(10))
    assert progress.line(clock.now).endswith("1 min 30 s left (estimated)")


# -- the journal and what a dead process left ----------------------------------


def test_journal_keeps_the_running_example_until_it_ends(tmp_path) -> None:
    j = journal.Journal(str(tmp_path), "w", timeout=None)
    try:
        assert journal.read(str(tmp_path), "w") is None  # idle
        j.begin(journal.JournalEntry(journal.RUNNING, 0, nodeid="n", kind="view",
                                     converter="fake", recipe="x = 1\n", example=4))
        remains = journal.read(str(tmp_path), "w")
        assert remains is not None
        assert (remains.entry.nodeid, remains.entry.example, remains.entry.pid) == (
            "n", 4, os.getpid())
        j.end()
        assert journal.read(str(tmp_path), "w") is None
    finally:
        j.close()
    assert not os.listdir(tmp_path)


def test_journal_keeps_a_failed_example_until_its_failure_is_reported(tmp_path) -> None:
    j = journal.Journal(str(tmp_path), "w", timeout=None)
    try:
        entry = journal.JournalEntry(journal.RUNNING, 0, nodeid="n", example=2)
        j.begin(entry)
        j.reported()  # nothing failed: the running example stays
        assert journal.read(str(tmp_path), "w").entry.reporting is False
        j.reporting()
        remains = journal.read(str(tmp_path), "w")
        assert remains is not None and remains.entry.reporting is True
        assert (remains.entry.nodeid, remains.entry.example) == ("n", 2)
        j.reported()  # Hypothesis moved on
        assert journal.read(str(tmp_path), "w") is None
        j.begin(journal.JournalEntry(journal.RUNNING, 0, nodeid="n", example=3))
        j.reporting()
        j.begin(journal.JournalEntry(journal.RUNNING, 0, nodeid="n", example=4))
        assert journal.read(str(tmp_path), "w").entry.reporting is False  # a new example
    finally:
        j.close()


def test_abandoned_journals_are_those_of_dead_processes(tmp_path) -> None:
    run = tmp_path / "run-1"
    run.mkdir()
    dead = _dead_pid()
    for name, pid in (("dead", dead), ("alive", os.getpid())):
        (run / f"{name}.json").write_text(
            json.dumps({"state": "running", "pid": pid, "nodeid": name}))
    (run / "dead.faults").write_text("Fatal Python error: Segmentation fault\n")
    (found,) = journal.abandoned(str(tmp_path))
    assert found.entry.nodeid == "dead" and "Segmentation fault" in found.faults


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


SEGFAULT_REPORT = """Fatal Python error: Segmentation fault

Thread 0x00007eff (most recent call first):
  File "/x/pytest_metafidelity/checks/step_time_limit.py", line 129 in _watch
  File "/usr/lib/python3.11/threading.py", line 982 in run

Thread 0x00007f00 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait

Current thread 0x00007f01 (most recent call first):
  File "/x/site-packages/torch/_subclasses/meta_utils.py", line 900 in meta_tensor
  File "/x/pytest_metafidelity/converters.py", line 98 in convert
"""


@pytest.mark.parametrize("faults, returncode, expected", [
    (SEGFAULT_REPORT, None, ("crashed", "SIGSEGV", None)),
    ("Fatal Python error: Aborted\n", -6, ("crashed", "SIGABRT", None)),
    ("Timeout (0:00:05)!\nThread 0x1 (most recent call first):\n", 1, ("hung", None, 1)),
    ("", -9, ("crashed", "SIGKILL", None)),
    ("", 3, ("crashed", None, 3)),
])
def test_classify_a_dead_process(faults, returncode, expected) -> None:
    assert crashes.classify(faults, returncode) == expected


def test_last_frames_are_those_of_the_thread_running_the_example() -> None:
    frames = crashes.last_frames(SEGFAULT_REPORT)
    # (not the behaviour check's step-limit watchdog, a thread of ours too)
    assert frames.startswith("Current thread 0x00007f01")
    assert "meta_utils.py" in frames and "threading.py" not in frames


# -- child processes and known crashes ---------------------------------------


@pytest.mark.parametrize("body, expected", [
    (lambda: None, Ending(exit_status=0)),
    (lambda: 1 / 0, Ending(exit_status=1)),
    (lambda: ctypes.string_at(0), Ending(signal="SIGSEGV")),
    (os.abort, Ending(signal="SIGABRT")),
])
def test_run_in_child_says_how_the_child_ended(body, expected) -> None:
    assert run_in_child(body, timeout=30) == expected


def test_run_in_child_kills_a_child_past_its_time() -> None:
    def sleep_a_year() -> None:
        time.sleep(3600 * 24 * 365)

    start = time.monotonic()
    assert run_in_child(sleep_a_year, timeout=0.5) == Ending(hung=True)
    assert time.monotonic() - start < 10


@pytest.fixture
def known_crashes_run():
    run_known_crashes_in_children(True)
    yield
    run_known_crashes_in_children(False)


def test_known_crash_is_not_attempted_by_default() -> None:
    attempted = []
    with pytest.raises(ConversionCrash, match="not attempted"):
        known_crash("it segfaults", lambda: attempted.append(1))
    assert attempted == []


def test_known_crash_that_still_crashes_in_a_child(known_crashes_run) -> None:
    with pytest.raises(ConversionCrash, match="attempted in a child process, which killed by "
                                              "SIGSEGV"):
        known_crash("it segfaults", lambda: ctypes.string_at(0))


def test_known_crash_that_no_longer_crashes_lets_the_conversion_run(known_crashes_run) -> None:
    assert known_crash("it used to segfault", lambda: None) is None


def test_torchs_registered_segfault_runs_in_a_child_and_still_occurs(known_crashes_run) -> None:
    # real-zero-byte-storage-segfault: fake-real copies past a 0-byte storage.
    t = torch.randn(4)
    t.untyped_storage().resize_(0)
    outcome = check_faithful(t, converters=["fake-real"]).outcomes[0]
    assert outcome.status == "known-difference", outcome.describe()
    ((entry, mismatch),) = outcome.known
    assert entry == "real-zero-byte-storage-segfault"
    assert "attempted in a child process, which killed by SIGSEGV" in mismatch.fake


def test_a_suite_item_runs_no_phase_its_budget_cannot_bound() -> None:
    # Phase.target hill-climbs the programs' score with no bound on examples
    # for rounds under 1,000 (one round of a 30-minute run took 21 minutes);
    # Phase.explain traces every line while shrinking.  Generating, reusing
    # and shrinking stay.
    from hypothesis import Phase

    from pytest_metafidelity.suite.run import SuiteRun
    from pytest_metafidelity.suite.runner import item_settings

    phases = set(item_settings(SuiteRun(options=None), 5).phases)
    assert not phases & {Phase.target, Phase.explain}
    assert {Phase.reuse, Phase.generate, Phase.shrink} <= phases
