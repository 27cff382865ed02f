"""The first pass of a budget run: every item runs a few examples before any goes deep.

Most converter faults show on the first, simplest examples of the items
they affect.  If each item spent its whole slice in turn, a fault that
shows only in items near the end of the collection order would be found
only near the end of the run.  So before the first item's turn, each
process that runs examples runs every item's first round
(:data:`.budget.FIRST_PASS_EXAMPLES` examples, the simplest first), in a
cost-aware order: items whose failures the example database holds first
(they replay them), then each kind's cheapest item, then each kind's next
cheapest, and so on (:func:`cost_order`).  With ``-n N`` the items are split
among the N workers for this pass.

An item that fails in the first pass is run at once -- its whole pytest
protocol, on this worker, before the item whose turn it was -- so its
failure (shrunk and reported as usual) comes in seconds, and ``-x`` stops
there.  An item's protocol runs once in the whole run: whoever starts it
first *claims* it (a file made with ``O_EXCL`` in the run's directory,
which every worker shares), and a worker whose turn reaches an item
claimed elsewhere skips it, and the first pass skips an item whose turn
has begun (on another worker).  An item that passed keeps its first round:
its turn goes on from its second round, with the first pass's examples
counted (through a small record file when another worker ran them).

Every example run ahead of its item's turn -- in the first pass, or in an
item it found failing and ran at once -- is journaled like any other, marked
``out_of_turn``, so a native crash loses nothing: the controller reports it
as a crash of the item it was drawn for (``pytest_handlecrashitem`` in the
plugin), not of the item whose turn xdist was waiting for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any, Callable, Iterable, Sequence

CLAIMS = "claims"
RECORDS = "first-pass"
STATE = (CLAIMS, RECORDS)  # the folders it keeps in the run's directory


@dataclasses.dataclass(frozen=True)
class FirstPassRecord:
    """A passed first round: what the item's turn counts as its first round."""

    examples: int
    seconds: float
    tally: dict[str, int]
    known: dict[str, int]
    pid: int

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "FirstPassRecord | None":
        try:
            return cls(**json.loads(text))
        except (ValueError, TypeError):
            return None


def _file_name(nodeid: str) -> str:
    return hashlib.sha256(nodeid.encode()).hexdigest()[:32]


@dataclasses.dataclass
class FirstPass:
    """The first pass's shared state in the run's directory ``directory``,
    seen from worker ``worker`` of ``workers`` (0 of 1 without xdist)."""

    directory: str
    worker: int = 0
    workers: int = 1
    total_items: int = 0
    done: bool = False

    def __post_init__(self) -> None:
        for sub in STATE:
            os.makedirs(os.path.join(self.directory, sub), exist_ok=True)

    # -- which item runs where ------------------------------------------------

    def share(self, nodeids: Sequence[str]) -> list[str]:
        """This worker's part of the first pass: every ``workers``-th item.
        A worker that replaces a dead one (its index past the count) has
        none: the pass was the dead worker's, and its crash is reported."""
        if self.worker >= self.workers:
            return []
        return list(nodeids[self.worker::self.workers])

    def claim(self, nodeid: str) -> bool:
        """True when this process is the first to run ``nodeid``'s protocol."""
        path = os.path.join(self.directory, CLAIMS, _file_name(nodeid))
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return False
        return True

    def claimed(self, nodeid: str) -> bool:
        """Some process has started ``nodeid``'s protocol (its turn came
        before this worker's first pass reached it)."""
        return os.path.exists(os.path.join(self.directory, CLAIMS, _file_name(nodeid)))

    def items_left(self) -> float:
        """Items whose turn has not come yet (the one starting now included),
        per worker, counted across workers."""
        claimed = len(os.listdir(os.path.join(self.directory, CLAIMS)))
        return max(self.total_items - claimed + 1, 1) / self.workers

    # -- what passed ----------------------------------------------------------

    def record(self, nodeid: str, record: FirstPassRecord) -> None:
        path = os.path.join(self.directory, RECORDS, _file_name(nodeid))
        with open(path + ".tmp", "w") as f:
            f.write(record.to_json())
        os.replace(path + ".tmp", path)

    def passed(self, nodeid: str) -> FirstPassRecord | None:
        """The item's first round, when the first pass ran it and it passed."""
        try:
            with open(os.path.join(self.directory, RECORDS, _file_name(nodeid))) as f:
                return FirstPassRecord.from_json(f.read())
        except OSError:
            return None


def cost_order(nodeids: Iterable[str], failed_before: Callable[[str], bool],
               cost: Callable[[str], float], kind: Callable[[str], str]) -> list[str]:
    """Items whose earlier failures the example database holds first; then
    every kind's cheapest item, cheapest kind first, then every kind's
    second cheapest, and so on.  Most converter faults show in one kind
    through every converter: each kind is reached once in the pass's first
    second.  (A stable sort: ties keep the collection order.)"""
    ranked: dict[str, int] = {}
    seen: dict[str, int] = {}
    for nodeid in sorted(nodeids, key=cost):
        ranked[nodeid] = seen[kind(nodeid)] = seen.get(kind(nodeid), -1) + 1
    return sorted(ranked, key=lambda n: (not failed_before(n), ranked[n], cost(n)))


def worker_position(workerinput: dict[str, Any] | None) -> tuple[int, int]:
    """(this worker's index, the number of workers): (0, 1) without xdist.
    xdist names workers gw0..gwN-1 and their replacements gwN and up."""
    if not workerinput:
        return 0, 1
    name = str(workerinput.get("workerid", "gw0"))
    count = int(workerinput.get("workercount", 1) or 1)
    index = int(name[2:]) if name[2:].isdigit() else 0
    return index, count


def remove_state(directory: str) -> None:
    """The run is over: its first pass's files go."""
    import shutil

    for sub in STATE:
        shutil.rmtree(os.path.join(directory, sub), ignore_errors=True)
