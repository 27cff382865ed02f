"""Conversions torch is known to crash the process on (a segfault, an
abort), and how the converters refuse them: the tensors that would crash
(:func:`crashing_copy`, :func:`crashing_item_read`), and
:func:`known_crash`, which raises :class:`ConversionCrash` -- or, with
``--metafidelity-run-known-crashes``, attempts the conversion in a forked
child first and converts for real if the child lives.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from .child import CAN_FORK, run_in_child
from .strategies.tensor_facts import family_of, storage_too_small


class ConversionCrash(Exception):
    """Not attempted: torch is known to crash the process (segfault) on this
    conversion.  Reported as a failed conversion, never run."""


def crashing_copy(t: Any) -> bool:
    """True when converting ``t`` with real-tensor propagation would copy the
    values of a tensor whose storage is smaller than the tensor (MetaConverter
    copies tensors whose type is exactly torch.Tensor).  From torch 2.14 it
    also copies through a Python FunctionalTensor, so what one wraps counts
    too (on older torch that refuses a few conversions that would not crash)."""
    import torch

    def family() -> Iterator[Any]:
        for u in family_of(t):
            yield u
            elem = _functional_tensor_elem(u)
            if elem is not None:
                yield from family_of(elem)

    return any(type(u) is torch.Tensor and storage_too_small(u) for u in family())


def _functional_tensor_elem(t: Any) -> Any:
    """The C++ functional tensor a Python FunctionalTensor wraps, or None."""
    try:
        from torch._subclasses.functional_tensor import FunctionalTensor
    except Exception:  # pragma: no cover - depends on torch
        return None
    return t.elem if isinstance(t, FunctionalTensor) else None


def refuse_crashing_copy(t: Any, attempt: Callable[[], Any]) -> None:
    if crashing_copy(t):
        known_crash(
            "copying the real tensor's values (fake_tensor_propagate_real_tensors) reads past "
            "the end of a storage smaller than the tensor (resize_(0)?) and segfaults "
            "(https://github.com/pytorch/pytorch/issues/171676)", attempt)


# The dtypes whose 0-dim CPU tensors from_real_tensor reads with item() to
# make a symbol for the value (with a ShapeEnv and a source).
ITEM_READ_DTYPES = ("int64", "int32", "int16", "int8", "float64")


def item_read_when_converted(t: Any) -> bool:
    """True when converting ``t`` with a ``ShapeEnv`` and a source reads its
    value with ``item()``: a plain 0-dim CPU tensor of ITEM_READ_DTYPES."""
    import torch

    return (type(t) is torch.Tensor and t.layout == torch.strided and t.dim() == 0
            and t.device.type == "cpu" and str(t.dtype).removeprefix("torch.") in ITEM_READ_DTYPES)


def crashing_item_read(t: Any) -> bool:
    """True when that ``item()`` read is of a tensor with the negative bit
    whose storage holds no bytes: torch raises for such a read without the
    bit and segfaults with it."""
    return item_read_when_converted(t) and t.is_neg() and t.untyped_storage().nbytes() == 0


def refuse_crashing_item_read(t: Any, attempt: Callable[[], Any]) -> None:
    if crashing_item_read(t):
        known_crash(
            "from_real_tensor reads item() of a 0-dim tensor with the negative bit whose "
            "storage holds no bytes (resize_(0)), and item() segfaults on it", attempt)


# --metafidelity-run-known-crashes: attempt known crashes in a child process.
_run_known_crashes = False
KNOWN_CRASH_TIMEOUT = 60.0


def run_known_crashes_in_children(enabled: bool) -> None:
    global _run_known_crashes
    _run_known_crashes = bool(enabled)


def known_crash(why: str, attempt: Callable[[], Any]) -> None:
    """A conversion torch is known to crash on.  By default it is not
    attempted (:class:`ConversionCrash`).  With known crashes run
    (``--metafidelity-run-known-crashes``) ``attempt`` runs in a forked child
    first: if the child dies, ConversionCrash says how; if it lives, this
    returns and the caller converts for real -- the registered crash did not
    occur, which the registry reports as unexpectedly passing."""
    if not (_run_known_crashes and CAN_FORK):
        raise ConversionCrash(f"{why}; not attempted")
    ending = run_in_child(attempt, KNOWN_CRASH_TIMEOUT)
    if ending.crashed or ending.hung:
        raise ConversionCrash(f"{why}; attempted in a child process, which {ending.describe()}")
