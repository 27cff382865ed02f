"""The progress line of long runs (a budget of a minute or more, ``nightly``).

Printed through pytest's terminal reporter, at most every INTERVAL seconds,
as items finish: items done/total, examples per second, failures, crashes
and hangs so far, and the time left.  Quiet under ``-q`` and when the output
is not a terminal; the end-of-run summary says the same in any case.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from ..outcomes import CRASHED, HUNG

if TYPE_CHECKING:
    import pytest

    from ..options import SuiteOptions
    from ..report.records import ItemRecord

INTERVAL = 5.0
LONG_RUN = 60.0  # seconds of budget from which a run counts as long


class Progress:
    def __init__(self, write: Callable[[str], None], *, budget: float | None,
                 clock: Callable[[], float] = time.monotonic, interval: float = INTERVAL,
                 total_items: int = 0) -> None:
        self.write = write
        self.budget = budget
        self.clock = clock
        self.interval = interval
        self.total_items = total_items
        self.started = clock()
        self.last_printed = self.started
        self.items = self.examples = self.failed = self.crashed = self.hung = 0

    @classmethod
    def for_run(cls, config: "pytest.Config", opts: "SuiteOptions") -> "Progress | None":
        long_run = (opts.examples is None and (opts.budget or 0) >= LONG_RUN) or (
            opts.profile.name == "nightly")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if not long_run or reporter is None or config.option.verbose < 0:
            return None
        if not getattr(reporter, "isatty", False):
            return None

        def write(line: str) -> None:
            reporter.ensure_newline()
            reporter.write_line(line)

        return cls(write, budget=opts.budget if opts.examples is None else None)

    def item_done(self, record: "ItemRecord") -> None:
        counts = record.counts
        self.items += 1
        self.examples += counts.get("examples", 0)
        self.failed += 1 if record.failures else 0
        self.crashed += counts.get(CRASHED, 0)
        self.hung += counts.get(HUNG, 0)
        now = self.clock()
        if now - self.last_printed >= self.interval:
            self.last_printed = now
            self.write(self.line(now))

    def time_left(self, now: float) -> float | None:
        elapsed = now - self.started
        if self.budget is not None:
            return max(self.budget - elapsed, 0.0)
        if self.items and self.total_items:
            return elapsed / self.items * max(self.total_items - self.items, 0)
        return None

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        left = self.time_left(now)
        total = f"/{self.total_items}" if self.total_items else ""
        parts = [
            f"metafidelity progress: {self.items}{total} items",
            f"{self.examples} examples ({self.examples / elapsed:.1f}/s)",
            f"{self.failed} failed, {self.crashed} crashed, {self.hung} hung",
        ]
        if left is not None:
            parts.append(f"{_duration(left)} left" + ("" if self.budget else " (estimated)"))
        return ", ".join(parts)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"
