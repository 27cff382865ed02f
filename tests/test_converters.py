"""Converters, outcomes and the known-difference registry."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
import weakref
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_metafidelity.converters import (
    CONVERTERS,
    Converter,
    ConverterSpec,
    Unsupported,
    available_converters,
    make_converter,
)
from pytest_metafidelity.faithful import (
    FAILED,
    KNOWN,
    PASSED,
    UNSUPPORTED,
    XPASS,
    FidelityError,
    assert_faithful,
    check_faithful,
)
from pytest_metafidelity import known_differences as kd
from pytest_metafidelity.strategies import recipes

ALL = list(CONVERTERS)
EXPECTED_NAMES = ["meta", "fake", "fake-dynamic", "fake-real", "fake-real-dynamic", "refake",
                  "refake-fresh", "functional"]


def test_every_converter_is_named_documented_and_available() -> None:
    assert ALL == EXPECTED_NAMES
    for name, spec in CONVERTERS.items():
        assert spec.summary, name
        assert spec.unavailable() is None, name
    assert available_converters() == ALL


def test_unknown_converter_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown converter 'nope'; allowed: meta, fake"):
        check_faithful(torch.ones(2), converters=["nope"])


def test_tensors_given_as_one_tuple_are_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"argument 0 of check_faithful\(\) is of type tuple, "
                       r"not a torch.Tensor \(the tensors are separate arguments"):
        check_faithful((torch.ones(2), torch.ones(3)), converters=["fake"])
    with pytest.raises(TypeError, match="argument 1 of check_faithful.. is of type int"):
        check_faithful(torch.ones(2), 3, converters=["fake"])


def _statuses(*tensors: torch.Tensor, **kwargs) -> dict[str, str]:
    result = check_faithful(*tensors, **kwargs)
    return {o.converter: o.status for o in result.outcomes}


@pytest.mark.parametrize("converter", ALL)
def test_converts_a_plain_tensor(converter: str) -> None:
    c = make_converter(converter)
    t = torch.randn(3, 4)
    f = c.convert(t)
    assert f.shape == t.shape and f.dtype == t.dtype
    assert f.device == (torch.device("meta") if converter == "meta" else t.device)
    c.close()
    assert _statuses(t, converters=[converter]) == {converter: PASSED}


@pytest.mark.parametrize("converter", ALL)
def test_converts_a_view_family_sharing_base_and_storage(converter: str) -> None:
    base = torch.randn(4, 6)
    view = base[1:].t()
    c = make_converter(converter)
    fv, fb = c.convert(view), c.convert(base)
    assert fv._is_view() and fv._base is fb
    assert fv.untyped_storage()._cdata == fb.untyped_storage()._cdata
    assert c.convert(base) is fb
    c.close()
    assert _statuses(view, base, converters=[converter], order=[0, 1]) == {converter: PASSED}


@pytest.mark.parametrize("converter", ALL)
def test_converts_a_set_alias(converter: str) -> None:
    x = torch.randn(8)
    alias = torch.empty(0).set_(x.untyped_storage(), 2, (3,), (2,))
    c = make_converter(converter)
    fx, fa = c.convert(x), c.convert(alias)
    assert (fa.shape, fa.stride(), fa.storage_offset()) == ((3,), (2,), 2)
    c.close()
    result = check_faithful(x, alias, converters=[converter])
    outcome = result.outcomes[0]
    if converter == "functional":
        # FunctionalTensor.to_functional gives each wrapper its own storage.
        assert outcome.status == KNOWN, outcome.describe()
        assert "functional-separate-storages" in outcome.reason
    else:
        assert outcome.status == PASSED, outcome.describe()
        assert fx.untyped_storage()._cdata == fa.untyped_storage()._cdata


def test_one_converter_instance_per_family_and_order_is_respected() -> None:
    seen: list[int] = []

    class Recording(Converter):
        name = "recording"

        def __init__(self) -> None:
            self.impl = make_converter("fake")

        def _convert(self, t: torch.Tensor) -> torch.Tensor:
            seen.append(id(self))
            seen.append(id(t))
            return self.impl.convert(t)

    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    spec = ConverterSpec("recording", "records", Recording)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, "recording", spec)
        check_faithful(a, b, c, converters=["recording"], checks=["metadata"], order=[2, 0, 1])
    assert seen[1::2] == [id(c), id(a), id(b)]
    assert len(set(seen[0::2])) == 1


# -- unsupported and crashes ---------------------------------------------------------


def test_meta_converter_not_implemented_is_unsupported() -> None:
    q = torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8)
    result = check_faithful(q, converters=["meta", "fake"])
    meta, fake = result.outcomes
    assert meta.status == UNSUPPORTED and "NotImplemented" in meta.reason
    assert fake.status == UNSUPPORTED and "UnsupportedFakeTensorException" in fake.reason
    assert result.ok


def test_dynamo_unimplemented_is_unsupported() -> None:
    from torch._dynamo.exc import unimplemented

    class Refusing(Converter):
        name = "refusing"

        def _convert(self, t: torch.Tensor) -> torch.Tensor:
            unimplemented(gb_type="test refusal", context="", explanation="refused", hints=[])

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, "refusing", ConverterSpec("refusing", "", Refusing))
        outcome = check_faithful(torch.ones(2), converters=["refusing"]).outcomes[0]
    assert outcome.status == UNSUPPORTED, outcome.describe()
    assert outcome.reason.startswith("dynamo unimplemented")


def test_strided_nested_tensor_crash_is_a_known_failure() -> None:
    # MetaConverter means to refuse it (Dynamo unimplemented) but crashes first.
    nested = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])
    outcome = check_faithful(nested, converters=["fake"]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert "strided-nested-describe-crash" in outcome.reason
    strict = check_faithful(nested, converters=["fake"], strict=True).outcomes[0]
    assert strict.status == FAILED
    assert "doesn't support sizes" in strict.mismatches[0].fake


def test_unavailable_converter_is_unsupported() -> None:
    spec = ConverterSpec("missing", "needs a newer torch", Converter, lambda: "too old")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, "missing", spec)
        outcome = check_faithful(torch.ones(2), converters=["missing"]).outcomes[0]
    assert outcome.status == UNSUPPORTED and "too old" in outcome.reason


def test_any_other_exception_is_a_failure() -> None:
    class Crashing(Converter):
        name = "crashing"

        def _convert(self, t: torch.Tensor) -> torch.Tensor:
            raise KeyError("boom")

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, "crashing", ConverterSpec("crashing", "", Crashing))
        result = check_faithful(torch.ones(2), converters=["crashing"])
    outcome = result.outcomes[0]
    assert outcome.status == FAILED
    assert outcome.mismatches[0].check == "conversion"
    assert "KeyError: 'boom'" in outcome.mismatches[0].fake
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CONVERTERS, "crashing", ConverterSpec("crashing", "", Crashing))
        with pytest.raises(FidelityError, match="KeyError"):
            assert_faithful(torch.ones(2), converters="crashing")


def test_unsupported_converter_refusal_raises_unsupported() -> None:
    c = make_converter("meta")
    with pytest.raises(Unsupported):
        c.convert(torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8))


# -- fake-real -------------------------------------------------------------------------


@pytest.mark.parametrize("converter", ["fake-real", "fake-real-dynamic"])
def test_fake_real_carries_equal_real_tensors(converter: str) -> None:
    base = torch.randn(4, 5)
    view = base[1:, ::2]
    other = torch.arange(6.0)
    c = make_converter(converter)
    fv, fb, fo = c.convert(view), c.convert(base), c.convert(other)
    for real, fake in ((view, fv), (base, fb), (other, fo)):
        carried = fake.real_tensor
        assert carried is not real
        assert carried.shape == real.shape and carried.stride() == real.stride()
        assert carried.storage_offset() == real.storage_offset()
        assert torch.equal(carried, real)
    # The carried tensors alias as the originals do.
    assert fv.real_tensor.untyped_storage()._cdata == fb.real_tensor.untyped_storage()._cdata
    assert fo.real_tensor.untyped_storage()._cdata != fb.real_tensor.untyped_storage()._cdata
    c.close()
    assert _statuses(view, base, other, converters=[converter]) == {converter: PASSED}


def test_fake_real_restores_the_global_flag() -> None:
    import torch._functorch.config as cfg

    before = cfg.fake_tensor_propagate_real_tensors
    make_converter("fake-real")
    assert cfg.fake_tensor_propagate_real_tensors == before


@pytest.mark.parametrize("converter", ["fake-real", "fake-real-dynamic"])
@pytest.mark.parametrize("users_setting", [None, "warn_only", "strict"])
def test_bytes_a_carried_copy_leaves_out_are_filled_and_the_settings_restored(
        converter: str, users_setting: str | None) -> None:
    """MetaConverter does not copy an nn.Parameter's values into its carried
    tensor: those bytes are what torch.empty handed out.  They are filled
    (NaN), so a Parameter of zeros differs from its carried copy in every
    process, not only where the allocator handed out dirty memory; and the
    user's deterministic settings are as they were afterwards."""
    import torch.utils.deterministic as deterministic

    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled(),
              deterministic.fill_uninitialized_memory)
    try:
        if users_setting is not None:
            torch.use_deterministic_algorithms(True, warn_only=users_setting == "warn_only")
            deterministic.fill_uninitialized_memory = False  # type: ignore[assignment]
        setting = (torch.are_deterministic_algorithms_enabled(),
                   torch.is_deterministic_algorithms_warn_only_enabled(),
                   deterministic.fill_uninitialized_memory)
        p = torch.nn.Parameter(torch.zeros(64))
        c = make_converter(converter)
        carried = c.convert(p).real_tensor
        c.close()
        assert carried.isnan().all(), carried
        assert (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
                deterministic.fill_uninitialized_memory) == setting
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        deterministic.fill_uninitialized_memory = before[2]  # type: ignore[assignment]


@pytest.mark.parametrize("dtype", [torch.float4_e2m1fn_x2, torch.bits8])
def test_a_dtype_torch_cannot_fill_is_converted_unfilled(dtype: torch.dtype) -> None:
    # torch.empty raises for them while uninitialized memory is filled.
    from pytest_metafidelity.converters import fills_uninitialized_memory

    t = torch.zeros(4, dtype=torch.uint8).view(dtype)
    assert not fills_uninitialized_memory(t) and not fills_uninitialized_memory(t[1:])
    assert fills_uninitialized_memory(torch.zeros(4, dtype=torch.uint8))
    assert _statuses(t, converters=["fake-real"]) == {"fake-real": PASSED}


def test_fake_real_refuses_to_segfault() -> None:
    t = torch.randn(3)
    t.untyped_storage().resize_(0)
    outcome = check_faithful(t, converters=["fake-real"], strict=True).outcomes[0]
    assert outcome.status == FAILED
    assert "ConversionCrash" in outcome.mismatches[0].fake
    outcome = check_faithful(t, converters=["fake-real"]).outcomes[0]
    assert outcome.status == KNOWN and "real-zero-byte-storage-segfault" in outcome.reason


@pytest.mark.parametrize("converter", ["fake-dynamic", "fake-real-dynamic"])
def test_dynamic_converters_refuse_to_segfault_reading_a_neg_scalar_without_bytes(
        converter: str) -> None:
    t = torch.zeros((), dtype=torch.float64)
    t.untyped_storage().resize_(0)
    neg = torch._neg_view(t)
    outcome = check_faithful(neg, converters=[converter], strict=True).outcomes[0]
    assert outcome.status == FAILED and "ConversionCrash" in outcome.mismatches[0].fake
    outcome = check_faithful(neg, converters=[converter]).outcomes[0]
    assert outcome.status == KNOWN
    # Without the negative bit torch raises: this guard lets it through
    # (fake-real-dynamic refuses it for the copy of its values).
    outcome = check_faithful(t, converters=[converter], strict=True).outcomes[0]
    assert "reads item()" not in str(outcome.mismatches[0].fake)


def test_refake_shares_or_renews_the_shape_env() -> None:
    t = torch.randn(3, 4)
    same, fresh = make_converter("refake"), make_converter("refake-fresh")
    a, b = same.convert(t), fresh.convert(t)
    assert a.fake_mode is not same.first.mode and a.fake_mode.shape_env is same.first.mode.shape_env
    assert b.fake_mode.shape_env is not fresh.first.mode.shape_env
    assert isinstance(a.shape[0], torch.SymInt) and isinstance(b.shape[0], torch.SymInt)


@pytest.mark.parametrize("converter", ["fake-dynamic", "fake-real-dynamic"])
def test_dynamic_converters_hand_tensors_over_as_dynamo_does(
        converter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo's call (a source, a StatefulSymbolicContext recorded in the
    TracingContext, structured tracing on), then a call with nothing but the
    tensor under that TracingContext, which must find Dynamo's context and
    give back the fake of the first call; no TracingContext is left active."""
    from torch._guards import TracingContext
    from torch._subclasses.fake_tensor import FakeTensorConverter
    from torch.fx.experimental.symbolic_shapes import StatefulSymbolicContext

    calls: list[dict[str, Any]] = []
    original = FakeTensorConverter.from_real_tensor

    def spy(self: Any, mode: Any, t: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        ctx = TracingContext.try_get()
        call = dict(kwargs, tensor=t, tracing=ctx,
                    recorded=ctx.tensor_to_context.get(t) if ctx is not None else None)
        calls.append(call)
        result = original(self, mode, t, *args, **kwargs)
        call["result"] = weakref.ref(result)  # (held weakly, as torch's memo holds it)
        return result

    monkeypatch.setattr(FakeTensorConverter, "from_real_tensor", spy)
    base = torch.randn(4, 3)
    view = base[1:].t()
    fake = make_converter(converter).convert(view)
    assert TracingContext.try_get() is None
    outer = [c for c in calls if c["tensor"] is view]
    assert len(outer) == 2, calls
    dynamo, later = outer
    context = dynamo["symbolic_context"]
    assert isinstance(context, StatefulSymbolicContext)
    assert context.tensor_source is dynamo["source"] and dynamo.get("trace", True) is True
    assert isinstance(context.view_base_context, StatefulSymbolicContext)
    assert dynamo["tracing"] is not None and later["tracing"] is dynamo["tracing"]
    assert later.get("source") is None and later.get("symbolic_context") is None
    assert later["recorded"] is context
    # one conversion: the first fake lived on until asked again
    assert later["result"]() is dynamo["result"]() is fake
    assert isinstance(fake.shape[0], torch.SymInt) and fake.stride() == view.stride()


def test_functional_round_trip_is_not_applicable_to_wrapped_tensors() -> None:
    from torch.testing._internal.two_tensor import TwoTensor

    two = TwoTensor(torch.randn(2), torch.randn(2))
    functional = torch._to_functional_tensor(torch.randn(2))
    for t, why in ((two, "tensor subclasses"), (functional, "already functional")):
        outcome = check_faithful(t, converters=["functional"]).outcomes[0]
        assert outcome.status == UNSUPPORTED and why in outcome.reason, outcome.describe()


def test_functional_round_trip_gives_plain_fakes_of_a_fresh_mode() -> None:
    from torch._subclasses.fake_tensor import FakeTensor

    c = make_converter("functional")
    base = torch.randn(4, 4)
    f = c.convert(base[1:])
    assert type(f) is FakeTensor and f.fake_mode is c.mode and f.fake_mode is not c.first
    assert f._is_view() and f._base is c.convert(base)


# -- known differences ---------------------------------------------------------------


def _oversized() -> torch.Tensor:
    t = torch.randn(10)
    t.resize_(3)
    return t


def test_known_difference_turns_outcome_known_with_entry_ids() -> None:
    outcome = check_faithful(_oversized(), converters=["fake"]).outcomes[0]
    assert outcome.status == KNOWN
    assert outcome.reason == "known differences: storage-sized-to-tensors"
    assert [entry for entry, _ in outcome.known] == ["storage-sized-to-tensors"]
    assert outcome.mismatches == []
    assert_faithful(_oversized(), converters=["fake"])


def test_strict_mode_fails_known_differences() -> None:
    result = check_faithful(_oversized(), converters=["fake"], strict=True)
    outcome = result.outcomes[0]
    assert outcome.status == FAILED and not result.ok
    assert outcome.mismatches[0].attribute == "untyped_storage().nbytes()"
    with pytest.raises(FidelityError, match="untyped_storage"):
        assert_faithful(_oversized(), converters=["fake"], strict=True)


def _entry(**overrides) -> kd.KnownDifference:
    fields = dict(id="test-entry", check="storage", attribute=r"untyped_storage\(\)\.nbytes\(\)",
                  applies=lambda case: case.tensor is not None, reason="a test entry",
                  link=kd.BY_DESIGN, converters=("fake",))
    fields.update(overrides)
    return kd.KnownDifference(**fields)


def test_unexpectedly_passing_entry_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", [*kd.KNOWN_DIFFERENCES, _entry()])
    plain = torch.randn(3)  # its storage is faithful: the test entry expects otherwise
    outcome = check_faithful(plain, converters=["fake"]).outcomes[0]
    assert outcome.status == XPASS
    assert outcome.unexpectedly_passing == ["test-entry"]
    assert "unexpectedly passing: test-entry" in outcome.reason
    with pytest.warns(kd.UnexpectedlyPassing, match="test-entry"):
        assert_faithful(plain, converters=["fake"])
    strict = check_faithful(plain, converters=["fake"], strict=True).outcomes[0]
    assert strict.status == FAILED
    assert strict.mismatches[0].check == "known-differences"
    assert strict.mismatches[0].attribute == "test-entry"
    # Only entries whose check ran can pass unexpectedly.
    other = check_faithful(plain, converters=["fake"], checks=["oracle"]).outcomes[0]
    assert other.status == PASSED


def test_conversion_entry_is_unexpectedly_passing_when_the_conversion_succeeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = _entry(check="conversion", attribute="raised", raises="some error")
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", [*kd.KNOWN_DIFFERENCES, entry])
    outcome = check_faithful(torch.randn(3), converters=["fake"]).outcomes[0]
    assert outcome.status == XPASS and outcome.unexpectedly_passing == ["test-entry"]


def _raising_converter(monkeypatch: pytest.MonkeyPatch, message: str) -> str:
    class Raising(Converter):
        name = "raising"

        def _convert(self, t: torch.Tensor) -> torch.Tensor:
            raise RuntimeError(message)

    monkeypatch.setitem(CONVERTERS, "raising", ConverterSpec("raising", "raises", Raising))
    return "raising"


def test_conversion_entry_explains_only_the_error_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = _raising_converter(monkeypatch, "the expected error")
    expected = _entry(id="expected", check="conversion", attribute="raised", converters=None,
                      raises=r"^RuntimeError: the expected")
    other = _entry(id="other", check="conversion", attribute="raised", converters=None,
                   raises="another error")
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", [expected, other])
    outcome = check_faithful(torch.randn(3), converters=[name]).outcomes[0]
    # "other" cannot be judged: the conversion stopped at the first error.
    assert outcome.status == KNOWN and outcome.reason == "known differences: expected"
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", [other])
    outcome = check_faithful(torch.randn(3), converters=[name]).outcomes[0]
    assert outcome.status == FAILED and "the expected error" in outcome.mismatches[0].fake


def test_each_conversion_starts_with_an_empty_dispatch_cache() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    with mode:
        mode.from_tensor(torch.randn(3)) * 2
    assert FakeTensorMode.cache
    make_converter("fake")
    assert not FakeTensorMode.cache


def test_registry_sees_tensors_inside_functorch_wrappers() -> None:
    import torch._functorch.vmap as vmap

    from pytest_metafidelity.checks._util import walk_real

    x = torch.empty(0).set_(torch.randn(8).untyped_storage(), 2, (3,), (1,)).requires_grad_()
    with vmap.vmap_increment_nesting(3, "error") as level:
        b = torch._C._functorch._add_batch_dim(x, 0, level)
        paths = dict(walk_real(("t0",), (b,), unwrap=True))
        assert paths["t0.unwrapped"] is x and "t0.unwrapped" not in dict(walk_real(("t0",), (b,)))
        outcome = check_faithful(b, converters=["fake"]).outcomes[0]
        assert outcome.status == KNOWN, outcome.describe()
        assert set(outcome.reason.removeprefix("known differences: ").split(", ")) == {
            "functorch-inner-requires-grad", "functorch-inner-storage-offset",
            "functorch-inner-storage-nbytes"}


def test_entries_are_gated_by_torch_version_and_converter(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _entry(until="2.0")
    assert not entry.active("fake")
    assert _entry(since="2.11").active("fake")
    assert not _entry(since="2.11").active("meta")
    assert kd.version_in_range("2.12.1", "2.11", "2.13")
    assert not kd.version_in_range("2.13.0", "2.11", "2.13")
    # An inactive entry explains nothing: the difference fails.
    fixed = [e if e.id != "storage-sized-to-tensors" else
             kd.KnownDifference(**{**e.__dict__, "until": "2.0"}) for e in kd.KNOWN_DIFFERENCES]
    monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", fixed)
    assert check_faithful(_oversized(), converters=["fake"]).outcomes[0].status == FAILED


def test_registry_entries_are_well_formed() -> None:
    ids = [e.id for e in kd.KNOWN_DIFFERENCES]
    assert len(ids) == len(set(ids))
    from pytest_metafidelity.checks import all_checks

    for e in kd.KNOWN_DIFFERENCES:
        assert e.reason and e.reproducer, e.id
        assert e.by_design or e.unfiled or e.link.startswith("https://github.com/"), e.id
        assert not (e.by_design and e.related), e.id
        assert all(r.startswith("https://github.com/") and r != e.link for r in e.related), e.id
        for name in e.checks:
            assert name in all_checks() or name == "conversion", (e.id, name)
        for name in e.converters or ():
            assert name in CONVERTERS, (e.id, name)
        assert e.describe().startswith(e.id)
        # An operator difference, and only one, has a condition on the control,
        # and explains the behaviour check's finding that names it.
        operator = e.id.startswith("op:")
        assert (e.on_control is not None) is operator, e.id
        if operator:
            assert e.checks == ("behaviour",), e.id
            assert re.fullmatch(e.attribute, f"op-difference {e.operator_name}"), e.id


class _CaseWithoutTensor:
    """A Case whose tensor and path cannot be read."""

    def __init__(self, case: kd.Case) -> None:
        self.converter, self.family, self.conversion = case.converter, case.family, case.conversion

    @property
    def tensor(self) -> None:
        pytest.fail("a family-wide predicate read case.tensor")

    @property
    def path(self) -> None:
        pytest.fail("a family-wide predicate read case.path")


@pytest.mark.parametrize("entry", [e for e in kd.KNOWN_DIFFERENCES
                                   if getattr(e.applies, "family_wide", False)],
                         ids=lambda e: e.id)
def test_family_wide_predicates_read_no_tensor_of_their_own(entry: kd.KnownDifference) -> None:
    # The triage asks a family-wide predicate once per case, not per tensor.
    from pytest_metafidelity.checks import Conversion
    from pytest_metafidelity.checks._util import walk_real

    base = torch.randn(4, 4, requires_grad=True)
    tensors = (base[1:].t(), torch.randn(3).to_sparse())
    names = ("t0", "t1")
    converter = make_converter("fake")
    fakes = tuple(converter.convert(t) for t in tensors)
    conv = Conversion(names, tensors, fakes, converter, order=(0, 1))
    family = tuple(t for _, t in walk_real(names, tensors))
    answers = {bool(entry.applies(_CaseWithoutTensor(kd.Case("fake", p, t, family, conv))))
               for p, t in walk_real(names, tensors)}
    assert len(answers) == 1


CRASHING = ("real-zero-byte-storage-segfault", "functional-sparse-compressed-grad-abort",
            "dynamic-zero-byte-neg-scalar-item-segfault")


@pytest.mark.parametrize(
    "entry", [e for e in kd.KNOWN_DIFFERENCES if e.id not in CRASHING], ids=lambda e: e.id
)
def test_known_difference_reproducer_reproduces_exactly_on_its_torch_versions(
    entry: kd.KnownDifference,
) -> None:
    """Inside the entry's [since, until) the reproducer runs; outside it, its
    assertion that the difference occurs fails."""
    code = compile(entry.reproducer, f"<{entry.id}>", "exec")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kd.version_in_range(None, entry.since, entry.until):
            exec(code, {})
        else:
            with pytest.raises(AssertionError):
                exec(code, {})


@pytest.mark.parametrize("entry_id", CRASHING)
def test_crash_reproducer_still_crashes_the_process(entry_id: str) -> None:
    entry = kd.by_id(entry_id)
    proc = subprocess.run([sys.executable, "-c", entry.reproducer], capture_output=True,
                          timeout=300)
    assert proc.returncode < 0, proc.stderr[-2000:]  # killed by a signal


# -- the property: stock torch is faithful except the registered differences --------


@pytest.mark.parametrize("converter", ALL)
@settings(max_examples=30, deadline=None)
@given(recipe=recipes(kinds=["dense", "view"]), data=st.data())
def test_stock_torch_is_faithful_except_known_differences(converter: str, recipe, data) -> None:
    tensors = recipe.build()
    order = data.draw(st.permutations(range(len(tensors))), label="order")
    with warnings.catch_warnings():
        warnings.simplefilter("error", kd.UnexpectedlyPassing)
        result = assert_faithful(*tensors, converters=[converter], order=order)
    assert result.outcomes[0].status in (PASSED, KNOWN, UNSUPPORTED), result.describe()


def test_suite_run_counts_the_entries_that_occurred_and_those_that_did_not() -> None:
    from pytest_metafidelity.checks import Mismatch
    from pytest_metafidelity.faithful import FidelityResult, Outcome
    from pytest_metafidelity.suite.run import SuiteRun

    m = Mismatch(
        check="storage", path="t0", attribute="untyped_storage().nbytes()", real=40, fake=12)
    run = SuiteRun(options=None)
    for reproducer in ("first()", "second()"):
        result = FidelityResult([
            Outcome("fake", "known-difference", known=[("storage-sized-to-tensors", m)]),
            Outcome("meta", "unexpectedly-passing", unexpectedly_passing=["retains-grad"]),
        ], reproducer)
        run.record_entries("item", result)
    assert run.known["item"] == {"storage-sized-to-tensors": 2}
    assert run.unexpectedly_passing["item"] == {"retains-grad": [2, "first()"]}


def test_view_reading_between_its_bases_elements_carries_uninitialized_values() -> None:
    # Found by the suite (view_family through fake-real): the carried storage
    # holds only the base's elements, and an as_strided view reads between them.
    x = torch.arange(9.0) + 0.5
    base = torch.empty(0).set_(x.untyped_storage(), 0, (1, 3), (5, 3))
    view = base.as_strided((3, 2), (1, 2), 1)
    outcome = check_faithful(base, view, converters=["fake-real"], checks=["oracle"],
                             order=[1, 0]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    assert [entry for entry, _ in outcome.known] == ["real-values-not-copied"]
    assert [m.path for _, m in outcome.known] == ["t2.real_tensor"]  # the view, as the
    # reproducer names it (t0, s1, t2)


def test_reproducer_of_hand_made_tensors_keeps_small_storages_bytes() -> None:
    x = torch.arange(9.0) + 0.5
    base = torch.empty(0).set_(x.untyped_storage(), 0, (1, 3), (5, 3))
    view = base.as_strided((3, 2), (1, 2), 1)
    large = torch.randn(2048)  # 8 KiB: rebuilt uninitialized
    result = check_faithful(base, view, large, converters=["meta"], checks=["metadata"])
    namespace: dict = {}
    exec(result.reproducer.split("\nfrom pytest_metafidelity")[0], namespace)
    t_base, t_view, t_large = (namespace[n] for n in ("t0", "t2", "t3"))
    assert torch.equal(t_base, base) and torch.equal(t_view, view)
    assert t_base.untyped_storage().nbytes() == x.untyped_storage().nbytes()
    assert t_large.shape == large.shape and "torch.empty(8192, dtype=torch.uint8)" in \
        result.reproducer



@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(recipe=recipes(family=None),
       converter=st.sampled_from(["fake", "fake-dynamic", "fake-real", "meta", "refake"]))
def test_a_predicate_needing_a_fact_holds_only_where_a_tensor_has_it(recipe: Any,
                                                                     converter: str) -> None:
    # The triage skips a predicate marked @needs(fact) on cases where no
    # tensor has the fact: that must never skip one that holds.
    from pytest_metafidelity.checks import Conversion
    from pytest_metafidelity.checks._util import walk_real
    from pytest_metafidelity.known_differences.facts import FACTS

    with recipe.active_contexts() as namespace:
        tensors, names = tuple(recipe.build_in(namespace)), recipe.outputs
        made = make_converter(converter)
        try:
            try:
                fakes = tuple(made.convert(t) for t in tensors)
            except Exception:  # the predicates judge refusals and crashes too
                fakes = (None,) * len(tensors)
            conversion = Conversion(names, tensors, fakes, made, order=tuple(range(len(names))))
            nodes = walk_real(names, tensors, unwrap=True)
            family = tuple(t for _, t in walk_real(names, tensors))
            everything = (*family, *(t for _, t in nodes))
            for e in kd.KNOWN_DIFFERENCES:
                fact = getattr(e.applies, "needs", None)
                if fact is None or not e.active(converter):
                    continue
                if any(FACTS[fact](t) for t in everything):
                    continue
                for path, t in nodes:
                    assert not e.applies(kd.Case(converter, path, t, family, conversion)), \
                        (e.id, fact, path)
        finally:
            made.close()

@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(recipe=recipes(family=None))
def test_the_triage_reads_the_same_facts_as_the_predicates_do(recipe: Any) -> None:
    # The triage answers some facts without asking (no plain tensor is
    # sparse, nested or a subclass): the answers must be FACTS' own.
    from pytest_metafidelity.checks._util import walk_real
    from pytest_metafidelity.known_differences.facts import FACTS
    from pytest_metafidelity.known_differences.triage import _CaseFacts

    with recipe.active_contexts() as namespace:
        tensors = tuple(recipe.build_in(namespace))
        everything = tuple(t for _, t in walk_real(recipe.outputs, tensors, unwrap=True))
        facts = _CaseFacts(everything)
        for fact, test in FACTS.items():
            assert facts.has(fact) == any(test(t) for t in everything), fact


@pytest.mark.parametrize("entry", [e for e in kd.KNOWN_DIFFERENCES
                                   if getattr(e.applies, "reads_record", None)],
                         ids=lambda e: e.id)
def test_a_predicate_reading_a_record_holds_only_where_something_was_recorded(
        entry: kd.KnownDifference) -> None:
    # The triage skips it where the conversion recorded nothing under that name.
    from pytest_metafidelity.checks import Conversion

    t = torch.randn(3)
    converter = make_converter("fake")
    try:
        conv = Conversion(("t0",), (t,), (converter.convert(t),), converter, order=(0,))
        attr = entry.applies.reads_record
        for nothing in (None, (), [], {}):
            if nothing is not None:
                setattr(conv, attr, nothing)
            assert not entry.applies(kd.Case("fake", "t0", t, (t,), conv))
    finally:
        converter.close()


def test_every_fact_a_predicate_needs_is_known() -> None:
    from pytest_metafidelity.known_differences import facts

    marked = {getattr(e.applies, "needs", None) for e in kd.KNOWN_DIFFERENCES} - {None}
    assert marked and marked <= set(facts.FACTS)
    with pytest.raises(ValueError, match="unknown fact"):
        facts.needs("shiny")


def test_reproducer_is_written_when_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_metafidelity.faithful as faithful

    written: list[str] = []
    original = faithful.reproducer_source

    def counting(*args: Any, **kwargs: Any) -> str:
        written.append("x")
        return original(*args, **kwargs)

    monkeypatch.setattr(faithful, "reproducer_source", counting)
    t = torch.randn(4)[1:]
    result = check_faithful(t, converters=["fake"], checks=["metadata"])
    assert result.ok and written == []
    source = result.reproducer
    assert written == ["x"] and "assert_faithful(" in source and "converters=['fake']" in source
    assert result.reproducer is source and written == ["x"]
    assert result == check_faithful(t, converters=["fake"], checks=["metadata"])
