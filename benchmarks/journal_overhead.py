"""The per-example cost of the write-ahead journal, against the example's own.

    .venv/bin/python benchmarks/journal_overhead.py [EXAMPLES] [CONVERTER]

Draws EXAMPLES (default 300) dense/view examples as the suite does and, for
each, times in the same process and side by side: building the tensors and
converting and checking them (``check_faithful`` through CONVERTER, default
"fake", all checks), and what the journal adds to every example (reading
the choice sequence, the reproducer source, one overwrite of the journal
file before and one after, arming and disarming the hang timer).  Prints
the medians and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.faithful import check_faithful
from pytest_metafidelity.reproducer import reproducer_source
from pytest_metafidelity.suite.journal import RUNNING, Journal, JournalEntry, encode_choices
from pytest_metafidelity.suite.runner import draw_case


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    converter = sys.argv[2] if len(sys.argv) > 2 else "fake"
    journal = Journal(tempfile.mkdtemp(prefix="metafidelity-journal-"), "bench", timeout=300.0)
    example_times: list[float] = []
    journal_times: list[float] = []

    @settings(max_examples=examples, database=None, deadline=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        recipe, order = draw_case(data, data.draw(st.sampled_from(["dense", "view"])), ["cpu"])
        start = time.perf_counter()
        journal.begin(JournalEntry(
            RUNNING, 0, nodeid="bench", kind="view", converter=converter, order=list(order),
            choices=encode_choices(data), example=len(example_times),
            recipe=reproducer_source(recipe, converters=[converter], checks=None, order=order)))
        journal.end()
        journaled = time.perf_counter()
        with recipe.active_contexts() as ns:
            tensors = recipe.build_in(ns)
            check_faithful(*tensors, converters=[converter], order=order)
        done = time.perf_counter()
        journal_times.append(journaled - start)
        example_times.append(done - journaled)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
    journal.close()
    example = statistics.median(example_times)
    added = statistics.median(journal_times)
    print(f"{len(example_times)} examples through {converter!r}")
    print(f"  example (build + convert + all checks): median {example * 1e3:.3f} ms")
    print(f"  journal (choices, reproducer, 2 writes, timer): median {added * 1e6:.1f} us")
    print(f"  overhead: {added / example:.1%} of an example")


if __name__ == "__main__":
    main()
