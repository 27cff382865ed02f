"""`storage`: storage sizes.

For every involved tensor with a storage (bases, grads and subclass inner
tensors included), ``untyped_storage().nbytes()`` of the converted tensor
equals the real one where sizes are static.  Where the converted storage size
is symbolic, only its hint is read, and only one thing is required: a
zero-byte storage (``untyped_storage().resize_(0)``) stays zero bytes.

For converters whose fakes carry their real tensors, the carried tensor's
storage has the original's size too.

Whether the storage may be resized (``untyped_storage().resizable()``) is the
same on both sides: a storage over memory torch did not allocate
(``torch.frombuffer``, ``torch.from_dlpack``, ``torch.from_numpy``) is not,
and eager refuses to grow it ('Trying to resize storage that is not
resizable').
"""

from __future__ import annotations

from typing import Any

from . import Conversion, Mismatch, check
from ._util import UNKNOWN, carried_real, hint, is_symbolic, related, safe


def storage_nbytes(t: Any) -> Any:
    """The storage's size in bytes (int or SymInt), or None without one."""
    import torch

    try:
        if t.layout != torch.strided:
            return None
        return t.untyped_storage().nbytes()
    except Exception:
        return None


def compare_nbytes(path: str, real_n: Any, fake_n: Any, detail: str = "") -> list[Mismatch]:
    if real_n is None or fake_n is None:
        return []
    if is_symbolic(fake_n):
        h = hint(fake_n)
        if real_n == 0 and h is not UNKNOWN and h != 0:
            return [Mismatch(
                check="storage", path=path, attribute="untyped_storage().nbytes() == 0", real=True,
                fake=False,
                detail=(detail + "; " if detail else "") + f"symbolic size {fake_n} with hint {h}")]
        return []
    if real_n != fake_n:
        return [Mismatch(
            check="storage", path=path, attribute="untyped_storage().nbytes()", real=real_n,
            fake=fake_n, detail=detail)]
    return []


def storage_resizable(t: Any) -> bool | None:
    """Whether the storage may be resized, or None without one."""
    import torch

    try:
        if t.layout != torch.strided:
            return None
        return bool(t.untyped_storage().resizable())
    except Exception:
        return None


@check("storage", "untyped_storage().nbytes() equal (static sizes); zero-byte storages stay "
                  "zero; resizable() equal")
def storage_check(conv: Conversion) -> list[Mismatch]:
    import torch

    found: list[Mismatch] = []
    carries_real = bool(getattr(conv.converter, "carries_real", False))
    for path, real, fake in related(conv, inner=False):
        real_n = storage_nbytes(real)
        found += compare_nbytes(path, real_n, storage_nbytes(fake))
        real_r, fake_r = storage_resizable(real), storage_resizable(fake)
        if real_r is not None and fake_r is not None and real_r != fake_r:
            found.append(Mismatch(check="storage", path=path,
                                  attribute="untyped_storage().resizable()", real=real_r,
                                  fake=fake_r))
        # (A C++ functional fake carries on its inner tensor, whose storage
        # is not the functional storage compared above.)
        functional = safe(lambda: torch._is_functional_tensor(fake), False)
        carried = carried_real(fake) if carries_real and not functional else None
        if carried is not None:
            found += compare_nbytes(f"{path}.real_tensor", real_n, storage_nbytes(carried),
                                    "the real tensor the fake carries")
    return found
