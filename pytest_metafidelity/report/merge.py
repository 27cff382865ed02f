"""Merging the JSON reports of several runs (shards, or CPU and GPU jobs)
into one report with the same layout as a single run's.

An item is identified by its kind, converter and the devices its run used
(node ids hold the suite's path, which differs between machines); one that
several reports ran has its counts summed.  Failures and crashes are listed
once per signature across all reports, with every node id that hit them.
Known differences are gathered per entry: those that occurred (examples,
items) and those expected that did not occur.  Generic over the count
columns: whatever columns the reports have are summed, ``records.COLUMNS``
first.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

from ..outcomes import ITEM_OUTCOMES
from . import tables
from .records import Crash, ItemRecord, ReportError, UnexpectedPass
from .tables import columns, unique_by_signature

__all__ = ["ReportError", "item_key", "known_differences", "load", "merge", "table",
           "unexpectedly_passing"]

# Worst first: the outcome of an item that several reports ran.
OUTCOME_ORDER = ITEM_OUTCOMES


def load(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: cannot read a metafidelity JSON report ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise ReportError(f"{path}: not a metafidelity JSON report (no 'items' list); "
                          "write one with --metafidelity-report=PATH")
    try:
        for item in doc["items"]:
            ItemRecord.from_json(item)
    except ReportError as e:
        raise ReportError(f"{path}: {e}") from None
    return doc


def item_key(item: ItemRecord) -> tuple[str, str, str]:
    return item.kind, item.converter, ",".join(item.devices or [])


def _worst(a: str, b: str) -> str:
    rank = {o: i for i, o in enumerate(OUTCOME_ORDER)}
    return min(a, b, key=lambda o: rank.get(o, len(rank)))


def _combine(into: ItemRecord, item: ItemRecord) -> None:
    counts = Counter(into.counts)
    counts.update(item.counts)
    into.counts = dict(counts)
    into.outcome = _worst(into.outcome, item.outcome)
    into.failures = into.failures + item.failures
    into.crashes = into.crashes + item.crashes
    into.unexpectedly_passing = into.unexpectedly_passing + item.unexpectedly_passing
    known = Counter(into.known_differences)
    known.update(item.known_differences)
    into.known_differences = dict(sorted(known.items()))
    into.cases_digest = ""  # two runs' cases: no single digest
    into.merged_nodeids = [*(into.merged_nodeids or [into.nodeid]), item.nodeid]


def merge(docs: list[dict[str, Any]], names: list[str] | None = None) -> dict[str, Any]:
    """One report from several (in the given order; the first's environment
    and options head the result, each input is listed under ``inputs``)."""
    names = names or [f"report {i + 1}" for i in range(len(docs))]
    items: dict[tuple[str, str, str], ItemRecord] = {}
    inputs = []
    for name, doc in zip(names, docs):
        options = doc.get("options", {})
        devices = list(options.get("devices", []))
        for raw in doc["items"]:
            item = ItemRecord.from_json(raw)
            if item.devices is None:
                item.devices = devices
            key = item_key(item)
            if key in items:
                _combine(items[key], item)
            else:
                items[key] = dataclasses.replace(item, counts=dict(item.counts))
        environment = doc.get("environment", {})
        inputs.append({
            "file": name,
            "items": len(doc["items"]),
            "shard": options.get("shard"),
            "devices": devices,
            "skipped_devices": environment.get("skipped_devices", {}),
            "torch": environment.get("torch"),
            "seed": environment.get("seed"),
            "profile": environment.get("profile"),
            "examples": options.get("examples"),
            "budget": options.get("budget"),
        })
    merged_items = sorted(items.values(), key=lambda r: (r.kind, r.converter,
                                                         ",".join(r.devices or [])))
    first = docs[0] if docs else {}
    # the items' crashes, and those a report lists only at its top level
    # (left by an earlier run that died)
    crashes = [*(c for i in merged_items for c in i.crashes),
               *(Crash.from_json(c) for d in docs for c in d.get("crashes", []))]
    return {
        "environment": {**first.get("environment", {}), "merged_from": len(docs)},
        "options": first.get("options", {}),
        "inputs": inputs,
        "columns": columns(merged_items),
        "items": [i.to_json() for i in merged_items],
        "failures": [f.to_json() for f in unique_by_signature(
            (f for i in merged_items for f in i.failures), with_nodeids=True)],
        "crashes": [c.to_json() for c in unique_by_signature(crashes, with_nodeids=True)],
        "known_differences": known_differences(merged_items),
        "unexpectedly_passing": [p.to_json() for p in unexpectedly_passing(merged_items)],
    }


def known_differences(items: list[ItemRecord]) -> dict[str, dict[str, Any]]:
    """Entry id -> examples in which it occurred and the items."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        for entry, examples in item.known_differences.items():
            record = out.setdefault(entry, {"examples": 0, "items": []})
            record["examples"] += examples
            record["items"].append(f"{item.kind}-{item.converter}")
    return dict(sorted(out.items()))


def unexpectedly_passing(items: list[ItemRecord]) -> list[UnexpectedPass]:
    """Entries expected on some examples that did not occur: one record per
    entry, with the items and the first reproducer."""
    out: dict[str, UnexpectedPass] = {}
    for item in items:
        for p in item.unexpectedly_passing:
            record = out.get(p.entry)
            if record is None:
                record = out[p.entry] = dataclasses.replace(p, examples=0, items=[])
            record.examples += p.examples
            record.items = [*(record.items or []), f"{p.kind}-{p.converter}"]
    return [out[k] for k in sorted(out)]


def table(doc: dict[str, Any]) -> str:
    """The kinds x converters table of a (merged) report, as text."""
    return tables.table([ItemRecord.from_json(i) for i in doc["items"]], doc.get("columns"))
