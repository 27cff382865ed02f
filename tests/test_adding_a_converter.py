"""Adding a converter touches its class (in converters.py, or a user's
module through ``register_converter``) and its row in the README: the
suite runs it, and the registry of known differences judges it by the
capabilities its class declares."""

from __future__ import annotations

import pathlib
import re
from typing import Any, Iterator

import pytest
import torch

from pytest_metafidelity import known_differences as kd
from pytest_metafidelity.converters import (
    CAPABILITIES,
    CONVERTERS,
    FakeConverter,
    RealFakeConverter,
    available_converters,
    make_converter,
    register_converter,
    unregister_converter,
    where,
)

README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()


def readme_converter_table() -> dict[str, set[str]]:
    """{converter: its capabilities} from the README's converter table."""
    section = README.split("## Converters", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `([^`]+)` \| ([^|]*) \| .*\|", line)
        if m:
            caps = m.group(2).strip()
            rows[m.group(1)] = set() if caps == "none" else set(re.findall(r"`(\w+)`", caps))
    return rows


def declared(name: str) -> set[str]:
    cls = CONVERTERS[name].factory
    return {key for key in CAPABILITIES if getattr(cls, key)}


def table_disagreements() -> list[str]:
    table = readme_converter_table()
    wrong = [f"{n}: not in the README's converter table" for n in CONVERTERS if n not in table]
    wrong += [f"{n}: in the README's converter table, not registered" for n in table
              if n not in CONVERTERS]
    wrong += [f"{n}: README says {sorted(table[n])}, the class {sorted(declared(n))}"
              for n in CONVERTERS if n in table and table[n] != declared(n)]
    return wrong


def test_the_readme_table_lists_every_converter_with_its_capabilities() -> None:
    assert table_disagreements() == []


class ToyFake(FakeConverter):
    """A copy of ``fake`` under another name (the toy a test adds)."""

    name = "toy-fake"


class ToyRealFake(RealFakeConverter):
    """A copy of ``fake-real`` under another name."""

    name = "toy-fake-real"


@pytest.fixture
def toys() -> Iterator[tuple[str, str]]:
    register_converter(ToyFake)
    register_converter(ToyRealFake)
    try:
        yield ToyFake.name, ToyRealFake.name
    finally:
        unregister_converter(ToyFake.name)
        unregister_converter(ToyRealFake.name)


def test_a_registered_converter_is_judged_by_its_capabilities(toys: tuple[str, str]) -> None:
    toy, toy_real = toys
    assert toy in available_converters() and toy_real in available_converters()
    # Every entry (operator differences too) is active for a toy exactly
    # where it is for the converter whose capabilities the toy has.
    for e in kd.KNOWN_DIFFERENCES:
        assert e.active(toy) == e.active("fake"), e.id
        assert e.active(toy_real) == e.active("fake-real"), e.id
    # ... which is not the same everywhere: capabilities decide.
    assert kd.by_id("real-copy-fails").active(toy_real)
    assert not kd.by_id("real-copy-fails").active(toy)
    assert toy in where(functional=False) and toy not in where(symbolic=True)


def test_triage_judges_a_converter_replaced_under_the_same_name_by_its_new_class() -> None:
    from pytest_metafidelity.checks import Mismatch
    from pytest_metafidelity.known_differences.triage import triage

    class Toy(FakeConverter):
        name = "toy-replaced"

    class ToyNowReal(RealFakeConverter):
        name = "toy-replaced"

    entry = kd.KnownDifference(
        id="toy-real-only", check="metadata", attribute=r"stride\(\)",
        applies=lambda case: True, reason="a toy", link=kd.BY_DESIGN,
        converters=where(carries_real=True))
    mismatch = Mismatch(check="metadata", path="t0", attribute="stride()", real=(1,), fake=(2,))

    def explained() -> bool:
        found = triage(Toy.name, [mismatch], None, ["metadata"], entries=[entry])
        return [i for i, _ in found.explained] == [entry.id]

    register_converter(Toy)
    try:
        before = explained()
        unregister_converter(Toy.name)
        register_converter(ToyNowReal)
        after = explained()
    finally:
        unregister_converter(Toy.name)
    assert (before, after) == (False, True)


def test_the_readme_table_must_document_a_registered_converter(toys: tuple[str, str]) -> None:
    assert sorted(table_disagreements()) == [
        "toy-fake-real: not in the README's converter table",
        "toy-fake: not in the README's converter table",
    ]


def test_the_suite_runs_a_registered_converter(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from pytest_metafidelity.converters import FakeConverter, register_converter\n"
        "class ToyFake(FakeConverter):\n"
        "    '''A copy of fake under another name.'''\n"
        "    name = 'toy-fake'\n"
        "register_converter(ToyFake)\n")
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-examples=3",
        "-p", "no:cacheprovider", "-v")
    result.stdout.fnmatch_lines(["*PASSED*test_fidelity?dense-toy-fake?*",
                                 "dense  toy-fake  *"])
    assert result.ret == 0


def test_where_refuses_an_unknown_capability() -> None:
    with pytest.raises(ValueError, match="unknown capability 'shiny'.*symbolic"):
        where(shiny=True)
    with pytest.raises(ValueError, match="symbolic='yes' must be True or False"):
        where(symbolic="yes")  # type: ignore[arg-type]


# -- each converter does what its capabilities say ----------------------------


def _converted_with_spy(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    """The conversion of a dense tensor by ``name`` and what every
    FakeTensorMode.from_tensor call on the way was given."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    given: list[Any] = []
    original = FakeTensorMode.from_tensor

    def spy(self: Any, t: Any, *args: Any, **kwargs: Any) -> Any:
        given.append(t)
        return original(self, t, *args, **kwargs)

    monkeypatch.setattr(FakeTensorMode, "from_tensor", spy)
    converter = make_converter(name)
    try:
        return converter.convert(torch.randn(3, 4)), given
    finally:
        converter.close()


@pytest.mark.parametrize("name", [n for n in CONVERTERS if n in available_converters()])
def test_a_converter_has_exactly_the_capabilities_it_declares(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    from pytest_metafidelity.checks._util import has_symbolic

    fake, given = _converted_with_spy(name, monkeypatch)
    observed = {
        "fake_tensors": isinstance(fake, FakeTensor),
        "symbolic": has_symbolic(fake),
        "carries_real": getattr(fake, "real_tensor", None) is not None,
        "refakes": any(isinstance(t, FakeTensor) for t in given),
        "functional": any(isinstance(t, FunctionalTensor) for t in given),
    }
    assert set(observed) == set(CAPABILITIES)
    assert {key for key, holds in observed.items() if holds} == declared(name)
