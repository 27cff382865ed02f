"""The outcome of checking tensors' conversion: one :class:`Outcome` per
converter, with its status; :class:`FidelityResult`, all of them and a
reproducer; :class:`FidelityError`, what :func:`~.faithful.assert_faithful`
raises.

Statuses, per converter:

``passed``
    every selected check holds.
``failed``
    a check found a difference no known difference explains, or the
    conversion raised something other than a documented refusal -- or, with
    ``strict=True``, a known difference occurred or an entry passed
    unexpectedly.
``unsupported``
    the converter refused in a way torch documents (it returned
    NotImplemented, raised ``UnsupportedFakeTensorException`` or Dynamo's
    "unimplemented"), or it is not available with this torch; ``reason`` says
    which.
``known-difference``
    every difference found is a registered known difference
    (:mod:`.known_differences`); ``reason`` lists the entry ids.
``unexpectedly-passing``
    a registered known difference expected for these tensors did not occur
    (fixed upstream?); ``reason`` lists the entry ids.  Not a failure unless
    ``strict=True``, but :func:`~.faithful.assert_faithful` warns
    :class:`~.known_differences.UnexpectedlyPassing`.
``internal-error``
    a check (or the known-difference triage) raised: a bug on our side,
    not a finding about torch.  ``internal_errors`` holds each error with
    its traceback; no known difference can explain it, and it fails in
    every mode.

A suite run counts two more endings of an example (:data:`ENDINGS`): it
``crashed`` (killed its process) or ``hung`` (outlived the time limit).  A
suite item's outcome is pytest's (:data:`ITEM_OUTCOMES`).  These spellings
are the only ones: the terminal table, the JSON report and the HTML page
use them all.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .findings import InternalError, Mismatch


PASSED, FAILED, UNSUPPORTED, KNOWN = "passed", "failed", "unsupported", "known-difference"
XPASS, INTERNAL = "unexpectedly-passing", "internal-error"
STATUSES = (PASSED, FAILED, UNSUPPORTED, KNOWN, XPASS, INTERNAL)
# The statuses that make a result not ok.
FAILING = (FAILED, INTERNAL)
# What an example of a suite run ends in: a status, or its process died.
CRASHED, HUNG = "crashed", "hung"
ENDINGS = (*STATUSES, CRASHED, HUNG)
# A suite item's outcome (pytest's, and xdist's "error"), worst first.
ERROR, SKIPPED = "error", "skipped"
ITEM_OUTCOMES = (CRASHED, HUNG, FAILED, ERROR, PASSED, SKIPPED)


@dataclasses.dataclass
class Outcome:
    """The result of one converter on the tensors.

    ``mismatches``: the broken invariants that make it fail (with
    ``strict``, known ones too).  ``known``: (entry id, mismatch) for each
    difference a known-difference entry explains.  ``unexpectedly_passing``:
    ids of entries that expected a difference that did not occur.
    ``internal_errors``: the checks that crashed (status ``internal-error``).
    ``notes``: what was asked and not done, whatever the status (the
    ``behaviour`` check could not run the program given: why)."""

    converter: str
    status: str  # one of STATUSES
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)
    reason: str = ""  # why unsupported, or which known differences matched
    known: list[tuple[str, Mismatch]] = dataclasses.field(default_factory=list)
    unexpectedly_passing: list[str] = dataclasses.field(default_factory=list)
    internal_errors: list[InternalError] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        head = f"converter {self.converter!r}: {self.status}"
        if self.reason:
            head += f" ({self.reason})"
        lines = [head, *("  note: " + n for n in self.notes),
                 *("  " + e.describe().replace("\n", "\n  ") for e in self.internal_errors),
                 *("  " + m.describe().replace("\n", "\n  ") for m in self.mismatches)]
        shown = {id(m) for m in self.mismatches}
        for entry_id, m in self.known:
            if id(m) not in shown:
                lines.append(f"  known difference {entry_id}: "
                             + m.describe().replace("\n", "\n  "))
        return "\n".join(lines)


class ProgramNotRun(UserWarning):
    """The ``behaviour`` check could not run the program it was given (the
    outcomes' ``notes`` say why): nothing was checked of how the converted
    tensors behave."""


class FidelityResult:
    """The outcome of each converter, and ``reproducer``: runnable Python
    that rebuilds the tensors and runs the failing converters and checks.
    The reproducer may be given as a function making it: it is then made
    on first use (most results are read only for their statuses)."""

    def __init__(self, outcomes: list[Outcome], reproducer: str | Callable[[], str]) -> None:
        self.outcomes = outcomes
        self._reproducer = reproducer

    @property
    def reproducer(self) -> str:
        if callable(self._reproducer):
            self._reproducer = self._reproducer()
        return self._reproducer

    def __repr__(self) -> str:
        return f"FidelityResult(outcomes={self.outcomes!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FidelityResult):
            return NotImplemented
        return self.outcomes == other.outcomes and self.reproducer == other.reproducer

    @property
    def ok(self) -> bool:
        return all(o.status not in FAILING for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        """The outcomes that failed or met an internal error."""
        return [o for o in self.outcomes if o.status in FAILING]

    @property
    def internal_errors(self) -> list[InternalError]:
        return [e for o in self.outcomes for e in o.internal_errors]

    @property
    def notes(self) -> list[str]:
        """Every outcome's notes, each prefixed with its converter."""
        return [f"{o.converter}: {n}" for o in self.outcomes for n in o.notes]

    @property
    def unexpectedly_passing(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == XPASS]

    def outcome(self, converter: str) -> Outcome:
        for o in self.outcomes:
            if o.converter == converter:
                return o
        raise KeyError(converter)

    def describe(self) -> str:
        parts = [o.describe() for o in self.outcomes]
        parts.append("Reproducer (runnable Python):\n" + self.reproducer)
        return "\n".join(parts)


class FidelityError(AssertionError):
    """Conversion was not faithful, or a check crashed.  ``.result`` holds the
    structured result.  When a check crashed, the error is chained to what
    it raised (``__cause__``), so the traceback shows where."""

    def __init__(self, result: FidelityResult) -> None:
        self.result = result
        broken = sum(len(o.mismatches) for o in result.failures)
        internal = result.internal_errors
        head = f"{broken} broken invariant(s) across {len(result.failures)} converter(s)"
        if internal:
            checks = ", ".join(dict.fromkeys(repr(e.check) for e in internal))
            head = (f"internal error in check {checks} (a bug in pytest-metafidelity or in a "
                    "registered check, not in torch)" + (f"; {head}" if broken else ""))
        super().__init__(head + "\n" + result.describe())
        if internal:
            self.__cause__ = internal[0].error
