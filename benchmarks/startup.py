"""Start-up: from the command to the suite's first example, ``pytest --metafidelity``.

    .venv/bin/python benchmarks/startup.py [--baseline COMMIT] [--runs N]

Runs the default command (one xdist worker, every kind and converter, the
``dev`` profile) in a fresh directory, with this script loaded as a pytest
plugin (``-p startup``) in the process that runs the examples: it notes the
moment the first example starts and stops the run there.  Prints, per run,
the seconds from launching the command to the first example, and their
median; with ``--baseline`` the same for that commit (a temporary git
worktree), interleaved with this checkout's so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from checkouts import checkouts  # noqa: E402

CLOCK_FILE = "METAFIDELITY_FIRST_EXAMPLE_FILE"


def pytest_configure(config: Any) -> None:
    """As a plugin: at the first example, write the time and end the process."""
    path = os.environ.get(CLOCK_FILE)
    from pytest_metafidelity.suite.isolation import is_distributing

    if not path or is_distributing(config):
        return
    from pytest_metafidelity.suite import runner

    def first_example(*args: Any, **kwargs: Any) -> None:
        now = time.time()
        with open(path, "w") as f:
            f.write(repr(now))
        if hasattr(config, "workerinput"):  # the xdist controller would start another worker
            os.kill(os.getppid(), signal.SIGKILL)
        os._exit(0)

    runner.run_example = first_example


def seconds_to_first_example(root: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        clock = Path(tmp) / "first-example"
        env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{ROOT / 'benchmarks'}",
                   **{CLOCK_FILE: str(clock)})
        command = [sys.executable, "-m", "pytest", "-p", "startup", "--metafidelity", "-q",
                   "-p", "no:cacheprovider", f"--rootdir={tmp}"]
        started = time.time()
        subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        if not clock.exists():
            sys.exit(f"{root}: the run ended before its first example")
        return float(clock.read_text()) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a commit to time side by side with this checkout")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with checkouts(args.baseline) as roots:
        times: dict[str, list[float]] = {label: [] for label in roots}
        for run in range(args.runs):
            for label, root in roots.items():
                times[label].append(seconds_to_first_example(root))
                print(f"run {run}  {label:26} {times[label][-1]:5.2f} s", flush=True)
        for label, ts in times.items():
            print(f"{label:26} command to first example: median {statistics.median(ts):.2f} s")

if __name__ == "__main__":
    main()
