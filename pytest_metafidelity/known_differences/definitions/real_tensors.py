"""Known differences of real-tensor propagation (``carries_real`` converters: each fake carries a
copy of its real tensor): copies that raise or crash, values not copied,
conj/neg bits, storages of the carried tensors, refusals that fail.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from typing import Any

from ...converters import where
from ...strategies.tensor_facts import COMPRESSED_LAYOUTS
from ...symbolic import is_symbolic
from ...converter_model import reach, reads_outside, visiting_order
from ..core import Case, KnownDifference, UNFILED
from ..experiments import describe_with_data_fails
from ..facts import (
    family_wide,
    is_functional_tensor,
    is_wrapper,
    layout_name,
    memo,
    needs,
    plain_strided,
    reads_record,
    storage_key,
)

ENTRIES: list[KnownDifference] = []


@family_wide
def any_copy_fails(case: Case) -> bool:
    """MetaConverter's copy of a real tensor's values would raise: copy_ into
    empty_strided(size, stride) for the non-view tensors whose type is
    exactly torch.Tensor (and the tensors inside C++ functional and functorch
    wrappers); clone() of sparse tensors.  Decided by doing the same copy."""
    import torch

    from ...strategies.tensor_facts import is_view
    from ...strategies.tensor_facts import family_of, storage_too_small

    for top in case.conversion.real:
        for t in family_of(top):
            if type(t) is not torch.Tensor or storage_too_small(t) or is_wrapper(t):
                continue  # (torch copies what is inside a wrapper, not the wrapper)
            try:
                # (outside any functorch level, as MetaConverter copies: inside
                # a functionalize level, empty_strided would make a functional
                # tensor, whose copy_ is functionalized)
                with torch.no_grad(), torch._C._DisableFuncTorch():
                    if layout_name(t).startswith("sparse"):
                        t.clone()
                    elif layout_name(t) == "strided" and not is_view(t):
                        dst = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype,
                                                  device=t.device)
                        dst.copy_(t)
            except Exception:
                return True
    return False


ENTRIES.append(KnownDifference(
    id="real-copy-fails",
    check="conversion",
    attribute=r"raised",
    applies=any_copy_fails,
    converters=where(carries_real=True),
    reason=(
        "fake_tensor_propagate_real_tensors copies each real tensor's values with copy_ "
        "into empty_strided(size, stride) (sparse ones with clone), which raises for the "
        "sub-byte integer dtypes (no copy kernel), for overlapping memory (a zero stride: "
        "'more than one element of the written-to tensor refers to a single memory "
        "location'), and for neg/conj bits a dtype has no kernel for (float8 neg, "
        "complex32 conj+neg); copying the storage would not"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/126175",
        "https://github.com/pytorch/pytorch/pull/126281",
    ),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "cases = [\n"
        "    torch.empty(2, dtype=torch.int3),\n"
        "    torch.empty(0).set_(torch.randn(4).untyped_storage(), 0, (4,), (0,)),\n"
        "    torch._neg_view(torch.zeros(3).to(torch.float8_e4m3fnuz)).detach(),\n"
        "]\n"
        "for x in cases:\n"
        "    try:\n"
        "        mode.from_tensor(x)\n"
        "    except (NotImplementedError, RuntimeError):\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(f'converted {x.dtype}')\n"
    ),
    raises=r"^(NotImplementedError|RuntimeError): ",
))


@family_wide
def any_storage_too_small(case: Case) -> bool:
    """Our converters refuse to copy the values of a tensor whose storage is
    smaller than it (torch would segfault): ``crashing_copy`` held for a tensor
    when its turn to be converted came.  A conversion that succeeded passed
    that test for every tensor; reading the tensors again afterwards could
    disagree, because converting syncs C++ functional tensors, which can
    replace the value they wrap with one that reaches further."""
    from ...crash_guards import crashing_copy

    if case.conversion.before is not None:  # the conversion succeeded
        return False
    return any(crashing_copy(t) for t in case.conversion.real)


ENTRIES.append(KnownDifference(
    id="real-zero-byte-storage-segfault",
    check="conversion",
    attribute=r"raised",
    applies=any_storage_too_small,
    converters=where(carries_real=True),
    reason=(
        "fake_tensor_propagate_real_tensors copies the values of a tensor whose storage was "
        "resized below the tensor (resize_(0)): the copy reads past the end of the storage "
        "and the process segfaults; the converter refuses it (ConversionCrash) instead"
    ),
    link="https://github.com/pytorch/pytorch/issues/171676",
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3); x.untyped_storage().resize_(0)\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "mode.from_tensor(x)  # segfault\n"
    ),
    raises=r"^ConversionCrash: copying the real tensor's values",
))


def carried_values_not_copied(case: Case) -> bool:
    """The carried tensor's values differ where MetaConverter does not copy
    them: (a) the tensor (or its view base) is not exactly a torch.Tensor (an
    nn.Parameter, a FunctionalTensor, ...): _safe_copy skips it; (b) the first
    non-view tensor converted on the storage has offset 0, so the carried
    storage holds only that tensor's elements, and the tensor is another
    non-view tensor on it or reads bytes those elements do not occupy (an
    as_strided view of it)."""
    import torch

    from ...strategies.tensor_facts import base_of, is_view
    from ...checks.oracle import carried_values_differ

    t = case.tensor
    if t is None or not plain_strided(t) or t.numel() == 0:
        return False
    root = base_of(t) if is_view(t) else t
    not_copied = type(root) is not torch.Tensor
    if not not_copied:
        key = storage_key(t)
        first = next((u for u in visiting_order(case.conversion)
                      if plain_strided(u) and not is_view(u) and storage_key(u) == key), None)
        not_copied = first is not None and first.storage_offset() == 0 and (
            first is not root or reads_outside(t, first))
    if not not_copied:
        return False
    carried = case.conversion.tensor_at(
        case.path.removesuffix(".real_tensor") + ".real_tensor", fake=True)
    return carried is not None and carried_values_differ(t, carried)


ENTRIES.append(KnownDifference(
    id="real-values-not-copied",
    check="oracle",
    attribute=r"values",
    applies=carried_values_not_copied,
    converters=where(carries_real=True),
    reason=(
        "the carried real tensor holds uninitialized memory where MetaConverter does not "
        "copy: _safe_copy does nothing unless type(src) is exactly torch.Tensor (an "
        "nn.Parameter, a FunctionalTensor, ...); and a storage's carried copy is made for "
        "the first tensor converted on it (empty_strided + copy_ of that tensor's "
        "elements), so a set_ alias converted later, or an as_strided view reading "
        "between that tensor's elements, reads uninitialized bytes (order-dependent)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126175",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "p = torch.nn.Parameter(torch.full((64,), 7.25))\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "assert not torch.equal(mode.from_tensor(p).real_tensor, p.detach())\n"
        "x = torch.full((7,), 7.25)\n"
        "every_other = torch.empty(0).set_(x.untyped_storage(), 0, (4,), (2,))\n"
        "first = mode.from_tensor(every_other)\n"
        "assert not torch.equal(mode.from_tensor(x).real_tensor, x)\n"
        "y = torch.arange(7.) + 0.5\n"
        "base = torch.empty(0).set_(y.untyped_storage(), 0, (4,), (2,))\n"
        "between = base.as_strided((7,), (1,), 0)  # a view reading between base's elements\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "assert not torch.equal(mode.from_tensor(between).real_tensor, between)\n"
    ),
))


def _elements_leave_storage_bytes(t: Any) -> bool:
    """Some byte of ``t``'s storage is not one of its elements."""
    nbytes = t.untyped_storage().nbytes()
    if t.numel() == 0:
        return nbytes > 0
    return not (t.is_contiguous() and t.storage_offset() == 0
                and t.numel() * t.element_size() == nbytes)


def _restrided_past_carried_copy(case: Case) -> bool:
    """A step re-strided a tensor (as_strided_, set_, resize_) whose elements leave
    bytes of its storage out, and its carried real tensor's values then
    differ: the carried storage holds only the elements copied at conversion
    (real-values-not-copied), and the new strides read the rest."""
    import re

    for d in getattr(case.conversion, "behaviour_differences", ()):
        if d.attribute != "values" or not d.path.endswith(".real_tensor"):
            continue
        if re.search(r"\.(as_strided_|set_|resize_)\(", d.source) is None:
            continue
        t = case.conversion.tensor_at(d.path.split(".")[0])
        if t is not None and plain_strided(t) and _elements_leave_storage_bytes(t):
            return True
    return False


ENTRIES.append(KnownDifference(
    id="behaviour-restrided-past-carried-copy",
    check="behaviour",
    attribute=r"values",
    applies=reads_record("behaviour_differences")(family_wide(_restrided_past_carried_copy)),
    converters=where(carries_real=True),
    reason=(
        "real-values-not-copied met by a program: the carried real tensor's storage holds "
        "only the elements copied at conversion (empty_strided + copy_ of the first tensor "
        "converted on the storage), so after as_strided_ (or set_, or a resize_ that stays "
        "within the storage) onto bytes between or "
        "past those elements, the carried tensor reads uninitialized memory where eager "
        "reads the storage's bytes"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126175",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.arange(3.) + 0.5\n"
        "t = torch.empty(0).set_(x.untyped_storage(), 0, (2,), (2,))  # elements 0 and 2\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(t)\n"
        "t.as_strided_((2,), (1,), 0)\n"
        "with mode:\n"
        "    f.as_strided_((2,), (1,), 0)\n"
        "assert t.tolist() == [0.5, 1.5] and f.real_tensor.tolist() != [0.5, 1.5]\n"
    ),
))


def _carried_grad_at_offset_zero(case: Case) -> bool:
    """After a backward, the carried real tensor of a base's .grad is at
    storage offset 0 where eager's gradient is not, in a family holding a
    tensor requiring grad at a storage offset (the base)."""
    import torch

    if not any(isinstance(t, torch.Tensor) and t.requires_grad and plain_strided(t)
               and t.storage_offset() > 0 for t in case.family):
        return False
    return any(d.attribute == "storage_offset()" and d.path.endswith(".grad.real_tensor")
               and "backward" in d.source and d.fake == "0" and d.real != "0"
               for d in getattr(case.conversion, "behaviour_differences", ()))


ENTRIES.append(KnownDifference(
    id="behaviour-carried-grad-of-fake-as-strided-backward",
    check="behaviour",
    attribute=r"storage_offset\(\)",
    applies=reads_record("behaviour_differences")(family_wide(_carried_grad_at_offset_zero)),
    converters=where(carries_real=True),
    reason=(
        "op:fake-as-strided-backward-grad-offset seen on the carried real tensor: a base's "
        "gradient through an as_strided view is made by FakeTensorMode at storage offset 0, "
        "and its carried real tensor, made alongside, too; eager's is at the base's "
        "offset.  No control shows it: a tensor set_() onto a storage at an offset cannot "
        "be made under a mode that propagates real tensors (the storage is a meta one)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def backward(t1):\n"
        "    with torch.no_grad():\n"
        "        t1.as_strided_((1,), (1,), 0)\n"
        "    t1.sum().abs().backward()\n"
        "t0 = torch.empty(0).set_(torch.zeros(2).untyped_storage(), 1, (), ()).requires_grad_()\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(t0[...])\n"
        "backward(t0[...])\n"
        "with mode:\n"
        "    backward(f)\n"
        "assert t0.grad.storage_offset() == 1\n"
        "assert f._base.grad.storage_offset() == 0 == f._base.grad.real_tensor.storage_offset()\n"
    ),
))


def _carried_view_replay_out_of_bounds(case: Case) -> bool:
    """The behaviour check could not read a view's is_leaf on the fake side
    (its reading raised) where eager read it, and the family has a view."""
    from ...strategies.tensor_facts import is_view

    return any(d.attribute == "is_leaf" and d.fake == "None" and d.real in ("True", "False")
               for d in getattr(case.conversion, "behaviour_differences", ())
               ) and any(is_view(u) for u in case.family)


ENTRIES.append(KnownDifference(
    id="behaviour-carried-view-replay-checks-storage-bounds",
    check="behaviour",
    attribute=r"is_leaf",
    applies=reads_record("behaviour_differences")(family_wide(_carried_view_replay_out_of_bounds)),
    converters=where(carries_real=True),
    reason=(
        "a view whose base changed in place regenerates its autograd history when its "
        "is_leaf is read, by replaying the view on the base; a converted view is one "
        "as_strided of its base, and with real-tensor propagation the replay runs "
        "as_strided on the carried real tensor too, which checks the storage's bounds: "
        "after the base's storage was emptied (set_()) the fake's reading raises "
        "'setStorage: ... out of bounds for storage of size 0', where eager's regeneration "
        "(and a control made under the mode, replaying the view's own select) reads it"
    ),
    link=UNFILED,
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def tensors():\n"
        "    t0, t1 = torch.zeros(1, 1, 1), torch.zeros(2, 1, 1, 1)\n"
        "    t0.grad = t1[0]\n"
        "    return t0, t1\n"
        "def program(t0, t1):\n"
        "    t1.set_()\n"
        "    t1.unsqueeze_(0)\n"
        "    t1.requires_grad_(True)\n"
        "    return t0.grad.is_leaf\n"
        "assert program(*tensors()) is False\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "t0, t1 = tensors()\n"
        "f0, f1 = mode.from_tensor(t0), mode.from_tensor(t1)\n"
        "with mode:\n"
        "    try:\n"
        "        program(f0, f1)\n"
        "    except RuntimeError as e:\n"
        "        assert 'out of bounds for storage' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('the fake read is_leaf')\n"
    ),
))


def carries_conj_neg(case: Case) -> bool:
    t = case.tensor
    return t is not None and plain_strided(t) and bool(t.is_conj() or t.is_neg())


ENTRIES.append(KnownDifference(
    id="real-conj-neg-bits",
    check="oracle",
    attribute=r"is_conj\(\)|is_neg\(\)",
    applies=carries_conj_neg,
    converters=where(carries_real=True),
    reason=(
        "MetaConverter sets the conj/neg bits on the fake (torch._C._set_conj/_set_neg) but "
        "not on the real tensor it carries, which holds the unconjugated / un-negated "
        "values: real-tensor propagation computes with the wrong values"
    ),
    link=UNFILED,
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3, dtype=torch.complex64).conj()\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(x)\n"
        "assert f.is_conj() and not f.real_tensor.is_conj()\n"
    ),
))


@family_wide
@needs("sparse")
def any_compressed_non_leaf(case: Case) -> bool:
    return any(layout_name(t) in COMPRESSED_LAYOUTS
               and t.requires_grad and not t.is_leaf for t in case.family)


ENTRIES.append(KnownDifference(
    id="real-compressed-non-leaf",
    check="conversion",
    attribute=r"raised",
    applies=any_compressed_non_leaf,
    converters=where(carries_real=True),
    reason=(
        "a sparse compressed (CSR/CSC/BSR/BSC) non-leaf gets its autograd history from "
        "DelayedError, which under real-tensor propagation compares strides of the fake "
        "and real outputs: 'RuntimeError: Sparse CSR tensors do not have strides'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/192091",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(2, 3).to_sparse_csr().requires_grad_().clone()\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "try:\n"
        "    mode.from_tensor(x)\n"
        "except RuntimeError as e:\n"
        "    assert 'do not have strides' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"do not have strides",
))


def carried_zero_bytes_regrown(case: Case) -> bool:
    """A zero-byte storage (its tensor not copied, so no crash): the carried
    real tensor is a fresh empty_strided one, with bytes."""
    t = case.tensor
    if not case.path.endswith(".real_tensor") or not plain_strided(t):
        return False
    if t.untyped_storage().nbytes() != 0:
        return False
    carried = case.conversion.tensor_at(case.path, fake=True)
    return carried is not None and carried.untyped_storage().nbytes() != 0


ENTRIES.append(KnownDifference(
    id="real-zero-byte-storage-regrown",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=carried_zero_bytes_regrown,
    converters=where(carries_real=True),
    reason=(
        "MetaConverter resizes a fake's storage to zero bytes when the real one has zero "
        "bytes, but not the storage of the real tensor the fake carries (made with "
        "empty_strided): where the values are not copied (an nn.Parameter) the carried "
        "tensor has bytes the original has not"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/184996",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3); x.untyped_storage().resize_(0)\n"
        "p = torch.nn.Parameter(x)\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(p)\n"
        "assert f.untyped_storage().nbytes() == 0\n"
        "assert f.real_tensor.untyped_storage().nbytes() == 12\n"
    ),
))


@family_wide
def any_functional_tensor_set_storage(case: Case) -> bool:
    """A (Python) FunctionalTensor that MetaConverter installs with set_ on a
    storage it has not converted yet -- a non-view with a storage offset,
    the first tensor converted on its storage (in MetaConverter's visiting
    order), its storage not empty: meta_storage then clones the storage's
    data for the carried real tensor -- which raises, except on the meta
    device, whose storages copy without that check.  (A later tensor on a
    converted storage reuses it; a view is made from its base.)"""
    from ...strategies.tensor_facts import is_view

    converted: set[Any] = set()
    for u in visiting_order(case.conversion):
        if layout_name(u) != "strided" or type(u).__name__ == "FakeTensor":
            continue
        try:
            key = storage_key(u)
        except Exception:
            continue
        if (is_functional_tensor(u) and not is_view(u) and key not in converted
                and u.storage_offset() != 0 and u.untyped_storage().nbytes() != 0
                and not u.is_meta):
            return True  # (cloning a zero-byte storage copies nothing: no error)
        converted.add(key)
    return False


ENTRIES.append(KnownDifference(
    id="real-functional-tensor-storage-clone",
    check="conversion",
    attribute=r"raised",
    applies=any_functional_tensor_set_storage,
    converters=where(carries_real=True),
    reason=(
        "a Python FunctionalTensor converted through MetaConverter's set_ path (a storage "
        "offset, or a shared storage) has its wrapper storage cloned for the carried real "
        "tensor: 'RuntimeError: Attempted to call copy_() on an invalid python storage' "
        "(not on the meta device, whose storages copy without that check)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126175",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "x = torch.empty(0).set_(torch.randn(8).untyped_storage(), 2, (3,), (1,))\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "with FunctionalTensorMode():\n"
        "    ft = FunctionalTensor.to_functional(x)\n"
        "    try:\n"
        "        mode.from_tensor(ft)\n"
        "    except RuntimeError as e:\n"
        "        assert 'invalid python storage' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('converted')\n"
    ),
    raises=r"invalid python storage",
))


@family_wide
def reaches_past_first_tensor(case: Case) -> bool:
    """A tensor reaches past the storage of the first non-view tensor on its
    storage, which was allocated at offset 0 with that tensor's reach: the
    carried real tensors' storage is too small for it."""
    from ...strategies.tensor_facts import is_view

    conversion = case.conversion
    first: dict[Any, Any] = {}
    for u in visiting_order(conversion):
        # Meta tensors carry no real storage to be too small.
        if not plain_strided(u) or u.device.type == "meta" or u.untyped_storage().nbytes() == 0:
            continue
        key = storage_key(u)
        if key not in first:
            if is_view(u):
                first[key] = None
                continue
            first[key] = u
            continue
        owner = first[key]
        if owner is not None and owner.storage_offset() == 0 and reach(u) > reach(owner):
            return True
    return False


ENTRIES.append(KnownDifference(
    id="real-storage-too-small-for-alias",
    check="conversion",
    attribute=r"raised",
    applies=reaches_past_first_tensor,
    converters=where(carries_real=True),
    reason=(
        "the carried real storage is allocated for the first non-view tensor converted on "
        "a storage (its reach, at offset 0); converting afterwards a view or set_ alias that "
        "reaches further makes real_tensor.set_/as_strided fail: 'RuntimeError: setStorage: "
        "... out of bounds for storage of size N'.  Depends on the conversion order"
    ),
    link="https://github.com/pytorch/pytorch/pull/185014",
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(10)\n"
        "y = torch.empty(0).set_(x.untyped_storage(), 0, (2,), (1,))\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "fy = mode.from_tensor(y)  # keep it alive: the memo is weak\n"
        "try:\n"
        "    mode.from_tensor(x)\n"
        "except RuntimeError as e:\n"
        "    assert 'out of bounds' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"out of bounds for storage",
))


def meta_carried_storage_short_of_reach(case: Case) -> bool:
    """On the meta device, the fake at this path has a storage too small for
    what the real tensors on its storage reach (which the real storage holds):
    the carried storage was allocated for the first tensor converted on it,
    as in real-storage-too-small-for-alias, but meta's set_/as_strided check
    no bounds, so the short storage stays instead of raising."""
    t = case.tensor
    if not plain_strided(t) or t.device.type != "meta":
        return False
    fake = case.conversion.tensor_at(case.path, fake=True)
    if fake is None or fake.layout != t.layout:
        return False
    fake_nbytes = fake.untyped_storage().nbytes()
    if is_symbolic(fake_nbytes):
        # The storage check compares no symbolic size but zero (a carried
        # tensor's size is static: read at ``….real_tensor``).
        return False
    from ...strategies.tensor_facts import base_of, functional_value

    key = storage_key(t)
    # (the values of C++ functional tensors, at ``….unwrapped``, and their
    # bases are not in the family: what they reach counts too)
    values = [functional_value(u) for u in case.family]
    on_storage = [*case.family, *values, *(base_of(v) for v in values if v is not None)]
    needed = max((reach(u) for u in on_storage
                  if u is not None and plain_strided(u) and storage_key(u) == key), default=0)
    return fake_nbytes < needed <= t.untyped_storage().nbytes()


ENTRIES.append(KnownDifference(
    id="real-meta-storage-short-of-alias",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=meta_carried_storage_short_of_reach,
    converters=where(carries_real=True),
    reason=(
        "real-storage-too-small-for-alias on the meta device: the carried real storage is "
        "allocated for the first tensor converted on a storage (here a set_ alias with no "
        "elements, so zero bytes); a view converted afterwards reaches further, and since "
        "meta tensors check no storage bounds, the fake and its carried tensor keep a storage "
        "smaller than what their tensors reach"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/185014",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "s = torch.zeros(3, device='meta').untyped_storage()\n"
        "t = torch.empty(0, device='meta').set_(s, 0, (0,), (1,)).as_strided((), (), 2)\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(t)\n"
        "assert t.untyped_storage().nbytes() == 12\n"
        "assert f.untyped_storage().nbytes() == 0\n"
        "assert f.real_tensor.untyped_storage().nbytes() == 0\n"
    ),
))


@family_wide
@needs("subclass")
def any_wrapper_subclass(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(is_traceable_wrapper_subclass(t) for t in case.family)


ENTRIES.append(KnownDifference(
    id="real-wrapper-subclass",
    check="conversion",
    attribute=r"raised",
    applies=any_wrapper_subclass,
    converters=where(carries_real=True),
    reason=(
        "with fake_tensor_propagate_real_tensors, MetaConverter.meta_tensor asserts that "
        "the tensor it made for a non-view tensor is a FakeTensor before attaching the "
        "real storage; for a traceable wrapper subclass it is the subclass: "
        "'AssertionError: Expected r to be a FakeTensor'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126281",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "try:\n"
        "    mode.from_tensor(TwoTensor(torch.randn(2), torch.randn(2)))\n"
        "except AssertionError as e:\n"
        "    assert 'Expected r to be a FakeTensor' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"Expected r to be a FakeTensor",
))


@needs("sparse")
def sparse_metadata_from_elements(case: Case) -> bool:
    """Queries whose result depends on nnz: _indices() of COO, values() of
    BSR/BSC (the block size)."""
    t = case.tensor
    if t is None or not layout_name(t).startswith("sparse") or int(t._nnz()) == 0:
        return False
    # A meta COO tensor's _indices() do not disagree (no elements are read).
    layouts = ("sparse_bsr", "sparse_bsc") if t.device.type == "meta" else (
        "sparse_coo", "sparse_bsr", "sparse_bsc")
    return layout_name(t) in layouts


ENTRIES.append(KnownDifference(
    id="real-sparse-nnz-metadata",
    check="sparse",
    attribute=r"index dtype|blocksize",
    applies=sparse_metadata_from_elements,
    converters=where(carries_real=True),
    reason=(
        "a fake sparse tensor has nnz 0 (sparse-nnz) but carries a real tensor with its "
        "elements: querying what depends on nnz (_nnz(), a COO's _indices(), a BSR/BSC's "
        "values()) under real-tensor propagation raises MetadataMismatchError (fake nnz 0 "
        "vs real nnz)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/113589",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(torch.eye(3).to_sparse())\n"
        "try:\n"
        "    f._indices()\n"
        "except Exception as e:\n"
        "    assert type(e).__name__ == 'MetadataMismatchError'\n"
        "else:\n"
        "    raise AssertionError('no mismatch')\n"
    ),
))


@family_wide
@needs("functorch")
def real_functorch_view_refusal_fails(case: Case) -> bool:
    """A functorch-wrapped view -- MetaConverter refuses it with Dynamo's
    unimplemented(context=str(t)) -- whose description, with the real data
    that real-tensor propagation puts in it, cannot be printed (the values
    of a sub-byte or bits dtype cannot be read)."""
    from ...strategies.tensor_facts import functorch_unwrapped, is_view
    from ...strategies.torch_errors import safe

    return any(
        functorch_unwrapped(t) is not None and is_view(t)
        and memo(case, ("refusal-str", id(t)),
                  lambda: safe(lambda: describe_with_data_fails(t), False))
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="real-functorch-view-refusal-str",
    check="conversion",
    attribute=r"raised",
    applies=real_functorch_view_refusal_fails,
    converters=where(carries_real=True),
    reason=(
        "MetaConverter refuses a view of a functorch wrapper with Dynamo's "
        "unimplemented(..., context=str(t)), t the tensor's MetaTensorDesc; with "
        "real-tensor propagation the description holds the real tensor (data=), and printing "
        "it reads its values, which raises for dtypes without a scalar read (sub-byte "
        "integers, bits, float4_e2m1fn_x2: '\"_local_scalar_dense_cpu\" not implemented'): "
        "the documented refusal becomes an error"
    ),
    link=UNFILED,
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._functorch.eager_transforms import grad_increment_nesting\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.empty((), dtype=torch.float4_e2m1fn_x2)\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "with grad_increment_nesting() as level:\n"
        "    v = torch._C._functorch._wrap_for_grad(x, level)[...]\n"
        "    try:\n"
        "        mode.from_tensor(v)\n"
        "    except NotImplementedError as e:\n"
        "        assert '_local_scalar_dense_cpu' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('converted')\n"
    ),
    raises=r"^(NotImplementedError|RuntimeError): ",
))
