"""Programs on tensors that only exist inside a functorch level: BatchedTensor
(vmap), GradTrackingTensor (grad) and functional tensors of a
torch.func.functionalize level.  The program is drawn inside the recipe's
levels, and the ``behaviour`` check runs it inside them, on the real tensors
and on their conversions alike."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_metafidelity import ProgramNotRun, assert_faithful, check_faithful
from pytest_metafidelity import known_differences as kd
from pytest_metafidelity.checks import Mismatch
from pytest_metafidelity.checks.behaviour import Lockstep
from pytest_metafidelity.faithful import KNOWN, PASSED
from pytest_metafidelity.findings import RealExtent
from pytest_metafidelity.strategies import Recipe, all_kinds
from pytest_metafidelity.strategies.programs import seeded_programs, why_no_programs

VMAP = "torch._functorch.vmap.vmap_increment_nesting(2, 'error')"
GRAD = "torch._functorch.eager_transforms.grad_increment_nesting()"
FUNCTORCH = ("import torch._functorch.eager_transforms", "import torch._functorch.vmap")
FUNCTIONALIZE = "pytest_metafidelity.strategies.wrappers.functionalize_level(True)"
FUNCTIONALIZE_IMPORT = ("import pytest_metafidelity.strategies.wrappers",)
LEVEL = "torch._C._functorch.current_level()"


def in_level(context: str, imports: tuple[str, ...], *lines: str) -> Recipe:
    """The recipe of ``t`` (the last line binds it), inside ``context``."""
    return Recipe(tuple(lines), ("t",), imports, (context,))


def behaviour(recipe: Recipe, program: str, converter: str) -> Any:
    """The ``behaviour`` check's outcome, run as the suite runs it: inside
    the recipe's level, where its tensors live."""
    with recipe.active_contexts() as namespace:
        tensors = recipe.build_in(namespace)
        return check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                              program=program).outcomes[0]


def known_ids(outcome: Any) -> list[str]:
    assert outcome.status == KNOWN, outcome.describe()
    return sorted({i for i, _ in outcome.known})


BATCHED = in_level(VMAP, FUNCTORCH,
                   "with torch._C._DisableFuncTorch():", "    x = torch.arange(6.).reshape(2, 3)",
                   f"t = torch._C._functorch._add_batch_dim(x, 0, {LEVEL})")
GRAD_TRACKING = in_level(GRAD, FUNCTORCH,
                         "with torch._C._DisableFuncTorch():", "    x = torch.arange(6.)",
                         f"t = torch._C._functorch._wrap_for_grad(x, {LEVEL})")
# (its inner tensor, a leaf, requires grad: the converters drop that)
GRAD_OF_A_LEAF = in_level(GRAD, FUNCTORCH,
                          "with torch._C._DisableFuncTorch():", "    x = torch.zeros(2)",
                          "with torch._functorch.eager_transforms.enable_inplace_requires_grad(True):",
                          "    x.requires_grad_()",
                          f"t = torch._C._functorch._wrap_for_grad(x, {LEVEL})")
FUNCTIONAL = in_level(FUNCTIONALIZE, FUNCTIONALIZE_IMPORT,
                      "with torch._C._DisableFuncTorch():", "    x = torch.arange(4.)",
                      f"t = torch._C._functorch._wrap_functional_tensor(x, {LEVEL})")


def test_the_functorch_kinds_declare_programs() -> None:
    kinds = all_kinds()
    assert all(kinds[k].runs_programs
               for k in ("functorch_batched", "functorch_grad", "functorch_functional"))
    # (a FunctionalTensor's storage cannot be written to make the real side's copies)
    assert "invalid python storage" in str(kinds["functional_tensor_mode"].programs)


@pytest.mark.parametrize("recipe", [BATCHED, GRAD_TRACKING, FUNCTIONAL],
                         ids=["vmap", "grad", "functionalize"])
def test_programs_are_drawn_inside_the_level(recipe: Recipe) -> None:
    programs = seeded_programs(recipe, 10, seed=1)
    assert all(p.reason == "" for p in programs)
    assert sum(len(p.steps) for p in programs) >= 10


@pytest.mark.parametrize("recipe", [BATCHED, GRAD_TRACKING, FUNCTIONAL],
                         ids=["vmap", "grad", "functionalize"])
@pytest.mark.parametrize("converter", ["fake", "fake-dynamic", "refake"])
def test_a_program_runs_alike_inside_the_level(recipe: Recipe, converter: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    started = []
    start = Lockstep.start
    monkeypatch.setattr(Lockstep, "start", lambda self: (started.append(self), start(self))[1])
    outcome = behaviour(recipe, "p0 = t.view(-1)\np0.mul_(2)\np1 = t.detach()", converter)
    assert outcome.status == PASSED, outcome.describe()
    assert started, "the program never ran"  # (a check that skips it passes too)


def test_a_step_that_differs_inside_the_level_is_found() -> None:
    # Eager refuses an in-place op on the wrapper of a leaf that requires
    # grad; the converted wrapper's inner tensor does not require grad (a
    # known difference of the conversion, read at the start inside the
    # wrapper), so the step's difference follows from it, on every converter.
    for converter in ("fake", "refake", "refake-fresh"):
        outcome = behaviour(GRAD_OF_A_LEAF, "t.zero_()", converter)
        assert known_ids(outcome) == ["behaviour-follows-known-difference"], converter
        (_, m), = outcome.known
        assert "a leaf Variable that requires grad" in str(m.real), outcome.describe()
        assert "functorch-inner-requires-grad" in m.detail, outcome.describe()


def follows(outcome: Any) -> str:
    """The one known difference a step's difference follows from (the
    ``behaviour`` check says which, in the difference's detail)."""
    assert known_ids(outcome) == ["behaviour-follows-known-difference"], outcome.describe()
    (_, m), = outcome.known
    return m.detail


MUTATED = in_level(FUNCTIONALIZE, FUNCTIONALIZE_IMPORT,
                   "with torch._C._DisableFuncTorch():", "    x = torch.zeros(2)",
                   f"t = torch._C._functorch._wrap_functional_tensor(x, {LEVEL})",
                   "t.mul_(2)")
# a view inside functionalization (the wrapper has no _base)
VIEW = in_level(FUNCTIONALIZE, FUNCTIONALIZE_IMPORT,
                "with torch._C._DisableFuncTorch():",
                "    x = torch.empty(0).set_(torch.arange(4.).untyped_storage(), 1, (2,), (1,))",
                f"y = torch._C._functorch._wrap_functional_tensor(x, {LEVEL})",
                "t = y[1:]")


# a view an op with several outputs made (the chain's ViewMeta says so)
UNBOUND = in_level(FUNCTIONALIZE, FUNCTIONALIZE_IMPORT,
                   "with torch._C._DisableFuncTorch():", "    x = torch.zeros(2, 1)",
                   f"y = torch._C._functorch._wrap_functional_tensor(x, {LEVEL})",
                   "t = y.unbind(1)[0]")


MUTATION = "torch._functionalize_has_data_mutation()"
VIEW_CHAIN = "len(torch._C._functionalization.get_view_meta_sequence())"
MULTI_OUTPUT = "torch._functionalize_is_multi_output_view()"
STATE = {MUTATION, VIEW_CHAIN, MULTI_OUTPUT}


@pytest.mark.parametrize("converter", ["fake", "meta", "fake-dynamic"])
def test_functionalizations_state_is_read_at_conversion(converter: str) -> None:
    # what functionalization records of a tensor, which the wrappers check reads
    for recipe, entry, attribute in ((MUTATED, "functional-mutation-forgotten", MUTATION),
                                     (VIEW, "functionalize-view-chain-dropped", VIEW_CHAIN),
                                     (UNBOUND, "functionalize-view-chain-dropped",
                                      MULTI_OUTPUT)):
        with recipe.active_contexts() as namespace:
            (t,) = recipe.build_in(namespace)
            outcome = check_faithful(t, converters=[converter]).outcomes[0]
        assert entry in known_ids(outcome)
        # (a mutation also counts, and is not one made under no_grad)
        assert attribute in {m.attribute for i, m in outcome.known if i == entry}
    with FUNCTIONAL.active_contexts() as namespace:
        (t,) = FUNCTIONAL.build_in(namespace)
        outcome = check_faithful(t, converters=[converter]).outcomes[0]
        assert not {m.attribute for _, m in outcome.known} & STATE


def test_what_follows_from_functionalizations_state_is_known() -> None:
    # detach() of a mutated tensor: eager's gets a version counter of its own
    for converter in ("fake", "meta", "fake-dynamic"):
        detail = follows(behaviour(MUTATED, "p0 = t.detach()", converter))
        assert "version counter sharing" in detail
        assert "functional-mutation-forgotten" in detail
    assert behaviour(FUNCTIONAL, "p0 = t.detach()", "fake").status == PASSED
    # zero_() of a view: eager regenerates it from the base, keeping its offset
    for converter in ("fake", "meta", "fake-real"):
        detail = follows(behaviour(VIEW, "t.zero_()", converter))
        assert "storage_offset() differs" in detail
        assert "functionalize-view-chain-dropped" in detail


def test_no_program_touches_a_wrapper_whose_inner_tensor_reaches_past_its_storage() -> None:
    # (eager segfaults on torch._neg_view of such a BatchedTensor)
    recipe = in_level(VMAP, FUNCTORCH,
                      "with torch._C._DisableFuncTorch():", "    x = torch.arange(4.)",
                      "    x.untyped_storage().resize_(0)",
                      f"t = torch._C._functorch._add_batch_dim(x, 0, {LEVEL})")
    with recipe.active_contexts() as namespace:
        reason = why_no_programs(recipe.build_in(namespace))
    assert reason is not None and "inner tensor reaches past the end of its storage" in reason
    assert [p.steps for p in seeded_programs(recipe, 3)] == [()]


def test_strides_over_a_batch_of_no_elements_are_the_degenerate_strides_difference() -> None:
    # A grad wrapper over two vmap levels whose batches have size 0: the
    # logical shape (1, 1, 2) has elements, the memory holds none.  expand()
    # gives eager's strides of the empty channels_last_3d tensor (0, 1, 0)
    # and the fake kernels contiguous ones (0, 2, 1), the control too: no
    # stride moves through memory (met by a 30-minute run, functorch_grad).
    recipe = Recipe(("with torch._C._DisableFuncTorch():",
                     "    x = torch.arange(0.).reshape((1, 1, 2, 0, 0))"
                     ".to(memory_format=torch.channels_last_3d)",
                     f"t1 = torch._C._functorch._add_batch_dim(x, 3, {LEVEL} - 2)",
                     f"t2 = torch._C._functorch._add_batch_dim(t1, 3, {LEVEL} - 1)",
                     f"t = torch._C._functorch._wrap_for_grad(t2, {LEVEL})"),
                    ("t",), FUNCTORCH,
                    ("torch._functorch.vmap.vmap_increment_nesting(0, 'error')",) * 2 + (GRAD,))
    for converter in ("fake", "fake-real"):
        outcome = behaviour(recipe, "p0 = t.expand((3, 1, 2))", converter)
        assert known_ids(outcome) == ["op:degenerate-strides"], converter
        (_, m), = outcome.known
        assert (m.real, m.fake) == ((0, 1, 0), (0, 2, 1)), outcome.describe()
    # the same strides over elements are no such difference
    assert not kd.by_id("op:degenerate-strides").explains_on_control(
        "p0 = t.expand((3, 1, 2))", Mismatch("behaviour", "p0", "stride()", (0, 1, 0), (0, 2, 1)),
        (), RealExtent((3, 1, 2), 6))


def test_a_wrapper_handed_over_without_its_recipe_is_no_internal_error() -> None:
    # The describer cannot read a functorch wrapper's metadata, so the recipe
    # it writes binds None: the real side cannot be rebuilt, and the program
    # is not run (as for any tensor no recipe rebuilds) -- never a crash of
    # the check.
    from pytest_metafidelity.checks.behaviour import rebuilt_or_why
    from pytest_metafidelity.strategies.described import recipe_for

    with BATCHED.active_contexts() as namespace:
        (t,) = BATCHED.build_in(namespace)
        t = t.clone()  # (a tensor the recipe registry does not know)
        recipe = recipe_for([t])
        assert "t0 = None" in recipe.body()
        copies, why = rebuilt_or_why(recipe, [t], recipe.outputs)
        assert copies is None and why is not None and "not made" in why
        outcome = check_faithful(t, converters=["fake"], checks=["behaviour"],
                                 program="p0 = t0.view(-1)").outcomes[0]
        # ... and the outcome says so; assert_faithful warns
        with pytest.warns(ProgramNotRun, match="fake: the behaviour check did not run the "
                                               "program: the tensors made again differ"):
            assert_faithful(t, converters=["fake"], checks=["behaviour"],
                            program="p0 = t0.view(-1)")
        # seeded programs cannot be drawn against it: said, not a crash
        with pytest.raises(ValueError, match="programs=2: programs cannot run on these tensors: "
                                             r"t0: not made \(the recipe could not describe"):
            check_faithful(t, converters=["fake"], checks=["behaviour"], programs=2)
    assert outcome.status == PASSED and not outcome.internal_errors, outcome.describe()
    assert outcome.notes == [
        "the behaviour check did not run the program: the tensors made again differ from "
        "those given: t0: not made (the recipe could not describe it)"]
    assert "note: the behaviour check did not run the program" in outcome.describe()


def test_contiguity_of_a_functional_tensor_with_no_elements_is_degenerate() -> None:
    # zero_() of an empty C++ functional tensor at a functionalize level:
    # eager's is channels_last-contiguous, the control's and the fake's not,
    # with the control's strides eager's (met by a 30-minute run, stop 47)
    recipe = in_level("pytest_metafidelity.strategies.wrappers.functionalize_level(True)",
                      FUNCTIONALIZE_IMPORT,
                      "with torch._C._DisableFuncTorch():",
                      "    x = torch.empty(0).set_(torch.zeros(0).untyped_storage(), 0, "
                      "(0, 0, 0), (0, 1, 2))",
                      f"y = torch._C._functorch._wrap_functional_tensor(x, {LEVEL})",
                      "t = y * 2")
    outcome = behaviour(recipe, "t.unsqueeze_(2)\nt.zero_()", "fake")
    assert "op:degenerate-strides" in known_ids(outcome)
    (m,) = [m for i, m in outcome.known if i == "op:degenerate-strides"]
    assert "is_contiguous(memory_format=torch.channels_last)" in m.detail
