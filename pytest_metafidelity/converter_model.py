"""A model of MetaConverter's allocation: which bytes a strided tensor
reaches (:func:`reach`, :func:`footprint`), the order MetaConverter visits
a conversion's tensors in (:func:`visiting_order`) and the size it gives a
converted storage (:func:`converted_storage_nbytes`).

The storage predicates are exact by contract (an entry that does not occur
is reported as fixed upstream), so this model is tested on its own against
what torch does (``tests/test_converter_model.py``).
"""

from __future__ import annotations

from typing import Any

from .strategies.tensor_facts import (bytes_reached, functional_value, plain_strided,
                                      storage_key)


def reach(t: Any) -> int:
    """Bytes of storage a strided tensor reaches, its offset included (0 when
    it has no elements) -- ATen's computeStorageNbytes."""
    return bytes_reached(t.shape, t.stride(), t.storage_offset(), t.element_size())


def footprint(t: Any) -> Any:
    """The storage bytes a strided tensor's elements occupy (a sorted 1-D
    tensor of byte offsets)."""
    import torch

    offsets = torch.tensor([t.storage_offset()], dtype=torch.int64)
    for n, st in zip(t.shape, t.stride()):
        offsets = (offsets.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st).flatten()
    size = t.element_size()
    return torch.unique((offsets.unsqueeze(-1) * size + torch.arange(size)).flatten())


def reads_outside(t: Any, owner: Any) -> bool:
    """``t`` reads storage bytes that none of ``owner``'s elements occupy."""
    import torch

    return not bool(torch.isin(footprint(t), footprint(owner)).all())


def visiting_order(conversion: Any) -> tuple[Any, ...]:
    """The real tensors in the order MetaConverter creates their converted
    counterparts: per tensor converted (in the conversion's order), a view's
    ``_base`` first (with the base's grad), the value a C++ functional tensor
    wraps (converted by the same MetaConverter, sharing its storage memo),
    then the tensor, then its grad.  Computed once per conversion (the
    predicates of every tensor of a case ask for it)."""
    cached = getattr(conversion, "_visiting_order", None)
    if cached is None:
        cached = tuple(_visiting_order(conversion))
        try:
            conversion._visiting_order = cached
        except AttributeError:  # not a checks.Conversion
            pass
    return cached


def _visiting_order(conversion: Any) -> list[Any]:
    from .strategies.tensor_facts import base_of, grad_of, inner_tensors

    seq: list[Any] = []
    seen: set[int] = set()

    def visit(t: Any, depth: int) -> None:
        if t is None or id(t) in seen or depth > 8:
            return
        visit(base_of(t), depth + 1)
        if id(t) in seen:
            return
        for _, inner in inner_tensors(t):  # a subclass's inner tensors come first
            visit(inner, depth + 1)
        visit(functional_value(t), depth + 1)
        seen.add(id(t))
        seq.append(t)
        visit(grad_of(t), depth + 1)

    order = conversion.order if conversion.order is not None else range(len(conversion.real))
    for i in order:
        visit(conversion.real[i], 0)
    return seq


def converted_storage_nbytes(conversion: Any, t: Any, *, grow_on_views: bool) -> int | None:
    """The size MetaConverter gives the converted storage of ``t``'s storage
    S: 0 if S has zero bytes; else the storage allocated for the first
    non-view tensor on S (sized to that tensor's reach when its offset is 0
    -- ``empty_strided``; else S's real size -- ``set_`` on a storage of S's
    size), grown by each later tensor on S that reaches further: ``set_``
    for non-views; ``as_strided`` for views, which grows fake tensors'
    storages (``grow_on_views``) but not meta tensors'."""
    from .strategies.tensor_facts import is_view

    key = storage_key(t)
    real_n = t.untyped_storage().nbytes()
    if real_n == 0:
        return 0
    size = None
    for u in visiting_order(conversion):
        if not plain_strided(u) or storage_key(u) != key:
            continue
        if size is None:
            if is_view(u):
                return None  # S's first tensor is a view of a tensor we don't see
            size = reach(u) if u.storage_offset() == 0 else real_n
        elif not is_view(u) or grow_on_views:
            size = max(size, reach(u))
    return size
