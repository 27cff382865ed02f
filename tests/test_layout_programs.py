"""Programs on every layout: sparse COO and compressed tensors, nested
jagged tensors and wrapper subclasses draw steps from their own layout's
vocabulary, and what those programs meet on stock torch is judged exactly
(each difference below is one a harvest met, with the entry that explains
it)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import torch

from pytest_metafidelity import check_faithful
from pytest_metafidelity.faithful import KNOWN, PASSED
from pytest_metafidelity.strategies import Recipe
from pytest_metafidelity.strategies.programs import (
    VOCABULARIES, seeded_programs, vocabulary_kind, why_no_programs)

TWO_TENSOR = "from torch.testing._internal.two_tensor import TwoTensor"
SCALED = "from pytest_metafidelity.strategies.example_subclasses import ScaledTensor"
# behaviour-symbolic-sparse-op-unsupported holds since torch 2.13 (2.11 runs them).
TORCH = tuple(int(x) for x in torch.__version__.split(".")[:2])
SINCE_2_13 = pytest.mark.skipif(
    TORCH < (2, 13),
    reason="a symbolic sparse fake runs transpose, mul_ and zero_ before torch 2.13")
NJT = "torch.nested.nested_tensor_from_jagged(torch.arange(10.).reshape(5, 2), torch.tensor([0, 2, 5]))"


def built(*lines: str) -> tuple[Any, ...]:
    """The tensor ``t0`` of a recipe (the check rebuilds its real side from it)."""
    return Recipe(tuple(lines), ("t0",)).build()


def behaviour(lines: tuple[str, ...], program: str, converter: str) -> Any:
    return check_faithful(*built(*lines), converters=[converter], checks=["behaviour"],
                          program=program).outcomes[0]


def behaviour_of_all(lines: tuple[str, ...], program: str, converter: str) -> Any:
    """The behaviour check's outcome on every tensor the recipe names t0,
    t1, ... (in the order they are made), the program naming them so."""
    names = tuple(line.split(" = ")[0] for line in lines if re.match(r"t\d+ = ", line))
    return check_faithful(*Recipe(tuple(lines), names).build(), converters=[converter],
                          checks=["behaviour"], program=program).outcomes[0]


def known_ids(outcome: Any) -> list[str]:
    assert outcome.status == KNOWN, outcome.describe()
    return sorted({i for i, _ in outcome.known})


@pytest.mark.parametrize("lines, vocabulary", [
    (("t0 = torch.eye(3).to_sparse()",), "sparse_coo"),
    (("t0 = torch.eye(3).to_sparse_csr()",), "compressed"),
    (("t0 = torch.eye(4).to_sparse_bsc((2, 2))",), "compressed"),
    ((f"t0 = {NJT}",), "jagged"),
    ((TWO_TENSOR, "t0 = TwoTensor(torch.zeros(3), torch.zeros(3))"), "strided"),
    (("t0 = torch.zeros(2, 3)",), "strided"),
    (("t0 = torch.zeros(2, 3).to_mkldnn()",), "mkldnn"),
])
def test_each_layout_draws_from_its_own_vocabulary(lines: tuple[str, ...],
                                                   vocabulary: str) -> None:
    (t,) = built(*lines)
    assert why_no_programs((t,)) is None
    assert vocabulary_kind(t) == vocabulary
    names = {op.name for op in VOCABULARIES[vocabulary]}
    programs = seeded_programs((t,), 20, seed=3)
    # The first step acts on t0, the only live tensor (the schema-built
    # steps are opt-in: off here).
    assert {p.steps[0].op for p in programs} <= names
    # ... and the vocabulary's ops are drawn, not one of them only.
    assert len({p.steps[0].op for p in programs}) >= 3


def test_what_a_sparse_step_binds_draws_the_strided_vocabulary() -> None:
    (t,) = built("t0 = torch.eye(3).to_sparse()")
    ops = {s.op for p in seeded_programs((t,), 60, seed=1) for s in p.steps[1:]}
    # (_values() binds a strided tensor: views of it come from the strided ops)
    assert ops - {op.name for op in VOCABULARIES["sparse_coo"]}, ops


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_programs_do_not_apply_where_no_converted_tensor_can_follow() -> None:
    (m,) = built("t0 = torch.zeros(3, device='meta')")
    assert "t0 is a meta tensor" in why_no_programs((m,))
    q = torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.qint8)
    assert "t0 is quantized" in why_no_programs((q,))


def test_programs_run_on_a_functional_tensor_unless_its_value_reaches_past_its_storage() -> None:
    f = torch._to_functional_tensor(torch.zeros(3))
    assert why_no_programs((f,)) is None
    (cut,) = built("t1 = torch.zeros(3)", "t1.untyped_storage().resize_(0)",
                   "t0 = torch._to_functional_tensor(t1)")
    # (eager crashes on any op of it, even t0.transpose(0, 0))
    assert "reaches past the end of its storage" in why_no_programs((cut,))
    assert not seeded_programs((cut,), 5, seed=0)[0].steps


FUNCTIONAL = ("t0 = torch._to_functional_tensor(torch.arange(3.))",)


@pytest.mark.parametrize("converter", ["fake-real", "fake-real-dynamic"])
def test_a_functional_fakes_carried_tensor_is_compared_with_the_real_value(
        converter: str) -> None:
    # The fake carries its value's real tensor.  detach() of a functional
    # tensor shares the functional storage, not the value's; an in-place op
    # on an alias leaves an update pending, applied when a read syncs the
    # wrapper: neither differs from eager (found by seeded runs).
    assert behaviour(FUNCTIONAL, "p0 = t0.detach()", converter).status == PASSED
    assert behaviour(FUNCTIONAL, "p0 = torch.ops.aten.alias(t0)\np0.fill_(2)",
                     converter).status == PASSED


@pytest.mark.parametrize("converter", ["fake-dynamic", "fake-real-dynamic", "refake-fresh"])
@pytest.mark.parametrize("program", ["p0 = t0[0:1]", "p0 = t0.narrow(0, 1, 2)",
                                     "t0.requires_grad_(True)\nt0.sum().abs().backward()"])
def test_a_symbolic_functional_tensor_meets_kernels_of_concrete_sizes(converter: str,
                                                                      program: str) -> None:
    assert known_ids(behaviour(FUNCTIONAL, program, converter)) == [
        "behaviour-symbolic-functional-tensor-in-concrete-kernels"]
    assert behaviour(FUNCTIONAL, program, "fake").status == PASSED


def test_a_functional_view_of_unviewable_strides_runs_in_eager_only() -> None:
    lines = ("t0 = torch._to_functional_tensor(torch.arange(4.).reshape((2, 2, 1))"
             ".transpose(0, 1))",)
    entry = ["op:functional-view-of-unviewable-strides"]
    assert known_ids(behaviour(lines, "p0 = t0.view(-1)", "meta")) == entry
    fake = behaviour(lines, "p0 = t0.view(-1)", "fake")
    if TORCH < (2, 13):  # (FakeTensorMode's view_copy refused it too: ValueError)
        assert known_ids(fake) == entry
    else:
        assert fake.status == PASSED


@pytest.mark.parametrize("converter", ["meta", "fake", "fake-dynamic", "fake-real"])
def test_copy_of_an_empty_functional_tensor_moves_its_storage_offset_in_eager(
        converter: str) -> None:
    lines = ("t0 = torch._to_functional_tensor(torch.zeros((1, 0)).narrow(0, 1, 0)"
             ".transpose(0, 0))",)
    assert known_ids(behaviour(lines, "t0.copy_(t0)", converter)) == [
        "op:copy-of-empty-tensor-storage-offset"]
    assert behaviour(lines, "t0.zero_()", converter).status == PASSED


@pytest.mark.parametrize("converter, contiguity", [
    ("meta", True), ("fake", True),
    ("fake-dynamic", False),  # (shows the strides only)
])
def test_zeroing_an_empty_functional_tensor_restrides_it_in_eager(converter: str,
                                                                  contiguity: bool) -> None:
    # (the contiguity in channels_last follows from the strides)
    lines = ("t1 = torch.arange(0, dtype=torch.float64).reshape((0, 1, 0, 0)).remainder(7)"
             ".to(torch.float32)", "t0 = torch._to_functional_tensor(t1)")
    assert built(*lines)[0].stride() == (0, 0, 0, 1)
    outcome = behaviour(lines, "t0.zero_()", converter)
    assert known_ids(outcome) == ["behaviour-degenerate-strides"]
    assert {m.attribute for _, m in outcome.known} == {"stride()"} | (
        {"is_contiguous(memory_format=torch.channels_last)"} if contiguity else set())


def test_a_functional_tensors_copy_gets_the_values_of_the_original() -> None:
    from pytest_metafidelity.checks.behaviour import _copy_bytes

    original = torch._to_functional_tensor(torch.arange(4.))
    copy = torch._to_functional_tensor(torch.zeros(4))
    _copy_bytes((original,), (copy,), ("t0",))
    assert torch._from_functional_tensor(copy).tolist() == [0.0, 1.0, 2.0, 3.0]


# -- what programs on these layouts meet on stock torch ------------------------------------------


@pytest.mark.parametrize("converter", ["meta", "fake", "fake-dynamic", "fake-real"])
def test_a_sparse_fakes_missing_elements_explain_what_a_program_reads_of_them(
        converter: str) -> None:
    # A sparse fake has no specified elements by design (sparse-nnz): its
    # _values() has 0 rows where the real one has 3.
    outcome = behaviour(("t0 = torch.eye(3).to_sparse()",), "p0 = t0._values()", converter)
    assert known_ids(outcome) == ["behaviour-follows-known-difference"]


def test_a_sparse_tensor_with_no_elements_runs_its_program_like_the_real_one() -> None:
    lines = ("i0 = torch.empty((2, 0), dtype=torch.int64)", "v0 = torch.empty((0,))",
             "t0 = torch.sparse_coo_tensor(i0, v0, (2, 3))")
    program = "p0 = t0.coalesce()\np1 = p0._values()\nt0.mul_(2)\np2 = t0.to_dense()"
    for converter in ("fake", "functional"):
        outcome = behaviour(lines, program, converter)
        assert outcome.status == PASSED, outcome.describe()


def test_a_compressed_detach_with_real_tensor_propagation_is_a_known_operator_difference(
        ) -> None:
    # (no specified elements: sparse-nnz does not apply)
    outcome = behaviour(("t0 = torch.zeros(2, 3).to_sparse_csr()",), "p0 = t0.detach()",
                        "fake-real")
    assert known_ids(outcome) == ["op:real-propagation-sparse-compressed-strides"]


def test_a_meta_sparse_kernel_missing_is_a_known_operator_difference() -> None:
    lines = ("i0 = torch.empty((2, 0), dtype=torch.int64)", "v0 = torch.empty((0,))",
             "t0 = torch.sparse_coo_tensor(i0, v0, (2, 3))")
    assert known_ids(behaviour(lines, "t0.mul_(2)", "meta")) == ["op:sparse-meta-kernel-missing"]
    # FakeTensorMode has the rule: no difference.
    assert behaviour(lines, "t0.mul_(2)", "fake").status == PASSED


@SINCE_2_13
def test_a_symbolic_sparse_transpose_is_a_known_difference() -> None:
    lines = ("i0 = torch.empty((2, 0), dtype=torch.int64)", "v0 = torch.empty((0,))",
             "t0 = torch.sparse_coo_tensor(i0, v0, (2, 3))")
    outcome = behaviour(lines, "p0 = t0.transpose(0, 1)", "fake-dynamic")
    assert known_ids(outcome) == ["behaviour-symbolic-sparse-op-unsupported"]
    outcome = behaviour(lines, "t0.zero_()", "refake-fresh")
    assert known_ids(outcome) == ["behaviour-symbolic-sparse-op-unsupported"]
    assert behaviour(lines, "p0 = t0.transpose(0, 1)", "fake").status == PASSED


def test_set_of_a_wrapper_subclass_on_meta_is_a_known_operator_difference() -> None:
    lines = (TWO_TENSOR, "t0 = TwoTensor(torch.zeros(3), torch.zeros(3))")
    assert known_ids(behaviour(lines, "t0.set_()", "meta")) == ["op:wrapper-subclass-storage-on-meta"]
    # A fake wrapper is on the real device: it refuses like the real one.
    assert behaviour(lines, "t0.set_()", "fake").status == PASSED


def test_a_wrapper_subclass_runs_the_strided_steps_on_its_inner_tensors() -> None:
    lines = (TWO_TENSOR, "t0 = TwoTensor(torch.zeros(3, 4), torch.ones(3, 4))")
    program = "p0 = t0.transpose(0, 1)\np0.add_(1)\np1 = p0[1:]\nt0.requires_grad_(True)"
    for converter in ("meta", "fake", "fake-dynamic"):
        outcome = behaviour(lines, program, converter)
        assert outcome.status == PASSED, outcome.describe()


def test_a_nested_jagged_tensors_control_is_made_under_a_mode_with_a_shape_env() -> None:
    # reshape of a view in inference mode: not a view on a fake.  The
    # control (which needs a ShapeEnv for the ragged size) shows the same:
    # an operator difference, not "no control could be built".
    program = "p0 = t0.values()\nwith torch.inference_mode():\n    p1 = p0.reshape(-1)"
    outcome = behaviour((f"t0 = {NJT}",), program, "fake-dynamic")
    assert all(i.startswith("op:") for i in known_ids(outcome)), outcome.describe()


def test_a_one_element_literal_control_carries_no_constant() -> None:
    # Made under FakeTensorMode, torch.tensor(False) keeps its value as a
    # constant and mul_(2) then raises as eager does; a converted fake has
    # none.  The control must not: the difference is the operator's.
    outcome = behaviour(("t0 = torch.tensor(False)",), "t0.mul_(2)", "fake")
    assert known_ids(outcome) == ["op:bool-in-place-promotion"]


@pytest.mark.parametrize("converter", ["fake", "refake-fresh", "functional"])
def test_a_negative_view_of_compressed_values_is_a_known_operator_difference(
        converter: str) -> None:
    # Eager refuses it (the compressed base has no strides); a fake does
    # not.  No control can be made for a compressed tensor built from
    # index tensors: the errors decide.
    lines = ("i0 = torch.tensor([0, 0], dtype=torch.int64)",
             "i1 = torch.empty((0,), dtype=torch.int64)",
             "v0 = torch.zeros((0, 2, 1))",
             "t0 = torch.sparse_bsc_tensor(i0, i1, v0, (0, 1))")
    outcome = behaviour(lines, "p0 = t0.values()\np1 = torch._neg_view(p0)", converter)
    assert known_ids(outcome) == ["op:bit-view-of-compressed-values"]


def test_an_alias_of_a_resized_wrapper_on_meta_is_the_same_operator_difference() -> None:
    # After resize_, eager's detach sets the wrapper's (meta) storage onto a
    # cpu wrapper and refuses; on meta it runs.
    lines = ("from pytest_metafidelity.strategies.example_subclasses import ScaledTensor",
             "t0 = ScaledTensor(torch.zeros(()), 1.0, '')")
    outcome = behaviour(lines, "t0.resize_(2).zero_()\np0 = t0.detach()", "meta")
    assert known_ids(outcome) == ["op:wrapper-subclass-storage-on-meta"]


def test_no_step_touches_the_elements_of_a_wrapper_whose_inner_storage_is_too_small() -> None:
    # Drawing runs each step on a copy of the real tensors: a zero_() on a
    # view of this wrapper wrote past its inner tensors' empty storages and
    # crashed the process (the wrapper's own storage holds nothing to check).
    from pytest_metafidelity.strategies.programs import TOUCH_ELEMENTS

    (t,) = built(TWO_TENSOR, "a = torch.zeros(2, 3)", "a.untyped_storage().resize_(0)",
                 "b = torch.zeros(2, 3)", "b.untyped_storage().resize_(0)",
                 "t0 = TwoTensor(a, b)")
    # (drawing ran every step: it did not crash) The first step acts on the
    # wrapper as built, which reaches past its inner storages; later steps
    # may have given it elements it has (set_(), resize_).
    first = {p.steps[0].op for p in seeded_programs((t,), 40, seed=0)}
    assert len(first) >= 5 and not first & TOUCH_ELEMENTS, first


# Met by a 10-minute budget run (--metafidelity-budget=600 -n 2) once the
# layouts ran programs; each now registered.
@pytest.mark.parametrize("lines, program, converter, entry", [
    (("i0 = torch.empty((1, 0), dtype=torch.int64)", "v0 = torch.zeros((0, 0, 0))",
      "t0 = torch.sparse_coo_tensor(i0, v0, (1, 0, 0), is_coalesced=True)"),
     "t0._coalesced_(False)\np1 = t0.transpose(0, 0)", "meta",
     "op:meta-sparse-transpose-marks-coalesced"),
    # (a FakeTensorMode runs the same meta kernel: met by a 30-minute run)
    (("i0 = torch.empty((1, 0), dtype=torch.int64)", "v0 = torch.zeros((0, 0, 0))",
      "t0 = torch.sparse_coo_tensor(i0, v0, (1, 0, 0), is_coalesced=True)"),
     "t0._coalesced_(False)\np1 = t0.transpose(0, 0)", "fake-real",
     "op:meta-sparse-transpose-marks-coalesced"),
    pytest.param(
        ("i0 = torch.empty((2, 0), dtype=torch.int64)", "v0 = torch.zeros((0, 0))",
         "t0 = torch.sparse_coo_tensor(i0, v0, (0, 2, 0), is_coalesced=True)"),
        "p0 = t0.transpose(0, 0)", "fake-real-dynamic", "behaviour-symbolic-sparse-op-unsupported",
        marks=SINCE_2_13),
    (("t0 = torch.zeros((1, 1), dtype=torch.complex64).to_sparse_csc()",),
     "p0 = t0.values()\np1 = p0.conj()", "fake", "op:bit-view-of-compressed-values"),
    (("i0 = torch.tensor([0, 0], dtype=torch.int64)", "i1 = torch.empty((0,), dtype=torch.int64)",
      "v0 = torch.zeros((0, 1, 1))", "t0 = torch.sparse_bsc_tensor(i0, i1, v0, (1, 1))"),
     "p0 = t0.ccol_indices()\nwith torch.inference_mode():\n    p1 = p0.reshape(-1)", "functional",
     "op:inference-mode-views-of-normal-tensors"),
    (("t0 = torch.nested.nested_tensor_from_jagged(torch.zeros(1), torch.tensor([0, 1, 1]))",),
     "p0 = t0.unbind()[0]\np0.resize_(0)", "fake-dynamic", "op:jagged-component-resize-data-dependent"),
    # (the control's static sizes decide this view without a guard)
    (("t1 = torch.nested.nested_tensor_from_jagged(torch.arange(4.).reshape(2, 2, 1), "
      "torch.tensor([0, 1, 2]))", "t0 = t1.transpose(1, 2)"),
     "p0 = t0.values()\np1 = t0.unbind()[0]\np2 = p1.view((2, 1, 1, 1))", "fake-dynamic",
     "behaviour-view-of-an-unbacked-size-guards-beside-symbolic-sizes"),
    # (a nested wrapper's offset is its inner tensors': their storage differs)
    ((TWO_TENSOR, *(f"d{i} = torch.empty(0).set_(torch.zeros(1).untyped_storage(), 1, (0, 0, 0), "
                    "(0, 0, 0))" for i in range(4)),
      "t1 = TwoTensor(TwoTensor(d0, d1), TwoTensor(d2, d3))", "t0 = t1[0:0:1]"),
     "p0 = t0.transpose(0, 0)\np1 = t0.view(-1)\np2 = p1.view(-1)\np3 = p1.reshape((0,))", "fake",
     "op:zero-element-view-dispatch-cache"),
    ((SCALED, "x = torch.arange(2.).reshape((1, 1, 2)).transpose(0, 2)",
      "t0 = ScaledTensor(x, 1.0, '')"),
     "t0.set_()\np1 = t0[:, 0:0]", "fake-dynamic", "behaviour-symbolic-slice-of-a-half-set-wrapper"),
    # (met by the default 40 s run)
    (("x = torch.zeros(1, 4, 2, 3, 1, dtype=torch.complex128, requires_grad=True)",
      "t0 = torch._neg_view(x.conj()).narrow(2, 2, 0)"),
     "with torch.no_grad():\n    t0.transpose_(4, 3)\nwith torch.enable_grad():\n"
     "    t0.sum().abs().backward()", "meta",
     "behaviour-meta-conj-view-regrads-after-a-metadata-op"),
])
def test_what_a_long_run_met_is_registered(lines: tuple[str, ...], program: str, converter: str,
                                            entry: str) -> None:
    assert entry in known_ids(behaviour(lines, program, converter))


@pytest.mark.parametrize("lines, program, converter, entry", [
    (("d0 = torch.zeros((0, 1))", "t0 = d0.to_sparse_csc()"),
     "with torch.inference_mode():\n    p0 = t0.to_sparse()\np1 = p0._values()", "fake",
     "op:compressed-to-sparse-aliases-values"),
    (("i0 = torch.tensor([0, 0], dtype=torch.int64)", "i1 = torch.empty((0,), dtype=torch.int64)",
      "v0 = torch.zeros((0, 1, 1))", "t0 = torch.sparse_bsr_tensor(i0, i1, v0, (1, 1))"),
     "with torch.inference_mode():\n    p0 = t0.to_dense()", "refake",
     "op:compressed-to-dense-bumps-version-in-inference-mode"),
    (("i0 = torch.tensor([0, 0], dtype=torch.int64)", "i1 = torch.empty((0,), dtype=torch.int64)",
      "v0 = torch.arange(0, dtype=torch.float64).reshape((0, 1, 1, 0)).remainder(7)"
      ".to(torch.float32)", "t0 = torch.sparse_bsc_tensor(i0, i1, v0, (1, 1, 0))"),
     # (the values' strides, and the contiguity in channels_last that they decide)
     "p0 = t0.values()", "fake", "behaviour-degenerate-strides"),
    ((TWO_TENSOR, "a = torch.zeros((0, 1, 2), dtype=torch.int64)",
      "t0 = TwoTensor(a, a.clone())"),
     "p0 = t0.unsqueeze(0)\np1 = p0.expand((0, 3, 2))", "refake-fresh",
     "behaviour-symbolic-expand-error-wording"),
    ((TWO_TENSOR, "a = torch.zeros((2, 0, 0))", "t0 = TwoTensor(a, a.clone())"),
     "t0.set_()\nwith torch.inference_mode():\n    p1 = t0[:, 0:0:2]", "fake-dynamic",
     "behaviour-symbolic-inference-view-error-order"),
])
def test_what_a_second_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                   converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour(lines, program, converter))


BOOL_CSR = ("i0 = torch.tensor([0, 0], dtype=torch.int64)",
            "i1 = torch.empty((0,), dtype=torch.int64)",
            "v0 = torch.zeros((0,), dtype=torch.bool)",
            "t0 = torch.sparse_csr_tensor(i0, i1, v0, (1, 1))")


# Met by a 30-minute run (--metafidelity-budget=1800 -n 2 --hypothesis-seed=20261207) once
# its rounds no longer ran Hypothesis' target phase; each now registered.
@pytest.mark.parametrize("lines, program, converter, entry", [
    # (no control can be built for a compressed tensor made from its indices
    # under symbolic shapes: the errors alone decide)
    (BOOL_CSR, "t0.mul_(2)", "fake-dynamic", "op:bool-in-place-promotion"),
    (BOOL_CSR, "t0.mul_(2)", "refake", "op:bool-in-place-promotion"),
    (("t0 = torch.zeros(1, 2, 3)",), "t0.t_()", "fake", "op:t-inplace-error-class"),
    # (the inner tensor the nested wrapper holds twice is unsqueezed twice)
    ((TWO_TENSOR, "a = torch.zeros(0)", "t0 = TwoTensor(TwoTensor(a, a.clone()), "
      "TwoTensor(a.clone(), a))"), "t0.unsqueeze_(0)\nt0.t_()", "fake",
     "op:t-inplace-error-class"),
])
def test_what_a_third_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                  converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour(lines, program, converter))


EMPTY_COO = ("i0 = torch.empty((2, 0), dtype=torch.int64)",
             "t0 = torch.sparse_coo_tensor(i0, torch.zeros(0), (2, 3))")


# Met by a second 30-minute run (--hypothesis-seed=20261208, stop 34); each now
# registered (the reproducers were lost with the run's directory: rebuilt from
# the run's description).
@pytest.mark.parametrize("lines, program, converter, entry", [
    (EMPTY_COO, "t0._coalesced_(False)\nt0.mul_(2)", "fake-real",
     "op:sparse-in-place-mul-of-empty-marks-coalesced"),
    (EMPTY_COO, "t0._coalesced_(False)\nt0.multiply_(2)", "fake",
     "op:sparse-in-place-mul-of-empty-marks-coalesced"),
    # (no control for the COO tensor to_sparse() makes of a compressed one)
    (("i0 = torch.tensor([0, 0, 0, 0], dtype=torch.int64)",
      "i1 = torch.empty((0,), dtype=torch.int64)",
      "t0 = torch.sparse_csc_tensor(i0, i1, torch.zeros(0), (2, 3))"),
     "p0 = t0.to_sparse().t()", "functional", "op:meta-sparse-transpose-marks-coalesced"),
    (("t0 = torch.zeros(2, 3).to_sparse_csc()",), "p0 = t0.to_sparse()\np1 = p0.t()", "meta",
     "op:meta-sparse-transpose-marks-coalesced"),
    # (eager refuses the cpu wrapper's storage; the meta wrapper goes on into
    # the internal assert a plain tensor meets too)
    ((TWO_TENSOR, "a = torch.zeros(2)", "t0 = TwoTensor(a, a.clone()).requires_grad_()",
      "t1 = t0 * 1"), "t1.retain_grad()\nt1.as_strided_((0,), (1,), 0)\nt1.set_()", "meta",
     "op:wrapper-subclass-storage-on-meta"),
    # (a 90-second run of the subclass kinds, seed 5: reading is_leaf of a view
    # of a resized cpu wrapper raises the same refusal; no control on meta)
    ((TWO_TENSOR, "a = torch.zeros(())",
      "b = torch.empty(0).set_(torch.zeros(1).untyped_storage(), 0, (), ())",
      "t0 = TwoTensor(a, b)"),
     "p0 = torch.ops.aten.alias(t0)\nt0.requires_grad_(True)\n"
     "with torch.inference_mode():\n    t0.resize_(2).zero_()", "meta",
     "op:wrapper-subclass-resized-views-unreadable"),
    # (the same, seed 6)
    ((TWO_TENSOR, "a = torch.zeros(())", "t0 = TwoTensor(a, a.clone())", "t1 = torch.zeros(())"),
     "t0.set_(t1)", "fake", "op:fake-wrapper-subclass-set-source-refused"),
])
def test_what_a_fourth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                   converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour_of_all(lines, program, converter))


# Met by a third 30-minute run (--hypothesis-seed=20261209, stop 35); each now registered.
@pytest.mark.parametrize("lines, program, converter, entry", [
    (("i0 = torch.tensor([0, 0], dtype=torch.int64)", "i1 = torch.empty((0,), dtype=torch.int64)",
      "v0 = torch.zeros((0, 2, 1), dtype=torch.complex64)",
      "t0 = torch.sparse_bsc_tensor(i0, i1, v0, (2, 1))"),
     "p0 = t0.values()\np1 = p0.real", "fake-dynamic", "op:bit-view-of-compressed-values"),
    (("t0 = torch.zeros(1, 1, dtype=torch.complex64).to_sparse_csr()",),
     "p0 = t0.values()\nwith torch.no_grad():\n    p1 = p0.imag", "fake",
     "op:bit-view-of-compressed-values"),
    (("s = torch.zeros(2, dtype=torch.complex64).untyped_storage()",
      "t0 = torch.empty(0, dtype=torch.complex64).set_(s, 1, (), ())", "t0.requires_grad_()",
      "t1 = t0.real.as_strided((), (), 0)"),
     "t1.sum().abs().backward()", "meta", "behaviour-dtype-view-as-strided-grad-offset"),
    (("i0 = torch.tensor([0], dtype=torch.int64)", "i1 = torch.empty((0,), dtype=torch.int64)",
      "t0 = torch.sparse_csr_tensor(i0, i1, torch.zeros(0), (0, 1))"),
     "with torch.inference_mode():\n    p0 = t0.to_sparse()\np1 = p0._values()", "fake-real",
     "behaviour-inference-to-sparse-values-version"),
    (("t0 = torch.empty(0).set_(torch.arange(3.).untyped_storage(), 0, (2,), (2,))",
      "t0.requires_grad_()"),
     "with torch.no_grad():\n    t0.as_strided_((2,), (1,), 0)", "fake-real",
     "behaviour-restrided-past-carried-copy"),
    # (a plain fake's set_(wrapper) is refused the other way round)
    ((TWO_TENSOR, "a = torch.zeros(())", "t0 = TwoTensor(a, a.clone())", "t1 = torch.zeros(())"),
     "p0 = t1.as_strided((0,), (1,), 0)\np0.unsqueeze_(0)\np0.set_(t0)", "refake",
     "op:fake-wrapper-subclass-set-source-refused"),
    # (the meta wrapper goes on into what a cpu wrapper never resized meets)
    ((SCALED, "t0 = ScaledTensor(torch.zeros(1), 1.0, '')"),
     "t0.resize_(2).zero_()\nwith torch.inference_mode():\n    p1 = t0.detach()", "meta",
     "op:wrapper-subclass-storage-on-meta"),
    ((SCALED, "a = torch.zeros((0, 0, 2))", "t0 = ScaledTensor(a[0:0:1], 1.0, '')"),
     "t0.set_()\np1 = t0.expand((2, 0, 0, 2))", "refake",
     "behaviour-symbolic-expand-error-wording"),
])
def test_what_a_fifth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                  converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour_of_all(lines, program, converter))


# Met by a fourth 30-minute run (--hypothesis-seed=20261210, stop 35); each now registered.
@pytest.mark.parametrize("lines, program, converter, entry", [
    (("s = torch.zeros(2, dtype=torch.complex64).untyped_storage()",
      "t0 = torch.empty(0, dtype=torch.complex64).set_(s, 1, (), ())", "t0.requires_grad_()",
      "t1 = t0.real.as_strided((), (), 1)"),
     "t1.sum().abs().backward()", "fake", "behaviour-dtype-view-as-strided-grad-offset"),
    (("i0 = torch.empty((1, 0), dtype=torch.int64)",
      "t0 = torch.sparse_coo_tensor(i0, torch.zeros((0, 0, 0)), (1, 0, 0), is_coalesced=True)"),
     "p0 = t0._values()\nt0.mul_(2)\np2 = t0._values()", "refake-fresh",
     "op:sparse-in-place-mul-new-values"),
])
def test_what_a_sixth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                  converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour_of_all(lines, program, converter))


# Met by a fifth 30-minute run (--hypothesis-seed=20261211, stop 35); each now registered.
@pytest.mark.parametrize("lines, program, converter, entry", [
    (("i0 = torch.empty((1, 0), dtype=torch.int64)",
      "t0 = torch.sparse_coo_tensor(i0, torch.zeros((0, 0, 0)), (1, 0, 0), is_coalesced=True)"),
     "with torch.inference_mode():\n    t0.mul_(2)\np1 = t0._values()", "fake-dynamic",
     "op:sparse-in-place-mul-new-values-in-inference-mode"),
    # (with elements, a sparse fake's count of them differs first)
    (EMPTY_COO, "with torch.inference_mode():\n    t0.mul_(2)\np1 = t0.values()", "fake",
     "op:sparse-in-place-mul-new-values-in-inference-mode"),
    (("s = torch.zeros(2, dtype=torch.complex64).untyped_storage()",
      "t0 = torch.empty(0, dtype=torch.complex64).set_(s, 1, (1,), (1,))", "t0.requires_grad_()",
      "t1 = t0.select(0, 0).as_strided((), (), 0).real"),
     "t1.sum().abs().backward()", "fake-real", "behaviour-dtype-view-as-strided-grad-offset"),
    (("t0 = torch.zeros(0, dtype=torch.complex64)", "t0.requires_grad_()",
      "t1 = torch.view_as_real(t0).transpose(0, 1)[0:0:1]"),
     "t1.sum().abs().backward()", "refake", "behaviour-view-as-real-backward-of-nothing"),
    (("t0 = torch.zeros((1, 1))", "t0.untyped_storage().resize_(0)", "t0.requires_grad_()",
      "t1 = torch._neg_view(t0.transpose(0, 0))"),
     "with torch.no_grad():\n    t1.transpose_(0, 0)", "meta",
     "op:view-replay-unchecked-storage-bounds"),
])
def test_what_a_seventh_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                    converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour_of_all(lines, program, converter))


# Met by a sixth 30-minute run (--hypothesis-seed=20261212, stop 36); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("s = (torch.arange(3.) + 0.5).untyped_storage()",
      "t0 = torch.empty(0).set_(s, 0, (1, 1, 1, 1, 2), (0, 0, 0, 0, 2))"),
     "t0.resize_(2)", "fake-real", {"behaviour-restrided-past-carried-copy"}),
    (("t0 = torch.zeros(1, dtype=torch.complex32)", "t0.requires_grad_()",
      "t1 = torch.view_as_real(t0.expand((2,)))"),
     "t1.sum().abs().backward()", "fake-real-dynamic",
     {"behaviour-converted-view-backward-skips-a-missing-kernel"}),
    (("s = torch.zeros(2).untyped_storage()", "t0 = torch.empty(0).set_(s, 1, (), ())",
      "t0.requires_grad_()", "t1 = t0[...]"),
     "with torch.no_grad():\n    t1.as_strided_((1,), (1,), 0)\nt1.sum().abs().backward()",
     "fake-real-dynamic", {"behaviour-carried-grad-of-fake-as-strided-backward",
                           "op:fake-as-strided-backward-grad-offset"}),
    (("s = torch.zeros(2).untyped_storage()", "t0 = torch.empty(0).set_(s, 1, (), ())",
      "t0.requires_grad_()", "t1 = t0[...]"),
     "with torch.no_grad():\n    t1.as_strided_((1,), (1,), 0)\nt1.sum().abs().backward()",
     "fake", {"op:fake-as-strided-backward-grad-offset"}),
    (("t0 = torch.sparse_csr_tensor(torch.tensor([[0, 0]]), torch.empty((1, 0), "
      "dtype=torch.int64), torch.zeros((1, 0)), (1, 1, 1))",),
     "p0 = t0.crow_indices()\np1 = p0.expand((2, 1, 2))\np2 = p1.view(-1)", "refake",
     {"op:fake-view-accepts-incompatible-strides"}),
    (("t0 = torch.zeros((0, 2))", "t1 = torch._neg_view(t0[0:0:1].unsqueeze(0)[0:0:1])"),
     "t1.requires_grad_(True)\np1 = t1.select(2, 0)\nwith torch.no_grad():\n    t1.zero_()",
     "meta", {"behaviour-bit-view-regeneration-internal-assert"}),
    # (values made so: the strides of values made by zeros differ first, degenerately)
    (("v = torch.arange(0, dtype=torch.float64).reshape((0, 1, 1)).remainder(7)"
      ".to(torch.complex64)",
      "t0 = torch.sparse_bsc_tensor(torch.tensor([0, 0]), torch.empty((0,), dtype=torch.int64), "
      "v, (0, 1))", "t0.requires_grad_()",
      "t1 = t0 * 2"),
     "p0 = t1.values()\nt1.zero_()", "fake",
     {"behaviour-compressed-values-regeneration-needs-strides"}),
])
def test_what_an_eighth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                    converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by a seventh 30-minute run (--hypothesis-seed=20261213, stop 36); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("t0 = torch.arange(2.)", "t0.requires_grad_()", "t1 = t0[0:0:1].as_strided((), (), 1)"),
     "t1.sum().abs().backward()", "fake-real",
     {"behaviour-as-strided-of-a-view-grad-reaches-the-base"}),
])
def test_what_a_ninth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                  converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by the seventh 30-minute run (--hypothesis-seed=20261213) and by the
# suite once every nested jagged construction may require grad (stop 37).
@pytest.mark.parametrize("lines, program, converter, entries", [
    # backward accumulates into a .grad with a zero stride: eager refuses
    (("t0 = torch.zeros(3)", "t0.requires_grad_()", "t0.grad = torch.zeros(1).expand(3)"),
     "t0.sum().abs().backward()", "fake", {"op:unchecked-internal-overlap"}),
    # copy_ into a view of t1 gives t1 the history of t0, an example input
    # under the functional converter: the backward follows from that
    (("t1 = torch.zeros(2, 3)", "t0 = torch.zeros(3)", "t0.requires_grad_()",
      "t0.grad = t1[0]"),
     "p0 = t0.grad\np0.copy_(t0)\nt1.sum().abs().backward()", "functional",
     {"behaviour-follows-known-difference"}),
    (("v = torch.zeros(1)", "v.requires_grad_()",
      "t0 = torch.nested.nested_tensor_from_jagged(v, torch.tensor([0, 0, 1]), "
      "torch.tensor([0, 0]))"),
     "t0.retain_grad()\nt0.values().sum().abs().backward()", "refake-fresh",
     {"op:nested-retained-grad-data-dependent-guard"}),
    (("t0 = torch.nested.nested_tensor_from_jagged(torch.zeros(1, 2), "
      "torch.tensor([0, 0, 1])).transpose(1, 2)",),
     "p0 = t0.unbind()[0]\np1 = p0.view(-1)", "fake-dynamic",
     {"op:view-of-unbacked-size-assumes-its-value"}),
    (("v = torch.zeros(2, 2)", "v.requires_grad_()",
      "t0 = torch.nested.nested_tensor_from_jagged(v, torch.tensor([0, 0, 2])).transpose(1, 2)"),
     "p0 = t0.unbind()[0]\nwith torch.no_grad():\n    p1 = p0.view(-1)", "fake-dynamic",
     {"op:view-of-unbacked-size-assumes-its-value"}),
    (("v = torch.zeros(1)", "v.requires_grad_()",
      "t0 = torch.nested.nested_tensor_from_jagged(v, torch.tensor([0, 1]), torch.tensor([0]))"),
     "t0.retain_grad()\nt0.values().sum().abs().backward()", "refake-fresh",
     {"op:nested-retained-grad-data-dependent-guard"}),
])
def test_what_a_tenth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                  converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by an eighth 30-minute run (--hypothesis-seed=20261214, stop 37); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("t0 = torch.empty(0).set_(torch.arange(2.).untyped_storage(), 1, (), ())",
      "t0.requires_grad_()", "t1 = t0.as_strided((), (), 0)", "t2 = t1.as_strided((), (), 1)",
      "t3 = torch._neg_view(t2)"),
     "t3.sum().abs().backward()", "fake",
     {"behaviour-as-strided-chain-grad-offset"}),
    # (and the default 40 s run at once, on the way: the values arm must
    # still hold for an as_strided of a dtype view)
    (("t0 = torch.arange(2, dtype=torch.float64).to(torch.complex64)", "t0.requires_grad_()",
      "t1 = t0[0:0:1]", "t2 = torch.view_as_real(t1)", "t3 = t2.as_strided((), (), 2)"),
     "t3.sum().abs().backward()", "fake-real",
     {"behaviour-as-strided-of-a-view-grad-reaches-the-base"}),
    (("t0 = torch.zeros(1, 1, 1)", "t1 = torch.zeros(2, 1, 1, 1)", "t0.grad = t1[0]"),
     "t1.set_()\nt1.unsqueeze_(0)\nt1.requires_grad_(True)", "fake-real",
     {"behaviour-carried-view-replay-checks-storage-bounds"}),
])
def test_what_an_eleventh_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                     converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by a ninth 30-minute run (--hypothesis-seed=20261215, stop 37); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("t0 = torch.sparse_csc_tensor(torch.tensor([0, 0]), torch.empty((0,), dtype=torch.int64), "
      "torch.zeros(0), (1, 1))",),
     "p0 = t0.to_sparse()\np0.mul_(2)", "fake-dynamic",
     {"op:sparse-in-place-mul-of-empty-marks-coalesced"}),
    (("t0 = torch.nn.Parameter(torch.zeros((), dtype=torch.complex64))", "t1 = t0.unsqueeze(0)"),
     "with torch.no_grad():\n    t1.as_strided_((0,), (1,), 0)\nt1.retain_grad()\n"
     "t1.sum().abs().backward()\np3 = t1.grad", "refake-fresh",
     {"op:fake-retained-grad-of-a-restrided-view"}),
])
def test_what_a_twelfth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                   converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by a tenth 30-minute run (--hypothesis-seed=20261216, stop 37); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("i = torch.empty((3, 0), dtype=torch.int64)",
      "t0 = torch.sparse_coo_tensor(i, torch.zeros(0, dtype=torch.complex64), (1, 1, 1), "
      "is_coalesced=True)"),
     "p0 = t0.to_dense()\np0.copy_(t0)", "fake", {"op:copy-between-dense-and-sparse"}),
    (("t0 = torch.zeros(2, 3).to_sparse()",),
     "p0 = t0.to_dense()\nt0.copy_(p0)", "fake-dynamic", {"op:copy-between-dense-and-sparse"}),
    (("t0 = torch.sparse_csc_tensor(torch.tensor([0, 0]), torch.empty((0,), dtype=torch.int64), "
      "torch.zeros(0, 2), (1, 1, 2))",),
     "p0 = t0.values()\np1 = torch.view_as_complex(p0)", "fake",
     {"op:bit-view-of-compressed-values"}),
])
def test_what_a_thirteenth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                      converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by an eleventh 30-minute run (--hypothesis-seed=20261217, stop 38); each now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("i = torch.empty((1, 0), dtype=torch.int64)",
      "t0 = torch.sparse_coo_tensor(i, torch.zeros((0, 0, 0)), (0, 0, 0), is_coalesced=True)"),
     "with torch.inference_mode():\n    t0.mul_(2)\np1 = t0._indices()", "fake",
     {"op:sparse-in-place-mul-new-values-in-inference-mode"}),
    (("t0 = torch.sparse_coo_tensor(torch.empty((2, 0), dtype=torch.int64), torch.zeros(0), "
      "(2, 3))",),
     "with torch.inference_mode():\n    t0.mul_(2)\np1 = t0._values()", "fake-real",
     {"op:sparse-in-place-mul-new-values-in-inference-mode"}),
    (("t0 = torch.nested.nested_tensor_from_jagged(torch.zeros(1), torch.tensor([0, 1, 1]))",),
     "p0 = t0.unbind()[0]\np1 = p0.expand((3,))", "refake-fresh", {"op:expand-of-unbacked-size"}),
])
def test_what_a_fourteenth_long_run_met_is_registered(lines: tuple[str, ...], program: str,
                                                      converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met by a twelfth 30-minute run (--hypothesis-seed=20261219, stop 38); now registered.
@pytest.mark.parametrize("converter", ["meta", "fake", "fake-dynamic", "fake-real",
                                       "refake-fresh"])
@pytest.mark.parametrize("n", [0, 3])
def test_what_a_fifteenth_long_run_met_is_registered(converter: str, n: int) -> None:
    lines = (f"t0 = torch.zeros({n})", "t0.requires_grad_()", "t1 = t0.unsqueeze(0)",
             "t2 = t1.transpose(0, 0)")
    program = "t1.retain_grad()\nt2.sum().abs().backward()\np2 = t1.grad"
    assert known_ids(behaviour_of_all(lines, program, converter)) == [
        "behaviour-retained-grad-of-a-view-bypassed"]


# Met by default 40 s runs on fresh clones (stop 38); now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("t0 = torch.zeros(())", "t0.untyped_storage().resize_(0)", "t0.requires_grad_()",
      "t3 = torch._neg_view(t0.view(-1))[1:1:1]"),
     "with torch.inference_mode():\n    t3.unsqueeze_(0)", "meta",
     {"op:view-replay-unchecked-storage-bounds"}),
    (("t0 = torch.sparse_csr_tensor(torch.tensor([0]), torch.empty((0,), dtype=torch.int64), "
      "torch.zeros(0), (0, 1))",),
     "t0.requires_grad_(True)\np0 = t0.values()\np0.sum().abs().backward()", "fake",
     {"op:compressed-gradient-made-outside-the-mode"}),
    (("t0 = torch.zeros(2, 3).to_sparse_csr()",),
     "t0.requires_grad_(True)\np0 = t0.values()\np0.sum().abs().backward()", "fake-real",
     {"op:compressed-gradient-made-outside-the-mode"}),
])
def test_what_a_default_run_met_is_registered(lines: tuple[str, ...], program: str,
                                              converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


# Met in the first minutes of a 30-minute run with aten's schema-built steps
# on (METAFIDELITY_ATEN_STEPS=1, --hypothesis-seed=20261218, stop 38); each
# now registered.
@pytest.mark.parametrize("lines, program, converter, entries", [
    (("t0 = torch.zeros(2, dtype=torch.long)",), "t0.logit_()", "meta",
     {"op:meta-skips-argument-checks"}),
    (("t0 = torch.zeros((), dtype=torch.int32)",), "t0.logit_()", "fake",
     {"op:meta-skips-argument-checks"}),
    (("t0 = torch.zeros(())",), "t0.index_put_([t0.new_zeros((1,), dtype=torch.long)], t0)",
     "fake-dynamic", {"op:meta-skips-argument-checks"}),
    (("t0 = torch.zeros(3, dtype=torch.long)",), "t0.floor_divide_(t0)", "meta",
     {"op:integer-division-by-zero"}),
    (("t0 = torch.zeros(3, dtype=torch.int16)",), "t0.remainder_(t0)", "fake",
     {"op:integer-division-by-zero"}),
    (("t0 = torch.zeros((), dtype=torch.long)",), "p0 = t0.narrow(0, t0, 0)", "functional",
     {"op:narrow-reads-a-tensor-start-first"}),
])
def test_what_a_run_with_aten_steps_met_is_registered(lines: tuple[str, ...], program: str,
                                                      converter: str, entries: set[str]) -> None:
    assert set(known_ids(behaviour_of_all(lines, program, converter))) == entries


def test_no_drawn_resize_grows_a_storage_that_ends_before_the_tensors_offset() -> None:
    # zero_() writes the tensor's elements only; the bytes below its offset
    # would stay uninitialized, and a later as_strided_ read them (eager's
    # values were garbage in a 30-minute run).
    import re

    recipe = Recipe(("t0 = torch.zeros((0, 0, 2)).unsqueeze(0)[:, :, :, 1:1]",), ("t0",))
    assert recipe.build()[0].storage_offset() == 1
    sizes = [int(n) for p in seeded_programs(recipe, 200, seed=2)
             for n in re.findall(r"t0\.resize_\((\d+)\)", p.source)]
    assert sizes and set(sizes) == {0}
    grown = Recipe(("t0 = torch.zeros(4)[1:1]",), ("t0",))  # its storage reaches past it
    assert any(re.search(r"t0\.resize_\([1-9]\d*\)\.zero_\(\)", p.source)
               for p in seeded_programs(grown, 200, seed=2))


INDEXED = {
    "coo": "t0 = torch.eye(3).to_sparse()",
    "csr": "t0 = torch.eye(3).to_sparse_csr()",
    "csc": "t0 = torch.eye(3).to_sparse_csc()",
    "bsr": "t0 = torch.eye(4).to_sparse_bsr((2, 2))",
    "jagged": NJT.join(("t0 = ", "")),
}


@pytest.mark.parametrize("layout", list(INDEXED))
def test_no_drawn_step_writes_into_the_indices_of_a_sparse_or_jagged_tensor(layout: str) -> None:
    # Torch reads those indices unchecked: `p0 = t.ccol_indices(); p0.mul_(2)`
    # left an invalid CSC tensor whose next read segfaulted (a 30-minute run).
    # (An op on the sparse tensor itself, zero_(), keeps it valid.)
    from pytest_metafidelity.strategies.programs import _FAMILY, index_storages, run_step

    recipe = Recipe((INDEXED[layout],), ("t0",))
    programs = seeded_programs(recipe, 150, seed=3)
    assert any("indices()" in p.source or "offsets()" in p.source for p in programs)
    for program in programs:
        (t,) = recipe.build()
        namespace = {"torch": torch, "t0": t}
        for step in program.steps:
            target = namespace.get(step.statement.split(".")[0])
            if (_FAMILY.get(step.op) == "inplace" and isinstance(target, torch.Tensor)
                    and target.layout == torch.strided and not target.is_nested):
                guarded = index_storages([t])
                assert target.untyped_storage().data_ptr() not in guarded, program.source
            run_step(step, namespace)


def test_the_contiguity_degenerate_strides_decide_is_the_same_operator_difference() -> None:
    # CI's derandomized budget run met it on torch 2.11 (a 30-minute run on
    # 2.13, on a ScaledTensor): reshape of a tensor with no elements, served
    # from FakeTensorMode's cache, gets contiguous strides, and so another
    # is_contiguous(memory_format=torch.channels_last).
    lines = ("t0 = torch.arange(0, dtype=torch.float64).reshape((0, 1, 1, 0))"
             ".remainder(7).to(torch.float32)",)
    outcome = behaviour(lines, "p0 = t0.reshape((0, 1, 1, 0))", "fake")
    assert outcome.status in (PASSED, KNOWN) and not outcome.mismatches, outcome.describe()


def test_no_drawn_step_sets_a_plain_tensor_onto_a_wrappers_storage() -> None:
    # A wrapper subclass's own storage holds no bytes: eager's t.set_(wrapper)
    # then resize_().zero_() (or fill_) wrote through a null pointer and
    # segfaulted three workers of a 30-minute run.  A wrapper may still take
    # a plain tensor's storage (that is an operator difference, registered).
    import re

    recipe = Recipe((TWO_TENSOR, "t0 = torch.zeros(2)", "t1 = TwoTensor(torch.zeros(2), "
                     "torch.zeros(2))"), ("t0", "t1"))
    programs = seeded_programs(recipe, 300, seed=1)
    sets = [m for p in programs for m in re.findall(r"(t\d)\.set_\((t\d)", p.source)]
    assert ("t1", "t0") in sets  # the wrapper still draws set_(plain)
    assert ("t0", "t1") not in sets


def test_no_drawn_step_resizes_a_zero_tensor_or_sets_a_tensor_onto_its_storage() -> None:
    # A zero tensor's storage has a size but holds no data: eager segfaulted
    # on resize_ of one (the first run of the zero_tensor kind), and a plain
    # tensor set_ onto that storage is read through a null pointer.  A zero
    # tensor may still take a plain tensor's storage (set_ of it is refused).
    import re

    recipe = Recipe(("t0 = torch.zeros(2)", "t1 = torch._efficientzerotensor((2,))"),
                    ("t0", "t1"))
    programs = seeded_programs(recipe, 300, seed=1)
    sources = "\n".join(p.source for p in programs)
    sets = re.findall(r"(t\d)\.set_\((t\d)", sources)
    assert ("t1", "t0") in sets
    assert ("t0", "t1") not in sets
    assert "t0.resize_(" in sources
    assert "t1.resize_(" not in sources


def test_no_drawn_step_grows_a_tensor_in_shared_memory() -> None:
    # Eager segfaults growing a storage in shared memory (resize_ of a
    # share_memory_() tensor); one that may not be resized (frombuffer)
    # refuses, and stays drawn: its fake grows, a known difference.
    recipe = Recipe(("t0 = torch.zeros(2).share_memory_()",
                     "t1 = torch.frombuffer(bytearray(8), dtype=torch.float32)"), ("t0", "t1"))
    programs = [p.source for p in seeded_programs(recipe, 300, seed=1)]
    assert any("t1.resize_(" in source for source in programs)
    # (after t0.set_() the tensor has a storage of its own again)
    assert all(source.find("t0.set_(") in range(source.find("t0.resize_(")) for source in programs
               if "t0.resize_(" in source)


# Met by a thirteenth 30-minute run (--hypothesis-seed=20261221, stop 39); now registered.
@pytest.mark.parametrize("converter", ["meta", "fake", "fake-real", "refake-fresh"])
def test_what_a_sixteenth_long_run_met_is_registered(converter: str) -> None:
    lines = ("t0 = torch.zeros(1)", "t0.requires_grad_()", "with torch.no_grad():\n    t1 = t0[...]",
             "t2 = t1.unbind(0)[0]")
    recipe = Recipe(lines, ("t0", "t2"))
    outcome = check_faithful(*recipe.build(), converters=[converter], checks=["behaviour"],
                             program="t2.sum().abs().backward()").outcomes[0]
    assert known_ids(outcome) == ["behaviour-view-past-a-no-grad-view-reconnected"]


# The same run met in-place ops on overlapping tensors in shared memory (no
# control could be made under the mode then; the step's errors decide the
# operator difference, and now the control shows it too).
@pytest.mark.parametrize("lines, program, converter", [
    (("t0 = torch.empty(0).set_(torch.zeros(1).untyped_storage(), 0, (1, 2), (0, 0))",
      "t0.share_memory_()"), "t0.add_(1)", "functional"),
    (("t0 = torch.zeros(())", "t0.share_memory_()"),
     "p0 = torch.ops.aten.alias(t0)\np1 = t0.expand((2,))\np1.add_(1)", "meta"),
    (("t0 = torch.empty(0).set_(torch.zeros(1).untyped_storage(), 0, (1, 2), (0, 0))",
      "t0.share_memory_()"), "t0.add_(1)", "refake-fresh"),
])
def test_what_a_sixteenth_long_run_met_in_shared_memory_is_registered(
        lines: tuple[str, ...], program: str, converter: str) -> None:
    assert known_ids(behaviour_of_all(lines, program, converter)) == [
        "op:unchecked-internal-overlap"]


# A seventeenth 30-minute run met a component of a converted nested jagged
# tensor expanded along its unbacked size: the fake assumes the size (u0 == 3)
# where eager's is 1; the control (static sizes) raises instead.
@pytest.mark.parametrize("converter", ["fake-dynamic", "refake"])
def test_what_a_seventeenth_long_run_met_in_a_jagged_component_is_registered(
        converter: str) -> None:
    lines = ("t0 = torch.zeros(2, 1, 1, requires_grad=True)",
             "t1 = torch.nested.nested_tensor_from_jagged(t0, torch.tensor([0, 2]), "
             "torch.tensor([1]))")
    outcome = check_faithful(*Recipe(lines, ("t1",)).build(), converters=[converter],
                             checks=["behaviour"],
                             program="p0 = t1.unbind()[0]\np1 = p0.expand((3, 1, 1))").outcomes[0]
    assert known_ids(outcome) == ["behaviour-expand-assumes-an-unbacked-size"]
    assert {m.attribute for _, m in outcome.known} == {"shape", "stride()"}


# An eighteenth run met the same grad layout through an as_strided of the
# leaf followed by other views (not only an as_strided of a view).
def test_what_an_eighteenth_long_run_met_in_an_as_strided_chain_is_registered() -> None:
    lines = ("t0 = torch.empty(0).set_(torch.arange(2.).untyped_storage(), 1, (), ())",
             "t0.requires_grad_()", "t1 = t0.as_strided((), (), 0)", "t2 = t1.view(-1)",
             "t3 = t2[1:1:1]")
    outcome = check_faithful(*Recipe(lines, ("t3",)).build(), converters=["fake"],
                             checks=["behaviour"], program="t3.sum().abs().backward()").outcomes[0]
    assert known_ids(outcome) == ["behaviour-as-strided-chain-grad-offset"]
    assert [(m.path, m.attribute) for _, m in outcome.known] == [
        ("t3._base.grad", "storage_offset()")]


# A nineteenth run met zero_() of a view of a dense inference tensor made by
# to_dense() of a compressed tensor built from its indices (no control):
# every fake view of an inference tensor takes it, eager refuses.
@pytest.mark.parametrize("converter", ["fake", "fake-real", "fake-dynamic"])
def test_what_a_nineteenth_long_run_met_in_inference_mode_is_registered(converter: str) -> None:
    lines = ("t0 = torch.sparse_csr_tensor(torch.tensor([0]), torch.empty((0,), "
             "dtype=torch.int64), torch.empty(0), (0, 1))",)
    program = "with torch.inference_mode():\n    p0 = t0.to_dense()\np1 = p0.unsqueeze(0)\np1.zero_()"
    outcome = behaviour_of_all(lines, program, converter)
    assert known_ids(outcome) == ["op:fake-in-place-op-on-inference-view"]
    assert [(m.path, m.attribute) for _, m in outcome.known] == [
        ("*", "op-difference fake-in-place-op-on-inference-view")]


def test_what_a_twentieth_long_run_met_in_a_backward_through_a_view_is_registered() -> None:
    """Run T (seed 20261228): a view of a Parameter whose strides interleave,
    (3, 0, 2) for sizes (2, 1, 3); the base's carried .grad is half of
    eager's after a backward through the view."""
    from pytest_metafidelity.known_differences.definitions.behaviour import strides_may_overlap

    assert strides_may_overlap((2, 1, 3), (3, 0, 2)) and strides_may_overlap((2, 3), (3, 2))
    assert not strides_may_overlap((2, 1, 3), (3, 3, 1)) and not strides_may_overlap((2, 1), (1, 0))
    assert strides_may_overlap((2, 2), (0, 1))  # expanded: overlaps
    program = "t2.sum().abs().backward()"
    lines = ("t0 = torch.empty(0).set_(torch.arange(9.).remainder(7).untyped_storage(), 1, "
             "(2, 1, 3), (3, 0, 2))", "t1 = torch.nn.Parameter(t0)", "t2 = t1.select(0, 0)")
    for converter in ("fake-real", "fake-real-dynamic"):
        outcome = check_faithful(*Recipe(lines, ("t2",)).build(), converters=[converter],
                                 checks=["behaviour"], program=program).outcomes[0]
        assert known_ids(outcome) == ["behaviour-real-propagation-counts-as-strided-grad-twice"]
        assert [(m.path, m.attribute) for _, m in outcome.known] == [
            ("t2._base.grad.real_tensor", "values")]
    # A base whose strides do not interleave: the same program passes.
    lines = (lines[0].replace("(3, 0, 2)", "(3, 3, 1)"), *lines[1:])
    outcome = check_faithful(*Recipe(lines, ("t2",)).build(), converters=["fake-real"],
                             checks=["behaviour"], program=program).outcomes[0]
    assert outcome.status == PASSED, outcome.describe()


@pytest.mark.parametrize("converter, paths", [
    ("fake", ["t1._base.grad"]),
    ("fake-real", ["t1._base.grad", "t1._base.grad.real_tensor"]),
])
def test_what_a_twentieth_long_run_met_in_conj_of_a_converted_view_is_registered(
        converter: str, paths: list[str]) -> None:
    """Run T (seed 20261228): conj() of a converted view of a complex leaf;
    the leaf's .grad is a conjugate view in eager, not on the fake, nor in
    the real tensor the fake's .grad carries."""
    lines = ("t0 = torch.zeros((), dtype=torch.complex64)", "t0.requires_grad_()",
             "t1 = t0[...]")
    outcome = check_faithful(*Recipe(lines, ("t1",)).build(), converters=[converter],
                             checks=["behaviour"],
                             program="p0 = t1.conj()\np0.sum().abs().backward()").outcomes[0]
    assert known_ids(outcome) == ["behaviour-conj-view-grad-not-conj"]
    assert sorted(m.path for _, m in outcome.known) == paths
    assert {m.attribute for _, m in outcome.known} == {"is_conj()"}


@pytest.mark.parametrize("converter", ["fake-real", "fake-real-dynamic"])
def test_a_programs_own_as_strided_of_interleaved_strides_is_an_operator_difference(
        converter: str) -> None:
    """The program's own as_strided: the control made under the mode halves
    the carried gradient too, so it is the operator's (real-tensor
    propagation's), not the conversion's."""
    lines = ("t0 = torch.empty_strided((2, 3), (3, 2)).zero_()", "t0.requires_grad_()")
    outcome = check_faithful(*Recipe(lines, ("t0",)).build(), converters=[converter],
                             checks=["behaviour"],
                             program="p0 = t0.as_strided((3,), (2,), 0)\np0.sum().backward()"
                             ).outcomes[0]
    assert known_ids(outcome) == ["op:real-propagation-counts-as-strided-grad-twice"]


def test_accumulating_into_a_jagged_leafs_grad_is_an_operator_difference_until_warned() -> None:
    # Eager and the control refuse it in other words ('aten::stride does not
    # exist' / NestedIntNode has no 'expr') until a backward in the process
    # has issued AccumulateGrad's layout warning; then both run.  Found by a
    # seeded suite run.  In a process of its own: the warning is issued once
    # per process, and this test must not issue it in the test session's.
    script = textwrap.dedent('''
        import torch
        from pytest_metafidelity import check_faithful
        from pytest_metafidelity.strategies import Recipe
        lines = ("t0 = torch.nested.nested_tensor([torch.zeros(2)], layout=torch.jagged, "
                 "requires_grad=True)",)
        program = "t0.values().sum().abs().backward()\\nt0.values().sum().abs().backward()"
        def outcome():
            return check_faithful(*Recipe(lines, ("t0",)).build(), converters=["fake-dynamic"],
                                  checks=["behaviour"], program=program).outcomes[0]
        first = outcome()
        print(first.status, sorted({i for i, _ in first.known}))
        x = torch.zeros(3, requires_grad=True)
        x.grad = torch.zeros(3, 2)[:, 0]  # a gradient of another layout: the warning is issued
        x.sum().abs().backward()
        print(outcome().status)
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "known-difference ['op:nested-grad-accumulation-layout-warning']", "passed"], done.stdout


@pytest.mark.parametrize("converter", ["refake", "refake-fresh"])
def test_converting_a_fake_dense_view_of_a_jagged_tensor_again_raises(converter: str) -> None:
    (v,) = built(f"n = {NJT}.clone()", "t0 = n.values()")
    assert v._is_view() and v._base.is_nested
    outcome = check_faithful(v, converters=[converter]).outcomes[0]
    assert known_ids(outcome) == ["refake-dense-view-of-subclass"]
    # converted once, it is faithful
    assert check_faithful(v, converters=["fake-dynamic"]).outcomes[0].status == PASSED


TRANSPOSED_NJT = ("v = torch.arange(2.).reshape((1, 2))",
                  "t0 = torch.nested.nested_tensor_from_jagged(v, torch.tensor([0, 0, 1]))"
                  ".transpose(1, 2)")


@pytest.mark.parametrize("program, also", [
    ("p0 = t0.unbind()[1]\np1 = p0.reshape(-1)", set()),
    ("p0 = t0.unbind()[1]\nwith torch.inference_mode():\n    p1 = p0.reshape(-1)",
     {"op:inference-mode-views-of-normal-tensors"}),
    ("p0 = t0.unbind()[1]\np1 = torch._neg_view(p0)\np2 = p1.reshape(-1)", set()),
])
def test_reshape_of_an_unbacked_size_copies_where_eager_views(program: str,
                                                              also: set[str]) -> None:
    # unbind() of a transposed NJT gives (2, u1) components on a symbolic
    # fake: reshape cannot decide a view and copies (found by seeded runs).
    # The component has elements, so op:zero-element-view-dispatch-cache
    # (first in the registry) does not explain the copy.
    ids = known_ids(behaviour(TRANSPOSED_NJT, program, "fake-dynamic"))
    assert set(ids) == {"op:reshape-of-unbacked-size-copies"} | also, ids


@pytest.mark.skipif(tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 12),
                    reason="torch 2.11's fake runs it")
def test_an_in_place_op_on_the_values_of_a_copied_njt_with_lengths_needs_its_numel() -> None:
    lines = ("v = torch.zeros(2, requires_grad=True)",
             "n = torch.nested.nested_tensor_from_jagged(v, torch.tensor([0, 2]), "
             "torch.tensor([2])).clone()",
             "t0 = n.values()")
    assert known_ids(behaviour(lines, "t0.zero_()", "fake-dynamic")) == [
        "op:nested-lengths-values-in-place-needs-numel"]


def test_an_in_place_op_on_a_functional_tensor_meets_its_values_whole_storage() -> None:
    """Functionalization writes an in-place op's update through the value's
    whole storage: a uint1 value with no elements over a storage of one
    byte meets the missing uint1 copy kernel in eager, where the converted
    value's storage (sized to the tensor: storage-sized-to-tensors) has no
    bytes.  The step follows from that known difference (a 30-minute run
    met it as a conversion bug: the behaviour check saw the value's storage
    size only once the wrappers check read it)."""
    lines = ("t1 = torch.empty((1,), dtype=torch.uint1)", "t1.resize_((0,))",
             "t0 = torch._to_functional_tensor(t1)")
    outcome = behaviour(lines, "t0.copy_(t0)", "fake-real")
    assert known_ids(outcome) == ["behaviour-follows-known-difference"]
    # Without the extra byte both sides run the step.
    fresh = ("t0 = torch._to_functional_tensor(torch.empty((0,), dtype=torch.uint1))",)
    assert behaviour(fresh, "t0.copy_(t0)", "fake-real").status == PASSED


ESCAPED_GRAD = ("kept = []",
                "out = torch.func.grad(lambda x: (kept.append(x), x.sum())[1])(torch.arange(3.))",
                "t0 = kept[0]")
ESCAPED_VMAP = ("kept = []",
                "out = torch.func.vmap(lambda x: (kept.append(x), x)[1])(torch.arange(3.))",
                "t0 = kept[0]")


@pytest.mark.parametrize("converter", ["meta", "fake", "fake-real-dynamic"])
def test_programs_on_an_escaped_grad_wrapper_follow_from_its_unwrapping(converter: str) -> None:
    """An escaped GradTrackingTensor requires grad, but what ops make of it
    does not (its level is gone): eager's backward raises.  The fake is the
    plain leaf inside it (functorch-escaped-grad-unwrapped, which the
    wrappers check reads at the start), so the step follows from that."""
    (escaped,) = built(*ESCAPED_GRAD)
    assert why_no_programs((escaped,)) is None
    outcome = behaviour(ESCAPED_GRAD, "t0.sum().abs().backward()", converter)
    assert known_ids(outcome) == ["behaviour-follows-known-difference"]
    follows = [m for _, m in outcome.known]
    assert "functorch-escaped-grad-unwrapped" in follows[0].detail
    assert "does not require grad" in str(follows[0].real)


def test_programs_on_an_escaped_vmap_wrapper_are_refused_alike() -> None:
    # Every op on a BatchedTensor whose vmap returned raises, on both sides.
    assert behaviour(ESCAPED_VMAP, "p0 = t0 * 2", "fake").status == PASSED
    assert behaviour(ESCAPED_VMAP, "t0.add_(1)", "fake-real").status == PASSED


# zero_() of an MKLDNN tensor, freed, then the heap used again (64 x 64
# elements: glibc then notices an overrun every time; a small tensor's is
# noticed only now and then).
MKLDNN_ZERO = ("import sys, torch\n"
               "dtype = getattr(torch, sys.argv[1])\n"
               "t = torch.zeros(64, 64).to(dtype).to_mkldnn()\n"
               "t.zero_()\n"
               "del t\n"
               "for _ in range(100):\n"
               "    torch.zeros(64, 64).to(dtype).to_mkldnn()\n")


def _mkldnn_zero(dtype: str) -> Any:
    return subprocess.run([sys.executable, "-c", MKLDNN_ZERO, dtype], capture_output=True,
                          timeout=120)


def _mkldnn_programs(dtype: str) -> list[str]:
    (t,) = built(f"t0 = torch.arange(16.).reshape(4, 4).to(torch.{dtype}).to_mkldnn()")
    return [p.source for p in seeded_programs((t,), 40, seed=5)]


@pytest.mark.parametrize("dtype", ["bfloat16", "int8", "uint8", "float16"])
def test_zero_is_never_drawn_on_an_mkldnn_tensor_but_of_float32(dtype: str) -> None:
    """zero_() of an MKLDNN tensor of any other dtype corrupts eager's heap
    (a harvest died of 'free(): invalid next size'; alone it aborts with
    'corrupted size vs. prev_size').  Checked in a child process: it must
    abort there, and the vocabulary must not draw it."""
    crashed = _mkldnn_zero(dtype)
    assert crashed.returncode < 0, crashed.stderr.decode()[-500:]
    sources = _mkldnn_programs(dtype)
    assert not any("zero_" in source for source in sources)
    assert any("mul_" in source for source in sources)


def test_zero_is_drawn_on_a_float32_mkldnn_tensor_which_it_leaves_whole() -> None:
    survived = _mkldnn_zero("float32")
    assert survived.returncode == 0, survived.stderr.decode()[-500:]
    assert any("zero_" in source for source in _mkldnn_programs("float32"))


@pytest.mark.parametrize("converter", ["meta", "fake"])
@pytest.mark.parametrize("view", ["t0.real", "t0[0:1]"])
def test_set_of_a_view_of_a_functional_tensor_is_refused_by_eagers_scatter_only(
        converter: str, view: str) -> None:
    # (a 30-minute run met it: eager's slice_scatter checks the size of what
    # functionalization writes back into the base, the meta kernel does not;
    # a carried real tensor runs eager's kernel and is refused alike)
    lines = ("t0 = torch._to_functional_tensor(torch.zeros(2, dtype=torch.complex64))",)
    outcome = behaviour(lines, f"p0 = {view}\np0.set_()", converter)
    assert known_ids(outcome) == ["op:functional-set-of-a-view-scatters-unchecked"]
    assert behaviour(lines, f"p0 = {view}\np0.zero_()", converter).status == PASSED
    assert behaviour(lines, f"p0 = {view}\np0.set_()", "fake-real").status == PASSED


SHARED_GRAD = ("t0 = torch.zeros((), dtype=torch.complex64)", "t0.share_memory_()",
               "t0.requires_grad_()")
SHARED_EMPTY = ("t0 = torch.zeros(0)", "t0.share_memory_()")


# Met by a 30-minute run (--hypothesis-seed=20261239, stop 47) on tensors in
# shared memory (kind foreign_memory): the control, made under the mode, could
# not share a storage (torch raises for a meta storage), so no operator
# difference could be judged.  Its storages now stay private: each is the
# registered operator difference it is on private memory.
@pytest.mark.parametrize("lines, program, converter, entry", [
    (SHARED_GRAD, "p0 = torch.ops.aten.alias(t0)\nt0.requires_grad_(False)\nt0.t_()",
     "fake-dynamic", "op:fake-in-place-op-breaks-view-autograd"),
    (SHARED_EMPTY, "with torch.inference_mode():\n    p0 = t0.reshape(-1)", "fake-real-dynamic",
     "op:zero-element-view-dispatch-cache"),
])
def test_a_control_is_made_of_tensors_in_shared_memory(lines: tuple[str, ...], program: str,
                                                      converter: str, entry: str) -> None:
    assert entry in known_ids(behaviour(lines, program, converter))
    # the same tensors made again by the user's own function (a reproducer's remake=)
    def remake() -> tuple[Any, ...]:
        return Recipe(lines, ("t0",)).build()

    outcome = check_faithful(*remake(), converters=[converter], checks=["behaviour"],
                             program=program, remake=remake).outcomes[0]
    assert entry in known_ids(outcome)
    # torch's own share_memory_ is back (the control's is scoped to making it)
    with pytest.raises(RuntimeError, match="only available on CPU"):
        torch.zeros(1, device="meta").untyped_storage().share_memory_()


# Met by a 30-minute run (--hypothesis-seed=20261241, stop 48, kind view_family):
# a view made with grad on from a no-grad view; the base already has a .grad,
# and a backward through the converted view accumulates into it.
def test_a_view_past_a_no_grad_view_accumulates_into_an_existing_grad() -> None:
    lines = ("t0 = torch.zeros(0, 0)", "t0.requires_grad_()", "t1 = t0.transpose(0, 0)",
             "with torch.no_grad():\n    t2 = t0[0:0:1]", "t3 = t2[0:0:1]")
    program = "t0.sum().abs().backward()\np1 = t0.grad\nt3.sum().abs().backward()"
    tensors = Recipe(lines, ("t0", "t1", "t3")).build()
    for converter in ("fake", "meta", "fake-real"):
        outcome = check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                                 program=program).outcomes[0]
        assert known_ids(outcome) == ["behaviour-view-past-a-no-grad-view-reconnected"]
        (difference,) = [m for _, m in outcome.known]
        assert (difference.attribute, difference.real, difference.fake) == ("_version bump", 0, 1)
