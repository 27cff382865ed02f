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
