"""Shards: ``--metafidelity-shard=I/N`` runs part I of N of the suite items.

The assignment is the same on every machine and whatever the collection
order: the suite items are sorted by estimated cost (then by id) and each
goes, longest first, to the shard with the least estimated cost so far
(greedy longest-processing-time).  The N shards together are exactly the
suite, with no item in two shards.  Items that are not suite items (your own
tests given as paths) are left alone, so they run in every shard.

Estimated cost = ``cost_ms * CONVERTER_FACTOR[converter]``, where
``cost_ms`` is what the kind declares (``@kind(..., cost_ms=...)``): a
product model fitted to one measured run of the whole suite (torch 2.13.0
CPU, 30 examples per item, 232 items; the slowest item took 60x the
fastest).  A kind that declares no cost, or a name no kind is registered
under (an id from an older run), costs the median of the declared costs.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from .option_error import OptionError

# How much slower than the average converter each converter is.
CONVERTER_FACTOR = {
    "meta": 0.5, "fake": 0.6, "fake-real": 0.6, "functional": 0.7, "fake-real-dynamic": 1.1,
    "fake-dynamic": 1.7, "refake": 1.7, "refake-fresh": 2.3,
}


def parse(value: Any) -> tuple[int, int] | None:
    """``"I/N"`` as ``(I, N)``; None when not given.  Raises OptionError."""
    if value is None or not str(value).strip():
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(value))
    if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise OptionError(
            f"--metafidelity-shard: {value!r} is not valid; expected I/N with 1 <= I <= N, "
            "e.g. 1/4 for the first of four shards")
    return int(match.group(1)), int(match.group(2))


def kind_ms(kind: str) -> float:
    """Milliseconds per example of ``kind`` for a converter of factor 1."""
    from .strategies.kinds import all_kinds

    kinds = all_kinds()
    declared = kinds.get(kind)
    if declared is not None and declared.cost_ms is not None:
        return float(declared.cost_ms)
    return float(statistics.median(k.cost_ms for k in kinds.values() if k.cost_ms is not None))


def estimated_cost(kind: str, converter: str) -> float:
    return kind_ms(kind) * CONVERTER_FACTOR.get(converter, 1.0)


def assign(ids: dict[str, tuple[str, str]], shards: int) -> dict[str, int]:
    """Shard number (1..shards) of each item, from ``{item id: (kind,
    converter)}``."""
    loads = [0.0] * shards
    assignment = {}
    for item_id in sorted(ids, key=lambda i: (-estimated_cost(*ids[i]), i)):
        shard = min(range(shards), key=lambda s: (loads[s], s))
        loads[shard] += estimated_cost(*ids[item_id])
        assignment[item_id] = shard + 1
    return assignment


def apply_shard(config: Any, items: list[Any], shard: tuple[int, int] | None) -> None:
    """Keep only this shard's suite items in ``items`` (in place), reporting
    the others as deselected."""
    if shard is None:
        return
    index, count = shard
    # Keyed by the item's id ("kind-converter"), not its node id, which holds
    # the suite's path and so differs between machines.
    suite = {}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "metafidelity_item" in params:
            suite[id(item)] = params["metafidelity_item"]
    assignment = assign({s.id: (s.kind, s.converter) for s in suite.values()}, count)
    kept = [i for i in items if id(i) not in suite or assignment[suite[id(i)].id] == index]
    if len(kept) < len(items):
        kept_ids = set(map(id, kept))
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept_ids])
        items[:] = kept
