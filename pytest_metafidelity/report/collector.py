"""The controller's collector of item records, and what it makes of them:
the terminal's table and texts (failures, crashes, unexpectedly passing
known differences, how the time went) and the run's JSON report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import sys
from typing import TYPE_CHECKING, Any

from ..outcomes import PASSED
from .records import COLUMNS, Crash, Failure, ItemRecord, UnexpectedPass
from .tables import table, unique_by_signature

if TYPE_CHECKING:
    from ..options import SuiteOptions


def shorten(text: str, limit: int = 400) -> str:
    """Long values (torch's dispatcher error lists) cut for the terminal; the
    JSON report and the reproducer keep them whole."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


@dataclasses.dataclass
class Collector:
    """Gathers item records on the controller (or the only process)."""

    items: list[ItemRecord] = dataclasses.field(default_factory=list)
    # crashes left by earlier runs that died in-process (-n 0)
    earlier_crashes: list[Crash] = dataclasses.field(default_factory=list)

    def add(self, record: ItemRecord) -> None:
        self.items.append(record)

    def add_crash(self, record: Crash) -> None:
        self.earlier_crashes.append(record)

    def unique_crashes(self) -> list[Crash]:
        return unique_by_signature([*(c for item in self.items for c in item.crashes),
                                    *self.earlier_crashes])

    def crashes_text(self) -> str:
        from ..suite.crashes import describe

        parts = []
        for c in self.unique_crashes():
            when = " (in an earlier run that died)" if c.earlier_run else ""
            lines = [f"[{c.status}] {c.kind} through {c.converter}: {describe(c)}{when}",
                     f"    item: {c.nodeid}"]
            if c.frames:
                lines.append("    last frames:\n" + "\n".join(
                    "      " + f for f in c.frames.splitlines()[:8]))
            if c.shrinking:
                lines.append(f"    shrinking: {c.shrinking}")
            lines += [f"    reproducer: {c.reproducer_file}", f"    replay: {c.replay}"]
            parts.append("\n".join(lines))
        return "\n".join(parts)

    def spending_text(self) -> str:
        """How the run's time went: one line (budget runs say more, and
        name the items their share of the time did not reach)."""
        spent = [i.spending for i in self.items if i.spending]
        examples = sum(i.counts.get("examples", 0) for i in self.items)
        if not spent:
            return f"metafidelity: {len(self.items)} items, {examples} examples"
        seconds = sum(s.seconds for s in spent)
        rounds = sum(s.rounds for s in spent)
        extended = sum(1 for s in spent if s.extended)
        rate = f" ({examples / seconds:.1f}/s)" if seconds else ""
        counts = sorted(i.counts.get("examples", 0) for i in self.items)
        lines = [f"metafidelity: {len(self.items)} items, {examples} examples{rate} in "
                 f"{seconds:.0f} s of items' time, {rounds} rounds; fewest examples "
                 f"{counts[0]}, median {statistics.median(counts):g}; {extended} item(s) given "
                 "more time for finding something new in a later round"]
        starved = self.starved()
        if starved:
            lines.append(f"metafidelity: {len(starved)} item(s) starved (less than a quarter of "
                         "their share of the budget reached them):")
            lines += [f"    {nodeid}: {why}" for nodeid, why in sorted(starved.items())]
        return "\n".join(lines)

    def starved(self) -> dict[str, str]:
        """Node id -> why, for the budget-run items their share did not reach."""
        from ..suite.budget import starved

        if not self.items:
            return {}
        median = statistics.median(i.counts.get("examples", 0) for i in self.items)
        # A failed item stopped early on purpose: it had what it needed.
        found = {i.nodeid: starved(i.spending, i.counts.get("examples", 0), median)
                 for i in self.items if i.outcome == PASSED}
        return {nodeid: why for nodeid, why in found.items() if why}

    def unique_failures(self) -> list[Failure]:
        return unique_by_signature(f for item in self.items for f in item.failures)

    def table(self) -> str:
        return table(sorted(self.items, key=lambda r: (r.kind, r.converter)), COLUMNS)

    def failures_text(self) -> str:
        parts = []
        for f in self.unique_failures():
            if f.internal_error:
                parts.append(
                    f"[internal error in check {f.check!r}] {f.kind} through "
                    f"{f.converter}: {shorten(f.fake)}\n"
                    + "    " + (f.traceback or "").rstrip().replace("\n", "\n    ") + "\n"
                    f"    reproducer: {f.reproducer_file}\n    replay: {f.replay}")
                continue
            parts.append(
                f"[{f.check}] {f.kind} through {f.converter}: {f.path}: {f.attribute}\n"
                f"    real: {shorten(f.real)}\n    fake: {shorten(f.fake)}\n"
                f"    reproducer: {f.reproducer_file}\n    replay: {f.replay}"
            )
        return "\n".join(parts)

    def unexpectedly_passing_text(self) -> str:
        """Entries expected on some examples whose difference did not occur:
        one line per entry, with the items and a reproducer."""
        by_entry: dict[str, list[UnexpectedPass]] = {}
        for item in sorted(self.items, key=lambda r: r.nodeid):
            for p in item.unexpectedly_passing:
                by_entry.setdefault(p.entry, []).append(p)
        parts = []
        for entry_id, records in sorted(by_entry.items()):
            where = ", ".join(f"{p.kind} through {p.converter} ({p.examples}x)" for p in records)
            parts.append(f"{entry_id} ({records[0].link}): {where}\n"
                         f"    reproducer: {records[0].reproducer_file}")
        return "\n".join(parts)

    def document(self, options: "SuiteOptions", seed: Any) -> dict[str, Any]:
        import torch

        devices = ["cpu"]
        # device_count() first: it asks NVML, and is 0 without a GPU, where
        # naming one would initialise CUDA for nothing.
        if torch.cuda.device_count():
            devices += [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        starved = self.starved()
        return {
            "environment": {
                "torch": torch.__version__,
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "devices": devices,
                # GPUs asked for that the machine lacks: device -> why
                "skipped_devices": dict(getattr(options, "skipped_devices", ())),
                "seed": seed,
                "profile": options.profile.name,
            },
            "options": {
                "kinds": list(options.kinds),
                "converters": list(options.converters),
                "checks": list(options.checks),
                "devices": list(options.devices),
                "examples": options.examples,
                "budget": options.budget,
                "strict": options.strict,
                "example_timeout": options.example_timeout,
                "run_known_crashes": options.run_known_crashes,
                "shrink_crashes": options.shrink_crashes,
                "shard": "/".join(map(str, options.shard)) if options.shard else None,
            },
            "items": [dataclasses.replace(item, starved=starved.get(item.nodeid, "")).to_json()
                      for item in sorted(self.items, key=lambda r: r.nodeid)],
            "failures": [f.to_json() for f in self.unique_failures()],
            "crashes": [c.to_json() for c in self.unique_crashes()],
        }

    def write_json(self, path: str, options: "SuiteOptions", seed: Any) -> None:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.document(options, seed), f, indent=2, default=str)
