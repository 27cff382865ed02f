"""Known differences of the ``behaviour`` check: the differences a program's
step shows that follow from the conversion (an operator's own differences,
which the control shows too, are in :mod:`.operators`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ...converters import where
from ...findings import StepCase, StepDifference
from ..core import BY_DESIGN, UNFILED, Case, KnownDifference, OnStep
from ..facts import family_wide, layout_name, reads_record


def _behaviour_recorded(attr: str, test: Any, in_family: Any = None) -> Any:
    """A predicate holding when the ``behaviour`` check recorded, on the
    conversion, an item of ``attr`` satisfying ``test`` -- and, with
    ``in_family``, some tensor of the family satisfies it (read safely)."""
    from ...strategies.torch_errors import safe

    def holds(case: Case) -> bool:
        if not any(test(x) for x in getattr(case.conversion, attr, ())):
            return False
        return in_family is None or any(safe(lambda: bool(in_family(t)), False)
                                        for t in case.family)

    return reads_record(attr)(family_wide(holds))


_BEHAVIOUR_ENTRIES = [
    KnownDifference(
        id="behaviour-follows-known-difference",
        check="behaviour",
        attribute=r"follows from a known difference",
        applies=_behaviour_recorded("behaviour_follows", lambda entry_id: True),
        reproducer=(
            "import torch\n"
            "from pytest_metafidelity import check_faithful\n"
            "from pytest_metafidelity.strategies import Recipe\n"
            "# the functional converter's storage is sized to the tensor (a known difference):\n"
            "# as_strided_ into the rest of the real storage then raises on the fake only\n"
            "(t,) = Recipe(('t0 = torch.arange(8.)', 't1 = torch.empty(0).set_("
            "t0.untyped_storage(), 2, (2,), (1,))'), ('t1',)).build()\n"
            "r = check_faithful(t, converters=['functional'], checks=['behaviour'],\n"
            "                   program='t1.as_strided_((1,), (1,), 6)')\n"
            "assert 'behaviour-follows-known-difference' in r.outcomes[0].reason\n"
        ),
        reason=(
            "a program step acts on tensors that already differ at conversion in a way a "
            "registered known difference explains (e.g. a storage sized to the tensors, a "
            "version counter not shared outside the view tree, the carried real tensor's "
            "conj/neg bits): that the step then acts differently is the same difference, "
            "reported once, by the instantaneous check"
        ),
        link=BY_DESIGN,
    ),
    KnownDifference(
        id="behaviour-resize-of-symbolic-sizes",
        check="behaviour",
        attribute=r"raised",
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: d.attribute == "raised"
            and ("tried to directly modify sizes for customized tensor" in d.fake
                 or ("resize_" in d.source
                     and "Expected !size_bytes_is_heap_allocated_" in d.fake))),
        on_step=OnStep(r"\.resize_\(", lambda step: _resized_symbolic_sizes(step)),
        converters=where(symbolic=True),
        reason=(
            "a fake with symbolic sizes has custom sizes/strides (SymInts): resize_ (and the "
            "set_/as_strided_ that change its sizes) raises 'tried to directly modify sizes for "
            "customized tensor' where the real tensor resizes (or refuses for another reason, "
            "checked after the sizes: an inference tensor outside inference mode); Dynamo "
            "graph-breaks on resizing inputs.  Inside a wrapper subclass, a resize_ that grows "
            "an inner fake's storage of symbolic size raises 'Expected "
            "!size_bytes_is_heap_allocated_' instead"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch.fx.experimental.symbolic_shapes import DimDynamic, "
            "StatelessSymbolicContext\n"
            "mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)\n"
            "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC], "
            "constraint_sizes=[None])\n"
            "f = mode.from_tensor(torch.zeros(3), source=ConstantSource('x'), "
            "symbolic_context=ctx)\n"
            "torch.zeros(3).resize_(5)\n"
            "with mode:\n"
            "    try:\n"
            "        f.resize_(5)\n"
            "    except RuntimeError as e:\n"
            "        assert 'customized tensor' in str(e)\n"
            "    else:\n"
            "        raise AssertionError('resized')\n"
        ),
    ),
]

def _resized_symbolic_sizes(step: StepCase) -> bool:
    """``t.resize_(...)`` that eager ran, to another shape, of a plain fake
    with symbolic sizes."""
    from torch._subclasses.fake_tensor import FakeTensor

    called = _receiver(step)
    if step.real_raised is not None or called is None or called[2] != "resize_":
        return False
    r, f, _ = called
    return type(f) is FakeTensor and _symbolic(f) and tuple(r.shape) != _hints(f.shape)


def _grad_on_the_fake_side_only(d: Any) -> bool:
    """A step after which a tensor has a .grad on the converted side only."""
    return d.attribute == "grad is not None" and d.real == "False" and d.fake == "True"


_BEHAVIOUR_ENTRIES += [
    KnownDifference(
        id="behaviour-eager-internal-assert",
        check="behaviour",
        attribute=r"raised",
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: d.attribute == "raised" and "INTERNAL ASSERT FAILED" in d.real
            and d.fake == "nothing"),
        reason=(
            "the real tensors hit an internal assertion of eager autograd (a torch bug: "
            "'out != nullptr INTERNAL ASSERT FAILED at variable.cpp', an in-place op on a "
            "non-leaf retaining its grad after an in-place metadata op); the fake of a "
            "non-leaf is an example input without that history, so the step runs"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "x = torch.zeros(4, dtype=torch.complex64, requires_grad=True)\n"
            "y = x + 1\n"
            "y.retain_grad()\n"
            "y.unsqueeze_(1)\n"
            "try:\n"
            "    y.mul_(2)\n"
            "except RuntimeError as e:\n"
            "    assert 'INTERNAL ASSERT FAILED' in str(e)\n"
            "else:\n"
            "    raise AssertionError('no assertion')\n"
        ),
    ),
    KnownDifference(
        id="behaviour-no-grad-view-accumulates-grad",
        check="behaviour",
        attribute=r"grad is not None",
        # (only where such a view was converted: a view a program takes in
        # no_grad mode is no converted tensor, and a fake that tracks it
        # anyway is a conversion bug)
        applies=_behaviour_recorded(
            "behaviour_differences",
            _grad_on_the_fake_side_only,
            in_family=lambda t: _no_grad_view(t)),
        converters=where(functional=False),
        reason=(
            "the converted view (a meta tensor or a fake) of a view taken in no_grad (or "
            "inference) mode of a leaf requiring grad is a leaf that accumulates .grad when a "
            "backward reaches it; the real view, and the same view made directly under the "
            "FakeTensorMode, get no .grad"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch._subclasses.meta_utils import MetaConverter\n"
            "x = torch.zeros((), requires_grad=True)\n"
            "with torch.no_grad():\n"
            "    v = x.expand(3)\n"
            "mode = FakeTensorMode()\n"
            "f = mode.from_tensor(v)\n"
            "m = MetaConverter()(v)\n"
            "v.sum().backward()\n"
            "with mode:\n"
            "    f.sum().backward()\n"
            "m.sum().backward()\n"
            "assert v.grad is None and f.grad is not None and m.grad is not None\n"
        ),
    ),
]


def _no_grad_view(t: Any) -> bool:
    """A view taken in no_grad (or inference) mode: its requires_grad is
    its base's, read when asked."""
    from ...strategies.tensor_facts import creation_meta

    return creation_meta(t) in ("CreationMeta.NO_GRAD_MODE", "CreationMeta.INFERENCE_MODE")


def _named_in(step: StepCase) -> set[str]:
    """The names a step's source mentions."""
    return set(re.findall(r"[A-Za-z_]\w*", step.statement))


def _receiver(step: StepCase) -> tuple[Any, Any, str] | None:
    """(real, converted, method) of the step's first call of a method on a
    live tensor (``p0 = t0.split([1, 2])``: t0's, "split"), or None."""
    call = re.match(r"\s*(?:\w+\s*=\s*)?(\w+)\.(\w+)\(", step.statement)
    if call is None:
        return None
    r, f = step.real.get(call.group(1)), step.fake.get(call.group(1))
    return None if r is None or f is None else (r, f, call.group(2))


def _symbolic(t: Any) -> bool:
    """A fake whose sizes, strides or offset are SymInts (custom sizes)."""
    from ...strategies.torch_errors import safe

    return safe(lambda: bool(t._has_symbolic_sizes_strides), False)


def _hints(sizes: Any) -> tuple[int, ...]:
    """Sizes as ints, a SymInt's hint read without guarding on it."""
    import torch

    return tuple(n.node.hint if isinstance(n, torch.SymInt) else int(n) for n in sizes)


def _plain_fake(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return type(t) is FakeTensor


def _plain(t: Any) -> bool:
    """A strided torch.Tensor (or Parameter), neither a C++ functional
    tensor nor a functorch wrapper (inside a level, ops take other paths)."""
    import torch

    return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided
            and not _functional_or_functorch(t))


def _functional_or_functorch(t: Any) -> bool:
    import torch

    return torch._is_functional_tensor(t) or torch._C._functorch.maybe_get_level(t) != -1


def _base_stopped_requiring_grad(step: StepCase) -> bool:
    """A step after which a converted no-grad view, not named in the step,
    no longer requires grad on the real side (its base stopped requiring
    it) while its converted counterpart still does, as it did before."""
    from ...strategies.torch_errors import safe

    if step.real_raised is not None:
        return False
    named = _named_in(step)
    for name in step.inputs:
        r, f = step.real.get(name), step.fake.get(name)
        if name in named or r is None or f is None:
            continue
        if (_no_grad_view(r) and safe(lambda: r.requires_grad) is False
                and safe(lambda: f.requires_grad) is True):
            return True
    return False


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-no-grad-view-keeps-requires-grad",
    check="behaviour",
    attribute=r"requires_grad",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "requires_grad" and d.real == "False" and d.fake == "True",
        in_family=_no_grad_view),
    on_step=OnStep(r"\.requires_grad_\(", _base_stopped_requiring_grad),
    converters=where(functional=False),
    reason=(
        "the converted view (a meta tensor or a fake) of a view taken in no_grad mode of a "
        "leaf requiring grad has requires_grad=True of its own; the real view's requires_grad "
        "is its base's, so after base.requires_grad_(False) the real view no longer requires "
        "grad and the converted one still does (the same view made directly under the "
        "FakeTensorMode follows its base); the same cause as "
        "behaviour-no-grad-view-accumulates-grad"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._subclasses.meta_utils import MetaConverter\n"
        "x = torch.zeros(3, requires_grad=True)\n"
        "with torch.no_grad():\n"
        "    v = x[...]\n"
        "mode = FakeTensorMode()\n"
        "fx, fv = mode.from_tensor(x), mode.from_tensor(v)\n"
        "m = MetaConverter()\n"
        "mx, mv = m(x), m(v)\n"
        "x.requires_grad_(False)\n"
        "fx.requires_grad_(False)\n"
        "mx.requires_grad_(False)\n"
        "assert not v.requires_grad and fv.requires_grad and mv.requires_grad\n"
    ),
))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-dynamic-storage-bounds-unchecked-after-view",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and "out of bounds for storage" in d.real
        and d.fake == "nothing"),
    converters=where(symbolic=True),
    reason=(
        "a fake with symbolic sizes checks an in-place metadata op (unsqueeze_) against its "
        "storage's size until a view of it is taken; afterwards the op goes through where the "
        "real tensor (and a static fake) raise 'setStorage: ... out of bounds for storage' "
        "(here: a storage shrunk to zero bytes)"
    ),
    link=UNFILED,
    reproducer=(
            'import torch\n'
            'from torch._dynamo.source import ConstantSource\n'
            'from torch._subclasses.fake_tensor import FakeTensorMode\n'
            'from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext\n'
            't = torch.zeros((3, 1, 4), dtype=torch.int64)\n'
            't.untyped_storage().resize_(0)\n'
            'try:\n'
            '    t[:, 1:1:2]; t.unsqueeze_(0)\n'
            'except RuntimeError as e:\n'
            "    assert 'out of bounds for storage' in str(e)\n"
            'else:\n'
            "    raise AssertionError('real unsqueezed')\n"
            'mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)\n'
            'ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 3, constraint_sizes=[None] * 3)\n'
            't = torch.zeros((3, 1, 4), dtype=torch.int64)\n'
            't.untyped_storage().resize_(0)\n'
            "f = mode.from_tensor(t, source=ConstantSource('x'), symbolic_context=ctx)\n"
            'with mode:\n'
            '    f[:, 1:1:2]\n'
            '    f.unsqueeze_(0)  # no bounds error\n'
    ),
))

def _degenerate_strides_reproducer() -> str:
    from .operators import DEGENERATE_STRIDES_REPRODUCER

    return DEGENERATE_STRIDES_REPRODUCER


def _zero_element_outputs_not_views(records: tuple) -> bool:
    """Some output of a step with no elements is not a view (a NOT_A_VIEW
    difference), and every storage_offset() difference recorded is that of
    such an output made on a storage of its own: 0 on the fake side, where
    its storage identity differs too; and every requires_grad difference is
    such an output's, made under no_grad (so not requiring grad) where
    eager's view of a tensor requiring grad does."""
    from .operators import NOT_A_VIEW

    zero = [d for d in records if d.numel == 0]
    own_storage = {d.path for d in zero if d.attribute == "storage identity"}
    return (any(re.fullmatch(NOT_A_VIEW, d.attribute) for d in zero)
            and all(d.numel == 0 and d.fake == "0" and d.path in own_storage
                    for d in records if d.attribute == "storage_offset()")
            and all(d.numel == 0 and d.path in own_storage and d.real == "True"
                    and d.fake == "False" and "torch.no_grad()" in d.source
                    for d in records if d.attribute == "requires_grad"))


def _zero_element_view_entry() -> KnownDifference:
    from .operators import NOT_A_VIEW, NOT_A_VIEW_OFFSET, ZERO_ELEMENT_VIEW_REPRODUCER

    return KnownDifference(
        id="behaviour-zero-element-view-dispatch-cache",
        check="behaviour",
        attribute=f"{NOT_A_VIEW}|{NOT_A_VIEW_OFFSET}|requires_grad",
        applies=reads_record("behaviour_differences")(family_wide(
            lambda case: _zero_element_outputs_not_views(
                tuple(getattr(case.conversion, "behaviour_differences", ()))))),
        converters=where(fake_tensors=True, carries_real=False),
        reason=(
            "FakeTensorMode's dispatch cache: a view op on a converted tensor with no elements "
            "may return a tensor that is not a view of it (another storage, at storage offset "
            "0; made under no_grad, not requiring grad where eager's view of a tensor "
            "requiring grad does), depending on earlier cache hits; the control, made with "
            "another cache "
            "history, may not show it "
            "(the operator difference op:zero-element-view-dispatch-cache)"
        ),
        link="https://github.com/pytorch/pytorch/issues/159151",
        reproducer=ZERO_ELEMENT_VIEW_REPRODUCER,
    )


_BEHAVIOUR_ENTRIES.append(_zero_element_view_entry())


def _only_degenerate_strides(d: StepDifference) -> bool:
    """A recorded stride() difference only on dimensions of size 1 (or of a
    tensor with no elements), where a stride moves through no memory."""
    from .operators import only_degenerate_strides

    if d.attribute != "stride()" or d.shape is None:
        return False
    real, fake = d.real_value, d.fake_value
    if not (isinstance(real, tuple) and isinstance(fake, tuple)):
        return False
    return only_degenerate_strides(real, fake, d.extent)


def _degenerate_strides_recorded(case: Case) -> bool:
    """The ``behaviour`` check recorded stride() differences only on
    dimensions that move through no memory, and a contiguity in a memory
    format only where the same tensor's strides differ so (those strides
    decide it)."""
    records = tuple(getattr(case.conversion, "behaviour_differences", ()))
    degenerate = {d.path for d in records if _only_degenerate_strides(d)}
    return bool(degenerate) and all(
        d.path in degenerate for d in records
        if d.attribute.startswith("is_contiguous(memory_format="))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-degenerate-strides",
    check="behaviour",
    attribute=r"stride\(\)|is_contiguous\(memory_format=torch\.\w+\)",
    applies=reads_record("behaviour_differences")(family_wide(_degenerate_strides_recorded)),
    reason=(
        "strides of dimensions of size 1 (or of a tensor with no elements) move through no "
        "memory; the strides fake and meta kernels give them (a view's, a gradient's after "
        "backward, zero_() of a C++ functional tensor with no elements, values() of a "
        "sparse compressed tensor with no elements) may differ from eager's, and so may "
        "the contiguity in a memory format that those strides decide, "
        "depending on the dispatch cache's history -- the operator difference "
        "op:degenerate-strides, which the control does not always show"
    ),
    link=BY_DESIGN,
    reproducer=_degenerate_strides_reproducer(),
))

# How eager rejects an in-place op on an inference tensor outside inference mode.
INFERENCE_UPDATE_ERROR = "RuntimeError: Inplace update to inference tensor outside InferenceMode"

def _restrided_past_the_converted_storage(step: StepCase) -> bool:
    """``t.as_strided_(...)`` that eager ran, after which the real tensor
    reaches past the end of its converted counterpart's storage (a plain
    fake, or a meta tensor: as_strided_ checks the bounds on both; a
    symbolic storage size read by its hint)."""
    import torch

    from ...strategies.tensor_facts import bytes_reached
    from ...strategies.torch_errors import safe

    called = _receiver(step)
    if step.real_raised is not None or called is None or called[2] != "as_strided_":
        return False
    r, f, _ = called
    if not _plain(r) or not (_plain_fake(f) or (type(f) is torch.Tensor and f.is_meta)):
        return False
    reached = bytes_reached(tuple(r.shape), r.stride(), r.storage_offset(), r.element_size())
    converted = safe(lambda: _hints((f.untyped_storage().nbytes(),))[0])
    return converted is not None and reached > converted


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-storage-sized-to-tensors",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and "out of bounds for storage" in d.fake and (
            d.real == "nothing" or d.real.startswith(INFERENCE_UPDATE_ERROR))),
    on_step=OnStep(r"\.as_strided_\(", lambda step: _restrided_past_the_converted_storage(step)),
    reason=(
        "the converted tensor's storage is sized to what the tensors reach, not to the real "
        "storage (storage-sized-to-tensors; with symbolic sizes the storage check cannot see "
        "it): set_/as_strided_ into the rest of the real storage raises 'out of bounds for "
        "storage' on the fake only -- or, on an inference tensor, where the real one "
        "rejects the in-place op for being one ('Inplace update to inference tensor outside "
        "InferenceMode'), the fake with symbolic sizes rejects it for the bound first"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/pull/185014",
        "https://github.com/pytorch/pytorch/issues/123879",
    ),
    reproducer=(
            'import torch\n'
            'from torch._subclasses.fake_tensor import FakeTensorMode\n'
            'x = torch.zeros(5); x.resize_(4)\n'
            'mode = FakeTensorMode()\n'
            'f = mode.from_tensor(x)\n'
            'x.as_strided_((3,), (1,), 2)\n'
            'with mode:\n'
            '    try:\n'
            '        f.as_strided_((3,), (1,), 2)\n'
            '    except RuntimeError as e:\n'
            "        assert 'out of bounds for storage' in str(e)\n"
            '    else:\n'
            "        raise AssertionError('fake as_strided_ fit')\n"
    ),
))


# -- differences a program's step shows after conversion, found with the
# behaviour check on by default ---------------------------------------------


@reads_record("behaviour_differences")
def behaviour_grad_lost_conj_bit(case: Case) -> bool:
    """The ``behaviour`` check recorded, at this case's path, a gradient
    (``….grad``, or the real tensor it carries: ``….grad.real_tensor``) that
    is a conjugate view on the real side and not on the converted side."""
    return case.path.endswith((".grad", ".grad.real_tensor")) and any(
        d.attribute == "is_conj()" and d.real == "True" and d.fake == "False"
        and d.path == case.path
        for d in getattr(case.conversion, "behaviour_differences", ()))


# What an in-place op on an inference tensor meets after the bounds check,
# outside inference mode: where the real tensor raised for its bounds first.
PAST_THE_BOUNDS = ("nothing", INFERENCE_UPDATE_ERROR)


@reads_record("behaviour_differences")
def behaviour_storage_bounds_unchecked(case: Case) -> bool:
    """The ``behaviour`` check recorded a step that raised 'out of bounds for
    storage' on the real side and, on the converted side, went past that
    check: nothing raised, or the inference-tensor check that follows it."""
    return any(d.attribute == "raised" and "out of bounds for storage" in d.real
               and d.fake.startswith(PAST_THE_BOUNDS)
               for d in getattr(case.conversion, "behaviour_differences", ()))


def _conj_grad_through_a_converted_view(step: StepCase) -> bool:
    """A backward through a converted view alone (``t1.sum().abs().backward()``,
    naming no other live tensor) that gave its base, which had no .grad on
    the converted side, a .grad that is a conjugate view in eager."""
    from ...strategies.tensor_facts import base_of, grad_of
    from ...strategies.torch_errors import safe

    call = re.fullmatch(r"(\w+)(?:\.\w+\(\))*\.backward\(\)", step.statement.strip())
    if call is None or step.real_raised is not None or call.group(1) not in step.inputs:
        return False
    if len(_named_in(step) & set(step.real)) != 1:
        return False
    real_base = base_of(step.real.get(call.group(1)))
    fake_base = base_of(step.fake.get(call.group(1)))
    if real_base is None or fake_base is None or grad_of(fake_base) is not None:
        return False
    grad = grad_of(real_base)
    return grad is not None and safe(lambda: grad.is_conj(), False) is True


_BEHAVIOUR_ENTRIES += [
    KnownDifference(
        id="behaviour-conj-view-grad-not-conj",
        check="behaviour",
        attribute=r"is_conj\(\)",
        applies=behaviour_grad_lost_conj_bit,
        on_step=OnStep(r"\.backward\(", lambda step: _conj_grad_through_a_converted_view(step)),
        reason=(
            "a converted view of a conjugate view (x.conj()[1:]) has one AsStridedBackward0 on "
            "its base as autograd history, where the real view has SliceBackward0 -> "
            "ConjBackward0: a backward through it leaves the base a .grad that is not a "
            "conjugate view, where eager's (and that of the same view made directly under the "
            "FakeTensorMode) is; so does a backward through conj() of a converted view of a "
            "leaf (x[...].conj(), the leaf's .grad a conjugate view in eager), and on the "
            "converters that carry real tensors the .grad's carried real tensor follows the fake"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "x = torch.zeros(2, dtype=torch.complex64, requires_grad=True)\n"
            "v = x.conj()[1:]\n"
            "mode = FakeTensorMode()\n"
            "f = mode.from_tensor(v)\n"
            "v.sum().abs().backward()\n"
            "assert x.grad.is_conj()\n"
            "with mode:\n"
            "    f.sum().abs().backward()\n"
            "assert not f._base.grad.is_conj()\n"
            "with mode:  # made directly under the mode, not converted: as eager\n"
            "    y = torch.zeros(2, dtype=torch.complex64, requires_grad=True)\n"
            "    y.conj()[1:].sum().abs().backward()\n"
            "assert y.grad.is_conj()\n"
        ),
    ),
    KnownDifference(
        id="behaviour-static-storage-bounds-unchecked",
        check="behaviour",
        attribute=r"raised",
        applies=behaviour_storage_bounds_unchecked,
        converters=where(fake_tensors=True, symbolic=False),
        reason=(
            "an in-place metadata op (unsqueeze_, transpose_) on a converted tensor whose "
            "storage is too small for it (shrunk to zero bytes) goes past the check where the "
            "real tensor raises 'setStorage: ... out of bounds for storage' (on an inference "
            "tensor it meets the next one, 'Inplace update to inference tensor'): the operator "
            "difference op:view-unchecked-storage-bounds, which the control shows or not "
            "depending on the dispatch cache's history. FakeTensorMode's dispatch cache makes a "
            "view op's output (detach(), a slice) with set_() on the meta device, which grows "
            "the shared storage to fit; the storage then has its bytes back. It does so on a "
            "cache hit and when it first validates a new entry; for an op the cache then "
            "bypasses (a view of an inference tensor outside inference mode: its synthesized "
            "output is not an inference tensor), only the first fake to run it is grown"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "def program(t):\n"
            "    with torch.inference_mode():\n"
            "        t.detach()\n"
            "    t.unsqueeze_(0)\n"
            "def shrunk():\n"
            "    t = torch.zeros(1)\n"
            "    t.untyped_storage().resize_(0)\n"
            "    return t\n"
            "try:\n"
            "    program(shrunk())\n"
            "except RuntimeError as e:\n"
            "    assert 'out of bounds for storage' in str(e)\n"
            "else:\n"
            "    raise AssertionError('real unsqueezed')\n"
            "mode = FakeTensorMode()\n"
            "f = mode.from_tensor(shrunk())\n"
            "with mode:\n"
            "    program(f)  # no bounds error\n"
            "assert f.shape == (1, 1)\n"
        ),
    ),
]

def behaviour_step_stuck_in_implications(d: StepDifference) -> bool:
    """A recorded step that ran past the step time limit on the converted
    side only, stopped inside ``ShapeEnv.get_implications``."""
    return (d.attribute == "timed out" and not d.real.startswith("StepTimeout")
            and d.fake.startswith("StepTimeout") and "ShapeEnv.get_implications" in d.fake)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-view-guard-explodes",
    check="behaviour",
    attribute=r"timed out",
    applies=_behaviour_recorded("behaviour_differences", behaviour_step_stuck_in_implications),
    converters=where(symbolic=True),
    reason=(
        "view(-1) (a view collapsing dimensions) of a fake with symbolic sizes whose strides "
        "do not allow it: _collapse_view_helper asks guard_or_false of an And of Ors over the "
        "size symbols, and ShapeEnv.get_implications puts it and its negation in conjunctive "
        "normal form with sympy's to_cnf, which grows exponentially -- the step runs for "
        "minutes where eager raises 'view size is not compatible' at once.  Seen with four "
        "or more dimensions whose sizes are distinct symbols and strides are all at least 2; "
        "the check stops the step at its time limit"
    ),
    link=UNFILED,
    related=("https://github.com/sympy/sympy/issues/9921",),
    reproducer=(
        "import signal\n"
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "t = torch.empty_strided((4, 3, 4, 4), (6, 3, 2, 2), dtype=torch.int32)\n"
        "try:\n"
        "    t.view(-1)\n"
        "except RuntimeError as e:\n"
        "    assert 'view size is not compatible' in str(e)\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)\n"
        "f = mode.from_tensor(t, source=ConstantSource('t'))\n"
        "class Stopped(BaseException):\n"
        "    pass\n"
        "def stop(*_):\n"
        "    raise Stopped\n"
        "previous = signal.signal(signal.SIGALRM, stop)\n"
        "signal.setitimer(signal.ITIMER_REAL, 3)\n"
        "try:\n"
        "    with mode:\n"
        "        f.view(-1)\n"
        "except Stopped:\n"
        "    pass  # still working after 3 s\n"
        "except Exception as e:\n"
        "    raise AssertionError(f'finished: {e}')\n"
        "else:\n"
        "    raise AssertionError('viewed')\n"
        "finally:\n"
        "    signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "    signal.signal(signal.SIGALRM, previous)\n"
    ),
))

_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-reads-uncopied-carried-bytes",
    check="behaviour",
    attribute=r"values",
    applies=reads_record("behaviour_uncopied_reads")(family_wide(
        lambda case: bool(getattr(case.conversion, "behaviour_uncopied_reads", ())))),
    converters=where(carries_real=True),
    reason=(
        "real-values-not-copied, seen through a step: a storage's carried copy holds only "
        "the elements of the first non-view tensor converted on it (at offset 0), so a view "
        "a step takes that reads between or past those elements (as_strided) reads "
        "uninitialized bytes in the carried tensor"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126175",),
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.arange(7.) + 0.5\n"
        "every_other = torch.empty(0).set_(x.untyped_storage(), 0, (4,), (2,))\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(every_other)\n"
        "assert torch.equal(f.real_tensor, every_other)  # its own elements: copied\n"
        "with mode:\n"
        "    g = f.as_strided((7,), (1,), 0)\n"
        "assert not torch.equal(g.real_tensor, x)  # the bytes between them: not\n"
    ),
))


def _history(t: Any, depth: int, first_inputs_only: bool = False) -> Iterator[Any]:
    """The nodes of ``t``'s autograd history, at most ``depth`` of them (never
    loop on a strange graph); with ``first_inputs_only``, the one chain that
    follows each node's first input back towards the leaf (a view chain)."""
    todo, seen = [getattr(t, "grad_fn", None)], 0
    while todo and seen < depth:
        fn = todo.pop()
        if fn is None:
            continue
        seen += 1
        yield fn
        inputs = [n for n, _ in getattr(fn, "next_functions", ()) if n is not None]
        todo.extend(inputs[:1] if first_inputs_only else inputs)


def _node_name(fn: Any) -> str:
    return type(fn).__name__


def _history_has(t: Any, node: str, depth: int = 16) -> bool:
    """``t``'s autograd history, up to ``depth`` nodes deep, has a ``node``."""
    return any(_node_name(fn) == node for fn in _history(t, depth))


def _empty_view_as_real_view(t: Any) -> bool:
    from ...strategies.tensor_facts import is_view

    return is_view(t) and t.numel() == 0 and _history_has(t, "ViewAsRealBackward0")


# A step that raised 'Tensor must have a last dimension with stride 1' (or 'a
# stride divisible by 2 for all but last dimension') on the real side and
# nothing on the converted side, and a view of the family with
# no elements has ViewAsRealBackward0 in its autograd history.
behaviour_view_as_real_grad_of_nothing = _behaviour_recorded(
    "behaviour_differences",
    lambda d: d.attribute == "raised" and d.fake == "nothing"
    and ("last dimension with stride 1" in d.real
         or "must have a stride divisible by 2 for all but last dimension" in d.real),
    in_family=_empty_view_as_real_view)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-view-as-real-backward-of-nothing",
    check="behaviour",
    attribute=r"raised",
    applies=behaviour_view_as_real_grad_of_nothing,
    reason=(
        "a converted view has one AsStridedBackward0 as autograd history, where the real "
        "view_as_real view has ViewAsRealBackward0, whose view_as_complex needs a gradient "
        "with last stride 1 and other strides divisible by 2: a backward bringing a "
        "zero-element view the expanded gradient of a sum (strides 0, which contiguous() "
        "keeps for no elements; or, once transposed, an odd stride) raises in eager "
        "(and for the same view made directly under the FakeTensorMode), not on the "
        "converted view"
    ),
    link=UNFILED,
    reproducer=(
        'import torch\n'
        'from torch._subclasses.fake_tensor import FakeTensorMode\n'
        'x = torch.zeros(1, dtype=torch.complex64, requires_grad=True)\n'
        'v = torch.view_as_real(x[0:0])\n'
        'try:\n'
        '    v.sum().abs().backward()\n'
        'except RuntimeError as e:\n'
        "    assert 'last dimension with stride 1' in str(e)\n"
        'else:\n'
        "    raise AssertionError('real backward ran')\n"
        'mode = FakeTensorMode()\n'
        'f = mode.from_tensor(v)\n'
        "assert type(f.grad_fn).__name__ == 'AsStridedBackward0'\n"
        'with mode:\n'
        '    f.sum().abs().backward()  # no error\n'
        'with mode:  # made directly under the mode, not converted: as eager\n'
        '    y = torch.zeros(1, dtype=torch.complex64, requires_grad=True)\n'
        '    try:\n'
        '        torch.view_as_real(y[0:0]).sum().abs().backward()\n'
        '    except RuntimeError as e:\n'
        "        assert 'last dimension with stride 1' in str(e)\n"
        '    else:\n'
        "        raise AssertionError('control backward ran')\n"
        "x = torch.zeros(0, dtype=torch.complex64, requires_grad=True)\n"
        "v = torch.view_as_real(x).transpose(0, 1)[0:0]\n"
        "f = mode.from_tensor(v)\n"
        "try:\n"
        "    v.sum().abs().backward()\n"
        "except RuntimeError as e:\n"
        "    assert 'stride divisible by 2' in str(e)\n"
        "else:\n"
        "    raise AssertionError('real backward ran')\n"
        "with mode:\n"
        "    f.sum().abs().backward()  # no error\n"
    ),
))


def _view_of_overlapping_base(t: Any) -> bool:
    """A view whose base's elements overlap in memory (a zero stride, or
    strides that revisit elements)."""
    import torch

    from ...strategies.tensor_facts import base_of, is_view
    from ...strategies.dense import required_numel

    base = base_of(t) if is_view(t) else None
    if base is None or base.layout != torch.strided or not 1 < base.numel() <= 1 << 20:
        return False
    # The memory offset of every element, from the base's own strides.
    span = required_numel(tuple(base.shape), base.stride(), 0)
    offsets = torch.arange(span).as_strided(base.shape, base.stride())
    return offsets.unique().numel() < base.numel()


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-as-strided-backward-on-overlapping-base",
    check="behaviour",
    attribute=r"values",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "values" and d.path.endswith(".grad.real_tensor"),
        in_family=_view_of_overlapping_base),
    converters=where(carries_real=True),
    reason=(
        "a converted view is rebuilt with as_strided (one AsStridedBackward0 as autograd "
        "history); on a base whose elements overlap in memory, as_strided's backward shares "
        "each gradient among the base elements that alias its memory location, where the "
        "real view's own backward (select, slice, ...) writes it into one element: the real "
        "tensor a fake carries then gets a .grad of other values than the real base's"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "import torch._functorch.config as functorch_config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def base():\n"
        "    s = torch.tensor([0.0, 1.0, 2.0]).untyped_storage()\n"
        "    return torch.empty(0).set_(s, 0, (2, 2), (1, 1)).requires_grad_()\n"
        "b = base()\n"
        "b.select(0, 0).sum().backward()\n"
        "with functorch_config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(base().select(0, 0))\n"
        "with mode:\n"
        "    f.sum().backward()\n"
        "assert type(f.grad_fn).__name__ == 'AsStridedBackward0'\n"
        "assert b.grad.tolist() == [[1.0, 1.0], [0.0, 0.0]]\n"
        "assert f._base.grad.real_tensor.tolist() == [[0.5, 0.25], [0.25, 0.0]]\n"
    ),
))


def _as_strided_of_a_view(t: Any) -> bool:
    """An as_strided view taken of another view (not straight from the
    leaf), anywhere in ``t``'s history (``torch._neg_view`` of it too): an
    AsStridedBackward0 whose input is no AccumulateGrad."""
    def of_a_view(fn: Any) -> bool:
        inputs = [_node_name(n) for n, _ in fn.next_functions if n is not None]
        return (_node_name(fn) == "AsStridedBackward0" and bool(inputs)
                and "AccumulateGrad" not in inputs)

    return any(of_a_view(fn) for fn in _history(t, 50))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-as-strided-of-a-view-grad-reaches-the-base",
    check="behaviour",
    attribute=r"values",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "values" and d.path.endswith(".grad.real_tensor"),
        in_family=_as_strided_of_a_view),
    converters=where(carries_real=True),
    reason=(
        "as_strided of a view (t0[0:0].as_strided((), (), 1)) may read base elements the "
        "view does not hold; eager's as_strided backward gives the gradient to the view's "
        "own elements only (none here), so the base's .grad stays 0 there.  The converted "
        "view is rebuilt as one as_strided of the base, skipping the view between: the "
        "gradient reaches those base elements, and the real tensor a fake carries gets a "
        ".grad of other values (a control made under the mode keeps the view between and "
        "agrees with eager)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "import torch._functorch.config as functorch_config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def view():\n"
        "    base = torch.arange(2.0, requires_grad=True)\n"
        "    return base[0:0].as_strided((), (), 1)\n"
        "v = view()\n"
        "v.sum().abs().backward()\n"
        "assert v._base.grad.tolist() == [0.0, 0.0]\n"
        "with functorch_config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(view())\n"
        "with mode:\n"
        "    f.sum().abs().backward()\n"
        "assert f._base.grad.real_tensor.tolist() == [0.0, 1.0]\n"
    ),
))


def _as_strided_in_a_chain(t: Any) -> bool:
    """An as_strided in ``t``'s view chain other than one lone as_strided of
    the leaf: taken of a view (:func:`_as_strided_of_a_view`), or followed
    by further views (``base.as_strided((), (), 0).view(-1)[1:1]``)."""
    later = [_node_name(fn) for fn in _history(t, 32, first_inputs_only=True)][1:]
    return "AsStridedBackward0" in later or _as_strided_of_a_view(t)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-as-strided-chain-grad-offset",
    check="behaviour",
    attribute=r"storage_offset\(\)",
    # (a dtype view on the way: behaviour-dtype-view-as-strided-grad-offset)
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "storage_offset()" and d.path.endswith(".grad"),
        in_family=lambda t: _as_strided_in_a_chain(t) and not _as_strided_of_a_dtype_view(t)),
    reason=(
        "the layout of a base's .grad depends on the view chain it came through: through "
        "an as_strided view between (base.as_strided((), (), 0).as_strided((), (), 1)), or "
        "followed by other views (base.as_strided((), (), 0).view(-1)[1:1]), eager's (and a "
        "control's made under the mode) starts at the base's storage offset (1); one "
        "as_strided straight from the base gives offset 0, in eager as on fakes. "
        "The converted view is rebuilt as one as_strided of the base, so its base's .grad "
        "starts at 0"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def base():\n"
        "    s = torch.zeros(2).untyped_storage()\n"
        "    return torch.empty(0).set_(s, 1, (), ()).requires_grad_()\n"
        "def grad_offset(chain):\n"
        "    b = base()\n"
        "    v = b.as_strided((), (), 0).as_strided((), (), 1) if chain else "
        "b.as_strided((), (), 1)\n"
        "    v.sum().abs().backward()\n"
        "    return b.grad.storage_offset()\n"
        "assert (grad_offset(True), grad_offset(False)) == (1, 0)  # eager: the chain decides\n"
        "mode = FakeTensorMode()\n"
        "b = base()\n"
        "f = mode.from_tensor(b.as_strided((), (), 0).as_strided((), (), 1))\n"
        "with mode:\n"
        "    f.sum().abs().backward()\n"
        "assert f._base.grad.storage_offset() == 0  # the chain collapsed\n"
    ),
))


def _conj_view(t: Any) -> bool:
    from ...strategies.tensor_facts import is_view

    return is_view(t) and t.is_conj()


# An is_leaf the converted side could not read (None) where the real side
# could, and a conjugate view in the family.
behaviour_conj_view_autograd_unreadable = _behaviour_recorded(
    "behaviour_differences",
    lambda d: d.attribute == "is_leaf" and d.fake == "None" and d.real != "None",
    in_family=_conj_view)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-conj-view-autograd-replay",
    check="behaviour",
    attribute=r"is_leaf",
    applies=behaviour_conj_view_autograd_unreadable,
    reason=(
        "a converted conjugate view is rebuilt from its base with as_strided and the conj "
        "bit; after an in-place op under no_grad on a view of it (.real), reading the "
        "view's is_leaf regenerates its autograd history by replaying its views, and the "
        "replay calls view_as_real on an unresolved conjugate tensor: 'view_as_real doesn't "
        "work on unresolved conjugated tensors'.  Eager, and the same views made directly "
        "under the FakeTensorMode, answer"
    ),
    link=UNFILED,
    reproducer=(
        'import torch\n'
        'from torch._subclasses.fake_tensor import FakeTensorMode\n'
        'x = torch.zeros(2, dtype=torch.complex64, requires_grad=True)\n'
        'v = x.conj()\n'
        'r = v.real\n'
        'with torch.no_grad():\n'
        '    r.zero_()\n'
        'assert not r.is_leaf\n'
        'mode = FakeTensorMode()\n'
        'f = mode.from_tensor(v)\n'
        'with mode:\n'
        '    fr = f.real\n'
        '    with torch.no_grad():\n'
        '        fr.zero_()\n'
        '    try:\n'
        '        fr.is_leaf\n'
        '    except RuntimeError as e:\n'
        "        assert 'unresolved conjugated' in str(e)\n"
        '    else:\n'
        "        raise AssertionError('is_leaf read')\n"
        'with mode:  # made directly under the mode, not converted: as eager\n'
        '    y = torch.zeros(2, dtype=torch.complex64, requires_grad=True).conj().real\n'
        '    with torch.no_grad():\n'
        '        y.zero_()\n'
        '    assert not y.is_leaf\n'
    ),
))

def _item_memo_stale(step: StepCase) -> bool:
    """An in-place step after which a converted 0-dim float tensor's real
    value is not the value its fake remembers a symbol for (``item_memo``)."""
    import math

    from ...strategies.torch_errors import safe

    if not _calls_in_place_op(step.statement):
        return False
    for name in step.inputs:
        r, f = step.real.get(name), step.fake.get(name)
        memo = getattr(f, "item_memo", None)
        # (an int64 tensor's in-place op makes item() a fresh unbacked symbol)
        if (memo is None or r is None or not _plain(r) or r.dim() != 0
                or not r.dtype.is_floating_point):
            continue
        real = r
        hint, value = safe(lambda: memo.node.hint), safe(lambda: real.item())
        if hint is None or value is None:
            continue
        if hint != value and not (isinstance(value, float) and math.isnan(value)
                                  and math.isnan(float(hint))):
            return True
    return False


def _calls_in_place_op(source: str) -> bool:
    from .operators import IN_PLACE_CALL

    return re.search(IN_PLACE_CALL, source) is not None


# In-place ops real-tensor propagation applies once under a ShapeEnv, as
# eager does (tests/test_behaviour.py checks each): a difference in the
# values they leave in a carried real tensor is not this entry's.
APPLIED_ONCE = frozenset({"add_", "mul_", "sub_", "div_", "copy_", "zero_", "fill_"})


def _only_applied_once(source: str) -> bool:
    """Whether every in-place op a step calls is one of APPLIED_ONCE (div_
    with a rounding mode is another overload, applied twice)."""
    from .operators import IN_PLACE_CALL

    called = {m.group(0)[1:].split(".")[0].rstrip("(") for m in re.finditer(IN_PLACE_CALL, source)}
    return called <= APPLIED_ONCE and "rounding_mode=" not in source


def _composite_in_place_in_inference_mode(source: str) -> bool:
    from .operators import composite_in_place_in_inference_mode

    return composite_in_place_in_inference_mode(source)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-composite-in-place-version-in-inference-mode",
    check="behaviour",
    attribute=r"_version bump|values|raised|is_leaf|requires_grad",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute in ("_version bump", "values", "raised", "is_leaf", "requires_grad")
        and (d.attribute != "raised" or d.fake == "nothing")
        and _composite_in_place_in_inference_mode(d.source)),
    converters=where(fake_tensors=True),
    reason=(
        "the operator difference op:composite-in-place-version-in-inference-mode (an alias "
        "in-place op such as less_equal_ or fix_ in inference mode leaves a fake's version, "
        "and the real tensor it carries, as they were), where the control made under the mode "
        "does not show it; eager's autograd records the write on a view (reading is_leaf "
        "then raises) and the fake's does not; on a fake with symbolic sizes the alias's own "
        "checks are skipped too (float_power_ of a complex64 tensor runs, where eager refuses "
        "the dtype)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch import config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "    f = mode.from_tensor(torch.ones(2))\n"
        "    with mode, torch.inference_mode():\n"
        "        f.less_equal_(0.5)\n"
        "assert f._version == 0 and f.real_tensor.tolist() == [1., 1.]  # eager: 1, [0., 0.]\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, "
        "StatelessSymbolicContext\n"
        "from torch._dynamo.source import ConstantSource\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC], "
        "constraint_sizes=[None])\n"
        "c = mode.from_tensor(torch.zeros(2, dtype=torch.complex64), source=ConstantSource('c'), "
        "symbolic_context=ctx)\n"
        "with mode, torch.inference_mode():\n"
        "    c.float_power_(c.clone())  # eager: RuntimeError (the base's dtype)\n"
    ),
))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-sizes-in-a-concrete-kernel",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and d.real.startswith("RuntimeError: ")
        and re.search(r"SymIntArrayRef expected to contain only concrete integers|"
                      r"Cannot call \w+\(\) on tensor with symbolic sizes/strides", d.fake)
        is not None),
    converters=where(symbolic=True),
    reason=(
        "an op whose eager kernel refuses the arguments (addbmm_ of tensors with no elements: "
        "'expand(...): the number of sizes provided (2) must be greater or equal ...') reaches, "
        "on a fake with symbolic sizes, a C++ kernel that takes concrete sizes only and raises "
        "'SymIntArrayRef expected to contain only concrete integers' first (_make_dual outside "
        "a forward-AD level: 'Cannot call storage_offset() on tensor with symbolic "
        "sizes/strides'): both refuse, in other words"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, "
        "StatelessSymbolicContext\n"
        "from torch._dynamo.source import ConstantSource\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 3, "
        "constraint_sizes=[None] * 3)\n"
        "f = mode.from_tensor(torch.zeros(4, 0, 4, dtype=torch.float64), "
        "source=ConstantSource('f'), symbolic_context=ctx)\n"
        "with mode:\n"
        "    try:\n"
        "        f.addbmm_(f, f)\n"
        "    except RuntimeError as e:\n"
        "        assert 'SymIntArrayRef expected to contain only concrete integers' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('addbmm_ ran')\n"
    ),
))


def _is_functional(t: Any) -> bool:
    """A C++ functional tensor (``torch._to_functional_tensor``)."""
    import torch

    return bool(torch._is_functional_tensor(t))


def _slices_a_symbolic_functional_tensor(step: StepCase) -> bool:
    """A step eager runs that slices (``t[a:b]`` alone, ``narrow``,
    ``diagonal``: each always calls aten's slice kernel; a full slice among
    other indices may be skipped) a C++ functional tensor, outside functorch
    levels, whose converted value has symbolic sizes."""
    import torch

    from ...strategies.tensor_facts import functional_value

    call = re.match(r"\s*(?:\w+\s*=\s*)?(\w+)(?:\[[^],]*:[^],]*\]|\.narrow\(|\.diagonal\()",
                    step.statement)
    if step.real_raised is not None or call is None:
        return False
    converted = step.fake.get(call.group(1))
    value = functional_value(converted)
    # (inside a torch.func.functionalize level, slicing takes another path and runs)
    return (value is not None and converted is not None
            and torch._C._functorch.maybe_get_level(converted) == -1 and _symbolic(value))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-functional-tensor-in-concrete-kernels",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and d.real == "nothing"
        and re.search(r"Cannot call storage_offset\(\) on tensor with symbolic sizes/strides|"
                      r"SymIntArrayRef expected to contain only concrete integers", d.fake)
        is not None,
        in_family=_is_functional),
    on_step=OnStep(r"\[[^],]*:[^],]*\]|\.narrow\(|\.diagonal\(",
                   lambda step: _slices_a_symbolic_functional_tensor(step)),
    converters=where(symbolic=True),
    reason=(
        "a C++ functional tensor whose value is a fake with symbolic sizes reaches C++ code "
        "that takes concrete sizes only: slicing it (t[0:1], narrow) raises 'Cannot call "
        "storage_offset() on tensor with symbolic sizes/strides' (slice_copy's meta kernel "
        "reads the wrapper's offset), and a backward through it 'SymIntArrayRef expected to "
        "contain only concrete integers', where eager runs both; a functional tensor made "
        "under the mode of a symbolic fake raises too, so no static control shows it"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, "
        "StatelessSymbolicContext\n"
        "from torch._dynamo.source import ConstantSource\n"
        "def program(f):\n"
        "    f[0:1]\n"
        "def backward(f):\n"
        "    f.requires_grad_(True)\n"
        "    f.sum().abs().backward()\n"
        "for run, error in ((program, 'Cannot call storage_offset() on tensor with symbolic'),\n"
        "                   (backward, 'SymIntArrayRef expected to contain only concrete')):\n"
        "    run(torch._to_functional_tensor(torch.zeros(2)))  # eager: runs\n"
        "    mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "    ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC], "
        "constraint_sizes=[None])\n"
        "    f = mode.from_tensor(torch._to_functional_tensor(torch.zeros(2)), "
        "source=ConstantSource('f'), symbolic_context=ctx)\n"
        "    with mode:\n"
        "        try:\n"
        "            run(f)\n"
        "        except RuntimeError as e:\n"
        "            assert error in str(e), e\n"
        "        else:\n"
        "            raise AssertionError(f'{run.__name__} ran')\n"
    ),
))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-split-sizes-error-class",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised"
        and d.real.startswith("RuntimeError: split_with_sizes expects split_sizes to sum")
        and d.fake.startswith("ValueError: Split sizes add up to")),
    on_step=OnStep(r"\.split\(\[", lambda step: _symbolic_receiver_refused(
        step, "RuntimeError: split_with_sizes expects split_sizes to sum")),
    converters=where(symbolic=True),
    reason=(
        "the operator difference op:split-sizes-error-class (split sizes that do not add up, "
        "on a tensor with symbolic sizes: RuntimeError in eager, ValueError on the fake), where "
        "the control made under the mode has static sizes and does not show it"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, "
        "StatelessSymbolicContext\n"
        "from torch._dynamo.source import ConstantSource\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC], "
        "constraint_sizes=[None])\n"
        "f = mode.from_tensor(torch.zeros(2), source=ConstantSource('x'), symbolic_context=ctx)\n"
        "with mode:\n"
        "    try:\n"
        "        f.split([1, 2])\n"
        "    except ValueError as e:\n"
        "        assert 'Split sizes add up to 3' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('split ran')\n"
    ),
))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-stale-item-memo",
    check="behaviour",
    attribute=r"item\(\)",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "item()" and _calls_in_place_op(d.source)),
    on_step=OnStep(r"\.\w+_\(", lambda step: _item_memo_stale(step)),
    converters=where(symbolic=True),
    reason=(
        "a 0-dim float64 or int64 tensor converted with a ShapeEnv and a source remembers a "
        "symbol for its value (item_memo, whose hint is the value); an in-place op changes the "
        "value and leaves the symbol, so item() of the fake answers the old value (and code "
        "specialized on it is wrong)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "from torch._dynamo.source import ConstantSource\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "f = mode.from_tensor(torch.tensor(0.5, dtype=torch.float64), source=ConstantSource('x'))\n"
        "with mode:\n"
        "    f.add_(1)\n"
        "assert f.item_memo.node.hint == 0.5  # eager: 1.5\n"
    ),
))


def _random_op_carried_values_entry() -> KnownDifference:
    from .operators import RANDOM_CARRIED_VALUES_REPRODUCER

    return KnownDifference(
        id="behaviour-random-op-carried-values",
        check="behaviour",
        attribute=r"values",
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: d.attribute == "values" and d.path.endswith(".real_tensor")
            and "generator=" in d.source),
        converters=where(carries_real=True),
        reason=(
            "the operator difference op:random-op-carried-values (a random in-place op given a "
            "generator: the real tensor a fake carries draws other numbers than eager), where "
            "the control made under the mode does not show it"
        ),
        link=UNFILED,
        reproducer=RANDOM_CARRIED_VALUES_REPRODUCER,
    )


_BEHAVIOUR_ENTRIES.append(_random_op_carried_values_entry())


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-real-propagation-repeats-in-place-op",
    check="behaviour",
    attribute=r"values|raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: _calls_in_place_op(d.source) and not _only_applied_once(d.source) and (
            (d.attribute == "values" and d.path.endswith(".real_tensor"))
            or (d.attribute == "raised" and d.real == "nothing"
                and ("Real tensor propagation found a metadata mismatch" in d.fake
                     or "Please convert all Tensors to FakeTensors first" in d.fake
                     or "more than one element of the written-to tensor refers to a single "
                        "memory location" in d.fake)))),
    converters=where(symbolic=True, carries_real=True),
    reason=(
        "with a ShapeEnv and real-tensor propagation, in-place ops that FakeTensorMode "
        "decomposes (neg_, exp_, sin_, pow_, cumsum_, lt_ with a scalar, ...; not add_, "
        "mul_, sub_, div_ or copy_, which the entry leaves out) are applied twice to the real tensor a fake carries: after neg_ it holds the "
        "original values, after exp_ exp(exp(x)); where the decomposition checks the real "
        "result's metadata on the way (copysign_, floor_divide_: prims.signbit), it raises "
        "MetadataMismatchError instead, or, where it makes a tensor of a Python number "
        "(copysign_(-1)), 'Please convert all Tensors to FakeTensors first', and where it "
        "writes with a kernel that checks for overlapping elements (tril_ of an expanded "
        "tensor, which eager's tril_ does not check), 'more than one element of the written-to "
        "tensor refers to a single memory location'; without a ShapeEnv they are applied once "
        "(index_add_ is applied twice with or without one: "
        "behaviour-real-propagation-counts-as-strided-grad-twice)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch import config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "from torch._dynamo.source import ConstantSource\n"
        "x = torch.tensor([1., 2.])\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "    f = mode.from_tensor(x, source=ConstantSource('x'))\n"
        "    g = mode.from_tensor(x.clone(), source=ConstantSource('g'))\n"
        "    with mode:\n"
        "        f.neg_()\n"
        "        try:\n"
        "            g.copysign_(g)\n"
        "        except Exception as e:\n"
        "            assert 'Real tensor propagation found a metadata mismatch' in str(e)\n"
        "        else:\n"
        "            raise AssertionError('copysign_ ran')\n"
        "    e = mode.from_tensor(torch.zeros(1, 2).expand(2, 2), source=ConstantSource('e'))\n"
        "    with mode:\n"
        "        try:\n"
        "            e.tril_()  # eager runs\n"
        "        except RuntimeError as error:\n"
        "            assert 'refers to a single memory location' in str(error)\n"
        "        else:\n"
        "            raise AssertionError('tril_ ran')\n"
        "assert f.real_tensor.tolist() == [1., 2.]  # eager: [-1., -2.]\n"
    ),
))


def strides_may_overlap(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether torch's as_strided backward takes a geometry for one that may
    overlap (``_maybe_overlapping_memory`` in FunctionsManual.cpp, on the
    geometry without its size-1 dimensions): some stride, taken in
    increasing order, is not beyond the largest index the dimensions before
    it reach -- interleaved strides such as (3, 2) for sizes (2, 3) too,
    which overlap nothing."""
    reach = 0
    for size, stride in sorted(((n, abs(s)) for n, s in zip(sizes, strides) if n != 1),
                               key=lambda d: d[1]):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def _view_of_a_base_that_may_overlap(t: Any) -> bool:
    base = t._base
    return (base is not None and layout_name(base) == "strided"
            and strides_may_overlap(tuple(base.shape), tuple(base.stride())))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-real-propagation-counts-as-strided-grad-twice",
    check="behaviour",
    attribute=r"values",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: (d.attribute == "values" and d.path.endswith(".grad.real_tensor")
                   and re.search(r"\.backward\(|autograd\.grad\(", d.source) is not None),
        in_family=_view_of_a_base_that_may_overlap),
    converters=where(carries_real=True),
    reason=(
        "real-tensor propagation applies index_add_ twice to the real tensor a fake carries "
        "(with a ShapeEnv or without), and as_strided's backward counts with index_add_ how "
        "often each element of its input is used where the input's strides may overlap "
        "(interleaved strides, such as (3, 2) for sizes (2, 3), which overlap nothing): each "
        "count is 2, and the gradient that reaches the base's real tensor is halved.  A "
        "converted view whose base has such strides is rebuilt with as_strided (its "
        "grad_fn is AsStridedBackward0, eager's SelectBackward0 or another view's), so a "
        "backward through it leaves the base's carried .grad half of eager's .grad; the "
        "fake's own metadata agrees"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch import config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "base = torch.empty_strided((2, 3), (3, 2)).zero_().requires_grad_()\n"
        "base.select(0, 0).sum().backward()\n"
        "assert base.grad.flatten().tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "view = torch.empty_strided((2, 3), (3, 2)).zero_().requires_grad_().select(0, 0)\n"
        "f = mode.from_tensor(view)\n"
        "assert type(f.grad_fn).__name__ == 'AsStridedBackward0'  # eager's: SelectBackward0\n"
        "with mode:\n"
        "    f.sum().backward()\n"
        "assert f._base.grad.real_tensor.flatten().tolist() == [0.5, 0.5, 0.5, 0.0, 0.0, 0.0]\n"
        "# the operator's part: op:real-propagation-counts-as-strided-grad-twice\n"
    ),
))


def _unbinds_an_empty_dimension(step: StepCase) -> bool:
    """``t.unbind(d)`` of a plain tensor whose dimension ``d`` has size 0."""
    call = re.search(r"\.unbind\((-?\d*)\)", step.statement)
    called = _receiver(step)
    if call is None or called is None or called[2] != "unbind" or not _plain(called[0]):
        return False
    r = called[0]
    d = int(call.group(1) or 0)
    return -r.dim() <= d < r.dim() and r.shape[d] == 0


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-real-propagation-unbind-of-empty-dimension",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and "unbind" in d.source
        and d.fake.startswith("ValueError: not enough values to unpack")),
    on_step=OnStep(r"\.unbind\(", lambda step: _unbinds_an_empty_dimension(step)),
    converters=where(carries_real=True),
    reason=(
        "unbind of a dimension of size 0 with real-tensor propagation: the fake raises "
        "ValueError ('not enough values to unpack') while checking the real outputs against "
        "the fake ones, where eager returns no tensors (and a program indexing them raises "
        "IndexError); fakes made under the mode do the same"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch import config\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "assert torch.zeros(0, 2).unbind() == ()\n"
        "with config.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "    f = mode.from_tensor(torch.zeros(0, 2))\n"
        "    with mode:\n"
        "        try:\n"
        "            f.unbind()\n"
        "        except ValueError as e:\n"
        "            assert 'not enough values to unpack' in str(e)\n"
        "        else:\n"
        "            raise AssertionError('unbind ran')\n"
    ),
))

def _sparse_coo(t: Any) -> bool:
    return layout_name(t) == "sparse_coo"


def _symbolic_sparse_refuses(step: StepCase) -> bool:
    """``t()``, ``transpose``, ``t_()``, ``zero_()`` or ``mul_`` that eager
    ran, called on a sparse COO fake with symbolic sizes."""
    import torch

    from ...strategies.torch_errors import safe

    called = _receiver(step)
    return (step.real_raised is None and called is not None
            and called[2] in ("t", "transpose", "t_", "zero_", "mul_")
            and safe(lambda: called[1].layout == torch.sparse_coo, False)
            and _symbolic(called[1]))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-sparse-op-unsupported",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d.attribute == "raised" and (
            d.fake.startswith("UnsupportedOperatorException: aten.")
            or "Could not run 'aten::as_strided' with arguments from the 'SparseCPU'" in d.fake
            or "resize_and_clear_ called on tensor with symbolic shape" in d.fake
            or "raw_resize_ called on tensor with symbolic shape" in d.fake
            or "Cannot access storage of SparseTensorImpl" in d.fake),
        in_family=_sparse_coo),
    on_step=OnStep(r"\.(t|transpose|t_|zero_|mul_)\(",
                   lambda step: _symbolic_sparse_refuses(step)),
    converters=where(symbolic=True),
    since="2.13",  # (torch 2.11 runs them)
    reason=(
        "a sparse COO fake with symbolic sizes: FakeTensorMode refuses transpose and t() "
        "(they decompose to as_strided, which has no sparse rule: UnsupportedOperatorException; "
        "with real-tensor propagation, the real sparse tensor refuses as_strided, or the "
        "propagation asks the sparse tensor for its storage) and mul_, "
        "and zero_() raises 'resize_and_clear_ called on tensor with symbolic shape' (t_(): "
        "'raw_resize_ called on tensor with symbolic shape'); all "
        "run on the real tensor and on a fake with static sizes; fakes made under the mode "
        "have static sizes, so the control cannot show it"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode, "
        "UnsupportedOperatorException\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, "
        "StatelessSymbolicContext\n"
        "from torch._dynamo.source import ConstantSource\n"
        "s = torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()\n"
        "assert s.transpose(0, 1).layout == torch.sparse_coo\n"
        "mode = FakeTensorMode(shape_env=ShapeEnv())\n"
        "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 2, "
        "constraint_sizes=[None] * 2)\n"
        "f = mode.from_tensor(s, source=ConstantSource('x'), symbolic_context=ctx)\n"
        "with mode:\n"
        "    try:\n"
        "        f.transpose(0, 1)\n"
        "    except UnsupportedOperatorException:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError('symbolic sparse transpose ran')\n"
    ),
))


def _both_raised(real_says: str, fake_says: str, step_has: str = "") -> Callable[
        [StepDifference], bool]:
    """A step both sides refuse, each in its own words: the real error
    contains ``real_says``, the fake's ``fake_says`` (and the step's source
    ``step_has``)."""
    return lambda d: (d.attribute == "raised" and step_has in d.source
                      and real_says in d.real and fake_says in d.fake)


_inference_view_error_order = _both_raised(
    "IndexError: Dimension out of range", "Cannot set version_counter for inference tensor",
    step_has="inference_mode")


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-inference-view-error-order",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded("behaviour_differences", _inference_view_error_order),
    converters=where(symbolic=True),
    reason=(
        "an out-of-range view of a wrapper subclass (TwoTensor) in inference mode, on a fake "
        "with symbolic sizes: both sides refuse, eager with 'IndexError: Dimension out of "
        "range', the fake first with 'Cannot set version_counter for inference tensor' "
        "(return_and_correct_aliasing sets the view's version counter before the inner view "
        "op checks its dims)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "t = TwoTensor(torch.zeros(0), torch.zeros(0))\n"
        "with torch.inference_mode():\n"
        "    try:\n"
        "        t[:, 0:0]\n"
        "    except IndexError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError('eager view ran')\n"
    ),
))


def _symbolic_receiver_refused(step: StepCase, *eager_says: str) -> bool:
    """A step eager refuses with one of ``eager_says``, calling a method of
    a plain fake with symbolic sizes that carries no real tensor (real-tensor
    propagation runs eager's op first, and raises eager's error)."""
    called = _receiver(step)
    return (step.real_raised is not None and any(w in step.real_raised for w in eager_says)
            and called is not None and _plain_fake(called[1]) and _symbolic(called[1])
            and getattr(called[1], "real_tensor", None) is None)


_expand_too_few_sizes = _both_raised("the number of sizes provided",
                                     "the requested shape has too few dimensions")
_expand_size_mismatch = _both_raised("The expanded size of the tensor",
                                     "expand: attempting to expand a dimension of length")
_expand_leading_minus_one = _both_raised("isn't allowed in a leading, non-existing dimension",
                                         "Expected cond to be True, but got False",
                                         step_has=".expand(")


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-expand-error-wording",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences", lambda d: (_expand_too_few_sizes(d) or _expand_size_mismatch(d)
                                            or _expand_leading_minus_one(d))),
    on_step=OnStep(r"\.expand\(", lambda step: _symbolic_receiver_refused(
        step, "the number of sizes provided", "The expanded size of the tensor")),
    converters=where(symbolic=True),
    reason=(
        "expand() given fewer sizes than the tensor has dimensions, on a fake with symbolic "
        "sizes: both sides refuse for the same rule, eager with 'the number of sizes provided "
        "(3) must be greater or equal to the number of dimensions in the tensor (4)', the "
        "symbolic path (torch._refs) with 'expand: the requested shape has too few "
        "dimensions!'; and given a size other than a dimension's own (not 1), eager with "
        "'The expanded size of the tensor (2) must match the existing size (0) ...', "
        "torch._refs with 'expand: attempting to expand a dimension of length 0 -> 2!'; "
        "and given -1 for a new leading dimension, eager with 'The expanded size of the "
        "tensor (-1) isn't allowed in a leading, non-existing dimension 0', torch._refs with "
        "'Expected cond to be True, but got False'; "
        "fakes made under the mode have static sizes and word it as eager does"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "try:\n"
        "    torch.zeros(1, 0, 1, 2).expand((0, 3, 2))\n"
        "except RuntimeError as e:\n"
        "    assert 'the number of sizes provided' in str(e)\n"
        "else:\n"
        "    raise AssertionError('expand ran')\n"
    ),
))

@reads_record("behaviour_differences")
@family_wide
def _leaf_view_left_without_grad(case: Case) -> bool:
    """A tensor got a .grad on the real side only, and it has the shape of a
    leaf view (made to require grad on a view of a base that does not) that
    a view of the family reaches in backward.  (By shape: the difference is
    named in the program's names, which are not the family's.)"""
    from ...strategies.tensor_facts import leaf_view_reached

    shapes = {d.shape for d in getattr(case.conversion, "behaviour_differences", ())
              if d.attribute == "grad is not None" and d.real == "True" and d.fake == "False"}
    if not shapes:
        return False
    reached = [leaf_view_reached(u) for u in case.family]
    return any(leaf is not None and tuple(leaf.shape) in shapes for leaf in reached)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-view-of-leaf-view-disconnected",
    check="behaviour",
    attribute=r"grad is not None",
    applies=_leaf_view_left_without_grad,
    reason=(
        "a view made from a leaf view (requires_grad_() called on a view of a base that "
        "does not require grad) is converted from the root with a fresh leaf view in "
        "between (MetaConverter.meta_tensor's 'obscure case', base.view(base.shape)), not "
        "from the converted leaf view: a backward through the converted view never reaches "
        "the converted leaf, whose .grad stays None where the real one gets a gradient "
        "(torch's own comment there: 'We don't actually faithfully replicate autograd "
        "connectivity'); every converter"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/88205",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.zeros(2, 3)\n"
        "leaf = x[0]\n"
        "leaf.requires_grad_()\n"
        "v = leaf.unsqueeze(0)\n"
        "mode = FakeTensorMode()\n"
        "f_leaf, f_v = mode.from_tensor(leaf), mode.from_tensor(v)\n"
        "v.sum().backward()\n"
        "with mode:\n"
        "    f_v.sum().backward()\n"
        "assert leaf.grad is not None and f_leaf.grad is None\n"
    ),
))


def _view_of_a_view(t: Any) -> bool:
    """A view whose autograd history passes another view before its leaf
    (t.unsqueeze(0).transpose(0, 1)): the converters rebuild it from the
    root, not from the view between."""
    from ...strategies.tensor_facts import is_view

    if not is_view(t):
        return False
    chain = [_node_name(fn) for fn in _history(t, 16, first_inputs_only=True)]
    return len([n for n in chain if n != "AccumulateGrad"]) >= 2


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-retained-grad-of-a-view-bypassed",
    check="behaviour",
    attribute=r"result is a tensor|grad is not None",
    applies=_behaviour_recorded(
        "behaviour_differences",
        # (read after the backward, as the view's .grad, or when a step reads it)
        lambda d: d.real == "True" and d.fake == "False" and (
            (d.attribute == "grad is not None" and "backward(" in d.source)
            or (d.attribute == "result is a tensor"
                and re.search(r"\.grad\b", d.source) is not None)),
        in_family=_view_of_a_view),
    reason=(
        "retain_grad() on a view (t1 = t0.unsqueeze(0)), then a backward through a view made "
        "from it (t2 = t1.transpose(0, 0)): in eager the backward passes t1's node, which "
        "keeps its gradient; the converters rebuild every view from the root (as_strided of "
        "t0, 'we don't actually faithfully replicate autograd connectivity'), so the "
        "backward through the converted t2 never passes the converted t1, whose .grad stays "
        "None (a control made under the mode keeps the chain and agrees with eager); as "
        "behaviour-view-of-leaf-view-disconnected, for a view of a leaf that requires grad"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/88205",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def views():\n"
        "    t0 = torch.zeros(3, requires_grad=True)\n"
        "    t1 = t0.unsqueeze(0)\n"
        "    return t1, t1.transpose(0, 0)\n"
        "t1, t2 = views()\n"
        "t1.retain_grad()\n"
        "t2.sum().backward()\n"
        "assert t1.grad is not None\n"
        "mode = FakeTensorMode()\n"
        "f1, f2 = (mode.from_tensor(t) for t in views())\n"
        "with mode:\n"
        "    f1.retain_grad()\n"
        "    f2.sum().backward()\n"
        "assert f1.grad is None\n"
    ),
))


def _grad_accumulated_on_the_fake_side_only(d: Any) -> bool:
    """A backward after which a tensor (a .grad the program named) has its
    version bumped on the converted side only: a gradient accumulated into it."""
    return (d.attribute == "_version bump" and ".backward(" in d.source and d.real == "0"
            and d.fake != "0")


def _view_cut_off_from_its_base(t: Any) -> bool:
    """A view with a history of its own that never reaches its base's leaf:
    made (grad on) from a view taken in no_grad or inference mode, whose
    history stops there (x.detach()-like: no grad_fn)."""
    from ...strategies.tensor_facts import base_of, is_view

    base = base_of(t) if is_view(t) else None
    if base is None or t.grad_fn is None or not base.requires_grad:
        return False
    return all(_node_name(fn) != "AccumulateGrad" for fn in _history(t, 16))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-view-past-a-no-grad-view-reconnected",
    check="behaviour",
    attribute=r"grad is not None|_version bump",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: _grad_on_the_fake_side_only(d) or _grad_accumulated_on_the_fake_side_only(d),
        in_family=_view_cut_off_from_its_base),
    reason=(
        "a view made with grad on from a view taken in no_grad mode (t1 = t0[...] under "
        "no_grad, t2 = t1.unbind(0)[0]): in eager t2's history stops at t1, which has none, "
        "so a backward through t2 leaves its base's .grad None; the converters rebuild t2 "
        "from the root (as_strided of t0, 'we don't actually faithfully replicate autograd "
        "connectivity'), so a backward through the converted t2 reaches the converted t0, "
        "which gets a .grad (or, where it has one already, accumulates into it: its version "
        "is bumped on the converted side only) (a control made under the mode keeps the "
        "chain and agrees with eager); as behaviour-retained-grad-of-a-view-bypassed, the "
        "other way round"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/issues/88205",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def views():\n"
        "    t0 = torch.zeros(1, requires_grad=True)\n"
        "    with torch.no_grad():\n"
        "        t1 = t0[...]\n"
        "    return t0, t1.unbind(0)[0]\n"
        "t0, t2 = views()\n"
        "t2.sum().backward()\n"
        "assert t0.grad is None\n"
        "mode = FakeTensorMode()\n"
        "f0, f2 = (mode.from_tensor(t) for t in views())\n"
        "with mode:\n"
        "    f2.sum().backward()\n"
        "assert f0.grad is not None\n"
    ),
))


@reads_record("behaviour_differences")
@family_wide
def _values_of_a_coo_made_in_inference_mode(case: Case) -> bool:
    """The values of a COO tensor that to_sparse() made in inference mode
    share no version counter on the fake side, where they share it in eager."""
    program = getattr(case.conversion, "program", None)
    made = {s.output for s in getattr(program, "steps", ())
            if s.output and s.context == "torch.inference_mode()" and ".to_sparse(" in s.statement}
    if not made:
        return False
    values = re.compile(r"\b(%s)\._?values\(\)" % "|".join(map(re.escape, sorted(made))))
    return any(d.attribute == "version counter sharing" and d.fake == "shared with nothing"
               and values.search(d.source) is not None
               for d in getattr(case.conversion, "behaviour_differences", ()))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-inference-to-sparse-values-version",
    check="behaviour",
    attribute=r"version counter sharing",
    applies=_values_of_a_coo_made_in_inference_mode,
    converters=where(fake_tensors=True),
    reason=(
        "to_sparse() of a compressed tensor in inference mode: in eager the values of the "
        "COO tensor it makes share their version counter with the compressed tensor (an "
        "in-place op on COO._values() bumps its _version); a fake's to_sparse() makes "
        "values of their own, so nothing is bumped.  Seen on tensors with no elements (with "
        "elements a sparse fake's count of elements differs first); an operator "
        "difference that no control shows, as FakeTensorMode cannot make a compressed "
        "tensor from index tensors"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def bumps(t):\n"
        "    with torch.inference_mode():\n"
        "        coo = t.to_sparse()\n"
        "    before = t._version\n"
        "    coo._values().add_(1)\n"
        "    return t._version - before\n"
        "csr = torch.sparse_csr_tensor(torch.tensor([0]), torch.empty((0,), dtype=torch.int64),\n"
        "                              torch.zeros(0), (0, 1))\n"
        "assert bumps(csr) == 1\n"
        "mode = FakeTensorMode()\n"
        "f = mode.from_tensor(csr)\n"
        "with mode:\n"
        "    assert bumps(f) == 0\n"
    ),
))


def _as_strided_of_a_dtype_view(t: Any) -> bool:
    """A view with another dtype than its base, reached through an
    as_strided (t.real.as_strided(...), or t.as_strided(...).real): its
    autograd history, walked back towards the leaf, meets AsStridedBackward0."""
    if t._base is None or t._base.dtype == t.dtype:
        return False
    return any(_node_name(fn) == "AsStridedBackward0"
               for fn in _history(t, 32, first_inputs_only=True))


def _backward_through_a_rebuilt_dtype_view(d: StepDifference) -> bool:
    """A backward whose base's .grad got another storage offset, or that
    refused the odd offset of a gradient on the converted side."""
    if "backward" not in d.source:
        return False
    if d.attribute == "storage_offset()":
        # (the carried real tensor's too, on a converter that carries it)
        return d.path.endswith((".grad", ".grad.real_tensor"))
    return (d.attribute == "raised" and d.real == "nothing"
            and "Tensor must have a storage_offset divisible by" in d.fake)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-dtype-view-as-strided-grad-offset",
    check="behaviour",
    attribute=r"storage_offset\(\)|raised",
    applies=_behaviour_recorded("behaviour_differences", _backward_through_a_rebuilt_dtype_view,
                                in_family=_as_strided_of_a_dtype_view),
    reason=(
        "as_strided of a dtype-changing view (t.real.as_strided(...)), or a dtype-changing "
        "view of an as_strided one (t.as_strided(...).real), of a complex leaf with a "
        "storage offset: the converted view is rebuilt from the base, not replayed "
        "through the dtype view, and backward through it differs: the base's .grad gets "
        "the base's storage offset (as eager gives as_strided taken straight from the "
        "base) where eager's gradient through the dtype view starts at offset 0, or, "
        "where the view's offset is odd in the real dtype's elements, backward raises "
        "'Tensor must have a storage_offset divisible by 2' (view_as_complex of the "
        "gradient) where eager runs; every converter, a conversion bug by the control"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def leaf():\n"
        "    s = torch.zeros(2, dtype=torch.complex64).untyped_storage()\n"
        "    return torch.empty(0, dtype=torch.complex64).set_(s, 1, (), ()).requires_grad_()\n"
        "def backward(v, mode):\n"
        "    f = mode.from_tensor(v)\n"
        "    v.sum().abs().backward()\n"
        "    with mode:\n"
        "        f.sum().abs().backward()\n"
        "    return f\n"
        "base = leaf()\n"
        "f = backward(base.real.as_strided((), (), 0), FakeTensorMode())\n"
        "assert base.grad.storage_offset() == 0 and f._base.grad.storage_offset() == 1\n"
        "s = torch.zeros(2, dtype=torch.complex64).untyped_storage()\n"
        "base = torch.empty(0, dtype=torch.complex64).set_(s, 1, (1,), (1,)).requires_grad_()\n"
        "f = backward(base.select(0, 0).as_strided((), (), 0).real, FakeTensorMode())\n"
        "assert base.grad.storage_offset() == 0 and f._base.grad.storage_offset() == 1\n"
        "try:\n"
        "    backward(leaf().real.as_strided((), (), 1), FakeTensorMode())\n"
        "except RuntimeError as e:\n"
        "    assert 'storage_offset divisible by 2' in str(e)\n"
        "else:\n"
        "    raise AssertionError('backward through the converted view ran')\n"
    ),
))


def _view_requiring_grad(t: Any) -> bool:
    return t._base is not None and t.requires_grad


def _backward_refused_for_a_missing_kernel(d: StepDifference) -> bool:
    return ("backward" in d.source and d.attribute == "raised" and d.fake == "nothing"
            and re.search(r"not implemented for '\w+'", d.real) is not None)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-converted-view-backward-skips-a-missing-kernel",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded("behaviour_differences", _backward_refused_for_a_missing_kernel,
                                in_family=_view_requiring_grad),
    converters=where(carries_real=True),
    reason=(
        "backward through a view whose ops' backward needs a kernel eager CPU lacks for the "
        "dtype (expand's is a sum: 'sum_cpu not implemented for ComplexHalf'): eager raises, "
        "and so does a control made under a mode that propagates real tensors, which runs "
        "that kernel on its real tensors; the converted view is rebuilt from its base "
        "(as_strided), its gradient reaches the base without that kernel, and backward runs. "
        "Without real propagation no side runs a kernel (op:kernel-missing-for-dtype)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch, torch._functorch.config as cfg\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def view():\n"
        "    t0 = torch.zeros(1, dtype=torch.complex32, requires_grad=True)\n"
        "    return torch.view_as_real(t0.expand((2,)))\n"
        "try:\n"
        "    view().sum().abs().backward()\n"
        "except NotImplementedError as e:\n"
        "    assert 'not implemented for' in str(e)\n"
        "else:\n"
        "    raise AssertionError('eager backward ran')\n"
        "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
        "    mode = FakeTensorMode()\n"
        "f = mode.from_tensor(view())\n"
        "with mode:\n"
        "    f.sum().abs().backward()\n"
    ),
))


def _bit_view(t: Any) -> bool:
    """A conj or neg view (its base without the bit)."""
    return t._is_view() and (t.is_neg() or t.is_conj())


def _regenerated_after_no_grad_in_place(d: StepDifference) -> bool:
    """After an in-place op under no_grad, a view of the tensor reads as a
    leaf not requiring grad on the real side (eager's regeneration of its
    history failed: 'new_fn INTERNAL ASSERT'), as a non-leaf requiring grad
    on the converted one."""
    if re.search(r"^with torch\.no_grad\(\):\n\s+\w+\.\w+_\(", d.source) is None:
        return False
    return ((d.attribute, d.real, d.fake) in {("requires_grad", "False", "True"),
                                             ("is_leaf", "True", "False")})


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-bit-view-regeneration-internal-assert",
    check="behaviour",
    attribute=r"requires_grad|is_leaf",
    applies=_behaviour_recorded("behaviour_differences", _regenerated_after_no_grad_in_place,
                                in_family=_bit_view),
    converters=where(fake_tensors=False),
    reason=(
        "requires_grad_(True) on a neg (or conj) view of a tensor that does not require "
        "grad, a view taken of it, then an in-place op on it under no_grad: reading the "
        "view's is_leaf makes eager regenerate its history by replaying the view ops, "
        "which fails ('new_fn INTERNAL ASSERT FAILED at variable.cpp') and leaves it a leaf "
        "not requiring grad; the meta device does the same for the view made directly.  "
        "MetaConverter rebuilds the bit view from its base with as_strided, whose replay "
        "succeeds: a non-leaf requiring grad.  (Fake converters fail like eager.)  Eager's "
        "internal assert is the upstream bug"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.meta_utils import MetaConverter\n"
        "def is_leaf(t4):\n"
        "    t4.requires_grad_(True)\n"
        "    p1 = t4.select(1, 0)\n"
        "    with torch.no_grad():\n"
        "        t4.zero_()\n"
        "    return p1.is_leaf\n"
        "def neg_view(device='cpu'):\n"
        "    return torch._neg_view(torch.zeros(3, 2, device=device)[1:])\n"
        "for made in (neg_view(), neg_view('meta')):\n"
        "    try:\n"
        "        is_leaf(made)\n"
        "    except RuntimeError as e:\n"
        "        assert 'INTERNAL ASSERT FAILED' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('is_leaf read')\n"
        "assert is_leaf(MetaConverter()(neg_view())) is False\n"
    ),
))


def _compressed_requiring_grad(t: Any) -> bool:
    from ...strategies.tensor_facts import COMPRESSED_LAYOUTS

    return layout_name(t) in COMPRESSED_LAYOUTS and t.requires_grad


def _values_view_unreadable_after_in_place(d: StepDifference) -> bool:
    return (d.attribute == "is_leaf" and d.real == "None" and d.fake != "None"
            and re.search(r"\.\w+_\(", d.source) is not None)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-compressed-values-regeneration-needs-strides",
    check="behaviour",
    attribute=r"is_leaf",
    applies=_behaviour_recorded("behaviour_differences", _values_view_unreadable_after_in_place,
                                in_family=_compressed_requiring_grad),
    converters=where(fake_tensors=True),
    reason=(
        "values() of a compressed sparse tensor requiring grad, then an in-place op on the "
        "compressed tensor: reading is_leaf of the values makes eager regenerate their "
        "history as a view of the compressed tensor, which has no strides ('Sparse CSR "
        "tensors do not have strides'), so it cannot be read; a fake's values answer "
        "False.  An operator difference no control shows: FakeTensorMode cannot make a "
        "compressed tensor from its index tensors"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def is_leaf(t):\n"
        "    p0 = t.values()\n"
        "    t.zero_()\n"
        "    return p0.is_leaf\n"
        "def csr():\n"
        "    return torch.zeros(2, 2).to_sparse_csr().requires_grad_() * 2\n"
        "try:\n"
        "    is_leaf(csr())\n"
        "except RuntimeError as e:\n"
        "    assert 'do not have strides' in str(e)\n"
        "else:\n"
        "    raise AssertionError('real is_leaf read')\n"
        "mode = FakeTensorMode()\n"
        "f = mode.from_tensor(csr())\n"
        "with mode:\n"
        "    assert is_leaf(f) is False\n"
    ),
))


_EXPANDS = re.compile(r"\.(expand|expand_as|broadcast_to)\(|torch\.broadcast_to\(")


def _expand_assumed_a_size(d: StepDifference) -> bool:
    """An expand after which the converted side reads a size where the real
    one has 1 (``shape``), or a stride where the real one broadcasts with 0
    (``stride()``): the fake took an unbacked size for the expanded one."""
    if not _EXPANDS.search(d.source) or d.attribute not in ("shape", "stride()"):
        return False
    real, fake = d.real_value, d.fake_value
    if not (isinstance(real, tuple) and isinstance(fake, tuple) and len(real) == len(fake)):
        return False
    broadcast = 1 if d.attribute == "shape" else 0
    return real != fake and all(r == f or r == broadcast for r, f in zip(real, fake))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-expand-assumes-an-unbacked-size",
    check="behaviour",
    attribute=r"shape|stride\(\)",
    applies=_behaviour_recorded("behaviour_differences", _expand_assumed_a_size,
                                in_family=lambda t: layout_name(t) == "jagged"),
    converters=where(symbolic=True),
    reason=(
        "a component unbind() gives of a converted nested jagged tensor has an unbacked size "
        "(u0: its length is data the fake does not carry); expanding that dimension to n takes "
        "the non-broadcasting reading, records the runtime assertion u0 == n, and from then on "
        "the component reads n where eager's is 1 (and broadcasts, stride 0). Unbacked "
        "semantics by design (an unbacked size is not assumed to be 1; compiled code checks "
        "the assertion). The control, made under a mode whose sizes are static, raises "
        "instead (op:expand-of-unbacked-size), so it does not show this reading"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from pytest_metafidelity.converters import make_converter\n"
        "def program(t):\n"
        "    p = t.unbind()[0]\n"
        "    return p, p.expand((3, 1))\n"
        "t = torch.nested.nested_tensor_from_jagged(torch.zeros(2, 1), torch.tensor([0, 2]), "
        "torch.tensor([1]))\n"
        "p, e = program(t)\n"
        "assert p.shape == (1, 1) and e.stride() == (0, 1)\n"
        "converter = make_converter('fake-dynamic')  # every size dynamic, as Dynamo marks them\n"
        "f = converter.convert(t)\n"
        "with converter.mode:\n"
        "    p, e = program(f)\n"
        "assert p.shape == (3, 1) and e.stride() == (1, 1)  # the unbacked size u0, assumed 3\n"
    ),
))


_VIEWS = re.compile(r"\.(view|reshape|flatten)\(")


def _view_guarded_on_an_unbacked_size(d: StepDifference) -> bool:
    """A view the real side made and the converted side refused, because
    deciding it needed a guard on an unbacked (data-dependent) size."""
    return (d.attribute == "raised" and d.real == "nothing" and bool(_VIEWS.search(d.source))
            and "data-dependent expression" in d.fake)


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-view-of-an-unbacked-size-guards-beside-symbolic-sizes",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded("behaviour_differences", _view_guarded_on_an_unbacked_size,
                                in_family=lambda t: layout_name(t) == "jagged"),
    converters=where(symbolic=True),
    reason=(
        "A view of a component of a converted nested jagged tensor raises where eager views "
        "it: the component (unbind()[i] of a transposed nested jagged tensor) has an "
        "unbacked size u0 (its length is data the fake does not carry) beside the "
        "converter's symbolic sizes (s0, u0, 1), strides (1, s0, 1); viewing it as "
        "(2, 1, 1, 1) asks whether u0 == 1, which cannot be guarded on ('Could not guard on "
        "data-dependent expression Eq(u0, 1)'). Unbacked semantics by design. The control, "
        "made under a mode whose other sizes are static (2, u0, 1), decides the same view "
        "without that guard, so it does not show the difference (where it cannot decide "
        "either, the difference is the operator's: op:view-of-unbacked-size-assumes-its-value)"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from pytest_metafidelity.converters import make_converter\n"
        "def component(t):\n"
        "    return t.transpose(1, 2).unbind()[0]\n"
        "t = torch.nested.nested_tensor_from_jagged(torch.arange(4.).reshape(2, 2, 1), "
        "torch.tensor([0, 1, 2]))\n"
        "assert component(t).view((2, 1, 1, 1)).shape == (2, 1, 1, 1)\n"
        "converter = make_converter('fake-dynamic')  # every size dynamic, as Dynamo marks them\n"
        "f = converter.convert(t)\n"
        "with converter.mode:\n"
        "    try:\n"
        "        component(f).view((2, 1, 1, 1))\n"
        "    except Exception as e:\n"
        "        assert 'Could not guard on data-dependent expression' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('the converted component viewed')\n"
    ),
))



@reads_record("behaviour_differences")
@family_wide
def _slice_after_a_half_done_set(case: Case) -> bool:
    """An earlier step called set_() on a wrapper subclass of the family (it
    changes the inner tensors, then eager refuses the wrapper's own set_);
    a later step's indexing raised 'Dimension out of range' in eager only."""
    from ...strategies.tensor_facts import is_wrapper_subclass

    program = getattr(case.conversion, "program", None)
    if not any(".set_(" in s.statement for s in getattr(program, "steps", ())):
        return False
    if not any(is_wrapper_subclass(t) for t in case.family):
        return False
    return any(d.attribute == "raised" and d.fake == "nothing"
               and d.real.startswith("IndexError: Dimension out of range")
               for d in getattr(case.conversion, "behaviour_differences", ()))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-symbolic-slice-of-a-half-set-wrapper",
    check="behaviour",
    attribute=r"raised",
    applies=_slice_after_a_half_done_set,
    converters=where(symbolic=True),
    reason=(
        "Slicing a wrapper subclass whose set_() failed half-way runs on a fake with symbolic "
        "sizes, where eager raises: set_() with no arguments on a TwoTensor or ScaledTensor "
        "empties the inner tensors (now of shape (0,)), then eager refuses the wrapper's own "
        "set_ ('Attempted to set the storage of a tensor on device \"cpu\" to a storage on "
        "different device \"meta\"'), so the wrapper keeps its 3 dimensions around 1-dimensional "
        "inner tensors.  t[:, 0:0] then raises 'IndexError: Dimension out of range' in eager "
        "and on fakes with static sizes (the inner slice), and returns a (0,) tensor on a "
        "fake with symbolic sizes.  A tensor left inconsistent by a failed op: no "
        "program of a user's relies on it"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "from pytest_metafidelity.converters import make_converter\n"
        "def program(t):\n"
        "    # (the failed set_ leaves dispatch keys excluded: the guard restores them)\n"
        "    with torch._C._PreserveDispatchKeyGuard():\n"
        "        try:\n"
        "            t.set_()\n"
        "        except RuntimeError as e:\n"
        "            assert 'Attempted to set the storage' in str(e)\n"
        "    assert t.dim() == 3 and t.a.shape == (0,)  # half done\n"
        "    try:\n"
        "        return tuple(t[:, 0:0].shape)\n"
        "    except IndexError as e:\n"
        "        return 'Dimension out of range' in str(e)\n"
        "def tensor():\n"
        "    x = torch.arange(2.).reshape(1, 1, 2).transpose(0, 2)\n"
        "    return TwoTensor(x, x.clone())\n"
        "assert program(tensor()) is True\n"
        "for name, sliced in (('fake', True), ('fake-dynamic', (0,))):\n"
        "    converter = make_converter(name)\n"
        "    f = converter.convert(tensor())\n"
        "    with converter.mode:\n"
        "        assert program(f) == sliced\n"
    ),
))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-meta-conj-view-regrads-after-a-metadata-op",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: (d.attribute == "raised" and d.fake == "nothing"
                   and "returned an invalid gradient" in d.real),
        in_family=_conj_view),
    converters=where(fake_tensors=False),
    reason=(
        "Backward through a meta converter's conjugate view runs after an in-place metadata "
        "op under no_grad, where eager raises: x.conj().narrow(2, 1, 1) of a leaf requiring "
        "grad, then t.transpose_(-1, -2) under no_grad; in eager the view keeps the autograd "
        "history it had before (its input metadata has the old shape), so backward raises "
        "'Function SumBackward0 returned an invalid gradient at index 0 - got [1, 4, 1, 1, 3] "
        "but expected shape compatible with [1, 4, 1, 3, 1]', and so do the fake converters "
        "and a view made directly on the meta device; the meta converter's view (rebuilt "
        "from its base with as_strided and the conj bit) has a history that follows the new "
        "shape, and backward runs"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from pytest_metafidelity.converters import make_converter\n"
        "def view(device='cpu'):\n"
        "    x = torch.zeros(1, 4, 2, 3, 1, dtype=torch.complex128, device=device, "
        "requires_grad=True)\n"
        "    return x.conj().narrow(2, 1, 1)\n"
        "def backward(t):\n"
        "    with torch.no_grad():\n"
        "        t.transpose_(-1, -2)\n"
        "    try:\n"
        "        t.sum().abs().backward()\n"
        "    except RuntimeError as e:\n"
        "        assert 'returned an invalid gradient' in str(e)\n"
        "        return 'raised'\n"
        "    return 'ran'\n"
        "assert backward(view()) == backward(view('meta')) == 'raised'\n"
        "assert backward(make_converter('meta').convert(view())) == 'ran'\n"
    ),
))

ENTRIES = _BEHAVIOUR_ENTRIES
