"""Drafts of upstream bug reports for the registry's unfiled entries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_metafidelity import known_differences as kd
from pytest_metafidelity import upstream


def test_only_unfiled_upstream_bugs_are_drafted() -> None:
    drafted = upstream.unfiled_entries()
    assert drafted
    assert all(not e.by_design and not e.link.startswith("https://") for e in drafted)
    linked = [e for e in kd.KNOWN_DIFFERENCES if not e.by_design and not e.unfiled]
    assert linked and not set(map(id, linked)) & set(map(id, drafted))


@pytest.mark.parametrize("entry", upstream.unfiled_entries(), ids=lambda e: e.id)
def test_draft_carries_the_reproducer_versions_and_related_threads(entry: kd.KnownDifference) -> None:
    text = upstream.draft_issue(entry, torch_version="9.9.9")
    assert text.startswith("# [fake tensor] ")
    assert len(upstream.title(entry)) <= 125
    assert f"```python\n{entry.reproducer.rstrip()}\n```" in text
    assert f"`{entry.id}`" in text and "torch 9.9.9" in text
    for url in entry.related:
        assert f"- {url}" in text
    if entry.since:
        assert f">= {entry.since}" in text


def test_a_draft_names_the_converters_and_the_capabilities_that_chose_them() -> None:
    from pytest_metafidelity.converters import available_converters, where

    entry = kd.by_id("dynamic-zero-byte-scalar-item")
    assert entry.converters == where(symbolic=True, carries_real=False)
    names = [n for n in available_converters() if n in entry.converters]
    assert "fake-dynamic" in names and "fake" not in names
    said = (", ".join(f"`{n}`" for n in names)
            + " (the converters where symbolic=True, carries_real=False)")
    assert upstream.converters_said(entry) == said
    assert f"converters: {said})" in upstream.draft_issue(entry, torch_version="9.9.9")
    named = kd.KnownDifference(id="x", check="metadata", attribute="x", applies=bool,
                               reason="x", link=kd.UNFILED, converters=("meta", "fake"))
    assert upstream.converters_said(named) == "`meta`, `fake`"


def test_main_prints_one_draft_per_unfiled_entry(capsys: pytest.CaptureFixture[str]) -> None:
    assert upstream.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n# [fake tensor] ") == len(upstream.unfiled_entries())


def test_main_prints_the_named_drafts(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = upstream.unfiled_entries()[:2]
    assert upstream.main([second.id, first.id]) == 0
    out = capsys.readouterr().out
    assert out.count("\n# [fake tensor] ") == 2
    assert out.index(f"`{second.id}`") < out.index(f"`{first.id}`")


@pytest.mark.parametrize("entry_id, message", [
    ("no-such-entry", "unknown known-difference id 'no-such-entry'; unfiled entries: "),
    ("sparse-nnz", "sparse-nnz is by design; nothing to file"),
    ("fake-grad-dtype-dropped", "is already reported: https://github.com/pytorch/pytorch/pull/"),
])
def test_main_refuses_ids_with_nothing_to_file(
    entry_id: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upstream.main([entry_id]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_module_runs_as_a_command() -> None:
    entry = upstream.unfiled_entries()[0]
    proc = subprocess.run([sys.executable, "-m", "pytest_metafidelity.upstream", entry.id],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert entry.reproducer.rstrip() in proc.stdout
