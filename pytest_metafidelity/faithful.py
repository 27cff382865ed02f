"""assert_faithful / check_faithful: convert tensors and run the checks.

Works without pytest.  One converter instance converts all the tensors given
(in ``order``), so memo and aliasing bugs across tensors show.

Outcome statuses, per converter:

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
    ``strict=True``, but :func:`assert_faithful` warns
    :class:`~.known_differences.UnexpectedlyPassing`.
``internal-error``
    a check (or the known-difference triage) raised: a bug on our side,
    not a finding about torch.  ``internal_errors`` holds each error with
    its traceback; no known difference can explain it, and it fails in
    every mode.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .checks import Conversion, InternalError, Mismatch, all_checks, default_checks, run_checks
from .converters import CONVERTERS, Unsupported, available_converters, make_converter
from . import torch_caches
from .reproducer import checked_reproducer, recipe_for, reproducer_source
from .strategies.torch_errors import release_frames

if TYPE_CHECKING:
    import torch

    from .converters import Converter
    from .strategies.programs import Program
    from .strategies.recipe import Recipe

PASSED, FAILED, UNSUPPORTED, KNOWN = "passed", "failed", "unsupported", "known-difference"
XPASS, INTERNAL = "unexpectedly-passing", "internal-error"
STATUSES = (PASSED, FAILED, UNSUPPORTED, KNOWN, XPASS, INTERNAL)
# The statuses that make a result not ok.
FAILING = (FAILED, INTERNAL)


@dataclasses.dataclass
class Outcome:
    """The result of one converter on the tensors.

    ``mismatches``: the broken invariants that make it fail (with
    ``strict``, known ones too).  ``known``: (entry id, mismatch) for each
    difference a known-difference entry explains.  ``unexpectedly_passing``:
    ids of entries that expected a difference that did not occur.
    ``internal_errors``: the checks that crashed (status ``internal-error``)."""

    converter: str
    status: str  # one of STATUSES
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)
    reason: str = ""  # why unsupported, or which known differences matched
    known: list[tuple[str, Mismatch]] = dataclasses.field(default_factory=list)
    unexpectedly_passing: list[str] = dataclasses.field(default_factory=list)
    internal_errors: list[InternalError] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        head = f"converter {self.converter!r}: {self.status}"
        if self.reason:
            head += f" ({self.reason})"
        lines = [head, *("  " + e.describe().replace("\n", "\n  ") for e in self.internal_errors),
                 *("  " + m.describe().replace("\n", "\n  ") for m in self.mismatches)]
        shown = {id(m) for m in self.mismatches}
        for entry_id, m in self.known:
            if id(m) not in shown:
                lines.append(f"  known difference {entry_id}: "
                             + m.describe().replace("\n", "\n  "))
        return "\n".join(lines)


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


def _validate(names: Sequence[str] | None, registry: dict[str, Any], what: str) -> None:
    for n in names or ():
        if n not in registry:
            raise ValueError(f"unknown {what} {n!r}; allowed: {', '.join(registry)}")


def convert_all(converter: "Converter", tensors: Sequence["torch.Tensor"], order: Sequence[int]
                ) -> list["torch.Tensor | None"]:
    """Convert ``tensors`` through one converter, visiting them in ``order``."""
    converted: list["torch.Tensor | None"] = [None] * len(tensors)
    for i in order:
        converted[i] = converter.convert(tensors[i])
    return converted


def check_faithful(
    *tensors: "torch.Tensor",
    converters: Sequence[str] | str | None = None,
    checks: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
    strict: bool = False,
    program: Any = None,
    programs: int = 0,
) -> FidelityResult:
    """Convert ``tensors`` with each converter (default: every converter
    this torch can run) and run ``checks`` (default: all); known differences
    are applied unless ``strict``.  See the module docstring for statuses.

    ``program``: a program (source text, or a ``Program``) the ``behaviour``
    check runs on the real and the converted tensors.  ``programs=N``: also
    run ``behaviour`` with N seeded random programs, each on a fresh
    conversion (:mod:`.program_runs`)."""
    if programs:
        from .program_runs import check_with_programs

        if program is not None:
            raise ValueError("give program= (one program) or programs=N (random ones), not both")
        return check_with_programs(tensors, programs, converters=converters, checks=checks,
                                   order=order, strict=strict)
    if isinstance(converters, str):
        converters = [converters]
    converters = list(converters or available_converters())
    _validate(converters, CONVERTERS, "converter")
    _validate(checks, all_checks(), "check")
    if not tensors:
        raise ValueError("check_faithful() needs at least one tensor")
    order = list(range(len(tensors))) if order is None else list(order)
    if sorted(order) != list(range(len(tensors))):
        raise ValueError(f"order={order!r} must be a permutation of 0..{len(tensors) - 1}")

    recipe: "Recipe | Exception"
    try:
        recipe = recipe_for(tensors)
        names = recipe.outputs
    except Exception as e:  # a tensor the describer cannot read: no reproducer
        release_frames(e)
        recipe, names = e, tuple(f"t{i}" for i in range(len(tensors)))
    if program is not None:
        from .program_runs import as_program

        program = as_program(program, names)
    outcomes = []
    for name in converters:
        outcomes.append(_one_converter(name, names, tensors, checks, order, strict, program))
    torch_caches.conversion_done(len(converters))
    return FidelityResult(outcomes, functools.partial(
        _reproducer, recipe, outcomes, converters, list(checks) if checks else checks, order,
        program, strict))


def _reproducer(recipe: "Recipe | Exception", outcomes: list[Outcome], converters: list[str],
                checks: Sequence[str] | None, order: list[int],
                program: "Program | None" = None, strict: bool = False) -> str:
    """The reproducer of a result: the failing converters (else all), the
    checks that found something (else the checks asked for) and the program
    up to its first differing step.  A recipe written from the tensors'
    metadata is run once first: shown only if it gives the same outcomes."""
    failing = [o.converter for o in outcomes if o.status in FAILING] or converters
    # "conversion" (the converter raised) is not a check: it happens whatever
    # the checks, so a reproducer of only that runs no check at all.
    registry = all_checks()
    found = {m.check for o in outcomes for m in o.mismatches}
    found |= {e.check for o in outcomes for e in o.internal_errors}
    failing_checks = sorted(found & set(registry)) or (
        checks if not found else [next(iter(registry))])
    if isinstance(recipe, Exception):
        return f"# no reproducer: describing the tensors raised {type(recipe).__name__}: {recipe}\n"
    shown = _program_shown(program, outcomes)
    source = reproducer_source(recipe, converters=failing, checks=failing_checks, order=order,
                               program=shown)
    return checked_reproducer(source, recipe, [o for o in outcomes if o.converter in failing],
                              checks=failing_checks, order=order, strict=strict, program=shown)


def _program_shown(program: "Program | None", outcomes: Sequence[Outcome]
                   ) -> "Program | None":
    """The program for the reproducer: up to its first differing step."""
    if program is None:
        return None
    from .checks.behaviour import first_differing_step

    first = first_differing_step([m for o in outcomes for m in o.mismatches])
    return program if first is None else program.prefix(first + 1)


def _checks_run(checks: Sequence[str] | None) -> set[str]:
    """The checks that ran on a conversion that succeeded: the selected
    ones (with the inner-tensor checks ``wrappers`` runs), and
    ``conversion`` -- it did not raise."""
    from .checks.wrappers import INNER_CHECKS

    ran = set(checks or default_checks())
    if "wrappers" in ran:
        ran |= set(INNER_CHECKS)
    return ran | {"conversion"}


def _one_converter(
    name: str, names: Sequence[str], tensors: Sequence["torch.Tensor"],
    checks: Sequence[str] | None, order: Sequence[int], strict: bool = False,
    program: "Program | None" = None,
) -> Outcome:
    from .checks.purity import capture

    # Until the conversion succeeds, the known-difference registry sees the
    # real tensors only (a conversion that raised has no converted tensors).
    conversion = Conversion(tuple(names), tuple(tensors), (None,) * len(tensors), None,
                            order=tuple(order))
    try:
        converter = make_converter(name)
        conversion.converter = converter
        try:
            before = capture(tuple(names), tuple(tensors))
            fakes = convert_all(converter, tensors, order)
            after = capture(tuple(names), tuple(tensors))
        except Exception:
            converter.close()
            raise
    except Unsupported as e:
        return Outcome(name, UNSUPPORTED, reason=str(e))
    except Exception as e:  # the converter crashed: a fidelity failure
        import traceback

        where = traceback.extract_tb(e.__traceback__)[-1]
        release_frames(e)
        m = Mismatch(
            check="conversion", path=", ".join(names), attribute="raised",
            real="a converted tensor", fake=f"{type(e).__name__}: {e}",
            detail=f"raised at {where.filename}:{where.lineno} in {where.name}")
        return _judge(name, [m], conversion, {"conversion"}, strict)
    # From here on, whatever raises is ours (a check, the triage): an
    # internal error, never a finding.
    try:
        probes: list[Callable[[], list[Mismatch]]] = []
        converted = Conversion(tuple(names), tuple(tensors), tuple(fakes), converter,
                               order=tuple(order), before=before, after=after,
                               release_probes=probes, program=program)
        del fakes
        internal: list[InternalError] = []
        mismatches = run_checks(converted, list(checks) if checks else None, internal)
        # A check that crashed did not run: the registry judges none of its entries.
        ran = _checks_run(checks) - {e.check for e in internal}
        try:
            outcome = _judge(name, mismatches, converted, ran, strict)
        except Exception as e:
            internal.append(InternalError("known-differences", e))
            outcome = Outcome(name, FAILED, mismatches)
        # The last references to the converted tensors: the probes left by
        # checks that must see them released (memo) run without them.
        del converted, mismatches
        outcome = _with_unexplained(outcome, _run_probes(probes, internal))
        if internal:
            outcome = dataclasses.replace(outcome, status=INTERNAL, internal_errors=internal)
        return outcome
    finally:
        converter.close()


def _run_probes(probes: list[Callable[[], list[Mismatch]]],
                internal_errors: list[InternalError]) -> list[Mismatch]:
    __tracebackhide__ = True
    found: list[Mismatch] = []
    for probe in probes:
        try:
            found += probe()
        except Exception as e:
            check = getattr(probe, "check", None) or getattr(probe, "__module__", "").rsplit(".", 1)[-1]
            internal_errors.append(InternalError(check, e))
    return found


def _with_unexplained(outcome: Outcome, found: list[Mismatch]) -> Outcome:
    """``outcome`` with further mismatches that no known difference explains
    (the registry has no entry for the checks whose probes run after the
    triage: tests/test_checks.py holds it to that)."""
    if not found:
        return outcome
    failing = (outcome.mismatches if outcome.status == FAILED else []) + found
    return dataclasses.replace(outcome, status=FAILED, mismatches=failing)


def _judge(name: str, mismatches: list[Mismatch], conversion: Conversion, ran: set[str],
           strict: bool) -> Outcome:
    from .known_differences import triage

    t = triage(name, mismatches, conversion, ran)
    known = t.explained
    ids = t.occurred
    reasons = []
    if ids:
        reasons.append("known differences: " + ", ".join(ids))
    if t.unexpectedly_passing:
        reasons.append("unexpectedly passing: " + ", ".join(t.unexpectedly_passing))
    reason = "; ".join(reasons)
    if strict:
        failing = list(mismatches)
        for entry_id in t.unexpectedly_passing:
            failing.append(Mismatch(
                check="known-differences", path="*", attribute=entry_id,
                real="the difference occurs", fake="it did not occur",
                detail="unexpectedly passing (strict mode)"))
        status = FAILED if failing else PASSED
        return Outcome(name, status, failing, reason, known, list(t.unexpectedly_passing))
    if t.unexplained:
        return Outcome(name, FAILED, t.unexplained, reason, known, list(t.unexpectedly_passing))
    if t.unexpectedly_passing:
        return Outcome(name, XPASS, [], reason, known, list(t.unexpectedly_passing))
    if known:
        return Outcome(name, KNOWN, [], reason, known)
    return Outcome(name, PASSED)


def assert_faithful(
    *tensors: "torch.Tensor",
    converters: Sequence[str] | str | None = None,
    checks: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
    strict: bool = False,
    program: Any = None,
    programs: int = 0,
) -> FidelityResult:
    """Like :func:`check_faithful`, but raise :class:`FidelityError` listing
    every broken invariant, real vs fake, and a runnable reproducer.  Known
    differences pass (``strict=True``: fail); an entry that passed
    unexpectedly warns :class:`~.known_differences.UnexpectedlyPassing`
    (``strict=True``: fails).  A check that crashed raises FidelityError
    too, chained to the check's exception."""
    __tracebackhide__ = True
    result = check_faithful(*tensors, converters=converters, checks=checks, order=order,
                            strict=strict, program=program, programs=programs)
    if not result.ok:
        raise FidelityError(result)
    if result.unexpectedly_passing:
        from .known_differences import UnexpectedlyPassing

        warnings.warn(
            UnexpectedlyPassing(
                "known differences did not occur (fixed upstream?):\n"
                + "\n".join(o.describe() for o in result.unexpectedly_passing)
            ),
            stacklevel=2,
        )
    return result
