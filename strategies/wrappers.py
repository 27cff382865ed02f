"""Wrapper tensors of functionalization and functorch: C++ functional tensors
(``torch._to_functional_tensor``), ``FunctionalTensor`` under
``FunctionalTensorMode``, functorch ``BatchedTensor`` (nested levels too) and
``GradTrackingTensor`` (inside their level, or kept past it), and functional
tensors of a live ``torch.func.functionalize`` level.

Functorch wrappers are made inside a live level, so those kinds make the
whole recipe run inside ``vmap_increment_nesting``/``grad_increment_nesting``
(``needs_context=True``).  Inside a level, factory functions already return
wrapped tensors; the plain tensor to wrap is therefore built in a
``with torch._C._DisableFuncTorch():`` block and then wrapped explicitly, level
by level, with ``_add_batch_dim``/``_wrap_for_grad``.  Levels are numbered from
``torch._C._functorch.current_level()``, the innermost one.

A wrapper can outlive its level: a ``torch.func.grad`` or ``vmap``
function's input or intermediate kept past its return
(``functorch_escaped``, no context needed).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from hypothesis import assume, event
from hypothesis import strategies as st

from .autograd import COMPUTE_LAYOUTS
from .config import GenConfig, _convertible
from .dense import LAYOUTS, draw_dense, grad_capable
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain


def _torch() -> Any:
    import torch

    return torch


def _missing(*paths: str) -> str | None:
    """None when every dotted ``torch...`` attribute exists, else which is missing."""
    import importlib

    for path in paths:
        module, _, attr = path.rpartition(".")
        try:
            if not hasattr(importlib.import_module(module), attr):
                return f"this torch has no {path}"
        except ImportError as e:
            return f"cannot import {module}: {e}"
    return None


# -- C++ functional tensors ----------------------------------------------------

def _functional_unavailable() -> str | None:
    return _missing("torch._to_functional_tensor", "torch._is_functional_tensor",
                    "torch._from_functional_tensor", "torch._sync")


FUNCTIONAL_CASES = ("plain", "of_view", "requires_grad", "mutated", "pending_view_mutation",
                    "mutated_under_no_grad", "metadata_mutated", "storage_changed")


# Why `behaviour` programs do not run on this module's kinds (their @kind declarations).
PROGRAMS_NOT_RUN_FUNCTIONAL_VIEW = (
    "every converter refuses views of C++ functional tensors by design "
    "(functional-view-refused): no converted tensor to run a program on"
)
PROGRAMS_NOT_RUN_UNDER_THE_MODE = (
    "the check makes the real side's copies by writing the given tensors' bytes into rebuilt "
    "ones, and a FunctionalTensor's storage refuses it ('Attempted to call copy_() on an "
    "invalid python storage'): not supported yet")


@kind("functional", "C++ functional tensor (torch._to_functional_tensor) of a dense tensor or view; "
      "mutated (its data, also under no_grad; its metadata; its storage), with pending view "
      "updates, or mirroring requires_grad",
      unavailable=_functional_unavailable, programs=True, cost_ms=6)
def functional_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    torch = _torch()
    case = draw(st.sampled_from(FUNCTIONAL_CASES))
    if case == "requires_grad" and not hasattr(torch, "_mirror_autograd_meta_to"):
        case = "plain"
    event(f"functional: {case}")
    # (what functionalization records of a mutation: of the data, under
    # no_grad, of the metadata, of the storage)
    computes = case in ("mutated", "pending_view_mutation", "mutated_under_no_grad",
                        "metadata_mutated")
    layouts = COMPUTE_LAYOUTS if computes else LAYOUTS
    if case == "requires_grad":
        x = draw_dense(draw, b, cfg, dtype=draw(cfg.dtypes.filter(grad_capable)), layouts=layouts,
                       allow_grad=False)
        b.stmt(f"{x}.requires_grad_()")
    else:
        # Mutations need a dtype with kernels (not a shell dtype like uint3).
        dtype = draw(cfg.dtypes.filter(_convertible)) if computes else None
        x = draw_dense(draw, b, cfg, dtype=dtype, layouts=layouts, allow_grad=False)
    if case == "of_view":
        x = draw_view_chain(draw, b, x)
    f = b.let(f"torch._to_functional_tensor({x})")
    if case == "requires_grad":
        b.stmt(f"torch._mirror_autograd_meta_to({x}, {f})")
    elif case == "mutated":
        if not b.try_stmt(f"{f}.mul_(2)"):
            b.stmt(f"{f}.zero_()")
    elif case == "mutated_under_no_grad":
        if not b.try_stmt(f"with torch.no_grad():\n    {f}.mul_(2)"):
            b.stmt(f"with torch.no_grad():\n    {f}.zero_()")
    elif case == "metadata_mutated":
        if not (b[f].dim() == 2 and b.try_stmt(f"{f}.t_()")):
            b.stmt(f"{f}.resize_({draw(st.integers(0, 6))})")
    elif case == "storage_changed":
        source = draw_dense(draw, b, cfg, dtype=b[f].dtype, layouts=LAYOUTS, allow_grad=False)
        b.stmt(f"{f}.set_(torch._to_functional_tensor({source}))")
    elif case == "pending_view_mutation":
        # The base has an update queued by a mutation of its view; the
        # converter syncs it (a side effect on the real tensor).
        v = b.try_let(f"{f}[1:]") if b[f].dim() else None
        v = v or b.let(f"{f}[...]")
        b.stmt(f"{v}.zero_()")
    return [f]


@kind("functional_view", "view of a C++ functional tensor (the converter refuses these by design)",
      unavailable=_functional_unavailable, programs=PROGRAMS_NOT_RUN_FUNCTIONAL_VIEW, cost_ms=3)
def functional_view_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    x = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"), allow_grad=False)
    f = b.let(f"torch._to_functional_tensor({x})")
    t = b[f]
    if t.dim():
        dim = draw(st.integers(0, t.dim() - 1))
        n = t.shape[dim]
        start = draw(st.integers(0, n))
        v = b.try_let(f"{f}.narrow({dim}, {start}, {draw(st.integers(0, n - start))})")
    else:
        v = b.try_let(f"{f}.view(1)")
    v = v or b.try_let(f"{f}[...]")
    assume(v is not None)  # shell dtypes (uint3, ...) cannot replay views
    return [v]  # type: ignore[list-item]


# -- FunctionalTensor under FunctionalTensorMode ------------------------------

FT_MODULE = "import torch._subclasses.functional_tensor"
FT_MODE = "torch._subclasses.functional_tensor.FunctionalTensorMode()"
FT_CASES = ("to_functional", "factory", "view", "mutated", "requires_grad", "nonleaf")


def _ft_unavailable() -> str | None:
    return _missing("torch._subclasses.functional_tensor.FunctionalTensorMode",
                    "torch._subclasses.functional_tensor.FunctionalTensor",
                    "torch.utils._python_dispatch._disable_current_modes")


@kind("functional_tensor_mode", "FunctionalTensor under a live FunctionalTensorMode: wrapped, made by a "
      "factory, viewed, mutated, requiring grad",
      unavailable=_ft_unavailable, needs_context=True, programs=PROGRAMS_NOT_RUN_UNDER_THE_MODE,
      cost_ms=7)
def functional_tensor_mode_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(FT_CASES))
    event(f"functional_tensor_mode: {case}")
    b.need(FT_MODULE)
    b.need("import torch.utils._python_dispatch")
    b.within(FT_MODE)
    grad = case in ("requires_grad", "nonleaf")
    # Functionalization copies through kernels that shell dtypes (uint3, ...) lack.
    dtype = draw(cfg.dtypes.filter(grad_capable if grad else _convertible))
    if case == "factory":
        # Made under the mode: already a FunctionalTensor.
        return [draw_dense(draw, b, cfg, dtype=dtype, layouts=("contiguous", "channels_last"),
                           allow_grad=False)]
    layouts = COMPUTE_LAYOUTS if case in ("mutated", "nonleaf") else LAYOUTS
    plain = b.block(
        "torch.utils._python_dispatch._disable_current_modes()",
        lambda sub: draw_dense(draw, sub, cfg, dtype=dtype, layouts=layouts, allow_grad=False),
    )
    ft = b.let(f"torch._subclasses.functional_tensor.FunctionalTensor.to_functional({plain})")
    if grad:
        b.stmt(f"{ft}.requires_grad_()")
    if case == "view":
        v = draw_view_chain(draw, b, ft)
        return [v if v != ft else b.let(f"{ft}[...]")]
    if case == "mutated":
        if not b.try_stmt(f"{ft}.mul_(2)"):
            b.stmt(f"{ft}.zero_()")
    if case == "nonleaf":
        made = b.try_let(f"{ft} * 2") or b.try_let(f"{ft}.clone()")
        assume(made is not None)
        return [made]  # type: ignore[list-item]
    return [ft]


# -- functorch: BatchedTensor, GradTrackingTensor -----------------------------

VMAP_MODULE = "import torch._functorch.vmap"
GRAD_MODULE = "import torch._functorch.eager_transforms"


def _vmap_level(batch_size: int) -> str:
    return f"torch._functorch.vmap.vmap_increment_nesting({batch_size}, 'error')"


GRAD_LEVEL = "torch._functorch.eager_transforms.grad_increment_nesting()"


def _functorch_unavailable() -> str | None:
    return _missing(
        "torch._functorch.vmap.vmap_increment_nesting",
        "torch._functorch.eager_transforms.grad_increment_nesting",
        "torch._functorch.eager_transforms.enable_inplace_requires_grad",
        "torch._C._functorch._add_batch_dim",
        "torch._C._functorch._wrap_for_grad",
        "torch._C._functorch.current_level",
        "torch._C._functorch.is_batchedtensor",
        "torch._C._functorch.is_gradtrackingtensor",
        "torch._C._DisableFuncTorch",
    )


def _draw_functorch(draw: Any, b: RecipeBuilder, cfg: GenConfig, top: str) -> str:
    """Wrap a plain tensor in one functorch wrapper per level, outermost level
    first; the innermost level (``top``: "vmap" or "grad") wraps last."""
    levels = [*draw(st.lists(st.sampled_from(["vmap", "grad"]), max_size=2)), top]
    event(f"functorch levels: {' > '.join(levels)}")
    n_vmap = levels.count("vmap")
    shape = list(draw(cfg.shapes))
    while len(shape) < n_vmap:  # every vmap level consumes one dimension
        shape.insert(0, draw(st.integers(1, 3)))
        event("functorch: dimension added for a batch dimension")
    logical = list(shape)
    bdims: list[int | None] = []
    contexts = []
    for level in levels:
        if level == "vmap":
            bdim = draw(st.integers(0, len(logical) - 1))
            contexts.append(_vmap_level(logical.pop(bdim)))
            bdims.append(bdim)
        else:
            contexts.append(GRAD_LEVEL)
            bdims.append(None)
    b.need(VMAP_MODULE)
    b.need(GRAD_MODULE)
    for ctx in contexts:
        b.within(ctx, repeat=True)

    wants_grad = top == "grad" and draw(st.booleans())
    dtype = draw(cfg.dtypes.filter(grad_capable)) if wants_grad else None
    layouts = COMPUTE_LAYOUTS if top == "grad" else LAYOUTS
    t = b.block(
        "torch._C._DisableFuncTorch()",
        lambda sub: draw_dense(draw, sub, cfg, dtype=dtype, shape=tuple(shape), layouts=layouts,
                               allow_grad=False),
    )
    if grad_capable(b[t].dtype) and draw(cfg.requires_grad):
        # The plain tensor requires grad (autograd outside every level).
        b.stmt(
            "with torch._functorch.eager_transforms.enable_inplace_requires_grad(True):\n"
            f"    {t}.requires_grad_()"
        )
        event("functorch: unwrapped tensor requires grad")
    innermost = b.let("torch._C._functorch.current_level()", prefix="level")
    for i, (level, bdim) in enumerate(zip(levels, bdims)):
        number = innermost if i == len(levels) - 1 else f"{innermost} - {len(levels) - 1 - i}"
        if level == "vmap":
            t = b.let(f"torch._C._functorch._add_batch_dim({t}, {bdim}, {number})")
        else:
            t = b.let(f"torch._C._functorch._wrap_for_grad({t}, {number})")
    if wants_grad:
        # What torch.func.grad does to its inputs.
        b.stmt(
            "with torch._functorch.eager_transforms.enable_inplace_requires_grad(True):\n"
            f"    {t}.requires_grad_()"
        )
        event("functorch_grad: wrapper requires grad")
    return t


def _top_case(draw: Any, b: RecipeBuilder, t: str, prefix: str, cases: tuple[str, ...]) -> str:
    case = draw(st.sampled_from(cases))
    event(f"{prefix}: {case}")
    if case == "view":
        # The converter refuses views of functorch wrappers (graph break).
        v = b.try_let(f"{t}[...]")
        return v or t
    if case == "nonleaf":
        made = b.try_let(f"{t} * 2") or b.try_let(f"{t}.clone()")
        return made or t
    return t


@kind("functorch_batched", "functorch BatchedTensor inside live vmap levels (nested vmap/grad levels too)",
      unavailable=_functorch_unavailable,
      needs_context=True, programs=True, cost_ms=5)
def functorch_batched_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    t = _draw_functorch(draw, b, cfg, "vmap")
    return [_top_case(draw, b, t, "functorch_batched", ("wrapped", "view"))]


@kind("functorch_grad", "functorch GradTrackingTensor inside a live grad level (under vmap/grad levels "
      "too): leaf, requiring grad, non-leaf, view",
      unavailable=_functorch_unavailable, needs_context=True, programs=True,
      cost_ms=5)
def functorch_grad_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    t = _draw_functorch(draw, b, cfg, "grad")
    return [_top_case(draw, b, t, "functorch_grad", ("wrapped", "nonleaf", "view"))]


# -- functorch wrappers that escaped their transform ---------------------------

ESCAPED_CASES = ("grad input", "grad intermediate", "vmap input", "vmap intermediate")



def _escaped_unavailable() -> str | None:
    return _missing("torch.func.grad", "torch.func.vmap", "torch._C._functorch.maybe_get_level")


@kind("functorch_escaped", "functorch wrapper that escaped its transform: a torch.func.grad or "
      "vmap function's input or intermediate kept past its return (a GradTrackingTensor at the "
      "dead level -2, leaf or non-leaf; a BatchedTensor of a level that ended)",
      unavailable=_escaped_unavailable, programs=True, cost_ms=3)
def functorch_escaped_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    """What ``torch.compile`` is handed when a user keeps a tensor from inside
    ``torch.func.grad``/``vmap`` (appended to a list, stored on a module) and
    passes it on: MetaConverter has a case of its own for a GradTrackingTensor
    whose level is gone."""
    case = draw(st.sampled_from(ESCAPED_CASES))
    event(f"functorch_escaped: {case}")
    transform, which = case.split()
    shape = tuple(draw(cfg.shapes))
    if transform == "vmap" and not (shape and shape[0]):
        # vmap maps over the first dimension, which must have elements
        shape = (draw(st.integers(1, 3)), *shape[1:])
        event("functorch_escaped: batch dimension of elements")
    # grad needs a real floating scalar to differentiate
    dtype = draw(cfg.dtypes.filter(lambda d: d.is_floating_point and grad_capable(d))) if (
        transform == "grad") else None
    t = draw_dense(draw, b, cfg, dtype=dtype, shape=shape, layouts=COMPUTE_LAYOUTS,
                   allow_grad=False)
    kept = b.let("[]", prefix="kept")
    returned = "x.sum()" if transform == "grad" else "x"
    call = f"torch.func.{transform}(lambda x: ({kept}.append({{}}), {returned})[1])({t})"
    # (an intermediate torch has no kernel for, as x * 2 of a float8: the input instead)
    if which == "input" or b.try_let(call.format("x * 2"), prefix="out") is None:
        b.let(call.format("x"), prefix="out")
    return [b.let(f"{kept}[0]", prefix="escaped")]


# -- functional tensors of a torch.func.functionalize level --------------------

FUNCTIONALIZE_MODULE = "import pytest_metafidelity.strategies.wrappers"
FUNCTORCH_FUNCTIONAL_CASES = ("wrapped", "view", "mutated", "nonleaf")


@contextlib.contextmanager
def functionalize_level(reapply_views: bool) -> Iterator[int]:
    """The functorch level ``torch.func.functionalize`` enters while its
    function runs (there, functional wrappers are functorch wrappers: the
    converter reads them through ``_unwrap_functional_tensor``, at the
    current level)."""
    from torch._functorch import eager_transforms

    level = eager_transforms._func_increment_nesting(reapply_views)
    try:
        yield level
    finally:
        eager_transforms._func_decrement_nesting()


def _functionalize_unavailable() -> str | None:
    return _missing("torch._functorch.eager_transforms._func_increment_nesting",
                    "torch._functorch.eager_transforms._func_decrement_nesting",
                    "torch._C._functorch._wrap_functional_tensor",
                    "torch._C._functorch.current_level",
                    "torch._C._DisableFuncTorch")


@kind("functorch_functional", "functional tensor of a live torch.func.functionalize level (views "
      "reapplied or not): wrapped, viewed, mutated, non-leaf",
      unavailable=_functionalize_unavailable, needs_context=True,
      programs=True, cost_ms=5)
def functorch_functional_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(FUNCTORCH_FUNCTIONAL_CASES))
    reapply_views = draw(st.booleans())
    event(f"functorch_functional: {case}, reapply_views={reapply_views}")
    b.need(FUNCTIONALIZE_MODULE)
    b.within(f"pytest_metafidelity.strategies.wrappers.functionalize_level({reapply_views})")
    computes = case in ("mutated", "nonleaf")
    # Functionalization copies through kernels that shell dtypes (uint3, ...)
    # lack, views too.
    dtype = draw(cfg.dtypes.filter(_convertible)) if case != "wrapped" else None
    plain = b.block(
        "torch._C._DisableFuncTorch()",
        lambda sub: draw_dense(draw, sub, cfg, dtype=dtype,
                               layouts=LAYOUTS if case == "wrapped" else COMPUTE_LAYOUTS,
                               allow_grad=False),
    )
    t = b.let(f"torch._C._functorch._wrap_functional_tensor({plain}, "
              "torch._C._functorch.current_level())")
    if case == "view":
        v = draw_view_chain(draw, b, t)
        if v == t:
            made = b.try_let(f"{t}[...]")
            assume(made is not None)
            v = made  # type: ignore[assignment]
        return [v]
    if case == "mutated":
        if not b.try_stmt(f"{t}.mul_(2)"):
            b.stmt(f"{t}.zero_()")
    if case == "nonleaf":
        made = b.try_let(f"{t} * 2") or b.try_let(f"{t}.clone()")
        assume(made is not None)
        return [made]  # type: ignore[list-item]
    return [t]
