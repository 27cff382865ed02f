"""Whether this process is a HypoFuzz run (``hypothesis fuzz``).

HypoFuzz (an optional extra: ``pip install 'pytest-metafidelity[fuzz]'``,
non-commercial licence) collects the suite with ``pytest --collect-only``
and then calls each item's Hypothesis test itself, bypassing pytest's
runtest hooks.  It fuzzes only tests whose settings neither derandomize nor
name a database other than the settings profile's; so under HypoFuzz the
suite's items leave both to the profile (the ``ci`` profile's fixed,
derandomized examples mean nothing to a fuzzer that chooses its own).

Asked without importing HypoFuzz: a process that has not imported it is not
one of its runs.
"""

from __future__ import annotations

import sys


def in_hypofuzz_run() -> bool:
    detection = sys.modules.get("hypofuzz.detection")
    return bool(detection is not None and detection.in_hypofuzz_run())


def fuzzed_examples(pytest_args: list[str]) -> dict[str, dict[str, int]]:
    """What HypoFuzz has recorded in the settings profile's database for
    the tests ``hypothesis fuzz -- PYTEST_ARGS`` fuzzes: for each node id,
    the examples its workers ran (per worker the largest count its reports
    hold -- HypoFuzz saves a report whenever coverage grows or a phase
    changes -- summed over workers), its failures and its fatal errors.  Needs HypoFuzz; collects
    the tests as it does (with pytest, in this process)."""
    from hypofuzz.collection import collect_tests
    from hypofuzz.database import FailureState, HypofuzzDatabase
    from hypothesis import settings

    collected = collect_tests(pytest_args)
    db = HypofuzzDatabase(settings().database)
    found = {}
    for target in collected.fuzz_targets:
        key = target.database_key
        per_worker: dict[str, int] = {}
        for report in db.reports.fetch(key):
            examples = sum(report.status_counts.values())
            per_worker[report.worker_uuid] = max(per_worker.get(report.worker_uuid, 0), examples)
        found[target.nodeid] = {
            "examples": sum(per_worker.values()),
            "failures": sum(len(list(db.failures(state=state).fetch(key)))
                            for state in (FailureState.SHRUNK, FailureState.UNSHRUNK)),
            "fatal": len(list(db.fatal_failures.fetch_all(key))),
        }
    return found


if __name__ == "__main__":
    # python -m pytest_metafidelity.hypofuzz_runs PYTEST_ARGS...: the
    # fuzzed_examples of the tests `hypothesis fuzz -- PYTEST_ARGS` fuzzes,
    # as JSON on the last line (collected as HypoFuzz's workers see them).
    import json

    from hypofuzz import detection

    detection._in_hypofuzz_run = True
    print(json.dumps(fuzzed_examples(sys.argv[1:])))
