"""The behaviour-only converter faults of ``benchmarks/behaviour_faults.py``
are what they claim: on each one's witness every static check passes and
the ``behaviour`` check fails, as a conversion bug; and the suite, run on a
fault's kind, passes with the static checks and fails with ``behaviour``.
(How fast the default run finds each is ``benchmarks/first_failure.py
--set behaviour``'s business.)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_metafidelity.faithful import FAILED, KNOWN, PASSED

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import behaviour_faults  # noqa: E402


# (retain-grad-ignored: the fake side reads the .grad of a non-leaf that does not retain it)
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
@pytest.mark.parametrize("name", list(behaviour_faults.FAULTS))
def test_a_behaviour_fault_passes_every_static_check_and_fails_behaviour(name: str) -> None:
    static, behaviour = behaviour_faults.witness_outcomes(name)
    assert static.status == PASSED, static.describe()
    assert behaviour.status == FAILED, behaviour.describe()
    assert not behaviour.known, behaviour.describe()
    assert all(m.check == "behaviour" and "a conversion bug" in m.detail
               for m in behaviour.mismatches), behaviour.describe()


STORAGE_LARGER_THAN_TENSOR = (
    "t0 = torch.empty(0).set_(torch.arange(4.).untyped_storage(), 1, (), ())",
    "t0.requires_grad_()")


def _leaf_on_a_larger_storage(program: str, fault: str | None) -> Any:
    """The behaviour outcome, through fake-real, of a 0-dim leaf on a
    4-element storage (the fake's storage is sized to the tensor: the known
    difference storage-sized-to-tensors, present before the first step)."""
    from pytest_metafidelity.faithful import check_faithful
    from pytest_metafidelity.strategies import Recipe

    uninstall = behaviour_faults.install(fault) if fault else (lambda: None)
    try:
        (t,) = Recipe(STORAGE_LARGER_THAN_TENSOR, ("t0",)).build()
        return check_faithful(t, converters=["fake-real"], checks=["behaviour"],
                              program=program).outcomes[0]
    finally:
        uninstall()


def test_a_storage_size_difference_explains_no_difference_of_a_step_that_does_not_use_it(
        ) -> None:
    # The fault doubles the fake's gradient: before, the storage's size
    # (known at the start) "explained" it and the fault hid as known.
    outcome = _leaf_on_a_larger_storage("t0.sum().abs().backward()", "leaf-grad-doubled")
    assert outcome.status == FAILED and not outcome.known, outcome.describe()
    assert [(m.path, m.attribute) for m in outcome.mismatches] == [
        ("t0.grad.real_tensor", "values")]
    # Stock torch: nothing differs.
    assert _leaf_on_a_larger_storage("t0.sum().abs().backward()", None).status == PASSED


def test_a_storage_size_difference_still_explains_a_step_that_depends_on_the_storage() -> None:
    # as_strided_ into the rest of the real storage: in bounds on the real
    # side only (the functional converter's storage does not grow), which
    # the storage's size explains.
    from pytest_metafidelity.faithful import check_faithful
    from pytest_metafidelity.strategies import Recipe

    (t,) = Recipe(("t0 = torch.arange(8.)",
                   "t1 = torch.empty(0).set_(t0.untyped_storage(), 2, (2,), (1,))"),
                  ("t1",)).build()
    outcome = check_faithful(t, converters=["functional"], checks=["behaviour"],
                             program="t1.as_strided_((1,), (1,), 6)").outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()


@pytest.mark.parametrize("step", ["t1.t_()", "t1.unsqueeze_(0)", "t1.transpose_(0, 1)"])
def test_a_storage_size_difference_explains_an_inplace_view_of_the_storage_it_outgrows(
        step: str) -> None:
    # Eager refuses t_()/unsqueeze_() of a tensor whose storage was emptied
    # (torch's inplace_view ops set sizes and strides against the storage's
    # bounds); the real tensor a fake-real fake carries has its storage
    # regrown (real-zero-byte-storage-regrown, known at the start), so there
    # the step runs before the fake raises.  Found by the default run on a
    # Parameter of such a tensor.
    from pytest_metafidelity.faithful import check_faithful
    from pytest_metafidelity.strategies import Recipe

    (t,) = Recipe(("t0 = torch.arange(4.).reshape((1, 4))",
                   "t0.untyped_storage().resize_(0)",
                   "t1 = torch.nn.Parameter(t0, requires_grad=False)"), ("t1",)).build()
    outcome = check_faithful(t, converters=["fake-real"], checks=["behaviour"],
                             program=step).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert [i for i, _ in outcome.known] == ["behaviour-follows-known-difference"]
    # A step that does not depend on the storage is not explained by its size.
    from pytest_metafidelity.checks.behaviour import _depends_on_storage
    from pytest_metafidelity.strategies.programs import Program

    assert _depends_on_storage(Program.parse(step, ("t1",)).steps[0])
    assert not _depends_on_storage(Program.parse("t1.t()", ("t1",)).steps[0])
    assert not _depends_on_storage(Program.parse("t1.detach_()", ("t1",)).steps[0])
    assert [i for i, _ in outcome.known] == ["behaviour-follows-known-difference"]


def test_a_fault_is_taken_off_again() -> None:
    from torch._subclasses.meta_utils import MetaConverter

    call = MetaConverter.__call__
    behaviour_faults.witness_outcomes("view-inplace-version-lost")
    assert MetaConverter.__call__ is call


def test_an_unknown_fault_names_the_faults() -> None:
    with pytest.raises(SystemExit, match="no-such.*expected one of view-backward-stops-at-view"):
        behaviour_faults.install("no-such")


# The fault as the benchmark loads it: a plugin reading METAFIDELITY_FAULT.
PLUGIN = f"""
import sys
sys.path.insert(0, {str(ROOT / "benchmarks")!r})
from behaviour_faults import *  # noqa
"""


def test_the_suite_sees_a_behaviour_fault_only_with_the_behaviour_check(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_metafidelity.checks import default_checks

    pytester.makepyfile(fault_plugin=PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path), prepend=":")
    monkeypatch.setenv(behaviour_faults.FAULT_VARIABLE, "inference-inplace-allowed")
    suite = ["-p", "fault_plugin", "--metafidelity", "--metafidelity-kinds=inference",
             "--metafidelity-converters=fake", "--metafidelity-examples=20",
             "--hypothesis-seed=0", "-p", "no:cacheprovider",
             "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    static = ",".join(c for c in default_checks() if c != "behaviour")
    pytester.runpytest_subprocess(*suite, f"--metafidelity-checks={static}").assert_outcomes(
        passed=1)
    result = pytester.runpytest_subprocess(*suite, "--metafidelity-checks=behaviour")
    result.assert_outcomes(failed=1)
    assert "[behaviour] *: raised differs" in result.stdout.str()


SPARSE_WITH_ELEMENTS = {
    "coalesced": ("t0 = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 2]]), "
                  "torch.tensor([1., 2.]), (2, 3), is_coalesced=True)",),
    "uncoalesced": ("t0 = torch.sparse_coo_tensor(torch.tensor([[1, 0], [1, 2]]), "
                    "torch.tensor([1., 2.]), (2, 3))",),
}


def _coalesce_outcome(recipe: str, converter: str, fault: str | None) -> Any:
    from pytest_metafidelity.faithful import check_faithful
    from pytest_metafidelity.strategies import Recipe

    uninstall = behaviour_faults.install(fault) if fault else (lambda: None)
    try:
        (t,) = Recipe(SPARSE_WITH_ELEMENTS[recipe], ("t0",)).build()
        return check_faithful(t, converters=[converter], checks=["behaviour"],
                              program="p0 = t0.coalesce()").outcomes[0]
    finally:
        uninstall()


@pytest.mark.parametrize("converter", ["fake", "fake-real"])
@pytest.mark.parametrize("recipe", list(SPARSE_WITH_ELEMENTS))
def test_a_sparse_fakes_count_of_elements_does_not_explain_coalesce_leaving_it_unmarked(
        recipe: str, converter: str) -> None:
    # A sparse fake has no elements (sparse-nnz, known at the start): every
    # difference a step showed on it "followed" from that, so the default run
    # found the fault only on tensors without elements.  coalesce()'s result
    # is coalesced whatever the elements.
    outcome = _coalesce_outcome(recipe, converter, "sparse-coalesce-unmarked")
    assert outcome.status == FAILED and not outcome.known, outcome.describe()
    assert [(m.attribute, m.real, m.fake) for m in outcome.mismatches] == [
        ("is_coalesced()", True, False)]
    # Stock torch: nothing new (what the count of elements changes still follows from it).
    stock = _coalesce_outcome(recipe, converter, None)
    assert stock.status in (PASSED, KNOWN) and not stock.mismatches, stock.describe()
