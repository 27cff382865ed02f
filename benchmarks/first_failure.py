"""Time to the first failure with a faulty converter (``pytest --metafidelity -x``).

    .venv/bin/python benchmarks/first_failure.py [BASELINE_COMMIT] [SEEDS]

A conftest registers ``offset-dropping``: the ``fake`` converter, except
that a tensor at storage offset 2 or more is converted from a copy (offset
0), a fault the simplest examples do not show.  For each seed (default 3),
``pytest --metafidelity -x --metafidelity-converters=offset-dropping`` runs in
a fresh directory (no example database) until its first failure stops it;
the wall seconds are printed.  With BASELINE_COMMIT, the same runs of that
commit (checked out in a temporary git worktree) are interleaved with this
checkout's, and the ratio of the medians is printed (issue #10: no worse
than before).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAULTY_CONFTEST = '''
from pytest_metafidelity.converters import CONVERTERS, FakeConverter, register_converter


class OffsetDroppingFake(FakeConverter):
    name = "offset-dropping"

    def _convert(self, t):
        return super()._convert(t.clone() if t.storage_offset() >= 2 else t)


if OffsetDroppingFake.name not in CONVERTERS:
    register_converter(OffsetDroppingFake)
'''


def time_to_failure(root: Path, seed: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "conftest.py").write_text(FAULTY_CONFTEST)
        command = [sys.executable, "-m", "pytest", "--metafidelity", "-x", "-q",
                   "-p", "no:cacheprovider", "--metafidelity-converters=offset-dropping",
                   f"--hypothesis-seed={seed}", f"--rootdir={tmp}"]
        env = dict(os.environ, PYTHONPATH=str(root))
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        # -x under the suite's worker: pytest reports the failure, then the
        # interrupted session (exit 1 or 2).
        if done.returncode not in (1, 2) or "storage_offset()" not in done.stdout:
            sys.exit(f"{root}: expected the first failure on storage_offset(), got exit "
                     f"{done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
        return wall


def main() -> None:
    baseline = sys.argv[1] if len(sys.argv) > 1 else None
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    roots = {"this checkout": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if baseline:
            old = Path(tmp) / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old),
                            baseline], check=True)
            roots = {f"baseline {baseline}": old, **roots}
        try:
            times: dict[str, list[float]] = {label: [] for label in roots}
            for seed in seeds:
                for label, root in roots.items():
                    times[label].append(time_to_failure(root, seed))
                    print(f"seed {seed}  {label:24} {times[label][-1]:6.1f} s", flush=True)
            medians = {label: statistics.median(ts) for label, ts in times.items()}
            for label, m in medians.items():
                print(f"median  {label:24} {m:6.1f} s")
            if baseline:
                now, before = medians["this checkout"], medians[f"baseline {baseline}"]
                print(f"this checkout / baseline: {now / before:.2f}x")
        finally:
            if baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(old)], check=False)


if __name__ == "__main__":
    main()
