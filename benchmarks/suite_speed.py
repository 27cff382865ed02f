"""Examples per second of the suite on the ``ci`` profile, side by side with
a baseline commit, and the floor no change to our own machinery can go below.

    .venv/bin/python benchmarks/suite_speed.py BASELINE_COMMIT [ROUNDS]

Every run is ``pytest --metafidelity --metafidelity-profile=ci -p no:xdist
--hypothesis-seed=1`` in a fresh directory (in-process, so the isolation
worker's start-up is not counted), writing a JSON report.  The baseline is
checked out in a temporary git worktree.  Runs are interleaved, ROUNDS
times (default 3); the median of pytest's own session time is printed
with the examples per second:

- ``baseline``: the baseline commit with its default checks;
- ``same checks``: this checkout with the baseline's checks (so the same
  cases: the items' ``cases_digest`` and outcome counts are compared with
  the baseline's and the differences printed);
- ``all checks``: this checkout with its default checks (``behaviour``
  included where this checkout has it: other cases, since each example
  then also draws a program);
- ``floor``: this checkout with the baseline's checks, but with the checks,
  the known-difference triage and the purity snapshots replaced by
  nothing (a conftest in the run's directory): generation, Hypothesis and
  torch's conversions only.  Its examples/s bound what making our own
  machinery cheaper can reach: ``floor / baseline`` is the largest
  speed-up over the baseline that is possible without generating or
  converting less.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--metafidelity",
         "--metafidelity-profile=ci", "--hypothesis-seed=1"]
FLOOR_CONFTEST = '''
try:  # where the snapshots live (before stop 31: in the purity check's module)
    import pytest_metafidelity.snapshots as purity
except ImportError:
    import pytest_metafidelity.checks.purity as purity
import pytest_metafidelity.faithful as faithful

faithful.run_checks = lambda conversion, names=None, internal=None: []
faithful._judge = lambda name, mismatches, conversion, ran, strict: faithful.Outcome(
    name, faithful.PASSED, mismatches)
if hasattr(faithful, "_triage"):  # (since the mutating checks are judged apart)
    from pytest_metafidelity.known_differences.triage import Triage

    faithful._triage = lambda name, mismatches, conversion, ran: Triage([], [], [])
purity.capture = lambda names, tensors: None
'''
# The checks a checkout runs by default (a checkout older than opt-in checks: all).
LIST_CHECKS = ("import json; from pytest_metafidelity import checks; "
               "print(json.dumps(list(getattr(checks, 'default_checks', checks.all_checks)())))")


def env_for(root: Path) -> dict[str, str]:
    """This environment, importing the package from ``root``, without the
    settings of an outer run (CI selects the ci profile's own seed)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "METAFIDELITY_")) and k != "CI"}
    return {**env, "PYTHONPATH": str(root)}


def checks_of(root: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", LIST_CHECKS], cwd=root, check=True,
                         capture_output=True, text=True, env=env_for(root)).stdout
    return json.loads(out.splitlines()[-1])


def run_suite(root: Path, extra: list[str], conftest: str = "") -> tuple[float, dict]:
    """(pytest's session seconds, the JSON report) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        if conftest:
            (Path(tmp) / "conftest.py").write_text(conftest)
        report = Path(tmp) / "report.json"
        done = subprocess.run(
            [sys.executable, *SUITE, f"--rootdir={tmp}", f"--metafidelity-report={report}",
             *extra], cwd=tmp, capture_output=True, text=True,
            env=env_for(root))
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        seconds = re.search(r" in ([0-9.]+)s", last)
        if done.returncode != 0 or seconds is None or not report.exists():
            sys.exit(f"{root} {extra}: exit {done.returncode}\n{done.stdout[-3000:]}"
                     f"{done.stderr[-2000:]}")
        return float(seconds.group(1)), json.loads(report.read_text())


def items_of(report: dict) -> dict[str, tuple[str, dict]]:
    return {i["nodeid"].rsplit("::", 1)[-1]:
            (i.get("cases_digest"), {s: n for s, n in i["counts"].items() if n})
            for i in report["items"]}


def compare(baseline: dict, now: dict) -> list[str]:
    """Whether the two runs ran the same cases with the same outcomes: the
    outcome totals, and item by item where the cases are the same."""
    before, after = items_of(baseline), items_of(now)
    lines = []
    for label, keys in (("only in the baseline", set(before) - set(after)),
                        ("only here", set(after) - set(before))):
        if keys:
            lines.append(f"items {label}: {sorted(keys)}")
    both = sorted(before.keys() & after.keys())
    same = [k for k in both if before[k][0] == after[k][0]]
    lines.append(f"cases_digest: {len(same)} of {len(both)} items ran the same cases")
    for label, items in (("baseline", before), ("here", after)):
        totals: dict[str, int] = {}
        for k in both:
            for status, n in items[k][1].items():
                totals[status] = totals.get(status, 0) + n
        lines.append(f"outcomes, {label}: {dict(sorted(totals.items()))}")
    differing = [k for k in same if before[k][1] != after[k][1]]
    lines.append(f"of the items with the same cases, {len(same) - len(differing)} have the "
                 f"same outcome counts; {len(differing)} differ")
    for k in differing:
        lines.append(f"    {k}: baseline {before[k][1]}, here {after[k][1]}")
    return lines


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    baseline, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old),
                        baseline], check=True)
        try:
            same = ["--metafidelity-checks=" + ",".join(checks_of(old))]
            runs = {
                f"baseline {baseline}": (old, [], ""),
                "same checks": (ROOT, same, ""),
                "all checks": (ROOT, [], ""),
                "floor": (ROOT, same, FLOOR_CONFTEST),
            }
            seconds: dict[str, list[float]] = {label: [] for label in runs}
            reports: dict[str, dict] = {}
            for r in range(rounds):
                for label, (root, extra, conftest) in runs.items():
                    s, reports[label] = run_suite(root, extra, conftest)
                    seconds[label].append(s)
                    print(f"round {r}  {label:24} {s:6.1f} s", flush=True)
            first = reports[f"baseline {baseline}"]
            examples = {label: sum(i["counts"]["examples"] for i in rep["items"])
                        for label, rep in reports.items()}
            base_rate = examples[f"baseline {baseline}"] / statistics.median(
                seconds[f"baseline {baseline}"])
            print(f"\n{'run':26} {'median s':>9} {'examples':>9} {'ex/s':>7} {'x baseline':>11}")
            for label, ts in seconds.items():
                rate = examples[label] / statistics.median(ts)
                print(f"{label:26} {statistics.median(ts):9.1f} {examples[label]:9d} "
                      f"{rate:7.1f} {rate / base_rate:10.2f}x")
            print("\nsame checks against the baseline:")
            for line in compare(first, reports["same checks"]):
                print("  " + line)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False)


if __name__ == "__main__":
    main()
