"""The property table: every property the installed torch has is compared or
explained, and what the rules say is compared really is -- a fake that
differs in it fails the named check, under the named attribute."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from torch.torch_version import TorchVersion

from pytest_metafidelity import check_faithful, meta_tensors
from pytest_metafidelity.checks import _dispatch_keys as keys
from pytest_metafidelity.checks.wrappers import read_wrapping
from pytest_metafidelity.checks.oracle import contiguity_attribute, memory_formats
from pytest_metafidelity.faithful import FAILED, KNOWN
from pytest_metafidelity.properties import (
    META_STORAGE_DESC_RULES,
    META_TENSOR_DESC_RULES,
    TENSOR_RULES,
    UNTYPED_STORAGE_RULES,
    Compared,
    Explained,
    Property,
    main,
    markdown_totals,
    properties,
    totals,
    unexplained,
)
from pytest_metafidelity.property_values import NotRead, TensorReading, read_value
from test_checks import faulty

ROOT = Path(__file__).resolve().parent.parent


def pinned_torch() -> TorchVersion:
    """The torch requirements-dev.txt pins (the rules are written for it)."""
    match = re.search(r"^torch==([0-9.]+)", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert match is not None
    return TorchVersion(match.group(1))


def installed_torch() -> TorchVersion:
    return TorchVersion(torch.__version__.split("+")[0])


PROPS = properties()
BY_WRITTEN = {p.written: p for p in PROPS}


def test_every_property_is_compared_or_explained() -> None:
    """On the pinned torch and newer ones, a property without a rule fails:
    a newer torch's new field, flag or key must be given one.  On an older
    torch (CI's torch 2.11) the rules written for the pinned one may not
    cover what it has and no longer has: skipped, naming them."""
    missing = [p.written for p in unexplained(PROPS)]
    if missing and installed_torch() < pinned_torch():
        pytest.skip(f"torch {torch.__version__} is older than the pinned {pinned_torch()}, "
                    f"whose rules do not cover: {', '.join(missing)}")
    assert not missing, f"properties with no rule (compare or explain them): {missing}"


def test_no_rule_names_a_property_the_pinned_torch_lacks() -> None:
    if installed_torch() != pinned_torch():
        pytest.skip(f"the rules follow the pinned torch {pinned_torch()}")
    have = {(p.group, p.name) for p in PROPS}
    for group, rules in [("MetaTensorDesc", META_TENSOR_DESC_RULES),
                         ("MetaStorageDesc", META_STORAGE_DESC_RULES),
                         ("Tensor", TENSOR_RULES), ("UntypedStorage", UNTYPED_STORAGE_RULES)]:
        stale = [name for name in rules if (group, name) not in have]
        assert not stale, f"{group} rules for properties torch has not: {stale}"


def test_every_group_is_introspected() -> None:
    counts = totals(PROPS)
    assert counts["MetaTensorDesc"]["properties"] >= 40
    assert counts["MetaStorageDesc"]["properties"] >= 2
    assert counts["Tensor"]["properties"] >= 30
    assert counts["UntypedStorage"]["properties"] >= 4
    assert counts["DispatchKey"]["properties"] >= 100
    assert counts["Functionalization"]["properties"] >= 10
    # names as users write them
    assert "t.is_conj()" in BY_WRITTEN and "t.is_leaf" in BY_WRITTEN
    assert "MetaTensorDesc.is_conj" in BY_WRITTEN and "DispatchKey.ZeroTensor" in BY_WRITTEN
    assert "torch._functionalize_has_data_mutation(t)" in BY_WRITTEN


def test_device_only_keys_are_explained_and_cpu_and_meta_keys_compared() -> None:
    rule = BY_WRITTEN["DispatchKey.SparseCUDA"].rule
    assert isinstance(rule, Explained) and "device-only (CUDA)" in rule.why
    for key in ("SparseCPU", "SparseMeta", "CPU", "Meta", "AutogradCPU", "ZeroTensor"):
        assert isinstance(BY_WRITTEN[f"DispatchKey.{key}"].rule, Compared), key


def _generated_attributes() -> set[str]:
    """The attributes checks report under names made at run time."""
    made = {contiguity_attribute(f) for f in memory_formats()}
    made |= {keys.attribute(f) for f in (*keys.COMPARED_FUNCTIONALITIES, *keys.COMPARED_KEYS)}
    made |= set(read_wrapping(torch._to_functional_tensor(torch.zeros(1))))
    return made


@pytest.mark.parametrize("prop", [p for p in PROPS if isinstance(p.rule, Compared)],
                         ids=lambda p: p.written)
def test_a_compared_property_names_an_attribute_its_check_reports(prop: Property) -> None:
    """The attribute is one the named check's module writes (or makes)."""
    rule = prop.rule
    assert isinstance(rule, Compared)
    if rule.at:
        assert rule.check == "wrappers"  # checked recursively by the wrappers check
        return
    module = __import__(f"pytest_metafidelity.checks.{rule.check}", fromlist=["_"])
    source = inspect.getsource(module)
    assert (f'"{rule.attribute}"' in source or rule.attribute in _generated_attributes()), (
        f"{prop.written}: the {rule.check} check never reports {rule.attribute!r}")


def test_the_readme_shows_the_pinned_torchs_totals() -> None:
    if installed_torch() != pinned_torch():
        pytest.skip(f"the README shows the pinned torch {pinned_torch()}")
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Properties read and why some are not"):]
    assert markdown_totals(PROPS) in section


def test_the_table_prints_with_its_totals(capsys: pytest.CaptureFixture[str]) -> None:
    main()
    out = capsys.readouterr().out
    assert "| group | properties | compared | explained | unexplained |" in out
    assert "| `t.is_conj()` | compared: `metadata` check, `is_conj()` |" in out
    assert out.count("\n| `") == len(PROPS)


# -- what the rules claim compared is compared: a fake differing in it fails ---------------

def _like(real: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    return torch.empty_strided(real.shape, real.stride(), dtype=real.dtype, device="meta",
                               **kwargs)


def _fortran_order(real: torch.Tensor) -> torch.Tensor:
    return torch.empty(real.shape[::-1], dtype=real.dtype, device="meta").permute(
        tuple(reversed(range(real.dim()))))


def _inference(real: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return _like(real)


# property (as written) -> how to make a fake that differs in it (None: not for this real)
FLIPS: dict[str, Callable[[torch.Tensor], torch.Tensor | None]] = {
    "t.requires_grad": lambda r: _like(r).requires_grad_(),
    "t.is_conj()": lambda r: _like(r).conj() if r.is_complex() else None,
    "t.is_neg()": lambda r: torch._neg_view(_like(r)) if r.is_complex() else None,
    "t.is_inference()": _inference,
    "MetaTensorDesc.is_parameter": lambda r: torch.nn.Parameter(_like(r), requires_grad=False),
    "t._is_zerotensor()": lambda r: torch._efficientzerotensor(
        r.shape, dtype=r.dtype, device="meta"),
    "t.is_contiguous()": _fortran_order,
    "DispatchKey.SparseMeta": lambda r: torch.empty(r.shape, dtype=r.dtype, device="meta",
                                                    layout=torch.sparse_coo),
    "MetaTensorDesc.dtype": lambda r: torch.empty_strided(
        r.shape, r.stride(), dtype=torch.float64 if r.dtype != torch.float64 else torch.float32,
        device="meta"),
}


@pytest.mark.parametrize("flip", sorted(FLIPS))
@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(real=meta_tensors(kinds=["dense"], dtype=["float32", "complex64"], requires_grad=False,
                         max_dims=4))
def test_a_fake_differing_in_a_compared_property_fails_under_its_attribute(
        flip: str, real: torch.Tensor) -> None:
    assume(FLIPS[flip](real) is not None)
    rule = BY_WRITTEN[flip].rule
    assert isinstance(rule, Compared)
    if flip == "t.is_contiguous()":  # the memory formats it differs in, whichever they are
        fake = _fortran_order(real)
        expected = {contiguity_attribute(f) for f in memory_formats()
                    if real.is_contiguous(memory_format=f) != fake.is_contiguous(memory_format=f)}
        assume(expected)
    else:
        expected = {rule.attribute}
    with faulty("meta", lambda conv, r, fake: FLIPS[flip](r)):
        outcome = check_faithful(real, converters=["faulty"], checks=[rule.check]).outcomes[0]
    reported = {m.attribute for m in (*outcome.mismatches, *(m for _, m in outcome.known))}
    assert expected <= reported, outcome.describe()
    assert outcome.status in (FAILED, KNOWN)


def test_a_fake_of_a_zero_tensor_is_a_known_difference() -> None:
    outcome = check_faithful(torch._efficientzerotensor(3), converters=["fake"]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert "zero-tensor-key-lost" in outcome.describe()


def test_the_fake_device_backend_is_not_a_difference() -> None:
    """SparseCPU on the real tensor, SparseMeta on the meta converter's."""
    sparse = torch.eye(3).to_sparse()
    for converter in ("meta", "fake"):
        outcome = check_faithful(sparse, converters=[converter], checks=["oracle"]).outcomes[0]
        assert not [m for m in outcome.mismatches if "dispatch_keys" in m.attribute], (
            outcome.describe())


def test_memory_reads_are_refused_where_the_storage_is_short() -> None:
    shrunk = torch.randn(10)
    shrunk.untyped_storage().resize_(0)
    reading = TensorReading(shrunk)
    for written in ("t.is_pinned()", "t.is_shared()", "t.untyped_storage().is_pinned()",
                    "t.is_nonzero()"):
        with pytest.raises(NotRead, match="reads memory"):
            read_value(BY_WRITTEN[written], reading)
    with pytest.raises(NotRead, match="sparse COO only"):
        read_value(BY_WRITTEN["t.is_coalesced()"], reading)
    with pytest.raises(NotRead, match="changes the tensor"):
        read_value(BY_WRITTEN["t.requires_grad_()"], reading)
    assert not shrunk.requires_grad
    assert read_value(BY_WRITTEN["t.is_pinned()"], TensorReading(torch.randn(3))) == "False"
    assert read_value(BY_WRITTEN["DispatchKey.CPU"], reading) == "True"


def test_oracle_names_the_memory_format_a_fake_is_not_contiguous_in() -> None:
    real = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    with faulty("meta", lambda conv, r, fake: torch.empty(r.shape, device="meta")):
        outcome = check_faithful(real, converters=["faulty"], checks=["oracle"]).outcomes[0]
    found = {m.attribute: (m.real, m.fake) for m in outcome.mismatches}
    assert found["is_contiguous(memory_format=torch.channels_last)"] == (True, False)
    assert found["is_contiguous(memory_format=torch.contiguous_format)"] == (False, True)


def test_symbolic_fakes_are_not_asked_for_their_contiguity(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading is_contiguous of symbolic sizes would add guards: the oracle
    compares their strides' hints instead."""
    from pytest_metafidelity.checks import oracle
    from pytest_metafidelity.checks._util import has_symbolic

    asked: list[bool] = []
    read = oracle.read_contiguity
    monkeypatch.setattr(oracle, "read_contiguity", lambda t: (asked.append(has_symbolic(t)),
                                                              read(t))[1])
    real = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    for converter in ("fake-dynamic", "fake"):
        outcome = check_faithful(real, converters=[converter], checks=["oracle"]).outcomes[0]
        assert outcome.status == "passed", outcome.describe()
    assert asked == [False, False]  # the static fake and its real tensor only
