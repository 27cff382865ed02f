"""Tensors over memory torch did not allocate, or shares with another
process: where a program's tensors come from, beyond torch's factories.

- ``torch.frombuffer`` of a Python ``bytearray`` (as ``torch.from_numpy``
  makes them): the storage wraps the buffer and may not be resized;
- ``torch.from_dlpack`` of a tensor (memory another library handed over
  through DLPack): the same memory, in a storage that may not be resized;
- ``share_memory_()`` (what ``torch.multiprocessing`` does to tensors it
  sends): the storage moves to shared memory (``is_shared()``).

``MetaStorageDesc`` records a storage's size, not whether it may be
resized, so every fake's storage may be (the known difference
``storage-not-resizable-lost``), and a program that grows one runs on the
fake where eager refuses.

Cases, simplest first: a 1-d ``frombuffer`` tensor of the drawn dtype; a
view of one in the drawn shape; ``from_dlpack`` of a dense tensor (any
strides, then optionally requiring grad); a dense tensor moved to shared
memory.  ``frombuffer`` needs at least one element, so its shapes have no
zero-size dimension.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .config import GenConfig
from .dense import draw_dense, grad_capable
from .dtype_pick import draw_dtype_where
from .kinds import kind
from .recipe import RecipeBuilder

CASES = ("frombuffer", "frombuffer_view", "dlpack", "shared_memory")
# The dtypes DLPack carries whole (sub-byte, bits and float8 dtypes it does
# not describe: exporting a uint2 tensor made one that crashed when printed).
DLPACK = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool",
          "uint8", "int8", "int16", "int32", "int64")


def _frombuffer(b: RecipeBuilder, numel: int, dtype: Any) -> str:
    return b.let(f"torch.frombuffer(bytearray({numel * dtype.itemsize}), dtype={dtype})")


@kind("foreign_memory", "tensors over memory torch did not allocate (frombuffer, from_dlpack) "
                        "or in shared memory (share_memory_)", cost_ms=8)
def foreign_memory_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(CASES))
    device = draw(cfg.devices)
    if device != "cpu":  # each case is about host memory
        event("foreign_memory: a device other than cpu drawn, the dense case instead")
        return [draw_dense(draw, b, cfg, device=device)]
    event(f"foreign_memory: {case}")
    if case in ("frombuffer", "frombuffer_view"):
        dtype = draw(cfg.dtypes)
        shape = tuple(max(s, 1) for s in draw(cfg.shapes))
        numel = math.prod(shape) if case == "frombuffer_view" else draw(st.integers(1, 6))
        if numel * max(dtype.itemsize, 1) > cfg.max_storage_bytes:
            shape, numel = tuple(1 for _ in shape), 1
        name = _frombuffer(b, numel, dtype)
        if case == "frombuffer_view":
            name = b.let(f"{name}.view({shape})")
        if draw(cfg.requires_grad) and grad_capable(dtype):
            b.stmt(f"{name}.requires_grad_()")
        return [name]
    # DLPack exports no tensor requiring grad; shared memory is grown by no step.
    dtype = None
    if case == "dlpack":
        dtype = draw_dtype_where(draw, cfg, lambda d: str(d).removeprefix("torch.") in DLPACK)
        if dtype is None:  # the user's dtypes have none DLPack exports whole
            event("foreign_memory: no dtype DLPack exports, shared memory instead")
            case = "shared_memory"
    base = draw_dense(draw, b, cfg, dtype=dtype, device="cpu", allow_grad=False,
                      layouts=("contiguous", "strided"))
    if case == "dlpack":
        name = b.try_let(f"torch.from_dlpack({base})")
        if name is None:  # a dtype DLPack has no code for
            event("foreign_memory: DLPack refused the dtype")
            name = _frombuffer(b, 1, b[base].dtype)
    else:
        name = base
        b.stmt(f"{name}.share_memory_()")
    if draw(cfg.requires_grad) and grad_capable(b[name].dtype):
        b.stmt(f"{name}.requires_grad_()")
    return [name]
