"""Known differences of functionalization: the ``functional`` converter's round trip through
``FunctionalTensor`` (autograd mirroring, inference, Parameter-ness, storages),
Python ``FunctionalTensor`` and C++ functional tensors given to the other
converters.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from typing import Any

from ...converters import where
from ...converter_model import reach
from ..core import BY_DESIGN, Case, KnownDifference, UNFILED
from ..experiments import dynamic_fake_storage
from ..facts import (
    family_wide,
    functional_mode_active,
    is_functorch_wrapped,
    is_functional_tensor,
    memo,
    needs,
    plain_strided,
    static_fake_nbytes,
    storage_key,
)
from ...symbolic import has_symbolic, is_symbolic

ENTRIES: list[KnownDifference] = []


def requires_grad_leaf(case: Case) -> bool:
    """A leaf that requires grad and is not a view (views are re-created on
    the wrapped base, not wrapped)."""
    from ...strategies.tensor_facts import is_view

    t = case.tensor
    return t is not None and bool(t.requires_grad and t.is_leaf) and not is_view(t)


ENTRIES.append(KnownDifference(
    id="functional-requires-grad-leaf",
    check=("metadata", "oracle", "autograd"),
    attribute=r"is_leaf|grad is not None|grad_dtype",
    applies=requires_grad_leaf,
    converters=where(functional=True),
    reason=(
        "FunctionalTensor.to_functional mirrors autograd metadata with "
        "torch._mirror_autograd_meta_to, which gives every wrapper that requires grad an "
        "Error grad_fn (so AOTAutograd may trace in-place mutations of graph inputs): the "
        "wrapper of a leaf that requires grad is a non-leaf, without .grad or grad_dtype, "
        "and so is its fake"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "with FunctionalTensorMode():\n"
        "    w = FunctionalTensor.to_functional(torch.randn(3, requires_grad=True))\n"
        "    assert not w.is_leaf\n"
    ),
))


def is_inference_tensor(case: Case) -> bool:
    t = case.tensor
    return t is not None and bool(t.is_inference())


ENTRIES.append(KnownDifference(
    id="functional-inference",
    check=("metadata", "oracle"),
    # is_inference(), and the keys an inference tensor lacks (the fake has them)
    attribute=(r"is_inference\(\)"
               r"|(ADInplaceOrView|Autograd<backend>) in torch\._C\._dispatch_keys\(t\)"),
    applies=is_inference_tensor,
    converters=where(functional=True),
    reason=(
        "FunctionalTensor.to_functional outside inference mode wraps an inference tensor "
        "in a normal tensor: the round trip's fake is not an inference tensor (and so has "
        "the ADInplaceOrView and Autograd dispatch keys an inference tensor lacks)"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/101219",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "with torch.inference_mode():\n"
        "    x = torch.randn(3)\n"
        "with FunctionalTensorMode():\n"
        "    f = FunctionalTensor.to_functional(x)\n"
        "assert not f.is_inference()\n"
        "assert 'ADInplaceOrView' not in str(torch._C._dispatch_keys(x))\n"
        "assert 'ADInplaceOrView' in str(torch._C._dispatch_keys(f))\n"
    ),
))


def is_parameter(case: Case) -> bool:
    import torch

    return isinstance(case.tensor, torch.nn.Parameter)


ENTRIES.append(KnownDifference(
    id="functional-parameter",
    check="oracle",
    attribute=r"isinstance\(nn\.Parameter\)",
    applies=is_parameter,
    converters=where(functional=True),
    reason=(
        "a FunctionalTensor wrapper is not an nn.Parameter (AOTAutograd tracks parameters "
        "by position, not by the wrappers' type): the round trip drops Parameter-ness"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "p = torch.nn.Parameter(torch.randn(3))\n"
        "with FunctionalTensorMode():\n"
        "    assert not isinstance(FunctionalTensor.to_functional(p), torch.nn.Parameter)\n"
    ),
))


def is_marked_buffer(case: Case) -> bool:
    return bool(getattr(case.tensor, "_is_buffer", False))


ENTRIES.append(KnownDifference(
    id="functional-buffer",
    check="oracle",
    attribute=r"_is_buffer|persistent",
    applies=is_marked_buffer,
    converters=where(functional=True),
    reason=(
        "FunctionalTensor.to_functional makes a new wrapper, without the marks nn.Buffer "
        "sets on the tensor (_is_buffer, persistent), which MetaConverter forwards: the "
        "round trip drops buffer-ness, as it drops Parameter-ness"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "b = torch.nn.Buffer(torch.randn(3), persistent=False)\n"
        "with FunctionalTensorMode():\n"
        "    assert not getattr(FunctionalTensor.to_functional(b), '_is_buffer', False)\n"
    ),
))


def functional_separates_aliases(case: Case) -> bool:
    """Tensors sharing a storage without being views of one base."""
    from ...strategies.tensor_facts import base_of, is_view

    t = case.tensor
    if not plain_strided(t):
        return False
    root = base_of(t) if is_view(t) else t
    for u in case.family:
        if plain_strided(u) and storage_key(u) == storage_key(t):
            if (base_of(u) if is_view(u) else u) is not root:
                return True
    return False


ENTRIES.append(KnownDifference(
    id="functional-separate-storages",
    check="aliasing",
    attribute=r"storage identity",
    applies=functional_separates_aliases,
    converters=where(functional=True),
    reason=(
        "FunctionalTensor.to_functional gives every wrapped tensor its own functional "
        "storage: tensors that share a storage without being views of one base (set_ "
        "aliases, dtype reinterpretations) no longer share one; AOTAutograd tracks input "
        "aliasing outside the wrappers"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "x = torch.randn(4); y = torch.empty(0).set_(x.untyped_storage(), 0, (2,), (1,))\n"
        "with FunctionalTensorMode():\n"
        "    a, b = FunctionalTensor.to_functional(x), FunctionalTensor.to_functional(y)\n"
        "    assert a.untyped_storage()._cdata != b.untyped_storage()._cdata\n"
    ),
))


def functional_storage_sized_to_tensors(case: Case) -> bool:
    """The functional round trip gives each wrapped root (a non-view tensor,
    or a view's base) a storage sized to the tensors on it: its reach, grown
    by views of it reaching further -- unless the root reaches nothing: the
    zero-byte functional storage stays zero bytes."""
    from ...strategies.tensor_facts import base_of, is_view

    t = case.tensor
    if not plain_strided(t) or not static_fake_nbytes(case):
        return False
    root = base_of(t) if is_view(t) else t
    size = reach(root)
    if size:  # a zero-byte functional storage stays zero bytes when converted
        for u in case.family:
            if plain_strided(u) and is_view(u) and base_of(u) is root:
                size = max(size, reach(u))
    return size != t.untyped_storage().nbytes()


ENTRIES.append(KnownDifference(
    id="functional-storage-sized-to-tensors",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=functional_storage_sized_to_tensors,
    converters=where(functional=True),
    reason=(
        "a FunctionalTensor's functional storage is sized from the wrapped tensor's sizes, "
        "strides and offset, not from the wrapped storage: a larger storage shrinks and a "
        "zero-byte storage (resize_(0)) gets bytes again"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/193416",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "x = torch.randn(3); x.untyped_storage().resize_(0)\n"
        "f = FakeTensorMode().from_tensor(x)\n"
        "assert f.untyped_storage().nbytes() == 0\n"
        "with FunctionalTensorMode():\n"
        "    assert FunctionalTensor.to_functional(f).untyped_storage().nbytes() == 12\n"
    ),
))


@needs("FunctionalTensor")
def functional_wrapper_dropped(case: Case) -> bool:
    """A FunctionalTensor converts to a plain tensor: always for fake
    converters; for the meta converter when no FunctionalTensorMode is active
    (under one, the mode wraps meta's factory result again)."""
    t = case.tensor
    if t is None or not is_functional_tensor(t):
        return False
    return case.converter in where(fake_tensors=True) or not functional_mode_active()


ENTRIES.append(KnownDifference(
    id="functional-tensor-unwrapped",
    check="wrappers",
    attribute=r"isinstance\(FunctionalTensor\)",
    applies=functional_wrapper_dropped,
    reason=(
        "MetaConverter has no case for the Python FunctionalTensor wrapper (it is neither a "
        "C++ functional tensor nor a traceable wrapper subclass): it converts it as a plain "
        "dense tensor, and the FunctionalTensor-ness is lost"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126936",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "with FunctionalTensorMode():\n"
        "    ft = FunctionalTensor.to_functional(torch.randn(3))\n"
        "    assert not isinstance(FakeTensorMode().from_tensor(ft), FunctionalTensor)\n"
    ),
))


def meta_wrapped_by_functional_mode(case: Case) -> bool:
    t = case.tensor
    return t is not None and not is_functional_tensor(t) and functional_mode_active()


ENTRIES.append(KnownDifference(
    id="meta-under-functional-mode",
    check="wrappers",
    attribute=r"isinstance\(FunctionalTensor\)",
    applies=meta_wrapped_by_functional_mode,
    converters=where(fake_tensors=False),
    reason=(
        "MetaConverter suspends C++ functionalization but not an active Python "
        "FunctionalTensorMode, which intercepts the meta factory call: converting a plain "
        "tensor under FunctionalTensorMode gives a FunctionalTensor"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/126936",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.meta_utils import MetaConverter\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "x = torch.randn(3)\n"
        "with FunctionalTensorMode():\n"
        "    assert isinstance(MetaConverter()(x), FunctionalTensor)\n"
    ),
))


@family_wide
@needs("functional")
def any_functional_view(case: Case) -> bool:
    import torch

    is_functional = getattr(torch, "_is_functional_tensor", None)
    return is_functional is not None and any(
        is_functional(t) and t._is_view() and t.device.type not in ("xla", "lazy")
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="functional-view-refused",
    check="conversion",
    attribute=r"raised",
    applies=any_functional_view,
    reason=(
        "MetaTensorDescriber refuses a (C++) functional tensor that is a view: "
        "'RuntimeError: Cannot safely fakify a view because this process drops the view "
        "information right now' -- a deliberate refusal, but not one of the documented "
        "forms (NotImplemented, UnsupportedFakeTensorException, Dynamo unimplemented)"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "v = torch._to_functional_tensor(torch.randn(3)).view(3)\n"
        "try:\n"
        "    FakeTensorMode().from_tensor(v)\n"
        "except RuntimeError as e:\n"
        "    assert 'Cannot safely fakify a view' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"Cannot safely fakify a view",
))


@family_wide
@needs("sparse")
def any_compressed_requiring_grad(case: Case) -> bool:
    from ...converters import _compressed_requiring_grad

    return any(_compressed_requiring_grad(t) for t in case.family)


ENTRIES.append(KnownDifference(
    id="functional-sparse-compressed-grad-abort",
    check="conversion",
    attribute=r"raised",
    applies=any_compressed_requiring_grad,
    converters=where(functional=True),
    reason=(
        "FunctionalTensor.to_functional of a sparse compressed (CSR/CSC/BSR/BSC) tensor "
        "that requires grad aborts the process: _mirror_autograd_meta_to builds autograd "
        "InputMetadata, which throws c10::Error 'layout_impl is only implemented for "
        "TensorImpl subclasses' through a noexcept frame; the converter refuses it "
        "(ConversionCrash) instead"
    ),
    link="https://github.com/pytorch/pytorch/pull/192091",
    reproducer=(
        "import torch\n"
        "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
        "x = torch.randn(4, 6).to_sparse_csr().requires_grad_()\n"
        "with FunctionalTensorMode():\n"
        "    FunctionalTensor.to_functional(x)  # process aborts (SIGABRT)\n"
    ),
    raises=r"^ConversionCrash: FunctionalTensor\.to_functional of a sparse compressed",
))


@needs("functional")
def functional_dynamic_storage_from_inner(case: Case) -> bool:
    """A C++ functional tensor whose converted inner tensor has symbolic
    sizes or strides: its functional storage then takes the size of the
    inner tensor's storage (0 for a zero-byte one, the real storage's size
    for one installed with set_ at an offset) -- where the real wrapper's is
    computed from its sizes, strides and offset.  The difference shows
    where that size is static."""
    import torch

    from ...strategies.torch_errors import safe

    t = case.tensor
    if t is None or not safe(lambda: bool(torch._is_functional_tensor(t)), False):
        return False
    fake = case.conversion.tensor_at(case.path, fake=True)
    if fake is None or not safe(lambda: bool(torch._is_functional_tensor(fake)), False):
        return False
    real_nbytes = t.untyped_storage().nbytes()
    if real_nbytes == 0:
        # meta_tensor's closing resize_(0) of a zero-byte storage: it raises
        # (dynamic-functional-zero-byte-resize) or, on the meta device, empties
        # the wrapper's storage too.
        return False
    inner = torch._from_functional_tensor(fake)
    if not has_symbolic(inner):
        return False
    n = inner.untyped_storage().nbytes()
    return not is_symbolic(n) and n != real_nbytes


ENTRIES.append(KnownDifference(
    id="dynamic-functional-storage-size",
    check="storage",
    attribute=r"untyped_storage\(\)\.nbytes\(\)",
    applies=functional_dynamic_storage_from_inner,
    converters=where(symbolic=True),
    reason=(
        "a C++ functional tensor's storage is sized from its sizes, strides and offset -- "
        "unless the wrapped tensor has symbolic sizes or strides, when it takes the wrapped "
        "storage's size: with a ShapeEnv the converted wrapper of a zero-byte storage "
        "(resize_(0)) has zero bytes, that of a tensor at an offset the whole storage"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/193416",),
    reproducer=(
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "x = torch.randn(3); x.untyped_storage().resize_(0)\n"
        "w = torch._to_functional_tensor(x)\n"
        "f = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False).from_tensor(\n"
        "    w, source=ConstantSource('w'))\n"
        "assert w.untyped_storage().nbytes() == 12 and f.untyped_storage().nbytes() == 0\n"
    ),
))


@family_wide
@needs("functional")
def functional_zero_byte_resize(case: Case) -> bool:
    """A C++ functional tensor with no elements (its functional storage has
    zero bytes) whose wrapped tensor converts, with a ShapeEnv, to one with
    symbolic metadata and a storage with bytes (a tensor installed with set_
    at an offset): the converted wrapper's storage takes the wrapped
    storage's size (dynamic-functional-storage-size), and meta_tensor's
    closing resize_(0) of a zero-byte storage fails on the functional
    storage -- except on the meta device, whose storages resize without
    that check."""
    import torch

    from ...strategies.torch_errors import safe

    def raises(t: Any) -> bool:
        if not safe(lambda: bool(torch._is_functional_tensor(t)), False) or t.numel() != 0:
            return False
        if is_functorch_wrapped(t):  # (a functionalize level's: converted another way)
            return False
        if t.is_meta:
            return False
        if t.untyped_storage().nbytes() != 0:
            return False
        symbolic, nbytes = dynamic_fake_storage(torch._from_functional_tensor(t))
        return symbolic and nbytes != 0

    return any(memo(case, ("functional-resize", id(t)), lambda: safe(lambda: raises(t), False))
               for t in case.family)


ENTRIES.append(KnownDifference(
    id="dynamic-functional-zero-byte-resize",
    check="conversion",
    attribute=r"raised",
    applies=functional_zero_byte_resize,
    converters=where(symbolic=True),
    reason=(
        "meta_tensor ends with r.untyped_storage().resize_(0) when the real storage has "
        "zero bytes.  A C++ functional tensor with no elements has a zero-byte functional "
        "storage, but with a ShapeEnv its converted wrapper's storage takes the wrapped "
        "tensor's storage size (dynamic-functional-storage-size) -- not zero for a tensor "
        "installed with set_ at an offset -- and resizing a functional storage raises "
        "'RuntimeError: Attempted to call resize_() on an invalid python storage' "
        "(not on the meta device, whose storages resize without that check)"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "x = torch.empty(0).set_(torch.randn(4).untyped_storage(), 2, (0,), (1,))\n"
        "w = torch._to_functional_tensor(x)\n"
        "assert w.untyped_storage().nbytes() == 0\n"
        "try:\n"
        "    FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False).from_tensor(\n"
        "        w, source=ConstantSource('w'))\n"
        "except RuntimeError as e:\n"
        "    assert 'resize_() on an invalid python storage' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"resize_\(\) on an invalid python storage",
))


@needs("functional")
def functional_value_replaced(case: Case) -> bool:
    """A C++ functional tensor whose wrapped value the conversion replaced:
    it had updates pending (a view of it was mutated), which the describer's
    torch._sync applied -- regenerating the value from the updated base."""
    import torch

    from ...strategies.torch_errors import safe
    from ...snapshots import FUNCTIONAL_VALUE

    t = case.tensor
    before = getattr(case.conversion, "before", None)
    if t is None or before is None:
        return False
    if not safe(lambda: bool(torch._is_functional_tensor(t)), False):
        return False
    reading = next((r for _, u, r in before.tensors if u is t), None)
    if reading is None or FUNCTIONAL_VALUE not in reading:
        return False
    return reading[FUNCTIONAL_VALUE].obj is not torch._from_functional_tensor(t)


ENTRIES.append(KnownDifference(
    id="functional-sync-on-convert",
    check="purity",
    attribute=r"torch\._from_functional_tensor\(\)|stride\(\)|storage_offset\(\)",
    applies=functional_value_replaced,
    converters=where(functional=False),
    reason=(
        "MetaTensorDescriber.describe_tensor calls torch._sync(t) on a C++ functional "
        "tensor before reading torch._from_functional_tensor(t), so that the fake reflects "
        "pending mutations (its functorch branch notes 'NB: has side effects!'): a real "
        "functional tensor with updates pending -- a view of it was mutated -- gets its "
        "value regenerated from the updated base, and with it new strides and storage "
        "offset (those of the mutation's output)"
    ),
    link=BY_DESIGN,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "x = torch.empty(0).set_(torch.randn(8).untyped_storage(), 2, (4, 2), (1, 0))\n"
        "w = torch._to_functional_tensor(x)\n"
        "w[1:].zero_()\n"
        "before = torch._from_functional_tensor(w)\n"
        "assert w.stride() == (1, 0)\n"
        "FakeTensorMode().from_tensor(w)\n"
        "assert torch._from_functional_tensor(w) is not before and w.stride() == (2, 1)\n"
    ),
))


def _functionalization_state(t: Any, query: Any) -> Any:
    """What functionalization says of ``t`` (a C++ functional tensor, also
    one of a functorch level) through ``query`` (None where this torch has
    no such query), or None."""
    import torch

    from ...strategies.torch_errors import safe

    if query is None or t is None or not safe(lambda: bool(torch._is_functional_tensor(t)),
                                               False):
        return None
    return safe(lambda: query(t), None)


# What functionalization records of a functional tensor's mutations: of its
# data (an in-place op on it or on a view of it), of its metadata (t_(),
# resize_()) and of its storage (set_(), inductor's resize of its storage).
MUTATION_RECORD = ("has_data_mutation", "has_metadata_mutation", "mutation_counter",
                   "was_storage_changed", "storage_changed_counter",
                   "was_inductor_storage_resized", "inductor_storage_resized_counter")


def functional_tensor_mutated(case: Case) -> bool:
    """A functional tensor whose mutation functionalization recorded (any
    reading of MUTATION_RECORD says so)."""
    import torch

    return any(_functionalization_state(case.tensor, getattr(torch, f"_functionalize_{name}",
                                                             None))
               for name in MUTATION_RECORD)


ENTRIES.append(KnownDifference(
    id="functional-mutation-forgotten",
    check="wrappers",
    attribute=(r"torch\._functionalize_(" + "|".join(MUTATION_RECORD)
               + r"|are_all_mutations_hidden_from_autograd"
               r"|are_all_mutations_under_no_grad_or_inference_mode)\(\)"),
    applies=functional_tensor_mutated,
    reason=(
        "Converting a mutated functional tensor forgets the mutation: a C++ functional "
        "tensor (also one of a torch.func.functionalize level) records its mutations -- "
        "of its data by an in-place op (torch._functionalize_has_data_mutation(t), "
        "_mutation_counter), of its metadata by t_() or resize_() "
        "(_has_metadata_mutation), of its storage by set_() (_was_storage_changed, "
        "_storage_changed_counter), and whether they all ran under no_grad or hidden from "
        "autograd.  MetaConverter converts the value inside it and wraps the result again "
        "(torch._to_functional_tensor, or _wrap_functional_tensor at the level): a new "
        "wrapper, whose record starts empty, so the fake says unmutated.  At a functionalize "
        "level the record shows: detach() and views of a mutated tensor get a version "
        "counter of their own in eager, and share the fake's"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "w = torch._to_functional_tensor(torch.zeros(2))\n"
        "w.mul_(2)\n"
        "assert torch._functionalize_has_data_mutation(w)\n"
        "assert not torch._functionalize_has_data_mutation(FakeTensorMode().from_tensor(w))\n"
        "s = torch._to_functional_tensor(torch.zeros(2))\n"
        "s.set_(torch._to_functional_tensor(torch.zeros(3)))\n"
        "assert torch._functionalize_was_storage_changed(s)\n"
        "assert not torch._functionalize_was_storage_changed(FakeTensorMode().from_tensor(s))\n"
    ),
))


def functional_view_with_a_chain(case: Case) -> bool:
    """A functional tensor that functionalization regenerates from its base
    through views (its ViewMeta chain is not empty): a view of a functional
    tensor of a functorch level (views of C++ functional tensors are refused:
    functional-view-refused)."""
    import torch

    query = getattr(getattr(torch._C, "_functionalization", None), "get_view_meta_sequence",
                    None)
    return bool(_functionalization_state(case.tensor, query))


ENTRIES.append(KnownDifference(
    id="functionalize-view-chain-dropped",
    check="wrappers",
    # (and whether the view came from a multi-output op, unbind or split:
    # the chain's ViewMeta says so)
    attribute=(r"len\(torch\._C\._functionalization\.get_view_meta_sequence\(\)\)"
               r"|torch\._functionalize_is_multi_output_view\(\)"),
    applies=functional_view_with_a_chain,
    reason=(
        "Converting a view of a functional tensor of a torch.func.functionalize level drops "
        "its ViewMeta chain; such a view (y[1:]) is a view inside functionalization only: "
        "its wrapper has no _base, and functionalization keeps the views that regenerate it "
        "from its base (its ViewMeta chain, torch._C._functionalization."
        "get_view_meta_sequence).  MetaConverter converts the "
        "value inside it and wraps the result at the level: a functional tensor with the "
        "same sizes, strides and offset but an empty chain, a base (a view an op with "
        "several outputs made, unbind or split, no longer says so: "
        "torch._functionalize_is_multi_output_view).  An in-place op on it "
        "then replaces its value (zero_(): the storage offset becomes 0) where eager's "
        "writes the base and regenerates the view (offset kept), and set_() runs where "
        "eager's replay of the chain raises"
    ),
    link=UNFILED,
    reproducer=(
        "import torch\n"
        "from torch._functorch.eager_transforms import _func_decrement_nesting, "
        "_func_increment_nesting\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "chain = torch._C._functionalization.get_view_meta_sequence\n"
        "level = _func_increment_nesting(True)  # what torch.func.functionalize enters\n"
        "try:\n"
        "    with torch._C._DisableFuncTorch():\n"
        "        x = torch.empty(0).set_(torch.arange(4.).untyped_storage(), 1, (2,), (1,))\n"
        "    y = torch._C._functorch._wrap_functional_tensor(x, level)\n"
        "    t = y[1:]\n"
        "    mode = FakeTensorMode()\n"
        "    f = mode.from_tensor(t)\n"
        "    assert (len(chain(t)), len(chain(f))) == (1, 0)\n"
        "    assert t.storage_offset() == f.storage_offset() == 2\n"
        "    t.zero_()\n"
        "    with mode:\n"
        "        f.zero_()\n"
        "    assert (t.storage_offset(), f.storage_offset()) == (2, 0)\n"
        "finally:\n"
        "    _func_decrement_nesting()\n"
    ),
))
