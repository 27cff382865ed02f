"""dev.py: the README's commands and the oldest-torch environment."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def dev() -> Any:
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_oldest_torch_is_the_lower_bound_of_the_package_requirement(dev: Any) -> None:
    assert '"torch>=2.11"' in (ROOT / "pyproject.toml").read_text()
    assert dev.oldest_torch() == "2.11.0"
    oldest, pinned = dev.requirements("test-oldest"), dev.requirements("test")
    assert "torch==2.11.0" in oldest and "torch==2.13.0" in pinned
    assert [r for r in oldest if not r.startswith("torch")] == \
        [r for r in pinned if not r.startswith("torch")]


def test_oldest_environment_without_room_is_unavailable(
    dev: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dev, "venv_dir", lambda command: tmp_path / "absent")
    monkeypatch.setattr(dev, "free_gb", lambda path: 1.5)
    monkeypatch.setattr(dev, "ensure_environment", lambda command: pytest.fail("installed"))
    assert dev.main(["test-oldest"]) == dev.UNAVAILABLE == 75
    assert "needs 12 GB free for torch==2.11.0 (a CUDA build); 1.5 GB free here" in \
        capsys.readouterr().err


def test_oldest_environment_the_registry_cannot_provide_is_unavailable(
    dev: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def pip_fails(command: str) -> Any:
        raise subprocess.CalledProcessError(1, ["python", "-m", "pip", "install", "torch==2.11.0"])

    monkeypatch.setattr(dev, "venv_dir", lambda command: tmp_path / "absent")
    monkeypatch.setattr(dev, "free_gb", lambda path: 100.0)
    monkeypatch.setattr(dev, "ensure_environment", pip_fails)
    assert dev.main(["test-oldest"]) == 75
    assert "could not install its environment (pip install torch==2.11.0 exited 1)" in \
        capsys.readouterr().err


def test_unknown_command_lists_the_commands() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "dev.py"), "nope"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "expected one of fidelity, test, test-oldest, types; got ['nope']" in proc.stderr
