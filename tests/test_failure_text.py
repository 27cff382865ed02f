"""A suite item's failure is shown as the finding's own text; anything else
keeps pytest's traceback, never with the frames' arguments or locals
(printing a tensor can kill the process)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from pytest_metafidelity.faithful import FidelityError, check_faithful
from pytest_metafidelity.suite.failure_text import repr_suite_failure


def _lossy(conv: Any) -> list[Any]:
    from pytest_metafidelity.checks import Mismatch

    return [Mismatch(check="lossy", path="t0", attribute="storage_offset()", real=1, fake=0)]


@pytest.fixture
def failing_result(monkeypatch: pytest.MonkeyPatch) -> Any:
    from pytest_metafidelity import checks

    checks.all_checks()
    monkeypatch.setitem(checks._CHECKS, "lossy", checks.CheckSpec("lossy", "test", _lossy))
    return check_faithful(torch.ones(2), converters=["meta"], checks=["lossy"])


def _raised(error: BaseException, *, secret: torch.Tensor) -> pytest.ExceptionInfo[Any]:
    def inner(tensor_argument: torch.Tensor) -> None:
        raise error

    try:
        inner(secret)
    except BaseException:
        return pytest.ExceptionInfo.from_current()
    raise AssertionError("not raised")


@pytest.fixture
def item(request: pytest.FixtureRequest) -> Any:
    """This test's own item (a pytester session would drop the torch modules
    imported meanwhile from sys.modules, and torch cannot import them twice)."""
    return request.node


def test_a_finding_is_its_own_text_and_notes(item: pytest.Item, failing_result: Any) -> None:
    error = FidelityError(failing_result)
    error.add_note("Falsifying example: test_fidelity(...)")
    text = repr_suite_failure(item, _raised(error, secret=torch.full((3,), 7.25)))
    assert isinstance(text, str)
    assert text.startswith("FidelityError: 1 broken invariant(s)")
    assert "storage_offset()" in text and "Reproducer (runnable Python):" in text
    assert text.endswith("\nFalsifying example: test_fidelity(...)")
    assert "7.25" not in text and "tensor_argument" not in text


def test_several_findings_are_each_shown(item: pytest.Item, failing_result: Any) -> None:
    group = ExceptionGroup("Hypothesis found 2 distinct failures.",
                           [FidelityError(failing_result), FidelityError(failing_result)])
    group.add_note("seen by the group")
    text = repr_suite_failure(item, _raised(group, secret=torch.full((3,), 7.25)))
    assert text.startswith("2 distinct failures\n\nFidelityError: ")
    assert text.count("FidelityError: 1 broken invariant(s)") == 2
    assert text.endswith("\nseen by the group") and "7.25" not in text


@pytest.mark.parametrize("tbstyle", ["auto", "long", "short"])
def test_another_error_keeps_its_traceback_without_arguments(
        item: Any, monkeypatch: pytest.MonkeyPatch, tbstyle: str) -> None:
    monkeypatch.setattr(item.config.option, "tbstyle", tbstyle)
    monkeypatch.setattr(item.config.option, "showlocals", True)
    info = _raised(KeyError("no such kind"), secret=torch.full((3,), 7.25))
    text = str(repr_suite_failure(item, info))
    assert "KeyError: 'no such kind'" in text and "raise error" in text
    assert "7.25" not in text and "tensor_argument =" not in text
    # pytest's own formatting, for comparison, prints the tensor.
    assert "7.25" in str(item.repr_failure(info))


def test_a_conversion_shows_its_tensors_metadata_never_their_values() -> None:
    """What a traceback showing a check's ``conv`` argument prints, even for
    a user's own ``assert_faithful`` test outside the suite."""
    from pytest_metafidelity.checks import Conversion
    from pytest_metafidelity.child import run_in_child
    from pytest_metafidelity.converters import make_converter

    t = torch.arange(4.0)
    t.untyped_storage().resize_(0)  # torch's own repr of it segfaults
    conv = Conversion(names=("t0", "t1"), real=(t, torch.ones(2, dtype=torch.int64)),
                      fake=(None, torch.empty(2, device="meta")),
                      converter=make_converter("meta"))
    assert run_in_child(lambda: repr(conv), timeout=60).exit_status == 0
    assert repr(conv) == (
        "Conversion(names=('t0', 't1'), converter='meta', "
        "real=(Tensor(size=(4,), dtype=torch.float32, device=cpu), "
        "Tensor(size=(2,), dtype=torch.int64, device=cpu)), "
        "fake=(None, Tensor(size=(2,), dtype=torch.float32, device=meta)))")
