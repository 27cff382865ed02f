"""Cost of the ``reconvert`` check per example, and which changes it applies.

    .venv/bin/python benchmarks/reconvert_speed.py [EXAMPLES_PER_ITEM] [CONVERTERS]

For every kind programs apply to (the kinds the check applies to) and every
converter (comma-separated, default all), draws EXAMPLES_PER_ITEM (default
10) recipes and ``behaviour`` programs with Hypothesis, and times on the
same tensors ``check_faithful`` with every other check, with the
``metadata`` check alone (the conversion and triage every call pays), and
with the ``reconvert`` check alone.  Prints the milliseconds per example of
each, the check's own cost (``reconvert`` alone less ``metadata`` alone)
and what it adds to an example of every other check,
the outcomes of the ``reconvert`` check, and how often each change was the
one applied (read from the mismatches' attributes; a change that altered
nothing shows as ``no difference``).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.checks import default_checks
from pytest_metafidelity.checks.reconvert import CHANGES
from pytest_metafidelity.converters import available_converters
from pytest_metafidelity.faithful import check_faithful
from pytest_metafidelity.strategies import recipes
from pytest_metafidelity.strategies.kinds import program_kinds
from pytest_metafidelity.strategies.programs import programs


def measure(kind: str, converter: str, examples: int, tally: Counter, seconds: Counter) -> None:
    others = default_checks()

    @settings(max_examples=examples, database=None, deadline=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        recipe = data.draw(recipes(kinds=[kind], family=None))
        program = data.draw(programs(recipe))
        tensors = recipe.build()
        start = time.perf_counter()
        check_faithful(*tensors, converters=[converter], checks=others, program=program)
        seconds["other checks"] += time.perf_counter() - start
        start = time.perf_counter()
        check_faithful(*tensors, converters=[converter], checks=["metadata"])
        seconds["floor"] += time.perf_counter() - start
        start = time.perf_counter()
        outcome = check_faithful(*tensors, converters=[converter],
                                 checks=["reconvert"]).outcomes[0]
        seconds["reconvert"] += time.perf_counter() - start
        tally["examples"] += 1
        tally[outcome.status] += 1
        attributes = [m.attribute for m in outcome.mismatches] + [
            m.attribute for _, m in outcome.known if m.check == "reconvert"]
        applied = {c.name for c in CHANGES for a in attributes if a.endswith(f" after {c.name}")}
        for name in applied or {"no difference"}:
            tally[f"change {name}"] += 1

    run()


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    converters = sys.argv[2].split(",") if len(sys.argv) > 2 else available_converters()
    warnings.simplefilter("ignore")
    tally: Counter = Counter()
    seconds: Counter = Counter()
    for converter in converters:
        for kind in program_kinds():
            measure(kind, converter, examples, tally, seconds)
    n = max(tally["examples"], 1)
    other, floor = seconds["other checks"] / n * 1e3, seconds["floor"] / n * 1e3
    own = seconds["reconvert"] / n * 1e3 - floor
    print(f"{tally['examples']} examples, ms/example: every other check {other:.1f}; "
          f"the conversion, triage and metadata check alone {floor:.1f}; the reconvert "
          f"check's own cost {own:.1f} (reconvert alone less that), "
          f"{own / max(other, 1e-9):.0%} added to an example of every other check")
    print("outcomes:", {k: v for k, v in tally.items() if k in (
        "passed", "failed", "known-difference", "unexpectedly-passing", "unsupported")})
    print("changes:", {k[len("change "):]: v for k, v in sorted(tally.items())
                       if k.startswith("change ")})


if __name__ == "__main__":
    main()
