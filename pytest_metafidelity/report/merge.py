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

import json
from collections import Counter
from typing import Any

from ..outcomes import ITEM_OUTCOMES, PASSED
from . import tables
from .tables import columns, unique_by_signature

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
    return doc


class ReportError(ValueError):
    """An input that is not a metafidelity report; the message names it."""


def item_key(item: dict[str, Any]) -> tuple[str, str, str]:
    return item["kind"], item["converter"], ",".join(item.get("devices", []))


def _worst(a: str, b: str) -> str:
    rank = {o: i for i, o in enumerate(OUTCOME_ORDER)}
    return min(a, b, key=lambda o: rank.get(o, len(rank)))


def _combine(into: dict[str, Any], item: dict[str, Any]) -> None:
    counts = Counter(into["counts"])
    counts.update(item.get("counts", {}))
    into["counts"] = dict(counts)
    into["outcome"] = _worst(into.get("outcome", PASSED), item.get("outcome", PASSED))
    for field in ("failures", "crashes", "unexpectedly_passing"):
        into[field] = into.get(field, []) + item.get(field, [])
    known = Counter(into.get("known_differences", {}))
    known.update(item.get("known_differences", {}))
    into["known_differences"] = dict(sorted(known.items()))
    into["cases_digest"] = ""  # two runs' cases: no single digest
    into.setdefault("merged_nodeids", [into["nodeid"]]).append(item["nodeid"])


def merge(docs: list[dict[str, Any]], names: list[str] | None = None) -> dict[str, Any]:
    """One report from several (in the given order; the first's environment
    and options head the result, each input is listed under ``inputs``)."""
    names = names or [f"report {i + 1}" for i in range(len(docs))]
    items: dict[tuple[str, str, str], dict[str, Any]] = {}
    inputs = []
    for name, doc in zip(names, docs):
        options = doc.get("options", {})
        devices = list(options.get("devices", []))
        for raw in doc["items"]:
            item = {**raw, "devices": raw.get("devices", devices)}
            key = item_key(item)
            if key in items:
                _combine(items[key], item)
            else:
                items[key] = {**item, "counts": dict(item.get("counts", {}))}
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
    merged_items = sorted(items.values(), key=lambda r: (r["kind"], r["converter"],
                                                         ",".join(r["devices"])))
    first = docs[0] if docs else {}
    return {
        "environment": {**first.get("environment", {}), "merged_from": len(docs)},
        "options": first.get("options", {}),
        "inputs": inputs,
        "columns": columns(merged_items),
        "items": merged_items,
        "failures": unique_by_signature((f for i in merged_items for f in i.get("failures", [])),
                                        with_nodeids=True),
        # the items' crashes, and those a report lists only at its top level
        # (left by an earlier run that died)
        "crashes": unique_by_signature([*(c for i in merged_items for c in i.get("crashes", [])),
                                        *(c for d in docs for c in d.get("crashes", []))],
                                       with_nodeids=True),
        "known_differences": known_differences(merged_items),
        "unexpectedly_passing": unexpectedly_passing(merged_items),
    }


def known_differences(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entry id -> examples in which it occurred and the items."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        for entry, examples in item.get("known_differences", {}).items():
            record = out.setdefault(entry, {"examples": 0, "items": []})
            record["examples"] += examples
            record["items"].append(f"{item['kind']}-{item['converter']}")
    return dict(sorted(out.items()))


def unexpectedly_passing(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries expected on some examples that did not occur: one record per
    entry, with the items and the first reproducer."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        for p in item.get("unexpectedly_passing", []):
            record = out.setdefault(p["entry"], {**p, "examples": 0, "items": []})
            record["examples"] += p.get("examples", 0)
            record["items"].append(f"{p['kind']}-{p['converter']}")
    return [out[k] for k in sorted(out)]


def table(doc: dict[str, Any]) -> str:
    """The kinds x converters table of a (merged) report, as text."""
    return tables.table(doc["items"], doc.get("columns"))
