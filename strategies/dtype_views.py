"""Views that change the dtype: ``view(dtype)`` to an equal and to a
different element size, ``view_as_real``, ``view_as_complex``, ``.real`` and
``.imag``; of leaves and of views, optionally followed by more views (so the
result's ``_base`` has another dtype than the result).

Note: ``Tensor.view(dtype)`` is not differentiable, and autograd does not
track it as a view: its result shares the storage but ``_is_view()`` is
False.  The other ops here are tracked views.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .config import GenConfig
from .dense import draw_dense
from .dtype_pick import complex_capable_real, draw_dtype_where, is_complex
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

# Simplest first.
DTYPE_OPS = ("view_same_size", "view_other_size", "view_as_real", "real", "imag", "view_as_complex")


def _unavailable() -> str | None:
    import torch

    for name in ("view_as_real", "view_as_complex"):
        if not hasattr(torch, name):
            return f"this torch has no torch.{name}"
    return None


def _size(dtype: Any) -> int:
    return max(dtype.itemsize, 1)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _draw_op(draw: Any, cfg: GenConfig) -> tuple[str, Any, Any]:
    """(op, source dtype, target dtype or None), falling back to ops the
    user's dtypes allow; the last resort is a same-size view(dtype)."""
    op = draw(st.sampled_from(DTYPE_OPS))
    if op in ("view_as_real", "real", "imag"):
        src = draw_dtype_where(draw, cfg, is_complex)
        if src is not None:
            return op, src, None
        event("dtype_view: no complex dtype allowed")
        op = "view_same_size"
    if op == "view_as_complex":
        src = draw_dtype_where(draw, cfg, complex_capable_real)
        if src is not None:
            return op, src, None
        event("dtype_view: no half/float/double dtype allowed")
        op = "view_same_size"
    src = draw(cfg.dtypes)
    same = ("view_same_size", lambda d: _size(d) == _size(src) and d != src)
    other = ("view_other_size", lambda d: _size(d) != _size(src))
    for choice, condition in (same, other) if op == "view_same_size" else (other, same):
        dst = draw_dtype_where(draw, cfg, condition)
        if dst is not None:
            return choice, src, dst
    event("dtype_view: no other dtype allowed, view(dtype) keeps the dtype")
    return "view_same_size", src, src


def _shape_for(op: str, shape: tuple[int, ...], src: Any, dst: Any) -> tuple[int, ...]:
    """Adjust a drawn shape so that ``op`` can apply to a contiguous tensor."""
    if op == "view_as_complex":
        return (*shape[:-1], 2) if shape else (2,)
    if op == "view_other_size" and _size(dst) > _size(src):
        ratio = _size(dst) // _size(src)
        return (*shape[:-1], _round_up(shape[-1], ratio)) if shape else (ratio,)
    if op == "view_other_size" and not shape:
        return (1,)  # a 0-dim tensor cannot change its element size
    return shape


def _expr(op: str, name: str, dst: Any) -> str:
    if op in ("view_same_size", "view_other_size"):
        return f"{name}.view({dst})"
    if op == "view_as_real":
        return f"torch.view_as_real({name})"
    if op == "view_as_complex":
        return f"torch.view_as_complex({name})"
    return f"{name}.{op}"  # real, imag


def _fallback(draw: Any, b: RecipeBuilder, cfg: GenConfig, base: str, src: Any) -> tuple[str, str]:
    if src.is_complex:
        made = b.try_let(f"torch.view_as_real({base})")
        if made is not None:
            return made, "view_as_real"
    for op, condition in (
        ("view_same_size", lambda d: _size(d) == _size(src) and d != src),
        ("view_other_size", lambda d: _size(d) != _size(src)),
    ):
        dst = draw_dtype_where(draw, cfg, condition)
        made = b.try_let(f"{base}.view({dst})") if dst is not None else None
        if made is not None:
            return made, op
    event("dtype_view: no dtype-changing view possible, view(dtype) keeps the dtype")
    return b.let(f"{base}.view({src})"), "view_same_size"


def draw_dtype_view(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> str:
    """Add a tensor that views a source of another dtype; returns its name."""
    op, src, dst = _draw_op(draw, cfg)
    shape = _shape_for(op, draw(cfg.shapes), src, dst)
    # Layouts whose last dimension is contiguous, so the size-changing ops
    # apply; view ops drawn below may still break that, and then the op is
    # applied to the leaf instead.
    layouts: tuple[str, ...] = ("contiguous", "oversized_storage")
    if op not in ("real", "imag"):  # torch refuses .real/.imag without storage
        layouts += ("zero_byte_storage",)
    if op in ("view_as_real", "real", "imag", "view_same_size"):
        layouts += ("strided", "channels_last")
    base = draw_dense(draw, b, cfg, dtype=src, shape=shape, layouts=layouts)
    made = None
    if draw(st.booleans()):  # the dtype view of a view
        source = draw_view_chain(draw, b, base)
        if source != base:
            made = b.try_let(_expr(op, source, dst))
            if made is not None:
                event("dtype_view: of a view")
    if made is None:
        made = b.try_let(_expr(op, base, dst))
    if made is None:  # torch refused: the ops that ask least of the leaf
        event(f"dtype_view: torch refused {op}")
        made, op = _fallback(draw, b, cfg, base, src)
    event(f"dtype_view: {op}")
    if draw(st.booleans()):  # views of the dtype view: their _base differs in dtype
        after = draw_view_chain(draw, b, made)
        if after != made:
            event("dtype_view: views of a dtype view")
            made = after
    return made


@kind(
    "dtype_view",
    "dtype-changing views: view(dtype), view_as_real, view_as_complex, .real, .imag",
    unavailable=_unavailable,
    cost_ms=12,
)
def dtype_view_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_dtype_view(draw, b, cfg)]
