"""Dense strided tensors: every dtype, zero-size dims, arbitrary strides and
storage offsets (overlapping and zero strides too), channels_last, storages
larger than the tensor, and storages resized to zero bytes."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, dense_expr, fill_expr
from .kinds import kind
from .recipe import RecipeBuilder

# Simplest first.
LAYOUTS = ("contiguous", "strided", "channels_last", "oversized_storage", "zero_byte_storage")


def grad_capable(dtype: Any) -> bool:
    return dtype.is_floating_point and dtype.itemsize > 1 or dtype.is_complex


def required_numel(shape: tuple[int, ...], stride: tuple[int, ...], offset: int) -> int:
    """Storage elements a strided tensor reaches (0 for an empty one)."""
    if any(s == 0 for s in shape):
        return offset
    return offset + sum((s - 1) * st_ for s, st_ in zip(shape, stride)) + 1


def draw_dense(
    draw: Any,
    b: RecipeBuilder,
    cfg: GenConfig,
    *,
    dtype: Any = None,
    shape: tuple[int, ...] | None = None,
    layouts: tuple[str, ...] = LAYOUTS,
    allow_grad: bool = True,
    device: str | None = None,
) -> str:
    """Add a dense leaf tensor to ``b``; returns its name."""
    dtype = draw(cfg.dtypes) if dtype is None else dtype
    shape = draw(cfg.shapes) if shape is None else shape
    device = draw(cfg.devices) if device is None else device
    if not cfg.zero_byte_storages:
        layouts = tuple(x for x in layouts if x != "zero_byte_storage") or ("contiguous",)
    layout = draw(st.sampled_from(layouts))
    if layout == "channels_last" and len(shape) not in (4, 5):
        layout = "contiguous"
    itemsize = max(dtype.itemsize, 1)
    numel = math.prod(shape)
    dev = "" if device == "cpu" else f", device={device!r}"
    event(f"dense layout: {layout}")

    if layout == "strided":
        stride = tuple(draw(st.lists(st.integers(0, 6), min_size=len(shape), max_size=len(shape))))
        offset = draw(st.integers(0, 5))
        slack = draw(st.integers(0, 3))
        storage_numel = required_numel(shape, stride, offset) + slack
        assume(storage_numel * itemsize <= cfg.max_storage_bytes)
        if len(set(stride)) < len(stride) or 0 in stride:
            event("dense: overlapping or zero strides")
        storage = fill_expr(storage_numel, dtype, device)
        name = b.let(
            f"torch.empty(0, dtype={dtype}{dev}).set_("
            f"{storage}.untyped_storage(), {offset}, {shape}, {stride})"
        )
    elif layout == "oversized_storage":
        extra = draw(st.integers(1, 8))
        assume((numel + extra) * itemsize <= cfg.max_storage_bytes)
        name = b.let(f"{fill_expr(numel + extra, dtype, device)}")
        b.stmt(f"{name}.resize_({shape})")
    else:
        assume(numel * itemsize <= cfg.max_storage_bytes)
        fmt = None
        if layout == "channels_last":
            fmt = "channels_last" if len(shape) == 4 else "channels_last_3d"
            event(f"dense: {fmt}")
        expr = dense_expr(shape, dtype, device, fmt)
        name = b.let(expr)
        if layout == "zero_byte_storage":
            b.stmt(f"{name}.untyped_storage().resize_(0)")
    if numel == 0:
        event("dense: zero-size dimension")
    event(f"dtype: {str(dtype).removeprefix('torch.')}")
    # Draw requires_grad whatever the dtype: a draw skipped for some dtypes
    # makes their examples shorter, and Hypothesis would shrink toward them
    # (int64 rather than float32) instead of toward the first dtype.
    # Drawn even when unused, so every kind that starts from a dense tensor
    # spends as many choices as the `dense` kind: Hypothesis shrinks toward
    # shorter choice sequences first, and `dense` must stay the simplest.
    wants_grad = draw(cfg.requires_grad)
    if allow_grad and wants_grad and grad_capable(dtype):
        b.stmt(f"{name}.requires_grad_()")
    return name


@kind("dense", "dense strided leaf: any dtype, strides, offset, channels_last, odd storages", cost_ms=8)
def dense_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_dense(draw, b, cfg)]
