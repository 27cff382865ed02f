"""The triage: how :func:`~pytest_metafidelity.faithful.check_faithful` splits a
converter's mismatches into explained and unexplained, and finds the entries
that expected a difference that did not occur (see the package docstring);
and which operator differences a program step's differences are, where the
``behaviour`` check's control shows them too (:func:`operator_differences`)."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Iterable, Sequence

from .core import Case, KnownDifference, holds
from .facts import FACTS


# The facts no plain tensor (exactly a torch.Tensor or nn.Parameter, strided,
# not nested) has: its type is no subclass, its layout no sparse one.
_NOT_OF_PLAIN_TENSORS = ("sparse", "nested", "subclass", "FunctionalTensor")


class _CaseFacts:
    """Which of the predicates' FACTS some tensor of a case has, each read
    once, when a predicate marked ``@needs`` first asks."""

    def __init__(self, tensors: tuple[Any, ...]) -> None:
        import torch

        self.tensors = tensors
        plain = (torch.Tensor, torch.nn.Parameter)
        self.known: dict[str, bool] = dict.fromkeys(_NOT_OF_PLAIN_TENSORS, False) if all(
            type(t) in plain and t.layout == torch.strided and not t.is_nested
            for t in tensors) else {}

    def has(self, fact: str | None) -> bool:
        """Whether some tensor of the case has ``fact`` (None: no fact asked)."""
        if fact is None:
            return True
        if fact not in self.known:
            test = FACTS[fact]
            self.known[fact] = any(holds(test, t) for t in self.tensors)
        return self.known[fact]


@dataclasses.dataclass(frozen=True)
class _Expectation:
    """An active entry that may expect a difference from the checks that
    ran, with what the triage asks of it on every case."""

    entry: KnownDifference
    needs_conversion: bool  # "conversion" among its checks
    family_wide: bool  # its predicate holds for every tensor of a family or none
    record: str | None  # what the conversion must have recorded for it to hold


# By the fact some tensor of a case must have for them to hold (None: none).
_Expectations = dict[str | None, list[_Expectation]]


# (id of an _active list, the checks that ran) -> (that list, its expectations)
_EXPECTATIONS: dict[tuple[int, frozenset[str]], tuple[list[KnownDifference],
                                                      _Expectations]] = {}


def _expectations(active: list[KnownDifference], ran: frozenset[str]) -> _Expectations:
    """The entries of ``active`` some check of ``ran`` can observe, grouped
    by the fact their predicate needs (``@needs``): worked out once per
    converter and set of checks, not for every case."""
    key = (id(active), ran)
    found = _EXPECTATIONS.get(key)
    if found is None or found[0] is not active:
        if len(_EXPECTATIONS) > 256:
            _EXPECTATIONS.clear()
        groups: _Expectations = {}
        for e in active:
            if not ran.isdisjoint(e.checks):
                groups.setdefault(getattr(e.applies, "needs", None), []).append(_Expectation(
                    e, "conversion" in e.checks, bool(getattr(e.applies, "family_wide", False)),
                    getattr(e.applies, "reads_record", None)))
        found = _EXPECTATIONS[key] = (active, groups)
    return found[1]


# (converter, its spec, the entries) -> (that spec, the entries, those active
# for it here); the objects are kept so that a recycled id() is never taken
# for theirs.
_ACTIVE: dict[tuple[Any, ...], tuple[Any, tuple[KnownDifference, ...],
                                     list[KnownDifference]]] = {}


def _active(converter: str, entries: Iterable[KnownDifference]) -> list[KnownDifference]:
    """The entries active for ``converter`` on the installed torch. Judged
    once per converter and registry: an entry's converters are a selection
    by capability, read from the registered converters, and a converter
    registered or replaced later has another spec, so another key."""
    from ..converters import CONVERTERS

    entries = tuple(entries)
    spec = CONVERTERS.get(converter)
    key = (converter, id(spec), len(entries))
    found = _ACTIVE.get(key)
    if found is None or found[0] is not spec or not all(map(operator.is_, found[1], entries)):
        if len(_ACTIVE) > 64:
            _ACTIVE.clear()
        found = _ACTIVE[key] = (spec, entries, [e for e in entries if e.active(converter)])
    return found[2]


@dataclasses.dataclass
class Triage:
    """How the registry judged one converter's mismatches."""

    unexplained: list[Any]
    explained: list[tuple[str, Any]]  # (entry id, mismatch)
    unexpectedly_passing: list[str]  # entry ids
    occurred: list[str] = dataclasses.field(default_factory=list)  # ids of entries that matched

    def merged(self, other: "Triage") -> "Triage":
        """Both judgements of one conversion's findings (of checks judged
        apart: before and after a check that changes the converted tensors)."""
        return Triage(self.unexplained + other.unexplained, self.explained + other.explained,
                      self.unexpectedly_passing + [e for e in other.unexpectedly_passing
                                                   if e not in self.unexpectedly_passing],
                      sorted({*self.occurred, *other.occurred}))


def triage(
    converter: str,
    mismatches: list[Any],
    conversion: Any,
    checks_run: Iterable[str],
    entries: Iterable[KnownDifference],
) -> Triage:
    """Split ``mismatches`` into explained and unexplained; find the active
    entries that expected a difference here but saw none."""
    from ..strategies.tensor_facts import walk_real

    entries = _active(converter, entries)
    ran = frozenset(checks_run)
    expected = _expectations(entries, ran)
    stepped = list(getattr(conversion, "behaviour_expected", ()) or ())
    if not mismatches and not stepped and all(
            x.record is not None and not getattr(conversion, x.record, None)
            for group in expected.values() for x in group):
        # nothing to explain, and every entry to expect reads a record the
        # checks did not make (the behaviour check that found nothing)
        return Triage([], [], [], [])
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
        tensor = conversion.tensor_at(m.path) if conversion is not None else None
        matching = [e for e in entries if e.matches(m, case(m.path, tensor))]
        if not matching:
            unexplained.append(m)
        else:
            # Every entry that predicts this difference saw it occur.
            explained.append((matching[0].id, m))
            hit.update(e.id for e in matching)

    # A conversion that raised shows one error: entries expecting another
    # cannot be judged.
    conversion_raised = any(m.check == "conversion" for m in mismatches)
    passing = []
    node_cases = [case(p, r) for p, r in family_nodes]
    facts = _CaseFacts((*family, *(r for _, r in family_nodes)))
    for fact, expectations in expected.items():
        if not facts.has(fact):
            continue  # they need a fact no tensor of the case has: none can hold
        for x in expectations:
            e = x.entry
            if e.id in hit or (conversion_raised and x.needs_conversion):
                continue
            if x.record is not None and not getattr(conversion, x.record, None):
                continue  # nothing recorded: it cannot hold
            # A family-wide predicate holds for every node or for none.
            judged = node_cases[:1] if x.family_wide else node_cases
            if any(holds(e.applies, c) for c in judged):
                passing.append(e.id)
    passing += _unexpected_steps(stepped, entries, mismatches, hit, passing)
    if len(passing) > 1:  # in the registry's order, as the groups do not keep it
        found = set(passing)
        passing = [e.id for e in entries if e.id in found]
    return Triage(unexplained, explained, passing, sorted(hit))


def _unexpected_steps(stepped: list[tuple[str, int]], entries: list[KnownDifference],
                      mismatches: list[Any], hit: set[str], passing: list[str]) -> list[str]:
    """The entries a program step was to show (``Conversion.behaviour_expected``:
    their ``on_step`` held) where that step differed in no way at all.  A
    step that differed otherwise (another difference, or one that follows
    from a known difference) cannot tell: its entries are not judged."""
    active = {e.id for e in entries}
    differed = {getattr(m, "step", None) for m in mismatches if m.check == "behaviour"}
    out: list[str] = []
    for entry_id, k in stepped:
        if (entry_id in active and entry_id not in hit and k not in differed
                and entry_id not in passing and entry_id not in out):
            out.append(entry_id)
    return out


def expected_at(converter: str, step: Any, entries: Iterable[KnownDifference]) -> list[str]:
    """The ids of the active entries of ``entries`` whose ``on_step``
    condition holds for ``step`` (a :class:`~..findings.StepCase`)."""
    return [e.id for e in _active(converter, entries)
            if e.on_step is not None and e.expected_at(step)]


def operator_differences(converter: str, statement: str, mismatches: Sequence[Any],
                         entries: Iterable[KnownDifference], *, without_control: bool = False,
                         real_extents: dict[str, Any] | None = None
                         ) -> list[KnownDifference] | None:
    """For each of a step's differences that the control shows too, the
    active operator difference of ``entries`` (an ``on_control`` entry)
    explaining it; None unless every one is explained.  ``statement``: the
    step's source.  ``without_control``: no control could be built, and
    only entries the step's errors decide are asked.  ``real_extents``: what
    the real tensor at each mismatch's path spans (a RealExtent)."""
    active = [e for e in _active(converter, entries) if e.on_control is not None
              and (e.on_control.errors_decide or not without_control)]
    found = []
    for m in mismatches:
        # (what differs inside a wrapper explains the wrapper too: the
        # storage offset it reports is its inner tensors')
        same_path = [x for x in mismatches if x.path == m.path or x.path.startswith(m.path + ".")]
        extent = (real_extents or {}).get(m.path)
        entry = next((e for e in active if e.explains_on_control(statement, m, same_path, extent)),
                     None)
        if entry is None:
            return None
        found.append(entry)
    return found
