"""Views: chains of shape-changing view ops applied to a dense base."""

from __future__ import annotations

from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .config import GenConfig
from .dense import draw_dense, required_numel
from .kinds import kind
from .recipe import RecipeBuilder

VIEW_OPS = (
    "slice", "transpose", "permute", "unsqueeze", "squeeze", "expand", "as_strided",
    "view", "reshape", "narrow", "select", "unbind", "split", "diagonal",
)


def _view_op_expr(draw: Any, name: str, t: Any, op: str) -> str | None:
    """Source for one view op on tensor ``t`` (bound to ``name``), or None
    when ``op`` does not apply to its shape."""
    nd, shape = t.dim(), tuple(t.shape)
    dim = draw(st.integers(0, nd - 1)) if nd else None
    if op == "slice" and nd:
        n = shape[dim]
        start = draw(st.integers(0, n))
        stop = draw(st.integers(start, n))
        step = draw(st.integers(1, 3))
        index = ", ".join([":"] * dim + [f"{start}:{stop}:{step}"])
        return f"{name}[{index}]"
    if op == "transpose" and nd >= 2:
        other = draw(st.integers(0, nd - 1))
        return f"{name}.transpose({dim}, {other})"
    if op == "permute" and nd:
        return f"{name}.permute({tuple(draw(st.permutations(range(nd))))})"
    if op == "unsqueeze":
        return f"{name}.unsqueeze({draw(st.integers(0, nd))})"
    if op == "squeeze" and 1 in shape:
        return f"{name}.squeeze({shape.index(1)})"
    if op == "expand" and 1 in shape:
        sizes = [draw(st.integers(0, 3)) if s == 1 else s for s in shape]
        return f"{name}.expand({tuple(sizes)})"
    if op == "as_strided":
        storage_numel = t.untyped_storage().nbytes() // max(t.element_size(), 1)
        new_nd = draw(st.integers(0, 3))
        size = tuple(draw(st.lists(st.integers(0, 3), min_size=new_nd, max_size=new_nd)))
        stride = tuple(draw(st.lists(st.integers(0, 3), min_size=new_nd, max_size=new_nd)))
        offset = draw(st.integers(0, 4))
        if required_numel(size, stride, offset) > storage_numel:
            return None
        return f"{name}.as_strided({size}, {stride}, {offset})"
    if op in ("view", "reshape"):
        numel = t.numel()
        if numel == 0 or nd == 0:
            split: Any = -1
        else:
            split = draw(st.sampled_from([(numel,), (1, numel), (numel, 1)] + (
                [(shape[0], numel // shape[0])] if shape[0] else [])))
        if op == "reshape":
            # reshape copies when no view can express the new shape; the
            # result would not be a view (nor share the storage).
            try:
                t.view(split)
            except RuntimeError:
                return None
        return f"{name}.{op}({split})"
    if op == "narrow" and nd:
        n = shape[dim]
        start = draw(st.integers(0, n))
        return f"{name}.narrow({dim}, {start}, {draw(st.integers(0, n - start))})"
    if op == "select" and nd and shape[dim]:
        return f"{name}.select({dim}, {draw(st.integers(-shape[dim], shape[dim] - 1))})"
    if op == "unbind" and nd and shape[dim]:
        return f"{name}.unbind({dim})[{draw(st.integers(0, shape[dim] - 1))}]"
    if op == "split" and nd and shape[dim]:
        size = draw(st.integers(1, shape[dim]))
        pieces = -(-shape[dim] // size)
        return f"{name}.split({size}, {dim})[{draw(st.integers(0, pieces - 1))}]"
    if op == "diagonal" and nd >= 2:
        d1, d2 = draw(st.permutations(range(nd)))[:2]
        return f"{name}.diagonal({draw(st.integers(-2, 2))}, {d1}, {d2})"
    return None


def draw_view_chain(
    draw: Any, b: RecipeBuilder, base: str, *, min_ops: int = 1, max_ops: int = 4
) -> str:
    """Apply ``min_ops``..``max_ops`` view ops to ``base``; returns the last view."""
    current = base
    for _ in range(draw(st.integers(min_ops, max_ops))):
        op = draw(st.sampled_from(VIEW_OPS))
        expr = _view_op_expr(draw, current, b[current], op)
        if expr is None:
            continue
        made = b.try_let(expr)
        if made is not None:
            event(f"view op: {op}")
            current = made
    return current


@kind("view", "chains of view ops (slice, transpose, expand, as_strided, ...) of a dense base",
      cost_ms=8)
def view_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    base = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
    view = draw_view_chain(draw, b, base)
    if view == base:  # every drawn op was inapplicable: take a plain alias view
        view = b.let(f"{base}[...]")
    return [view]
