"""Resident memory over a long run of suite examples, in one process.

    .venv/bin/python benchmarks/memory_growth.py [EXAMPLES] [CONVERTERS]

Runs the suite's own item tests (``fidelity_test``, the path a worker runs:
journal, tallies, digests, checks) over every kind x CONVERTERS (default
``meta,fake,fake-dynamic``), 10 examples per item and round after round,
until EXAMPLES (default 20000) have run, and prints the resident set size
(RSS, from /proc/self/statm) after the first round of items (warm: torch
and Dynamo imported, every kind drawn once) and every 2,000 examples, then
the growth from the warm figure.  Target: at most 50 MB over 20,000.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
import warnings

from pytest_metafidelity.checks import default_checks
from pytest_metafidelity.options import PROFILES, SuiteOptions
from pytest_metafidelity.strategies import available_kinds
from pytest_metafidelity.suite.journal import Journal
from pytest_metafidelity.suite.run import SuiteRun
from pytest_metafidelity.suite.runner import SuiteItem, fidelity_test


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    target = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    converters = (sys.argv[2] if len(sys.argv) > 2 else "meta,fake,fake-dynamic").split(",")
    opts = SuiteOptions(kinds=tuple(available_kinds()), converters=tuple(converters),
                        checks=tuple(default_checks()), devices=("cpu",), profile=PROFILES["ci"],
                        examples=10, budget=None, strict=False, report=None,
                        reproducers=tempfile.mkdtemp())
    run = SuiteRun(opts, journal=Journal(tempfile.mkdtemp(), "bench", timeout=300.0))
    items = [SuiteItem(k, c) for k in opts.kinds for c in converters]
    warm = None
    next_report = 0
    started = time.monotonic()
    rounds = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while run.examples_done < target:
            for item in items:
                test = fidelity_test(run, item.id)
                try:
                    test(item)
                except AssertionError:
                    pass  # a finding: the run goes on, as the suite's does
            rounds += 1
            if warm is None:
                warm = rss_mb()
                print(f"warm after {run.examples_done} examples: RSS {warm:.1f} MB", flush=True)
                next_report = run.examples_done + 2000
            while run.examples_done >= next_report:
                print(f"{run.examples_done:>6} examples: RSS {rss_mb():.1f} MB "
                      f"({time.monotonic() - started:.0f} s)", flush=True)
                next_report += 2000
    end = rss_mb()
    print(f"{run.examples_done} examples in {time.monotonic() - started:.0f} s; RSS {end:.1f} MB; "
          f"growth since warm: {end - warm:+.1f} MB (target <= 50 MB)")
    run.journal.close()


if __name__ == "__main__":
    main()
