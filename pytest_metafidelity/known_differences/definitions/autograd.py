"""Known differences of autograd metadata: grad_dtype, gradients of another dtype, retains_grad.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...converters import where
from ..core import BY_DESIGN, Case, KnownDifference, UNFILED
from ..facts import family_wide

ENTRIES: list[KnownDifference] = []


def custom_grad_dtype(case: Case) -> bool:
    t = case.tensor
    return (t is not None and t.requires_grad and t.is_leaf
            and getattr(t, "grad_dtype", t.dtype) != t.dtype)


ENTRIES.append(KnownDifference(
    id="meta-grad-dtype",
    check="autograd",
    attribute=r"grad_dtype",
    applies=custom_grad_dtype,
    converters=where(fake_tensors=False),
    reason=(
        "grad_dtype is propagated by FakeTensorConverter.from_real_tensor, not by "
        "MetaConverter ('meta tensors don't carry autograd metadata'), so plain meta "
        "conversion keeps the default grad_dtype"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.meta_utils import MetaConverter\n"
        "x = torch.randn(3, requires_grad=True); x.grad_dtype = torch.float64\n"
        "assert MetaConverter()(x).grad_dtype == torch.float32\n"
    ),
))


ENTRIES.append(KnownDifference(
    id="fake-grad-dtype-dropped",
    check="autograd",
    attribute=r"grad_dtype",
    applies=custom_grad_dtype,
    converters=where(fake_tensors=True, functional=False),
    until="2.13",
    reason=(
        "before torch 2.13, FakeTensorConverter.from_real_tensor does not copy "
        "grad_dtype: the fake of a leaf whose gradients are kept in another dtype has the "
        "default grad_dtype (its own dtype), so traced backward casts the gradient back; "
        "fixed in 2.13 by the linked pull request"
    ),
    link="https://github.com/pytorch/pytorch/pull/180403",
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3, requires_grad=True); x.grad_dtype = torch.float64\n"
        "assert FakeTensorMode().from_tensor(x).grad_dtype == torch.float32\n"
    ),
))


@family_wide
def any_grad_of_another_dtype(case: Case) -> bool:
    from ...strategies.tensor_facts import grad_of

    for t in case.family:
        g = grad_of(t)
        if g is not None and g.dtype != t.dtype:
            return True
    return False


ENTRIES.append(KnownDifference(
    id="grad-of-another-dtype",
    check="conversion",
    attribute=r"raised",
    applies=any_grad_of_another_dtype,
    reason=(
        "a leaf whose .grad has another dtype (allowed by grad_dtype) cannot be converted: "
        "MetaConverter assigns the converted grad before (fake) or without (meta) "
        "carrying grad_dtype over: 'RuntimeError: attempting to assign a gradient with "
        "dtype ... to a tensor with grad_dtype ...'"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/197381",
        "https://github.com/pytorch/pytorch/pull/180403",
    ),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3, dtype=torch.float64, requires_grad=True)\n"
        "x.grad_dtype = None\n"
        "x.grad = torch.randn(3)\n"
        "try:\n"
        "    FakeTensorMode().from_tensor(x)\n"
        "except RuntimeError as e:\n"
        "    assert 'attempting to assign a gradient' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"attempting to assign a gradient",
))


def retains_grad(case: Case) -> bool:
    t = case.tensor
    return t is not None and not t.is_leaf and bool(t.retains_grad)


ENTRIES.append(KnownDifference(
    id="retains-grad",
    check="autograd",
    attribute=r"retains_grad",
    applies=retains_grad,
    reason="no converter carries retains_grad over: a non-leaf that retains its grad "
           "converts to one that does not",
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "y = torch.randn(3, requires_grad=True) * 2; y.retain_grad()\n"
        "assert not FakeTensorMode().from_tensor(y).retains_grad\n"
    ),
))
