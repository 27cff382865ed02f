"""examples/github-nightly.yml: it parses, refers only to options that exist,
runs only commands the README documents, and its pytest and report commands
work here (on a few kinds, converters and examples)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from process_time_limits import run_limited

from pytest_metafidelity import databases
from pytest_metafidelity.options import OPTIONS

yaml = pytest.importorskip("yaml", reason="pyyaml is not installed (requirements-dev.txt)")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_TEXT = (ROOT / "examples" / "github-nightly.yml").read_text()
WORKFLOW = yaml.safe_load(WORKFLOW_TEXT)
README = (ROOT / "README.md").read_text()
README_LINES = [line.strip() for _, body in re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
                for line in body.splitlines()]
# GitHub's expressions, as this test evaluates them.
EXPRESSIONS = {"github.repository": "owner/repo", "secrets.GITHUB_TOKEN": "", "github.token": ""}
# A few items, so that the 4 shards all have some; 2 examples each.
QUICK_ENV = {"METAFIDELITY_KINDS": "dense,view,conj_neg,sparse_coo",
             "METAFIDELITY_CONVERTERS": "meta,fake", "METAFIDELITY_EXAMPLES": "2"}
PROGRAMS = ("python", "pytest", "gh")


def _evaluate(text: str, matrix: dict[str, Any]) -> str:
    def value(match: re.Match) -> str:
        expression = match.group(1).strip()
        if expression.startswith("matrix."):
            return str(matrix[expression.removeprefix("matrix.")])
        assert expression in EXPRESSIONS, f"unexpected expression ${{{{ {expression} }}}}"
        return EXPRESSIONS[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", value, str(text))


def _steps() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(job name, job, step) of every step that runs a shell command."""
    return [(name, job, step) for name, job in WORKFLOW["jobs"].items()
            for step in job["steps"] if "run" in step]


def _commands(script: str) -> list[str]:
    """The command lines of a run script: from the first program named on
    each line (``number=$(gh ...)`` included), shell syntax left out."""
    out = []
    for line in script.splitlines():
        match = re.search(r"(?:^|\$\()\s*((?:%s)\b.*)" % "|".join(PROGRAMS), line.strip())
        if match:
            out.append(re.sub(r"\)$", "", match.group(1).strip()))
    return out


def _shape(command: str) -> tuple[Any, ...]:
    """What a command is, regardless of its values: the program and its
    subcommand words, and the set of option names."""
    words = shlex.split(command)
    head = []
    for w in words:
        if w.startswith("-") and w != "-m" or "/" in w or "$" in w or "=" in w or '"' in w:
            break
        head.append(w)
    options = frozenset(w.split("=")[0] for w in words if w.startswith("-") and w != "-m")
    return tuple(head), options


def _env(job: dict[str, Any], step: dict[str, Any], matrix: dict[str, Any]) -> dict[str, str]:
    merged = {**WORKFLOW.get("env", {}), **job.get("env", {}), **step.get("env", {})}
    return {k: _evaluate(v, matrix) for k, v in merged.items()}


def test_workflow_is_a_nightly_with_cpu_shards_a_gpu_job_and_a_report() -> None:
    triggers = WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads "on" as True
    assert triggers["schedule"][0]["cron"]
    jobs = WORKFLOW["jobs"]
    shards = jobs["cpu"]["strategy"]["matrix"]["shard"]
    assert jobs["cpu"]["env"]["SHARD"] == f"${{{{ matrix.shard }}}}/{len(shards)}"
    assert shards == list(range(1, len(shards) + 1)) and len(shards) >= 2
    assert "self-hosted" in jobs["gpu"]["runs-on"] and "gpu" in jobs["gpu"]["runs-on"]
    assert any("--metafidelity-devices=cuda" in s["run"] for s in jobs["gpu"]["steps"] if "run" in s)
    assert set(jobs["report"]["needs"]) == {"cpu", "gpu"}
    uploads = [s["with"]["name"] for s in jobs["report"]["steps"]
               if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    # The database the shards read is the one the report job uploads.
    specs = databases.parse(_evaluate(WORKFLOW["env"]["METAFIDELITY_DATABASE"], {}))
    assert [s.kind for s in specs] == ["directory", "github-artifact"]
    assert specs[1].artifact in uploads and specs[1].read_only
    assert "metafidelity-nightly-report" in uploads
    assert any("gh issue create" in s["run"] for s in jobs["report"]["steps"] if "run" in s)


def test_workflow_refers_only_to_options_that_exist() -> None:
    flags = {"--" + name.replace("_", "-") for name, _, _, _ in OPTIONS}
    envs = {env for _, env, _, _ in OPTIONS}
    used_flags = set(re.findall(r"--metafidelity[a-z-]*", WORKFLOW_TEXT))
    used_envs = set(re.findall(r"\bMETAFIDELITY_[A-Z_]+", WORKFLOW_TEXT))
    assert used_flags and used_flags <= flags, used_flags - flags
    assert used_envs and used_envs <= envs, used_envs - envs


def test_every_workflow_command_is_documented_in_the_readme() -> None:
    documented = {_shape(c) for line in README_LINES for c in _commands(line)}
    commands = [c for _, _, step in _steps() for c in _commands(step["run"])]
    assert len(commands) >= 10
    for command in commands:
        assert _shape(command) in documented, f"not in the README: {command}"


def _run_step(job_name: str, step_name: str, cwd: Path, matrix: dict[str, Any],
              programs: Path | None = None) -> Any:
    """Run the step's script here; ``programs``: a folder searched first
    for its programs."""
    job = WORKFLOW["jobs"][job_name]
    (step,) = [s for s in job["steps"] if s.get("name") == step_name]
    env = {**os.environ, **_env(job, step, matrix), **QUICK_ENV}
    # Offline here: the shards' own directory database, not the artifact one.
    env["METAFIDELITY_DATABASE"] = ".hypothesis/metafidelity-db"
    env["PATH"] = os.pathsep.join([*([str(programs)] if programs else []),
                                   str(Path(sys.executable).parent), env["PATH"]])
    env.pop("PYTEST_ADDOPTS", None)
    return run_limited(["bash", "-euo", "pipefail", "-c", _evaluate(step["run"], matrix)],
                       cwd=cwd, env=env)


# Neither is reachable from here: PyTorch's index of CPU wheels, and
# pytest-metafidelity on PyPI (not published yet).
PYTORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu "
PACKAGE = re.compile(r'"pytest-metafidelity\[([\w,]+)\]"')


def test_every_jobs_install_step_resolves_here(wheel: Path) -> None:
    """Each job's ``pip install`` line as pip resolves it here
    (``--dry-run``, into this environment): the package from this
    checkout's wheel instead of PyPI, with the extras the line asks for, and
    without PyTorch's CPU index, which only makes pip pick torch's smaller
    CPU build."""
    steps = [(name, job, step) for name, job, step in _steps() if "pip install" in step["run"]]
    assert {name for name, _, _ in steps} == set(WORKFLOW["jobs"])
    archive = zipfile.ZipFile(wheel)
    metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    extras = {line.split(":", 1)[1].strip()
              for line in archive.read(metadata).decode().splitlines()
              if line.startswith("Provides-Extra:")}
    for name, job, step in steps:
        matrix = {k: v[0] for k, v in job.get("strategy", {}).get("matrix", {}).items()}
        script = _evaluate(step["run"], matrix)
        asked = PACKAGE.findall(script)
        assert asked and set(",".join(asked).split(",")) <= extras, (name, asked, extras)
        local = PACKAGE.sub(lambda m: f'"pytest-metafidelity[{m.group(1)}] @ {wheel.as_uri()}"',
                            script.replace(PYTORCH_CPU_INDEX, ""))
        local = local.replace("pip install ", "pip install --dry-run ", 1)
        env = {**os.environ, **_env(job, step, matrix)}
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        done = run_limited(["bash", "-euo", "pipefail", "-c", local], env=env)
        assert done.returncode == 0, (name, local, done.stdout[-3000:], done.stderr[-3000:])
        assert "Would install" in done.stdout and "pytest-metafidelity" in done.stdout, (
            name, done.stdout[-3000:])


def test_workflow_commands_run_here(tmp_path: Path) -> None:
    shards = WORKFLOW["jobs"]["cpu"]["strategy"]["matrix"]["shard"]
    for shard in shards:
        result = _run_step("cpu", "Fuzz one shard", tmp_path, {"shard": shard})
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert (tmp_path / "out" / f"cpu-{shard}.json").exists()
    gpu = _run_step("gpu", "Fuzz on the GPU", tmp_path, {})
    assert gpu.returncode == 0, gpu.stdout[-3000:] + gpu.stderr[-3000:]
    gpu_report = json.loads((tmp_path / "out" / "gpu.json").read_text())
    no_gpu = "cuda:0" in gpu_report["environment"]["skipped_devices"]
    if no_gpu:  # the GPU job on a machine without one: skipped, saying why
        assert "metafidelity: cuda:0 skipped: " in gpu.stdout and gpu_report["items"] == []
    for step in ("Merge the shard reports", "Render the page",
                 "List the failures the previous night did not have"):
        result = _run_step("report", step, tmp_path, {})
        assert result.returncode == 0, (step, result.stdout[-3000:], result.stderr[-3000:])
    merged = json.loads((tmp_path / "merged" / "nightly.json").read_text())
    items = {(i["kind"], i["converter"]) for i in merged["items"]}
    assert len(items) == len(merged["items"]) >= 8  # every item once (the GPU's apart)
    assert len(merged["inputs"]) == len(shards) + 1
    assert merged["inputs"][-1]["skipped_devices"] == gpu_report["environment"]["skipped_devices"]
    page = (tmp_path / "merged" / "nightly.html").read_text()
    assert '<table id="heatmap">' in page
    for reason in gpu_report["environment"]["skipped_devices"].values():
        assert reason in page
    assert not (tmp_path / "merged" / "new-failures.md").exists()  # stock torch: none


# GitHub cannot be reached from here: a `gh` that records its command lines
# and answers `gh issue list` with the open issue's number, if any.
GH_RECORDER = """#!/bin/sh
printf '%s\\n' "$*" >> "$GH_CALLS"
if [ "$1 $2" = "issue list" ] && [ -f "$GH_OPEN_ISSUE" ]; then cat "$GH_OPEN_ISSUE"; fi
"""


@pytest.mark.parametrize("open_issue", ["", "42"])
def test_issue_step_opens_an_issue_or_comments_on_the_open_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_issue: str) -> None:
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "gh").write_text(GH_RECORDER)
    (programs / "gh").chmod(0o755)
    monkeypatch.setenv("GH_CALLS", str(tmp_path / "gh-calls"))
    monkeypatch.setenv("GH_OPEN_ISSUE", str(tmp_path / "open-issue"))
    if open_issue:
        (tmp_path / "open-issue").write_text(open_issue + "\n")
    (tmp_path / "merged").mkdir()
    (tmp_path / "merged" / "new-failures.md").write_text("# a new failure\n")
    (step,) = [s for s in WORKFLOW["jobs"]["report"]["steps"]
               if s.get("name") == "Open or update the issue"]
    assert "hashFiles('merged/new-failures.md')" in step["if"]
    result = _run_step("report", "Open or update the issue", tmp_path, {}, programs=programs)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "gh-calls").read_text().splitlines()
    assert calls[0] == "label create metafidelity-nightly --color B60205 --force"
    assert calls[1].startswith("issue list --label metafidelity-nightly --state open")
    if open_issue:
        assert calls[2:] == ["issue comment 42 --body-file merged/new-failures.md"]
    else:
        assert calls[2:] == ["issue create --title metafidelity nightly: new fakeification "
                             "failures --label metafidelity-nightly --body-file "
                             "merged/new-failures.md"]
