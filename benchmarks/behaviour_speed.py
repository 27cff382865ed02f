"""Speed of the ``behaviour`` check, and how often program steps raise.

    .venv/bin/python benchmarks/behaviour_speed.py [EXAMPLES_PER_ITEM] [CONVERTERS]

For every kind programs apply to and every converter (comma-separated,
default all), draws EXAMPLES_PER_ITEM (default 20) recipes and programs with
Hypothesis and runs only the ``behaviour`` check.  Prints examples/s
(drawing, building, converting and the lockstep run, all included), the
share of program steps that raised on the real tensors, the share of
programs with such a step (a step that raised on the real side and passed
the check raised on both sides), and the outcome counts.  Programs must
mostly run, not mostly raise.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.converters import available_converters
from pytest_metafidelity.faithful import check_faithful
from pytest_metafidelity.strategies import recipes
from pytest_metafidelity.strategies.kinds import available_kinds, program_kinds
from pytest_metafidelity.strategies.programs import programs, run_step


def measure(kind: str, converter: str, examples: int, tally: Counter) -> None:
    import torch

    @settings(max_examples=examples, database=None, deadline=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        recipe = data.draw(recipes(kinds=[kind], family=None))
        program = data.draw(programs(recipe))
        # (inside the recipe's functorch level, where its tensors live, if it has one)
        with recipe.active_contexts() as built_in:
            tensors = recipe.build_in(built_in)
            outcome = check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                                     program=program).outcomes[0]
        tally["examples"] += 1
        tally[outcome.status] += 1
        if not program.steps:
            return
        with recipe.active_contexts() as built_in:
            namespace = {"torch": torch, **dict(zip(recipe.outputs, recipe.build_in(built_in)))}
            raised = [run_step(step, namespace) is not None for step in program.steps]
        tally["programs"] += 1
        tally["steps"] += len(raised)
        tally["steps raised"] += sum(raised)
        tally["programs with a step raised"] += any(raised)

    run()


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    converters = sys.argv[2].split(",") if len(sys.argv) > 2 else available_converters()
    warnings.simplefilter("ignore")
    tally: Counter = Counter()
    start = time.perf_counter()
    for converter in converters:
        for kind in program_kinds():
            if kind in available_kinds():  # (user_subclass: only with a subclass registered)
                measure(kind, converter, examples, tally)
    seconds = time.perf_counter() - start
    print(f"{tally['examples']} examples in {seconds:.1f} s: "
          f"{tally['examples'] / seconds:.1f} examples/s")
    print(f"steps raised on the real tensors: {tally['steps raised']}/{tally['steps']} "
          f"({tally['steps raised'] / max(tally['steps'], 1):.0%}); programs with such a step: "
          f"{tally['programs with a step raised']}/{tally['programs']} "
          f"({tally['programs with a step raised'] / max(tally['programs'], 1):.0%})")
    print("outcomes:", {k: v for k, v in tally.items() if k in (
        "passed", "failed", "known-difference", "unexpectedly-passing", "unsupported")})


if __name__ == "__main__":
    main()
