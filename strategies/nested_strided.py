"""Nested tensors of the strided layout (``torch.nested.nested_tensor``'s
default): a list of components of one dimension count whose sizes differ,
held by ``NestedTensorImpl`` (not a Python subclass, unlike the jagged
layout of :mod:`.subclasses`).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, fill_expr
from .dense import grad_capable
from .kinds import kind
from .recipe import RecipeBuilder

NESTED_STRIDED_CASES = ("from_list", "requires_grad", "transposed", "empty")


def _unavailable() -> str | None:
    import torch

    if not hasattr(getattr(torch, "nested", None), "nested_tensor"):
        return "this torch has no torch.nested.nested_tensor"
    return None


@kind("nested_strided", "nested tensors of the strided layout (torch.nested.nested_tensor of a "
      "list): components of differing sizes, requiring grad, transposed, none",
      unavailable=_unavailable,
      programs="every converter refuses strided nested tensors (strided-nested-describe-crash): "
               "no converted tensor to run a program on",
      cost_ms=2)
def nested_strided_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    # The strided layout's storage lives on the CPU (or an accelerator), never
    # on meta: rejected where the user's devices allow no CPU tensor.
    assume(draw(cfg.devices) == "cpu")
    case = draw(st.sampled_from(NESTED_STRIDED_CASES))
    event(f"nested_strided: {case}")
    # (every case draws its components, the empty one too: a kind whose
    # simplest example took fewer draws than a dense tensor's would be what
    # Hypothesis shrinks any example toward, whatever its place in the kinds)
    dtype = draw(cfg.dtypes.filter(grad_capable) if case == "requires_grad" else cfg.dtypes)
    ndim = draw(st.integers(2 if case == "transposed" else 1, 3))
    shapes = draw(st.lists(st.tuples(*[st.integers(0, 3)] * ndim), min_size=1, max_size=3))
    if case == "empty":
        return [b.let("torch.nested.nested_tensor([])")]
    parts = [fill_expr(math.prod(shape), dtype, "cpu") + f".reshape({shape})" for shape in shapes]
    grad = ", requires_grad=True" if case == "requires_grad" else ""
    made = b.try_let(f"torch.nested.nested_tensor([{', '.join(parts)}]{grad})")
    if made is None:  # a dtype without the kernels nesting copies through
        event("nested_strided: refused by torch, an empty one instead")
        return [b.let("torch.nested.nested_tensor([])")]
    if case == "transposed":
        made = b.try_let(f"{made}.transpose(1, 2)") or made
    return [made]
