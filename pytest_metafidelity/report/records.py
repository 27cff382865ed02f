"""The records of a suite run: one per item, per failure, per crash, per
known difference that did not occur, each failure's reproducer in a file.

Each record is a dataclass with ``to_json()`` (the plain dict written to the
JSON report) and ``from_json()`` (read back, from this version's reports or
an older one's: missing fields take their defaults, fields this version does
not know are kept in ``extra`` and written again).  Each suite item's record
travels as JSON in the test report's ``user_properties`` (pytest-xdist ships
those from workers to the controller), so the table and the JSON report
cover every worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..outcomes import ENDINGS, PASSED

if TYPE_CHECKING:
    from ..faithful import FidelityError, Outcome

PROPERTY = "metafidelity"
# An item's count columns: examples per ending, then all its examples.
COLUMNS = (*ENDINGS, "examples")


class ReportError(ValueError):
    """An input that is not a metafidelity report or record; the message names it."""


R = TypeVar("R", bound="Record")


@dataclasses.dataclass(kw_only=True)
class Record:
    """What every record shares: its JSON form.  Its fields without a default
    are what identifies it: a JSON record must have them.  A field named in
    ``OMITTED_WHEN_NONE`` is left out of the JSON while it is None (it
    belongs to some records only, or to merged reports only)."""

    # What the record is, in errors: "a failure record lacks 'signature'".
    NAME: ClassVar[str] = "a record"
    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    # Fields of a report this version does not know, written out again.
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.name in self.OMITTED_WHEN_NONE:
                continue
            out[f.name] = _plain(value)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls: type[R], data: Any) -> R:
        if not isinstance(data, dict):
            raise ReportError(f"{cls.NAME} must be a JSON object, not {data!r:.80}")
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in data
                   and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ReportError(f"{cls.NAME} lacks {', '.join(map(repr, missing))}: "
                              f"{data!r:.200}")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        values = {k: cls._read(k, v) for k, v in data.items() if k in known}
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        """A field's value from its JSON (records nested in it made typed)."""
        return value


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclasses.dataclass(kw_only=True)
class Failure(Record):
    """One broken invariant (``internal_error`` False), or one check that
    crashed: a bug in the check, with its ``traceback`` (True)."""

    NAME = "a failure record"
    OMITTED_WHEN_NONE = ("traceback", "nodeids")

    signature: str
    internal_error: bool = False
    check: str = ""
    kind: str
    converter: str
    path: str = ""
    attribute: str = ""
    real: str = ""
    fake: str = ""
    detail: str = ""
    traceback: str | None = None  # internal errors only
    reproducer: str = ""
    reproducer_file: str = ""
    replay: str = ""
    nodeid: str = ""
    nodeids: list[str] | None = None  # merged reports: every node id that hit it


@dataclasses.dataclass(kw_only=True)
class Crash(Record):
    """An example that killed its process (``crashed``) or outlived its time
    limit (``hung``), with a reproducer that ends the same way standalone."""

    NAME = "a crash record"
    OMITTED_WHEN_NONE = ("choices", "checks", "devices", "while_reporting", "reproduces",
                         "shrinking", "nodeids")

    signature: str
    status: str
    kind: str
    converter: str
    nodeid: str = ""
    signal: str | None = None
    exit_status: int | None = None
    timeout: float | None = None
    example: int | None = None
    frames: str = ""
    reproducer: str = ""
    # what crash shrinking replays: the example's draws and settings
    choices: str | None = None
    checks: list[str] | None = None
    devices: list[str] | None = None
    earlier_run: bool = False
    # failed, then crashed in reporting (the frames say where): the
    # reproducer shows the failure; the crash may need the report's code
    while_reporting: bool | None = None
    saved_to_database: bool = False
    reproducer_file: str = ""
    replay: str = ""
    # crash shrinking: whether the (shrunk) reproducer ends the same way, and how it went
    reproduces: bool | None = None
    shrinking: str | None = None
    nodeids: list[str] | None = None  # merged reports: every node id that hit it


@dataclasses.dataclass(kw_only=True)
class UnexpectedPass(Record):
    """A known-difference entry expected on some examples of an item whose
    difference did not occur there."""

    NAME = "an unexpectedly-passing record"
    OMITTED_WHEN_NONE = ("items",)

    entry: str
    kind: str
    converter: str
    examples: int = 0
    link: str = ""
    reproducer: str = ""
    reproducer_file: str = ""
    nodeid: str = ""
    items: list[str] | None = None  # merged reports: every item it was expected on


@dataclasses.dataclass(kw_only=True)
class Spending(Record):
    """How a budget run's item spent its time: its slice and fair share,
    the seconds it used, in how many rounds, its examples (those of its
    first round when that ran in the first pass), and whether it was given
    more time for finding something new."""

    NAME = "a spending record"

    slice: float = 0.0
    share: float = 0.0
    seconds: float = 0.0
    rounds: int = 0
    examples: int = 0
    first_pass: int = 0
    extended: bool = False


@dataclasses.dataclass(kw_only=True)
class ItemRecord(Record):
    """One suite item (a kind through a converter): its outcome, examples
    per ending, and what it found."""

    NAME = "an item record"
    OMITTED_WHEN_NONE = ("starved", "devices", "merged_nodeids")

    nodeid: str
    kind: str
    converter: str
    outcome: str = PASSED
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    # sha256 over every case's recipe and conversion order: two runs with
    # equal digests ran exactly the same cases ("" when merged).
    cases_digest: str = ""
    failures: list[Failure] = dataclasses.field(default_factory=list)
    # entry id -> examples in which that known difference occurred
    known_differences: dict[str, int] = dataclasses.field(default_factory=dict)
    unexpectedly_passing: list[UnexpectedPass] = dataclasses.field(default_factory=list)
    # examples that killed their process (crashed) or outlived the time
    # limit (hung), each with a reproducer
    crashes: list[Crash] = dataclasses.field(default_factory=list)
    # budget runs: the item's slice, seconds used, rounds, examples
    spending: Spending | None = None
    # the run's JSON report: why the item's share of the budget did not reach it ("" if it did)
    starved: str | None = None
    # merged reports: the devices its run used, and every node id merged into it
    devices: list[str] | None = None
    merged_nodeids: list[str] | None = None

    NESTED: ClassVar[dict[str, type[Record]]] = {
        "failures": Failure, "unexpectedly_passing": UnexpectedPass, "crashes": Crash}

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name == "spending":
            return None if value is None else Spending.from_json(value)
        nested = cls.NESTED.get(name)
        if nested is None:
            return value
        if not isinstance(value, list):
            raise ReportError(f"{cls.NAME}'s {name!r} must be a list, not {value!r:.80}")
        return [nested.from_json(v) for v in value]


def errors_of(exc: BaseException | None, cls: type) -> list[Any]:
    """The ``cls`` exceptions in ``exc`` (Hypothesis groups distinct bugs)."""
    if exc is None:
        return []
    if isinstance(exc, cls):
        return [exc]
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in errors_of(sub, cls)]
    return []


def fidelity_errors(exc: BaseException | None) -> list["FidelityError"]:
    """The FidelityErrors in ``exc``."""
    from ..faithful import FidelityError

    return errors_of(exc, FidelityError)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60]


def failure_records(
    error: "FidelityError", *, kind: str, converter: str, nodeid: str, directory: str
) -> list[Failure]:
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
            records.append(Failure(
                signature=signature, check=m.check, kind=kind, converter=outcome.converter,
                path=m.path, attribute=m.attribute, real=repr(m.real), fake=repr(m.fake),
                detail=m.detail, reproducer=result.reproducer, reproducer_file=path,
                replay=replay, nodeid=nodeid,
            ))
        records += _internal_error_records(outcome, result.reproducer, kind=kind,
                                           nodeid=nodeid, directory=directory)
    return records


def _internal_error_records(outcome: "Outcome", reproducer: str, *, kind: str, nodeid: str,
                            directory: str) -> list[Failure]:
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
        records.append(Failure(
            signature=signature, internal_error=True, check=e.check, kind=kind,
            converter=outcome.converter, path="*", attribute="internal error", real="-",
            fake=f"{type(e.error).__name__}: {e.error}", traceback=e.traceback(),
            reproducer=reproducer, reproducer_file=path, replay=replay, nodeid=nodeid,
        ))
    return records


def unexpectedly_passing_records(
    missing: dict[str, Any], *, kind: str, converter: str, nodeid: str, directory: str
) -> list[UnexpectedPass]:
    """One record per known-difference entry that was expected on some
    example but did not occur (``missing``: entry id -> (examples, that
    example's reproducer)), with the reproducer in a file."""
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
        records.append(UnexpectedPass(
            entry=entry_id, kind=kind, converter=converter, examples=examples, link=known.link,
            reproducer=reproducer, reproducer_file=path, nodeid=nodeid,
        ))
    return records


def item_record(
    nodeid: str, kind: str, converter: str, tally: Counter, outcome: str, failures: list[Failure],
    cases_digest: str, known: dict[str, int] | None = None,
    unexpectedly_passing: list[UnexpectedPass] | None = None,
    crashes: list[Crash] | None = None, spending: Spending | None = None,
) -> ItemRecord:
    return ItemRecord(
        nodeid=nodeid, kind=kind, converter=converter, outcome=outcome,
        counts={c: tally.get(c, 0) for c in COLUMNS}, cases_digest=cases_digest,
        failures=failures, known_differences=dict(sorted((known or {}).items())),
        unexpectedly_passing=unexpectedly_passing or [], crashes=crashes or [],
        spending=spending,
    )
