"""Reproducers: runnable Python that rebuilds the tensors and re-runs the check.

Tensors drawn from our strategies carry their recipe, which is replayed
verbatim.  For tensors made by hand, :func:`~.strategies.described.describe_as_recipe`
writes a recipe from their metadata; before such a reproducer is shown,
:func:`checked_reproducer` runs it once and shows it only if the rebuilt
tensors give the same outcome -- else it says what is missing.  Running it
is the caller's: it hands over ``rerun``, which checks the rebuilt tensors
as the outcomes were checked (:func:`~.faithful.rerun_like`), so this
module writes and compares, and never calls back up into ``faithful``.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

from .strategies.described import DescribedRecipe
from .strategies.programs import Program
from .outcomes import Outcome
from .strategies.recipe import Recipe

# Checks tensors again as some outcomes were checked: their outcomes.
Rerun = Callable[[Sequence[Any]], Sequence[Outcome]]


def reproducer_source(
    recipe: Recipe,
    *,
    converters: Sequence[str],
    checks: Sequence[str] | None,
    order: Sequence[int] | None = None,
    program: Program | None = None,
) -> str:
    """A standalone script: rebuild the tensors, then run the same check
    (with ``program``, a ``behaviour`` program: its source is printed
    between the recipe and the conversion, and the recipe is the body of a
    function ``tensors()`` handed to the check as ``remake``, so that the
    program's real side is rebuilt by these very lines -- with the autograd
    history they give -- not from the tensors' metadata)."""
    args = ", ".join(recipe.outputs)
    extra = f", checks={list(checks)!r}" if checks else ""
    if order is not None and list(order) != list(range(len(recipe.outputs))):
        extra += f", order={list(order)!r}"
    steps = ""
    if program is not None and program.steps:
        steps = ("\nfrom pytest_metafidelity.strategies.programs import Program\n"
                 f"program = Program.parse({_quoted(program.source)}, "
                 f"inputs={list(program.inputs)!r})\n")
        extra += ", program=program, remake=tensors"
    epilogue = (
        f"{steps}\n" + converter_imports(converters)
        + "from pytest_metafidelity import assert_faithful\n"
        f"assert_faithful({args}, converters={list(converters)!r}{extra})"
    )
    if steps:
        return recipe.to_python_function("tensors", epilogue=epilogue)
    return recipe.to_python(epilogue=epilogue)


def _quoted(source: str) -> str:
    """``source`` as a readable Python string literal (a triple-quoted block
    where it can be)."""
    if "'''" in source or "\\" in source:
        return repr(source)
    return "'''\n" + source + "\n'''"


def converter_imports(converters: Sequence[str]) -> str:
    """Source importing the modules that registered converters from outside
    this package (``register_converter``), so the reproducer has them too."""
    from .converters import CONVERTERS

    lines = []
    for name in converters:
        spec = CONVERTERS.get(name)
        module = getattr(spec.factory, "__module__", "") if spec else ""
        if not module or module.startswith("pytest_metafidelity"):
            continue
        path = getattr(sys.modules.get(module), "__file__", None)
        if path:
            folder = os.path.dirname(os.path.abspath(path))
            lines.append(f"import sys; sys.path.insert(0, {folder!r})")
        lines.append(f"import {module}  # registers converter {name!r}")
    return "".join(line + "\n" for line in lines)


def outcome_key(outcome: Outcome) -> tuple[Any, ...]:
    """What a reproducer must give again: the status, what broke (check,
    tensor, attribute), the known differences and the checks that crashed."""
    return (outcome.status,
            tuple(sorted({(m.check, m.path, m.attribute) for m in outcome.mismatches})),
            tuple(sorted({entry_id for entry_id, _ in outcome.known})),
            tuple(sorted(outcome.unexpectedly_passing)),
            tuple(sorted({e.check for e in outcome.internal_errors})))


def reproduction_gaps(recipe: Recipe, outcomes: Sequence[Outcome], rerun: Rerun) -> list[str]:
    """Rebuild the tensors from ``recipe`` in this process, check them again
    with ``rerun`` (as ``outcomes`` were), and say how the outcomes differ
    (empty: the recipe reproduces them)."""
    try:
        with recipe.active_contexts() as namespace:
            rebuilt = recipe.build_in(namespace)
            again = rerun(rebuilt)
    except Exception as e:
        return [f"running it raised {type(e).__name__}: {e}"]
    gaps = []
    for before, after in zip(outcomes, again):
        if outcome_key(before) != outcome_key(after):
            gaps.append(f"converter {before.converter!r}: {_summary(before)} with the given "
                        f"tensors, {_summary(after)} with the rebuilt ones")
    return gaps


def _summary(outcome: Outcome) -> str:
    found = sorted({f"{m.check}: {m.path}: {m.attribute}" for m in outcome.mismatches}
                   | {f"internal error in {e.check}" for e in outcome.internal_errors}
                   | {f"known difference {i}" for i, _ in outcome.known})
    return outcome.status + (f" [{'; '.join(found)}]" if found else "")


def checked_reproducer(source: str, recipe: Recipe, outcomes: Sequence[Outcome],
                       rerun: Rerun) -> str:
    """``source`` (the reproducer of ``recipe``) if it is replayed from a
    strategy's recipe, or if the tensors it rebuilds give ``outcomes``
    again under ``rerun``; else what is missing from it, with the code
    commented out."""
    if not isinstance(recipe, DescribedRecipe):
        return source
    missing = list(recipe.missing)
    gaps = [] if missing else reproduction_gaps(recipe, outcomes, rerun)
    if not gaps and not missing:
        return source
    lines = ["# No reproducer: the tensors were written from their metadata, and"]
    if gaps:
        lines.append("# the rebuilt tensors do not give the same outcome:")
        lines += [f"#   {g}" for g in gaps]
        if recipe.approximations:
            lines.append("# rebuilt without (a likely cause):")
            lines += [f"#   {a}" for a in recipe.approximations]
    if missing:
        lines.append("# not rebuilt:")
        lines += [f"#   {m}" for m in missing]
    lines.append("# What could be rebuilt, for reference:")
    lines += ["# " + line if line else "#" for line in source.splitlines()]
    return "\n".join(lines) + "\n"
