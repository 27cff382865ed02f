"""The view and in-place vocabulary read from torch's operator schemas."""

from __future__ import annotations

import pytest
import torch

from pytest_metafidelity.strategies import aten_vocabulary
from pytest_metafidelity.strategies.aten_vocabulary import operators_in, vocabulary
from pytest_metafidelity.strategies.programs import INPLACE_OPS, VIEW_OPS, Op


def _by_name() -> dict[str, aten_vocabulary.AtenOp]:
    return {op.name: op for op in vocabulary()}


@pytest.mark.parametrize("name", ["select", "view", "transpose", "split", "unbind", "real",
                                  "diagonal", "as_strided", "alias"])
def test_views_are_read_from_their_alias_annotations(name: str) -> None:
    op = _by_name()[name]
    assert op.group == "view"
    assert op.applies, op.not_applicable


@pytest.mark.parametrize("name", ["add_", "zero_", "resize_", "set_", "copy_", "t_",
                                  "as_strided_", "requires_grad_"])
def test_in_place_ops_are_read_from_their_alias_annotations(name: str) -> None:
    op = _by_name()[name]
    assert op.group == "in-place"
    assert op.applies, op.not_applicable


@pytest.mark.parametrize("name", ["add", "sum", "clone", "empty_like", "add_out"])
def test_ops_that_neither_alias_nor_write_their_input_are_not_in_the_vocabulary(name: str) -> None:
    assert name not in _by_name()


def test_ops_for_other_layouts_only_do_not_apply_and_say_why() -> None:
    ops = _by_name()
    assert ops["_values"].not_applicable is not None and "no kernel" in ops["_values"].not_applicable
    assert ops["values"].not_applicable == aten_vocabulary.NOT_STRIDED["values"]


@pytest.mark.parametrize("name", sorted(aten_vocabulary.NOT_STRIDED))
def test_an_op_listed_as_not_for_strided_tensors_still_refuses_one(name: str) -> None:
    # The list is by name: when torch starts accepting a strided tensor, the op
    # must move back into the vocabulary.
    with pytest.raises(RuntimeError):
        getattr(torch.zeros(2, 2), name)()


@pytest.mark.parametrize(("op", "group"), [(op, "view") for op in VIEW_OPS]
                         + [(op, "in-place") for op in INPLACE_OPS], ids=lambda x: getattr(x, "name", x))
def test_the_programs_view_and_in_place_steps_are_torchs_ops_of_that_group(op: Op, group: str) -> None:
    # benchmarks/program_vocabulary.py counts the programs' steps by these names.
    entry = _by_name()[op.name]
    assert (entry.group, entry.not_applicable) == (group, None)


@pytest.mark.parametrize(("statement", "expected"), [
    ("p0 = t0[:, 0:2]", {"slice"}),
    ("p0 = t0[1]", {"select"}),
    ("p0 = t0.select(0, 1)", {"select"}),
    ("p0 = t0.real", {"real"}),
    ("p0 = t0.T", {"numpy_T"}),
    ("p0 = torch.ops.aten.alias(t0)", {"alias"}),
    ("t0.resize_(3).zero_()", {"resize_", "zero_"}),
])
def test_operators_are_read_from_a_statement_as_written(statement: str, expected: set[str]) -> None:
    assert expected <= operators_in(statement)
