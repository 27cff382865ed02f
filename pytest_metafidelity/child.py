"""Run code in a forked child process and say how the child ended.

Used where running the code in this process could kill it: the conversions
the known-difference registry knows to crash torch
(``--metafidelity-run-known-crashes``), and the candidates of crash
shrinking (:mod:`.suite.crash_shrinking`).  POSIX only (``os.fork``).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import os
import signal as signals
import time
from typing import Callable

CAN_FORK = hasattr(os, "fork")


@dataclasses.dataclass(frozen=True)
class Ending:
    """How a child ended: killed by ``signal``, exited with ``exit_status``,
    or ``hung`` (still running at the time limit, then killed)."""

    signal: str | None = None
    exit_status: int | None = None
    hung: bool = False

    @property
    def crashed(self) -> bool:
        """Died in a way Python code does not: a signal, or ``os._exit``/
        ``SystemExit`` with a status other than 0 (done) and 1 (an
        exception)."""
        return self.signal is not None or self.exit_status not in (0, 1, None)

    def describe(self) -> str:
        if self.hung:
            return "hung"
        if self.signal:
            return f"killed by {self.signal}"
        return f"exited with status {self.exit_status}"


def run_in_child(fn: Callable[[], object], timeout: float, *, quiet: bool = True) -> Ending:
    """Fork; the child runs ``fn`` and exits 0 (returned), 1 (raised), or
    SystemExit's status; the parent waits at most ``timeout`` seconds."""
    if not CAN_FORK:
        raise OSError("running code in a child process needs os.fork (POSIX)")
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            faulthandler.disable()  # the parent's fault report is not ours to write
            if quiet:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
            fn()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return wait_for(pid, timeout)


def wait_for(pid: int, timeout: float) -> Ending:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return ending_of(status)
        if time.monotonic() >= deadline:
            os.kill(pid, signals.SIGKILL)
            os.waitpid(pid, 0)
            return Ending(hung=True)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def ending_of(status: int) -> Ending:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signals.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return Ending(signal=name)
    return Ending(exit_status=os.WEXITSTATUS(status))
