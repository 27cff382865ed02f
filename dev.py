#!/usr/bin/env python3
"""Developer entry point: the README's two commands, and the oldest-torch run.

    python3 dev.py fidelity [PYTEST ARGS...]     # pytest --metafidelity (the main job)
    python3 dev.py test [PYTEST ARGS...]         # the project's own tests (pytest-xdist, -n auto)
    python3 dev.py test-oldest [PYTEST ARGS...]  # the same tests on the oldest supported torch
    python3 dev.py types [MYPY ARGS...]          # the type checker over the modules CI checks

On first use ``fidelity`` and ``test`` create a project-local virtual
environment in .venv with the pinned dev dependencies (requirements-dev.txt:
torch==2.13.0, CPU build) and this package installed in editable mode.
``test-oldest`` does the same in .venv-oldest with the oldest torch that
pyproject.toml admits (torch>=2.11: torch==2.11.0, a CUDA build of several
GB from PyPI, which runs on the CPU).  When the disk has less than
OLDEST_FREE_GB free or the registry cannot provide that torch, test-oldest
says why and exits with status 75, which CI reports as a skip.
An environment is reinstalled only when its inputs change.  Needs nothing
but python3 and access to the package registries.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = ROOT / "requirements-dev.txt"
PYPROJECT = ROOT / "pyproject.toml"
# Every test ends: one still running after 10 minutes (the slowest takes about
# one) fails with every thread's stack, and its worker is replaced, instead of
# holding the run until CI's own limit.  The processes tests start have their
# own limit (tests/process_time_limits.py).
TESTS = ["-m", "pytest", "-n", "auto", "--timeout=600", "--timeout-method=thread"]
COMMANDS = {
    "fidelity": ["-m", "pytest", "--metafidelity"],
    "test": TESTS,
    "test-oldest": TESTS,
    # mypy over the files pyproject.toml's [tool.mypy] lists (CI runs it).
    "types": ["-m", "mypy"],
}
OLDEST_FREE_GB = 12  # the CUDA build of torch and its libraries, plus pip's cache
# Exit status of test-oldest when its environment cannot be set up (EX_TEMPFAIL;
# pytest never exits with it).
UNAVAILABLE = 75


def oldest_torch() -> str:
    """The oldest torch pyproject.toml admits, as an exact version."""
    match = re.search(r'"torch>=([0-9.]+)"', PYPROJECT.read_text())
    if match is None:
        raise SystemExit("dev.py: no 'torch>=X.Y' requirement in pyproject.toml")
    version = match.group(1)
    return version if version.count(".") >= 2 else version + ".0"


def requirements(command: str) -> list[str]:
    lines = [line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    lines = [line for line in lines if line]
    if command == "test-oldest":
        lines = [f"torch=={oldest_torch()}" if re.match(r"torch\b", line) else line
                 for line in lines]
    return lines


def venv_dir(command: str) -> Path:
    return ROOT / (".venv-oldest" if command == "test-oldest" else ".venv")


def venv_python(directory: Path) -> Path:
    return directory / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def fingerprint(reqs: list[str]) -> str:
    digest = hashlib.sha256("\n".join(reqs).encode())
    digest.update(PYPROJECT.read_bytes())
    return digest.hexdigest()


def ensure_environment(command: str) -> Path:
    directory, reqs = venv_dir(command), requirements(command)
    python, stamp = venv_python(directory), directory / ".metafidelity-installed"
    if not python.exists():
        print(f"dev.py: creating {directory} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(directory)
    if not stamp.exists() or stamp.read_text() != fingerprint(reqs):
        print(f"dev.py: installing {', '.join(reqs)} and this package (editable) ...", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, *reqs], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
        stamp.write_text(fingerprint(reqs))
    return python


def free_gb(path: Path) -> float:
    return shutil.disk_usage(path).free / 2**30


def oldest_environment() -> Path | None:
    """.venv-oldest, or None (with the reason on stderr) when this machine
    has no room for it or the registry cannot provide it."""
    if not venv_python(venv_dir("test-oldest")).exists():
        free = free_gb(ROOT)
        if free < OLDEST_FREE_GB:
            print(f"dev.py: test-oldest needs {OLDEST_FREE_GB} GB free for torch=={oldest_torch()} "
                  f"(a CUDA build); {free:.1f} GB free here", file=sys.stderr)
            return None
    try:
        return ensure_environment("test-oldest")
    except subprocess.CalledProcessError as e:
        print(f"dev.py: test-oldest could not install its environment ({' '.join(e.cmd[-3:])} "
              f"exited {e.returncode})", file=sys.stderr)
        return None


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        print(f"\ndev.py: expected one of {', '.join(COMMANDS)}; got {argv[:1] or 'nothing'}",
              file=sys.stderr)
        return 2
    command = argv[0]
    if command == "test-oldest":
        python = oldest_environment()
        if python is None:
            return UNAVAILABLE
    else:
        python = ensure_environment(command)
    return subprocess.run([str(python), *COMMANDS[command], *argv[1:]], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
