"""Draft upstream bug reports for known differences not yet reported.

An upstream-bug entry of the registry whose ``link`` is
:data:`~pytest_metafidelity.known_differences.UNFILED` has everything a
PyTorch bug report needs: what differs, the converters, a minimal runnable
reproducer, and the upstream threads on the same code.  This module turns it
into the report, with the versions it was seen on, ready to paste into
https://github.com/pytorch/pytorch/issues/new; once filed, the entry's
``link`` becomes the issue's address.

    python -m pytest_metafidelity.upstream              # every unfiled entry
    python -m pytest_metafidelity.upstream ENTRY_ID ...  # just these
"""

from __future__ import annotations

import platform
import sys
import warnings
from typing import Sequence

from .known_differences import KNOWN_DIFFERENCES, KnownDifference, by_id

NEW_ISSUE = "https://github.com/pytorch/pytorch/issues/new"


def unfiled_entries() -> list[KnownDifference]:
    """The upstream-bug entries with no upstream report yet."""
    return [e for e in KNOWN_DIFFERENCES if e.unfiled]


def title(entry: KnownDifference) -> str:
    """The report's title: the first clause of the entry's reason."""
    first = entry.reason.split(": ")[0].split("; ")[0].strip()
    if len(first) > 110:
        first = first[:107].rstrip() + "..."
    return f"[fake tensor] {first}"


def converters_said(entry: KnownDifference) -> str:
    """The converters ``entry`` is registered for, as a report says it: the
    names, and the capabilities that chose them where a selection did."""
    from .converters import Selection

    if entry.converters is None:
        return "every converter"
    names = ", ".join(f"`{n}`" for n in entry.converters) or "no registered converter"
    return f"{names} ({entry.converters})" if isinstance(entry.converters, Selection) else names


def draft_issue(entry: KnownDifference, torch_version: str | None = None) -> str:
    """The markdown body of a bug report for ``entry``."""
    if torch_version is None:
        with warnings.catch_warnings():
            # torch warns at import when numpy is absent; it is not needed here.
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
            import torch

        torch_version = torch.__version__
    converters = converters_said(entry)
    bounds = [f">= {entry.since}" if entry.since else "", f"< {entry.until}" if entry.until else ""]
    versions = "torch " + ", ".join(b for b in bounds if b) if any(bounds) else "every torch version"
    lines = [
        f"# {title(entry)}",
        "",
        "## What differs between the real tensor and its fake",
        "",
        entry.reason.rstrip(".") + ".",
        "",
        f"Found by pytest-metafidelity (known difference `{entry.id}`, check "
        f"`{'`, `'.join(entry.checks)}`, converters: {converters}).",
        "",
        "## Reproducer",
        "",
        "```python",
        entry.reproducer.rstrip("\n"),
        "```",
        "",
        "The script runs without error while the difference occurs.",
        "",
        "## Versions",
        "",
        f"- the difference is registered for {versions}",
        f"- this draft was made with torch {torch_version}, Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}",
    ]
    if entry.related:
        lines += ["", "## Related (same code, not this report)", ""]
        lines += [f"- {url}" for url in entry.related]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ids = list(sys.argv[1:] if argv is None else argv)
    if any(i in ("-h", "--help") for i in ids):
        print(__doc__.strip())
        return 0
    if not ids:
        entries = unfiled_entries()
    else:
        entries = []
        for entry_id in ids:
            try:
                entry = by_id(entry_id)
            except KeyError:
                allowed = ", ".join(e.id for e in unfiled_entries())
                print(f"unknown known-difference id {entry_id!r}; unfiled entries: {allowed}",
                      file=sys.stderr)
                return 2
            if not entry.unfiled:
                what = "is by design" if entry.by_design else f"is already reported: {entry.link}"
                print(f"{entry_id} {what}; nothing to file", file=sys.stderr)
                return 2
            entries.append(entry)
    print(f"<!-- {len(entries)} draft(s); file each at {NEW_ISSUE} -->")
    for entry in entries:
        print()
        print(draft_issue(entry), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
