"""Whether a strided tensor stays within its storage: the bytes its
geometry reaches, and the tensors that reach past the end (whose values
must not be read: torch crashes the process).

The strategies keep such tensors out of programs' element-touching steps;
the converters, checks and known differences ask the same question
(``converters`` re-exports these names).
"""

from __future__ import annotations

from typing import Any


def bytes_reached(shape: Any, stride: Any, offset: int, element_size: int) -> int:
    """Bytes of storage a strided tensor of that geometry reaches, its offset
    included (0 when it has no elements) -- ATen's computeStorageNbytes."""
    if any(n == 0 for n in shape):
        return 0
    return (offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * element_size


def storage_too_small(t: Any) -> bool:
    """True when a strided tensor reaches past the end of its storage (e.g.
    after ``untyped_storage().resize_(0)``): reading its values crashes the
    process (https://github.com/pytorch/pytorch/issues/171676)."""
    import torch

    try:
        if t.layout != torch.strided or t.device.type == "meta":
            return False
        return t.untyped_storage().nbytes() < bytes_reached(
            t.shape, t.stride(), t.storage_offset(), t.element_size())
    except Exception:
        return False
