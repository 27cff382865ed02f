"""Known differences of MKLDNN (oneDNN) layout tensors (``to_mkldnn()``): the
converter makes them strided, and cannot carry their real values.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from typing import Any

from ...converters import where
from ..core import Case, KnownDifference, UNFILED
from ..facts import family_wide

ENTRIES: list[KnownDifference] = []


def _is_mkldnn(t: Any) -> bool:
    try:
        return bool(t is not None and t.is_mkldnn)
    except Exception:
        return False


def mkldnn_tensor(case: Case) -> bool:
    """The tensor at the mismatch's path is an MKLDNN tensor (the tensor
    under test, its ``.grad``, ...), not the real tensor a fake carries
    (mkldnn-carried-real-strided)."""
    return _is_mkldnn(case.tensor) and not case.path.endswith(".real_tensor")


ENTRIES.append(KnownDifference(
    id="mkldnn-converted-strided",
    check="oracle",
    # The layout, and the dispatch keys that follow from it: the fake carries
    # a dense backend key and its autograd key where the real tensor carries
    # MkldnnCPU and AutogradOther.
    attribute=(r"layout|(MkldnnCPU|AutogradOther|<backend>|Autograd<backend>)"
               r" in torch\._C\._dispatch_keys\(t\)"),
    applies=mkldnn_tensor,
    reason=(
        "MetaConverter.meta_tensor's MKLDNN branch makes the converted tensor with "
        "torch.empty_strided(sizes, strides, device='meta'), so an MKLDNN tensor comes out "
        "with layout torch.strided (is_mkldnn False), the dispatch keys of a dense tensor "
        "(a backend key and its Autograd key, where the real one has MkldnnCPU and "
        "AutogradOther) and a storage it does not have "
        "(meta_utils: 'TODO: This doesn't seem right, where's the MKLDNN'ness'); ops that "
        "depend on the layout (to_dense(), to_mkldnn(), mkldnn kernels) then trace differently "
        "from eager"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/issues/183773",
        "https://github.com/pytorch/pytorch/pull/184551",
        "https://github.com/pytorch/pytorch/pull/185311",
    ),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.ones(2, 3).to_mkldnn()\n"
        "assert x.layout == torch._mkldnn and x.is_mkldnn\n"
        "fake = FakeTensorMode().from_tensor(x)\n"
        "assert fake.layout == torch.strided and not fake.is_mkldnn\n"
        "assert 'MkldnnCPU' in str(torch._C._dispatch_keys(x))\n"
        "assert 'Mkldnn' not in str(torch._C._dispatch_keys(fake))\n"
    ),
))


def mkldnn_carried_real(case: Case) -> bool:
    """The mismatch is on the real tensor carried by the fake of an MKLDNN
    tensor (``….real_tensor``)."""
    return _is_mkldnn(case.tensor) and case.path.endswith(".real_tensor")


ENTRIES.append(KnownDifference(
    id="mkldnn-carried-real-strided",
    check="oracle",
    attribute=r"layout|stride\(\)|storage_offset\(\)",
    applies=mkldnn_carried_real,
    converters=where(carries_real=True),
    reason=(
        "with fake_tensor_propagate_real_tensors, MetaConverter.meta_tensor's MKLDNN branch "
        "allocates the real tensor the fake carries with torch.empty_strided(sizes, strides) "
        "on the CPU: a dense strided tensor, with strides and a storage offset the MKLDNN "
        "original does not have.  Where the copy into it is skipped (an nn.Parameter: "
        "_safe_copy copies only exact torch.Tensors) the conversion succeeds with it; "
        "otherwise the copy raises (mkldnn-real-tensor-copy)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/183773",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._functorch import config\n"
        "x = torch.nn.Parameter(torch.ones(2, 3).to_mkldnn())\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    carried = FakeTensorMode().from_tensor(x).real_tensor\n"
        "assert x.layout == torch._mkldnn\n"
        "assert carried.layout == torch.strided and carried.shape == x.shape\n"
    ),
))


@family_wide
def mkldnn_real_tensor_copied(case: Case) -> bool:
    """Some real tensor converted is an MKLDNN tensor whose values a
    real-tensor-propagating mode copies into a dense one."""
    import torch

    return any(_is_mkldnn(t) and type(t) is torch.Tensor for t in case.conversion.real)


ENTRIES.append(KnownDifference(
    id="mkldnn-real-tensor-copy",
    check="conversion",
    attribute=r"raised",
    applies=mkldnn_real_tensor_copied,
    converters=where(carries_real=True),
    reason=(
        "with fake_tensor_propagate_real_tensors, MetaConverter.meta_tensor's MKLDNN branch "
        "allocates the carried real tensor with torch.empty_strided (dense) and copies the "
        "MKLDNN tensor into it with _safe_copy, which copy_ refuses: 'copy_mkldnn_: between "
        "mkldnn layout and dense Tensors is not implemented' (to_dense() would give the values)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._functorch import config\n"
        "x = torch.ones(2, 3).to_mkldnn()\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    try:\n"
        "        FakeTensorMode().from_tensor(x)\n"
        "    except RuntimeError as e:\n"
        "        assert 'between mkldnn layout and dense Tensors is not implemented' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('converted')\n"
    ),
    raises=r"between mkldnn layout and dense Tensors is not implemented",
))
