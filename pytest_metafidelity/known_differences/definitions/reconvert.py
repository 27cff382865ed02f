"""Known differences of the ``reconvert`` check: a tensor changed in place
after its first conversion and converted again by the same converter.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from typing import Any

from ..core import BY_DESIGN, Case, KnownDifference
from ..facts import reads_record

ENTRIES: list[KnownDifference] = []

# The changes the check applies (``checks.reconvert.CHANGES``): every one
# changes what the oracle reads of the tensor without giving it a new
# identity.
_MEMOIZED_CHANGES = ("t_()", "resize_", "set_", "as_strided_", "requires_grad_", "detach_",
                     ".grad =")


def _records_for(case: Case) -> list[Any]:
    head = case.path.split(".")[0]
    return [r for r in getattr(case.conversion, "reconvert_records", ())
            if r.path == head]


@reads_record("reconvert_records")
def memo_hands_back_stale_fake(case: Case) -> bool:
    """The second conversion of the changed tensor handed back the very
    object of the first conversion, that object reads exactly as it did
    before the change (nothing of the change reached it), and the change
    altered something of the real tensor's reading that matched the first
    converted tensor (so the stale object now differs there)."""
    return any(r.change in _MEMOIZED_CHANGES and r.same_object and r.stale and bool(r.changed)
               for r in _records_for(case))


ENTRIES.append(KnownDifference(
    id="reconvert-memo-keyed-by-identity",
    check="reconvert",
    attribute=r".+ after (" + "|".join(
        c.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.") for c in _MEMOIZED_CHANGES)
    + ")",
    applies=memo_hands_back_stale_fake,
    reason=(
        "the converter's memo is keyed by the real tensor's identity "
        "(MetaTensorDescriber.lookup_tensor, a WeakIdKeyDictionary, then "
        "MetaConverter.tensor_memo; FakeTensorConverter._get_memo reads the same memo) and "
        "is never invalidated: converting a tensor again after an in-place change of its "
        "metadata (t_, resize_, set_, as_strided_) or autograd state (requires_grad_, "
        "detach_, .grad =) hands back the fake made before the change.  By design: a "
        "FakeTensorMode lives for one trace, during which Dynamo never runs user code on "
        "the real inputs; a change between calls fails Dynamo's tensor guards (sizes, "
        "strides, requires_grad, dispatch keys), and the recompile converts with a fresh "
        "FakeTensorMode.  (Only the symbolic memos -- item_memo, nested ints -- are "
        "invalidated, by the version counter, which a metadata change does not bump)"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "mode = FakeTensorMode()\n"
        "t = torch.zeros(2, 3)\n"
        "first = mode.from_tensor(t)\n"
        "t.t_()\n"
        "again = mode.from_tensor(t)\n"
        "assert again is first and t.shape == (3, 2) and again.shape == (2, 3)\n"
    ),
))
