"""Operator differences: where an operator acts differently on fake or meta
tensors than on real ones, whether or not they were converted.

The ``behaviour`` check runs a program on the real tensors and on their
converted counterparts; when a step differs, it replays the program on a
*control* (the same tensors made directly under a ``FakeTensorMode``, or on
the meta device), never converted.  When the control differs the same way,
the difference belongs to the operator (its meta kernel or fake impl), not
to the conversion, and is judged against this registry, not counted against
the converter:

* a registered, active entry (torch version in ``[since, until)``, its
  converters) whose ``statement`` pattern matches the step (``re.search``
  on the step's statement) and whose ``attribute`` pattern matches every
  attribute that differs (``re.fullmatch``) explains it: the check reports
  ``op-difference <id>``, a known difference (entry ``op:<id>`` of
  :mod:`.registry`);
* an unregistered one fails as ``op-difference: <attribute>``, so that it
  is looked at and registered here.

Each entry carries a minimal reproducer on plain (unconverted) fake or meta
tensors, which the project's tests run.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Sequence

from . import UNFILED


@dataclasses.dataclass(frozen=True)
class OpDifference:
    id: str
    statement: str  # regular expression searched for in the step's statement
    attribute: str  # regular expression, full match against every differing attribute
    reason: str
    link: str  # the upstream issue, BY_DESIGN or UNFILED
    converters: tuple[str, ...] | None = None  # None: every converter
    since: str | None = None
    until: str | None = None
    reproducer: str = ""
    # Optional: holds for the step's mismatches (``real``/``fake`` sides).
    applies: Callable[[Sequence[Any]], bool] | None = None

    def active(self, converter: str, version: Any = None) -> bool:
        from . import version_in_range

        if self.converters is not None and converter not in self.converters:
            return False
        return version_in_range(version, self.since, self.until)

    def explains(self, statement: str, mismatches: Sequence[Any]) -> bool:
        if re.search(self.statement, statement) is None:
            return False
        if not all(re.fullmatch(self.attribute, m.attribute) for m in mismatches):
            return False
        if self.applies is not None:
            try:
                return bool(self.applies(mismatches))
            except Exception:
                return False
        return True


def _raised(pattern: str, side: str = "fake") -> Callable[[Sequence[Any]], bool]:
    """The step's ``raised`` mismatches show ``pattern`` on ``side``."""
    def applies(mismatches: Sequence[Any]) -> bool:
        return all(re.search(pattern, str(getattr(m, side))) for m in mismatches
                   if m.attribute == "raised")
    return applies


# Statements of the view ops of the program vocabulary.
VIEW_STATEMENT = (r"= .*(\.(detach|t|transpose|unsqueeze|select|view|reshape|expand|as_strided|"
                  r"conj|real|imag)\(|\[|\.(real|imag)$|torch\.(ops\.aten\.alias|_neg_view|"
                  r"view_as_real|view_as_complex)\()")

OP_DIFFERENCES: list[OpDifference] = [
    OpDifference(
        id="view-unchecked-storage-bounds",
        statement=VIEW_STATEMENT,
        attribute="raised",
        applies=_raised("out of bounds for storage", side="real"),
        reason=(
            "eager view ops check that the view fits in the storage (setStorage: '... out of "
            "bounds for storage of size N'); their meta kernels and fake impls do not, so a view "
            "of a tensor whose storage was shrunk (untyped_storage().resize_(0)) succeeds on "
            "meta and fake tensors, converted or not"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "x = torch.zeros(()); x.untyped_storage().resize_(0)\n"
            "try:\n"
            "    x.expand(2)\n"
            "except RuntimeError as e:\n"
            "    assert 'out of bounds for storage' in str(e)\n"
            "m = torch.zeros((), device='meta'); m.untyped_storage().resize_(0)\n"
            "assert m.expand(2).shape == (2,)\n"
        ),
    ),
    OpDifference(
        id="fake-view-zero-element-strides",
        statement=r"\.view\(",
        attribute=r"stride\(\)",
        converters=("fake", "fake-dynamic", "fake-real", "fake-real-dynamic", "refake",
                    "refake-fresh", "functional"),
        reason=(
            "FakeTensorMode's view of a tensor with no elements returns contiguous strides, "
            "where eager (and the meta kernel) keep the input's strides"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "assert torch.empty_strided((0,), (4,)).view(-1).stride() == (4,)\n"
            "with FakeTensorMode():\n"
            "    assert torch.empty_strided((0,), (4,)).view(-1).stride() == (1,)\n"
        ),
    ),
]


def registry() -> list[OpDifference]:
    return list(OP_DIFFERENCES)


def match_op_difference(conv: Any, step: Any, mismatches: Sequence[Any]) -> OpDifference | None:
    """The active entry explaining the step's differences, or None."""
    name = getattr(conv.converter, "name", "?")
    for entry in OP_DIFFERENCES:
        if entry.active(name) and entry.explains(step.statement, mismatches):
            return entry
    return None
