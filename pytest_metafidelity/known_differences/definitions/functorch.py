"""Known differences of functorch wrappers (BatchedTensor, GradTrackingTensor): the tensor inside
is rebuilt without its autograd metadata, offset, storage or view-ness; and of functional
tensors of a ``torch.func.functionalize`` level.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from typing import Any

from ...converters import where
from ...converter_model import reach
from ..core import BY_DESIGN, Case, KnownDifference, UNFILED
from ..facts import family_wide, needs, plain_strided
from ...symbolic import has_symbolic, is_symbolic

ENTRIES: list[KnownDifference] = []


def _inside_vmap_or_grad(case: Case) -> bool:
    """Some tensor of the family is a vmap or grad wrapper, whose inside
    ``_to_fake_tensor`` rebuilds (a functional tensor of a ``functionalize``
    level is converted through ``meta_tensor``: none of these entries)."""
    from ...strategies.tensor_facts import is_escaped_grad_wrapper, is_vmap_or_grad_wrapper

    if ".unwrapped" in case.path and case.conversion is not None:
        # An escaped grad wrapper converts to the rebuilt tensor inside it, unwrapped
        # (functorch-escaped-grad-unwrapped): no converted tensor is inside it.
        wrapper = case.conversion.tensor_at(case.path.split(".unwrapped")[0])
        if wrapper is not None and is_escaped_grad_wrapper(wrapper):
            return False
    return any(is_vmap_or_grad_wrapper(t) for t in case.family)


@needs("functorch")
def functorch_inner_requires_grad(case: Case) -> bool:
    """The tensor inside functorch wrappers requires grad: MetaConverter's
    _to_fake_tensor rebuilds it with empty_strided, without requires_grad
    (and so without its autograd history)."""
    from ...strategies.tensor_facts import functorch_unwrapped

    t = case.tensor
    return (t is not None and ".unwrapped" in case.path and functorch_unwrapped(t) is None
            and bool(t.requires_grad) and _inside_vmap_or_grad(case))


ENTRIES.append(KnownDifference(
    id="functorch-inner-requires-grad",
    check=("metadata", "oracle", "autograd"),
    attribute=r"requires_grad|is_leaf|non-leaf stays non-leaf",
    applies=functorch_inner_requires_grad,
    converters=where(functional=False),
    reason=(
        "MetaConverter converts a functorch wrapper (BatchedTensor, GradTrackingTensor) by "
        "rebuilding the plain tensor inside it with empty_strided(size, stride) "
        "(_to_fake_tensor; 'TODO: why aren't the recursive calls going to meta_tensor'): "
        "the inner tensor's requires_grad (and autograd history) is lost"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/114523",
        "https://github.com/pytorch/pytorch/pull/122202",
    ),
    reproducer=(
        "import torch\n"
        "import torch._functorch.vmap as vmap\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "with vmap.vmap_increment_nesting(3, 'error') as level:\n"
        "    f = FakeTensorMode().from_tensor(torch._C._functorch._add_batch_dim(x, 0, level))\n"
        "    assert not torch._C._functorch.get_unwrapped(f).requires_grad\n"
    ),
))


def _functorch_innermost(case: Case) -> Any:
    """The plain tensor at the bottom of the functorch wrappers at
    ``case.path``: ``case.tensor`` itself when it was reached inside a
    functorch wrapper (a ``….unwrapped`` path), the innermost unwrapped
    tensor when ``case.tensor`` is a functorch wrapper; else None."""
    from ...strategies.tensor_facts import functorch_unwrapped

    t = case.tensor
    if t is None or not _inside_vmap_or_grad(case):
        return None
    inside = ".unwrapped" in case.path
    for _ in range(16):
        u = functorch_unwrapped(t)
        if u is None:
            break
        t, inside = u, True
    return t if inside else None


@needs("functorch")
def functorch_inner_storage_offset(case: Case) -> bool:
    """The tensor inside functorch wrappers has a storage offset, which the
    empty_strided rebuild drops (the wrappers report the inner offset)."""
    t = _functorch_innermost(case)
    return t is not None and plain_strided(t) and t.storage_offset() != 0


ENTRIES.append(KnownDifference(
    id="functorch-inner-storage-offset",
    check=("metadata", "oracle"),
    attribute=r"storage_offset\(\)",
    applies=functorch_inner_storage_offset,
    converters=where(functional=False),
    reason=(
        "the empty_strided rebuild of the plain tensor inside a functorch wrapper "
        "(functorch-inner-requires-grad) starts at offset 0: the inner tensor's storage "
        "offset is lost, and with it the wrappers' (and, with real-tensor propagation, the "
        "carried real tensor's)"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/114523",
        "https://github.com/pytorch/pytorch/pull/107415",
    ),
    reproducer=(
        "import torch\n"
        "import torch._functorch.vmap as vmap\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.empty(0).set_(torch.randn(8).untyped_storage(), 2, (3,), (1,))\n"
        "with vmap.vmap_increment_nesting(3, 'error') as level:\n"
        "    b = torch._C._functorch._add_batch_dim(x, 0, level)\n"
        "    f = FakeTensorMode().from_tensor(b)\n"
        "    assert b.storage_offset() == 2 and f.storage_offset() == 0\n"
    ),
))


@needs("functorch")
def functorch_inner_storage_nbytes(case: Case) -> bool:
    """The storage of the tensor inside functorch wrappers is not the size
    empty_strided(size, stride) allocates: what the tensor reaches from
    offset 0."""
    from ...strategies.tensor_facts import functorch_unwrapped

    t = case.tensor
    if (t is None or ".unwrapped" not in case.path or functorch_unwrapped(t) is not None
            or not _inside_vmap_or_grad(case)):
        return False
    if not plain_strided(t):
        return False
    allocated = 0 if t.numel() == 0 else reach(t) - t.storage_offset() * t.element_size()
    return t.untyped_storage().nbytes() != allocated


ENTRIES.append(KnownDifference(
    id="functorch-inner-storage-nbytes",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=functorch_inner_storage_nbytes,
    converters=where(functional=False),
    reason=(
        "the empty_strided rebuild of the plain tensor inside a functorch wrapper "
        "(functorch-inner-requires-grad) has a storage of what the tensor reaches from "
        "offset 0, whatever the real storage's size (larger, at an offset, resized to zero "
        "bytes); so has the carried real tensor"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/114523",
        "https://github.com/pytorch/pytorch/pull/107415",
    ),
    reproducer=(
        "import torch\n"
        "import torch._functorch.vmap as vmap\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(10); x.resize_(3)\n"
        "with vmap.vmap_increment_nesting(3, 'error') as level:\n"
        "    f = FakeTensorMode().from_tensor(torch._C._functorch._add_batch_dim(x, 0, level))\n"
        "    assert torch._C._functorch.get_unwrapped(f).untyped_storage().nbytes() == 12\n"
    ),
))


@needs("functorch")
def functorch_inner_view(case: Case) -> bool:
    """A tensor inside a functorch wrapper (a wrapper of an inner level, or
    the plain tensor) is a view: _to_fake_tensor recurses through the
    levels without meta_tensor's view handling, so nothing it rebuilds is a
    view."""
    from ...strategies.tensor_facts import is_view

    t = case.tensor
    return (t is not None and ".unwrapped" in case.path and is_view(t)
            and _inside_vmap_or_grad(case))


ENTRIES.append(KnownDifference(
    id="functorch-inner-view",
    check=("metadata", "oracle"),
    attribute=r"_is_view\(\)",
    applies=functorch_inner_view,
    converters=where(functional=False),
    reason=(
        "_to_fake_tensor rebuilds what is inside a functorch wrapper level by level "
        "(wrappers of inner levels, then the plain tensor with empty_strided) without "
        "meta_tensor's view handling: a view inside a wrapper (x[...] of a wrapper under "
        "an outer level, or a plain view) loses its view-ness and its _base"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/114523",
        "https://github.com/pytorch/pytorch/pull/118407",
    ),
    reproducer=(
        "import torch\n"
        "import torch._functorch.vmap as vmap\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(2, 3).view(6)\n"
        "with vmap.vmap_increment_nesting(6, 'error') as level:\n"
        "    f = FakeTensorMode().from_tensor(torch._C._functorch._add_batch_dim(x, 0, level))\n"
        "    assert not torch._C._functorch.get_unwrapped(f)._is_view()\n"
    ),
))


@family_wide
@needs("functorch")
def any_grad_tracking_non_leaf(case: Case) -> bool:
    """A GradTrackingTensor (not a view: those are refused) that requires
    grad and is not a leaf, among the tensors MetaConverter.meta_tensor
    converts (the tensors, their bases and grads)."""
    import torch

    from ...strategies.tensor_facts import is_escaped_grad_wrapper, is_view
    from ...strategies.torch_errors import safe

    fns = getattr(torch._C, "_functorch", None)
    if fns is None:
        return False
    return any(
        safe(lambda: bool(fns.is_gradtrackingtensor(t)), False) and t.requires_grad
        and not t.is_leaf and not is_view(t) and not is_escaped_grad_wrapper(t)
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="functorch-grad-non-leaf",
    check="conversion",
    attribute=r"raised",
    applies=any_grad_tracking_non_leaf,
    converters=where(functional=False),
    reason=(
        "for a GradTrackingTensor that requires grad, _to_fake_tensor tests "
        "safe_is_leaf(r) -- the fresh wrapper it just made, always a leaf -- where it means "
        "the real tensor's is_leaf: a non-leaf converts to a leaf requiring grad (the "
        "DelayedError branch is unreachable) and meta_tensor's closing assert_metadata_eq "
        "raises 'AssertionError: False != True' (is_leaf)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/122728",),
    reproducer=(
        "import torch\n"
        "from torch._functorch.eager_transforms import enable_inplace_requires_grad, "
        "grad_increment_nesting\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.randn(3)\n"
        "with grad_increment_nesting() as level:\n"
        "    w = torch._C._functorch._wrap_for_grad(x, level)\n"
        "    with enable_inplace_requires_grad(True):\n"
        "        w.requires_grad_()\n"
        "    try:\n"
        "        FakeTensorMode().from_tensor(w * 2)\n"
        "    except AssertionError as e:\n"
        "        assert str(e) == 'False != True'\n"
        "    else:\n"
        "        raise AssertionError('converted')\n"
    ),
    raises=r"^AssertionError: False != True$",
))


@needs("functorch")
def functorch_wrapper_of_a_device_backend(case: Case) -> bool:
    """A functorch wrapper whose dispatch keys name a backend other than
    Meta (CPU, ...): the meta converter's wrapper of a meta tensor names
    none."""
    from ...checks._dispatch_keys import compared_keys
    from ...strategies.tensor_facts import is_escaped_grad_wrapper, is_vmap_or_grad_wrapper

    t = case.tensor
    if t is None or not is_vmap_or_grad_wrapper(t) or is_escaped_grad_wrapper(t):
        return False
    try:
        dense = compared_keys(t).get("Dense")
    except Exception:
        return False
    return dense is not None and dense != "Meta"


ENTRIES.append(KnownDifference(
    id="functorch-wrapper-meta-backend-keys",
    check="oracle",
    attribute=r"(<backend>|Autograd<backend>|AutogradOther) in torch\._C\._dispatch_keys\(t\)",
    applies=functorch_wrapper_of_a_device_backend,
    converters=where(fake_tensors=False),
    reason=(
        "a functorch wrapper (BatchedTensor, GradTrackingTensor) takes the backend keys of "
        "the tensor it wraps from a fixed list that does not include Meta: wrapping a meta "
        "tensor gives a key set with no backend key and AutogradOther where the wrapper of "
        "a CPU tensor has CPU and AutogradCPU (dispatch then falls through to the wrapped "
        "tensor, so ops still run)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._C._functorch import _add_batch_dim, _wrap_for_grad, current_level\n"
        "from torch._functorch.eager_transforms import grad_increment_nesting\n"
        "from torch._functorch.vmap import vmap_increment_nesting\n"
        "keys = lambda t: str(torch._C._dispatch_keys(t))\n"
        "cpu, meta = torch.zeros(2, 3), torch.empty(2, 3, device='meta')\n"
        "with vmap_increment_nesting(1, 'error'):\n"
        "    real, fake = (_add_batch_dim(x, 0, current_level()) for x in (cpu, meta))\n"
        "    assert 'AutogradCPU' in keys(real) and 'AutogradOther' in keys(fake)\n"
        "    assert 'Meta' not in keys(fake)\n"
        "with grad_increment_nesting():\n"
        "    real, fake = (_wrap_for_grad(x, current_level()) for x in (cpu, meta))\n"
        "    assert 'AutogradCPU' in keys(real) and 'AutogradOther' in keys(fake)\n"
    ),
))


# -- functional tensors of a torch.func.functionalize level ---------------------


def _functionalize_wrapper(t: Any) -> bool:
    """A functional tensor of a ``functionalize`` level (functorch-wrapped)."""
    import torch

    from ...strategies.tensor_facts import is_functorch_wrapped
    from ...strategies.torch_errors import safe

    return (t is not None and is_functorch_wrapped(t)
            and safe(lambda: bool(torch._is_functional_tensor(t)), False))


@needs("functorch")
def functionalize_storage_sized_from_value(case: Case) -> bool:
    """A functional tensor of a ``functionalize`` level whose storage is not
    what wrapping its current value alone gives: the real wrapper keeps the
    functional storage made when its base was wrapped (shared by its views,
    kept through in-place ops); the converted one wraps a fake of the value
    (the describer's ``_unwrap_functional_tensor``), and a new functional
    storage is sized from that value's sizes, strides and offset -- or, where
    the fake value's sizes are symbolic, takes the size of the fake value's
    storage (as dynamic-functional-storage-size outside functorch), which
    the ``storage`` check reads only where it is static."""
    import torch

    from ...converter_model import reach

    t = case.tensor
    if not _functionalize_wrapper(t):
        return False
    value = torch._from_functional_tensor(t)
    expected = 0 if value.numel() == 0 else reach(value)
    fake = case.conversion.tensor_at(case.path, fake=True)
    if _functionalize_wrapper(fake):
        fake_value = torch._from_functional_tensor(fake)
        if has_symbolic(fake_value):
            expected = fake_value.untyped_storage().nbytes()
            if is_symbolic(expected):
                return False
    return bool(t.untyped_storage().nbytes() != expected)


ENTRIES.append(KnownDifference(
    id="functionalize-storage-sized-from-value",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=functionalize_storage_sized_from_value,
    converters=where(functional=False),
    reason=(
        "inside torch.func.functionalize, a functional tensor's storage is the functional "
        "storage made when its base was wrapped: its views share it (views not reapplied "
        "are copies inside, x[1:1] of a one-element tensor too), in-place ops keep it "
        "while they replace the value inside.  MetaConverter converts such a tensor by "
        "unwrapping its current value and wrapping a fake of it alone at the current "
        "level (a view's relation to its base is not described: C++ functional views "
        "outside functorch are refused for that reason, functional-view-refused), so the "
        "converted wrapper's storage is sized from that value alone"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch.eager_transforms import _func_decrement_nesting, "
        "_func_increment_nesting\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "level = _func_increment_nesting(False)  # what torch.func.functionalize enters\n"
        "try:\n"
        "    with torch._C._DisableFuncTorch():\n"
        "        x = torch.zeros(2)\n"
        "    w = torch._C._functorch._wrap_functional_tensor(x, level)\n"
        "    v = w[1:1]  # views are not reapplied: a copy inside, sharing w's storage\n"
        "    assert v.untyped_storage().nbytes() == 8\n"
        "    assert FakeTensorMode().from_tensor(v).untyped_storage().nbytes() == 0\n"
        "    w.mul_(2)  # the value inside is replaced, the storage kept\n"
        "    assert w.untyped_storage().nbytes() == 8\n"
        "    assert FakeTensorMode().from_tensor(w[0]).untyped_storage().nbytes() == 4\n"
        "finally:\n"
        "    _func_decrement_nesting()\n"
    ),
))


@needs("functorch")
def functionalize_wrapper_with_an_offset(case: Case) -> bool:
    """A functional tensor of a ``functionalize`` level with a storage
    offset, which torch's description of it leaves out."""
    t = case.tensor
    return _functionalize_wrapper(t) and t.storage_offset() != 0


ENTRIES.append(KnownDifference(
    id="functionalize-described-without-offset",
    check="metadata",
    attribute=r"storage_offset\(\)",
    applies=functionalize_wrapper_with_an_offset,
    # (with symbolic sizes, offsets are compared by the oracle, through hints)
    converters=where(functional=False, symbolic=False),
    reason=(
        "MetaTensorDescriber describes every functorch-wrapped tensor with no storage and "
        "storage offset 0 ('TODO: functorch wrapped tensors probably should have storage').  "
        "A functional tensor of a torch.func.functionalize level has both, and the "
        "converted wrapper keeps the offset: torch's assert_metadata_eq, which compares "
        "that description with the converted tensor (this check reads the same fields), "
        "finds the offsets differ ('0 != 1') on a faithful conversion"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch.eager_transforms import _func_decrement_nesting, "
        "_func_increment_nesting\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._subclasses.meta_utils import MetaTensorDescriber, assert_eq, "
        "assert_metadata_eq\n"
        "level = _func_increment_nesting(False)  # what torch.func.functionalize enters\n"
        "try:\n"
        "    with torch._C._DisableFuncTorch():\n"
        "        x = torch.zeros(2)[1:]\n"
        "    w = torch._C._functorch._wrap_functional_tensor(x, level)\n"
        "    f = FakeTensorMode().from_tensor(w)\n"
        "    assert w.storage_offset() == f.storage_offset() == 1\n"
        "    assert MetaTensorDescriber().describe_tensor(w).storage_offset == 0\n"
        "    try:\n"
        "        assert_metadata_eq(assert_eq, w, f)\n"
        "    except AssertionError as e:\n"
        "        assert str(e) == '0 != 1'\n"
        "    else:\n"
        "        raise AssertionError('assert_metadata_eq passed')\n"
        "finally:\n"
        "    _func_decrement_nesting()\n"
    ),
))


@needs("functorch")
def escaped_grad_wrapper(case: Case) -> bool:
    """The tensor is a GradTrackingTensor whose grad transform has returned
    (level -2): MetaConverter converts the tensor inside it instead."""
    from ...strategies.tensor_facts import is_escaped_grad_wrapper

    return case.tensor is not None and is_escaped_grad_wrapper(case.tensor)


ENTRIES.append(KnownDifference(
    id="functorch-escaped-grad-unwrapped",
    check=("wrappers", "metadata", "oracle", "autograd"),
    # (the wrapper of a meta tensor has no backend keys and AutogradOther:
    # functorch-wrapper-meta-backend-keys; its plain fake has Meta's)
    attribute=r"is_functorch_wrapped_tensor|is_gradtrackingtensor|is_leaf|"
              r"non-leaf stays non-leaf|"
              r"(<backend>|Autograd<backend>|AutogradOther) in torch\._C\._dispatch_keys\(t\)",
    applies=escaped_grad_wrapper,
    converters=where(functional=False),
    reason=(
        "a GradTrackingTensor kept past the return of its torch.func.grad has the level -2 "
        "(its interpreter is gone); MetaConverter converts it to the fake of the tensor "
        "inside it, a plain tensor that is not functorch-wrapped (with a plain tensor's "
        "dispatch keys), and does not keep whether it was a leaf (its closing "
        "assert_metadata_eq skips is_leaf for it, since pytorch/pytorch pull request 122728)"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "kept = []\n"
        "torch.func.grad(lambda x: (kept.append(x * 2), x.sum())[1])(torch.randn(3))\n"
        "t = kept[0]\n"
        "assert torch._C._functorch.is_gradtrackingtensor(t)\n"
        "assert torch._C._functorch.maybe_get_level(t) == -2 and not t.is_leaf\n"
        "f = FakeTensorMode().from_tensor(t)\n"
        "assert not torch._C._functorch.is_functorch_wrapped_tensor(f) and f.is_leaf\n"
    ),
))
