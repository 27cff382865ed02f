"""Autograd state: leaves that require grad, non-leaves, views made under
``no_grad`` or of leaves that require grad, bases and views that differ in
``requires_grad``, attached ``.grad`` (contiguous, non-contiguous, aliasing
another tensor, of another dtype through ``grad_dtype``), ``nn.Parameter`` and
its views, ``retain_grad()``, and inference-mode tensors.

The converter rebuilds autograd metadata (``requires_grad``, ``is_leaf``,
``grad``, view ``creation_meta``, inference bits) rather than copying it, so
each sub-case below is a separate branch of ``MetaConverter.meta_tensor``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, dense_expr
from .dense import LAYOUTS, draw_dense, grad_capable
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

# Layouts whose storage holds every element, so ops may read them (a storage
# resized to zero bytes must only be looked at, never computed on).
COMPUTE_LAYOUTS = ("contiguous", "strided", "channels_last", "oversized_storage")


def _torch() -> Any:
    import torch

    return torch


def grad_dtypes(cfg: GenConfig) -> Any:
    """The configured dtypes that can require grad."""
    return cfg.dtypes.filter(grad_capable)


def backward_ok(dtype: Any) -> bool:
    """Dtypes whose CPU kernels run the small backward passes used here."""
    torch = _torch()
    return dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128)


def has_grad_dtype() -> bool:
    """``Tensor.grad_dtype`` (settable) exists in this torch."""
    return hasattr(_torch().Tensor, "grad_dtype")


def other_grad_dtype(dtype: Any) -> Any:
    """A grad-capable dtype different from ``dtype`` (same real/complex kind)."""
    torch = _torch()
    if dtype.is_complex:
        return torch.complex128 if dtype != torch.complex128 else torch.complex64
    return torch.float64 if dtype != torch.float64 else torch.float32


def draw_leaf(
    draw: Any, b: RecipeBuilder, cfg: GenConfig, *, requires_grad: bool | None = True,
    layouts: tuple[str, ...] = COMPUTE_LAYOUTS, dtype: Any = None,
) -> str:
    """A dense leaf of a grad-capable dtype; ``requires_grad`` None draws it."""
    dtype = draw(grad_dtypes(cfg)) if dtype is None else dtype
    x = draw_dense(draw, b, cfg, dtype=dtype, layouts=layouts, allow_grad=False)
    if requires_grad is None:
        requires_grad = draw(cfg.requires_grad)
    if requires_grad:
        b.stmt(f"{x}.requires_grad_()")
    return x


def draw_op(draw: Any, b: RecipeBuilder, x: str) -> str:
    """A non-view op on ``x`` (an autograd node when ``x`` requires grad)."""
    t = b[x]
    ops = ["{x} * 2", "{x} + 1", "{x}.clone()", "{x}.clone(memory_format=torch.contiguous_format)",
           "{x}.to({other})", "{x}.flip(0)", "{x}.sum(0)", "{x}.sin()"]
    op = draw(st.sampled_from(ops))
    if t.dim() == 0 and ("flip" in op or "sum" in op):
        op = ops[0]
    made = b.try_let(op.format(x=x, other=other_grad_dtype(t.dtype)))
    if made is None:  # this dtype lacks the kernel: clone exists for all
        op = "{x}.clone()"
        made = b.try_let(op.format(x=x))
    assume(made is not None)
    event(f"op: {op.format(x='x', other='other')}")
    return made  # type: ignore[return-value]


def _view_of(draw: Any, b: RecipeBuilder, base: str) -> str:
    view = draw_view_chain(draw, b, base)
    if view == base or not b[view]._is_view():
        # Nothing applied, or reshape had to copy: take a plain alias view.
        view = b.let(f"{base}[...]")
    return view


@kind("autograd_leaf", "leaf that requires grad (any layout of a grad-capable dtype), or a detached leaf",
      cost_ms=8)
def autograd_leaf_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    how = draw(st.sampled_from(["requires_grad_", "detached_from_graph"]))
    event(f"autograd_leaf: {how}")
    if how == "requires_grad_":
        return [draw_leaf(draw, b, cfg, layouts=LAYOUTS)]
    # A leaf sharing storage with a node of a graph.
    x = draw_leaf(draw, b, cfg)
    y = draw_op(draw, b, x)
    return [b.let(f"{y}.detach().requires_grad_()")]


@kind("autograd_nonleaf", "non-leaf (result of an op on a leaf requiring grad), with retain_grad()",
      cost_ms=15)
def autograd_nonleaf_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    x = draw_leaf(draw, b, cfg)
    y = draw_op(draw, b, x)
    retain = draw(st.sampled_from(["none", "retain_grad", "retain_grad_backward"]))
    if retain == "retain_grad_backward" and not backward_ok(b[y].dtype):
        retain = "retain_grad"
    if retain != "none":
        b.stmt(f"{y}.retain_grad()")
    if retain == "retain_grad_backward":
        # A non-leaf whose .grad is populated.
        b.stmt(f"{y}.backward(torch.ones_like({y}))")
    event(f"autograd_nonleaf: {retain}")
    return [y]


VIEW_CASES = (
    "view_of_leaf_requiring_grad",
    "no_grad_view",
    "no_grad_view_then_requires_grad",
    "view_of_view_requiring_grad",
    "view_of_nonleaf",
    "inplace_on_view",
    "base_modified_after_view",
    "custom_function_view",
)


@kind("autograd_view", "views of leaves requiring grad, no_grad views, base/view differing in "
      "requires_grad, views a custom autograd.Function returns",
      cost_ms=12)
def autograd_view_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(VIEW_CASES))
    event(f"autograd_view: {case}")
    if case == "view_of_leaf_requiring_grad":
        x = draw_leaf(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
        return [_view_of(draw, b, x)]
    if case in ("no_grad_view", "no_grad_view_then_requires_grad"):
        # A leaf view: made where autograd does not record it.
        x = draw_leaf(draw, b, cfg, requires_grad=None, layouts=("contiguous", "strided", "channels_last"))
        v = b.block("torch.no_grad()", lambda sub: _view_of(draw, sub, x))
        if case == "no_grad_view_then_requires_grad" and not b.try_stmt(f"{v}.requires_grad_()"):
            event("autograd_view: requires_grad_ on the no_grad view refused")
        return [v]
    if case == "view_of_view_requiring_grad":
        # The base does not require grad, the first view (a leaf) does, so the
        # final view is a non-leaf whose _base does not require grad.
        x = draw_leaf(draw, b, cfg, requires_grad=False, layouts=("contiguous", "strided", "channels_last"))
        y = b.let(f"{x}.view_as({x})") if b[x].is_contiguous() else b.let(f"{x}[...]")
        b.stmt(f"{y}.requires_grad_()")
        return [_view_of(draw, b, y)]
    if case == "custom_function_view":
        # The output of a custom autograd.Function that is a view of its
        # input (CreationMeta.IN_CUSTOM_FUNCTION), of a leaf or of a view.
        x = draw_leaf(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
        if draw(st.booleans()):
            x = _view_of(draw, b, x)
        b.need("from pytest_metafidelity.strategies.example_functions import ViewOfInput")
        return [b.let(f"ViewOfInput.apply({x})")]
    x = draw_leaf(draw, b, cfg)
    y = draw_op(draw, b, x)
    v = _view_of(draw, b, y)
    if case == "inplace_on_view":
        if not b.try_stmt(f"{v}.mul_(2)"):
            event("autograd_view: in-place op refused (internal overlap)")
    elif case == "base_modified_after_view":
        torch = _torch()
        if b[v]._is_view() and (torch._C._autograd._get_creation_meta(b[v])
                                == torch._C._autograd.CreationMeta.MULTI_OUTPUT_NODE):
            # Such a view errors on any later autograd use: nothing to convert.
            event("autograd_view: multi-output view, base left unmodified")
        elif not b.try_stmt(f"{y}.add_(1)"):
            event("autograd_view: in-place op on base refused")
    return [v]


GRAD_CASES = ("contiguous", "noncontiguous", "backward", "view_of_other", "grad_dtype", "grad_dtype_none")


@kind("grad_attached", ".grad attached: contiguous, non-contiguous, by backward, a view, another grad_dtype",
      cost_ms=9)
def grad_attached_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(GRAD_CASES))
    if case.startswith("grad_dtype") and not has_grad_dtype():
        case = "contiguous"
    event(f"grad_attached: {case}")
    dtype = draw(grad_dtypes(cfg))
    if case == "backward" and not backward_ok(dtype):
        case = "contiguous"
    needs_grad = case in ("backward", "grad_dtype", "grad_dtype_none")
    x = draw_leaf(draw, b, cfg, dtype=dtype, requires_grad=True if needs_grad else None,
                  layouts=COMPUTE_LAYOUTS if case == "backward" else LAYOUTS)
    t = b[x]
    shape, device = tuple(t.shape), str(t.device)
    if case == "contiguous":
        b.stmt(f"{x}.grad = {dense_expr(shape, dtype, device)}")
    elif case == "noncontiguous":
        g = draw_dense(draw, b, cfg, dtype=dtype, shape=shape, layouts=("strided", "channels_last"),
                       allow_grad=False)
        if not b.try_stmt(f"{x}.grad = {g}"):
            b.stmt(f"{x}.grad = {dense_expr(shape, dtype, device)}")
            event("grad_attached: non-contiguous grad refused")
    elif case == "backward":
        b.stmt(f"{x}.backward(torch.ones_like({x}))")
    elif case == "view_of_other":
        big = b.let(dense_expr((2, *shape), dtype, device))
        b.stmt(f"{x}.grad = {big}[{draw(st.integers(0, 1))}]")
    else:
        other = other_grad_dtype(dtype) if case == "grad_dtype" else None
        b.stmt(f"{x}.grad_dtype = {other}")
        if draw(st.booleans()):
            # None lets any dtype in: pick one other than x's own.
            gd = other if other is not None else other_grad_dtype(dtype)
            b.stmt(f"{x}.grad = {dense_expr(shape, gd, device)}")
            event(f"grad_attached: {case} with a grad of dtype {str(gd).removeprefix('torch.')}")
    return [x]


@kind("grad_alias", ".grad aliasing another tensor: another output, a view of one, shared, or itself",
      family=True, cost_ms=16)
def grad_alias_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(["grad_is_other", "grad_view_of_other", "shared_grad", "grad_aliases_self"]))
    event(f"grad_alias: {case}")
    x = draw_leaf(draw, b, cfg, requires_grad=None,
                  layouts=("contiguous", "strided", "channels_last", "oversized_storage"))
    t = b[x]
    shape, dtype, device = tuple(t.shape), t.dtype, str(t.device)
    if case == "grad_is_other":
        y = draw_dense(draw, b, cfg, dtype=dtype, shape=shape, layouts=("contiguous", "strided"),
                       allow_grad=False, device=device)  # a grad is on its tensor's device
        b.stmt(f"{x}.grad = {y}")
        return [x, y]
    if case == "grad_view_of_other":
        y = b.let(dense_expr((2, *shape), dtype, device))
        b.stmt(f"{x}.grad = {y}[{draw(st.integers(0, 1))}]")
        return [x, y]
    if case == "shared_grad":
        x2 = draw_leaf(draw, b, cfg, dtype=dtype, requires_grad=None, layouts=("contiguous",))
        if tuple(b[x2].shape) != shape or str(b[x2].device) != device:  # g fits both
            x2 = b.let(f"{dense_expr(shape, dtype, device)}.requires_grad_({bool(b[x2].requires_grad)})")
        g = b.let(dense_expr(shape, dtype, device))
        b.stmt(f"{x}.grad = {g}")
        b.stmt(f"{x2}.grad = {g}")
        return [x, x2]
    g = b.let(f"{x}.detach()")
    b.stmt(f"{x}.grad = {g}")
    return [x, g]


PARAMETER_CASES = ("parameter", "parameter_no_grad", "view_of_parameter", "parameter_with_grad",
                   "parameter_of_view", "buffer")


@kind("parameter", "nn.Parameter (requiring grad or not, with .grad, of a view), its views, "
      "nn.Buffer (persistent or not, or marked by hand)",
      cost_ms=7)
def parameter_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    torch = _torch()
    case = draw(st.sampled_from(PARAMETER_CASES))
    if case == "buffer" and not hasattr(torch.nn, "Buffer"):
        case = "parameter"
    event(f"parameter: {case}")
    if case in ("parameter_no_grad", "buffer"):
        # Any dtype: nothing here requires grad.
        x = draw_dense(draw, b, cfg, allow_grad=False)
        if case == "buffer":
            # nn.Buffer marks the tensor (_is_buffer, persistent); code that
            # marks one by hand may leave persistent out.
            mark = draw(st.sampled_from(["persistent", "not_persistent", "marked_by_hand"]))
            event(f"parameter: buffer, {mark}")
            if mark == "marked_by_hand":
                b.stmt(f"{x}._is_buffer = True")
                return [x]
            persistent = ", persistent=False" if mark == "not_persistent" else ""
            return [b.let(f"torch.nn.Buffer({x}{persistent})")]
        return [b.let(f"torch.nn.Parameter({x}, requires_grad=False)")]
    x = draw_leaf(draw, b, cfg, requires_grad=False, layouts=LAYOUTS)
    if case == "parameter_of_view":
        x = _view_of(draw, b, x)
    p = b.let(f"torch.nn.Parameter({x})")
    if case == "view_of_parameter":
        return [_view_of(draw, b, p)]
    if case == "parameter_with_grad":
        t = b[p]
        b.stmt(f"{p}.grad = {dense_expr(tuple(t.shape), t.dtype, str(t.device))}")
    return [p]


INFERENCE_CASES = ("inference_tensor", "inference_view", "normal_view_in_inference_mode",
                   "inference_mode_disabled_inside")


@kind("inference", "inference-mode tensors and their views; views of normal tensors made in inference mode",
      cost_ms=6)
def inference_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(INFERENCE_CASES))
    event(f"inference: {case}")
    if case == "inference_tensor":
        return [b.block("torch.inference_mode()",
                           lambda sub: draw_dense(draw, sub, cfg, allow_grad=False))]
    if case == "inference_view":
        def make(sub: RecipeBuilder) -> str:
            x = draw_dense(draw, sub, cfg, allow_grad=False,
                           layouts=("contiguous", "strided", "channels_last"))
            return _view_of(draw, sub, x)
        return [b.block("torch.inference_mode()", make)]
    if case == "normal_view_in_inference_mode":
        x = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
        return [b.block("torch.inference_mode()", lambda sub: _view_of(draw, sub, x))]
    # A normal tensor made by turning inference mode off inside it.
    def inner(sub: RecipeBuilder) -> str:
        return sub.block("torch.inference_mode(False)", lambda sub2: draw_dense(draw, sub2, cfg))
    return [b.block("torch.inference_mode()", inner)]
