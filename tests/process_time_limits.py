"""Time limits for the processes the tests start, and where a hung one was.

A test that starts ``pytest --metafidelity`` (pytester's
``runpytest_subprocess``, the workflow's shell steps) waits for it.  Without a
limit, a process that never ends holds the test, and the CI run, until CI's
own limit ends everything and says nothing about where it hung.  With
``subprocess.run(timeout=...)`` alone the wait can still be endless: the
timeout kills the direct child, then waits for its output pipes, which its
own children (pytest-xdist's workers) keep open.

So a process still running at its limit is stopped with ``SIGABRT``, its
descendants first: pytest and the suite enable :mod:`faulthandler`, so each
Python process writes its threads' stacks to its stderr as it dies.  What
is left is killed.  The test then fails saying so, with that stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

# The slowest test's pytest subprocess takes about 1 minute on a 2-core runner.
PROCESS_LIMIT_S = 300.0
# How long each aborted process gets to write its stacks and exit.
ABORT_GRACE_S = 5.0


def descendants(pid: int) -> list[int]:
    """The processes under ``pid``, deepest first (Linux ``/proc``; elsewhere
    none are found and only the process itself is stopped)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found: list[int] = []
    level = [pid]
    while level:
        level = [child for parent in level for child in children.get(parent, [])]
        found[:0] = level
    return found


def _signal(pids: list[int], number: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def _gone(pid: int) -> bool:
    """Exited (a zombie, or reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def stop_tree(process: subprocess.Popen) -> None:
    """Abort ``process`` and its descendants, one at a time, deepest first,
    so that their stacks, written to a shared stderr, do not interleave;
    then kill whatever is still there."""
    tree = [*descendants(process.pid), process.pid]
    for pid in tree:
        _signal([pid], signal.SIGABRT)
        deadline = time.monotonic() + ABORT_GRACE_S
        while not (process.poll() is not None if pid == process.pid else _gone(pid)):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
    left = [pid for pid in tree if pid != process.pid and not _gone(pid)]
    if process.poll() is None:
        left = [*descendants(process.pid), *left, process.pid]
    _signal(left, signal.SIGKILL)


def _proc(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return "?"


def tree_snapshot(pid: int) -> str:
    """One line per process of the tree: pid, parent, state, the kernel
    function it sleeps in, its command line.  Taken before the stop: a
    process that is not Python (a worker xdist is still starting) writes no
    stack, and this is then all that says where it was."""
    lines = []
    for each in [pid, *reversed(descendants(pid))]:
        stat = _proc(each, "stat").rsplit(")", 1)[-1].split()
        state, parent = (stat[0], stat[1]) if len(stat) > 1 else ("?", "?")
        lines.append(f"  pid {each} (parent {parent}) state {state} in "
                     f"{_proc(each, 'wchan') or '-'}: {_proc(each, 'cmdline')[:300]}")
    return "\n".join(lines)


def fault_files(pid: int) -> str:
    """What the suite's crash journals under the process's working directory
    hold (faulthandler's reports of a worker that died, its last example):
    a crash that came before the hang."""
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return ""
    found = []
    # The journal's two homes: the cache, or the reproducers' directory.
    for pattern in (".pytest_cache/**/metafidelity-journal/*", "*/.journal/*"):
        for path in sorted(cwd.glob(pattern)):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                found.append(f"--- {path.name}\n{text[-4000:]}")
    return "\n".join(found)


class ProcessWatch:
    """Stops ``process`` (:func:`stop_tree`) if it is still running after
    ``limit_s``; ``fired`` says whether it had to."""

    def __init__(self, process: subprocess.Popen, limit_s: float | None = None) -> None:
        self.process = process
        self.limit_s = PROCESS_LIMIT_S if limit_s is None else limit_s
        self.fired = False
        self.snapshot = ""  # the process tree and crash journals, when it fired
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="process-time-limit",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + self.limit_s
        while not self._done.wait(0.2):
            if self.process.poll() is not None:
                return
            if time.monotonic() >= deadline:
                self.fired = True
                self.snapshot = (f"its processes when stopped:\n{tree_snapshot(self.process.pid)}"
                                 f"\n{fault_files(self.process.pid)}")
                stop_tree(self.process)
                return

    def close(self) -> None:
        self._done.set()
        self._thread.join()

    def failure(self, command: Any, stderr: str, stdout: str = "") -> str:
        shown = f"its stdout, the end:\n{stdout[-6000:]}\n" if stdout else ""
        return (f"still running after {self.limit_s:.0f} s, so stopped (SIGABRT, then SIGKILL): "
                f"{command}\n{self.snapshot}\n{shown}"
                f"its stderr (each Python process's stacks as it was aborted):\n"
                + stderr[-20000:])


def run_limited(command: list[str], limit_s: float | None = None,
                **kwargs: Any) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` with output captured as text, stopped with its
    descendants at ``limit_s``; raises :class:`AssertionError` with its stderr
    if it was."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          **kwargs) as process:
        watch = ProcessWatch(process, limit_s)
        try:
            stdout, stderr = process.communicate()
        finally:
            watch.close()
    if watch.fired:
        raise AssertionError(watch.failure(command, stderr))
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
