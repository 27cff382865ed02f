"""The model of MetaConverter's allocation (converter_model)
against what torch does: the storage predicates are exact by contract, so
the model they rest on must be."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.meta_utils import MetaConverter

from pytest_metafidelity.checks import Conversion
from pytest_metafidelity.converter_model import (
    converted_storage_nbytes,
    footprint,
    reach,
    reads_outside,
    visiting_order,
)

DTYPES = [torch.int8, torch.float16, torch.float32, torch.float64, torch.complex64]


@st.composite
def layouts(draw: Any, max_dims: int = 3) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    dims = draw(st.integers(0, max_dims))
    size = tuple(draw(st.lists(st.integers(0, 4), min_size=dims, max_size=dims)))
    stride = tuple(draw(st.lists(st.integers(0, 6), min_size=dims, max_size=dims)))
    return size, stride, draw(st.integers(0, 5))


@given(layout=layouts(), dtype=st.sampled_from(DTYPES))
def test_reach_is_what_aten_requires_of_a_storage(layout: Any, dtype: torch.dtype) -> None:
    size, stride, offset = layout
    # empty_strided allocates exactly what the tensor reaches from offset 0
    assert torch.empty_strided(size, stride, dtype=dtype).untyped_storage().nbytes() == \
        reach(torch.empty_strided(size, stride, dtype=dtype))
    # set_ grows an empty (resizable) storage to what the tensor reaches
    storage = torch.empty(0, dtype=torch.uint8).untyped_storage()
    t = torch.empty(0, dtype=dtype).set_(storage, offset, size, stride)
    assert storage.nbytes() == reach(t)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_footprint_is_the_bytes_writing_the_tensor_touches(shape: list[int], data: Any) -> None:
    offset = data.draw(st.integers(0, 3))
    n = 1
    for s in shape:
        n *= s
    storage = torch.zeros((offset + n) * 4, dtype=torch.uint8)
    base = torch.empty(0, dtype=torch.int32).set_(storage.untyped_storage(), offset, shape)
    perm = data.draw(st.permutations(range(len(shape))))
    view = base.permute(perm)
    steps = [data.draw(st.integers(1, 3)) for _ in shape]
    starts = [data.draw(st.integers(0, n - 1)) for n in view.shape]
    view = view[tuple(slice(a, None, b) for a, b in zip(starts, steps))]
    view.fill_(-1)  # every byte of every element becomes 0xff
    assert torch.equal(footprint(view), torch.nonzero(storage).flatten())


def test_reads_outside_an_owner() -> None:
    x = torch.arange(8.)
    assert reads_outside(x[1::2], x[::2])  # the odd elements: between the even ones
    assert not reads_outside(x[::4], x[::2])
    assert not reads_outside(x[2:4], x)
    assert reads_outside(x.as_strided((3,), (1,), 0), x[::2])


def _conversion(tensors: list[torch.Tensor], order: list[int] | None = None) -> Conversion:
    names = tuple(f"t{i}" for i in range(len(tensors)))
    return Conversion(names, tuple(tensors), (None,) * len(tensors), None,
                      order=tuple(order) if order is not None else None)


def _storages_in_memo_order(tensors: list[torch.Tensor]) -> list[int]:
    """The real storages in the order MetaConverter first memoizes a
    converted storage for them."""
    converter = MetaConverter()
    ids: list[int] = []
    memoize = converter.set_storage_memo

    def spy(desc: Any, storage: Any) -> None:
        ids.append(desc.id)
        memoize(desc, storage)

    converter.set_storage_memo = spy  # type: ignore[method-assign]
    for t in tensors:
        converter(t)
    by_id = {i: s._cdata for s, i in converter.describer.lookup_storage.items()}
    return list(dict.fromkeys(by_id[i] for i in ids))


def _storages_in_model_order(tensors: list[torch.Tensor]) -> list[int]:
    return list(dict.fromkeys(t.untyped_storage()._cdata
                              for t in visiting_order(_conversion(tensors))))


def _families() -> dict[str, list[torch.Tensor]]:
    x = torch.randn(4, 4, requires_grad=True)
    x.grad = torch.randn(4, 4)
    view = x[1:]
    y = torch.randn(3)
    alias = torch.empty(0).set_(y.untyped_storage(), 1, (2,), (1,))
    z = torch.randn(3, requires_grad=True)
    z.grad = y  # a grad aliasing another tensor
    return {
        "view": [view], "view then base": [view, x], "plain then view": [y, view],
        "grad first": [x.grad, view], "set_ alias first": [alias, y], "owner first": [y, alias],
        "grad aliasing": [z, alias], "grad aliasing, alias first": [alias, z],
    }


@pytest.mark.parametrize("family", list(_families()))
def test_visiting_order_is_the_order_metaconverter_allocates_storages(family: str) -> None:
    tensors = _families()[family]
    assert _storages_in_model_order(tensors) == _storages_in_memo_order(tensors)


@st.composite
def aliases(draw: Any) -> list[torch.Tensor]:
    """Tensors on one float32 storage: set_ windows and as_strided views of
    earlier ones, with a storage larger than what they reach."""
    n = draw(st.integers(0, 12))
    storage = torch.arange(float(n)).untyped_storage()
    tensors: list[torch.Tensor] = []
    for _ in range(draw(st.integers(1, 4))):
        size = draw(st.integers(0, 4))
        stride = draw(st.integers(1, 3))
        offset = draw(st.integers(0, 4))
        if size and offset + (size - 1) * stride >= n:
            continue
        if tensors and draw(st.booleans()):
            tensors.append(draw(st.sampled_from(tensors)).as_strided((size,), (stride,), offset))
        else:
            tensors.append(torch.empty(0).set_(storage, offset, (size,), (stride,)))
    return tensors or [torch.empty(0).set_(storage, 0, (0,), (1,))]


@given(tensors=aliases())
def test_converted_storage_nbytes_is_the_size_torch_gives(tensors: list[torch.Tensor]) -> None:
    conversion = _conversion(tensors)
    # Converted in order, by one converter each; the storage is compared once
    # every tensor on it is converted (later ones may grow it).
    meta, fake_mode = MetaConverter(), FakeTensorMode()
    converted = [(t, meta(t), fake_mode.from_tensor(t)) for t in tensors]
    for t, as_meta, as_fake in converted:
        for c, grow in ((as_meta, False), (as_fake, True)):
            predicted = converted_storage_nbytes(conversion, t, grow_on_views=grow)
            if predicted is not None:
                assert c.untyped_storage().nbytes() == predicted, grow
    # A zero-byte storage stays zero bytes.
    empty = torch.empty(0).set_(torch.empty(0).untyped_storage(), 0, (0,), (1,))
    assert converted_storage_nbytes(_conversion([empty]), empty, grow_on_views=True) == 0
