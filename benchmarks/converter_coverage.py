"""Branch coverage of torch's conversion code by a run of the suite.

    .venv/bin/python benchmarks/converter_coverage.py [--seed N] [--keep DIR] [PYTEST ARGS ...]
    .venv/bin/python benchmarks/converter_coverage.py --from-data DIR/.coverage

Runs ``pytest --metafidelity`` (default: the ``dev`` profile's 40 s run;
extra arguments go to pytest, e.g. ``--metafidelity-examples=10``, the
measurement that does not depend on the machine's load) with
``--hypothesis-seed`` (default 0) in a fresh directory (no example
database, no cache) under coverage.py with branch coverage, following the
xdist worker that runs the suite and any process it starts, and measuring
only the conversion code of the installed torch
(``benchmarks/converter_arcs.py``: the describer, ``MetaConverter``, and the
fake-tensor layer over it).  It prints, per function, the branch arcs
covered out of all; every arc not covered, with its source lines and its
verdict from ``benchmarks/converter_coverage_verdicts.json`` (reachable on
this machine's CPU or not, and why); the totals, over all arcs and over
those reachable on the CPU; and the uncovered reachable arcs grouped by
reason.  The verdict file has a verdict for every arc of the torch it names,
so an arc shown with "no verdict" is new or changed in the installed torch.
Coverage data stays in a temporary directory; ``--keep DIR`` keeps the
combined data file, which ``--from-data`` reports again without a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from converter_arcs import (  # noqa: E402
    Arc,
    ArcKey,
    Function,
    branch_arcs,
    conversion_functions,
    keyed_arcs,
    statement_arcs,
)

VERDICTS = ROOT / "benchmarks" / "converter_coverage_verdicts.json"
NO_VERDICT = "no verdict"


def load_verdicts(path: Path = VERDICTS) -> tuple[dict[str, dict], dict[ArcKey, dict]]:
    """The reasons (name -> {"reachable_on_cpu", "meaning"}) and the verdicts
    by arc key.  Raises ValueError naming a verdict whose reason is unknown,
    or a key given twice."""
    document = json.loads(path.read_text())
    reasons = document["reasons"]
    for name, reason in reasons.items():
        if not isinstance(reason.get("reachable_on_cpu"), bool) or not reason.get("meaning"):
            raise ValueError(f"{path}: reason {name!r} needs a boolean 'reachable_on_cpu' "
                             f"and a 'meaning'; got {reason!r}")
    verdicts: dict[ArcKey, dict] = {}
    for verdict in document["verdicts"]:
        key = ArcKey(verdict["function"], verdict["branch"], verdict["destination"],
                     verdict.get("occurrence", 1))
        if verdict["reason"] not in reasons:
            raise ValueError(f"{path}: verdict {key} has reason {verdict['reason']!r}; "
                             f"expected one of {', '.join(reasons)}")
        if key in verdicts:
            raise ValueError(f"{path}: two verdicts for {key}")
        verdicts[key] = verdict
    return reasons, verdicts


def coverage_config(data_dir: Path, files: list[Path]) -> str:
    """coverage.py settings: branch coverage of ``files`` only, in every
    process the run starts (xdist workers, forked and spawned children),
    each writing its own data file in ``data_dir``."""
    include = "\n    ".join(str(f) for f in files)
    return (f"[run]\nbranch = True\nparallel = True\ndata_file = {data_dir / '.coverage'}\n"
            f"include =\n    {include}\npatch =\n    subprocess\n    fork\n    _exit\n")


def run_suite(pytest_args: list[str], data_dir: Path, files: list[Path], seed: int) -> int:
    """Run ``pytest --metafidelity`` under coverage in a fresh directory (no
    example database, no cache); its exit status."""
    rcfile = data_dir / "coveragerc"
    rcfile.write_text(coverage_config(data_dir, files))
    with tempfile.TemporaryDirectory() as workdir:
        command = [sys.executable, "-m", "coverage", "run", f"--rcfile={rcfile}",
                   "-m", "pytest", "--metafidelity", "-q", "-p", "no:cacheprovider",
                   f"--rootdir={workdir}", f"--hypothesis-seed={seed}", *pytest_args]
        print("$", " ".join(command[3:]), flush=True)
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True)
    tail = done.stdout.strip().splitlines()[-1:] or done.stderr.strip().splitlines()[-1:]
    print(f"pytest exited {done.returncode}: {tail[0] if tail else '(no output)'}", flush=True)
    if done.returncode not in (0, 1):  # 1: failures found, the run still ran the suite
        raise SystemExit(f"converter_coverage: the run did not run the suite (pytest exit status "
                         f"{done.returncode}); its output ends:\n"
                         + "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:]))
    return done.returncode


def combine(data_dir: Path, keep: Path | None) -> Path:
    """One data file from those of every process of the run (copied into
    ``keep`` too when given)."""
    import coverage

    data_file = data_dir / ".coverage"
    cov = coverage.Coverage(data_file=str(data_file), config_file=str(data_dir / "coveragerc"))
    cov.combine(data_paths=[str(data_dir)])
    cov.save()
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(data_file, keep / ".coverage")
    return data_file


def executed_arcs(data_file: Path, files: list[Path]) -> dict[Path, set[tuple[int, int]]]:
    """The arcs each of ``files`` ran, as the tracer saw them."""
    import coverage

    if not data_file.is_file():
        raise SystemExit(f"converter_coverage: no coverage data file at {data_file}")
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    measured = {os.path.realpath(name): name for name in data.measured_files()}
    return {f: set(data.arcs(measured[str(f)]) or ()) if str(f) in measured else set()
            for f in files}


def verdict_of(arc: Arc, reasons: dict, verdicts: dict) -> tuple[str, bool | None, str]:
    """(reason, reachable on the CPU or None when unknown, why)."""
    verdict = verdicts.get(arc.key)
    if verdict is None:
        return NO_VERDICT, None, ""
    return verdict["reason"], reasons[verdict["reason"]]["reachable_on_cpu"], verdict["why"]


def describe(arc: Arc, lines: list[str]) -> str:
    """``line->destination  branch source line  =>  destination source line``."""
    branch = lines[arc.line - 1].strip()
    if arc.destination < 0:
        to = f"exit from: {lines[-arc.destination - 1].strip()}"
    else:
        to = lines[arc.destination - 1].strip()
    return f"{arc.line:5d}->{abs(arc.destination):<5d} {branch[:64]}  =>  {to[:56]}"


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else f"{part}/0"


def report(functions: list[Function], measured: dict[Path, set[tuple[int, int]]]) -> None:
    """Print the figures, the uncovered arcs with their verdicts, and the
    totals, for the arcs ``measured`` per file."""
    reasons, verdicts = load_verdicts()
    sources = {f.path: f.path.read_text() for f in functions}
    lines = {f: sources[f.path].splitlines() for f in functions}
    possible = {path: branch_arcs(source) for path, source in sources.items()}
    executed = {path: statement_arcs(sources[path], measured[path]) for path in sources}
    arcs = {f: keyed_arcs(f, sources[f.path], possible[f.path]) for f in functions}
    covered = {f: [a for a in arcs[f] if (a.line, a.destination) in executed[f.path]]
               for f in functions}
    uncovered = {f: [a for a in arcs[f] if (a.line, a.destination) not in executed[f.path]]
                 for f in functions}

    print(f"\n{'function':42} branch arcs covered")
    for f in functions:
        print(f"{f.name:42} {percent(len(covered[f]), len(arcs[f]))}")

    print("\nuncovered branch arcs (line->destination, branch => destination: verdict)")
    by_reason: dict[str, list[tuple[Function, Arc]]] = defaultdict(list)
    unreachable: Counter[str] = Counter()
    for f in functions:
        if uncovered[f]:
            print(f"{f.name}:")
        for arc in uncovered[f]:
            reason, reachable, why = verdict_of(arc, reasons, verdicts)
            where = {True: "reachable on CPU: ", False: "not reachable on CPU: ", None: ""}
            print(f"  {describe(arc, lines[f])}\n        {where[reachable]}{reason}"
                  + (f" -- {why}" if why else ""))
            if reachable is False:
                unreachable[reason] += 1
            else:
                by_reason[reason].append((f, arc))

    contradicted = [(f, a) for f in functions for a in covered[f]
                    if verdict_of(a, reasons, verdicts)[1] is False]
    known = {a.key for f in functions for a in arcs[f]}
    stale = [key for key in verdicts if key not in known]

    total = sum(len(a) for a in arcs.values())
    done = sum(len(c) for c in covered.values())
    reachable_total = total - sum(unreachable.values())
    print(f"\ncovered: {percent(done, total)} branch arcs")
    kinds = ", ".join(f"{reason} {n}" for reason, n in unreachable.most_common())
    print(f"reachable on CPU covered: {percent(done, reachable_total)} "
          f"(not reachable: {sum(unreachable.values())}" + (f": {kinds})" if kinds else ")"))
    if NO_VERDICT in by_reason:
        print(f"  counted as reachable: {len(by_reason[NO_VERDICT])} uncovered arcs with "
              f"{NO_VERDICT} (new or changed in this torch?)")
    print("\nuncovered and reachable on CPU, by reason:")
    for reason, listed in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        print(f"  {reason} ({len(listed)}):")
        for f, arc in listed:
            print(f"    {f.name:38} {describe(arc, lines[f])}")
    if contradicted:
        print(f"\nverdicts the run contradicts (covered, yet 'not reachable'): "
              f"{len(contradicted)}")
        for f, arc in contradicted:
            print(f"  {f.name:38} {describe(arc, lines[f])}")
    if stale:
        print(f"\nverdicts matching no arc of this torch: {len(stale)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], allow_abbrev=False,
        epilog="Arguments it does not know go to pytest, e.g. --metafidelity-examples=10.")
    parser.add_argument("--seed", type=int, default=0, help="--hypothesis-seed (default 0)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the combined coverage data file in DIR")
    parser.add_argument("--from-data", type=Path, metavar="FILE",
                        help="run nothing: report the data file a run kept (--keep)")
    args, pytest_args = parser.parse_known_args()
    functions = conversion_functions()
    files = list(dict.fromkeys(f.path for f in functions))
    import torch

    print(f"torch {torch.__version__} at {files[0].parent.parent}")
    if args.from_data:
        if pytest_args:
            parser.error(f"--from-data runs nothing; got pytest arguments {pytest_args}")
        executed = executed_arcs(args.from_data, files)
    else:
        with tempfile.TemporaryDirectory() as data_dir:
            run_suite(pytest_args, Path(data_dir), files, args.seed)
            executed = executed_arcs(combine(Path(data_dir), args.keep), files)
    report(functions, executed)


if __name__ == "__main__":
    main()
