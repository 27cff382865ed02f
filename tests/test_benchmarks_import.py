"""Every benchmark script imports against the package as it is now: a
renamed or removed name breaks the test, not the next person who measures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py"))


def test_there_are_benchmark_scripts() -> None:
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_a_benchmark_script_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As run: its own directory first on the path (scripts import each other).
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"_benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs nothing: each script's work is under __main__
    if '__name__ == "__main__"' in script.read_text():  # a script, not a helper module
        assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
