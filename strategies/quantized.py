"""Quantized tensors: ``torch.quantize_per_tensor`` and
``torch.quantize_per_channel`` of a float32 tensor, and views of them.

The converter refuses them by design (``MetaConverter.__call__`` returns
NotImplemented for ``t.is_quantized``; ``FakeTensorConverter`` raises
``UnsupportedFakeTensorException("quantized nyi in meta tensors")``): the
suite expects ``unsupported`` with that reason, whatever the tensor.

Drawn: qint8, quint8 and qint32 (those this torch has); per-tensor affine
(any shape, 0-dim too), per-channel affine (integer zero points) and, for
quint8, per-channel affine with float zero points
(``per_channel_affine_float_qparams``), along a drawn axis; optionally a
chain of view ops (slice, transpose, as_strided, ...) of the quantized
tensor.  Quantized tensors cannot require grad.  ``quantize_*`` only takes
float32 input, so the kind draws only where ``dtype=`` allows float32.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, dense_expr
from .dtype_pick import draw_dtype_where
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

# Simplest first.
QSCHEMES = ("per_tensor", "per_channel", "per_channel_float_qparams")
_QDTYPES = ("quint8", "qint8", "qint32")


def quantized_dtypes() -> tuple[Any, ...]:
    import torch

    return tuple(getattr(torch, n) for n in _QDTYPES if hasattr(torch, n))


def _unavailable() -> str | None:
    import torch

    if not hasattr(torch, "quantize_per_tensor") or not hasattr(torch, "quantize_per_channel"):
        return "this torch has no torch.quantize_per_tensor / torch.quantize_per_channel"
    # Read from the build, not probed by quantizing a tensor: asked in every
    # process that registers the kinds, HypoFuzz's workers included, where
    # quantizing one (torch 2.13 deprecates it) stopped every fuzzed test.
    engines = getattr(getattr(torch.backends, "quantized", None), "supported_engines", None)
    if not engines or all(engine == "none" for engine in engines):
        return "this torch has no quantized CPU engine (torch.backends.quantized.supported_engines)"
    return None


def _qparam(draw: Any) -> tuple[float, int]:
    """A scale (a float that prints exactly) and a zero point."""
    scale = draw(st.sampled_from((1.0, 0.5, 0.25, 2.0, 0.1)))
    return scale, draw(st.integers(0, 5))


def draw_quantized(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> str:
    """Add a quantized tensor (or a view of one) to ``b``; returns its name."""
    import torch

    source_dtype = draw_dtype_where(draw, cfg, lambda d: d == torch.float32)
    if source_dtype is None:
        event("quantized: float32 not allowed")
    assume(source_dtype is not None)
    device = draw(cfg.devices)
    assume(device == "cpu")
    shape = draw(cfg.shapes)
    qdtype = draw(st.sampled_from(quantized_dtypes()))
    scheme = draw(st.sampled_from(QSCHEMES))
    if scheme != "per_tensor" and not shape:
        scheme = "per_tensor"  # per-channel needs an axis
    if scheme == "per_channel_float_qparams" and qdtype != torch.quint8:
        scheme = "per_channel"  # float zero points: quint8 (and sub-byte) only
    dense = b.let(dense_expr(shape, torch.float32, "cpu"))
    if scheme == "per_tensor":
        scale, zero_point = _qparam(draw)
        made = b.try_let(f"torch.quantize_per_tensor({dense}, {scale}, {zero_point}, {qdtype})")
    else:
        axis = draw(st.integers(0, len(shape) - 1))
        params = [_qparam(draw) for _ in range(shape[axis])]
        scales = [s for s, _ in params]
        if scheme == "per_channel":
            zeros = f"torch.tensor({[z for _, z in params]}, dtype=torch.int64)"
        else:
            zeros = f"torch.tensor({[float(z) for _, z in params]})"
        made = b.try_let(f"torch.quantize_per_channel({dense}, torch.tensor({scales}, "
                         f"dtype=torch.float64), {zeros}, {axis}, {qdtype})")
    if made is None:
        event(f"quantized: torch refused {scheme}")
    assume(made is not None)
    assert made is not None
    event(f"quantized: {scheme}")
    event(f"quantized dtype: {str(qdtype).removeprefix('torch.')}")
    if draw(st.booleans()):
        view = draw_view_chain(draw, b, made)
        if view != made:
            event("quantized: a view")
            made = view
    return made


# Why `behaviour` programs do not run on this module's kinds (their @kind declarations).
PROGRAMS_NOT_RUN = "every converter refuses quantized tensors: no converted tensor to run a program on"


@kind(
    "quantized",
    "quantized tensors: quantize_per_tensor / quantize_per_channel (qint8, quint8, qint32, "
    "float zero points), and views of them (the converter refuses them by design)",
    unavailable=_unavailable,
    programs=PROGRAMS_NOT_RUN, cost_ms=3,
)
def quantized_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_quantized(draw, b, cfg)]
