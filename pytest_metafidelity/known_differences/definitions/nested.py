"""Known differences of nested tensors: strided (NST) and jagged (NJT).

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...converters import where
from ..core import Case, KnownDifference, UNFILED
from ..facts import family_wide, needs

ENTRIES: list[KnownDifference] = []


@family_wide
@needs("subclass")
def any_jagged_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and is_traceable_wrapper_subclass(t)
               for t in case.family)


ENTRIES.append(KnownDifference(
    id="jagged-nested-needs-shape-env",
    check="conversion",
    attribute=r"raised",
    applies=any_jagged_nested,
    converters=where(symbolic=False),
    reason=(
        "converting a jagged nested tensor makes a symbolic nested int for its offsets, "
        "which needs a FakeTensorMode with a ShapeEnv: a static mode raises "
        "'AssertionError: self.shape_env must not be None', the meta converter "
        "'AssertionError: Expected r to be a FakeTensor for nested int'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/132414",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "nt = torch.nested.nested_tensor_from_jagged(torch.randn(5, 2), torch.tensor([0, 2, 5]))\n"
        "try:\n"
        "    FakeTensorMode().from_tensor(nt)\n"
        "except AssertionError as e:\n"
        "    assert 'shape_env must not be None' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"shape_env must not be None|Expected r to be a FakeTensor for nested int",
))


@family_wide
@needs("nested")
def any_strided_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and not is_traceable_wrapper_subclass(t)
               for t in case.family)


ENTRIES.append(KnownDifference(
    id="strided-nested-describe-crash",
    check="conversion",
    attribute=r"raised",
    applies=any_strided_nested,
    reason=(
        "MetaConverter refuses strided (non-jagged) nested tensors with Dynamo's "
        "unimplemented ('attempted to apply meta conversion to strided nested tensor'), but "
        "MetaTensorDescriber.describe_tensor calls t.size() first, which raises "
        "'RuntimeError: Internal error: NestedTensorImpl doesn't support sizes': the "
        "documented refusal is unreachable"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/issues/134873",
        "https://github.com/pytorch/pytorch/issues/126025",
    ),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "nt = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])\n"
        "try:\n"
        "    FakeTensorMode().from_tensor(nt)\n"
        "except RuntimeError as e:\n"
        "    assert \"doesn't support sizes\" in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"doesn't support sizes",
))
