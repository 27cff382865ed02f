"""The suite on one worker against N workers, side by side in one run.

    .venv/bin/python benchmarks/parallel_speedup.py [BUDGET_SECONDS] [WORKERS] [PYTEST ARGS...]

Runs, one after the other, each in a fresh temporary directory (its own
example database), with the same seed:

* ``pytest --metafidelity --metafidelity-budget=BUDGET -n 1`` and ``-n WORKERS``
  (default 300 s and 2): the examples each ran in the same time budget, read
  from its JSON report, and their ratio (issue #10's goal: at least 1.8x for
  ``-n 2`` on 2 cores);
* ``pytest --metafidelity --metafidelity-profile=ci -n 1`` and ``-n WORKERS``:
  wall seconds for the same fixed examples, and their ratio.

It prints wall seconds, examples and examples/s per run.  Extra PYTEST ARGS
go to every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_suite(args: list[str]) -> tuple[float, int]:
    """Wall seconds and examples of one suite run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pytest", "--metafidelity", "-q", "-p", "no:cacheprovider",
                   f"--metafidelity-report={report}", "--hypothesis-seed=1",
                   f"--rootdir={ROOT}", *args]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        if done.returncode not in (0, 1) or not report.exists():
            sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}"
                     f"{done.stderr[-3000:]}")
        items = json.loads(report.read_text())["items"]
        return wall, sum(i["counts"]["examples"] for i in items)


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    extra = sys.argv[3:]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    rows = []
    for label, args in [
        (f"budget {budget:g} s, -n 1", [f"--metafidelity-budget={budget:g}", "-n", "1"]),
        (f"budget {budget:g} s, -n {workers}", [f"--metafidelity-budget={budget:g}", "-n",
                                               str(workers)]),
        ("ci profile, -n 1", ["--metafidelity-profile=ci", "-n", "1"]),
        (f"ci profile, -n {workers}", ["--metafidelity-profile=ci", "-n", str(workers)]),
    ]:
        wall, examples = run_suite([*args, *extra])
        rows.append((label, wall, examples))
        print(f"{label:28} {wall:8.1f} s {examples:8d} examples {examples / wall:8.1f}/s",
              flush=True)
    (_, _, one), (_, _, many) = rows[0], rows[1]
    (_, ci_one, _), (_, ci_many, _) = rows[2], rows[3]
    print(f"examples in the same budget, -n {workers} / -n 1: {many / one:.2f}x")
    print(f"ci profile wall time, -n 1 / -n {workers}: {ci_one / ci_many:.2f}x")


if __name__ == "__main__":
    main()
