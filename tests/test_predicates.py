"""Representative predicates of the known differences, on tensors where we
can say what torch does: each holds exactly where torch shows the
difference (the predicates are exact by contract)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import torch

from pytest_metafidelity import check_faithful
from pytest_metafidelity.checks import Conversion
from pytest_metafidelity.checks._util import walk_real
from pytest_metafidelity.converters import make_converter
from pytest_metafidelity.known_differences import Case
from pytest_metafidelity.known_differences.definitions.real_tensors import (
    any_copy_fails,
    carries_conj_neg,
    meta_carried_storage_short_of_reach,
)
from pytest_metafidelity.known_differences.definitions.sparse import is_sparse_with_elements
from pytest_metafidelity.known_differences.definitions.storage import (
    shares_version_counter_outside_view_tree,
    storage_sized_to_tensors,
)


class Converted:
    """A conversion of ``tensors`` by the converter ``name``, as the triage
    sees it: :meth:`case` gives the Case of the tensor at a path."""

    def __init__(self, name: str, *tensors: torch.Tensor) -> None:
        self.name = name
        self.converter = make_converter(name)
        names = tuple(f"t{i}" for i in range(len(tensors)))
        fakes = tuple(self.converter.convert(t) for t in tensors)
        self.conversion = Conversion(names, tensors, fakes, self.converter,
                                     order=tuple(range(len(tensors))))
        self.nodes = dict(walk_real(names, tensors))
        self.family = tuple(self.nodes.values())

    def case(self, path: str) -> Case:
        return Case(self.name, path, self.nodes[path], self.family, self.conversion)

    def fake(self, i: int) -> Any:
        return self.conversion.fake[i]


@pytest.fixture
def convert() -> Iterator[Any]:
    made: list[Converted] = []

    def run(name: str, *tensors: torch.Tensor) -> Converted:
        made.append(Converted(name, *tensors))
        return made[-1]

    yield run
    for c in made:
        c.converter.close()


def _shrunk() -> torch.Tensor:
    x = torch.randn(10)
    x.resize_(3)  # the storage keeps its 40 bytes
    return x


@pytest.mark.parametrize("converter", ["meta", "fake", "fake-dynamic"])
def test_storage_sized_to_tensors_holds_where_the_storage_shrinks(convert: Any,
                                                                 converter: str) -> None:
    shrunk = convert(converter, _shrunk())
    assert shrunk.fake(0).untyped_storage().nbytes() == 12  # what torch does
    assert storage_sized_to_tensors(shrunk.case("t0")) is (converter != "fake-dynamic")
    # (with symbolic sizes the storage size is symbolic: the storage check cannot see it)
    plain = convert(converter, torch.randn(3))
    assert plain.fake(0).untyped_storage().nbytes() == 12
    assert not storage_sized_to_tensors(plain.case("t0"))


def test_storage_sized_to_tensors_follows_a_later_alias(convert: Any) -> None:
    x = torch.randn(8)
    window = torch.empty(0).set_(x.untyped_storage(), 0, (2,), (1,))
    # the window first: its storage is sized to 2 elements, then grown by x
    c = convert("fake", window, x)
    assert c.fake(0).untyped_storage().nbytes() == 32
    assert not storage_sized_to_tensors(c.case("t0"))
    # the window alone: 8 bytes where the real storage has 32
    alone = convert("fake", window)
    assert alone.fake(0).untyped_storage().nbytes() == 8
    assert storage_sized_to_tensors(alone.case("t0"))


def test_version_counters_are_shared_along_views_only(convert: Any) -> None:
    x = torch.randn(3)
    detached, view = x.detach(), x[1:]
    c = convert("fake", x, detached, view)
    fx, fd, fv = (c.fake(i) for i in range(3))
    before = fx._version, fd._version
    torch.autograd.graph.increment_version(fv)
    # what torch does: the view's base sees the bump, the detached alias not
    assert (fx._version, fd._version) == (before[0] + 1, before[1])
    assert shares_version_counter_outside_view_tree(c.case("t0"))
    assert shares_version_counter_outside_view_tree(c.case("t1"))
    assert not shares_version_counter_outside_view_tree(convert("fake", x, view).case("t0"))


def test_sparse_nnz_holds_for_elements_only(convert: Any) -> None:
    c = convert("fake", torch.eye(3).to_sparse(), torch.zeros(2, 2).to_sparse())
    assert (c.fake(0)._nnz(), c.fake(1)._nnz()) == (0, 0)
    assert is_sparse_with_elements(c.case("t0"))
    assert not is_sparse_with_elements(c.case("t1"))  # nnz 0 on both sides


def test_carried_conj_bits(convert: Any) -> None:
    x, y = torch.randn(3, dtype=torch.complex64), torch.randn(3, dtype=torch.complex64)
    c = convert("fake-real", x.conj(), y)
    assert c.fake(0).is_conj() and not c.fake(0).real_tensor.is_conj()  # what torch does
    assert carries_conj_neg(c.case("t0"))
    assert not carries_conj_neg(c.case("t1"))


def test_copy_fails_where_copying_the_values_raises() -> None:
    sub_byte = torch.empty(2, dtype=torch.int3)
    overlapping = torch.empty(0).set_(torch.randn(4).untyped_storage(), 0, (4,), (0,))
    for t in (sub_byte, overlapping):
        conversion = Conversion(("t0",), (t,), (None,), None)
        assert any_copy_fails(Case("fake-real", "t0", t, (t,), conversion))
        with pytest.raises((RuntimeError, NotImplementedError)):
            make_converter("fake-real").convert(t)
    plain = torch.randn(3)
    conversion = Conversion(("t0",), (plain,), (None,), None)
    assert not any_copy_fails(Case("fake-real", "t0", plain, (plain,), conversion))


def test_meta_carried_storage_short_of_reach_holds_for_a_view_past_an_empty_alias(
        convert: Any) -> None:
    storage = torch.zeros(3, device="meta").untyped_storage()
    alias = torch.empty(0, device="meta").set_(storage, 0, (0,), (1,))
    short = convert("fake-real", alias.as_strided((), (), 2))
    assert short.fake(0).untyped_storage().nbytes() == 0  # what torch does: 12 real bytes
    assert meta_carried_storage_short_of_reach(short.case("t0"))
    assert meta_carried_storage_short_of_reach(short.case("t0._base"))
    # The storage's first tensor reaching as far: the carried storage is big enough.
    whole = convert("fake-real", torch.zeros(3, device="meta").as_strided((), (), 2))
    assert whole.fake(0).untyped_storage().nbytes() == 12
    assert not meta_carried_storage_short_of_reach(whole.case("t0"))


def test_a_meta_functional_tensor_past_its_storage_is_judged_exactly_under_a_shape_env() -> None:
    """Run U (seed 20261229): a C++ functional tensor over a meta view that
    reaches as far as its storage, through fake-real-dynamic.  The fake's
    storage size is symbolic there, which the storage check does not
    compare; the carried tensors of the value and its base
    (``t0.unwrapped.real_tensor``, ``t0.unwrapped._base.real_tensor``) have
    a static size, sized for the base, short of the view's reach:
    real-meta-storage-short-of-alias, which counts the value and its base
    among the tensors on the storage though the family holds neither."""
    from pytest_metafidelity import check_faithful

    base = torch.zeros(4, dtype=torch.complex32, device="meta")
    base.resize_((3,))
    view = base.view((3, 1)).diagonal(2, 1, 0).as_strided((0,), (0,), 1).as_strided(
        (2,), (3,), 0)
    t = torch._to_functional_tensor(view)
    for converter in ("fake-real", "fake-real-dynamic"):
        judged_exactly(check_faithful(t, converters=[converter]).outcomes[0],
                       "real-meta-storage-short-of-alias")
    judged_exactly(check_faithful(t, converters=["fake-dynamic"]).outcomes[0], None)


def judged_exactly(outcome: Any, entry_id: str | None) -> None:
    """The outcome is the known difference ``entry_id`` alone (None: it
    passed), and no entry expected a difference that did not occur."""
    assert outcome.unexpectedly_passing == []
    if entry_id is None:
        assert outcome.status == "passed", outcome.describe()
    else:
        assert outcome.status == "known-difference", outcome.describe()
        assert {e for e, _ in outcome.known} == {entry_id}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("converter", ["fake-dynamic", "refake-fresh"])
def test_a_zero_element_functional_tensor_at_an_offset_is_judged_exactly(
        device: str, converter: str) -> None:
    """The closing resize_(0) of a zero-byte storage raises on a functional
    storage, except on the meta device, where it empties the storage: both
    functional storage-size entries hold exactly where torch shows their
    difference (the meta case was reported 'unexpectedly passing')."""
    storage = torch.arange(4, dtype=torch.float64, device=device).untyped_storage()
    inner = torch.empty(0, dtype=torch.float64, device=device).set_(storage, 1, (0, 4), (5, 1))
    wrapper = torch._to_functional_tensor(inner.diagonal(1, 0, 1))
    assert wrapper.untyped_storage().nbytes() == 0

    (outcome,) = check_faithful(wrapper, converters=[converter]).outcomes
    judged_exactly(outcome, None if device == "meta" else "dynamic-functional-zero-byte-resize")


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_python_functional_tensor_at_an_offset_is_judged_exactly(device: str) -> None:
    """Carrying a real tensor clones the storage of a FunctionalTensor
    installed with set_: that raises on a functional storage, except on the
    meta device (the meta case was reported 'unexpectedly passing')."""
    from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
    from torch.utils._python_dispatch import _disable_current_modes

    with FunctionalTensorMode():
        with _disable_current_modes():
            storage = torch.arange(6, dtype=torch.float16, device=device).untyped_storage()
            inner = torch.empty(0, dtype=torch.float16, device=device).set_(storage, 2, (), ())
        wrapper = FunctionalTensor.to_functional(inner)[...]
        outcome = check_faithful(wrapper, converters=["fake-real"], checks=["metadata"]).outcomes[0]
    judged_exactly(outcome, None if device == "meta" else "real-functional-tensor-storage-clone")


def test_every_behaviour_entry_reads_what_the_check_recorded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The triage of a behaviour check that found nothing is skipped when no
    # entry to expect can hold without a record (known_differences/triage.py):
    # every entry the behaviour check observes must say which record it reads.
    from pytest_metafidelity.known_differences import registry, triage
    from pytest_metafidelity.strategies import tensor_facts

    observed = [e for e in registry() if "behaviour" in e.checks]
    assert observed
    assert [e.id for e in observed if getattr(e.applies, "reads_record", None) is None] == []
    # ... and a conversion where the check recorded nothing is judged without
    # walking its tensors; one where it recorded something is walked.
    walked: list[str] = []
    walk = tensor_facts.walk_real
    monkeypatch.setattr(tensor_facts, "walk_real",
                        lambda *a, **k: walked.append("walked") or walk(*a, **k))
    t = torch.zeros(2, requires_grad=True)
    conv = Conversion(("t0",), (t,), (t.detach(),), None)
    judged = triage("fake", [], conv, {"behaviour"})
    assert (judged.unexplained, judged.explained, judged.unexpectedly_passing) == ([], [], [])
    assert walked == []
    triage("fake", [], conv, {"oracle"})  # (the oracle's entries read no record)
    assert walked


def _kept_from_grad(intermediate: bool, offset: int = 0) -> torch.Tensor:
    kept: list[torch.Tensor] = []
    x = torch.arange(4.0)[offset:]
    torch.func.grad(lambda x: (kept.append(x * 2 if intermediate else x), x.sum())[1])(x)
    return kept[0]


@pytest.mark.parametrize("converter", ["meta", "fake", "fake-dynamic", "fake-real", "refake"])
@pytest.mark.parametrize("intermediate", [False, True])
def test_a_grad_wrapper_kept_past_its_transform_converts_unwrapped(
        converter: str, intermediate: bool) -> None:
    # Level -2: MetaConverter converts the tensor inside it, by design; the
    # live-level entries (a non-leaf raising, the meta wrapper's keys, what is
    # inside the wrapper) do not apply, and none is expected.
    t = _kept_from_grad(intermediate, offset=1)
    assert torch._C._functorch.maybe_get_level(t) == -2
    outcome = check_faithful(t, converters=[converter]).outcomes[0]
    assert outcome.status == "known-difference", outcome.describe()
    ids = {entry_id for entry_id, _ in outcome.known}
    assert "functorch-escaped-grad-unwrapped" in ids
    # the rebuilt inner tensor starts at offset 0, as inside a live wrapper
    assert ids <= {"functorch-escaped-grad-unwrapped", "functorch-inner-storage-offset",
                   "functorch-inner-storage-nbytes", "real-copy-fails"}, ids
    attributes = {m.attribute for entry_id, m in outcome.known
                  if entry_id == "functorch-escaped-grad-unwrapped"}
    assert {"is_functorch_wrapped_tensor", "is_gradtrackingtensor"} <= attributes
    assert ("is_leaf" in attributes) is intermediate


def test_a_live_grad_wrapper_is_not_taken_for_an_escaped_one() -> None:
    from pytest_metafidelity.strategies.tensor_facts import is_escaped_grad_wrapper

    seen: list[bool] = []
    torch.func.grad(lambda x: (seen.append(is_escaped_grad_wrapper(x)), x.sum())[1])(
        torch.ones(2))
    assert seen == [False]
    assert is_escaped_grad_wrapper(_kept_from_grad(False))
    assert not is_escaped_grad_wrapper(torch.ones(2))


@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_view_of_a_compressed_tensor_is_not_refused_and_its_conversion_raises(
        layout: str, requires_grad: bool) -> None:
    # A view of a COO tensor is refused (unsupported); a view of a compressed
    # one is not, and its conversion raises: the entry explains that, on
    # every converter, and not a COO view's refusal.
    blocks = {"sparse_bsr": (1, 1), "sparse_bsc": (1, 1)}.get(layout)
    s = torch.eye(2).to_sparse(layout=getattr(torch, layout), blocksize=blocks)
    s.requires_grad_(requires_grad)
    for outcome in check_faithful(s.values()).outcomes:
        if outcome.converter == "functional" and requires_grad:
            # (not attempted: the process would abort, functional-sparse-compressed-grad-abort)
            assert outcome.known[0][0] == "functional-sparse-compressed-grad-abort"
            continue
        assert outcome.status == "known-difference", outcome.describe()
        assert {entry_id for entry_id, _ in outcome.known} == {
            "compressed-values-view-unconvertible"}, outcome.describe()
    coo = torch.eye(2).to_sparse()
    assert {o.status for o in check_faithful(coo.values()).outcomes} == {"unsupported"}
