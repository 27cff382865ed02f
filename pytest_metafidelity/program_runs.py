"""``check_faithful(..., programs=N)``: the ``behaviour`` check with N seeded
random programs, outside Hypothesis.

The tensors are checked once with the selected checks; then each program
(:func:`~pytest_metafidelity.strategies.programs.seeded_programs`, the same
programs every run) runs on a fresh conversion -- a program mutates the
converted tensors -- with the ``behaviour`` check only.  The first program
that fails gives the result (its reproducer replays that program, up to the
differing step); otherwise the operator differences the programs met are
added to the first result's outcomes as known differences.
"""

from __future__ import annotations

from typing import Any, Sequence


def as_program(program: Any, names: Sequence[str]) -> Any:
    """A ``Program`` from a ``Program`` or its source text (whose tensors
    have the names ``names``, the reproducer's)."""
    from .strategies.programs import Program

    if isinstance(program, Program):
        if len(program.inputs) != len(names):
            raise ValueError(f"the program runs on {len(program.inputs)} tensor(s) "
                             f"{list(program.inputs)}, but {len(names)} were given")
        return program
    return Program.parse(program, names)


def check_with_programs(tensors: Sequence[Any], n: int, *, seed: int = 0, **kwargs: Any) -> Any:
    from .faithful import KNOWN, PASSED, check_faithful
    from .strategies.programs import seeded_programs

    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"programs={n!r} must be a non-negative int")
    result = check_faithful(*tensors, **kwargs)
    if not result.ok:
        return result
    behaviour_only = {**kwargs, "checks": ["behaviour"]}
    for program in seeded_programs(tuple(tensors), n, seed=seed):
        if not program.steps:
            break  # programs do not apply to these tensors (program.reason)
        run = check_faithful(*tensors, program=program, **behaviour_only)
        if not run.ok:
            return run
        for base, extra in zip(result.outcomes, run.outcomes):
            if not extra.known:
                continue
            base.known.extend(extra.known)
            ids = sorted({entry_id for entry_id, _ in base.known})
            if base.status == PASSED:
                base.status = KNOWN
            if base.status == KNOWN:
                base.reason = "known differences: " + ", ".join(ids)
    assert result.ok
    return result
