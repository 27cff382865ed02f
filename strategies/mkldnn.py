"""MKLDNN (oneDNN) layout tensors: ``to_mkldnn()`` of a dense CPU tensor.

The converter has a branch of its own for them (``t.is_mkldnn`` in
``MetaConverter.meta_tensor``): such a tensor has no storage and no
meaningful strides (``OpaqueTensorImpl``), so it is described without a
storage and converted with ``empty_strided`` of its sizes and strides.

Drawn: float32 first, then whichever of bfloat16, float16, int8 and uint8
this CPU build's ``to_mkldnn`` accepts (probed at run time); shapes of 1 to
5 dimensions (oneDNN refuses 0-dim tensors and more than 5 dimensions:
torch decides, through ``try_let``), zero-size ones too; a leaf, a leaf
requiring grad, a non-leaf (``to_mkldnn`` of a dense leaf requiring grad:
``ToMkldnnBackward0``), an ``nn.Parameter``, and a leaf whose ``.grad`` is
an MKLDNN tensor too (as ``backward`` through ``to_dense`` leaves it).
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, dense_expr
from .dense import grad_capable
from .dtype_pick import draw_dtype_where
from .kinds import kind
from .recipe import RecipeBuilder

# Simplest first: shrinking ends at a plain float32 leaf.
CASES = ("leaf", "parameter", "leaf_requires_grad", "non_leaf", "grad")
# Candidates, simplest first; mkldnn_dtypes() keeps those this build accepts.
_CANDIDATE_DTYPES = ("float32", "bfloat16", "float16", "int8", "uint8")


def _probe(dtype: Any) -> bool:
    import torch

    try:
        return bool(torch.zeros(2, dtype=dtype).to_mkldnn().is_mkldnn)
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def mkldnn_dtypes() -> tuple[Any, ...]:
    """The dtypes this torch's ``to_mkldnn`` accepts (bfloat16 and float16
    depend on the build and the CPU), float32 first; () without MKLDNN."""
    import torch

    if _unavailable() is not None:
        return ()
    return tuple(getattr(torch, n) for n in _CANDIDATE_DTYPES
                 if hasattr(torch, n) and _probe(getattr(torch, n)))


def _unavailable() -> str | None:
    import torch

    mkldnn = getattr(torch.backends, "mkldnn", None)
    if mkldnn is None or not mkldnn.is_available():
        return "this torch is built without MKLDNN (torch.backends.mkldnn.is_available() is False)"
    if not hasattr(torch.Tensor, "to_mkldnn") or not hasattr(torch.Tensor, "is_mkldnn"):
        return "this torch has no Tensor.to_mkldnn / Tensor.is_mkldnn"
    if not _probe(torch.float32):
        return "this torch's to_mkldnn() refuses a float32 CPU tensor"
    return None


def draw_mkldnn(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> str:
    """Add an MKLDNN tensor to ``b``; returns its name.  Rejects the
    example where the user's dtypes, devices or shapes allow none (MKLDNN
    tensors are CPU only, of a few dtypes, 1 to 5 dimensions)."""
    allowed = set(mkldnn_dtypes())
    dtype = draw_dtype_where(draw, cfg, lambda d: d in allowed)
    if dtype is None:
        event("mkldnn: no MKLDNN dtype allowed")
    assume(dtype is not None)
    device = draw(cfg.devices)
    assume(device == "cpu")
    shape = draw(cfg.shapes)
    case = draw(st.sampled_from(CASES))
    wants_grad = draw(cfg.requires_grad)
    if case != "leaf" and case != "parameter" and not (wants_grad and grad_capable(dtype)):
        case = "leaf"  # the autograd cases need a float dtype and requires_grad allowed
    dense = b.let(dense_expr(shape, dtype, "cpu"))
    if case == "non_leaf":
        b.stmt(f"{dense}.requires_grad_()")
    made = b.try_let(f"{dense}.to_mkldnn()")
    if made is None:  # oneDNN refuses the shape (0-dim, more than 5 dims)
        event("mkldnn: to_mkldnn refused the shape")
    assume(made is not None)
    assert made is not None
    if case == "parameter":
        grad = wants_grad and grad_capable(dtype)
        made = b.let(f"torch.nn.Parameter({made}, requires_grad={grad})")
    elif case == "leaf_requires_grad":
        b.stmt(f"{made}.requires_grad_()")
    elif case == "grad":
        b.stmt(f"{made}.requires_grad_()")
        grad = b.try_let(f"{dense_expr(shape, dtype, 'cpu')}.to_mkldnn()")
        if grad is not None and b.try_stmt(f"{made}.grad = {grad}"):
            event("mkldnn: MKLDNN .grad attached")
        else:
            case = "leaf_requires_grad"
    event(f"mkldnn: {case}")
    event(f"mkldnn dtype: {str(dtype).removeprefix('torch.')}")
    if 0 in shape:
        event("mkldnn: zero-size dimension")
    return made


@kind(
    "mkldnn",
    "MKLDNN (oneDNN) layout tensors (to_mkldnn()): float32 and the reduced dtypes this CPU "
    "build accepts; leaf, requiring grad, non-leaf, Parameter, MKLDNN .grad",
    unavailable=_unavailable,
    programs=True, cost_ms=5,
)
def mkldnn_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_mkldnn(draw, b, cfg)]
