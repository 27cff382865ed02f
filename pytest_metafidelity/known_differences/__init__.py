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
  the tensors converted, what they reach (``_base``, ``.grad``,
  subclass inner tensors) and, when the ``wrappers`` check ran, the tensors
  inside functorch wrappers (at ``….unwrapped``).  The ``conversion`` check runs on every conversion: an
  entry expecting the converter to raise is unexpectedly passing when the
  conversion succeeds; when it raised something another entry explains,
  entries expecting a different error are not judged (the first error
  stops the conversion).
* A ``behaviour`` entry may also say which program steps must show its
  difference (``on_step``: an :class:`OnStep`, asked by the check through
  its judge before the converted side runs each step).  A step for which
  it held and that differed in no way makes the entry unexpectedly
  passing; a step that differed otherwise cannot tell, and the entry is
  not judged.  Without ``on_step``, a ``behaviour`` entry is judged by its
  symptom only (what the check recorded), and never expects anything.
* With ``strict=True`` neither is tolerated: explained mismatches and
  unexpectedly passing entries make the outcome ``failed``.  Without it,
  ``assert_faithful`` passes but warns :class:`UnexpectedlyPassing`.

Every entry observed upstream carries a minimal reproducer (``reproducer``),
which the project's tests run.

Where things are (as PyTorch keeps OpInfo entries: the types in one module,
the entries by domain):

* :mod:`.core` -- the types: :class:`KnownDifference`, :class:`Case`,
  :class:`OnControl`, :class:`OnStep`, :data:`BY_DESIGN`, :data:`UNFILED`, torch version ranges.
* :mod:`.definitions` -- the entries, one module per domain (sparse,
  storage, real_tensors, autograd, nested, functorch, subclasses,
  functionalization, operators, behaviour), each entry right after its predicate.
  **To add a known difference**, write its predicate in the domain's module
  and append the entry to that module's ``ENTRIES`` below it; select its
  converters by capability (``converters=where(carries_real=True)``; None:
  every converter).  A new domain is a new module, listed in
  ``definitions.DOMAINS``.
* :mod:`.facts` -- one-line facts about tensors the predicates share, and
  the markers ``@family_wide`` and ``@needs(fact)``;
  :mod:`..converter_model` (beside the converters: the ``behaviour`` check
  reads it too) -- a model of MetaConverter's allocation (reach,
  footprint, visiting order, converted storage sizes), tested against
  torch; :mod:`.experiments` -- predicates' experiments that convert again
  through torch.
* :mod:`.triage` -- how a converter's mismatches are judged (above), and
  which operator differences a program step's differences are.

**Operator differences** are entries too (:mod:`.definitions.operators`,
ids ``op:<id>``): where an operator acts differently on fake or meta
tensors whether or not they were converted.  The ``behaviour`` check
replays a step that differs on a control (the same tensors made under the
mode, never converted); where the control differs the same way, an entry's
``on_control`` condition (:class:`OnControl`: the step's source, the
attribute) says which operator difference it is, and the entry explains
the check's finding ``op-difference <id>``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from .core import (
    BY_DESIGN,
    UNFILED,
    Case,
    KnownDifference,
    OnControl,
    OnStep,
    PredicateError,
    UnexpectedlyPassing,
    torch_version,
    version_in_range,
)
from .definitions import all_entries
from . import triage as _triage
from .triage import Triage

__all__ = [
    "BY_DESIGN", "UNFILED", "Case", "KNOWN_DIFFERENCES", "KnownDifference", "OnControl", "OnStep",
    "PredicateError", "RegistryJudge", "Triage",
    "UnexpectedlyPassing", "by_id", "operator_differences", "registry", "torch_version", "triage",
    "version_in_range",
]

KNOWN_DIFFERENCES: list[KnownDifference] = all_entries()


def triage(converter: str, mismatches: list[Any], conversion: Any, checks_run: Iterable[str],
           entries: Iterable[KnownDifference] | None = None) -> Triage:
    """Split ``mismatches`` into explained and unexplained, and find the
    active entries that expected a difference here but saw none
    (:func:`.triage.triage`), against ``entries`` (default: the registry,
    :data:`KNOWN_DIFFERENCES`, as it is at the call)."""
    return _triage.triage(converter, mismatches, conversion, checks_run,
                          KNOWN_DIFFERENCES if entries is None else entries)


def operator_differences(converter: str, statement: str, mismatches: list[Any], *,
                         without_control: bool = False,
                         real_extents: dict[str, Any] | None = None,
                         entries: Iterable[KnownDifference] | None = None
                         ) -> list[KnownDifference] | None:
    """The operator differences a step's differences are, where the control
    shows them too (:func:`.triage.operator_differences`), against
    ``entries`` (default: the registry as it is at the call)."""
    return _triage.operator_differences(
        converter, statement, mismatches, KNOWN_DIFFERENCES if entries is None else entries,
        without_control=without_control, real_extents=real_extents)


@dataclasses.dataclass(frozen=True)
class RegistryJudge:
    """The registry as the ``behaviour`` check asks it, for one converter
    (a :class:`~..checks.Judge`: ``check_faithful`` hands it over on the
    conversion).  It reads the registry as it is at each call."""

    converter: str

    def explain(self, mismatches: list[Any], conversion: Any, checks: set[str]
                ) -> tuple[list[tuple[str, Any]], list[Any]]:
        t = triage(self.converter, mismatches, conversion, checks)
        return t.explained, t.unexplained

    def operator_differences(self, statement: str, mismatches: Sequence[Any], *,
                             without_control: bool = False,
                             real_extents: dict[str, Any] | None = None) -> list[str] | None:
        found = operator_differences(self.converter, statement, list(mismatches),
                                     without_control=without_control, real_extents=real_extents)
        return None if found is None else [e.operator_name for e in found]

    def expected(self, step: Any) -> list[str]:
        return _triage.expected_at(self.converter, step, KNOWN_DIFFERENCES)


def registry() -> list[KnownDifference]:
    return list(KNOWN_DIFFERENCES)


def by_id(entry_id: str) -> KnownDifference:
    for e in KNOWN_DIFFERENCES:
        if e.id == entry_id:
            return e
    raise KeyError(entry_id)
