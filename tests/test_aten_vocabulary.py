"""The view and in-place vocabulary read from torch's operator schemas."""

from __future__ import annotations

from typing import Any

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


# -- the steps built from the schemas (strategies/aten_steps.py) ------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_metafidelity.strategies import aten_steps as steps_module  # noqa: E402
from pytest_metafidelity.strategies.aten_steps import NOT_DRAWN, aten_steps  # noqa: E402
from pytest_metafidelity.strategies.programs import (  # noqa: E402
    OP_NAMES, Program, RandomChoices, Step, run_step)


class _First:
    """Choices that always take the first option (what shrinking goes toward)."""

    def integer(self, lo: int, hi: int) -> int:
        return lo

    def boolean(self) -> bool:
        return False

    def pick(self, items: Any) -> Any:
        return items[0]


def _steps() -> dict[str, steps_module.AtenStep]:
    return {step.name: step for step in aten_steps()[0]}


def test_every_op_that_applies_is_a_step_or_says_why_not() -> None:
    built, not_drawn = aten_steps()
    names = set(OP_NAMES) | {step.name for step in built}
    for op in vocabulary():
        if op.applies:
            assert op.name in names or not_drawn.get(op.name), op.name
    # the benchmark's goal: at least 80% of them in the programs' vocabulary
    applicable = [op for op in vocabulary() if op.applies]
    assert sum(op.name in names for op in applicable) >= 0.8 * len(applicable)


def test_ops_kept_out_by_name_are_ops_of_the_vocabulary_that_apply() -> None:
    # A name torch drops (or that stops applying) must leave NOT_DRAWN.
    ops = _by_name()
    for name in NOT_DRAWN:
        assert name in ops and ops[name].applies, name


@pytest.mark.parametrize(("name", "statement"), [
    ("exp2_", "t0.exp2_()"),
    ("index_fill_", "t0.index_fill_(-2, t0.new_zeros((1,), dtype=torch.long), 2)"),
    ("scatter_add_", "t0.scatter_add_(-2, t0.new_zeros((1, 1), dtype=torch.long), t0)"),
    ("silu_", "torch.ops.aten.silu_.default(t0)"),
    ("cauchy_", "t0.cauchy_(generator=torch.Generator().manual_seed(0))"),
    ("clamp_", "t0.clamp_(min=2)"),
    ("unbind", "t0.unbind()[0]"),
    ("split_with_sizes", "t0.split_with_sizes([2])[0]"),
])
def test_a_step_calls_the_op_as_users_write_it_with_arguments_from_its_schema(
        name: str, statement: str) -> None:
    t = torch.zeros(2, 3)
    assert _steps()[name].make(_First(), "t0", t, {"t0": t}) == statement


def test_dropout_in_training_and_tensors_of_indices_that_set_shapes_are_never_built() -> None:
    # Dropout in training draws from torch's global generator (other numbers on
    # each side, and global state changed); tensor_split's tensor of indices is
    # data-dependent on every fake by design.
    steps = _steps()
    rng = RandomChoices(__import__("random").Random(0))
    t = torch.zeros(2, 3)
    for _ in range(50):
        assert "True" not in steps["dropout_"].make(rng, "t0", t, {"t0": t})
        assert "new_zeros" not in steps["tensor_split"].make(rng, "t0", t, {"t0": t})


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "bits8", "uint7", "complex32"])
def test_steps_keep_off_dtypes_few_kernels_know(dtype: str) -> None:
    if not hasattr(torch, dtype):
        pytest.skip(f"torch {torch.__version__} has no {dtype}")
    t = torch.empty(3, dtype=getattr(torch, dtype))
    assert not any(step.applies(t) for step in aten_steps()[0])


def test_steps_keep_off_a_tensor_reaching_past_its_storage() -> None:
    t = torch.zeros(4)
    t.untyped_storage().resize_(0)
    assert not any(step.applies(t) for step in aten_steps()[0])
    assert all(step.applies(torch.zeros(4)) for step in aten_steps()[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_step_is_runnable_source_that_runs_or_raises(data: Any) -> None:
    built = aten_steps()[0]
    step = built[data.draw(st.integers(0, len(built) - 1), label="step")]
    shape = data.draw(st.lists(st.integers(0, 3), max_size=3), label="shape")
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool,
                                       torch.complex64]), label="dtype")
    t = torch.ones(shape, dtype=dtype)
    choices = RandomChoices(__import__("random").Random(data.draw(st.integers(0, 2 ** 16))))
    text = step.make(choices, "t0", t, {"t0": t})
    statement = f"p0 = {text}" if step.binds else text
    (parsed,) = Program.parse(statement, ["t0"]).steps
    assert parsed.statement == statement
    assert step.name in operators_in(statement)
    namespace = {"torch": torch, "t0": t}
    raised = run_step(Step(step.name, statement, "p0" if step.binds else None), namespace)
    assert raised is None or isinstance(raised, Exception)
    if raised is None and step.binds:
        assert isinstance(namespace["p0"], torch.Tensor)
