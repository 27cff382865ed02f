"""Known differences: places where a converter is knowingly not faithful.

Each :class:`KnownDifference` is either *by design* (``link`` is
:data:`BY_DESIGN` and ``reason`` says why) or an *upstream bug* (``link`` is
the upstream issue or pull request reporting it, or :data:`UNFILED` while
there is none -- :mod:`pytest_metafidelity.upstream` drafts the report;
``reason`` describes it; ``related`` lists upstream threads on the same
code), and applies only to the torch versions in ``[since, until)`` and to
the converters it names.

How :func:`~pytest_metafidelity.faithful.check_faithful` uses the registry:

* A mismatch is *explained* by an entry when the entry is active (torch
  version, converter), names the mismatch's check, its ``attribute``
  pattern matches the mismatch's attribute (``re.fullmatch``), and its
  ``applies`` predicate holds for the case (the real tensor at the
  mismatch's path, the converter, the whole family).  A converter whose
  every mismatch is explained gets the status ``known-difference`` and its
  reason lists the entry ids.
* An entry for the ``conversion`` check (the converter raised) also names
  what it raises: ``raises``, a regular expression searched for in the
  mismatch's ``fake`` side (``"TypeName: message"``); a conversion that
  raised something else is not explained by it.
* An active entry whose predicate holds for some tensor of the family (and
  whose check ran) *expects* a mismatch.  If none of the mismatches is
  explained by it, the difference no longer occurs -- perhaps fixed upstream
  -- and the outcome is ``unexpectedly-passing`` (listing the entry ids), so
  the fix is noticed.  Predicates must therefore be exact: they say when the
  difference occurs, not merely when it might.  The family's tensors are
  the tensors converted, what they reach (``_base``, a leaf's ``.grad``,
  subclass inner tensors) and, when the ``wrappers`` check ran, the tensors
  inside functorch wrappers (at ``….unwrapped``).  The ``conversion`` check runs on every conversion: an
  entry expecting the converter to raise is unexpectedly passing when the
  conversion succeeds; when it raised something another entry explains,
  entries expecting a different error are not judged (the first error
  stops the conversion).
* With ``strict=True`` neither is tolerated: explained mismatches and
  unexpectedly passing entries make the outcome ``failed``.  Without it,
  ``assert_faithful`` passes but warns :class:`UnexpectedlyPassing`.

Every entry observed upstream carries a minimal reproducer (``reproducer``),
which the project's tests run.
"""

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
        if self.converters is not None and converter not in self.converters:
            return False
        if version is None:  # the installed torch: judged once per entry
            cached = _ACTIVE_HERE.get(id(self))
            if cached is None or cached[0] is not self:
                cached = _ACTIVE_HERE[id(self)] = (
                    self, version_in_range(None, self.since, self.until))
            return cached[1]
        return version_in_range(version, self.since, self.until)

    def matches(self, mismatch: Any, case: Case) -> bool:
        return (
            mismatch.check in self.checks
            and re.fullmatch(self.attribute, mismatch.attribute) is not None
            and (mismatch.check != "conversion" or self.raises is None
                 or re.search(self.raises, str(mismatch.fake)) is not None)
            and _holds(self.applies, case)
        )

    def describe(self) -> str:
        where = ("by design" if self.by_design
                 else "upstream bug, not yet reported upstream" if self.unfiled
                 else f"upstream bug: {self.link}")
        return f"{self.id} ({where}): {self.reason}"


class _CaseFacts:
    """Which of the predicates' FACTS some tensor of a case has, each read
    once, when a predicate marked ``@needs`` first asks."""

    def __init__(self, tensors: tuple[Any, ...]) -> None:
        self.tensors = tensors
        self.known: dict[str, bool] = {}

    def allow(self, predicate: Callable[[Case], bool]) -> bool:
        fact = getattr(predicate, "needs", None)
        if fact is None:
            return True
        if fact not in self.known:
            test = FACTS[fact]
            self.known[fact] = any(_holds(test, t) for t in self.tensors)
        return self.known[fact]


# id(entry) -> (entry, its checks as a set).
_CHECK_SETS: dict[int, tuple[Any, frozenset[str]]] = {}


def _check_set(entry: KnownDifference) -> frozenset[str]:
    cached = _CHECK_SETS.get(id(entry))
    if cached is None or cached[0] is not entry:
        cached = _CHECK_SETS[id(entry)] = (entry, frozenset(entry.checks))
    return cached[1]


# id(entry) -> (entry, whether the installed torch is in its version range).
_ACTIVE_HERE: dict[int, tuple[Any, bool]] = {}


def _holds(predicate: Callable[[Case], bool], case: Case) -> bool:
    try:
        return bool(predicate(case))
    except Exception:
        return False


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


# The entries need the classes above.
from .registry import KNOWN_DIFFERENCES  # noqa: E402
from .predicates import FACTS  # noqa: E402


def registry() -> list[KnownDifference]:
    return list(KNOWN_DIFFERENCES)


def by_id(entry_id: str) -> KnownDifference:
    for e in KNOWN_DIFFERENCES:
        if e.id == entry_id:
            return e
    raise KeyError(entry_id)


@dataclasses.dataclass
class Triage:
    """How the registry judged one converter's mismatches."""

    unexplained: list[Any]
    explained: list[tuple[str, Any]]  # (entry id, mismatch)
    unexpectedly_passing: list[str]  # entry ids
    occurred: list[str] = dataclasses.field(default_factory=list)  # ids of entries that matched


def triage(
    converter: str,
    mismatches: list[Any],
    conversion: Any,
    checks_run: Iterable[str],
    entries: Iterable[KnownDifference] | None = None,
) -> Triage:
    """Split ``mismatches`` into explained and unexplained; find the active
    entries that expected a difference here but saw none."""
    from ..checks._util import resolve, walk_real

    entries = [e for e in (registry() if entries is None else entries) if e.active(converter)]
    ran = set(checks_run)
    # The tensors inside functorch wrappers are checked by ``wrappers`` only.
    family_nodes = (walk_real(conversion.names, conversion.real, unwrap="wrappers" in ran)
                    if conversion is not None else [])
    if any(p.endswith(".unwrapped") or ".unwrapped." in p for p, _ in family_nodes):
        family = tuple(r for _, r in walk_real(conversion.names, conversion.real))
    else:  # the same walk
        family = tuple(r for _, r in family_nodes)

    def case(path: str, tensor: Any) -> Case:
        return Case(converter, path, tensor, family, conversion)

    unexplained, explained = [], []
    hit: set[str] = set()
    for m in mismatches:
        tensor = resolve(conversion, m.path) if conversion is not None else None
        matching = [e for e in entries if e.matches(m, case(m.path, tensor))]
        if not matching:
            unexplained.append(m)
        else:
            # Every entry that predicts this difference saw it occur.
            explained.append((matching[0].id, m))
            hit.update(e.id for e in matching)

    crashed = {m.check for m in mismatches if m.attribute == "check raised"}
    # A conversion that raised shows one error: entries expecting another
    # cannot be judged.
    conversion_raised = any(m.check == "conversion" for m in mismatches)
    passing = []
    node_cases = [case(p, r) for p, r in family_nodes]
    facts = _CaseFacts((*family, *(r for _, r in family_nodes)))
    for e in entries:
        checks = _check_set(e)
        if e.id in hit or checks.isdisjoint(ran) or not checks.isdisjoint(crashed):
            continue
        if conversion_raised and "conversion" in checks:
            continue
        if not facts.allow(e.applies):
            continue  # it needs a fact no tensor of the case has: it cannot hold
        # A family-wide predicate holds for every node or for none.
        judged = node_cases[:1] if getattr(e.applies, "family_wide", False) else node_cases
        if any(_holds(e.applies, c) for c in judged):
            passing.append(e.id)
    return Triage(unexplained, explained, passing, sorted(hit))
