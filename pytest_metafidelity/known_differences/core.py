"""The types of the registry of known differences: :class:`KnownDifference`
(an entry), :class:`Case` (what its predicate sees), :class:`OnControl`
(what makes an entry an operator difference), the link markers
:data:`BY_DESIGN` and :data:`UNFILED`, and torch version ranges.  The
package docstring says how the registry judges mismatches."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable, Sequence

from ..findings import RealExtent, StepCase

BY_DESIGN = "by design"
# An upstream bug with no upstream report yet: ``python -m
# pytest_metafidelity.upstream ID`` drafts one from the entry.
UNFILED = "not yet reported upstream (draft: python -m pytest_metafidelity.upstream)"


class UnexpectedlyPassing(UserWarning):
    """A registered known difference did not occur."""


@dataclasses.dataclass(frozen=True)
class Case:
    """What an ``applies`` predicate sees."""

    converter: str  # converter name
    path: str  # e.g. "t0", "t0._base", "t1.grad"
    tensor: Any  # the real tensor at ``path`` (None when there is none)
    family: tuple[Any, ...]  # every real tensor involved (bases, grads, inner)
    conversion: Any  # the checks.Conversion


# The ids of operator differences start with it ("op:degenerate-strides"); the
# rest names the difference in the behaviour check's finding
# ("op-difference degenerate-strides").
OPERATOR_PREFIX = "op:"


@dataclasses.dataclass(frozen=True)
class OnControl:
    """When a step's difference is an operator difference: the ``behaviour``
    check replays the program on a *control* (the same tensors made
    directly under the mode, never converted), and the control differs from
    eager the same way.  Then the step's source and the differing attribute
    say which operator difference it is."""

    statement: str  # regular expression searched for in the step's source (with its context)
    attribute: str  # regular expression, full match against the differing attribute
    # Optional: holds for a mismatch (its ``real``/``fake`` sides), given every
    # mismatch of the step at the same path.
    applies: Callable[[Any, Sequence[Any]], bool] | None = None
    # Optional: holds for a mismatch given what the real tensor it is on
    # spans (a RealExtent: its shape, the elements its memory holds; None
    # where it is on none), and the step's mismatches at its path (as for
    # ``applies``).
    applies_to_real: Callable[[Any, RealExtent | None, Sequence[Any]], bool] | None = None
    # The step alone shows it (its errors: eager has no kernel, both sides
    # state the same broken rule in their own words; or a statement on which
    # every fake made under the mode differs): it is also judged where no
    # control can be built.
    errors_decide: bool = False
    # Optional: holds for the step's source (what a regular expression
    # cannot say, such as which kernels its operators have).
    statement_applies: Callable[[str], bool] | None = None

    def explains(self, statement: str, mismatch: Any, same_path: Sequence[Any] = (),
                 real: RealExtent | None = None) -> bool:
        """Whether the control's difference ``mismatch`` of the step
        ``statement`` is this one; ``same_path``: the step's mismatches at its
        path (itself included) and inside the tensor there (a wrapper's inner
        tensors, ``….a``); ``real``: what the real tensor at that path
        spans.  A predicate that raises raises (the caller names the
        entry)."""
        if re.search(self.statement, statement) is None:
            return False
        if re.fullmatch(self.attribute, mismatch.attribute) is None:
            return False
        if self.statement_applies is not None and not self.statement_applies(statement):
            return False
        if self.applies is not None and not self.applies(mismatch, same_path or (mismatch,)):
            return False
        return self.applies_to_real is None or bool(
            self.applies_to_real(mismatch, real, same_path or (mismatch,)))


@dataclasses.dataclass(frozen=True)
class OnStep:
    """When a ``behaviour`` entry's difference must occur: a program step
    (its statement, without the context it runs in, searched for
    ``statement``) for which ``applies`` holds (a
    :class:`~..findings.StepCase`: the real side's tensors as the step
    left them, the converted side's as they are before it, what eager
    raised).  The check asks it of every step it runs; a step for which it
    holds and that differs in no way at all makes the entry *unexpectedly
    passing*, so an upstream fix is noticed.  It must be exact that way
    (where it holds, the difference occurs); where the difference occurs
    and it does not hold, the entry's ``applies`` still explains it."""

    statement: str  # regular expression searched for in the step's statement
    applies: Callable[[StepCase], bool]

    def holds(self, step: StepCase) -> bool:
        return re.search(self.statement, step.statement) is not None and bool(
            self.applies(step))


@dataclasses.dataclass(frozen=True)
class KnownDifference:
    id: str
    check: str | tuple[str, ...]  # the check(s) that report it ("conversion": it raised)
    attribute: str  # regular expression, full match against Mismatch.attribute
    applies: Callable[[Case], bool]
    reason: str
    link: str  # BY_DESIGN, UNFILED, or the upstream issue / pull request reporting it
    # None: every converter; else those selected by capability
    # (``converters.where(symbolic=True)``; a tuple of names also works)
    converters: Iterable[str] | None = None
    since: str | None = None  # first torch version with the difference
    until: str | None = None  # first torch version without it (exclusive)
    reproducer: str = ""  # minimal runnable Python showing the difference
    # check "conversion": regular expression the raised "Type: message" must
    # contain (re.search); None: any error
    raises: str | None = None
    # Upstream threads on the same code that do not report this difference
    # (the change that introduced it, a neighbouring bug, a candidate fix).
    related: tuple[str, ...] = ()
    # An operator difference (its id starts with OPERATOR_PREFIX): where the
    # control differs from eager the same way, and how.  The ``behaviour``
    # check asks :meth:`explains_on_control` of a step's differences; the
    # entry then explains the finding it reports, ``op-difference <name>``.
    on_control: OnControl | None = None
    # A ``behaviour`` entry's step that must show its difference (:class:`OnStep`).
    on_step: OnStep | None = None

    @property
    def operator_name(self) -> str:
        """An operator difference's name in the behaviour check's finding."""
        return self.id.removeprefix(OPERATOR_PREFIX)

    def explains_on_control(self, statement: str, mismatch: Any, same_path: Sequence[Any] = (),
                            real: RealExtent | None = None) -> bool:
        """Whether this operator difference is ``mismatch``, a difference of
        the step ``statement`` that the control shows too (:meth:`OnControl.explains`).
        A predicate that raises is a :class:`PredicateError` naming the entry."""
        if self.on_control is None:
            return False
        try:
            return self.on_control.explains(statement, mismatch, same_path, real)
        except Exception as e:
            # A bug of ours: an internal error of the check that asked, never "does not apply".
            raise PredicateError(
                f"the predicate of operator difference {self.operator_name!r} raised on "
                f"{mismatch.attribute!r} at {mismatch.path}: {type(e).__name__}: {e}") from e

    def expected_at(self, step: StepCase) -> bool:
        """Whether ``step`` must show this entry's difference (:class:`OnStep`).
        A predicate that raises is a :class:`PredicateError` naming the entry."""
        if self.on_step is None:
            return False
        try:
            return self.on_step.holds(step)
        except Exception as e:
            # A bug of ours: an internal error of the check that asked, never "does not apply".
            raise PredicateError(
                f"the step condition of {self.id!r} raised on {step.statement!r}: "
                f"{type(e).__name__}: {e}") from e

    @property
    def unfiled(self) -> bool:
        return self.link == UNFILED

    @property
    def by_design(self) -> bool:
        return self.link == BY_DESIGN

    @property
    def checks(self) -> tuple[str, ...]:
        return (self.check,) if isinstance(self.check, str) else tuple(self.check)

    def active(self, converter: str, version: Any = None) -> bool:
        return entry_active(self, converter, version)

    def matches(self, mismatch: Any, case: Case) -> bool:
        return (
            mismatch.check in self.checks
            and re.fullmatch(self.attribute, mismatch.attribute) is not None
            and (mismatch.check != "conversion" or self.raises is None
                 or re.search(self.raises, str(mismatch.fake)) is not None)
            and holds(self.applies, case)
        )

    def describe(self) -> str:
        where = ("by design" if self.by_design
                 else "upstream bug, not yet reported upstream" if self.unfiled
                 else f"upstream bug: {self.link}")
        return f"{self.id} ({where}): {self.reason}"


# id(entry) -> (entry, whether the installed torch is in its version range).
_ACTIVE_HERE: dict[int, tuple[Any, bool]] = {}


def entry_active(entry: Any, converter: str, version: Any = None) -> bool:
    """Whether a registry entry (a :class:`KnownDifference` or an operator
    difference: ``converters``, ``since``, ``until``) applies to
    ``converter`` on torch ``version`` (None: the installed torch, judged
    once per entry)."""
    if entry.converters is not None and converter not in entry.converters:
        return False
    if version is None:
        cached = _ACTIVE_HERE.get(id(entry))
        if cached is None or cached[0] is not entry:
            cached = _ACTIVE_HERE[id(entry)] = (
                entry, version_in_range(None, entry.since, entry.until))
        return cached[1]
    return version_in_range(version, entry.since, entry.until)


def torch_version() -> Any:
    import torch

    return torch.__version__


def version_in_range(version: Any, since: str | None, until: str | None) -> bool:
    from torch.torch_version import TorchVersion

    v = TorchVersion(str(version if version is not None else torch_version()))
    if since is not None and v < since:
        return False
    if until is not None and v >= until:
        return False
    return True


class PredicateError(Exception):
    """A known difference's predicate raised: a bug in pytest-metafidelity
    (reported as an internal error, chained to what it raised), never "the
    entry does not apply"."""


def holds(predicate: Callable[[Any], bool], case: Any) -> bool:
    """Whether ``predicate`` holds for ``case`` (a :class:`Case`, or a tensor
    for the triage's tensor facts); raises :class:`PredicateError` when it raises."""
    try:
        return bool(predicate(case))
    except Exception as e:
        name = getattr(predicate, "__qualname__", repr(predicate))
        where = f" at {case.path}" if isinstance(case, Case) else ""
        raise PredicateError(
            f"the known-difference predicate {name} raised{where}: {type(e).__name__}: {e}") from e
