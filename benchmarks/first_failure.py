"""Time to the first finding of a converter fault: ``pytest --metafidelity -x``.

    .venv/bin/python benchmarks/first_failure.py [--set describer|behaviour]
        [--baseline COMMIT] [--seed N] [FAULT ...]

For each fault of the set (default: all of them): ``--set describer`` (the
default), the faults of ``benchmarks/converter_faults.py`` -- each patches
torch's describer, shared by every converter, and the items it affects sit
at the start, the middle or the end of the suite's collection order, and
every static check sees it; ``--set behaviour``, the faults of
``benchmarks/behaviour_faults.py`` -- each injected into the converted
tensors so that no static check sees it, only the ``behaviour`` check's
programs -- the default suite runs as a developer runs it after changing the
converter -- ``pytest --metafidelity -x``, the ``dev`` profile's 40 s budget,
every kind and converter -- in a fresh directory (no example database, no
cache), with ``--hypothesis-seed`` (default 0).  It prints, per fault, the
wall seconds of the whole process (start-up included), its exit status and
the item whose failure stopped it; then the median and the slowest.  A
fault the run does not find is printed as missed -- and so is a failure that
is not the fault's: the failed item's reproducer is replayed without the
fault, and a failure it still shows (a difference of stock torch the
registry does not yet know) stopped the run, not the fault.

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
import behaviour_faults  # noqa: E402
import converter_faults  # noqa: E402

FAULT_VARIABLE = converter_faults.FAULT_VARIABLE
# --set: the plugin that injects the faults, and the first kind each shows on
SETS = {
    "describer": ("converter_faults", {name: f[0] for name, f in converter_faults.FAULTS.items()}),
    "behaviour": ("behaviour_faults",
                  {name: f.kinds[0] for name, f in behaviour_faults.FAULTS.items()}),
}

FAILED_ITEM = re.compile(r"^FAILED \S*test_fidelity\[([^\]]+)\]", re.M)
REPORTED_BY = re.compile(r"^\s+\[([a-z_]+)\] ", re.M)


def time_to_first_finding(root: Path, plugin: str, fault: str,
                          seed: int) -> tuple[float, int, str]:
    """Wall seconds, exit status and the failed item of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pytest", "-p", plugin, "--metafidelity",
                   "-x", "-q", "-p", "no:cacheprovider", f"--hypothesis-seed={seed}",
                   f"--rootdir={tmp}"]
        env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{ROOT / 'benchmarks'}",
                   **{FAULT_VARIABLE: fault})
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        found = FAILED_ITEM.search(done.stdout)
        if not found:
            return wall, done.returncode, ""
        # which checks reported (a behaviour fault must be found by the behaviour check)
        checks = sorted(set(REPORTED_BY.findall(done.stdout)))
        item = f"{found.group(1)} [{','.join(checks)}]"
        stock = fails_without_the_fault(Path(tmp), found.group(1), root)
        if stock:
            return wall, done.returncode, f"{NOT_THE_FAULTS} {item}: {stock}"
        return wall, done.returncode, item


# What a run stopped by a failure that is not the fault's reports instead of an item.
NOT_THE_FAULTS = "not the fault's:"


def fails_without_the_fault(tmp: Path, item: str, root: Path) -> str:
    """Why the failure of ``item`` is not the fault's (its reproducer fails
    on stock torch, with the fault not injected), or ""."""
    reproducers = sorted((tmp / "metafidelity-reproducers").glob(f"{item}-*.py"))
    if not reproducers:
        return ""  # (nothing to replay: counted as the fault's)
    env = {k: v for k, v in os.environ.items() if k != FAULT_VARIABLE}
    env["PYTHONPATH"] = str(root)
    replay = subprocess.run([sys.executable, str(reproducers[0])], cwd=tmp, env=env,
                            capture_output=True, text=True, timeout=300)
    return "its reproducer fails without the fault" if replay.returncode != 0 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("faults", nargs="*", metavar="FAULT",
                        help="default: all of the set's faults")
    parser.add_argument("--set", choices=tuple(SETS), default="describer",
                        help="describer: converter_faults.py (every static check sees them); "
                             "behaviour: behaviour_faults.py (only the behaviour check can)")
    parser.add_argument("--baseline", help="a commit to time side by side with this checkout")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    plugin, faults = SETS[args.set]
    unknown = [f for f in args.faults if f not in faults]
    if unknown:
        parser.error(f"no such fault: {', '.join(unknown)}; expected some of {', '.join(faults)}")
    args.faults = args.faults or list(faults)
    with checkouts(args.baseline) as roots:
        times: dict[str, list[float]] = {label: [] for label in roots}
        missed: dict[str, list[str]] = {label: [] for label in roots}
        for fault in args.faults:
            for label, root in roots.items():
                wall, status, item = time_to_first_finding(root, plugin, fault, args.seed)
                if item and not item.startswith(NOT_THE_FAULTS):
                    times[label].append(wall)
                else:
                    missed[label].append(fault)
                print(f"{fault:32} {label:26} {wall:6.1f} s  exit {status}  "
                      f"{item or 'MISSED'}  (first kind: {faults[fault]})", flush=True)
        for label, ts in times.items():
            figures = (f": median {statistics.median(ts):.1f} s, slowest {max(ts):.1f} s"
                       if ts else "")
            print(f"{label:26} found {len(ts)}/{len(args.faults)}{figures}"
                  + (f"; missed {', '.join(missed[label])}" if missed[label] else ""))

if __name__ == "__main__":
    main()
