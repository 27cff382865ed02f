"""A time budget that is spent: slices per item, rounds within an item.

With ``--metafidelity-budget`` (and the ``dev`` profile's 40 s) each item gets
a slice of what is left -- the remaining time over the remaining items of
this process -- and spends it in rounds: a round is one Hypothesis run of as
many examples as the measured cost per example fits in what is left of the
slice, each round after the first with a fresh seed.  An item whose last
round covered something new (a Hypothesis event, an outcome status or a
known difference it had not seen) may run on for one more slice, taken from
the items after it: time goes where it finds most.  A failing item stops
(Hypothesis has shrunk and reported it).

With a fixed number of examples (``--metafidelity-examples``, the ``ci`` and
``nightly`` profiles) an item runs one round of that many examples.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

MIN_EXAMPLES = 3
# The first round of an item, before its own cost is known, is at most this
# many examples (the cost of kinds x converters differs by 10x and more).
FIRST_ROUND_MAX = 50
GROWTH = 4


@dataclasses.dataclass
class ItemSpending:
    """How one item spent its slice (reported per item)."""

    slice: float
    started: float
    rounds: int = 0
    examples: int = 0
    extended: bool = False
    seconds: float = 0.0
    last_round_cost: float | None = None  # seconds per example, latest round
    last_round_examples: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"slice": round(self.slice, 3), "seconds": round(self.seconds, 3),
                "rounds": self.rounds, "examples": self.examples, "extended": self.extended}


# An item that found something new in a later round gets this much of its
# slice again, once (the items after it share the cost).
EXTENSION = 0.5


@dataclasses.dataclass
class TimeBudget:
    total: float
    n_items: int = 1
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    items_started: int = 0
    # measured over finished rounds of every item
    seconds: float = 0.0
    examples: int = 0

    def __post_init__(self) -> None:
        if not self.started:
            self.started = self.clock()

    def now(self) -> float:
        return self.clock()

    def remaining(self) -> float:
        return self.total - (self.now() - self.started)

    def start_item(self) -> ItemSpending:
        remaining_items = max(self.n_items - self.items_started, 1)
        self.items_started += 1
        return ItemSpending(slice=max(self.remaining(), 0.0) / remaining_items,
                            started=self.now())

    def next_round(self, spending: ItemSpending) -> int:
        """Examples for the item's next round; 0 when its slice is spent.
        The cost per example is the item's latest round's (the first round
        pays one-off costs, such as the first dynamic conversion importing
        torch._dynamo), else the run's so far."""
        left = spending.slice - (self.now() - spending.started)
        if spending.rounds == 0:
            if not self.examples:
                return MIN_EXAMPLES
            cost = self.seconds / self.examples
            return max(MIN_EXAMPLES, min(FIRST_ROUND_MAX, int(left / cost)))
        cost = spending.last_round_cost
        if cost is None or left <= 0 or self.remaining() <= 0:
            return 0
        if left < cost:
            # After the first round, whose cost may be mostly warm-up, one
            # small round more measures the item's real cost.
            return MIN_EXAMPLES if spending.rounds == 1 else 0
        # Rounds grow at most GROWTH-fold: later examples can cost more
        # (Hypothesis draws larger ones), and each round re-measures.
        return max(MIN_EXAMPLES, min(int(left / cost), GROWTH * spending.last_round_examples))

    def finish_round(self, spending: ItemSpending, examples: int, seconds: float,
                     found_new: bool) -> None:
        spending.rounds += 1
        spending.examples += examples
        spending.seconds += seconds
        spending.last_round_cost = seconds / examples if examples else None
        spending.last_round_examples = examples
        self.examples += examples
        self.seconds += seconds
        if found_new and not spending.extended and spending.rounds > 1 and self.remaining() > 0:
            spending.extended = True
            spending.slice *= 1 + EXTENSION
