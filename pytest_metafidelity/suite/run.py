"""The suite's state in one process: its options, budget, journal and what each item ran.

Kept apart from :mod:`.runner` (which imports Hypothesis and the checks) so
that the process that only reports -- the xdist controller -- holds it
without importing torch or Hypothesis before its workers start.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from .budget import TimeBudget

if TYPE_CHECKING:
    from ..faithful import FidelityResult
    from ..options import SuiteOptions
    from .budget import ItemSpending
    from .first_pass import FirstPass, FirstPassRecord
    from .journal import Journal


@dataclasses.dataclass
class SuiteRun:
    """Settings and running tallies for the suite in this process."""

    options: "SuiteOptions | None"
    n_items: int = 0
    journal: Journal | None = None
    examples_done: int = 0  # examples run in this process
    # nodeid -> Counter of outcome statuses over examples
    tallies: dict[str, Counter] = dataclasses.field(default_factory=dict)
    # nodeid -> digest of every case run, in order: equal digests, equal cases
    digests: dict[str, Any] = dataclasses.field(default_factory=dict)
    # nodeid -> Counter of known-difference entry ids that occurred
    known: dict[str, Counter] = dataclasses.field(default_factory=dict)
    # nodeid -> {entry id: [examples in which it did not occur, first reproducer]}
    unexpectedly_passing: dict[str, dict[str, list[Any]]] = dataclasses.field(
        default_factory=dict)
    # nodeid -> what the item has covered (events, statuses, entries): new
    # coverage earns an item more of the budget
    coverage: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    # nodeid -> how the item spent its time (budget runs)
    spending: dict[str, "ItemSpending"] = dataclasses.field(default_factory=dict)
    budget: TimeBudget | None = None
    # nodeid -> the item's inner test function (its digest keys the database)
    inner_tests: dict[str, Callable[..., None]] = dataclasses.field(default_factory=dict)
    # budget runs in a process that runs examples: the first pass's state
    first_pass: "FirstPass | None" = None
    # an example now runs ahead of its item's turn (the first pass, or an item
    # it found failing): journaled so, for a crash to be put on its item
    out_of_turn: bool = False
    _database_keys: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        opts = self.options
        if opts is not None and opts.examples is None and opts.budget is not None:
            self.budget = TimeBudget(opts.budget)

    def set_item_count(self, n_items: int) -> None:
        self.n_items = n_items
        if self.budget is not None:
            self.budget.n_items = n_items

    def record_entries(self, nodeid: str, result: "FidelityResult") -> None:
        """Which known-difference entries occurred, and which were expected
        but did not occur (with the first such example's reproducer)."""
        known = self.known.setdefault(nodeid, Counter())
        missing = self.unexpectedly_passing.setdefault(nodeid, {})
        for outcome in result.outcomes:
            known.update({entry_id for entry_id, _ in outcome.known})
            for entry_id in outcome.unexpectedly_passing:
                missing.setdefault(entry_id, [0, result.reproducer])[0] += 1

    def forget(self, nodeid: str) -> None:
        """Drop what the item's examples so far recorded: its first round
        failed in the first pass, and its turn runs that round again."""
        for tallies in (self.tallies, self.digests, self.known, self.unexpectedly_passing,
                        self.coverage):
            tallies.pop(nodeid, None)  # type: ignore[attr-defined]

    def adopt_first_round(self, nodeid: str, record: "FirstPassRecord") -> None:
        """Count an item's first round that another worker's first pass ran."""
        if record.pid != os.getpid():
            self.tallies.setdefault(nodeid, Counter()).update(record.tally)
            self.known.setdefault(nodeid, Counter()).update(record.known)

    def failed_before(self, nodeid: str) -> bool:
        """The example database holds a failure of the item (an earlier run's)."""
        database, key = self.database(), self.database_key(nodeid)
        if database is None or not key:
            return False
        try:
            return next(iter(database.fetch(bytes.fromhex(key))), None) is not None
        except Exception:  # an unreachable shared database: the order only loses a hint
            return False

    def database_key(self, nodeid: str) -> str:
        """Hex of the key under which ``pytest --metafidelity`` stores and
        replays the item's examples (first computed when the item's test is
        made, before HypoFuzz re-keys its function with the full node id),
        "" when unknown."""
        key = self._database_keys.get(nodeid)
        if key is None:
            from hypothesis.internal.reflection import function_digest

            inner = self.inner_tests.get(nodeid)
            key = self._database_keys[nodeid] = function_digest(inner).hex() if inner else ""
        return key

    def keep_for_replay(self, nodeid: str, choices_hex: str) -> bool:
        """Save a failing example found under HypoFuzz where ``pytest
        --metafidelity`` replays it first: under the item's pytest key in the
        suite's database (HypoFuzz keeps its own failures under its key)."""
        from .crashes import save_choices

        database, key = self.database(), self.database_key(nodeid)
        if database is None or not key or not choices_hex:
            return False
        return save_choices(database, key, choices_hex)

    def database(self) -> Any:
        """The example database the suite's items use (None: none)."""
        from hypothesis import settings

        from ..databases import suite_database

        opts = self.options
        shared = suite_database(opts.database) if opts is not None else None
        if shared is not None:
            return shared
        if opts is not None and not opts.profile.use_database:
            return None
        return settings.default.database
