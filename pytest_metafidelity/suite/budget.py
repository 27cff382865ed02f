"""A time budget that is spent: a first pass, then slices per item, rounds within an item.

With ``--metafidelity-budget`` (and the ``dev`` profile's 40 s) every item's
first round is its *first pass*: ``FIRST_PASS_EXAMPLES`` examples, starting
from the simplest, run for every item before any item goes deeper
(:mod:`.first_pass`).  Then each item gets a slice of what is left -- the
remaining time over the items left (in every worker), less what each item
left is measured to cost beyond its slice, and never less than a quarter of
its fair share (the budget over the items) -- and spends it in rounds: a round is one Hypothesis run of as many examples as the measured
cost per example fits in what is left of the slice, each with a fresh seed.
An item whose later round covered something new (a Hypothesis event, an
outcome status or a known difference it had not seen) may run on for half a
slice more, once -- but only out of time that is really left over (slices
that earlier items did not use), never out of the items not yet run.  A
failing item stops (Hypothesis has shrunk and reported it).

With a fixed number of examples (``--metafidelity-examples``, the ``ci`` and
``nightly`` profiles) an item runs one round of that many examples.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

from ..report.records import Spending

MIN_EXAMPLES = 3
# The first round of every item (its first pass): the simplest examples first
# (Hypothesis tries the simplest one before any other), and it measures the
# item's own cost for the rounds after it.  Three, measured against two
# (first_failure.py, seed 0): with two the whole pass is shorter (the slowest
# describer fault, on one item late in the pass, 13.2 -> 10.4 s), but the
# faults that need an example requiring grad -- which the simplest is not --
# went from about 6 s to 38 and 44 s.
FIRST_PASS_EXAMPLES = 3
GROWTH = 4
# An item that got less than this part of its fair share of the time is
# reported starved.
STARVED_PART = 0.25


@dataclasses.dataclass
class ItemSpending:
    """How one item spent its slice (reported per item)."""

    slice: float
    started: float
    share: float = 0.0  # the item's fair share: the budget over the items (per worker)
    rounds: int = 0
    examples: int = 0
    extended: bool = False
    seconds: float = 0.0
    last_round_cost: float | None = None  # seconds per example, latest round
    last_round_examples: int = 0
    first_pass: int = 0  # examples of the first round, when it ran in the first pass

    def as_record(self) -> Spending:
        """What the item's report record says of it."""
        return Spending(slice=round(self.slice, 3), share=round(self.share, 3),
                        seconds=round(self.seconds, 3), rounds=self.rounds,
                        examples=self.examples, first_pass=self.first_pass,
                        extended=self.extended)


def starved(spending: Spending | None, examples: int, median_examples: float) -> str:
    """Why an item's share of the budget did not reach it, "" when it did:
    it spent less than a quarter of its fair share of the time (first pass
    included).  ``spending`` is :meth:`ItemSpending.as_record`'s; None (no
    budget) is never starved."""
    if spending is None:
        return ""
    share, seconds = float(spending.share or 0.0), float(spending.seconds)
    if share <= 0 or seconds >= STARVED_PART * share:
        return ""
    return (f"starved: {examples} examples (median item {median_examples:g}), "
            f"{seconds:.2f} s of a {share:.2f} s share")


# An item that found something new in a later round gets this much of its
# slice again, once, out of the time earlier items left unused.
EXTENSION = 0.5


@dataclasses.dataclass
class TimeBudget:
    total: float
    n_items: int = 1
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    items_started: int = 0
    # slices that finished items did not use: kept for extensions (and for
    # the last item), never counted in the slices of the items after them
    left_over: float = 0.0
    # what an item costs beyond its slice on average, measured from one
    # item's start to the next one's: pytest's own work (reports, set-up,
    # teardown) and the rounds' overrun.  Every item left will cost it too.
    overhead: float = 0.0
    _previous: ItemSpending | None = None

    def __post_init__(self) -> None:
        if not self.started:
            self.started = self.clock()

    def now(self) -> float:
        return self.clock()

    def remaining(self) -> float:
        return self.total - (self.now() - self.started)

    def fair_share(self) -> float:
        """An item's share of the budget, were it split evenly."""
        return self.total / max(self.n_items, 1)

    def start_item(self, items_left: float | None = None) -> ItemSpending:
        """The next item's slice: the time left over the items left, which
        the caller may count across workers (``items_left``, per worker);
        else this process's items not yet started.  The time left excludes
        what is kept for extensions and the overhead of the items left,
        except for the last item, which gets all of it."""
        now = self.now()
        if self._previous is not None:
            beyond = max(now - self._previous.started - self._previous.slice, 0.0)
            self.overhead += (beyond - self.overhead) / self.items_started  # the mean so far
        if items_left is None:
            items_left = self.n_items - self.items_started
        items_left = max(items_left, 1.0)
        self.items_started += 1
        available = self.remaining()
        if items_left > 1:
            available -= self.left_over + (items_left - 1) * self.overhead
        # However the items before it overran, an item's turn gets at least
        # the part of its fair share below which it would be starved (the
        # budget may be exceeded by that much, at the end).
        share = self.fair_share()
        spending = self._previous = ItemSpending(
            slice=max(available / items_left, STARVED_PART * share), started=now, share=share)
        return spending

    def count_first_pass(self, spending: ItemSpending, examples: int, seconds: float) -> None:
        """The item's first round ran in the first pass: it counts as the
        item's first round, though its time came before the item's slice."""
        spending.first_pass = examples
        self.finish_round(spending, examples, seconds, found_new=False)

    def finish_item(self, spending: ItemSpending) -> None:
        """The item is over: what it left of its slice is left over."""
        self.left_over += max(spending.slice - (self.now() - spending.started), 0.0)

    def next_round(self, spending: ItemSpending) -> int:
        """Examples for the item's next round; 0 when its slice is spent.
        The first round is the first pass's; the cost per example is then
        the item's latest round's (the first round pays one-off costs, such
        as the first dynamic conversion importing torch._dynamo)."""
        left = spending.slice - (self.now() - spending.started)
        if spending.rounds == 0:
            return FIRST_PASS_EXAMPLES
        cost = spending.last_round_cost
        if cost is None or left <= 0:
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
        if found_new and not spending.extended and spending.rounds > 1 and self.left_over > 0:
            spending.extended = True
            extra = min(EXTENSION * spending.slice, self.left_over)
            self.left_over -= extra
            spending.slice += extra
