"""assert_faithful / check_faithful: convert tensors and run the checks.

Works without pytest.  One converter instance converts all the tensors given
(in ``order``), so memo and aliasing bugs across tensors show.  The
statuses of the outcome are :mod:`.outcomes`'.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import snapshots, torch_caches
from .checks import (Conversion, InternalError, Judge, Mismatch, all_checks, default_checks,
                     mutating_checks, run_checks)
from .checks.behaviour import first_differing_step, rebuilt_or_why
from .checks.wrappers import INNER_CHECKS
from .converters import CONVERTERS, Unsupported, available_converters, convert_all, make_converter
from .outcomes import (FAILED, FAILING, INTERNAL, KNOWN, PASSED, STATUSES, UNSUPPORTED, XPASS,
                       FidelityError, FidelityResult, Outcome, ProgramNotRun)
from .reproducer import Rerun, checked_reproducer, reproducer_source
from .strategies.described import recipe_for
from .strategies.programs import Program, as_program, seeded_programs, why_no_programs
from .strategies.recipe import FunctionRecipe
from .strategies.torch_errors import release_frames

if TYPE_CHECKING:
    import torch

    from .known_differences.triage import Triage
    from .strategies.recipe import Recipe

__all__ = [
    "FAILED", "FAILING", "INTERNAL", "KNOWN", "PASSED", "STATUSES", "UNSUPPORTED", "XPASS",
    "FidelityError", "FidelityResult", "Outcome", "assert_faithful", "check_faithful",
    "convert_all", "rerun_like",
]


def _validate(names: Sequence[str] | None, registry: dict[str, Any], what: str) -> None:
    for n in names or ():
        if n not in registry:
            raise ValueError(f"unknown {what} {n!r}; allowed: {', '.join(registry)}")


def check_faithful(
    *tensors: "torch.Tensor",
    converters: Sequence[str] | str | None = None,
    checks: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
    strict: bool = False,
    program: "Program | str | None" = None,
    programs: int = 0,
    remake: Callable[[], Any] | None = None,
) -> FidelityResult:
    """Convert ``tensors`` with each converter (default: every converter
    this torch can run) and run ``checks`` (default: all); known differences
    are applied unless ``strict``.  See the module docstring for statuses.

    ``program``: a program (source text, or a ``Program``) the ``behaviour``
    check runs on the real and the converted tensors.  ``programs=N``: also
    run ``behaviour`` with N seeded random programs, each on a fresh
    conversion (:func:`_check_with_programs`).  A program that cannot run
    is never passed over in silence: where programs do not apply to the
    tensors (a meta or quantized tensor...), or ``checks`` leaves out
    ``behaviour`` (for ``program=``), a ValueError says so; where the
    tensors cannot be made again for the program's real side, each
    outcome's ``notes`` say why (and ``assert_faithful`` warns
    :class:`~.outcomes.ProgramNotRun`).

    ``remake``: a function that makes the same tensors again, anew on every
    call (the code that made them; a tensor or a tuple, in the order given).
    The program checks (``behaviour``, ``reconvert``) run their real side
    and their control on its tensors.  Without it they rebuild the tensors
    from their metadata: a view is then an ``as_strided`` of its base, whose
    gradient reaches the base another way than through the ops that made
    it.  (Tensors drawn from our strategies carry their recipe: no need.)"""
    if remake is not None and not callable(remake):
        raise TypeError(f"remake={remake!r} must be a function that makes the tensors again "
                        "(called with no arguments), or None")
    converters, order = _validated(tensors, converters, checks, order)
    if programs:
        if program is not None:
            raise ValueError("give program= (one program) or programs=N (random ones), not both")
        return _check_with_programs(tensors, programs, converters=converters, checks=checks,
                                    order=order, strict=strict, remake=remake)
    return _check_once(tensors, converters, checks, order, strict, program,
                       _remade_by(remake, tensors))


def _validated(tensors: Sequence["torch.Tensor"], converters: Sequence[str] | str | None,
               checks: Sequence[str] | None, order: Sequence[int] | None
               ) -> tuple[list[str], list[int]]:
    """The converters (a name: a list of it; None: every one this torch
    can run) and the order (None: as given), once they and the checks are
    known to be valid (else a ValueError naming the bad value)."""
    if isinstance(converters, str):
        converters = [converters]
    converters = list(converters or available_converters())
    _validate(converters, CONVERTERS, "converter")
    _validate(checks, all_checks(), "check")
    if not tensors:
        raise ValueError("check_faithful() needs at least one tensor")
    import torch

    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            hint = (" (the tensors are separate arguments: check_faithful(*tensors))"
                    if isinstance(t, (tuple, list)) else "")
            raise TypeError(f"argument {i} of check_faithful() is of type {type(t).__name__}, "
                            f"not a torch.Tensor{hint}: {t!r}"[:500])
    order = list(range(len(tensors))) if order is None else list(order)
    if sorted(order) != list(range(len(tensors))):
        raise ValueError(f"order={order!r} must be a permutation of 0..{len(tensors) - 1}")
    return converters, order


def _check_once(tensors: Sequence["torch.Tensor"], converters: list[str],
                checks: Sequence[str] | None, order: list[int], strict: bool,
                program: "Program | str | None", remade_by: FunctionRecipe | None
                ) -> FidelityResult:
    """``check_faithful`` with one program (or none), its arguments
    validated (:func:`_validated`); ``remade_by``: ``remake`` checked
    (:func:`_remade_by`)."""
    recipe, names = _recipe_and_names(tensors)
    parsed = as_program(program, names) if program is not None else None
    if parsed is not None and parsed.steps:  # (an empty one, drawn where none applies, asks nothing)
        _check_program_runs(tensors, checks)
    rebuilt_by: "Recipe | FunctionRecipe | None" = (
        remade_by if remade_by is not None
        else None if isinstance(recipe, Exception) else recipe)
    outcomes = []
    for name in converters:
        outcomes.append(_one_converter(name, names, tensors, checks, order, strict, parsed,
                                       rebuilt_by))
    torch_caches.conversion_done(len(converters))
    return FidelityResult(outcomes, functools.partial(
        _reproducer, recipe, outcomes, converters, list(checks) if checks else checks, order,
        parsed, strict))


def _check_program_runs(tensors: Sequence["torch.Tensor"], checks: Sequence[str] | None) -> None:
    """A ValueError where a program given would not run: the ``behaviour``
    check (the one that runs it) is left out, or programs do not apply to
    the tensors."""
    if checks is not None and "behaviour" not in checks:
        raise ValueError(f"program= is run by the 'behaviour' check, which checks={list(checks)!r} "
                         "leaves out: add 'behaviour' to checks, or give no program")
    why = why_no_programs(tensors)
    if why is not None:
        raise ValueError(
            f"program= cannot run on these tensors: {why}.  Programs run on tensors with "
            "values: strided, sparse (COO and compressed), nested jagged and MKLDNN tensors, "
            "traceable wrapper subclasses and C++ functional tensors")


def _recipe_and_names(tensors: Sequence["torch.Tensor"]
                      ) -> tuple["Recipe | Exception", tuple[str, ...]]:
    """The tensors' recipe and names (a tensor the describer cannot read:
    the error, no reproducer, and the names t0, t1, ...)."""
    try:
        recipe = recipe_for(tensors)
        return recipe, recipe.outputs
    except Exception as e:
        release_frames(e)
        return e, tuple(f"t{i}" for i in range(len(tensors)))


def _remade_by(remake: Callable[[], Any] | None,
               tensors: Sequence["torch.Tensor"]) -> FunctionRecipe | None:
    if remake is None:
        return None
    return _checked_remake(remake, tensors, _recipe_and_names(tensors)[1])


def _checked_remake(remake: Callable[[], Any], tensors: Sequence["torch.Tensor"],
                    names: Sequence[str]) -> FunctionRecipe:
    """``remake`` as the program checks' recipe, once it made tensors like
    ``tensors`` (else a ValueError saying how they differ; what ``remake``
    raises is chained)."""
    recipe = FunctionRecipe(remake, tuple(names))
    try:
        _, why = rebuilt_or_why(recipe, tensors, names)
    except Exception as e:
        raise ValueError(f"remake={remake!r} raised {type(e).__name__}: {e}") from e
    if why is not None:
        raise ValueError(f"remake={remake!r} made tensors unlike those given ({why}); it must "
                         "make the same tensors again, in the order given")
    return recipe


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
    # (the program is the behaviour check's: shown only where that check runs)
    shown = (_program_shown(program, outcomes)
             if failing_checks is None or "behaviour" in failing_checks else None)
    source = reproducer_source(recipe, converters=failing, checks=failing_checks, order=order,
                               program=shown)
    failing_outcomes = [o for o in outcomes if o.converter in failing]
    return checked_reproducer(source, recipe, failing_outcomes, rerun_like(
        failing_outcomes, checks=failing_checks, order=order, strict=strict, program=shown))


def rerun_like(outcomes: Sequence[Outcome], *, checks: Sequence[str] | None,
               order: Sequence[int] | None, strict: bool = False,
               program: "Program | None" = None) -> Rerun:
    """Checks tensors again as ``outcomes`` were checked (their converters,
    ``checks``, ``order``, ``strict``, ``program``): what a reproducer
    written from the tensors' metadata is run with before it is shown
    (:func:`~.reproducer.checked_reproducer`)."""
    converters = [o.converter for o in outcomes]

    def rerun(tensors: Sequence["torch.Tensor"]) -> list[Outcome]:
        return check_faithful(*tensors, converters=converters, checks=checks, order=order,
                              strict=strict, program=program).outcomes

    return rerun


def _program_shown(program: "Program | None", outcomes: Sequence[Outcome]
                   ) -> "Program | None":
    """The program for the reproducer: up to its first differing step."""
    if program is None:
        return None
    first = first_differing_step([m for o in outcomes for m in o.mismatches])
    return program if first is None else program.prefix(first + 1)


def _checks_run(checks: Sequence[str] | None) -> set[str]:
    """The checks that ran on a conversion that succeeded: the selected
    ones (with the inner-tensor checks ``wrappers`` runs), and
    ``conversion`` -- it did not raise."""
    ran = set(checks or default_checks())
    if "wrappers" in ran:
        ran |= set(INNER_CHECKS)
    return ran | {"conversion"}


def _one_converter(
    name: str, names: Sequence[str], tensors: Sequence["torch.Tensor"],
    checks: Sequence[str] | None, order: Sequence[int], strict: bool = False,
    program: "Program | None" = None, recipe: "Recipe | FunctionRecipe | None" = None,
) -> Outcome:
    # Until the conversion succeeds, the known-difference registry sees the
    # real tensors only (a conversion that raised has no converted tensors).
    conversion = Conversion(tuple(names), tuple(tensors), (None,) * len(tensors), None,
                            order=tuple(order))
    # Setting the converter up and snapshotting the tensors are ours: what
    # they raise is an internal error; only the conversion itself can fail.
    try:
        converter = make_converter(name)
    except Unsupported as e:
        return Outcome(name, UNSUPPORTED, reason=str(e))
    except Exception as e:
        return _internal_error(name, "converter set-up", e)
    conversion.converter = converter
    stage = "snapshots"
    try:
        before = snapshots.capture(tuple(names), tuple(tensors))
        stage = "conversion"
        fakes = convert_all(converter, tensors, order)
        stage = "snapshots"
        after = snapshots.capture(tuple(names), tuple(tensors))
    except Exception as e:
        converter.close()
        if stage != "conversion":
            return _internal_error(name, stage, e)
        if isinstance(e, Unsupported):
            return Outcome(name, UNSUPPORTED, reason=str(e))
        # the converter crashed: a fidelity failure
        return _judge(name, [_conversion_raised(names, e)], conversion, {"conversion"}, strict)
    # From here on, whatever raises is ours (a check, the triage): an
    # internal error, never a finding.
    try:
        probes: list[Callable[[], list[Mismatch]]] = []
        converted = Conversion(tuple(names), tuple(tensors), tuple(fakes), converter,
                               order=tuple(order), before=before, after=after,
                               release_probes=probes, program=program, recipe=recipe,
                               judge=_judge_of(name))
        del fakes
        internal: list[InternalError] = []
        selected = list(checks) if checks else default_checks()
        mutating = mutating_checks(selected)
        # The checks that change the converted tensors (behaviour's programs)
        # run last, after the registry judged what the others found on the
        # tensors as converted.
        reading = [c for c in selected if c not in mutating]
        mismatches = run_checks(converted, reading, internal) if reading else []
        ran = _checks_run(checks)
        try:
            # A check that crashed did not run: the registry judges none of its entries.
            judged = _triage(name, mismatches, converted,
                             ran - set(mutating) - {e.check for e in internal})
            if mutating:
                later = run_checks(converted, mutating, internal)
                mismatches += later
                judged = judged.merged(_triage(
                    name, later, converted,
                    ran & set(mutating) - {e.check for e in internal}))
            outcome = _outcome(name, mismatches, judged, strict)
        except Exception as e:
            internal.append(InternalError("known-differences", e))
            outcome = Outcome(name, FAILED, mismatches)
        not_run = converted.program_not_run
        # The last references to the converted tensors: the probes left by
        # checks that must see them released (memo) run without them.
        del converted, mismatches
        outcome = _with_unexplained(outcome, _run_probes(probes, internal))
        if not_run is not None:
            outcome = dataclasses.replace(outcome, notes=[
                *outcome.notes, f"the behaviour check did not run the program: {not_run}"])
        if internal:
            outcome = dataclasses.replace(outcome, status=INTERNAL, internal_errors=internal)
        return outcome
    finally:
        converter.close()


def _conversion_raised(names: Sequence[str], e: Exception) -> Mismatch:
    """The finding of a conversion that raised ``e``, with where it raised."""
    import traceback

    where = traceback.extract_tb(e.__traceback__)[-1]
    release_frames(e)
    return Mismatch(
        check="conversion", path=", ".join(names), attribute="raised",
        real="a converted tensor", fake=f"{type(e).__name__}: {e}",
        detail=f"raised at {where.filename}:{where.lineno} in {where.name}")


def _internal_error(converter: str, where: str, error: Exception) -> Outcome:
    """The outcome of a converter whose run crashed in our own code (``where``)."""
    return Outcome(converter, INTERNAL, internal_errors=[InternalError(where, error)])


def _check_with_programs(tensors: Sequence["torch.Tensor"], n: int, *,
                         converters: list[str], checks: Sequence[str] | None,
                         order: list[int], strict: bool,
                         remake: Callable[[], Any] | None, seed: int = 0) -> FidelityResult:
    """``check_faithful(..., programs=n)``: the tensors checked once with the
    selected checks; then each of ``n`` seeded programs
    (:func:`~.strategies.programs.seeded_programs`, the same programs every
    run) on a fresh conversion -- a program mutates the converted tensors --
    with the ``behaviour`` check only.  The first program that fails gives
    the result (its reproducer replays that program, up to the differing
    step); otherwise what the programs met is added to the first result's
    outcomes: the known differences, the entries unexpectedly passing and
    the notes."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"programs={n!r} must be a non-negative int")
    remade_by = _remade_by(remake, tensors)  # (checked once, not once per program)
    drawn = seeded_programs(tuple(tensors), n, seed=seed)
    if drawn and not any(p.steps for p in drawn):
        raise ValueError(f"programs={n!r}: programs cannot run on these tensors: "
                         f"{drawn[0].reason or 'no step of the vocabulary applies to them'}")
    result = _check_once(tensors, converters, checks, order, strict, None, remade_by)
    if not result.ok:
        return result
    for program in drawn:
        if not program.steps:
            continue
        run = _check_once(tensors, converters, ["behaviour"], order, strict, program, remade_by)
        if not run.ok:
            return run
        for base, extra in zip(result.outcomes, run.outcomes):
            base.notes.extend(n for n in extra.notes if n not in base.notes)
            if not extra.known and not extra.unexpectedly_passing:
                continue
            base.known.extend(extra.known)
            base.unexpectedly_passing.extend(
                e for e in extra.unexpectedly_passing if e not in base.unexpectedly_passing)
            ids = sorted({entry_id for entry_id, _ in base.known})
            if base.status in (PASSED, KNOWN, XPASS):
                base.status = (XPASS if base.unexpectedly_passing else KNOWN)
                reasons = ([f"known differences: {', '.join(ids)}"] if ids else []) + (
                    [f"unexpectedly passing: {', '.join(base.unexpectedly_passing)}"]
                    if base.unexpectedly_passing else [])
                base.reason = "; ".join(reasons)
    return result


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


def _judge_of(converter: str) -> Judge:
    """What the checks ask of the registry for ``converter`` (a ``checks.Judge``)."""
    from .known_differences import RegistryJudge

    return RegistryJudge(converter)


def _triage(name: str, mismatches: list[Mismatch], conversion: Conversion,
            ran: set[str]) -> "Triage":
    from .known_differences import triage

    return triage(name, mismatches, conversion, ran)


def _judge(name: str, mismatches: list[Mismatch], conversion: Conversion, ran: set[str],
           strict: bool) -> Outcome:
    return _outcome(name, mismatches, _triage(name, mismatches, conversion, ran), strict)


def _outcome(name: str, mismatches: list[Mismatch], t: "Triage", strict: bool) -> Outcome:
    """The outcome of ``mismatches``, as the registry judged them (``t``)."""
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
    program: "Program | str | None" = None,
    programs: int = 0,
    remake: Callable[[], Any] | None = None,
) -> FidelityResult:
    """Like :func:`check_faithful`, but raise :class:`FidelityError` listing
    every broken invariant, real vs fake, and a runnable reproducer.  Known
    differences pass (``strict=True``: fail); an entry that passed
    unexpectedly warns :class:`~.known_differences.UnexpectedlyPassing`
    (``strict=True``: fails), and a program the ``behaviour`` check could
    not run (the tensors could not be made again for its real side) warns
    :class:`~.outcomes.ProgramNotRun`.  A check that crashed raises FidelityError
    too, chained to the check's exception."""
    __tracebackhide__ = True
    result = check_faithful(*tensors, converters=converters, checks=checks, order=order,
                            strict=strict, program=program, programs=programs, remake=remake)
    if not result.ok:
        raise FidelityError(result)
    if result.notes:
        warnings.warn(ProgramNotRun("\n".join(result.notes)), stacklevel=2)
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
