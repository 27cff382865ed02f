"""A process a test starts that never ends fails that test, saying where
each of its processes was, instead of holding the test run until CI's limit."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import process_time_limits
from process_time_limits import descendants, run_limited

SLEEPER = "import time\ntime.sleep(600)\n"


def test_a_hung_pytest_subprocess_fails_the_test_with_its_workers_stacks(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # Long enough for the xdist worker to reach the test on a loaded runner.
    monkeypatch.setattr(process_time_limits, "PROCESS_LIMIT_S", 30.0)
    pytester.makepyfile(test_hangs="import time\n\ndef test_sleeps():\n    time.sleep(600)\n")
    started = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as failed:
        pytester.runpytest_subprocess("-n", "1", "-p", "no:cacheprovider")
    assert time.monotonic() - started < 120
    message = str(failed.value)
    assert message.startswith("still running after 30 s, so stopped (SIGABRT, then SIGKILL)")
    # The xdist worker's stack, written by faulthandler as it was aborted.
    assert "Fatal Python error: Aborted" in message
    assert 'test_hangs.py", line 4 in test_sleeps' in message
    # Where each process was as it was stopped: the controller and its worker,
    # with what they ran, and the output so far.
    tree = message.split("its processes when stopped:\n")[1].split("its stdout")[0]
    assert len([line for line in tree.splitlines() if line.startswith("  pid ")]) >= 2
    assert "-mpytest" in tree and "state " in tree
    assert "its stdout, the end:" in message and "test session starts" in message


def test_a_pytest_subprocess_that_ends_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_quick="def test_passes():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def parent_of_a_sleeper(pid_file: Path) -> str:
    """A script that starts a sleeping child, writes its pid, and sleeps."""
    return ("import subprocess, sys, time\n"
            f"child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(600)\n")


def test_run_limited_stops_a_process_whose_child_holds_its_output(tmp_path: Path) -> None:
    """subprocess.run(timeout=...) would wait for the grandchild's pipe for
    ten minutes here."""
    pid_file = tmp_path / "grandchild"
    parent = parent_of_a_sleeper(pid_file)
    started = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        run_limited([sys.executable, "-X", "faulthandler", "-c", parent], limit_s=3)
    assert time.monotonic() - started < 60
    assert "still running after 3 s" in str(failed.value)
    assert 'File "<string>", line 4 in <module>' in str(failed.value)  # the parent's stack
    assert process_time_limits._gone(int(pid_file.read_text()))
    assert f"pid {pid_file.read_text()} (parent " in str(failed.value)  # the grandchild's line


def test_run_limited_returns_what_a_finished_process_printed() -> None:
    done = run_limited([sys.executable, "-c", "print('out'); import sys; sys.exit(3)"])
    assert (done.returncode, done.stdout) == (3, "out\n")


def test_descendants_are_found_deepest_first(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    process = subprocess.Popen([sys.executable, "-c", parent_of_a_sleeper(pid_file)])
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        grandchild = int(pid_file.read_text())
        assert descendants(process.pid) == [grandchild]
        ours = descendants(os.getpid())
        assert ours.index(grandchild) < ours.index(process.pid)
    finally:
        process_time_limits.stop_tree(process)
        process.wait()


def test_a_stopped_runs_crash_journals_are_shown(tmp_path: Path) -> None:
    """A worker that crashed before the run hung left faulthandler's report
    in its journal: the failure shows it."""
    journal = tmp_path / ".pytest_cache" / "d" / "metafidelity-journal"
    journal.mkdir(parents=True)
    (journal / "gw0.faults").write_text("Fatal Python error: Segmentation fault\n")
    (journal / "gw1.faults").write_text("")  # nothing to show
    with pytest.raises(AssertionError) as failed:
        run_limited([sys.executable, "-c", SLEEPER], limit_s=2, cwd=tmp_path)
    assert "--- gw0.faults\nFatal Python error: Segmentation fault" in str(failed.value)
    assert "gw1.faults" not in str(failed.value)
