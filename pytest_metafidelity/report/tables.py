"""What every report shows the same way, single run or merged: the kinds x
converters table of counts, and records listed once per signature.

Plain functions of the typed records (no torch, no suite): the terminal
(``collector``), merged reports (``merge``) and the HTML page
(``html_page``) use these and no copy of their own.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Iterable, Sequence, TypeVar

from .records import COLUMNS, Crash, Failure, ItemRecord

# A record listed once per signature.
Signed = TypeVar("Signed", Failure, Crash)


def columns(items: Iterable[ItemRecord]) -> list[str]:
    """``records.COLUMNS``, then any other count columns the items have."""
    seen = list(COLUMNS)
    for item in items:
        for column in item.counts:
            if column not in seen:
                seen.append(column)
    return seen


def table(items: Sequence[ItemRecord], cols: Sequence[str] | None = None) -> str:
    """The items' counts as a text table, a row per item (kind, converter,
    and the devices where the items ran on more than one set), then their
    totals.  ``cols``: the count columns (default: :func:`columns`)."""
    cols = list(cols) if cols else columns(items)
    several_devices = len({",".join(i.devices or []) for i in items}) > 1
    header = ("kind", "converter", *(["devices"] if several_devices else []), *cols)
    body = [(i.kind, i.converter, *([",".join(i.devices or [])] if several_devices else []),
             *(str(i.counts.get(c, 0)) for c in cols)) for i in items]
    totals: Counter[str] = Counter()
    for i in items:
        totals.update(i.counts)
    body.append(("TOTAL", f"{len(items)} items", *([""] if several_devices else []),
                 *(str(totals.get(c, 0)) for c in cols)))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]

    def line(cells: Iterable[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(header), line("-" * w for w in widths), *map(line, body)])


def unique_by_signature(records: Iterable[Signed], *, with_nodeids: bool = False) -> list[Signed]:
    """The first record of each signature, in order; ``with_nodeids``: each
    (a copy) with ``nodeids``, every node id that produced that signature."""
    firsts: dict[str, Signed] = {}
    for record in records:
        if record.signature not in firsts:
            firsts[record.signature] = (dataclasses.replace(record, nodeids=[]) if with_nodeids
                                        else record)
        kept: Signed = firsts[record.signature]
        if with_nodeids and record.nodeid and record.nodeid not in (kept.nodeids or []):
            kept.nodeids = [*(kept.nodeids or []), record.nodeid]
    return list(firsts.values())
