"""Wall time and examples/s: ``hypothesis fuzz`` on the suite, and the suite
in shards.

    .venv/bin/python benchmarks/hypofuzz_and_shards.py [FUZZ_SECONDS] [EXAMPLES] [SHARDS] [PYTEST ARGS...]

* ``hypothesis fuzz --no-dashboard -n <cores> -- --metafidelity ...`` runs for
  FUZZ_SECONDS (default 120) of wall time, then is stopped; the examples its
  workers ran are read back from the example database (HypoFuzz's reports,
  :func:`pytest_metafidelity.hypofuzz_runs.fuzzed_examples`).  Needs HypoFuzz
  (``pip install 'pytest-metafidelity[fuzz]'``, non-commercial licence).
* ``pytest --metafidelity --metafidelity-shard=I/SHARDS`` for I = 1..SHARDS
  (default 2), one after the other, EXAMPLES (default 20) examples per item
  and one seed; the examples are read from each shard's JSON report.

Every run happens in a fresh temporary directory (its own example database).
It prints, per run: wall seconds, examples, examples/s.  Extra PYTEST ARGS
(e.g. ``--metafidelity-kinds=dense,view``) go to every run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "METAFIDELITY_"))}


def fuzz(seconds: float, args: list[str]) -> None:
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as cwd:
        pytest_args = ["--metafidelity", "-p", "no:cacheprovider", *args]
        started = time.monotonic()
        process = subprocess.Popen(
            [str(BIN / "hypothesis"), "fuzz", "--no-dashboard", "-n", str(cores), "--",
             *pytest_args], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
        finally:
            os.killpg(process.pid, signal.SIGTERM)
        wall = time.monotonic() - started
        output = process.communicate(timeout=60)[0]
        result = subprocess.run(
            [sys.executable, "-m", "pytest_metafidelity.hypofuzz_runs", *pytest_args], cwd=cwd,
            env=_env(), capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"could not read HypoFuzz's results:\n{output[-2000:]}\n{result.stderr[-2000:]}")
        found = json.loads(result.stdout.splitlines()[-1])
    examples = sum(r["examples"] for r in found.values())
    fuzzed = sum(1 for r in found.values() if r["examples"])
    failures = sum(r["failures"] + r["fatal"] for r in found.values())
    print(f"hypothesis fuzz -n {cores}: {wall:.0f} s wall (collection included), "
          f"{len(found)} targets ({fuzzed} reached), {examples} examples, "
          f"{examples / wall:.1f} examples/s, {failures} failing target(s)")


def shards(n: int, examples: int, args: list[str]) -> None:
    total_examples, total_wall = 0, 0.0
    with tempfile.TemporaryDirectory() as cwd:
        for i in range(1, n + 1):
            report = Path(cwd) / f"shard-{i}.json"
            started = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "pytest", "--metafidelity", f"--metafidelity-shard={i}/{n}",
                 f"--metafidelity-examples={examples}", "--hypothesis-seed=1", "-q",
                 "-p", "no:cacheprovider", f"--metafidelity-report={report}", *args],
                cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.monotonic() - started
            doc = json.loads(report.read_text())
            done = sum(item["counts"].get("examples", 0) for item in doc["items"])
            total_examples, total_wall = total_examples + done, total_wall + wall
            print(f"pytest --metafidelity-shard={i}/{n}: {wall:.0f} s wall, {len(doc['items'])} "
                  f"items, {done} examples, {done / wall:.1f} examples/s")
    print(f"shards together: {total_wall:.0f} s wall, {total_examples} examples, "
          f"{total_examples / total_wall:.1f} examples/s")


def main(argv: list[str]) -> None:
    seconds = float(argv[0]) if argv else 120.0
    examples = int(argv[1]) if len(argv) > 1 else 20
    n = int(argv[2]) if len(argv) > 2 else 2
    args = argv[3:]
    if not (BIN / "hypothesis").exists():
        print("hypothesis fuzz: not measured (hypofuzz is not installed)")
    else:
        fuzz(seconds, args)
    shards(n, examples, args)


if __name__ == "__main__":
    main(sys.argv[1:])
