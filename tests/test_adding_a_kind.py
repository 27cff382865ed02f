"""Adding a kind touches its module (ours in ``strategies/``, or a user's
module registering with ``@kind``) and its row in the README: the suite
runs it, the shards balance it by the cost it declares, and the
``behaviour`` check runs programs on it exactly when it declares so."""

from __future__ import annotations

import ast
import pathlib
import re
from typing import Any, Iterator

import pytest

from pytest_metafidelity import shards
from pytest_metafidelity.strategies import Recipe
from pytest_metafidelity.strategies.kinds import (
    KIND_MODULES,
    all_kinds,
    kind,
    program_kinds,
    unregister_kind,
)
from pytest_metafidelity.strategies.programs import seeded_programs

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CONTEXT_NOTE = "(only inside a live level/mode)"


def readme_kind_table() -> dict[str, tuple[str, str]]:
    """{kind: (what it generates, programs)} from the README's kinds table."""
    section = README.split("## Tensor kinds", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `(\w+)` \| (.*) \| ([^|]*) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).strip())
    return rows


def table_disagreements() -> list[str]:
    table, kinds = readme_kind_table(), all_kinds()
    wrong = [f"{n}: not in the README's kinds table" for n in kinds if n not in table]
    wrong += [f"{n}: in the README's kinds table, not registered" for n in table if n not in kinds]
    for name, k in kinds.items():
        if name not in table:
            continue
        generates, programs = table[name]
        declared = "yes" if k.programs is True else k.programs
        if programs != declared:
            wrong.append(f"{name}: README says programs {programs!r}, the kind declares {declared!r}")
        if generates.endswith("(family)") != k.family:
            wrong.append(f"{name}: README marks it (family) {generates.endswith('(family)')}, "
                         f"the kind declares family={k.family}")
        if generates.endswith(CONTEXT_NOTE) != k.needs_context:
            wrong.append(f"{name}: README says {CONTEXT_NOTE} {generates.endswith(CONTEXT_NOTE)}, "
                         f"the kind declares needs_context={k.needs_context}")
    return wrong


def test_the_readme_table_lists_every_kind_as_declared() -> None:
    assert table_disagreements() == []
    # Not running programs is the exception, and each says why.
    assert len(program_kinds()) > 10


def test_every_module_of_ours_that_defines_a_kind_is_loaded() -> None:
    defining = set()
    for path in (ROOT / "strategies").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "kind":
                defining.add(path.stem)
    assert defining == set(KIND_MODULES)


# -- declarations -------------------------------------------------------------


def _draw_toy(draw: Any, b: Any, cfg: Any) -> list[str]:
    return [b.let("torch.arange(6.0).reshape(2, 3).t()")]


@pytest.fixture
def toys() -> Iterator[tuple[str, str]]:
    kind("toy_runs_programs", "a transposed float tensor (a test's kind)", cost_ms=40)(_draw_toy)
    kind("toy_no_programs", "the same (a test's kind)", programs="the toy says no",
         cost_ms=0.5)(_draw_toy)
    try:
        yield "toy_runs_programs", "toy_no_programs"
    finally:
        unregister_kind("toy_runs_programs")
        unregister_kind("toy_no_programs")


def test_a_kind_from_elsewhere_is_registered_after_ours(toys: tuple[str, str]) -> None:
    names = list(all_kinds())
    assert names[-2:] == list(toys)
    assert names[0] == "dense"  # still what shrinking prefers


def test_the_readme_table_must_document_a_registered_kind(toys: tuple[str, str]) -> None:
    assert sorted(table_disagreements()) == [
        "toy_no_programs: not in the README's kinds table",
        "toy_runs_programs: not in the README's kinds table",
    ]


def test_a_kind_costs_the_shards_what_it_declares(toys: tuple[str, str]) -> None:
    runs, no = toys
    for converter, factor in shards.CONVERTER_FACTOR.items():
        assert shards.estimated_cost(runs, converter) == 40 * factor
        assert shards.estimated_cost(no, converter) == 0.5 * factor


def test_programs_run_on_a_kind_exactly_when_it_declares_so(toys: tuple[str, str]) -> None:
    runs, no = toys
    assert runs in program_kinds() and no not in program_kinds()
    for name in toys:
        recipe = Recipe(("t0 = torch.arange(6.0).reshape(2, 3).t()",), ("t0",), kinds=(name,))
        drawn = seeded_programs(recipe, 3)
        if name == runs:
            assert len(drawn) == 3 and all(p.steps for p in drawn)
        else:
            assert [(p.steps, p.reason) for p in drawn] == [
                ((), "programs do not run on kind 'toy_no_programs': the toy says no")]


@pytest.mark.parametrize("declaration, message", [
    (dict(programs=False), "programs=False must be True .* or a non-empty str saying why"),
    (dict(programs=" "), "programs=' ' must be True"),
    (dict(programs=None), "programs=None must be True"),
    (dict(cost_ms=-1), "cost_ms=-1 must be a positive number of milliseconds per example, or None"),
    (dict(cost_ms=0), "cost_ms=0 must be a positive number"),
    (dict(cost_ms=float("nan")), "cost_ms=nan must be a positive number"),
    (dict(cost_ms=True), "cost_ms=True must be a positive number"),
    (dict(cost_ms="8"), "cost_ms='8' must be a positive number"),
    (dict(family="yes"), "family='yes' must be True or False"),
])
def test_a_bad_declaration_names_the_value_and_what_is_allowed(
        declaration: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r"@kind\('toy_bad'\): " + message):
        kind("toy_bad", "a bad declaration", **declaration)
    assert "toy_bad" not in all_kinds()


@pytest.mark.parametrize("name", ["", "toy-bad", "1toy", "toy,bad", None])
def test_a_bad_kind_name_is_refused(name: Any) -> None:
    with pytest.raises(ValueError, match=re.escape(f"@kind({name!r}): the name must be letters")):
        kind(name, "a bad name")


def test_a_kind_is_registered_once_and_unregistered_by_name(toys: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="tensor kind 'toy_runs_programs' is registered twice"):
        kind("toy_runs_programs", "again")(_draw_toy)
    with pytest.raises(ValueError, match="unregister_kind: no tensor kind 'toy_never' is "
                                         "registered; registered: dense, scalar"):
        unregister_kind("toy_never")


# -- through the suite --------------------------------------------------------------

CONFTEST = '''
from hypothesis import strategies as st
from pytest_metafidelity.strategies.kinds import kind

@kind("toy_runs_programs", "a transposed float tensor (a test's kind)", cost_ms=1000)
def toy_runs_programs(draw, b, cfg):
    rows = draw(st.integers(1, 3))
    x = b.let(f"torch.arange({rows * 2}.0).reshape({rows}, 2)")
    return [b.let(f"{x}.t()")]

@kind("toy_no_programs", "the same (a test's kind)", programs="the toy says no", cost_ms=2)
def toy_no_programs(draw, b, cfg):
    return toy_runs_programs(draw, b, cfg)
'''
TOYS = ("toy_runs_programs", "toy_no_programs")


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("--metafidelity", "--co", "-q", "-p", "no:cacheprovider",
                                           *args)
    assert result.ret == 0, result.stdout.str()[-2000:]
    return re.findall(r"test_fidelity\[([^\]]+)\]", result.stdout.str())


def test_the_suite_runs_a_kind_defined_in_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    # Every kind by default: ours, then the conftest's.
    default = _collected(pytester, "--metafidelity-converters=fake")
    assert default[-2:] == [f"{k}-fake" for k in TOYS] and default[0] == "dense-fake"
    result = pytester.runpytest_subprocess(
        "--metafidelity", f"--metafidelity-kinds=dense,{','.join(TOYS)}",
        "--metafidelity-converters=fake", "--metafidelity-examples=5",
        "--hypothesis-show-statistics", "-p", "no:cacheprovider", "-v")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    result.stdout.fnmatch_lines(["*PASSED*test_fidelity?toy_runs_programs-fake?*",
                                 "*PASSED*test_fidelity?toy_no_programs-fake?*"])
    # The table's row: every example passed or met a known difference (a
    # program on the toy's tensors may meet one stock torch has: under CI's
    # derandomized profile, 1 of toy_runs_programs' 5), never a failure.
    for name in TOYS:
        row = re.search(rf"^{name} +fake +(\d+) +0 +0 +(\d+) +0 +0 +0 +0 +(\d+)$", out,
                        flags=re.M)
        assert row is not None, name
        passed, known, examples = map(int, row.groups())
        assert passed + known == examples > 0 and passed > 0, name
    # The behaviour check ran programs on every example of the kind that
    # declares them (Hypothesis' events), and none on the other.
    statistics = out.split("Hypothesis Statistics", 1)[1]
    sections = {m.group(1): m.group(2) for m in re.finditer(
        r"test_fidelity\[(\w+)-fake\]:\n(.*?)Stopped because", statistics, flags=re.S)}
    assert set(sections) == {"dense", *TOYS}
    steps = re.findall(r"\* (\d+\.\d+)%, program steps: \d+", sections["toy_runs_programs"])
    assert sum(map(float, steps)) == pytest.approx(100.0, abs=0.1)
    assert "program steps" not in sections["toy_no_programs"]
    assert "program op" not in sections["toy_no_programs"]


def test_the_shards_split_a_kind_defined_in_a_conftest_by_its_declared_cost(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    args = (f"--metafidelity-kinds=dense,view,{','.join(TOYS)}", "--metafidelity-converters=fake")
    whole = _collected(pytester, *args)
    parts = [_collected(pytester, *args, f"--metafidelity-shard={i}/2") for i in (1, 2)]
    assert sorted(parts[0] + parts[1]) == sorted(whole) and len(whole) == 4
    # Declared 1000 ms an example, the toy outweighs the rest together: it
    # is a shard on its own (at the median cost it would not be).
    assert parts[0] == ["toy_runs_programs-fake"]


def test_a_kind_registered_in_a_test_module_is_no_suite_item_and_the_run_says_so(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_late=CONFTEST + "\n\ndef test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--metafidelity", "--co", "-q", "-p", "no:cacheprovider",
                                           "--metafidelity-converters=fake", "test_late.py")
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert not [i for i in re.findall(r"test_fidelity\[([^\]]+)\]", result.stdout.str())
                if i.startswith("toy_")]
    result.stdout.fnmatch_lines([
        "*PytestConfigWarning: metafidelity: tensor kind(s) 'toy_runs_programs', "
        "'toy_no_programs' registered after the suite's items were made (in a test module?) "
        "are no suite items; register them in a conftest.py or a plugin module*"])
