"""Reading each property of :mod:`.properties` on a real tensor, where it
is safe to read.

:func:`read_value` gives a property's value on one tensor as a short label
(:func:`label`) or raises :class:`NotRead` saying why it was not read.  Some reads are refused up
front: methods that change the tensor (``requires_grad_``), methods that
need another tensor, and the reads that touch memory -- ``is_pinned()``,
``is_shared()``, ``is_nonzero()``, ``_is_all_true()``/``_is_any_true()``
and ``is_coalesced()`` have crashed the process on some strided tensors
(a storage smaller than the tensor reaches, a layout they were not meant
for), so they are read only on plain CPU tensors whose storage holds what
they reach (``is_coalesced()`` only on sparse COO tensors).
"""

from __future__ import annotations

import inspect
from typing import Any

from .properties import Property


class NotRead(Exception):
    """The property was not read on this tensor; the message says why."""


# Tensor methods that read memory: only where the memory is there.
_MEMORY_READS = frozenset({"is_pinned", "is_shared", "is_nonzero", "_is_all_true",
                           "_is_any_true"})


class TensorReading:
    """One real tensor, described once for the MetaTensorDesc fields."""

    def __init__(self, t: Any) -> None:
        self.t = t
        self._desc: Any = None
        self._desc_error: str | None = None

    def desc(self) -> Any:
        if self._desc is None and self._desc_error is None:
            from torch._subclasses.meta_utils import MetaTensorDescriber

            try:
                self._desc = MetaTensorDescriber().describe_tensor(self.t)
            except Exception as e:
                self._desc_error = f"describe_tensor raised {type(e).__name__}"
        if self._desc is None:
            raise NotRead(self._desc_error)
        return self._desc


def label(value: Any) -> str:
    """A short label: ``True``/``False``/``None``, ``empty`` for an empty
    container, the name of a layout, a device type or an enum member
    (``CreationMeta.NO_GRAD_MODE``), else ``set``."""
    import torch

    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)) and not value:
        return "empty"
    if isinstance(value, torch.layout):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return value.type
    if hasattr(type(value), "__members__"):  # a pybind11 or Python enum
        return str(value)
    return "set"


def memory_is_readable(t: Any) -> bool:
    """A plain CPU strided tensor whose storage holds every byte it reaches
    (not a functional or functorch wrapper, whose storage is its wrapped
    tensor's: the allocator's reads segfault on it)."""
    import torch

    from .strategies.tensor_facts import storage_too_small

    try:
        return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided
                and t.device.type == "cpu" and not torch._is_functional_tensor(t)
                and not torch._C._functorch.is_functorch_wrapped_tensor(t)
                and not storage_too_small(t))
    except Exception:
        return False


def _call_flag(owner: Any, name: str, memory_ok: bool) -> Any:
    attr = getattr(type(owner), name, None)
    if name.endswith("_") and callable(attr):
        raise NotRead("a method that changes the tensor")
    if name in _MEMORY_READS and not memory_ok:
        raise NotRead("reads memory: not on this tensor")
    value = getattr(owner, name)
    if not callable(value):
        return value
    try:
        signature = inspect.signature(value)
        needs = [p for p in signature.parameters.values()
                 if p.default is inspect.Parameter.empty
                 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        needs = []
    if needs:
        raise NotRead("needs arguments")
    try:
        return value()
    except TypeError as e:
        if "argument" in str(e):
            raise NotRead("needs arguments") from None
        raise


def read_value(prop: Property, reading: TensorReading) -> str:
    """The label of ``prop``'s value on the tensor; :class:`NotRead` where it
    is not read, any other exception where reading it raised."""
    import torch

    t = reading.t
    if prop.group == "MetaTensorDesc":
        return label(getattr(reading.desc(), prop.name))
    if prop.group == "MetaStorageDesc":
        storage = reading.desc().storage
        if storage is None:
            raise NotRead("no storage")
        return label(getattr(storage, prop.name))
    if prop.group == "Tensor":
        if prop.name == "is_coalesced" and t.layout != torch.sparse_coo:
            raise NotRead("sparse COO only")
        return label(_call_flag(t, prop.name, memory_is_readable(t)))
    if prop.group == "UntypedStorage":
        if t.layout != torch.strided or type(t) not in (torch.Tensor, torch.nn.Parameter):
            raise NotRead("no storage of its own")
        return label(_call_flag(t.untyped_storage(), prop.name, memory_is_readable(t)))
    if prop.group == "DispatchKey":
        from .checks._dispatch_keys import keyset_names

        return label(prop.name in keyset_names(torch._C._dispatch_keys(t)))
    if prop.group == "Functionalization":
        from .strategies.tensor_facts import FUNCTIONALIZATION_QUERIES

        if prop.name not in FUNCTIONALIZATION_QUERIES:
            raise NotRead("not a reading (an action, or compared elsewhere)")
        if not torch._is_functional_tensor(t):
            raise NotRead("not a functional tensor")
        # (a counter as whether it counted anything: its values both ways)
        return label(bool(getattr(torch, f"_functionalize_{prop.name}")(t)))
    raise NotRead(f"unknown group {prop.group}")
