"""Crashes and hangs as findings: from a dead process's journal to a report.

:mod:`.journal` left the example that was running, and faulthandler's
frames.  Here that becomes a crash record -- the item, ``crashed`` or
``hung``, the signal or exit status, the last frames, a reproducer file that
crashes the same way standalone -- and the example's choice sequence goes
into the item's Hypothesis example database, so the next run replays it
first.  An example that ended Python itself in-process (``SystemExit``:
:class:`ExampleCrashed`, shrunk by Hypothesis like any failure) becomes a
crash record too.  Records (:class:`..report.records.Crash`) travel in the
same JSON item records as ordinary outcomes (:mod:`..report`).
"""

from __future__ import annotations

import hashlib
import os
import re
import signal as signals
from typing import Any

from ..outcomes import CRASHED, HUNG
from ..report.records import Crash, errors_of
from .journal import Remains

# faulthandler's words for the fatal signals it reports.
_FAULTHANDLER_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL",
}
MAX_FRAMES = 12


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def classify(faults: str, returncode: int | None) -> tuple[str, str | None, int | None]:
    """(status, signal name, exit status) from faulthandler's report and the
    process's return code (negative: killed by a signal), either may be
    missing."""
    if faults.lstrip().startswith("Timeout ("):
        return HUNG, None, returncode
    match = re.search(r"Fatal Python error: ([A-Za-z -]+)", faults)
    if match and match.group(1).strip() in _FAULTHANDLER_SIGNALS:
        return CRASHED, _FAULTHANDLER_SIGNALS[match.group(1).strip()], None
    if returncode is not None and returncode < 0:
        return CRASHED, signal_name(-returncode), None
    return CRASHED, None, returncode


def last_frames(faults: str) -> str:
    """The frames of the thread that was running the example: the first
    thread block that passes through this package (else the first block),
    most recent call first, at most MAX_FRAMES lines.  The behaviour
    check's step-limit watchdog is a thread of this package too, never the
    one running the example."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", faults.strip())
    if not blocks or not blocks[0]:
        return ""
    ours = [b for b in blocks if "pytest_metafidelity" in b and not _step_watchdog(b)]
    chosen = (ours or blocks)[0].splitlines()
    return "\n".join(chosen[: MAX_FRAMES + 1])


def _step_watchdog(block: str) -> bool:
    """The thread block of :mod:`..checks.step_time_limit`'s watchdog."""
    return re.search(r'step_time_limit\.py", line \d+ in _watch$', block, re.M) is not None


def describe(record: Crash) -> str:
    """One line: how the process ended."""
    if record.status == HUNG:
        how = f"hung (no result within {record.timeout} s; process ended by the time limit)"
    elif record.signal:
        how = f"crashed ({record.signal})"
    elif record.exit_status is not None:
        how = f"crashed (exit status {record.exit_status})"
    else:
        how = "crashed (the process ended without a report)"
    if record.while_reporting:
        how += " while its failure was being reported"
    return how


class ExampleCrashed(AssertionError):
    """The example ended Python itself (``SystemExit`` from the converter or
    a check): a crash, reported with its (shrunk) reproducer."""

    def __init__(self, exit_status: Any, reproducer: str) -> None:
        self.exit_status = exit_status
        self.reproducer = reproducer
        super().__init__(f"SystemExit({exit_status!r}) while converting or checking\n"
                         f"Reproducer (runnable Python):\n{reproducer}")


def crash_errors(exc: BaseException | None) -> list[ExampleCrashed]:
    """The ExampleCrashed errors in ``exc`` (examples that exited Python)."""
    return errors_of(exc, ExampleCrashed)


def exit_crash_record(error: ExampleCrashed, *, kind: str, converter: str, nodeid: str,
                      directory: str) -> Crash:
    """The crash record of an example that raised SystemExit (Hypothesis
    shrank it in-process, like any failure)."""
    code = error.exit_status
    record = Crash(
        signature=f"{CRASHED}|{kind}|{converter}|exit{code}",
        status=CRASHED, kind=kind, converter=converter, nodeid=nodeid,
        exit_status=code, reproducer=error.reproducer,
        saved_to_database=True,  # Hypothesis saved the failing example itself
    )
    record.reproducer_file = write_reproducer(record, directory)
    record.replay = f"python {record.reproducer_file}"
    return record


def crash_record(
    remains: Remains, *, returncode: int | None, directory: str, earlier_run: bool = False,
    database: Any = None,
) -> Crash:
    """The record of the case in ``remains``, with its reproducer written to
    ``directory`` and its choices saved to ``database`` (when not None)."""
    entry = remains.entry
    status, signal, exit_status = classify(remains.faults, returncode)
    how = signal or (f"exit{exit_status}" if exit_status is not None else "unknown")
    record = Crash(
        signature=f"{status}|{entry.kind}|{entry.converter}|{how}",
        status=status, kind=entry.kind, converter=entry.converter, nodeid=entry.nodeid,
        signal=signal, exit_status=exit_status, timeout=entry.timeout, example=entry.example,
        frames=last_frames(remains.faults), reproducer=entry.recipe,
        choices=entry.choices, checks=entry.checks, devices=entry.devices,
        earlier_run=earlier_run, while_reporting=entry.reporting,
    )
    record.reproducer_file = write_reproducer(record, directory)
    record.replay = f"python {record.reproducer_file}"
    if database is not None and entry.choices and entry.database_key:
        record.saved_to_database = save_choices(database, entry.database_key, entry.choices)
    return record


def write_reproducer(record: Crash, directory: str) -> str:
    os.makedirs(directory, exist_ok=True)
    digest = hashlib.sha1(record.signature.encode()).hexdigest()[:8]
    slug = "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60]
                    for text in (record.kind, record.converter, record.status))
    path = os.path.join(directory, f"{slug}-{digest}.py")
    frames = "\n".join("#   " + line for line in record.frames.splitlines())
    header = (
        f"# pytest-metafidelity reproducer: {record.kind} through {record.converter} "
        f"{describe(record)}\n"
        f"# Run: python {path}   (expect the same: the process "
        + ("does not finish)\n" if record.status == HUNG else "dies)\n")
        + f"# Suite item: pytest --metafidelity \"{record.nodeid}\"\n"
        + (f"# Last frames (faulthandler, most recent call first):\n{frames}\n" if frames else "")
    )
    with open(path, "w") as f:
        f.write(header + record.reproducer)
    return path


def save_choices(database: Any, key_hex: str, choices_hex: str) -> bool:
    """Put the example into the item's Hypothesis database, where the next
    run replays it before anything else."""
    try:
        database.save(bytes.fromhex(key_hex), bytes.fromhex(choices_hex))
    except Exception:  # a read-only or unreachable database: the file remains
        return False
    return True


def returncode_of(node: Any) -> int | None:
    """The exit status of a dead xdist worker's process, where execnet
    exposes it (``popen`` gateways); None otherwise."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return popen.wait(timeout=5)
    except Exception:
        return None
