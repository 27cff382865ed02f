#!/usr/bin/env python3
"""Developer entry point: the README's two commands.

    python3 dev.py fidelity [PYTEST ARGS...]   # pytest --metafidelity (the main job)
    python3 dev.py test [PYTEST ARGS...]       # the project's own tests (pytest-xdist, -n auto)

On first use it creates a project-local virtual environment in .venv with the
pinned dev dependencies (requirements-dev.txt: torch==2.13.0, CPU build) and
this package installed in editable mode.  It reinstalls only when
requirements-dev.txt or pyproject.toml change.  Needs nothing but python3 and
access to the package registries.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".metafidelity-installed"
INPUTS = (ROOT / "requirements-dev.txt", ROOT / "pyproject.toml")
COMMANDS = {
    "fidelity": ["-m", "pytest", "--metafidelity"],
    "test": ["-m", "pytest", "-n", "auto"],
}


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in INPUTS:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_environment() -> Path:
    python = venv_python()
    if not python.exists():
        print(f"dev.py: creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    if not STAMP.exists() or STAMP.read_text() != fingerprint():
        print("dev.py: installing requirements-dev.txt and this package (editable) ...", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "-r", str(ROOT / "requirements-dev.txt")], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
        STAMP.write_text(fingerprint())
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        print(f"\ndev.py: expected one of {', '.join(COMMANDS)}; got {argv[:1] or 'nothing'}",
              file=sys.stderr)
        return 2
    python = ensure_environment()
    command = [str(python), *COMMANDS[argv[0]], *argv[1:]]
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
