"""Known differences of zero tensors (``torch._efficientzerotensor``, the
ZeroTensor dispatch key autograd gives undefined gradients): the converter
makes an ordinary tensor.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...strategies import tensor_facts
from ..core import Case, KnownDifference, UNFILED

ENTRIES: list[KnownDifference] = []


def is_zero_tensor(case: Case) -> bool:
    return case.tensor is not None and tensor_facts.is_zero_tensor(case.tensor)


ENTRIES.append(KnownDifference(
    id="zero-tensor-key-lost",
    check="oracle",
    attribute=r"ZeroTensor in torch\._C\._dispatch_keys\(t\)",
    applies=is_zero_tensor,
    reason=(
        "MetaConverter describes a tensor without its ZeroTensor key (MetaTensorDesc has no "
        "field for it) and builds an ordinary tensor: the fake of a zero tensor is not one, "
        "so an in-place op that raises on the real tensor ('ZeroTensors are immutable') "
        "succeeds on the fake"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "z = torch._efficientzerotensor(3)\n"
        "assert z._is_zerotensor()\n"
        "assert not FakeTensorMode().from_tensor(z)._is_zerotensor()\n"
    ),
))
