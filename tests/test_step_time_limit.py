"""The behaviour check's time limit on one program step: a step past it is
stopped where it was and reported, and a step that finishes is never
interrupted afterwards."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from pytest_metafidelity import check_faithful
from pytest_metafidelity.checks import step_time_limit
from pytest_metafidelity.checks.step_time_limit import StepTimeout, run_within
from pytest_metafidelity.faithful import KNOWN, PASSED
from pytest_metafidelity.known_differences.definitions.behaviour import (
    behaviour_step_stuck_in_implications,
)


def spin_forever() -> None:
    while True:
        pass


def test_a_step_past_the_limit_is_stopped_and_says_where() -> None:
    start = time.monotonic()
    result = run_within(0.5, spin_forever)
    took = time.monotonic() - start
    assert isinstance(result, StepTimeout)
    assert result.stuck_in[0].endswith("spin_forever"), result.stuck_in
    assert "did not finish within 0.5 s; stopped in" in str(result)
    assert 0.5 <= took < 2.0


def test_a_step_that_finishes_returns_its_value_and_is_not_interrupted_later() -> None:
    # Steps ending around their deadline: the stop must land in the step or
    # not at all, never in the code after it.
    outcomes = set()
    for i in range(60):
        result = run_within(0.02, lambda: time.sleep(0.015 + (i % 10) * 0.001) or "done")
        outcomes.add(type(result).__name__)
        end = time.monotonic() + 0.03
        while time.monotonic() < end:  # a stray stop would be raised here
            pass
    assert outcomes <= {"str", "StepTimeout"}
    assert run_within(5, lambda: 42) == 42
    assert run_within(None, lambda: 43) == 43


def spin_then_swallow_the_stop() -> str:
    try:
        spin_forever()
    except BaseException:  # as a bare ``except:`` in the code a step calls does
        pass
    return "carried on"


def spin_then_fail_in_cleanup() -> None:
    try:
        spin_forever()
    finally:  # as a context manager whose exit fails once interrupted does
        raise RuntimeError("mode stack corrupted")


def in_a_thread_bounded(fn) -> object:
    """``fn()`` in a daemon thread; fails instead of hanging the test."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "still running after 30 s"
    return out[0]


@pytest.mark.parametrize("step", [spin_then_swallow_the_stop, spin_then_fail_in_cleanup])
def test_a_step_that_swallows_or_replaces_the_stop_is_still_reported_stopped(step) -> None:
    # The stop arrives inside the step; the step then returns, or raises
    # something else.  The step ran past its limit all the same, and the
    # caller must not wait for a stop that has already come.
    result = in_a_thread_bounded(lambda: run_within(0.3, step))
    assert isinstance(result, StepTimeout), result
    assert "did not finish within 0.3 s" in str(result)
    if step is spin_then_fail_in_cleanup:  # where it was is known from the chain
        assert result.stuck_in[0].endswith("spin_forever"), result.stuck_in
    end = time.monotonic() + 0.2
    while time.monotonic() < end:  # and no stray stop arrives afterwards
        pass


def test_the_process_runs_normally_after_stops_and_near_misses() -> None:
    # Cancelling a scheduled stop (PyThreadState_SetAsyncExc with NULL) leaves
    # CPython 3.11's "async exception pending" flag set for good; a Hypothesis
    # find() then never returns.  Run in a process of its own, bounded.
    code = textwrap.dedent("""
        import time
        from hypothesis import find, settings, strategies as st
        from pytest_metafidelity.checks.step_time_limit import run_within

        def spin():
            while True:
                pass

        for i in range(40):
            run_within(0.01, lambda: time.sleep(0.008 + (i % 5) * 0.001))
        run_within(0.05, spin)
        print(find(st.lists(st.integers()), lambda x: sum(x) > 100,
                   settings=settings(database=None, derandomize=True)))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[101]"


def test_the_limit_works_off_the_main_thread() -> None:
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(run_within(0.3, spin_forever)))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert isinstance(results[0], StepTimeout)


def test_exceptions_of_the_step_pass_through() -> None:
    def fails() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        run_within(5, fails)


def test_a_short_example_limit_shortens_the_step_limit() -> None:
    assert step_time_limit.current_limit() == step_time_limit.STEP_TIME_LIMIT_S == 20
    for example_timeout, step in ((None, 20), (0, 20), (300, 20), (80, 20), (8, 2)):
        with step_time_limit.for_example_timeout(example_timeout) as limit:
            assert limit == step_time_limit.current_limit() == step
    assert step_time_limit.current_limit() == 20


def test_a_symbolic_view_whose_guard_explodes_is_stopped_and_known() -> None:
    t = torch.empty_strided((4, 3, 4, 4), (6, 3, 2, 2), dtype=torch.int32)
    start = time.monotonic()
    with step_time_limit.for_example_timeout(4):  # a step gets 1 s
        outcome = check_faithful(t, converters=["fake-dynamic"], checks=["behaviour"],
                                 program="p = t0.view(-1)\nt0.add_(1)").outcomes[0]
    assert time.monotonic() - start < 30
    assert outcome.status == KNOWN, outcome.describe()
    (entry_id, m), = outcome.known
    assert entry_id == "behaviour-symbolic-view-guard-explodes"
    assert (m.path, m.attribute) == ("p", "timed out")
    assert m.real.startswith("RuntimeError: view size is not compatible")
    assert m.fake.startswith("StepTimeout: the step did not finish within 1 s")
    assert "ShapeEnv.get_implications" in m.fake
    # Nothing of the stopped step is left behind: no mode entered, and the
    # next program runs to its end.
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    assert _get_current_dispatch_mode() is None
    after = check_faithful(t, converters=["fake-dynamic"], checks=["behaviour"],
                           program="p = t0.reshape(-1)\nt0.add_(1)").outcomes[0]
    assert after.status == PASSED, after.describe()


@pytest.mark.parametrize("recorded, holds", [
    (("timed out", "RuntimeError: view size is not compatible",
      "StepTimeout: the step did not finish within 20 s; stopped in sympy.core.basic.Basic.args, "
      "called from torch.fx.experimental.symbolic_shapes.ShapeEnv.get_implications", 0, (), "p"),
     True),
    # stopped elsewhere: not this difference
    (("timed out", "nothing",
      "StepTimeout: the step did not finish within 20 s; stopped in sympy.simplify", 0, (), "p"),
     False),
    # the real side stopped, not the converted one
    (("timed out",
      "StepTimeout: the step did not finish within 20 s; stopped in x, called from "
      "torch.fx.experimental.symbolic_shapes.ShapeEnv.get_implications", "nothing", 0, (), "p"),
     False),
    (("raised", "RuntimeError: view size", "ValueError: Cannot view", 0, (), "p"), False),
])
def test_the_explosion_entry_reads_only_steps_stopped_in_get_implications(
        recorded: tuple, holds: bool) -> None:
    from pytest_metafidelity.findings import StepDifference

    step = StepDifference(*recorded, "p = t0.view(-1)")
    assert behaviour_step_stuck_in_implications(step) is holds


STEP_LIMIT_SPY = '''
import pytest_metafidelity.checks.step_time_limit as step_time_limit

seen = set()
_run_within = step_time_limit.run_within

def _spy(seconds, fn):
    seen.add(seconds)
    return _run_within(seconds, fn)

step_time_limit.run_within = _spy

def pytest_sessionfinish(session):
    print("step limits seen:", sorted(seen))
'''


@pytest.mark.parametrize("example_timeout, step_limit", [("8", "2.0"), ("300", "20.0")])
def test_the_suite_gives_each_step_a_quarter_of_a_short_example_limit(
        pytester: pytest.Pytester, example_timeout: str, step_limit: str) -> None:
    pytester.makeconftest(STEP_LIMIT_SPY)
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=fake",
        "--metafidelity-checks=behaviour", "--metafidelity-examples=5", "-p", "no:xdist",
        f"--metafidelity-example-timeout={example_timeout}", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*step limits seen: [[]{step_limit}[]]"])
