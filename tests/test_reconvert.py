"""The ``reconvert`` check: converted again after an in-place change, the
converted tensor must match the tensor as it is now.  Torch's memo hands back
the fake made before the change (known difference
``reconvert-memo-keyed-by-identity``); a converter that makes a new, stale
object is a failure; one that converts afresh after a change passes."""

from __future__ import annotations

import contextlib
import json
import warnings
from typing import Any, Iterator

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity import known_differences as kd
from pytest_metafidelity.checks import Conversion, reconvert as rc
from pytest_metafidelity.converters import (CONVERTERS, ConverterSpec, FakeConverter,
                                            available_converters, make_converter)
from pytest_metafidelity.faithful import FAILED, KNOWN, PASSED, check_faithful
from pytest_metafidelity.findings import Reconverted
from pytest_metafidelity.strategies import meta_tensors

ENTRY = "reconvert-memo-keyed-by-identity"


def _tensor_for(change: rc.Change) -> torch.Tensor:
    """A tensor each change alters (its reading differs afterwards)."""
    t = torch.randn(2, 3)
    if change.name in ("requires_grad_", "detach_", ".grad ="):
        t.requires_grad_()
    if change.name == "detach_":
        t = t * 2  # a non-leaf: detach_ makes it a leaf not requiring grad
    return t


@contextlib.contextmanager
def forced(change: rc.Change, index: int = 0) -> Iterator[None]:
    """The check applies ``change`` (where it alters the tensor), to tensor ``index``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rc, "CHANGES", (change,))
        mp.setattr(rc, "choose", lambda real: (index, 0))
        yield


@contextlib.contextmanager
def converter(name: str, cls: type) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, name, ConverterSpec(name, "for a test", cls))
        yield name


class StaleCopies(FakeConverter):
    """A fault: its own memo ignores changes and hands back a *new* fake made
    like the first one (the tensor as it was), not torch's memoized object."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, torch.Tensor] = {}

    def _convert(self, t: Any) -> Any:
        old = self.seen.get(id(t))
        if old is None:
            self.seen[id(t)] = old = torch.empty_strided(
                t.shape, t.stride(), dtype=t.dtype).requires_grad_(t.requires_grad)
            if t.grad is not None:
                old.grad = torch.zeros(t.grad.shape, dtype=t.grad.dtype)
        return super()._convert(old.detach().requires_grad_(old.requires_grad))


class Afresh(FakeConverter):
    """Right: a tensor whose reading changed since its last conversion is
    converted by a new FakeTensorMode (torch's memo would hand back the old
    fake)."""

    def __init__(self) -> None:
        super().__init__()
        self.readings: dict[int, Any] = {}

    def _convert(self, t: Any) -> Any:
        from pytest_metafidelity.checks.oracle import read

        grad = t.grad if t.is_leaf else None
        reading = repr((read(t), t.untyped_storage().nbytes(),
                        None if grad is None else read(grad)))
        if self.readings.get(id(t), reading) != reading:
            self.close()
            FakeConverter.__init__(self)
        self.readings[id(t)] = reading
        return super()._convert(t)


@pytest.mark.parametrize("change", rc.CHANGES, ids=[c.name for c in rc.CHANGES])
def test_each_change_through_torch_is_the_known_stale_memo(change: rc.Change) -> None:
    t = _tensor_for(change)
    with forced(change):
        outcome = check_faithful(t, converters=["fake"], checks=["reconvert"]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert {entry for entry, _ in outcome.known} == {ENTRY}
    for _, m in outcome.known:
        assert m.check == "reconvert" and m.attribute.endswith(f" after {change.name}")
        assert change.source in m.detail and "first conversion's object" in m.detail
    # the user's tensor is untouched: the check changes a rebuilt copy
    assert t.shape == (2, 3)


@pytest.mark.parametrize("change", rc.CHANGES, ids=[c.name for c in rc.CHANGES])
def test_a_converter_converting_afresh_after_a_change_passes(change: rc.Change) -> None:
    with converter("afresh", Afresh), forced(change):
        outcome = check_faithful(_tensor_for(change), converters=["afresh"],
                                 checks=["reconvert"]).outcomes[0]
    assert outcome.status == PASSED, outcome.describe()


def test_a_memo_that_ignores_the_change_with_a_new_object_is_caught() -> None:
    change = rc.CHANGES_BY_NAME["t_()"]
    with converter("stale-copies", StaleCopies), forced(change):
        result = check_faithful(torch.randn(2, 3), converters=["stale-copies"],
                                checks=["reconvert"])
    outcome = result.outcomes[0]
    assert outcome.status == FAILED and not outcome.known, outcome.describe()
    shape = [m for m in outcome.mismatches if m.attribute == "shape after t_()"]
    assert shape and shape[0].real == (3, 2) and shape[0].fake == (2, 3)
    text = outcome.describe()
    assert "[reconvert] t0: shape after t_() differs" in text
    assert "t.t_()" in text and "made a new object" in text
    assert "checks=['reconvert']" in result.reproducer


def test_the_failure_reproducer_replays_the_same_change() -> None:
    """The change is chosen from the tensors' reading: the reproducer's
    rebuilt tensors get the same one."""
    def chosen(t: torch.Tensor) -> str:
        index, pick = rc.choose((t,))
        candidates = [c for c in rc.CHANGES if c.alters(t)]
        return candidates[pick % len(candidates)].name

    # (StaleCopies drops every .grad, on a fresh conversion too: after
    # ".grad =" it differs from nothing a fresh converter gets right)
    t = next(t for t in (torch.randn(2, 3), torch.randn(3, 2), torch.randn(2, 4))
             if chosen(t) != ".grad =")
    with converter("stale-copies", StaleCopies):
        first = check_faithful(t, converters=["stale-copies"], checks=["reconvert"])
        assert first.outcomes[0].status == FAILED, first.describe()
        namespace: dict[str, Any] = {}
        source = first.reproducer.replace("assert_faithful(", "result = check_faithful(")
        source = source.replace("from pytest_metafidelity import assert_faithful",
                                "from pytest_metafidelity import check_faithful")
        exec(compile(source, "<reproducer>", "exec"), namespace)
    again = namespace["result"].outcomes[0]
    assert ({m.attribute for m in again.mismatches}
            == {m.attribute for m in first.outcomes[0].mismatches})


def test_a_change_that_alters_nothing_passes_without_the_known_difference() -> None:
    """t_() of a 1-d tensor changes nothing: no difference, and the entry
    does not claim one (not unexpectedly passing)."""
    with forced(rc.CHANGES_BY_NAME["t_()"]):
        outcome = check_faithful(torch.randn(4), converters=["fake"],
                                 checks=["reconvert"]).outcomes[0]
    assert outcome.status == PASSED and not outcome.unexpectedly_passing, outcome.describe()


def test_a_change_the_tensor_refuses_gives_way_to_the_next() -> None:
    """detach_() of a view raises ("Can't detach views in-place") without
    changing it: the check goes on with the next change."""
    t = (torch.randn(6, requires_grad=True) * 2).reshape(2, 3)  # a view of a non-leaf
    conv = Conversion(("t0",), (t,), (None,), make_converter("fake"))
    found = rc.reconvert(conv, 0, [rc.CHANGES_BY_NAME["detach_"], rc.CHANGES_BY_NAME["t_()"]])
    records = conv.reconvert_records
    assert [r.change for r in records] == ["t_()"] and records[0].stale
    assert {"shape after t_()", "stride() after t_()"} <= {m.attribute for m in found}


def test_the_check_draws_only_changes_that_alter_the_tensor() -> None:
    """An integer 2-d tensor: neither requires_grad_ nor detach_ (nothing to
    detach); a 1-d one: no t_() either."""
    names = {c.name for c in rc.CHANGES if c.alters(torch.zeros(2, 3, dtype=torch.int64))}
    assert names == {"t_()", "resize_", "set_", "as_strided_", ".grad ="}
    names = {c.name for c in rc.CHANGES if c.alters(torch.zeros(4))}
    assert "t_()" not in names and "requires_grad_" in names


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=meta_tensors(kinds=["dense", "view", "autograd_nonleaf", "grad_attached", "inference"]),
       change=st.sampled_from(rc.CHANGES))
def test_a_change_said_not_to_alter_a_tensor_raises_or_changes_nothing(
        t: Any, change: rc.Change) -> None:
    from pytest_metafidelity.checks.behaviour import rebuild
    from pytest_metafidelity.strategies.described import recipe_for

    recipe = recipe_for((t,))
    copies = rebuild(recipe, (t,), recipe.outputs)
    if copies is None:
        return
    (copy,) = copies
    if change.alters(copy):
        return
    before = rc._reading("t0", copy)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            change.apply(copy)
    except Exception:
        pass
    else:
        assert rc._reading("t0", copy) == before


def test_the_changed_tensor_is_a_rebuilt_copy() -> None:
    t = torch.randn(3, 2)
    with forced(rc.CHANGES_BY_NAME["resize_"]):
        check_faithful(t, converters=["fake"], checks=["reconvert"])
    assert t.shape == (3, 2) and t.untyped_storage().nbytes() == 24 and t._version == 0


def test_the_known_difference_needs_the_very_object_unchanged() -> None:
    entry = kd.by_id(ENTRY)
    t = torch.randn(2, 3)
    conv = Conversion(("t0",), (t,), (None,), make_converter("fake"))
    case = kd.Case(converter="fake", path="t0.grad", tensor=t, family=(t,), conversion=conv)
    for record, holds in [
        (Reconverted("t0", "t_()", True, True, ("t0: shape",)), True),
        (Reconverted("t0", "t_()", False, False, ("t0: shape",)), False),  # a new object
        (Reconverted("t0", "t_()", True, False, ("t0: shape",)), False),  # updated, wrongly
        (Reconverted("t0", "t_()", True, True, ()), False),  # the change altered nothing
        (Reconverted("t1", "t_()", True, True, ("t1: shape",)), False),  # another tensor
    ]:
        conv.reconvert_records = [record]
        assert entry.applies(case) is holds, record


def test_a_tensor_no_converter_converts_after_the_change_is_not_reported() -> None:
    """resize_ leaves a leaf's .grad at its old size, and conversion then
    raises for a fresh converter too: not a difference of converting again."""
    t = torch.zeros(())
    t.grad = torch.zeros(())
    with converter("afresh", Afresh), forced(rc.CHANGES_BY_NAME["resize_"]):
        outcome = check_faithful(t, converters=["afresh"], checks=["reconvert"]).outcomes[0]
    assert outcome.status == PASSED, outcome.describe()


class RaisesAgain(FakeConverter):
    """A fault: converting a tensor a second time raises."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[int] = set()

    def _convert(self, t: Any) -> Any:
        if id(t) in self.seen:
            raise RuntimeError("converted twice")
        self.seen.add(id(t))
        return super()._convert(t)


def test_a_second_conversion_that_raises_is_reported() -> None:
    with converter("raises-again", RaisesAgain), forced(rc.CHANGES_BY_NAME["t_()"]):
        outcome = check_faithful(torch.randn(2, 3), converters=["raises-again"],
                                 checks=["reconvert"]).outcomes[0]
    assert outcome.status == FAILED, outcome.describe()
    (m,) = outcome.mismatches
    assert m.attribute == "convert() again after t_()" and "converted twice" in m.fake


@pytest.mark.parametrize("name", available_converters())
def test_every_converter_hands_back_the_stale_fake(name: str) -> None:
    """Torch's memo, whichever converter: the same object, as it was."""
    with forced(rc.CHANGES_BY_NAME["t_()"]):
        outcome = check_faithful(torch.randn(2, 3), converters=[name],
                                 checks=["reconvert"]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert {entry for entry, _ in outcome.known} == {ENTRY}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=meta_tensors(kinds=["dense", "view", "autograd_view", "grad_attached"]),
       change=st.sampled_from(rc.CHANGES))
def test_any_change_is_current_afresh_and_known_through_torch(t: Any, change: rc.Change
                                                              ) -> None:
    with forced(change):
        with converter("afresh", Afresh):
            right = check_faithful(t, converters=["afresh"], checks=["reconvert"]).outcomes[0]
        torch_memo = check_faithful(t, converters=["fake"], checks=["reconvert"]).outcomes[0]
    # (a tensor may not convert at all: a known difference of the conversion)
    assert not right.mismatches and not right.internal_errors, right.describe()
    assert not [m for _, m in right.known if m.check == "reconvert"], right.describe()
    assert not torch_memo.mismatches and not torch_memo.internal_errors, torch_memo.describe()
    assert {e for e, m in torch_memo.known if m.check == "reconvert"} <= {ENTRY}


# -- opt-in --------------------------------------------------------------------


def test_reconvert_is_opt_in_every_other_check_runs_by_default() -> None:
    from pytest_metafidelity.checks import all_checks, default_checks

    assert all_checks()["reconvert"].default is False
    assert default_checks() == [c for c in all_checks() if c != "reconvert"]
    t = torch.zeros(2, 3)
    # Unnamed, it does not run: stock torch's stale memo is no outcome's.
    (plain,) = check_faithful(t, converters=["fake"]).outcomes
    assert plain.status == PASSED and not plain.known and not plain.unexpectedly_passing
    # Named, it runs and meets torch's memo.
    (named,) = check_faithful(t, converters=["fake"], checks=["reconvert"]).outcomes
    assert named.status == KNOWN and {e for e, _ in named.known} == {ENTRY}


def test_a_check_registered_with_a_default_that_is_not_a_bool_is_refused() -> None:
    from pytest_metafidelity.checks import check

    with pytest.raises(TypeError, match=r"check\('x'\): default='no'; expected True or False"):
        check("x", "a check", default="no")  # type: ignore[arg-type]


def test_the_suite_adds_reconvert_to_the_default_checks_where_named(
        pytester: pytest.Pytester) -> None:
    def run(*checks: str) -> dict:
        report = pytester.path / "report.json"
        result = pytester.runpytest_subprocess(
            "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=fake",
            "--metafidelity-examples=8", "--hypothesis-seed=0", "-p", "no:cacheprovider",
            f"--metafidelity-report={report}", *checks)
        result.assert_outcomes(passed=1)
        return json.loads(report.read_text())

    from pytest_metafidelity.checks import default_checks

    plain = run()
    assert plain["options"]["checks"] == default_checks()
    assert ENTRY not in json.dumps(plain["items"][0])
    added = run("--metafidelity-checks=default,reconvert")
    assert added["options"]["checks"] == [*default_checks(), "reconvert"]
    assert added["items"][0]["counts"]["known-difference"] > plain["items"][0]["counts"][
        "known-difference"]
    assert ENTRY in json.dumps(added["items"][0])
