"""How a suite item's failure is shown: our report, never a repr of the
frames' arguments.

pytest formats a failure with every traceback frame's arguments (``repr``,
and the locals too under ``--showlocals``), and Hypothesis has it do so for
every failing example it meets while it searches and shrinks.  In the suite
those frames hold the example's real tensors, and printing a tensor can kill
the process: torch's ``repr`` of a tensor whose storage holds no bytes
(``untyped_storage().resize_(0)``, a case every kind draws) reads the
missing bytes and segfaults.  (The journal keeps a failed example on record
until its failure is reported, so such a crash would still name the case.)

So a suite item reports a finding (:class:`~..faithful.FidelityError`,
:class:`.crashes.ExampleCrashed`) as the finding's own text -- the invariant
that broke, real vs fake side by side, the reproducer, and for a check that
crashed its traceback -- with Hypothesis' notes (the falsifying example).
Anything else (an error in this package's own code) keeps pytest's traceback
in the style asked for, without arguments or locals.
"""

from __future__ import annotations

from typing import Any

import pytest


def finding_text(error: BaseException) -> str:
    """One finding as the report shows it: its type, its message, the notes
    Hypothesis added."""
    notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))
    return f"{type(error).__name__}: {error}{notes}"


def _findings(error: BaseException) -> list[BaseException] | None:
    """The findings ``error`` consists of -- itself, or every leaf of an
    exception group (Hypothesis reports several distinct failures as one) --
    or None when any part of it is not a finding."""
    from ..faithful import FidelityError
    from .crashes import ExampleCrashed

    if isinstance(error, (FidelityError, ExampleCrashed)):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in error.exceptions:
            found = _findings(inner)
            if found is None:
                return None
            leaves += found
        return leaves
    return None


def repr_suite_failure(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
    """What a suite item's ``repr_failure`` returns."""
    findings = _findings(excinfo.value)
    if findings is not None:
        text = "\n\n".join(finding_text(f) for f in findings)
        if len(findings) > 1:
            text = f"{len(findings)} distinct failures\n\n{text}"
        if findings != [excinfo.value]:  # a group: its own notes too
            text += "".join(f"\n{note}" for note in getattr(excinfo.value, "__notes__", ()))
        return text
    style = item.config.getoption("tbstyle", "auto")
    if item.config.getoption("fulltrace", False) or style == "auto":
        style = "long"
    return excinfo.getrepr(funcargs=False, showlocals=False, style=style,
                           tbfilter=not item.config.getoption("fulltrace", False),
                           truncate_locals=True)


def report_findings_as_text(item: pytest.Item) -> None:
    """Make ``item`` (a suite item) report failures with :func:`repr_suite_failure`."""

    def repr_failure(excinfo: pytest.ExceptionInfo[BaseException], *_: Any) -> Any:
        return repr_suite_failure(item, excinfo)

    item.repr_failure = repr_failure  # type: ignore[method-assign]
