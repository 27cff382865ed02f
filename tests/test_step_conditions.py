"""The ``behaviour`` entries that say when a program step must show their
difference (``on_step``, :class:`~pytest_metafidelity.known_differences.OnStep`):
on a witness the step shows it and the entry explains it; where the step
then differs in no way at all (an upstream fix, here simulated by hiding
the difference from the check), the entry is unexpectedly passing -- so a
fix is noticed, as for every other entry."""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

from pytest_metafidelity import check_faithful
from pytest_metafidelity import known_differences as kd
from pytest_metafidelity.checks import behaviour
from pytest_metafidelity.faithful import KNOWN, XPASS
from pytest_metafidelity.strategies import Recipe

# entry id -> (recipe lines, outputs, program, converter): a witness where
# the entry's step condition holds and the step shows its difference
WITNESSES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str, str]] = {
    "behaviour-no-grad-view-keeps-requires-grad": (
        ("t0 = torch.zeros(3, requires_grad=True)", "with torch.no_grad():\n    t1 = t0[1:]"),
        ("t0", "t1"), "t0.requires_grad_(False)", "fake"),
    "behaviour-resize-of-symbolic-sizes": (
        ("t0 = torch.zeros(2, 3)",), ("t0",), "t0.resize_((6,))", "fake-dynamic"),
    "behaviour-stale-item-memo": (
        ("t0 = torch.tensor(2.5, dtype=torch.float64)",), ("t0",), "t0.fill_(2)",
        "fake-dynamic"),
    "behaviour-symbolic-split-sizes-error-class": (
        ("t0 = torch.zeros(3, 2)",), ("t0",), "p0 = t0.split([1, 1])", "refake"),
    "behaviour-symbolic-expand-error-wording": (
        ("t0 = torch.zeros(2, 3)",), ("t0",), "p0 = t0.expand((3,))", "fake-dynamic"),
    # (the symbolic fake's storage is sized to the tensor: 2 of its 8 elements)
    "behaviour-storage-sized-to-tensors": (
        ("t0 = torch.empty(0).set_(torch.arange(8.).untyped_storage(), 0, (2,), (1,))",),
        ("t0",), "t0.as_strided_((1,), (1,), 5)", "fake-dynamic"),
    "behaviour-conj-view-grad-not-conj": (
        ("x = torch.zeros(2, 2, dtype=torch.complex64, requires_grad=True)",
         "t0 = x.conj()[1:]"), ("t0",), "t0.sum().abs().backward()", "fake"),
    "behaviour-symbolic-sparse-op-unsupported": (
        ("t0 = torch.zeros(3, 2).to_sparse()",), ("t0",), "p0 = t0.t()", "fake-dynamic"),
    "behaviour-symbolic-functional-tensor-in-concrete-kernels": (
        ("t0 = torch._to_functional_tensor(torch.arange(6.).reshape(2, 3))",), ("t0",),
        "p0 = t0[0:1]", "fake-dynamic"),
    # (a tensor set_ to an empty storage: the control made under the mode
    # does not show it, torch.zeros(2, 0)'s does: op:real-propagation-unbind-...)
    "behaviour-real-propagation-unbind-of-empty-dimension": (
        ("t0 = torch.empty(0).set_(torch.empty(0).untyped_storage(), 0, (2, 0), (1, 1))",),
        ("t0",), "p0 = t0.unbind(1)", "fake-real"),
}


def _check(entry_id: str) -> Any:
    lines, outputs, program, converter = WITNESSES[entry_id]
    if not kd.by_id(entry_id).active(converter):
        pytest.skip(f"{entry_id} is not active on torch {kd.torch_version()}")
    tensors = Recipe(lines, outputs).build()
    return check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                          program=program).outcomes[0]


def _run_only(self: Any, step: Any) -> list[Any]:
    """Lockstep.step that runs the step on both sides (asking the judge
    between them, as it does) and reports nothing."""
    raised = self.real.run(step)
    self.expected = self._expected(step, raised)
    self.other.run(step)
    return []


@pytest.fixture
def steps_show_nothing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The behaviour check sees no step differ (as if torch were fixed)."""
    monkeypatch.setattr(behaviour.Lockstep, "step", _run_only)
    yield


def test_every_step_condition_has_a_witness() -> None:
    with_conditions = sorted(e.id for e in kd.registry() if e.on_step is not None)
    assert with_conditions == sorted(WITNESSES)


@pytest.mark.parametrize("entry_id", sorted(WITNESSES))
def test_the_witness_shows_the_difference_the_entry_expects(entry_id: str) -> None:
    outcome = _check(entry_id)
    assert outcome.status == KNOWN and entry_id in outcome.reason, outcome.describe()
    assert not outcome.unexpectedly_passing


@pytest.mark.parametrize("entry_id", sorted(WITNESSES))
def test_a_step_that_no_longer_differs_makes_the_entry_unexpectedly_passing(
        entry_id: str, steps_show_nothing: None) -> None:
    outcome = _check(entry_id)
    assert outcome.status == XPASS and outcome.unexpectedly_passing == [entry_id], (
        outcome.describe())


def test_a_step_that_differs_otherwise_is_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    # The step shows another difference than the entry's: the entry cannot
    # tell (the other difference fails on its own), as a conversion that
    # raised cannot tell entries expecting another error.
    from pytest_metafidelity.checks import Mismatch

    def another(self: Any, step: Any) -> list[Any]:
        _run_only(self, step)
        return [Mismatch("behaviour", "t0", "stride()", (1,), (2,))]

    monkeypatch.setattr(behaviour.Lockstep, "step", another)
    outcome = _check("behaviour-resize-of-symbolic-sizes")
    assert outcome.unexpectedly_passing == [] and outcome.status == "failed", outcome.describe()


def test_a_step_condition_holds_only_where_the_step_must_differ() -> None:
    # The same steps where the difference cannot occur: no expectation.
    cases = [
        (("t0 = torch.zeros(2, 3)",), "t0.resize_((2, 3))", "fake-dynamic"),  # the same shape
        (("t0 = torch.zeros(2, 3)",), "t0.resize_((6,))", "fake"),  # static sizes
        (("t0 = torch.tensor(3)",), "t0.fill_(2)", "fake-dynamic"),  # an int: a fresh symbol
        (("t0 = torch.zeros(3, 2)",), "p0 = t0.split([1, 1])", "fake-real-dynamic"),
        (("t0 = torch.zeros(3, 2)",), "p0 = t0.unbind(1)", "fake-real"),
        (("t0 = torch.zeros(3, requires_grad=True)", "with torch.no_grad():\n    t1 = t0[1:]"),
         "t1.requires_grad_(False)", "fake"),
        # (a full slice beside an index calls no slice kernel; sizes 1 are static)
        (("t0 = torch._to_functional_tensor(torch.arange(3.).reshape(1, 3))",), "p0 = t0[:, 0]",
         "fake-dynamic"),
        (("t0 = torch._to_functional_tensor(torch.zeros(1))",), "p0 = t0[0:1]", "fake-dynamic"),
        # (eager's .grad is no conjugate view: a conj() of a leaf)
        (("x = torch.zeros(2, dtype=torch.complex64, requires_grad=True)", "t0 = x.conj()"),
         "t0.sum().abs().backward()", "fake"),
        # (a static fake's storage is the real storage's size)
        (("t0 = torch.empty(0).set_(torch.arange(8.).untyped_storage(), 0, (2,), (1,))",),
         "t0.as_strided_((1,), (1,), 5)", "fake"),
    ]
    for lines, program, converter in cases:
        outputs = tuple(n for line in lines for n in re.findall(r"^\s*(t\d+) = ", line, re.M))
        tensors = Recipe(lines, outputs).build()
        result = check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                                program=program)
        outcome = result.outcomes[0]
        assert not outcome.unexpectedly_passing, (program, outcome.describe())


def test_seeded_programs_keep_what_they_found_unexpectedly_passing(
        steps_show_nothing: None) -> None:
    # check_faithful(programs=N) adds each program's judgement to the result
    (t,) = Recipe(("t0 = torch.tensor(2.5, dtype=torch.float64)",), ("t0",)).build()
    result = check_faithful(t, converters=["fake-dynamic"], programs=30)
    outcome = result.outcomes[0]
    assert outcome.status == XPASS, outcome.describe()
    assert outcome.unexpectedly_passing == ["behaviour-stale-item-memo"]
    assert "unexpectedly passing: behaviour-stale-item-memo" in outcome.reason


def test_a_step_condition_that_raises_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    entry = kd.by_id("behaviour-resize-of-symbolic-sizes")
    broken = dataclasses.replace(entry, on_step=kd.OnStep(r"resize_", lambda step: 1 / 0 > 0))
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES",
                        [broken if e is entry else e for e in kd.KNOWN_DIFFERENCES])
    outcome = _check("behaviour-resize-of-symbolic-sizes")
    assert outcome.status == "internal-error", outcome.describe()
    error = outcome.internal_errors[0].error
    assert isinstance(error, kd.PredicateError) and "behaviour-resize-of-symbolic-sizes" in str(
        error) and isinstance(error.__cause__, ZeroDivisionError)


def test_the_readme_counts_the_entries_with_step_conditions() -> None:
    from pathlib import Path

    entries = [e for e in kd.registry() if "behaviour" in e.checks and e.on_control is None]
    stepped = [e for e in entries if e.on_step is not None]
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
    assert (f"For {len(stepped)} of the {len(entries)} `behaviour` entries" in readme
            and f"The other {len(entries) - len(stepped)} entries" in readme)


def test_expand_with_a_leading_minus_one_is_the_wording_entry_and_expected() -> None:
    # Met by hand while writing the conditions (the vocabulary never draws -1).
    (t,) = Recipe(("t0 = torch.zeros(2)",), ("t0",)).build()
    outcome = check_faithful(t, converters=["fake-dynamic"], checks=["behaviour"],
                             program="p0 = t0.expand((-1, 2))").outcomes[0]
    assert outcome.status == KNOWN and [i for i, _ in outcome.known] == [
        "behaviour-symbolic-expand-error-wording"], outcome.describe()


def test_slicing_a_functional_tensor_inside_a_functionalize_level_is_not_expected() -> None:
    # Met by a 30-minute run (--hypothesis-seed=20261242, stop 48, kind
    # functorch_functional): inside a torch.func.functionalize level the
    # slice takes another path and runs on the symbolic fake too.
    import torch

    from pytest_metafidelity.strategies.wrappers import functionalize_level

    with functionalize_level(True):
        def tensors() -> tuple[Any, ...]:
            with torch._C._DisableFuncTorch():
                t0 = torch.arange(6.).reshape(1, 2, 3)
            return (torch._C._functorch._wrap_functional_tensor(
                t0, torch._C._functorch.current_level()),)

        for program in ("p0 = t0[0:1]", "p1 = t0.transpose(1, 0)\np0 = p1[1:2]"):
            outcome = check_faithful(*tensors(), converters=["fake-dynamic"], checks=["behaviour"],
                                     program=program, remake=tensors).outcomes[0]
            assert not outcome.unexpectedly_passing, (program, outcome.describe())
