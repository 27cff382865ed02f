"""Time to the first finding of a converter fault: ``pytest --metafidelity -x``.

    .venv/bin/python benchmarks/first_failure.py [--baseline COMMIT] [--seed N] [FAULT ...]

For each fault of ``benchmarks/converter_faults.py`` (default: all of them;
each patches torch's describer, shared by every converter, and the items it
affects sit at the start, the middle or the end of the suite's collection
order), the default suite runs as a developer runs it after changing the
converter -- ``pytest --metafidelity -x``, the ``dev`` profile's 40 s budget,
every kind and converter -- in a fresh directory (no example database, no
cache), with ``--hypothesis-seed`` (default 0).  It prints, per fault, the
wall seconds of the whole process (start-up included), its exit status and
the item whose failure stopped it; then the median and the slowest.  A
fault the run does not find is printed as missed.

With ``--baseline COMMIT`` the same runs of that commit (checked out in a
temporary git worktree, with this checkout's faults) are interleaved with
this checkout's, so both see the same machine load.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from checkouts import checkouts  # noqa: E402
from converter_faults import FAULT_VARIABLE, FAULTS  # noqa: E402

FAILED_ITEM = re.compile(r"^FAILED \S*test_fidelity\[([^\]]+)\]", re.M)


def time_to_first_finding(root: Path, fault: str, seed: int) -> tuple[float, int, str]:
    """Wall seconds, exit status and the failed item of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pytest", "-p", "converter_faults", "--metafidelity",
                   "-x", "-q", "-p", "no:cacheprovider", f"--hypothesis-seed={seed}",
                   f"--rootdir={tmp}"]
        env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{ROOT / 'benchmarks'}",
                   **{FAULT_VARIABLE: fault})
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
    found = FAILED_ITEM.search(done.stdout)
    return wall, done.returncode, found.group(1) if found else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("faults", nargs="*", metavar="FAULT",
                        help=f"default: all of {', '.join(FAULTS)}")
    parser.add_argument("--baseline", help="a commit to time side by side with this checkout")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    unknown = [f for f in args.faults if f not in FAULTS]
    if unknown:
        parser.error(f"no such fault: {', '.join(unknown)}; expected some of {', '.join(FAULTS)}")
    args.faults = args.faults or list(FAULTS)
    with checkouts(args.baseline) as roots:
        times: dict[str, list[float]] = {label: [] for label in roots}
        missed: dict[str, list[str]] = {label: [] for label in roots}
        for fault in args.faults:
            for label, root in roots.items():
                wall, status, item = time_to_first_finding(root, fault, args.seed)
                if item:
                    times[label].append(wall)
                else:
                    missed[label].append(fault)
                print(f"{fault:32} {label:26} {wall:6.1f} s  exit {status}  "
                      f"{item or 'MISSED'}  (first kind: {FAULTS[fault][0]})", flush=True)
        for label, ts in times.items():
            if ts:
                print(f"{label:26} found {len(ts)}/{len(args.faults)}: "
                      f"median {statistics.median(ts):.1f} s, slowest {max(ts):.1f} s"
                      + (f"; missed {', '.join(missed[label])}" if missed[label] else ""))

if __name__ == "__main__":
    main()
