"""What functionalization records of a C++ functional tensor -- its
mutations of data, metadata and storage, whether they ran under no_grad,
whether it is a view of a multi-output op -- is read by the ``wrappers``
check (``torch._functionalize_<name>(t)``, listed in
``tensor_facts.FUNCTIONALIZATION_QUERIES``), on the real tensor and its
conversion alike; the converters start a new record (the known difference
functional-mutation-forgotten)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

from pytest_metafidelity import check_faithful
from pytest_metafidelity.checks.wrappers import read_wrapping
from pytest_metafidelity.faithful import KNOWN, PASSED
from pytest_metafidelity.properties import FUNCTIONALIZATION_NOT_READ, functionalization_names
from pytest_metafidelity.strategies.tensor_facts import (FUNCTIONALIZATION_QUERIES,
                                                       functionalization_attribute)
from test_properties import installed_torch, pinned_torch

F = torch._to_functional_tensor
A = functionalization_attribute


def mul_under_no_grad(t: torch.Tensor) -> None:
    with torch.no_grad():
        t.mul_(2)


DATA = {A("has_data_mutation"), A("mutation_counter"),
        A("are_all_mutations_hidden_from_autograd")}
# A functional tensor of zeros of each shape, the mutation made of it, and
# what the mutation leaves in the record, which the converted tensor's lacks.
MUTATIONS: dict[str, tuple[tuple[int, ...], Callable[[torch.Tensor], Any], set[str]]] = {
    "mutated": ((3,), lambda t: t.mul_(2),
                DATA | {A("are_all_mutations_under_no_grad_or_inference_mode")}),
    "mutated_under_no_grad": ((3,), mul_under_no_grad, DATA),
    "transposed": ((2, 3), lambda t: t.t_(), {A("has_metadata_mutation")}),
    "resized": ((3,), lambda t: t.resize_(5), {A("has_metadata_mutation")}),
    "storage_changed": ((3,), lambda t: t.set_(F(torch.zeros(6))),
                        {A("was_storage_changed"), A("storage_changed_counter")}),
}


def made(mutation: str) -> torch.Tensor:
    shape, mutate, _ = MUTATIONS[mutation]
    t = F(torch.zeros(shape))
    mutate(t)
    return t


@pytest.mark.parametrize("mutation", list(MUTATIONS))
@pytest.mark.parametrize("converter", ["fake", "meta", "fake-dynamic"])
def test_a_mutation_functionalization_recorded_is_read_and_known(mutation: str,
                                                                 converter: str) -> None:
    t = made(mutation)
    outcome = check_faithful(t, converters=[converter], checks=["wrappers"]).outcomes[0]
    assert outcome.status == KNOWN, outcome.describe()
    forgotten = {m.attribute for i, m in outcome.known if i == "functional-mutation-forgotten"}
    assert forgotten == MUTATIONS[mutation][2], outcome.describe()


def test_an_unmutated_functional_tensor_has_the_same_record() -> None:
    t = F(torch.zeros(3))
    reading = read_wrapping(t)
    assert reading[A("mutation_counter")] == 0 and reading[A("has_data_mutation")] is False
    outcome = check_faithful(t, converters=["fake", "meta"], checks=["wrappers"])
    assert [o.status for o in outcome.outcomes] == [PASSED, PASSED], outcome.describe()


def test_every_query_is_read_of_a_functional_tensor_only() -> None:
    t = made("mutated")
    reading = read_wrapping(t)
    for name in FUNCTIONALIZATION_QUERIES:
        assert A(name) in reading, name
    assert reading[A("mutation_counter")] == 1
    assert not any(k.startswith("torch._functionalize_") for k in read_wrapping(torch.zeros(3)))


def test_every_functionalize_function_is_read_or_said_why_not() -> None:
    names = set(functionalization_names())
    assert names, "torch has no torch._functionalize_* functions"
    listed = set(FUNCTIONALIZATION_QUERIES) | set(FUNCTIONALIZATION_NOT_READ)
    assert not set(FUNCTIONALIZATION_QUERIES) & set(FUNCTIONALIZATION_NOT_READ)
    if installed_torch() == pinned_torch():
        assert names == listed  # (every one has a rule, and no rule is stale)


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_the_describer_makes_the_record_again(mutation: str) -> None:
    from pytest_metafidelity.strategies.described import describe_as_recipe

    t = made(mutation)
    recipe = describe_as_recipe([t])
    (rebuilt,) = recipe.build()
    given, again = read_wrapping(t), read_wrapping(rebuilt)
    # (a record read as a reproducer's tensor has it: the counters aside --
    # one mutation made again stands for several)
    for name in FUNCTIONALIZATION_QUERIES:
        if not name.endswith("_counter"):
            assert again[A(name)] == given[A(name)], (name, recipe.to_python())


def test_a_functional_tensor_that_converting_restrides_still_runs_its_program() -> None:
    # Converting a C++ functional tensor syncs it (functional-sync-on-convert):
    # its pending update is applied, and regenerated from its base it has
    # other strides.  The behaviour check's copies are made as the
    # conversion left it, so its program runs (a 10-example run met it: the
    # program was not run, and the outcome now says so where that happens).
    from pytest_metafidelity.strategies import Recipe

    (t,) = Recipe((
        "t0 = torch.empty(0).set_(torch.arange(22.).untyped_storage(), 2, (4, 2), (6, 0))",
        "t1 = torch._to_functional_tensor(t0)",
        "t1[1:].zero_()",  # (pending on t1 until it is synced)
    ), ("t1",)).build()
    assert t.stride() == (6, 0)
    outcome = check_faithful(t, converters=["fake"], program="t1.unsqueeze_(0)\nt1.mul_(2)"
                             ).outcomes[0]
    assert t.stride() == (2, 1)  # (synced by the conversion)
    assert outcome.notes == [] and outcome.status == KNOWN, outcome.describe()
    assert "functional-sync-on-convert" in outcome.reason
