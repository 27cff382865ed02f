"""``python -m pytest_metafidelity.report COMMAND ...``: work on JSON reports
written by ``--metafidelity-report``.

    merge OUT.json IN.json [IN.json ...]    one report from several (shards, CPU and GPU jobs);
                                           prints the kinds x converters table
    html OUT.html IN.json                  a self-contained page of a report (merged or not)
    new-failures OUT.md IN.json [OLD.json] the failures and crashes of IN whose signature is not
                                           in OLD, as Markdown (an issue body); OUT.md is written
                                           only when there are some, so ``test -s OUT.md`` says
                                           whether to open an issue
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .html_page import render
from .merge import load, merge, table
from .records import Crash, Failure, ReportError


def _write(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _findings(doc: dict[str, Any]) -> list[Failure | Crash]:
    """The failures and crashes of a report, merged (once per signature)."""
    doc = doc if "inputs" in doc else merge([doc])
    return [*(Failure.from_json(f) for f in doc.get("failures", [])),
            *(Crash.from_json(c) for c in doc.get("crashes", []))]


def new_failures(doc: dict[str, Any], old: dict[str, Any] | None) -> list[Failure | Crash]:
    """Failures and crashes of ``doc`` whose signature ``old`` does not have."""
    known = {r.signature for r in _findings(old)} if old is not None else set()
    return [r for r in _findings(doc) if r.signature not in known]


def markdown(records: list[Failure | Crash], doc: dict[str, Any]) -> str:
    env = doc.get("environment", {})
    lines = [f"pytest-metafidelity nightly: {len(records)} new failure(s) on torch "
             f"{env.get('torch', '?')} (Hypothesis seed {env.get('seed')})", ""]
    for r in records:
        what = (f"{r.status} (signal {r.signal}, exit status {r.exit_status})"
                if isinstance(r, Crash)
                else f"[{r.check}] {r.path}: {r.attribute}: real {r.real}, fake {r.fake}")
        nodeids = r.nodeids or [r.nodeid]
        lines += [f"### {r.kind} through {r.converter}: {what}", "",
                  f"Signature: `{r.signature}`", "",
                  *[f"Rerun: `pytest --metafidelity \"{n}\"`" for n in nodeids], "",
                  "```python", r.reproducer.rstrip(), "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_metafidelity.report",
        description="Merge metafidelity JSON reports, render them as a static HTML page, "
                    "or list the failures that are new since an older report.")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("merge", help="combine shard reports into one")
    p.add_argument("out", metavar="OUT.json")
    p.add_argument("inputs", metavar="IN.json", nargs="+")
    p = commands.add_parser("html", help="a self-contained HTML page of a report")
    p.add_argument("out", metavar="OUT.html")
    p.add_argument("input", metavar="IN.json")
    p = commands.add_parser("new-failures", help="failures not in an older report, as Markdown")
    p.add_argument("out", metavar="OUT.md")
    p.add_argument("input", metavar="IN.json")
    p.add_argument("old", metavar="OLD.json", nargs="?",
                   help="the previous report; missing file = no previous report")
    args = parser.parse_args(argv)
    try:
        if args.command == "merge":
            doc = merge([load(p) for p in args.inputs], list(args.inputs))
            _write(args.out, json.dumps(doc, indent=2, default=str))
            print(table(doc))
            print(f"metafidelity: {len(args.inputs)} report(s) merged into {args.out}: "
                  f"{len(doc['items'])} items, {len(doc['failures'])} distinct failure(s), "
                  f"{len(doc['crashes'])} distinct crash(es)")
        elif args.command == "html":
            _write(args.out, render(load(args.input)))
            print(f"metafidelity: page written to {args.out}")
        else:
            doc = load(args.input)
            old = load(args.old) if args.old and os.path.exists(args.old) else None
            records = new_failures(doc, old)
            if os.path.exists(args.out):
                os.remove(args.out)
            if records:
                _write(args.out, markdown(records, doc if "inputs" in doc else merge([doc])))
            print(f"metafidelity: {len(records)} new failure(s)"
                  + (f" written to {args.out}" if records else ""))
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
