"""Families: several tensors that alias one storage, converted together.

``set_alias``: tensors that share a storage without being views of each
other (``set_``), each with its own offset, sizes, strides and possibly a
different dtype of the same element size.

``view_family``: several views of one base -- views of views, views made
under ``no_grad`` from a base that requires grad, leaf views given
``requires_grad_()``, views of a ``detach()``-ed alias -- with or without the
base itself among the outputs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, fill_expr
from .dense import draw_dense, grad_capable, required_numel
from .dtype_pick import draw_dtype_where
from .kinds import kind
from .recipe import RecipeBuilder
from .views import VIEW_OPS, _view_op_expr, draw_view_chain


def _draw_geometry(draw: Any, numel: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(size, stride, offset) reaching only elements ``0 .. numel - 1``."""
    ndim = draw(st.integers(0, 3))
    size = list(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    if required_numel(tuple(size), stride, 0) > numel:
        # Too big for the storage: shrink the dim that reaches furthest, one
        # step at a time, until it fits (a 0-dim tensor needs one element).
        event("set_alias: geometry clamped to the storage")
        if not size:
            size, stride = [0], (1,)
        while required_numel(tuple(size), stride, 0) > numel:
            reach = [(n - 1) * st_ if n else -1 for n, st_ in zip(size, stride)]
            widest = max(range(len(size)), key=lambda i: (reach[i], size[i]))
            size[widest] -= 1
    span = required_numel(tuple(size), stride, 0)
    offset = draw(st.integers(0, max(numel - span, 0)))
    return tuple(size), stride, offset


def draw_set_aliases(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    """2-4 tensors sharing one storage through ``set_``; returns their names."""
    dtype = draw(cfg.dtypes)
    device = draw(cfg.devices)
    dev = "" if device == "cpu" else f", device={device!r}"
    itemsize = max(dtype.itemsize, 1)
    numel = draw(st.integers(0, 24))
    assume(numel * itemsize <= cfg.max_storage_bytes)
    base = b.let(fill_expr(numel, dtype, device))
    storage = b.let(f"{base}.untyped_storage()", prefix="s")
    count = draw(st.integers(2, 4))
    outputs: list[str] = []
    if draw(st.booleans()):  # the tensor that owns the storage is one of them
        outputs.append(base)
        event("set_alias: with the original tensor")
    while len(outputs) < count:
        alias_dtype = dtype
        if draw(st.booleans()):
            other = draw_dtype_where(
                draw, cfg, lambda d: max(d.itemsize, 1) == itemsize and d != dtype)
            if other is not None:
                alias_dtype = other
                event("set_alias: another dtype of the same element size")
        # Drawn whichever form is used, so neither is a shortcut for the shrinker.
        size, stride, offset = _draw_geometry(draw, numel)
        like = draw(st.sampled_from(outputs)) if draw(st.booleans()) and outputs else None
        if like is not None and b[like].dtype == alias_dtype:
            # set_(tensor): same storage, offset, sizes and strides as another
            # alias, though not a view of it.
            outputs.append(b.let(f"torch.empty(0, dtype={alias_dtype}{dev}).set_({like})"))
            event("set_alias: set_(tensor)")
            continue
        outputs.append(b.let(
            f"torch.empty(0, dtype={alias_dtype}{dev}).set_({storage}, {offset}, {size}, {stride})"
        ))
        if offset:
            event("set_alias: non-zero offset")
    for name in outputs:
        if draw(cfg.requires_grad) and grad_capable(b[name].dtype):
            b.stmt(f"{name}.requires_grad_()")
            event("set_alias: an alias requires grad")
    return outputs


@kind(
    "set_alias",
    "tensors sharing one storage through set_, with their own offsets, sizes, strides, dtypes",
    family=True,
    cost_ms=9,
)
def set_alias_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return draw_set_aliases(draw, b, cfg)


# How each member of a view family is made, simplest first.
VIEW_MODES = ("plain", "no_grad", "detached")


def _no_grad_view(draw: Any, b: RecipeBuilder, source: str) -> str | None:
    """One view op on ``source`` run under ``torch.no_grad()``, or None."""
    op = draw(st.sampled_from(VIEW_OPS))
    expr = _view_op_expr(draw, source, b[source], op) or f"{source}[...]"
    name = b.fresh("t")
    try:
        b.stmt(f"with torch.no_grad():\n    {name} = {expr}")
    except Exception:  # torch refused the drawn op: nothing was recorded
        return None
    return name


def draw_view_family(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    """A base and 2-4 views of it (or of each other); returns the names."""
    base = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
    members = [base]
    views: list[str] = []
    detached: str | None = None
    for _ in range(draw(st.integers(2, 4))):
        source = draw(st.sampled_from(members))
        mode = draw(st.sampled_from(VIEW_MODES))
        view = None
        if mode == "no_grad":
            view = _no_grad_view(draw, b, source)
            if view is not None:
                event("view_family: view made under no_grad"
                      + (" of a tensor requiring grad" if b[source].requires_grad else ""))
                # and views of it, made with grad mode on again
                view = draw_view_chain(draw, b, view, min_ops=0, max_ops=2)
        elif mode == "detached":
            if detached is None:
                detached = b.let(f"{base}.detach()")
                members.append(detached)
            source = detached
            event("view_family: view of a detached alias")
        if view is None:
            view = draw_view_chain(draw, b, source, max_ops=3)
            if view == source:  # every drawn op was inapplicable
                view = b.let(f"{source}[...]")
        t = b[view]
        if draw(st.booleans()) and t.is_leaf and not t.requires_grad and grad_capable(t.dtype):
            b.stmt(f"{view}.requires_grad_()")
            event("view_family: leaf view given requires_grad_()")
        views.append(view)
        members.append(view)
        if source not in (base, detached):
            event("view_family: view of a view")
    if draw(st.booleans()):  # only the views, not the base
        event("view_family: without the base")
        return views
    return [base, *views]


@kind(
    "view_family",
    "several views of one base: views of views, no_grad views, views of a detached alias",
    family=True,
    cost_ms=21,
)
def view_family_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return draw_view_family(draw, b, cfg)
