"""Known differences of storages: their sizes (MetaConverter sizes a storage to its tensors),
zero-byte storages, version counters shared outside view trees.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...converters import where
from ...converter_model import converted_storage_nbytes
from ..core import Case, KnownDifference, UNFILED
from ..facts import (
    family_wide,
    memo,
    plain_strided,
    static_fake_nbytes,
    storage_key,
)

ENTRIES: list[KnownDifference] = []


def storage_sized_to_tensors(case: Case) -> bool:
    t = case.tensor
    if not plain_strided(t) or not static_fake_nbytes(case):
        return False
    grow = case.converter in where(fake_tensors=True)  # as_strided grows a fake storage
    # The same prediction for every tensor on one storage: made once.
    predicted = memo(case, ("converted storage nbytes", storage_key(t), grow),
                      lambda: converted_storage_nbytes(case.conversion, t, grow_on_views=grow))
    return predicted is not None and predicted != t.untyped_storage().nbytes()


ENTRIES.append(KnownDifference(
    id="storage-sized-to-tensors",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=storage_sized_to_tensors,
    converters=where(functional=False),
    reason=(
        "MetaConverter allocates a non-view tensor's storage with empty_strided, sized to "
        "what the tensor reaches, instead of the real storage's size (unless the storage "
        "offset is non-zero); later tensors on the storage grow it only as far as they "
        "reach (set_; as_strided for fake but not meta tensors).  A storage larger than "
        "its tensors -- resize_ to fewer elements, a set_ or as_strided window -- comes "
        "out smaller (meta_utils: 'The real fix is to properly call meta_storage "
        "recursively here').  Carried real tensors (fake-real) have the same size"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/185014",
        "https://github.com/pytorch/pytorch/issues/123879",
    ),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(10); x.resize_(3)\n"
        "assert x.untyped_storage().nbytes() == 40\n"
        "assert FakeTensorMode().from_tensor(x).untyped_storage().nbytes() == 12\n"
    ),
))


@family_wide
def zero_byte_scalar_item(case: Case) -> bool:
    """from_tensor with a ShapeEnv and a source reads ``item()`` of a 0-dim
    CPU int64/int32/int16/int8/float64 tensor to make a symbol for it: with
    a zero-byte storage that read raises."""
    from ...crash_guards import crashing_item_read, item_read_when_converted
    from ...strategies.tensor_facts import storage_too_small

    return any(
        item_read_when_converted(t) and storage_too_small(t)
        and not crashing_item_read(t)  # dynamic-zero-byte-neg-scalar-item-segfault
        for t in case.conversion.real
    )


ENTRIES.append(KnownDifference(
    id="dynamic-zero-byte-scalar-item",
    check="conversion",
    attribute=r"raised",
    applies=zero_byte_scalar_item,
    converters=where(symbolic=True, carries_real=False),
    reason=(
        "with a ShapeEnv and a source, from_real_tensor reads item() of a 0-dim CPU "
        "int64/int32/int16/int8/float64 tensor to make an unbacked-free symbol for its "
        "value; with a zero-byte storage (resize_(0)) that raises 'RuntimeError: The tensor "
        "has a non-zero number of elements, but its data is not allocated yet'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126245",),
    reproducer=(
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "x = torch.tensor(3.0, dtype=torch.float64); x.untyped_storage().resize_(0)\n"
        "try:\n"
        "    FakeTensorMode(shape_env=ShapeEnv()).from_tensor(x, source=ConstantSource('x'))\n"
        "except RuntimeError as e:\n"
        "    assert 'not allocated' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"data is not allocated yet",
))


@family_wide
def neg_scalar_item_read_crashes(case: Case) -> bool:
    """Our dynamic converters refuse a 0-dim tensor with the negative bit
    and a zero-byte storage whose value from_real_tensor would read with
    ``item()`` (``crashing_item_read``): torch segfaults on that read."""
    from ...crash_guards import crashing_item_read

    return any(crashing_item_read(t) for t in case.conversion.real)


ENTRIES.append(KnownDifference(
    id="dynamic-zero-byte-neg-scalar-item-segfault",
    check="conversion",
    attribute=r"raised",
    applies=neg_scalar_item_read_crashes,
    converters=where(symbolic=True),
    reason=(
        "with a ShapeEnv and a source, from_real_tensor reads item() of a 0-dim CPU "
        "int64/int32/int16/int8/float64 tensor; when the tensor has the negative bit "
        "(torch._neg_view) and its storage holds no bytes (resize_(0)), item() segfaults "
        "where without the bit it raises 'data is not allocated yet' "
        "(dynamic-zero-byte-scalar-item); the converter refuses it (ConversionCrash) instead"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/171676",),
    reproducer=(
        "import torch\n"
        "x = torch.zeros((), dtype=torch.float64); x.untyped_storage().resize_(0)\n"
        "torch._neg_view(x).item()  # segfault (without _neg_view: RuntimeError)\n"
    ),
    raises=r"^ConversionCrash: from_real_tensor reads item\(\) of a 0-dim tensor with the "
           r"negative bit",
))


def shares_version_counter_outside_view_tree(case: Case) -> bool:
    """``case.tensor`` shares its version counter with a tensor of the family
    that is not in its view tree (not its base, a view of its base, ...) --
    e.g. ``x`` and ``x.detach()``.  Converters share version counters only
    along view relationships."""
    from ...strategies.tensor_facts import base_of, is_view
    from ...strategies.tensor_facts import version_partition

    t = case.tensor
    if t is None or len(case.family) < 2:
        return False
    family = list(case.family)
    if not any(u is t for u in family):
        return False
    roots = memo(case, "view-tree roots", lambda: {
        id(base_of(u) if is_view(u) else u) for u in family})
    if len(roots) < 2:
        return False  # one view tree: nothing outside it to share with
    # The same family for every tensor of the case: partitioned once.
    labels = memo(case, ("version-partition", tuple(map(id, family))),
                   lambda: version_partition(family))
    index = next(i for i, u in enumerate(family) if u is t)
    if labels[index] is None:
        return False
    root = base_of(t) if is_view(t) else t
    return any(
        labels[j] == labels[index] and (base_of(u) if is_view(u) else u) is not root
        for j, u in enumerate(family) if j != index
    )


ENTRIES.append(KnownDifference(
    id="version-counter-outside-views",
    check="aliasing",
    attribute=r"version counter sharing",
    applies=shares_version_counter_outside_view_tree,
    reason=(
        "converters share version counters only between a view and its base: tensors "
        "that share one otherwise -- x and x.detach() -- convert to tensors that share "
        "the storage but not the version counter, so an in-place op through one no longer "
        "bumps the other's _version"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(4); d = x.detach()\n"
        "m = FakeTensorMode(); fx, fd = m.from_tensor(x), m.from_tensor(d)\n"
        "torch.autograd.graph.increment_version(d)\n"
        "assert x._version == d._version\n"
        "torch.autograd.graph.increment_version(fd)\n"
        "assert fx._version != fd._version\n"
    ),
))


def storage_not_resizable(case: Case) -> bool:
    """The real tensor's storage may not be resized (memory torch did not
    allocate: ``torch.frombuffer``, ``torch.from_dlpack``, ``torch.from_numpy``)."""
    t = case.tensor
    return plain_strided(t) and not t.untyped_storage().resizable()


ENTRIES.append(KnownDifference(
    id="storage-not-resizable-lost",
    check="storage",
    attribute=r"untyped_storage\(\)\.resizable\(\)",
    applies=storage_not_resizable,
    reason=(
        "a storage over memory torch did not allocate (torch.frombuffer, torch.from_dlpack, "
        "torch.from_numpy) may not be resized: eager refuses to grow it ('Trying to resize "
        "storage that is not resizable'). MetaStorageDesc records the storage's size only, and "
        "every converter makes a resizable storage, so a program that grows the tensor "
        "(resize_, set_ then resize_) runs on the fake where eager raises"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "t = torch.frombuffer(bytearray(8), dtype=torch.float32)\n"
        "assert not t.untyped_storage().resizable()\n"
        "try:\n"
        "    t.resize_(4)\n"
        "except RuntimeError as e:\n"
        "    assert 'not resizable' in str(e)\n"
        "else:\n"
        "    raise AssertionError('eager grew a storage that is not resizable')\n"
        "mode = FakeTensorMode()\n"
        "f = mode.from_tensor(torch.frombuffer(bytearray(8), dtype=torch.float32))\n"
        "assert f.untyped_storage().resizable()\n"
        "with mode:\n"
        "    f.resize_(4)\n"
    ),
))
