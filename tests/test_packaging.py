"""The distribution: strategies ship under the package, never as `strategies`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_maps_strategies_under_the_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "pytest_metafidelity/strategies/__init__.py" in names
    assert "pytest_metafidelity/strategies/recipe.py" in names
    assert not any(n.startswith("strategies/") for n in names), names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[pytest11]" in text and "pytest_metafidelity.plugin" in text


def test_wheel_ships_every_source_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p.relative_to(ROOT).as_posix() for p in (ROOT / "pytest_metafidelity").rglob("*.py")]
    sources += ["pytest_metafidelity/strategies/" + p.relative_to(ROOT / "strategies").as_posix()
                for p in (ROOT / "strategies").rglob("*.py")]
    missing = sorted(set(sources) - names)
    assert not missing, f"modules left out of the wheel (pyproject packages?): {missing}"
    extra = sorted(n for n in names - set(sources) if n.endswith(".py"))
    assert not extra, f"modules in the wheel with no source: {extra}"


def test_wheel_imports_like_the_editable_install(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        check=True,
    )
    code = (
        "import pytest_metafidelity.strategies as s, pytest_metafidelity as p;"
        f"assert s.__file__.startswith({str(target)!r}), s.__file__;"
        "assert p.meta_tensors is s.meta_tensors;"
        "import importlib.util; assert importlib.util.find_spec('strategies') is None"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                   env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
