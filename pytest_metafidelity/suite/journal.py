"""The write-ahead journal: what this process is running, on disk before it runs.

A native crash (segfault, abort), ``os._exit`` or a hang ends the process
with no chance to report.  So before each example is converted and checked,
the process overwrites one small file with the example's item, recipe
source, conversion order and Hypothesis choice sequence; faulthandler writes
the Python frames of a fatal signal to a second file; and a per-example
timer (``faulthandler.dump_traceback_later(exit=True)``) turns a hang into
the same kind of death, with the frames of every thread (the timer is
re-armed as examples begin and stopped when an item ends).  Whoever outlives
the process -- the xdist controller, or the next run -- reads both files
and reports the case (:mod:`.crashes`).

One journal per process: ``<directory>/<name>.json`` and ``<name>.faults``.
Writing it costs one ``pwrite`` of a few KB per example (no fsync: the page
cache outlives a crashed process).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import sys
import time
from typing import IO, Any

from . import first_pass

IDLE = "idle"
RUNNING = "running"
_NEVER = float("-inf")


@dataclasses.dataclass
class JournalEntry:
    """What a process was doing when it was last heard of."""

    state: str  # IDLE or RUNNING
    pid: int
    nodeid: str = ""
    kind: str = ""
    converter: str = ""
    checks: list[str] | None = None
    devices: list[str] | None = None
    recipe: str = ""  # the recipe's Python source
    order: list[int] | None = None
    choices: str = ""  # hex of hypothesis.database.choices_to_bytes(...)
    database_key: str = ""  # hex of the item's Hypothesis database key
    example: int = 0  # index of the example within its item (0-based)
    timeout: float | None = None  # the per-example time limit armed, seconds
    # The example has failed and its failure is being reported (formatted by
    # pytest and Hypothesis, written to the report): a crash now is still
    # this example's, though its reproducer shows the failure, not the crash.
    reporting: bool = False
    # The example ran ahead of its item's turn (:mod:`.first_pass`): the
    # process was in another item's turn, or in none yet.
    out_of_turn: bool = False

    @classmethod
    def from_json(cls, text: str) -> "JournalEntry | None":
        try:
            raw = json.loads(text)
            fields = {f.name for f in dataclasses.fields(cls)}
            return cls(**{k: v for k, v in raw.items() if k in fields})
        except (ValueError, TypeError):
            return None


class Journal:
    """This process's journal.  ``begin`` before an example; after it, ``end``
    or, when it failed, ``reporting`` until the failure is reported
    (``reported``, or the next ``begin``)."""

    def __init__(self, directory: str, name: str, timeout: float | None) -> None:
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"{name}.json")
        self.faults_path = os.path.join(directory, f"{name}.faults")
        self.timeout = timeout
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._faults: IO[str] = open(self.faults_path, "w")
        self._previous_faulthandler: bool | None = None  # until the first example
        self._armed_at = _NEVER
        self._entry: JournalEntry | None = None  # the example begun last
        self._idle = json.dumps(vars(JournalEntry(IDLE, os.getpid()))).encode()
        self._write_bytes(self._idle)

    def _take_faulthandler(self) -> None:
        """Point faulthandler's fatal-signal report at our file -- at the
        first example, after pytest's own faulthandler plugin has set up."""
        self._previous_faulthandler = faulthandler.is_enabled()
        faulthandler.enable(file=self._faults, all_threads=True)

    def _write(self, entry: JournalEntry) -> None:
        self._write_bytes(json.dumps(vars(entry)).encode())

    def _write_bytes(self, data: bytes) -> None:
        # Overwrite in place; the JSON is self-delimiting, so a shorter entry
        # needs the tail cut too.
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))

    def begin(self, entry: JournalEntry) -> None:
        """Record ``entry`` as running; make sure the hang timer is armed."""
        entry.timeout = self.timeout
        entry.pid = os.getpid()
        if self._previous_faulthandler is None:
            self._take_faulthandler()
        self._entry = entry
        self._write(entry)
        if self.timeout:
            # Arming starts (and disarming joins) a watchdog thread: costly
            # per example.  So the timer is re-armed only once a tenth of the
            # limit has passed: an example gets between 90% and 100% of it.
            now = time.monotonic()
            if now - self._armed_at > self.timeout / 10:
                faulthandler.dump_traceback_later(self.timeout, exit=True, file=self._faults)
                self._armed_at = now

    def end(self) -> None:
        """The example finished and nothing of it is left to report."""
        self._entry = None
        self._write_bytes(self._idle)

    def reporting(self) -> None:
        """The example failed: it stays on record while pytest and Hypothesis
        format and report the failure (until the next ``begin`` or ``end``)."""
        if self._entry is not None and not self._entry.reporting:
            self._entry.reporting = True
            self._write(self._entry)

    def reported(self) -> None:
        """Whatever failed before has been reported (Hypothesis moved on to
        the next example): a crash from here on is not the failed example's."""
        if self._entry is not None and self._entry.reporting:
            self.end()

    def disarm(self) -> None:
        """No example runs for a while (the item is over): stop the timer."""
        if self.timeout and self._armed_at != _NEVER:
            faulthandler.cancel_dump_traceback_later()
            self._armed_at = _NEVER

    def close(self, remove: bool = True) -> None:
        self.disarm()
        if self._previous_faulthandler:
            faulthandler.enable(file=sys.__stderr__ or sys.stderr, all_threads=True)
        elif self._previous_faulthandler is not None:
            faulthandler.disable()
        os.close(self._fd)
        self._faults.close()
        if remove:
            for path in (self.path, self.faults_path):
                try:
                    os.unlink(path)
                except OSError:
                    pass


@dataclasses.dataclass
class Remains:
    """A dead process's journal: its last entry and its fault report."""

    entry: JournalEntry
    faults: str
    path: str

    def discard(self) -> None:
        for path in (self.path, self.path[: -len(".json")] + ".faults"):
            try:
                os.unlink(path)
            except OSError:
                pass


def read(directory: str, name: str) -> Remains | None:
    """The journal ``name`` in ``directory`` if it was left RUNNING."""
    path = os.path.join(directory, f"{name}.json")
    try:
        with open(path) as f:
            entry = JournalEntry.from_json(f.read())
    except OSError:
        return None
    if entry is None or entry.state != RUNNING:
        return None
    try:
        with open(path[: -len(".json")] + ".faults", errors="replace") as f:
            faults = f.read()
    except OSError:
        faults = ""
    return Remains(entry, faults, path)


def abandoned(root: str) -> list[Remains]:
    """Journals under ``root`` (one folder per run) left RUNNING by processes
    that no longer exist: the cases of runs that died without a controller
    to report them (``-n 0``)."""
    found = []
    try:
        runs = sorted(os.listdir(root))
    except OSError:
        return []
    for run in runs:
        directory = os.path.join(root, run)
        names = [n[: -len(".json")] for n in _listdir(directory) if n.endswith(".json")]
        for name in names:
            remains = read(directory, name)
            if remains is not None and not _alive(remains.entry.pid):
                found.append(remains)
            elif remains is None and not _alive_owner(directory, name):
                _remove(os.path.join(directory, name))
        if not [n for n in _listdir(directory) if n not in first_pass.STATE]:
            first_pass.remove_state(directory)
            try:
                os.rmdir(directory)
            except OSError:
                pass
    return found


def _listdir(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def _alive_owner(directory: str, name: str) -> bool:
    try:
        with open(os.path.join(directory, f"{name}.json")) as f:
            entry = JournalEntry.from_json(f.read())
    except OSError:
        return False
    return entry is not None and _alive(entry.pid)


def _remove(stem: str) -> None:
    for suffix in (".json", ".faults"):
        try:
            os.unlink(stem + suffix)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_directory(root: str) -> str:
    """A fresh folder for this run's journals under ``root``."""
    directory = os.path.join(root, f"run-{os.getpid()}")
    os.makedirs(directory, exist_ok=True)
    return directory


def encode_choices(data: Any) -> str:
    """The choice sequence drawn so far by a ``st.data()`` object, as hex
    (Hypothesis' own database format), or "" where it cannot be read."""
    try:
        from hypothesis.database import choices_to_bytes

        return choices_to_bytes(data.conjecture_data.choices).hex()
    except Exception:  # another Hypothesis internals layout
        return ""
