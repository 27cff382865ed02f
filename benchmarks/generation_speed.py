"""Generation speed per tensor kind, against the cost of converting and checking.

    .venv/bin/python benchmarks/generation_speed.py [EXAMPLES_PER_KIND] [CONVERTER]

For every kind this torch can build, draws EXAMPLES_PER_KIND (default 60)
examples with Hypothesis and prints examples/s of generation (draw + build),
the median generation time, the median time of converting and running every
check (through CONVERTER, default "fake"), and their ratio.  Target: the
median example costs less to generate than to convert and check (ratio < 1).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.faithful import check_faithful
from pytest_metafidelity.strategies import available_kinds, recipes


def measure(kind: str, examples: int, converter: str) -> tuple[list[float], list[float]]:
    gen: list[float] = []
    check: list[float] = []
    strategy = recipes(kinds=[kind], family=None)

    @settings(max_examples=examples, database=None, deadline=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        start = time.perf_counter()
        recipe = data.draw(strategy)
        with recipe.active_contexts() as ns:
            tensors = recipe.build_in(ns)
            built = time.perf_counter()
            check_faithful(*tensors, converters=[converter])
        done = time.perf_counter()
        gen.append(built - start)
        check.append(done - built)

    run()
    return gen, check


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    converter = sys.argv[2] if len(sys.argv) > 2 else "fake"
    warnings.simplefilter("ignore")
    print(f"{'kind':24} {'gen ex/s':>9} {'gen ms':>8} {'check ms':>9} {'ratio':>6}")
    ratios = []
    for kind in available_kinds():
        gen, check = measure(kind, examples, converter)
        g, c = statistics.median(gen) * 1e3, statistics.median(check) * 1e3
        ratios.append(g / c)
        print(f"{kind:24} {len(gen) / sum(gen):9.0f} {g:8.2f} {c:9.2f} {g / c:6.2f}")
    print(f"median ratio generation/check over kinds: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
