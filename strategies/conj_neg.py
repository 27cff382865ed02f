"""Tensors carrying the conjugate and negative bits.

``conj()`` of a complex tensor, ``torch._neg_view`` of any tensor, and
``conj().imag`` (which carries the neg bit), applied to leaves and to views,
optionally followed by more views (which keep the bits) or by ``detach()``
(which makes a leaf that is not a view but keeps the bits).
"""

from __future__ import annotations

from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .config import GenConfig
from .dense import draw_dense, grad_capable
from .dtype_pick import draw_dtype_where, is_complex
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

# Simplest first.  "neg" needs no complex dtype, so it is where shrinking ends.
BIT_OPS = ("neg", "conj", "conj_imag", "conj_neg")


def _unavailable() -> str | None:
    import torch

    if not hasattr(torch, "_neg_view") or not hasattr(torch.Tensor, "is_neg"):
        return "this torch has no neg bit (torch._neg_view / Tensor.is_neg)"
    if not hasattr(torch.Tensor, "is_conj"):
        return "this torch has no conj bit (Tensor.is_conj)"
    return None


def has_bits(t: Any) -> bool:
    return bool(t.is_conj() or t.is_neg())


def _apply(op: str, name: str) -> str:
    if op == "neg":
        return f"torch._neg_view({name})"
    if op == "conj":
        return f"{name}.conj()"
    if op == "conj_imag":
        return f"{name}.conj().imag"
    return f"torch._neg_view({name}.conj())"  # conj_neg: both bits


def draw_conj_neg(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> str:
    """Add a tensor with the conj and/or neg bit set; returns its name."""
    op = draw(st.sampled_from(BIT_OPS))
    dtype = None
    if op != "neg":
        dtype = draw_dtype_where(draw, cfg, is_complex)
        if dtype is None:  # the user's dtypes have no complex one
            event("conj_neg: no complex dtype allowed, neg bit only")
            op = "neg"
    base = draw_dense(draw, b, cfg, dtype=dtype)
    source = base
    if draw(st.booleans()):  # the bit on a view rather than on a leaf
        source = draw_view_chain(draw, b, base)
        if source != base:
            event("conj_neg: bit applied to a view")
    made = b.try_let(_apply(op, source))
    if made is None:  # torch refused (it has not, so far): plain neg view
        made = b.let(_apply("neg", source))
        op = "neg"
    event(f"conj_neg: {op}")
    if draw(st.booleans()):  # views of the bit-carrying tensor
        after = draw_view_chain(draw, b, made)
        # A reshape that has to copy resolves the bits; keep only views that
        # still carry them (the extra lines stay in the recipe, harmlessly).
        if after != made and has_bits(b[after]):
            event("conj_neg: views of a bit-carrying tensor")
            made = after
    if draw(st.booleans()):  # a leaf that is not a view but carries the bit
        made = b.let(f"{made}.detach()")
        event("conj_neg: detached leaf")
        t = b[made]
        if draw(cfg.requires_grad) and grad_capable(t.dtype):
            b.stmt(f"{made}.requires_grad_()")
            event("conj_neg: detached leaf requiring grad")
    return made


@kind(
    "conj_neg",
    "conj and neg bits: conj(), torch._neg_view, conj().imag, on leaves and on views",
    unavailable=_unavailable,
    cost_ms=8,
)
def conj_neg_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_conj_neg(draw, b, cfg)]
