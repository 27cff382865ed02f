"""Shrinking crashed and hung cases: Hypothesis, with each candidate run in a
child process.

A crash cannot be shrunk in the process it kills.  At the end of a run a
child forked from the controller (which has the run's kinds and conftests;
drawing a program runs torch, and may crash too: that must not end the run)
replays each crash's choice sequence (from its journal) through
the same draws the suite makes (:func:`..runner.draw_case`, then the
``behaviour`` check's program) and lets
Hypothesis shrink it; each candidate's reproducer runs in a child forked
from a *zygote* -- a process that has imported torch and this package but
run no torch op, so forking it is safe and a candidate costs milliseconds
of start-up rather than a second of imports.  A candidate counts when its
child ends the same way (the same signal, the same exit status, or hung).
Shrinking is capped by ``--metafidelity-shrink-crashes`` seconds for the
whole run; the report says, per crash, how far it got and whether the
final reproducer crashed standalone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from ..child import Ending
from ..outcomes import HUNG

if TYPE_CHECKING:
    from ..options import SuiteOptions
    from ..report import Collector
    from ..report.records import Crash


class Zygote:
    """A child Python that forks a grandchild per reproducer it is sent."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest_metafidelity.suite.crash_shrinking", "--zygote"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            cwd=os.getcwd())

    def run(self, source: str, timeout: float) -> Ending:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"source": source, "timeout": timeout}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the crash-shrinking zygote process died")
        return Ending(**json.loads(line))

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def zygote_main() -> None:
    """The zygote's loop: a JSON request per line in, an Ending per line out."""
    import dataclasses
    import warnings

    from ..child import run_in_child

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch  # noqa: F401  (imported once, before any fork)

        import pytest_metafidelity.faithful  # noqa: F401
    for line in sys.stdin:
        request = json.loads(line)
        source = request["source"]

        def run_source(source: str = source) -> None:
            exec(compile(source, "<metafidelity reproducer>", "exec"), {"__name__": "__main__"})

        ending = run_in_child(run_source, float(request["timeout"]))
        sys.stdout.write(json.dumps(dataclasses.asdict(ending)) + "\n")
        sys.stdout.flush()


def same_ending(record: "Crash", ending: Ending) -> bool:
    """Did a candidate end the way the recorded crash did?"""
    if record.status == HUNG:
        return ending.hung
    if record.signal:
        return ending.signal == record.signal
    if record.exit_status is not None:
        return ending.exit_status == record.exit_status and ending.signal is None
    return ending.crashed


def shrink_crashes(collector: "Collector", opts: "SuiteOptions", directory: str) -> None:
    """Shrink every distinct crash of the run within ``opts.shrink_crashes``
    seconds in all; each record gets a ``shrinking`` note and ``reproduces``."""
    from ..child import CAN_FORK
    from .crashes import write_reproducer

    crashes = [c for c in collector.unique_crashes() if c.choices]
    for record in crashes:
        if record.while_reporting:  # the example alone does not crash
            record.shrinking = ("not shrunk: it crashed while its failure was being "
                                   "reported; the reproducer shows the failure")
    crashes = [c for c in crashes if not c.while_reporting]
    if not crashes:
        return
    if not CAN_FORK:
        for record in crashes:
            record.shrinking = "not shrunk: needs os.fork (POSIX)"
        return
    deadline = time.monotonic() + opts.shrink_crashes
    pending = list(crashes)
    while pending:
        if deadline - time.monotonic() <= 0:
            for record in pending:
                record.shrinking = "not shrunk: the run's shrinking time was used up"
            break
        pending = _shrink_in_a_child(pending, deadline, opts)
    for record in crashes:
        record.reproducer_file = write_reproducer(record, directory)
        record.replay = f"python {record.reproducer_file}"


# What shrinking writes into a crash's record.
SHRINKING_FIELDS = ("reproducer", "reproduces", "shrinking")
# How long past the shrinking deadline a shrinking process may take to stop
# (its last candidate's child, then its zygote).
STOPPING_SECONDS = 30.0


def _shrink_in_a_child(records: list["Crash"], deadline: float,
                       opts: "SuiteOptions") -> list["Crash"]:
    """Shrink ``records`` in a child forked from this process, which has
    the run's kinds, subclasses and conftests: drawing a candidate runs
    torch (a program's steps run on a copy of the real tensors) and may
    crash it, which must not end the run.  The child writes each record's
    result as it finishes; the records it did not reach are returned.  The
    record it was shrinking when it died keeps its reproducer, and says so."""
    import tempfile

    from ..child import run_in_child

    with tempfile.TemporaryFile("w+") as progress:
        def shrink_them() -> None:
            import torch

            torch.set_num_threads(1)  # (no OpenMP pool forked from the parent's)
            with Zygote() as zygote:
                for i, record in enumerate(records):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    progress.write(json.dumps({"started": i}) + "\n")
                    progress.flush()
                    shrink_one(record, zygote, left, opts)
                    fields = {k: getattr(record, k) for k in SHRINKING_FIELDS}
                    progress.write(json.dumps({"done": i, "fields": fields}) + "\n")
                    progress.flush()

        timeout = max(deadline - time.monotonic(), 0.0) + STOPPING_SECONDS
        ending = run_in_child(shrink_them, timeout)
        progress.seek(0)
        lines = [json.loads(line) for line in progress.read().splitlines() if line.strip()]
    done, started = set(), None
    for line in lines:
        if "done" in line:
            for name, value in line["fields"].items():
                setattr(records[line["done"]], name, value)
            done.add(line["done"])
        else:
            started = line["started"]
    if started is not None and started not in done:
        records[started].shrinking = (
            f"not shrunk: the process shrinking it {ending.describe()} while drawing or "
            "running a candidate (a draw runs a program's steps on a copy of the real "
            "tensors); the reproducer is the recorded one")
        done.add(started)
    left = [r for i, r in enumerate(records) if i not in done]
    if not done and deadline > time.monotonic():  # it failed before its first record
        for record in left:
            record.shrinking = f"not shrunk: the shrinking process {ending.describe()}"
        return []
    return left  # (where the time ran out, the caller says so)


def shrink_one(record: "Crash", zygote: Zygote, seconds: float,
               opts: "SuiteOptions") -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.database import InMemoryExampleDatabase

    from ..reproducer import reproducer_source
    from ..strategies.torch_notices import quiet_torch_notices
    from .runner import draw_case, draw_program

    started = time.monotonic()
    case_timeout = max(min(record.timeout or 60.0, seconds), 1.0)
    lines_before = record.reproducer.count("\n")
    best: list[str] = []  # the smallest reproducer that ended the same way
    tried = [0]
    capped = [False]

    class Reproduced(Exception):
        pass

    def candidate(data: Any) -> None:
        with quiet_torch_notices():
            recipe, order = draw_case(data, record.kind, record.devices)
            program = draw_program(data, recipe, opts)  # as the suite draws it
        source = reproducer_source(recipe, converters=[record.converter],
                                   checks=record.checks, order=order, program=program)
        if best and source == best[0]:
            raise Reproduced()
        if time.monotonic() - started > seconds:
            capped[0] = True
            return
        tried[0] += 1
        if same_ending(record, zygote.run(source, case_timeout)):
            if not best or (len(source), source) < (len(best[0]), best[0]):
                best[:] = [source]
            raise Reproduced()

    key = record.signature.encode()
    database = InMemoryExampleDatabase()
    database.save(key, bytes.fromhex(record.choices or ""))
    test = settings(database=database, phases=[Phase.reuse, Phase.shrink], max_examples=1,
                    deadline=None, report_multiple_bugs=False, derandomize=False,
                    suppress_health_check=list(HealthCheck))(given(data=st.data())(candidate))
    # The key Hypothesis replays from (as hypothesis.find sets it): explicit,
    # so a --hypothesis-seed in force does not switch the database off.
    test._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
    try:
        test()
    except KeyboardInterrupt:
        raise
    except BaseException:  # Reproduced, or Flaky once the time cap stopped candidates
        pass
    took = time.monotonic() - started
    if best:
        record.reproducer = best[0]
        record.reproduces = True
        record.shrinking = (
            f"shrunk from {lines_before} to {best[0].count(chr(10))} lines: {tried[0]} "
            f"candidate(s) run in child processes in {took:.1f} s"
            + (" (stopped by the time cap)" if capped[0] else ""))
    else:
        ending = zygote.run(record.reproducer, case_timeout)
        record.reproduces = same_ending(record, ending)
        record.shrinking = (
            "not shrunk: replaying its choices drew a case that did not end the same way "
            f"(the recorded reproducer {ending.describe()} in a child process)")


if __name__ == "__main__" and sys.argv[1:] == ["--zygote"]:
    zygote_main()
