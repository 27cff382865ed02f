"""The records of a suite run: one per item, per failure, per crash, per
known difference that did not occur, each failure's reproducer in a file.

Each suite item's outcome travels as one JSON record in the test report's
``user_properties`` (pytest-xdist ships those from workers to the
controller), so the table and the JSON report cover every worker.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..outcomes import ENDINGS

if TYPE_CHECKING:
    from ..faithful import FidelityError, Outcome
    from ..suite.runner import ExampleCrashed

PROPERTY = "metafidelity"
# An item's count columns: examples per ending, then all its examples.
COLUMNS = (*ENDINGS, "examples")


def _errors_of(exc: BaseException | None, cls: type) -> list[Any]:
    """The ``cls`` exceptions in ``exc`` (Hypothesis groups distinct bugs)."""
    if exc is None:
        return []
    if isinstance(exc, cls):
        return [exc]
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in _errors_of(sub, cls)]
    return []


def fidelity_errors(exc: BaseException | None) -> list["FidelityError"]:
    """The FidelityErrors in ``exc``."""
    from ..faithful import FidelityError

    return _errors_of(exc, FidelityError)


def crash_errors(exc: BaseException | None) -> list["ExampleCrashed"]:
    """The ExampleCrashed errors in ``exc`` (examples that exited Python)."""
    from ..suite.runner import ExampleCrashed

    return _errors_of(exc, ExampleCrashed)


def exit_crash_record(error: "ExampleCrashed", *, kind: str, converter: str, nodeid: str,
                      directory: str) -> dict[str, Any]:
    """The crash record of an example that raised SystemExit (Hypothesis
    shrank it in-process, like any failure)."""
    from ..suite import crashes

    code = error.exit_status
    record: dict[str, Any] = {
        "signature": f"{crashes.CRASHED}|{kind}|{converter}|exit{code}",
        "status": crashes.CRASHED, "kind": kind, "converter": converter, "nodeid": nodeid,
        "signal": None, "exit_status": code, "timeout": None, "example": None,
        "frames": "", "reproducer": error.reproducer, "earlier_run": False,
        "saved_to_database": True,  # Hypothesis saved the failing example itself
    }
    record["reproducer_file"] = crashes.write_reproducer(record, directory)
    record["replay"] = f"python {record['reproducer_file']}"
    return record


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60]


def failure_records(
    error: "FidelityError", *, kind: str, converter: str, nodeid: str, directory: str
) -> list[dict[str, Any]]:
    """One record per broken invariant, with the reproducer written to a file."""
    result = error.result
    records = []
    os.makedirs(directory, exist_ok=True)
    for outcome in result.failures:
        for m in outcome.mismatches:
            signature = f"{m.check}|{kind}|{outcome.converter}|{m.attribute}"
            digest = hashlib.sha1(signature.encode()).hexdigest()[:8]
            path = os.path.join(
                directory, f"{_slug(kind)}-{_slug(outcome.converter)}-{_slug(m.check)}-{digest}.py"
            )
            replay = f"python {path}"
            header = (
                f"# pytest-metafidelity reproducer: {m.check} broke for {kind} through "
                f"{outcome.converter}\n# {m.path}: {m.attribute}: real={m.real!r} fake={m.fake!r}\n"
                f"# Run: {replay}\n# Suite item: pytest --metafidelity \"{nodeid}\"\n"
            )
            with open(path, "w") as f:
                f.write(header + result.reproducer)
            records.append({
                "signature": signature,
                "internal_error": False,
                "check": m.check,
                "kind": kind,
                "converter": outcome.converter,
                "path": m.path,
                "attribute": m.attribute,
                "real": repr(m.real),
                "fake": repr(m.fake),
                "detail": m.detail,
                "reproducer": result.reproducer,
                "reproducer_file": path,
                "replay": replay,
                "nodeid": nodeid,
            })
        records += _internal_error_records(outcome, result.reproducer, kind=kind,
                                           nodeid=nodeid, directory=directory)
    return records


def _internal_error_records(outcome: "Outcome", reproducer: str, *, kind: str, nodeid: str,
                            directory: str) -> list[dict[str, Any]]:
    """One record per check that crashed: an internal error, with its
    traceback, kept apart from the findings (``internal_error``: True)."""
    records = []
    for e in outcome.internal_errors:
        signature = f"internal-error|{e.check}|{kind}|{outcome.converter}|{type(e.error).__name__}"
        digest = hashlib.sha1(signature.encode()).hexdigest()[:8]
        path = os.path.join(directory, f"{_slug(kind)}-{_slug(outcome.converter)}-internal-error-"
                                       f"{_slug(e.check)}-{digest}.py")
        replay = f"python {path}"
        with open(path, "w") as f:
            f.write(f"# pytest-metafidelity: internal error in check {e.check!r} for {kind} "
                    f"through {outcome.converter}\n# (a bug in the check, not in torch)\n"
                    f"# Run: {replay}\n# Suite item: pytest --metafidelity \"{nodeid}\"\n"
                    + reproducer)
        records.append({
            "signature": signature, "internal_error": True, "check": e.check, "kind": kind,
            "converter": outcome.converter, "path": "*", "attribute": "internal error",
            "real": "-", "fake": f"{type(e.error).__name__}: {e.error}", "detail": "",
            "traceback": e.traceback(), "reproducer": reproducer, "reproducer_file": path,
            "replay": replay, "nodeid": nodeid,
        })
    return records


def unexpectedly_passing_records(
    missing: dict[str, list[Any]], *, kind: str, converter: str, nodeid: str, directory: str
) -> list[dict[str, Any]]:
    """One record per known-difference entry that was expected on some
    example but did not occur, with that example's reproducer in a file."""
    from ..known_differences import by_id

    records = []
    for entry_id, (examples, reproducer) in sorted(missing.items()):
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{_slug(kind)}-{_slug(converter)}-passing-{_slug(entry_id)}.py")
        known = by_id(entry_id)
        with open(path, "w") as f:
            f.write(
                f"# pytest-metafidelity: known difference {entry_id} did not occur for {kind} "
                f"through {converter}\n# (fixed upstream? then narrow the entry's torch versions)\n"
                f"# Entry: {known.link}\n# Suite item: pytest --metafidelity \"{nodeid}\"\n"
                + reproducer
            )
        records.append({
            "entry": entry_id,
            "kind": kind,
            "converter": converter,
            "examples": examples,
            "link": known.link,
            "reproducer": reproducer,
            "reproducer_file": path,
            "nodeid": nodeid,
        })
    return records


def item_record(
    nodeid: str, kind: str, converter: str, tally: Counter, outcome: str, failures: list[dict],
    cases_digest: str, known: dict[str, int] | None = None,
    unexpectedly_passing: list[dict[str, Any]] | None = None,
    crashes: list[dict[str, Any]] | None = None, spending: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "kind": kind,
        "converter": converter,
        "outcome": outcome,
        "counts": {c: tally.get(c, 0) for c in COLUMNS},
        # sha256 over every case's recipe and conversion order: two runs with
        # equal digests ran exactly the same cases.
        "cases_digest": cases_digest,
        "failures": failures,
        # entry id -> examples in which that known difference occurred
        "known_differences": dict(sorted((known or {}).items())),
        "unexpectedly_passing": unexpectedly_passing or [],
        # examples that killed their process (crashed) or outlived the time
        # limit (hung), each with a reproducer
        "crashes": crashes or [],
        # budget runs: the item's slice, seconds used, rounds, examples
        "spending": spending,
    }
