"""How much of aten's view and in-place vocabulary the ``behaviour`` programs draw.

    .venv/bin/python benchmarks/program_vocabulary.py [EXAMPLES_PER_KIND]

The vocabulary comes from the installed torch's operator schemas
(``strategies/aten_vocabulary.py``: alias annotations ``Tensor(a) self`` with
aliasing returns are view ops, ``Tensor(a!) self`` on an ``..._`` op without
``out=`` are in-place ops).  For every kind programs run on, draws
EXAMPLES_PER_KIND (default 40) recipes and programs with Hypothesis
(derandomized: the same figures every run on the same torch), reads the
operators each step calls from its source, and prints:

* how many of the view ops and in-place ops that apply to strided CPU tensors
  the programs' vocabulary holds (steps written by hand, and steps built from
  the schemas: ``strategies/aten_steps.py``), against the goal of 80%;
* view ops and in-place ops drawn in this sample, out of those that apply to
  strided CPU tensors;
* the autograd and storage surface (backward, hooks, ``.grad =``, storage
  resize, ``set_`` variants, ...) drawn or not;
* every applicable op not drawn: in the vocabulary but not drawn this time, or
  not in it, with why; and every op that does not apply, with its reason.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections import Counter
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.strategies import recipes
from pytest_metafidelity.strategies.aten_vocabulary import operators_in, vocabulary
from pytest_metafidelity.strategies.aten_steps import aten_steps
from pytest_metafidelity.strategies.kinds import program_kinds
from pytest_metafidelity.strategies.programs import ATEN_ODDS, OP_NAMES, Step, programs

GOAL = 0.8

def _reads(step: Step) -> tuple[set[str], set[str]]:
    """(aten op names a step calls, attributes it assigns)."""
    assigned = {node.attr for node in ast.walk(ast.parse(step.statement))
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}
    return operators_in(step.statement), assigned


def _source_has(text: str) -> Callable[[Step, set[str], set[str]], bool]:
    return lambda step, names, assigned: text in step.statement


def _calls(name: str) -> Callable[[Step, set[str], set[str]], bool]:
    return lambda step, names, assigned: name in names


def _assigns(name: str) -> Callable[[Step, set[str], set[str]], bool]:
    return lambda step, names, assigned: name in assigned


# The autograd and storage-level surface that issue #24 names, beside aten's ops.
SURFACE: dict[str, Callable[[Step, set[str], set[str]], bool]] = {
    "Tensor.backward()": _calls("backward"),
    "torch.autograd.grad()": _source_has("autograd.grad("),
    "Tensor.register_hook()": _calls("register_hook"),
    "Tensor.retain_grad()": _calls("retain_grad"),
    "reading .grad": lambda step, names, assigned: "grad" in names,
    ".grad = ...": _assigns("grad"),
    "detach()": _calls("detach"),
    "detach_()": _calls("detach_"),
    "forward-mode AD (torch.autograd.forward_ad)": _source_has("forward_ad"),
    "untyped_storage().resize_()": _source_has("untyped_storage().resize_("),
    "untyped_storage().copy_()": _source_has("untyped_storage().copy_("),
    "set_() (no source)": _source_has(".set_()"),
    "set_(tensor)": lambda step, names, assigned: (
        "set_" in names and ".set_()" not in step.statement
        and "untyped_storage()," not in step.statement),
    "set_(storage, offset, size, stride)": _source_has("untyped_storage(),"),
    ".data = ...": _assigns("data"),
}


def draw(examples: int) -> tuple[Counter, Counter, int, int]:
    """(steps per name, steps per surface entry, programs, steps) over every program kind."""
    names: Counter = Counter()
    surface: Counter = Counter()
    tally = Counter()

    for kind in program_kinds():
        @settings(max_examples=examples, database=None, deadline=None, derandomize=True,
                  phases=["generate"], suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            recipe = data.draw(recipes(kinds=[kind], family=None))
            program = data.draw(programs(recipe))
            tally["programs"] += 1
            for step in program.steps:
                tally["steps"] += 1
                called, assigned = _reads(step)
                names.update(called)
                for label, matches in SURFACE.items():
                    if matches(step, called, assigned):
                        surface[label] += 1

        run()
    return names, surface, tally["programs"], tally["steps"]


def main() -> None:
    import os

    import torch

    from pytest_metafidelity.strategies.programs import ATEN_STEPS_VARIABLE

    os.environ[ATEN_STEPS_VARIABLE] = "1"  # the schema-built steps are opt-in

    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    warnings.simplefilter("ignore")
    ops = vocabulary()
    steps, not_drawn = aten_steps()
    drawable = set(OP_NAMES) | {step.name for step in steps}
    applicable = [op for op in ops if op.applies]
    can = sum(1 for op in applicable if op.name in drawable)
    share = can / max(len(applicable), 1)
    print(f"the programs' vocabulary: {can} of the {len(applicable)} ops that apply to strided "
          f"CPU tensors ({share:.0%}; goal {GOAL:.0%}: {'met' if share >= GOAL else 'not met'}): "
          f"{len(OP_NAMES)} steps written by hand, the others built from their schemas "
          "(strategies/aten_steps.py)")
    drawn, surface, n_programs, n_steps = draw(examples)
    print(f"torch {torch.__version__}: aten vocabulary from {len(ops)} op names; "
          f"{n_programs} programs ({examples} per kind over {len(program_kinds())} kinds), {n_steps} steps")
    together = [0, 0]
    for group in ("view", "in-place"):
        members = [op for op in ops if op.group == group]
        applicable = [op for op in members if op.applies]
        reached = [op for op in applicable if op.name in drawn]
        together[0] += len(reached)
        together[1] += len(applicable)
        print(f"  {group + ' ops':<13} drawn {len(reached):>3} of {len(applicable):>3} that apply "
              f"to strided CPU tensors ({len(reached) / max(len(applicable), 1):.0%}); "
              f"{len(members) - len(applicable)} more do not apply")
    share = together[0] / max(together[1], 1)
    print(f"  together      drawn {together[0]:>3} of {together[1]:>3} ({share:.0%}) in this "
          f"sample (one step in {ATEN_ODDS} at most is drawn from the schema-built steps)")
    print(f"autograd and storage surface: {sum(1 for k in SURFACE if surface[k])} of {len(SURFACE)} "
          "drawn (steps that draw it)")
    for label in SURFACE:
        print(f"  {'drawn' if surface[label] else 'never':<6} {label}: {surface[label]}")
    for group in ("view", "in-place"):
        missing = [op.name for op in ops if op.group == group and op.applies
                   and op.name not in drawn]
        unbuilt = [name for name in missing if name not in drawable]
        unlucky = [name for name in missing if name in drawable]
        print(f"{group} ops that apply and were not drawn in these programs, {len(missing)}:")
        print(f"  in the vocabulary, not drawn this time ({len(unlucky)}): " + ", ".join(unlucky))
        print(f"  not in the vocabulary ({len(unbuilt)}):")
        for name in unbuilt:
            print(f"    {name}: {not_drawn.get(name, 'no step for it')}")
    print("ops that do not apply to strided CPU tensors:")
    for op in ops:
        if not op.applies:
            print(f"  {op.group:<8} {op.name}: {op.not_applicable}")


if __name__ == "__main__":
    main()
