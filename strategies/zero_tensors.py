"""Zero tensors: ``torch._efficientzerotensor``, the tensors with the
``ZeroTensor`` dispatch key, which some of autograd's derivative formulas
return for a gradient known to be zero, and which a compiled function may
then be handed.  Every op reads them as zeros without touching memory
(their storage has a size but no data), and an in-place op on one raises
('ZeroTensors are immutable').

``MetaTensorDesc`` has no field for the key, so the converter makes an
ordinary tensor (the known difference ``zero-tensor-key-lost``): no kind
drew one before, so that difference, and whatever a program meets after it,
was never judged.

Cases, simplest first: a leaf of any dtype, shape and device the
configuration allows (requiring grad where the configuration draws it and
the dtype can); a chain of view ops of a leaf (the views are zero tensors
too); the conjugate view of a complex leaf.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .config import GenConfig
from .dense import grad_capable
from .dtype_pick import draw_dtype_where, is_complex
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

CASES = ("leaf", "view", "conj")


def _unavailable() -> str | None:
    import torch

    if not hasattr(torch, "_efficientzerotensor") or not hasattr(torch.Tensor,
                                                                 "_is_zerotensor"):
        return "this torch has no zero tensors (torch._efficientzerotensor)"
    return None


def zero_tensor_expr(shape: tuple[int, ...], dtype: Any, device: str) -> str:
    """Source making a zero tensor of ``shape``, ``dtype`` on ``device``."""
    dev = "" if device == "cpu" else f", device={device!r}"
    return f"torch._efficientzerotensor({tuple(shape)}, dtype={dtype}{dev})"


@kind("zero_tensor", "zero tensors (torch._efficientzerotensor): leaves, requiring grad or "
                     "not, their views and conjugates", unavailable=_unavailable, cost_ms=8)
def zero_tensor_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(CASES))
    dtype = None
    if case == "conj":
        dtype = draw_dtype_where(draw, cfg, is_complex)
        if dtype is None:  # the user's dtypes have no complex one
            case = "view"
    if dtype is None:
        dtype = draw(cfg.dtypes)
    shape = draw(cfg.shapes)
    device = draw(cfg.devices)
    # No data is allocated, but a fake's storage is, and the rebuilt real
    # side's too: the bound on storages holds here as everywhere.
    if math.prod(shape) * max(dtype.itemsize, 1) > cfg.max_storage_bytes:
        shape = tuple(min(s, 1) for s in shape)
    name = b.let(zero_tensor_expr(shape, dtype, device))
    if draw(cfg.requires_grad) and grad_capable(dtype):
        b.stmt(f"{name}.requires_grad_()")
    if case == "view":
        view = draw_view_chain(draw, b, name)
        name = view if view != name else b.let(f"{name}[...]")
    elif case == "conj":
        name = b.let(f"{name}.conj()")
    event(f"zero tensor: {case}")
    return [name]
