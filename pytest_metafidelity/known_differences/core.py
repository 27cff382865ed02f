"""The types of the registry of known differences: :class:`KnownDifference`
(an entry), :class:`Case` (what its predicate sees), the link markers
:data:`BY_DESIGN` and :data:`UNFILED`, and torch version ranges.  The
package docstring says how the registry judges mismatches."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable

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
