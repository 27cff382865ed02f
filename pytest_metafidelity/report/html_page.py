"""A self-contained static HTML page of a (merged) JSON report.

The page needs nothing at view time: inline CSS, one inline script (a
legend that highlights one outcome), no fonts, images or scripts from
elsewhere.  It shows the kinds x converters heat map of outcomes with
example counts, every distinct failure and crash with its reproducer and
the node id that reruns it, the known differences (that occurred, and that
were expected but did not) with their links, the items of a budget run that
less than a quarter of their share of the time reached (starved), and the
environment.
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

from ..outcomes import CRASHED, ERROR, FAILED, HUNG, INTERNAL, KNOWN, PASSED, UNSUPPORTED
from .merge import merge
from .records import Crash, Failure, ItemRecord, UnexpectedPass
from .tables import columns

# A cell of an item that no report ran.
NOT_RUN = "not run"
# The outcome a heat-map cell shows, worst first, with its colour; each is
# also the count column the cell shows (its count / examples).
STATUSES = (
    (CRASHED, "#6b1f7a"),
    (HUNG, "#b5531c"),
    (INTERNAL, "#283593"),
    (FAILED, "#c62828"),
    (KNOWN, "#e0b000"),
    (UNSUPPORTED, "#9e9e9e"),
    (PASSED, "#2e7d32"),
    (NOT_RUN, "#ffffff"),
)
# Light backgrounds: their labels are dark.
_LIGHT = (KNOWN, NOT_RUN)


def cell_status(item: ItemRecord | None) -> str:
    """The one outcome a heat-map cell shows for an item."""
    if item is None:
        return NOT_RUN
    counts = item.counts
    for status in (CRASHED, HUNG):
        if counts.get(status, 0) or item.outcome == status:
            return status
    if counts.get(INTERNAL, 0):
        return INTERNAL
    if counts.get(FAILED, 0) or item.outcome in (FAILED, ERROR):
        return FAILED
    if counts.get(KNOWN, 0):
        return KNOWN
    if counts.get(UNSUPPORTED, 0) and not counts.get(PASSED, 0):
        return UNSUPPORTED
    return PASSED


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _link(url: Any) -> str:
    url = str(url or "")
    if url.startswith(("https://", "http://")):
        return f'<a href="{_e(url)}">{_e(url)}</a>'
    return _e(url)


def _slug(status: str) -> str:
    return status.replace(" ", "-")


CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
#heatmap td.cell { min-width: 84px; text-align: center; color: #fff; font-size: 12px; }
#heatmap td.cell.status-not-run { color: #999; }
#heatmap td.cell.status-known-difference { color: #222; }
#heatmap th.kind { white-space: nowrap; }
#heatmap td.cell.starved { outline: 3px dashed #222; outline-offset: -4px; }
#heatmap.highlighting td.cell:not(.lit) { opacity: 0.15; }
.legend span { display: inline-block; padding: 2px 8px; margin: 0 4px 4px 0; border-radius: 3px;
  cursor: pointer; border: 1px solid #888; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; max-height: 320px; }
.failure, .crash { border-left: 4px solid #c62828; padding-left: 10px; margin-bottom: 18px; }
.crash { border-color: #6b1f7a; }
code { background: #f0f0f0; padding: 0 3px; }
.summary td { text-align: right; }
"""

# Clicking a legend entry highlights the cells of that outcome; clicking it
# again shows all.  body[data-ready] tells a headless browser the script ran.
SCRIPT = """
(function () {
  var map = document.getElementById("heatmap");
  var active = null;
  document.querySelectorAll(".legend span").forEach(function (entry) {
    entry.addEventListener("click", function () {
      active = active === entry.dataset.status ? null : entry.dataset.status;
      map.classList.toggle("highlighting", active !== null);
      map.querySelectorAll("td.cell").forEach(function (cell) {
        cell.classList.toggle("lit", cell.dataset.status === active);
      });
    });
  });
  document.body.dataset.ready = "1";
})();
"""


def _items(doc: dict[str, Any]) -> list[ItemRecord]:
    return [ItemRecord.from_json(i) for i in doc["items"]]


def _heatmap(doc: dict[str, Any]) -> str:
    items = _items(doc)
    device_sets = sorted({",".join(i.devices or []) for i in items})
    converters: list[str] = []
    for i in items:
        if i.converter not in converters:
            converters.append(i.converter)
    order = doc.get("options", {}).get("converters") or []
    converters.sort(key=lambda c: (order.index(c) if c in order else len(order), c))
    column_keys = [(c, d) for d in device_sets for c in converters]
    kinds = sorted({i.kind for i in items})
    by_key = {(i.kind, i.converter, ",".join(i.devices or [])): i for i in items}
    head = "".join(
        f"<th>{_e(c)}" + (f"<br><small>{_e(d)}</small>" if len(device_sets) > 1 else "") + "</th>"
        for c, d in column_keys)
    rows = []
    for kind in kinds:
        cells = []
        for converter, devices in column_keys:
            item = by_key.get((kind, converter, devices))
            status = cell_status(item)
            colour = dict(STATUSES)[status]
            if item is None:
                cells.append(f'<td class="cell status-{_slug(NOT_RUN)}" '
                             f'data-status="{_e(NOT_RUN)}">-</td>')
                continue
            counts = item.counts
            title = f"{kind} through {converter}: {status}; " + ", ".join(
                f"{c} {counts.get(c, 0)}" for c in columns([item]) if counts.get(c, 0))
            starved = item.starved or ""
            if starved:
                title += f"; {starved}"
            cells.append(
                f'<td class="cell status-{_slug(status)}{" starved" if starved else ""}" '
                f'data-status="{_e(status)}" style="background:{colour}" title="{_e(title)}">'
                f'{_e(status)}<br>{counts.get(status, 0)}/{counts.get("examples", 0)} ex'
                f'{"<br><b>starved</b>" if starved else ""}</td>')
        rows.append(f'<tr><th class="kind">{_e(kind)}</th>{"".join(cells)}</tr>')
    legend = "".join(
        f'<span data-status="{_e(s)}" style="background:{c};color:{"#222" if s in _LIGHT else "#fff"}">{_e(s)}</span>'
        for s, c in STATUSES)
    return (f'<div class="legend">{legend}</div>'
            f'<table id="heatmap"><thead><tr><th>kind \\ converter</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _totals(doc: dict[str, Any]) -> str:
    items = _items(doc)
    cols = doc.get("columns") or columns(items)
    totals: Counter = Counter()
    statuses: Counter = Counter()
    for i in items:
        totals.update(i.counts)
        statuses[cell_status(i)] += 1
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join(f"<td>{totals.get(c, 0)}</td>" for c in cols)
    said = ", ".join(f"{n} {_e(s)}" for s, n in statuses.most_common())
    return (f"<p>{len(items)} items: {said}.</p>"
            f'<table class="summary"><tr>{head}</tr><tr>{body}</tr></table>')


def _environment(doc: dict[str, Any]) -> str:
    env, options = doc.get("environment", {}), doc.get("options", {})
    rows = [
        ("torch", env.get("torch")), ("python", env.get("python")),
        ("platform", env.get("platform")), ("devices (machine)", ", ".join(env.get("devices", []))),
        ("devices (tensors)", ", ".join(options.get("devices", []))),
        ("devices skipped", "; ".join(env.get("skipped_devices", {}).values())),
        ("seed", env.get("seed")), ("profile", env.get("profile")),
        ("examples per item", options.get("examples")), ("budget (s)", options.get("budget")),
    ]
    table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    inputs = doc.get("inputs", [])
    shard_rows = "".join(
        f"<tr><td>{_e(i['file'])}</td><td>{_e(i.get('shard') or '')}</td>"
        f"<td>{_e(', '.join(i.get('devices') or []))}</td>"
        f"<td>{_e('; '.join((i.get('skipped_devices') or {}).values()))}</td><td>{i['items']}</td>"
        f"<td>{_e(i.get('torch'))}</td><td>{_e(i.get('seed'))}</td></tr>" for i in inputs)
    shards = (f"<h3>Runs merged ({len(inputs)})</h3><table><tr><th>report</th><th>shard</th>"
              f"<th>devices</th><th>devices skipped</th><th>items</th><th>torch</th><th>seed</th>"
              f"</tr>{shard_rows}</table>"
              if inputs else "")
    return f"<table>{table}</table>{shards}"


def _rerun(nodeid: str) -> str:
    return f'<code>pytest --metafidelity "{_e(nodeid)}"</code>'


def _failures(doc: dict[str, Any]) -> str:
    failures = [Failure.from_json(f) for f in doc.get("failures", [])]
    if not failures:
        return "<p>No failures.</p>"
    parts = []
    for f in failures:
        nodeids = f.nodeids or [f.nodeid]
        parts.append(
            f'<div class="failure"><h3>[{_e(f.check)}] {_e(f.kind)} through '
            f'{_e(f.converter)}: {_e(f.path)}: {_e(f.attribute)}</h3>'
            f"<p>real: <code>{_e(f.real)}</code><br>fake: <code>{_e(f.fake)}</code></p>"
            f"<p>rerun: {'<br>'.join(_rerun(n) for n in nodeids)}<br>"
            f"reproducer file: <code>{_e(f.reproducer_file)}</code></p>"
            f"<pre>{_e(f.reproducer)}</pre></div>")
    return "".join(parts)


def _crashes(doc: dict[str, Any]) -> str:
    crashes = [Crash.from_json(c) for c in doc.get("crashes", [])]
    if not crashes:
        return "<p>No crashes or hangs.</p>"
    parts = []
    for c in crashes:
        nodeids = c.nodeids or [c.nodeid]
        parts.append(
            f'<div class="crash"><h3>{_e(c.status)}: {_e(c.kind)} through '
            f'{_e(c.converter)}</h3>'
            f"<p>signal: {_e(c.signal)}, exit status: {_e(c.exit_status)}<br>"
            f"rerun: {'<br>'.join(_rerun(n) for n in nodeids)}<br>"
            f"reproducer file: <code>{_e(c.reproducer_file)}</code></p>"
            + (f"<pre>{_e(c.frames)}</pre>" if c.frames else "")
            + f"<pre>{_e(c.reproducer)}</pre></div>")
    return "".join(parts)


def _known(doc: dict[str, Any]) -> str:
    from ..known_differences import by_id

    occurred = doc.get("known_differences", {})
    rows = []
    for entry, record in occurred.items():
        try:
            link = by_id(entry).link
        except Exception:
            link = ""
        rows.append(f"<tr><td>{_e(entry)}</td><td>{_link(link)}</td><td>{record['examples']}</td>"
                    f"<td>{_e(', '.join(record['items']))}</td></tr>")
    table = (f"<table><tr><th>entry</th><th>link</th><th>examples</th><th>items</th></tr>"
             f"{''.join(rows)}</table>" if rows else "<p>None occurred.</p>")
    passing = [UnexpectedPass.from_json(p) for p in doc.get("unexpectedly_passing", [])]
    prow = "".join(
        f"<tr><td>{_e(p.entry)}</td><td>{_link(p.link)}</td><td>{p.examples}</td>"
        f"<td>{_e(', '.join(p.items or []))}</td><td><code>{_e(p.reproducer_file)}</code></td></tr>"
        for p in passing)
    ptable = (f"<table><tr><th>entry</th><th>link</th><th>examples</th><th>items</th>"
              f"<th>reproducer</th></tr>{prow}</table>" if passing else "<p>None.</p>")
    return (f"<h3>Occurred ({len(rows)})</h3>{table}"
            f"<h3>Expected but did not occur: fixed upstream? ({len(passing)})</h3>{ptable}")


def _starved(doc: dict[str, Any]) -> str:
    starved = [i for i in _items(doc) if i.starved]
    if not starved:
        return "<p>None: every item got at least a quarter of its share of the budget.</p>"
    rows = "".join(f"<tr><td>{_e(i.kind)}</td><td>{_e(i.converter)}</td>"
                   f"<td>{_e(i.starved)}</td><td>{_rerun(i.nodeid)}</td></tr>"
                   for i in starved)
    return (f"<table><tr><th>kind</th><th>converter</th><th>why</th><th>rerun</th></tr>"
            f"{rows}</table>")


def render(doc: dict[str, Any]) -> str:
    """The page for a report (a single run's or a merged one)."""
    if "inputs" not in doc:
        doc = merge([doc], ["report"])
    env = doc.get("environment", {})
    title = f"pytest-metafidelity: torch {env.get('torch', '?')}"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        f"{_totals(doc)}"
        f"<h2>Kinds x converters</h2>{_heatmap(doc)}"
        f"<h2>Failures ({len(doc.get('failures', []))})</h2>{_failures(doc)}"
        f"<h2>Crashes and hangs ({len(doc.get('crashes', []))})</h2>{_crashes(doc)}"
        f"<h2>Known differences</h2>{_known(doc)}"
        f"<h2>Starved items ({sum(1 for i in _items(doc) if i.starved)})</h2>"
        f"{_starved(doc)}"
        f"<h2>Environment</h2>{_environment(doc)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
