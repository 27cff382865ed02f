"""Tests for the autograd, wrapper (functional, functorch) and subclass kinds,
and for register_subclass().

Each kind gets a property test asserting that what it builds really has the
defining property; every kind's recipe source rebuilds the same tensors; and
check_faithful() runs on every kind (its verdicts are the suite's business).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from torch.utils._pytree import tree_flatten, tree_map_only, tree_unflatten

import helpers_strategies as hs
from pytest_metafidelity.strategies import (
    all_kinds,
    recipes,
    register_subclass,
    registered_subclasses,
    unregister_subclass,
)
from pytest_metafidelity.strategies.example_subclasses import ScaledTensor

fc = torch._C._functorch

AUTOGRAD_KINDS = ["autograd_leaf", "autograd_nonleaf", "autograd_view", "grad_attached", "grad_alias",
                  "parameter", "inference"]
WRAPPER_KINDS = ["functional", "functional_view", "functional_tensor_mode", "functorch_batched",
                 "functorch_grad", "functorch_functional", "functorch_escaped"]
SUBCLASS_KINDS = ["two_tensor", "two_tensor_nested", "subclass_view", "subclass_ctx", "nested_jagged",
                  "subclass_dense_view",
                  "subclass_family"]
MY_KINDS = AUTOGRAD_KINDS + WRAPPER_KINDS + SUBCLASS_KINDS

few = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def built(recipe: Any, check: Any) -> None:
    """Build ``recipe`` (inside its contexts) and run ``check(tensors, recipe)``
    while the contexts are still active."""
    with recipe.active_contexts() as ns:
        check(recipe.build_in(ns), recipe)


def src(recipe: Any) -> str:
    return recipe.to_python()


# -- a user subclass for register_subclass ------------------------------------


class PairTensor(torch.Tensor):
    """A user traceable wrapper subclass: two inner tensors, a flatten context."""

    @staticmethod
    def __new__(cls, first: torch.Tensor, second: torch.Tensor, outer_size: Any = None,
                outer_stride: Any = None) -> "PairTensor":
        out = torch.Tensor._make_wrapper_subclass(
            cls, first.size() if outer_size is None else outer_size,
            strides=first.stride() if outer_stride is None else outer_stride,
            storage_offset=first.storage_offset(), dtype=first.dtype, device=first.device,
            requires_grad=first.requires_grad,
        )
        out.first, out.second = first, second
        return out

    def __tensor_flatten__(self) -> tuple[list[str], Any]:
        return ["first", "second"], ("pair",)

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, Any], ctx: Any, size: Any, stride: Any) -> "PairTensor":
        return PairTensor(inner["first"], inner["second"], size, stride)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        from torch.utils._python_dispatch import return_and_correct_aliasing

        kwargs = kwargs or {}
        firsts = tree_map_only(PairTensor, lambda t: t.first, (args, kwargs))
        seconds = tree_map_only(PairTensor, lambda t: t.second, (args, kwargs))
        out1, spec = tree_flatten(func(*firsts[0], **firsts[1]))
        out2, _ = tree_flatten(func(*seconds[0], **seconds[1]))
        out = [PairTensor(a, b) if isinstance(a, torch.Tensor) else a for a, b in zip(out1, out2)]
        return return_and_correct_aliasing(func, args, kwargs, tree_unflatten(out, spec))


class NotTraceable(torch.Tensor):
    pass


@pytest.fixture
def pair_registered() -> Any:
    handle = register_subclass(PairTensor, "{cls}({0}, {1})")
    yield handle
    handle.unregister()
    assert "PairTensor" not in registered_subclasses()


def _contains_type(t: Any, cls: type) -> bool:
    if isinstance(t, cls):
        return True
    return any(_contains_type(inner, cls) for _, inner in hs.inner_tensors(t))


# -- every kind is registered with the right flags ------------------------------


def test_kinds_are_registered_with_flags() -> None:
    kinds = all_kinds()
    for name in MY_KINDS + ["user_subclass"]:
        assert name in kinds, name
    context = {k for k in MY_KINDS if kinds[k].needs_context}
    assert context == {"functional_tensor_mode", "functorch_batched", "functorch_grad",
                       "functorch_functional"}
    family = {k for k in MY_KINDS if kinds[k].family}
    assert family == {"grad_alias", "subclass_family"}


# -- autograd ------------------------------------------------------------------------


@few
@given(recipes(kinds=["autograd_leaf"]))
def test_autograd_leaf(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert t.requires_grad and t.is_leaf and t.grad_fn is None
    built(recipe, check)


@few
@given(recipes(kinds=["autograd_nonleaf"]))
def test_autograd_nonleaf(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert t.requires_grad and not t.is_leaf and t.grad_fn is not None
        if ".retain_grad()" in src(r):
            assert t.retains_grad
        if ".backward(" in src(r):
            assert hs._grad_quietly(t) is not None
    built(recipe, check)


@few
@given(recipes(kinds=["autograd_view"]))
def test_autograd_view(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert t._is_view() and t._base is not None
        meta = torch._C._autograd._get_creation_meta(t)
        if "with torch.no_grad():" in src(r):
            # A leaf view, made where autograd did not record it.
            assert t.is_leaf
            assert meta == torch._C._autograd.CreationMeta.NO_GRAD_MODE
        elif t._base.requires_grad:
            assert not t.is_leaf and t.requires_grad
        elif t.requires_grad:
            # The view requires grad, its base does not.
            assert not t.is_leaf
    built(recipe, check)


@few
@given(recipes(kinds=["grad_attached"]))
def test_grad_attached(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert t.is_leaf
        if ".grad_dtype = " in src(r):
            assert t.grad_dtype != t.dtype  # another dtype, or None (any)
            if t.grad is not None:
                assert t.grad.dtype != t.dtype
        else:
            assert t.grad is not None and t.grad.shape == t.shape
    built(recipe, check)


@few
@given(recipes(kinds=["grad_alias"]))
def test_grad_alias(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        assert len(ts) == 2
        x, other = ts
        assert x.grad is not None
        other_storages = {hs.storage_key(other)}
        if other.grad is not None:
            other_storages.add(hs.storage_key(other.grad))
        assert hs.storage_key(x.grad) in other_storages
    built(recipe, check)


@few
@given(recipes(kinds=["parameter"]))
def test_parameter(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        if getattr(t, "_is_buffer", False):
            return
        if isinstance(t, torch.nn.Parameter):
            assert t.is_leaf
        else:  # a view of a parameter
            assert t._is_view() and isinstance(t._base, torch.nn.Parameter)
    built(recipe, check)


@few
@given(recipes(kinds=["inference"]))
def test_inference(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert "with torch.inference_mode():" in src(r)
        if "torch.inference_mode(False)" in src(r):
            assert not t.is_inference()
        elif not t.is_inference():
            # A view of a normal tensor, made in inference mode.
            assert t._is_view()
            assert torch._C._autograd._get_creation_meta(t) == torch._C._autograd.CreationMeta.INFERENCE_MODE
    built(recipe, check)


# -- functional and functorch wrappers --------------------------------------------------


@few
@given(recipes(kinds=["functional"]))
def test_functional(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert torch._is_functional_tensor(t) and not t._is_view()
    built(recipe, check)


@few
@given(recipes(kinds=["functional_view"]))
def test_functional_view(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert torch._is_functional_tensor(t) and t._is_view()
    built(recipe, check)


@few
@given(recipes(kinds=["functional_tensor_mode"]))
def test_functional_tensor_mode(recipe: Any) -> None:
    from torch._subclasses.functional_tensor import FunctionalTensor

    assert recipe.contexts == ("torch._subclasses.functional_tensor.FunctionalTensorMode()",)

    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert isinstance(t, FunctionalTensor) and torch._is_functional_tensor(t.elem)
    built(recipe, check)


def _levels_below(t: Any) -> list[tuple[str, int]]:
    out = []
    while hs.wrapper_kind(t) in ("batched", "grad"):
        out.append((hs.wrapper_kind(t), fc.maybe_get_level(t)))
        t = fc.get_unwrapped(t)
    assert hs.wrapper_kind(t) == "plain"
    return out


@few
@given(recipes(kinds=["functorch_batched"]))
def test_functorch_batched(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert fc.is_batchedtensor(t)
        assert fc.maybe_get_level(t) == fc.current_level()
        levels = _levels_below(t)
        # One wrapper per entered level, innermost level outermost.
        assert [lvl for _, lvl in levels] == list(range(len(r.contexts), 0, -1))
    built(recipe, check)


@few
@given(recipes(kinds=["functorch_grad"]))
def test_functorch_grad(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert fc.is_gradtrackingtensor(t)
        assert fc.maybe_get_level(t) == fc.current_level()
        assert [lvl for _, lvl in _levels_below(t)] == list(range(len(r.contexts), 0, -1))
    built(recipe, check)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipes(kinds=["functorch_escaped"]))
def test_functorch_escaped(recipe: Any) -> None:
    # A wrapper kept past its transform's return: no context is live, and a
    # grad wrapper's level is the dead -2; a vmap wrapper keeps its ended level.
    assert recipe.contexts == ()
    (t,) = recipe.build()
    assert fc.is_gradtrackingtensor(t) or fc.is_batchedtensor(t)
    if fc.is_gradtrackingtensor(t):
        assert fc.maybe_get_level(t) == -2 and t.requires_grad
        assert "torch.func.grad(" in recipe.body()
    else:
        assert fc.maybe_get_level(t) >= 1 and "torch.func.vmap(" in recipe.body()
    event("escaped: " + ("grad" if fc.is_gradtrackingtensor(t) else "vmap")
          + (" leaf" if t.is_leaf else " non-leaf"))


@few
@given(recipes(kinds=["functorch_functional"]))
def test_functorch_functional(recipe: Any) -> None:
    # A functional tensor of the live functionalize level the recipe entered
    # (views reapplied or not), wrapping a plain tensor.
    (context,) = recipe.contexts
    assert re.fullmatch(r"pytest_metafidelity\.strategies\.wrappers\.functionalize_level\("
                        r"(True|False)\)", context), context

    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert fc.is_functionaltensor(t) and torch._is_functional_tensor(t)
        assert fc.is_functorch_wrapped_tensor(t)
        assert fc.current_level() == 1
        inner = torch._from_functional_tensor(t)
        assert not fc.is_functorch_wrapped_tensor(inner)
    built(recipe, check)


def test_a_functionalize_level_is_left_when_its_block_ends() -> None:
    from pytest_metafidelity.strategies.wrappers import functionalize_level

    assert fc.maybe_current_level() is None
    with pytest.raises(ValueError, match="inside"):
        with functionalize_level(False) as level:
            assert fc.current_level() == level == 1
            raise ValueError("inside")
    assert fc.maybe_current_level() is None


# -- subclasses -------------------------------------------------------------------------


def _is_subclass(t: Any) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(t)


@few
@given(recipes(kinds=["two_tensor"]))
def test_two_tensor(recipe: Any) -> None:
    from torch.testing._internal.two_tensor import TwoTensor

    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert type(t) is TwoTensor
        assert t.a.shape == t.b.shape == t.shape
    built(recipe, check)


@few
@given(recipes(kinds=["two_tensor_nested"]))
def test_two_tensor_nested(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert _is_subclass(t)
        assert any(_is_subclass(inner) for _, inner in hs.inner_tensors(t))
    built(recipe, check)


@few
@given(recipes(kinds=["subclass_view"]))
def test_subclass_view(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert _is_subclass(t) and t._is_view() and _is_subclass(t._base)
    built(recipe, check)


@few
@given(recipes(kinds=["subclass_ctx"]))
def test_subclass_ctx(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert isinstance(t, ScaledTensor)
        attrs, ctx = t.__tensor_flatten__()
        assert ctx is not None and isinstance(ctx[0], float) and isinstance(ctx[1], str)
        inner = {a: getattr(t, a) for a in attrs}
        rebuilt = ScaledTensor.__tensor_unflatten__(inner, ctx, t.size(), t.stride())
        assert rebuilt.__tensor_flatten__()[1] == ctx
    built(recipe, check)


@few
@given(recipes(kinds=["nested_jagged"]))
def test_nested_jagged(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert t.is_nested and t.layout == torch.jagged
    built(recipe, check)


@few
@given(recipes(kinds=["subclass_dense_view"]))
def test_subclass_dense_view(recipe: Any) -> None:
    # The values of an NJT made by clone(): a plain view whose base is the NJT.
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        assert type(t) is torch.Tensor and not t.is_nested and t._is_view()
        assert t._base.is_nested and t._base.layout == torch.jagged
        assert not t._base._is_view()
    built(recipe, check)


@few
@given(recipes(kinds=["subclass_family"]))
def test_subclass_family(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        assert len(ts) == 2 and _is_subclass(ts[0])

        def storages(t: Any) -> set[Any]:
            found = {hs.deep_storage_key(t)}
            for _, inner in hs.inner_tensors(t):
                found |= storages(inner)
            if t._is_view() and t._base is not None:
                found |= storages(t._base)
            return found - {None}

        assert storages(ts[0]) & storages(ts[1]), "the family's tensors share no storage"
    built(recipe, check)


# -- round trip: printed source == what was built --------------------------------------------


@pytest.mark.parametrize("kind", MY_KINDS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_recipe_source_round_trips(kind: str, data: Any) -> None:
    recipe = data.draw(recipes(kinds=[kind]), label="recipe")
    from_build = hs.deep_summaries_from_build(recipe)
    from_source = hs.deep_summaries_from_source(recipe)
    assert from_source == from_build
    if recipe.contexts:
        assert src(recipe).splitlines()[-len(recipe.lines) - 1].startswith("with ")


# -- check_faithful runs on every kind ------------------------------------------------------


@pytest.mark.parametrize("kind", MY_KINDS)
def test_check_faithful_runs(kind: str) -> None:
    from pytest_metafidelity.faithful import check_faithful

    statuses = set()

    @settings(max_examples=4, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(recipes(kinds=[kind]))
    def run(recipe: Any) -> None:
        with recipe.active_contexts() as ns:
            tensors = recipe.build_in(ns)
            result = check_faithful(*tensors, converters=["meta", "fake"])
        assert [o.converter for o in result.outcomes] == ["meta", "fake"]
        statuses.update(o.status for o in result.outcomes)
        assert "import torch" in result.reproducer

    run()
    assert statuses


# -- register_subclass -------------------------------------------------------------------


def test_user_subclass_unavailable_without_registration() -> None:
    assert not registered_subclasses()
    with pytest.raises(InvalidArgument, match="register_subclass"):
        recipes(kinds=["user_subclass"]).validate()  # checked when a test runs


def test_user_subclass_draws_registered_class(pair_registered: Any) -> None:
    assert registered_subclasses() == {"PairTensor": pair_registered}

    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(recipes(kinds=["user_subclass"]))
    def run(recipe: Any) -> None:
        assert f"from {__name__} import PairTensor" in src(recipe)

        def check(ts: Any, r: Any) -> None:
            (t,) = ts
            assert _contains_type(t, PairTensor)
        built(recipe, check)
        # The printed source rebuilds it.
        assert hs.deep_summaries_from_source(recipe) == hs.deep_summaries_from_build(recipe)

    run()


def test_registered_class_wraps_in_other_subclass_kinds(pair_registered: Any) -> None:
    recipe = find(recipes(kinds=["subclass_view"]), lambda r: "PairTensor(" in src(r),
                  settings=settings(max_examples=300, database=None, deadline=None))
    with recipe.active_contexts() as ns:
        (t,) = recipe.build_in(ns)
    assert _contains_type(t, PairTensor)


def test_registration_is_undoable() -> None:
    with register_subclass(PairTensor, "{cls}({0}, {1})", name="pair") as handle:
        assert registered_subclasses() == {"pair": handle}
        recipes(kinds=["user_subclass"])
    assert not registered_subclasses()
    register_subclass(PairTensor, "{cls}({0}, {1})")
    unregister_subclass(PairTensor)
    assert not registered_subclasses()
    register_subclass(PairTensor, "{cls}({0}, {1})", name="by name")
    unregister_subclass("by name")
    assert not registered_subclasses()


def test_register_subclass_is_exported() -> None:
    import pytest_metafidelity

    assert pytest_metafidelity.register_subclass is register_subclass
    assert pytest_metafidelity.unregister_subclass is unregister_subclass


def _local_subclass() -> type:
    class Local(PairTensor):
        pass

    return Local


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((3,), {}, r"cls=3 is not a traceable wrapper subclass"),
        ((torch.Tensor,), {}, r"is not a traceable wrapper subclass"),
        ((NotTraceable,), {}, r"NotTraceable.*is not a traceable wrapper subclass"),
        ((_local_subclass(),), {"make": "{cls}({0}, {1})"}, r"is not importable.*<locals>"),
        ((PairTensor, "{cls}({x})"), {}, r"placeholder \{x\}"),
        ((PairTensor, "{cls}()"), {}, r"uses no inner tensor"),
        ((PairTensor, "{cls}({1}, {1})"), {}, r"without gaps, got \[1\]"),
        ((PairTensor, "{cls}({}, {})"), {}, r"placeholder \{\}"),
        ((PairTensor, "{cls}({0}, {1}) +"), {}, r"is not a Python expression"),
        ((PairTensor, "{cls}({0})"), {}, r"failed to build a PairTensor.*TypeError"),
        ((PairTensor, "torch.zeros_like({0}) + 0 * {1}"), {}, r"built a Tensor, not a PairTensor"),
        ((PairTensor, 42), {}, r"make=42 must be source text"),
        ((PairTensor, "{cls}({0}, {1})"), {"name": ""}, r"name='' must be a non-empty str"),
        ((PairTensor, "{cls}({0}, {1})"), {"name": "TwoTensor"}, r"name='TwoTensor' is already registered"),
    ],
)
def test_register_subclass_rejects_bad_arguments(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        register_subclass(*args, **kwargs)
    assert not registered_subclasses()


def test_register_subclass_rejects_duplicate_name(pair_registered: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"name='PairTensor' is already registered"):
        register_subclass(PairTensor, "{cls}({0}, {1})")


def test_unregister_unknown_subclass() -> None:
    with pytest.raises(InvalidArgument, match=r"PairTensor.*is not registered"):
        unregister_subclass(PairTensor)


@few
@given(recipes(kinds=["nested_strided"]))
def test_nested_strided(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        # The strided layout's NestedTensorImpl: no Python subclass, no sizes.
        assert t.is_nested and t.layout == torch.strided and type(t) is torch.Tensor
        with pytest.raises(RuntimeError, match="doesn't support sizes"):
            t.size()
    built(recipe, check)


@few
@given(recipes(kinds=["zero_tensor"]))
def test_zero_tensor(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        # The ZeroTensor key, on the leaf and on every view of it: reads give
        # zeros, writes are refused.
        assert t._is_zerotensor() and "ZeroTensor" in str(torch._C._dispatch_keys(t))
        assert t.layout == torch.strided and type(t) is torch.Tensor
        if t.device.type == "cpu" and t.numel() and t.dtype in (torch.float32, torch.int64,
                                                                torch.bool, torch.complex64):
            assert not t.clone().any()
        with pytest.raises(RuntimeError, match="ZeroTensors are immutable"):
            t.detach().zero_()
    built(recipe, check)


def test_zero_tensor_draws_each_case() -> None:
    # (find raises NoSuchExample when a case is never drawn)
    for pattern in (r"t\d+ = t\d+[.\[]", r"\.conj\(\)", r"\.requires_grad_\(\)"):
        found = find(recipes(kinds=["zero_tensor"]),
                     lambda r, p=pattern: re.search(p, "\n".join(r.lines)) is not None,
                     settings=settings(max_examples=500, database=None))
        assert "_efficientzerotensor" in "\n".join(found.lines)


@few
@given(recipes(kinds=["foreign_memory"]))
def test_foreign_memory(recipe: Any) -> None:
    def check(ts: Any, r: Any) -> None:
        (t,) = ts
        storage = t.untyped_storage()
        source = "\n".join(r.lines)
        if "frombuffer" in source or "from_dlpack" in source:
            assert not storage.resizable()  # memory torch did not allocate
        elif "share_memory_" in source:
            assert storage.is_shared() and storage.resizable()
        else:  # a device other than cpu drawn: a dense tensor
            assert t.device.type != "cpu"
    built(recipe, check)


def test_foreign_memory_draws_each_case() -> None:
    for pattern in (r"torch\.frombuffer\(bytearray\(\d+\), dtype=[\w.]+\)$",
                    r"torch\.frombuffer\(.*\)\n.*\.view\(", r"torch\.from_dlpack\(",
                    r"\.share_memory_\(\)"):
        find(recipes(kinds=["foreign_memory"]),
             lambda r, p=pattern: re.search(p, "\n".join(r.lines), re.M) is not None,
             settings=settings(max_examples=500, database=None))
