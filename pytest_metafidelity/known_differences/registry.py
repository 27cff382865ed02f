"""The registry: every known difference, by design or upstream bug.

Each entry names the check(s) and attribute it explains, the predicate
(:mod:`.predicates`) saying exactly when it occurs, the converters and torch
versions, the reason, the upstream link and a minimal runnable reproducer
(which the project's tests run).
"""

from __future__ import annotations

import re

from . import BY_DESIGN, UNFILED, KnownDifference
from .predicates import (
    ALL_BUT_FUNCTIONAL,
    FAKE_CONVERTERS,
    REAL_CONVERTERS,
    any_compressed_non_leaf,
    any_compressed_requiring_grad,
    any_copy_fails,
    any_dynamic_coo_non_leaf,
    any_functional_tensor_set_storage,
    any_functional_view,
    any_grad_of_another_dtype,
    any_grad_tracking_non_leaf,
    any_jagged_nested,
    any_storage_too_small,
    any_strided_nested,
    any_wrapper_subclass,
    carried_values_not_copied,
    carried_zero_bytes_regrown,
    carries_conj_neg,
    coo_with_dynamic_dense_dims,
    custom_grad_dtype,
    dispatch_cache_zero_element_view,
    functional_dynamic_storage_from_inner,
    functional_separates_aliases,
    functional_storage_sized_to_tensors,
    functional_value_replaced,
    functional_wrapper_dropped,
    functional_zero_byte_resize,
    functorch_inner_requires_grad,
    functorch_inner_storage_nbytes,
    functorch_inner_storage_offset,
    functorch_inner_view,
    is_inference_tensor,
    is_parameter,
    is_sparse_with_elements,
    meta_wrapped_by_functional_mode,
    reaches_past_first_tensor,
    real_functorch_view_refusal_fails,
    requires_grad_leaf,
    retains_grad,
    shares_version_counter_outside_view_tree,
    sparse_coo_non_leaf,
    sparse_metadata_from_elements,
    storage_sized_to_tensors,
    subclass_view_replay_mismatch,
    subclass_view_replays_symbol,
    zero_byte_scalar_item,
)

KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(
        id="sparse-nnz",
        check="sparse",
        attribute=r"_nnz\(\)",
        applies=is_sparse_with_elements,
        reason=(
            "MetaConverter builds sparse tensors (COO and compressed) with no specified "
            "elements (empty indices and values), deliberately unlike t.to('meta'), which "
            "keeps nnz: nnz is data, and a fake must not specialize on it"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "s = torch.eye(3).to_sparse()\n"
            "assert s._nnz() == 3 and FakeTensorMode().from_tensor(s)._nnz() == 0\n"
        ),
    ),
    KnownDifference(
        id="meta-grad-dtype",
        check="autograd",
        attribute=r"grad_dtype",
        applies=custom_grad_dtype,
        converters=("meta",),
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
    ),
    KnownDifference(
        id="fake-grad-dtype-dropped",
        check="autograd",
        attribute=r"grad_dtype",
        applies=custom_grad_dtype,
        converters=FAKE_CONVERTERS,
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
    ),
    KnownDifference(
        id="functional-requires-grad-leaf",
        check=("metadata", "oracle", "autograd"),
        attribute=(r"m1\.is_leaf, m2\.is_leaf|is_leaf|grad is not None|grad_dtype"
                   r"|m1\.grad is not None, safe_grad\(m2\) is not None"),
        applies=requires_grad_leaf,
        converters=("functional",),
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
    ),
    KnownDifference(
        id="sparse-coo-non-leaf-clone",
        check="autograd",
        attribute=r"backward\(\) through a converted non-leaf",
        applies=sparse_coo_non_leaf,
        reason=(
            "MetaConverter fakes the autograd history of a sparse COO non-leaf with clone() "
            "instead of DelayedError ('DelayedError does not work for sparse because it causes "
            "the Fake sparse tensor to lose its fakeness'): backward through it reaches the "
            "converted leaf instead of raising the designed error"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "s = (torch.eye(3).to_sparse().requires_grad_() * 2)\n"
            "f = FakeTensorMode().from_tensor(s)\n"
            "assert not f.is_leaf and 'DelayedError' not in type(f.grad_fn).__name__\n"
        ),
    ),
    KnownDifference(
        id="functional-inference",
        check=("metadata", "oracle"),
        attribute=r"m1\.is_inference, m2\.is_inference\(\)|is_inference\(\)",
        applies=is_inference_tensor,
        converters=("functional",),
        reason=(
            "FunctionalTensor.to_functional outside inference mode wraps an inference tensor "
            "in a normal tensor: the round trip's fake is not an inference tensor"
        ),
        link=UNFILED,
        related=("https://github.com/pytorch/pytorch/pull/101219",),
        reproducer=(
            "import torch\n"
            "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
            "with torch.inference_mode():\n"
            "    x = torch.randn(3)\n"
            "with FunctionalTensorMode():\n"
            "    assert not FunctionalTensor.to_functional(x).is_inference()\n"
        ),
    ),
    KnownDifference(
        id="functional-parameter",
        check="oracle",
        attribute=r"isinstance\(nn\.Parameter\)",
        applies=is_parameter,
        converters=("functional",),
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
    ),
    KnownDifference(
        id="functional-separate-storages",
        check="aliasing",
        attribute=r"storage identity",
        applies=functional_separates_aliases,
        converters=("functional",),
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
    ),
    KnownDifference(
        id="storage-sized-to-tensors",
        check="storage",
        attribute=r"untyped_storage\(\)\.nbytes\(\)",
        applies=storage_sized_to_tensors,
        converters=ALL_BUT_FUNCTIONAL,
        reason=(
            "MetaConverter allocates a non-view tensor's storage with empty_strided, sized to "
            "what the tensor reaches, instead of the real storage's size (unless the storage "
            "offset is non-zero); later tensors on the storage grow it only as far as they "
            "reach (set_; as_strided for fake but not meta tensors).  A storage larger than "
            "its tensors -- resize_ to fewer elements, a set_ or as_strided window -- comes "
            "out smaller (meta_utils: 'The real fix is to properly call meta_storage "
            "recursively here').  Carried real tensors (fake-real) have the same size"
        ),
        link=UNFILED,
        related=(
            "https://github.com/pytorch/pytorch/pull/185014",
            "https://github.com/pytorch/pytorch/issues/123879",
        ),
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "x = torch.randn(10); x.resize_(3)\n"
            "assert x.untyped_storage().nbytes() == 40\n"
            "assert FakeTensorMode().from_tensor(x).untyped_storage().nbytes() == 12\n"
        ),
    ),
    KnownDifference(
        id="functional-storage-sized-to-tensors",
        check="storage",
        attribute=r"untyped_storage\(\)\.nbytes\(\)",
        applies=functional_storage_sized_to_tensors,
        converters=("functional",),
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
    ),
    KnownDifference(
        id="real-copy-fails",
        check="conversion",
        attribute=r"raised",
        applies=any_copy_fails,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="real-zero-byte-storage-segfault",
        check="conversion",
        attribute=r"raised",
        applies=any_storage_too_small,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="real-values-not-copied",
        check="oracle",
        attribute=r"values",
        applies=carried_values_not_copied,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="real-conj-neg-bits",
        check="oracle",
        attribute=r"is_conj\(\)|is_neg\(\)",
        applies=carries_conj_neg,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="real-compressed-non-leaf",
        check="conversion",
        attribute=r"raised",
        applies=any_compressed_non_leaf,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="real-zero-byte-storage-regrown",
        check="storage",
        attribute=r"untyped_storage\(\)\.nbytes\(\)",
        applies=carried_zero_bytes_regrown,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="dynamic-sparse-non-leaf",
        check="conversion",
        attribute=r"raised",
        applies=any_dynamic_coo_non_leaf,
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
        # Before 2.13 a sparse COO fake keeps static sizes even with a ShapeEnv.
        since="2.13",
        reason=(
            "with dynamic sizes, the clone() that fakes a sparse COO non-leaf's history runs "
            "empty_strided (one dimension) or as_strided (more) on a sparse tensor: "
            "'NotImplementedError: Could not run aten::empty_strided / aten::as_strided with "
            "arguments from the SparseMeta (SparseCPU with real-tensor propagation) backend'"
        ),
        link=UNFILED,
        related=("https://github.com/pytorch/pytorch/pull/184993",),
        reproducer=(
            "import torch, torch._functorch.config as cfg\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch.fx.experimental.symbolic_shapes import (\n"
            "    DimDynamic, ShapeEnv, StatelessSymbolicContext)\n"
            "s = torch.eye(3).to_sparse().requires_grad_() * 2\n"
            "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 2,\n"
            "                               constraint_sizes=[None] * 2)\n"
            "with cfg.patch(fake_tensor_propagate_real_tensors=True):\n"
            "    mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)\n"
            "try:\n"
            "    mode.from_tensor(s, source=ConstantSource('s'), symbolic_context=ctx)\n"
            "except NotImplementedError as e:\n"
            "    assert 'empty_strided' in str(e)\n"
            "else:\n"
            "    raise AssertionError('converted')\n"
        ),
        raises=r"Could not run 'aten::(empty_strided|as_strided)' with arguments from the 'Sparse",
    ),
    KnownDifference(
        id="dynamic-sparse-nnz-internal-assert",
        check="sparse",
        attribute=r"_nnz\(\)",
        applies=coo_with_dynamic_dense_dims,
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
        # Before 2.13 a sparse COO fake keeps static sizes even with a ShapeEnv.
        since="2.13",
        reason=(
            "_nnz() of a fake sparse COO tensor with a dynamic dense dimension (size >= 2) "
            "raises 'RuntimeError: 0 INTERNAL ASSERT FAILED ... dispatch_on_subclass called "
            "with NO overloaded args'"
        ),
        link=UNFILED,
        related=("https://github.com/pytorch/pytorch/pull/184993",),
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch.fx.experimental.symbolic_shapes import (\n"
            "    DimDynamic, ShapeEnv, StatelessSymbolicContext)\n"
            "s = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0, 3), (2, 3))\n"
            "ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 2,\n"
            "                               constraint_sizes=[None] * 2)\n"
            "mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)\n"
            "f = mode.from_tensor(s, source=ConstantSource('s'), symbolic_context=ctx)\n"
            "try:\n"
            "    f._nnz()\n"
            "except RuntimeError as e:\n"
            "    assert 'INTERNAL ASSERT' in str(e)\n"
            "else:\n"
            "    raise AssertionError('no error')\n"
        ),
    ),
    KnownDifference(
        id="real-functional-tensor-storage-clone",
        check="conversion",
        attribute=r"raised",
        applies=any_functional_tensor_set_storage,
        converters=REAL_CONVERTERS,
        reason=(
            "a Python FunctionalTensor converted through MetaConverter's set_ path (a storage "
            "offset, or a shared storage) has its wrapper storage cloned for the carried real "
            "tensor: 'RuntimeError: Attempted to call copy_() on an invalid python storage'"
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
    ),
    KnownDifference(
        id="real-storage-too-small-for-alias",
        check="conversion",
        attribute=r"raised",
        applies=reaches_past_first_tensor,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="dynamic-zero-byte-scalar-item",
        check="conversion",
        attribute=r"raised",
        applies=zero_byte_scalar_item,
        converters=("fake-dynamic", "refake", "refake-fresh"),
        reason=(
            "with a ShapeEnv and a source, from_real_tensor reads item() of a 0-dim CPU "
            "int64/int32/int16/int8/float64 tensor to make an unbacked-free symbol for its "
            "value; with a zero-byte storage (resize_(0)) that raises 'RuntimeError: The tensor "
            "has a non-zero number of elements, but its data is not allocated yet'"
        ),
        link=UNFILED,
        related=("https://github.com/pytorch/pytorch/pull/126245",),
        reproducer=(
            "import torch\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
            "x = torch.tensor(3.0, dtype=torch.float64); x.untyped_storage().resize_(0)\n"
            "try:\n"
            "    FakeTensorMode(shape_env=ShapeEnv()).from_tensor(x, source=ConstantSource('x'))\n"
            "except RuntimeError as e:\n"
            "    assert 'not allocated' in str(e)\n"
            "else:\n"
            "    raise AssertionError('converted')\n"
        ),
        raises=r"data is not allocated yet",
    ),
    KnownDifference(
        id="version-counter-outside-views",
        check="aliasing",
        attribute=r"version counter sharing",
        applies=shares_version_counter_outside_view_tree,
        reason=(
            "converters share version counters only between a view and its base: tensors "
            "that share one otherwise -- x and x.detach() -- convert to tensors that share "
            "the storage but not the version counter, so an in-place op through one no longer "
            "bumps the other's _version"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "x = torch.randn(4); d = x.detach()\n"
            "m = FakeTensorMode(); fx, fd = m.from_tensor(x), m.from_tensor(d)\n"
            "torch.autograd.graph.increment_version(d)\n"
            "assert x._version == d._version\n"
            "torch.autograd.graph.increment_version(fd)\n"
            "assert fx._version != fd._version\n"
        ),
    ),
    KnownDifference(
        id="real-wrapper-subclass",
        check="conversion",
        attribute=r"raised",
        applies=any_wrapper_subclass,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
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
    ),
    KnownDifference(
        id="meta-under-functional-mode",
        check="wrappers",
        attribute=r"isinstance\(FunctionalTensor\)",
        applies=meta_wrapped_by_functional_mode,
        converters=("meta",),
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
    ),
    KnownDifference(
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
    ),
    KnownDifference(
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
    ),
    KnownDifference(
        id="jagged-nested-needs-shape-env",
        check="conversion",
        attribute=r"raised",
        applies=any_jagged_nested,
        converters=("meta", "fake", "fake-real", "functional"),
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
    ),
    KnownDifference(
        id="functional-sparse-compressed-grad-abort",
        check="conversion",
        attribute=r"raised",
        applies=any_compressed_requiring_grad,
        converters=("functional",),
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
    ),
    KnownDifference(
        id="strided-nested-describe-crash",
        check="conversion",
        attribute=r"raised",
        applies=any_strided_nested,
        converters=ALL_BUT_FUNCTIONAL + ("functional",),
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
    ),
    KnownDifference(
        id="retains-grad",
        check="autograd",
        attribute=r"retains_grad",
        applies=retains_grad,
        converters=ALL_BUT_FUNCTIONAL + ("functional",),
        reason="no converter carries retains_grad over: a non-leaf that retains its grad "
               "converts to one that does not",
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "y = torch.randn(3, requires_grad=True) * 2; y.retain_grad()\n"
            "assert not FakeTensorMode().from_tensor(y).retains_grad\n"
        ),
    ),
    KnownDifference(
        id="real-sparse-nnz-metadata",
        check="sparse",
        attribute=r"index dtype|blocksize",
        applies=sparse_metadata_from_elements,
        converters=REAL_CONVERTERS,
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
    ),
    KnownDifference(
        id="functorch-inner-requires-grad",
        check=("metadata", "oracle", "autograd"),
        attribute=r"m1\.requires_grad, m2\.requires_grad|requires_grad|is_leaf"
                  r"|non-leaf stays non-leaf",
        applies=functorch_inner_requires_grad,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="functorch-inner-storage-offset",
        check=("metadata", "oracle"),
        attribute=r"m1\.storage_offset, m2\.storage_offset\(\)|storage_offset\(\)",
        applies=functorch_inner_storage_offset,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="functorch-inner-storage-nbytes",
        check="storage",
        attribute=r"untyped_storage\(\)\.nbytes\(\)",
        applies=functorch_inner_storage_nbytes,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="functorch-inner-view",
        check=("metadata", "oracle"),
        attribute=r"m1\.is_view, m2\._is_view\(\)|_is_view\(\)",
        applies=functorch_inner_view,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="functorch-grad-non-leaf",
        check="conversion",
        attribute=r"raised",
        applies=any_grad_tracking_non_leaf,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="refake-subclass-view-symint",
        check="conversion",
        attribute=r"raised",
        applies=subclass_view_replays_symbol,
        converters=("refake", "refake-fresh"),
        reason=(
            "a fake view of a traceable wrapper subclass made with a ShapeEnv records the "
            "SymInts its view replay created; converting that fake again replays its view "
            "function, whose symint_visitor_fn passes each SymInt to ShapeEnv.create_symbol, "
            "which hashes it: 'TypeError: unhashable type: non-nested SymInt'"
        ),
        link=UNFILED,
        related=(
            "https://github.com/pytorch/pytorch/issues/115782",
            "https://github.com/pytorch/pytorch/pull/118405",
        ),
        reproducer=(
            "import torch\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
            "from torch.testing._internal.two_tensor import TwoTensor\n"
            "v = TwoTensor(torch.randn(2, 3), torch.randn(2, 3)).view(6)\n"
            "env = ShapeEnv()\n"
            "first = FakeTensorMode(shape_env=env, static_shapes=False).from_tensor(\n"
            "    v, source=ConstantSource('v'))\n"
            "try:\n"
            "    FakeTensorMode(shape_env=env, static_shapes=False).from_tensor(\n"
            "        first, source=ConstantSource('f'))\n"
            "except TypeError as e:\n"
            "    assert 'unhashable type: non-nested SymInt' in str(e)\n"
            "else:\n"
            "    raise AssertionError('converted')\n"
        ),
        raises=r"^TypeError: unhashable type: non-nested SymInt",
    ),
    KnownDifference(
        id="dispatch-cache-zero-element-view",
        check=("conversion", "aliasing", "metadata", "oracle", "storage"),
        attribute=r"raised|storage identity|m1\.storage_offset, m2\.storage_offset\(\)"
                  r"|storage_offset\(\)|untyped_storage\(\)\.nbytes\(\)",
        applies=dispatch_cache_zero_element_view,
        converters=("fake", "fake-dynamic", "refake", "refake-fresh"),
        reason=(
            "a view of a zero-element fake tensor is computed through prims.as_strided "
            "(_reshape_view_helper), which FakeTensorMode's dispatch cache does not treat as a "
            "view op: on a cache hit it rebuilds the output with empty_strided -- a new "
            "storage, storage offset 0.  View replay of zero-element views (the inner tensors "
            "of a subclass view one after another; a fake converted again) then gives fakes "
            "that do not share their base's storage, or inner tensors whose offsets disagree, "
            "which a subclass may refuse ('AssertionError: Expected a.storage_offset() == "
            "b.storage_offset()').  Modes with real-tensor propagation have no cache"
        ),
        link="https://github.com/pytorch/pytorch/issues/159151",
        reproducer=(
            "import torch\n"
            "from torch._dynamo.source import ConstantSource\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
            "from torch.testing._internal.two_tensor import TwoTensor\n"
            "FakeTensorMode.cache_clear()\n"
            "v = TwoTensor(torch.zeros(0), torch.zeros(0)).view(-1)\n"
            "f = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False).from_tensor(\n"
            "    v, source=ConstantSource('v'))\n"
            "S = lambda t: t.untyped_storage()._cdata\n"
            "assert S(v.b) == S(v._base.b) and S(f.b) != S(f._base.b)\n"
        ),
    ),
    KnownDifference(
        id="dynamic-functional-storage-size",
        check="storage",
        attribute=r"untyped_storage\(\)\.nbytes\(\)",
        applies=functional_dynamic_storage_from_inner,
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
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
    ),
    KnownDifference(
        id="subclass-view-replay-refs",
        check="conversion",
        attribute=r"raised",
        applies=subclass_view_replay_mismatch,
        converters=("meta", "fake", "fake-dynamic", "refake", "refake-fresh"),
        reason=(
            "MetaConverter rebuilds a view of a traceable wrapper subclass by replaying its view "
            "function on the converted base under the Python dispatcher, then torch._check()s "
            "the result's sizes, strides and storage offset against the real view's.  Under the "
            "Python dispatcher meta view ops run their torch._refs, which can disagree with "
            "ATen: an empty diagonal() with offset k gets storage offset k * stride (ATen keeps "
            "the input's offset for an empty diagonal), and the check raises 'RuntimeError: "
            "Expected cond to be True, but got False'"
        ),
        link=UNFILED,
        related=("https://github.com/pytorch/pytorch/pull/118405",),
        reproducer=(
            "import torch\n"
            "from torch._dispatch.python import enable_python_dispatcher\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from torch.testing._internal.two_tensor import TwoTensor\n"
            "m = torch.zeros(1, 0, device='meta')\n"
            "with enable_python_dispatcher():\n"
            "    assert m.diagonal(1).storage_offset() == 1\n"
            "assert m.diagonal(1).storage_offset() == torch.zeros(1, 0).diagonal(1).storage_offset() == 0\n"
            "v = TwoTensor(torch.zeros(1, 0), torch.zeros(1, 0)).diagonal(1)\n"
            "try:\n"
            "    FakeTensorMode().from_tensor(v)\n"
            "except RuntimeError as e:\n"
            "    assert 'Expected cond to be True' in str(e)\n"
            "else:\n"
            "    raise AssertionError('converted')\n"
        ),
        raises=r"^RuntimeError: Expected cond to be True",
    ),
    KnownDifference(
        id="dynamic-functional-zero-byte-resize",
        check="conversion",
        attribute=r"raised",
        applies=functional_zero_byte_resize,
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
        reason=(
            "meta_tensor ends with r.untyped_storage().resize_(0) when the real storage has "
            "zero bytes.  A C++ functional tensor with no elements has a zero-byte functional "
            "storage, but with a ShapeEnv its converted wrapper's storage takes the wrapped "
            "tensor's storage size (dynamic-functional-storage-size) -- not zero for a tensor "
            "installed with set_ at an offset -- and resizing a functional storage raises "
            "'RuntimeError: Attempted to call resize_() on an invalid python storage'"
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
    ),
    KnownDifference(
        id="functional-sync-on-convert",
        check="purity",
        attribute=r"torch\._from_functional_tensor\(\)|stride\(\)|storage_offset\(\)",
        applies=functional_value_replaced,
        converters=ALL_BUT_FUNCTIONAL,
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
    ),
    KnownDifference(
        id="real-functorch-view-refusal-str",
        check="conversion",
        attribute=r"raised",
        applies=real_functorch_view_refusal_fails,
        converters=REAL_CONVERTERS,
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
    ),
]


def _op_difference_entries() -> list[KnownDifference]:
    """Each operator difference (:mod:`.op_differences`) as the known
    difference ``op:<id>`` of the ``behaviour`` check.  It occurs exactly
    when the check attributed a step's difference to it (the check records
    the ids on the conversion), so it is never unexpectedly passing where
    the program did not run the operator."""
    from .op_differences import registry as op_registry

    def recorded(entry_id: str) -> object:
        return lambda case: entry_id in getattr(case.conversion, "op_differences", ())

    return [
        KnownDifference(
            id=f"op:{e.id}", check="behaviour", attribute=re.escape(f"op-difference {e.id}"),
            applies=recorded(e.id), reason=e.reason, link=e.link, converters=e.converters,
            since=e.since, until=e.until, reproducer=e.reproducer)
        for e in op_registry()
    ]


def _behaviour_recorded(attr: str, test: object) -> object:
    """A predicate holding when the ``behaviour`` check recorded, on the
    conversion, an item of ``attr`` satisfying ``test``."""
    return lambda case: any(test(x) for x in getattr(case.conversion, attr, ()))


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
            lambda d: d[0] == "raised"
            and "tried to directly modify sizes for customized tensor" in d[2]),
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
        reason=(
            "a fake with symbolic sizes has custom sizes/strides (SymInts): resize_ (and the "
            "set_/as_strided_ that change its sizes) raises 'tried to directly modify sizes for "
            "customized tensor' where the real tensor resizes (or refuses for another reason, "
            "checked after the sizes: an inference tensor outside inference mode); Dynamo "
            "graph-breaks on resizing inputs"
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

_BEHAVIOUR_ENTRIES += [
    KnownDifference(
        id="behaviour-eager-internal-assert",
        check="behaviour",
        attribute=r"raised",
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: d[0] == "raised" and "INTERNAL ASSERT FAILED" in d[1] and d[2] == "nothing"),
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
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: d[0] == "grad is not None" and d[1] == "False" and d[2] == "True"),
        converters=("fake", "fake-dynamic", "fake-real", "fake-real-dynamic", "refake",
                    "refake-fresh", "functional"),
        reason=(
            "the fake of a view taken in no_grad (or inference) mode of a leaf requiring "
            "grad is a leaf that accumulates .grad when a backward reaches it; the real view, "
            "and the same view made directly under the FakeTensorMode, get no .grad"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "x = torch.zeros((), requires_grad=True)\n"
            "with torch.no_grad():\n"
            "    v = x.expand(3)\n"
            "mode = FakeTensorMode()\n"
            "f = mode.from_tensor(v)\n"
            "v.sum().backward()\n"
            "with mode:\n"
            "    f.sum().backward()\n"
            "assert v.grad is None and f.grad is not None\n"
        ),
    ),
]

_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-dynamic-storage-bounds-unchecked-after-view",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d[0] == "raised" and "out of bounds for storage" in d[1] and d[2] == "nothing"),
    converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
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
    from .op_differences import DEGENERATE_STRIDES_REPRODUCER

    return DEGENERATE_STRIDES_REPRODUCER


def _zero_element_view_entry() -> KnownDifference:
    from .op_differences import NOT_A_VIEW, ZERO_ELEMENT_VIEW_REPRODUCER

    return KnownDifference(
        id="behaviour-zero-element-view-dispatch-cache",
        check="behaviour",
        attribute=NOT_A_VIEW,
        applies=_behaviour_recorded(
            "behaviour_differences",
            lambda d: re.fullmatch(NOT_A_VIEW, d[0]) is not None and d[3] == 0),
        converters=("fake", "fake-dynamic", "refake", "refake-fresh", "functional"),
        reason=(
            "FakeTensorMode's dispatch cache: a view op on a converted tensor with no elements "
            "may return a tensor that is not a view of it (another storage), depending on "
            "earlier cache hits; the control, made with another cache history, may not show it "
            "(the operator difference op:zero-element-view-dispatch-cache)"
        ),
        link="https://github.com/pytorch/pytorch/issues/159151",
        reproducer=ZERO_ELEMENT_VIEW_REPRODUCER,
    )


_BEHAVIOUR_ENTRIES.append(_zero_element_view_entry())


def _only_degenerate_strides(d: tuple) -> bool:
    """A recorded stride() difference only on dimensions of size 1 (or of a
    tensor with no elements), where a stride moves through no memory."""
    import ast

    if d[0] != "stride()" or d[4] is None:
        return False
    real, fake = ast.literal_eval(d[1]), ast.literal_eval(d[2])
    if d[3] == 0:
        return True
    return len(real) == len(fake) == len(d[4]) and all(
        a == b or n == 1 for a, b, n in zip(real, fake, d[4]))


_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-degenerate-strides",
    check="behaviour",
    attribute=r"stride\(\)",
    applies=_behaviour_recorded("behaviour_differences", _only_degenerate_strides),
    reason=(
        "strides of dimensions of size 1 (or of a tensor with no elements) move through no "
        "memory; the strides fake and meta kernels give them (a view's, a gradient's after "
        "backward) may differ from eager's, depending on the dispatch cache's history -- the "
        "operator difference op:degenerate-strides, which the control does not always show"
    ),
    link=BY_DESIGN,
    reproducer=_degenerate_strides_reproducer(),
))
_BEHAVIOUR_ENTRIES.append(KnownDifference(
    id="behaviour-storage-sized-to-tensors",
    check="behaviour",
    attribute=r"raised",
    applies=_behaviour_recorded(
        "behaviour_differences",
        lambda d: d[0] == "raised" and d[1] == "nothing" and "out of bounds for storage" in d[2]),
    reason=(
        "the converted tensor's storage is sized to what the tensors reach, not to the real "
        "storage (storage-sized-to-tensors; with symbolic sizes the storage check cannot see "
        "it): set_/as_strided_ into the rest of the real storage raises 'out of bounds for "
        "storage' on the fake only"
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

KNOWN_DIFFERENCES += _op_difference_entries() + _BEHAVIOUR_ENTRIES


# -- the behaviour check's conversion-level differences (issue #12) ----------------------------

from .predicates import (  # noqa: E402
    behaviour_grad_lost_conj_bit, behaviour_storage_bounds_unchecked)

KNOWN_DIFFERENCES += [
    KnownDifference(
        id="behaviour-conj-view-grad-not-conj",
        check="behaviour",
        attribute=r"is_conj\(\)",
        applies=behaviour_grad_lost_conj_bit,
        reason=(
            "a converted view of a conjugate view (x.conj()[1:]) has one AsStridedBackward0 on "
            "its base as autograd history, where the real view has SliceBackward0 -> "
            "ConjBackward0: a backward through it leaves the base a .grad that is not a "
            "conjugate view, where eager's (and that of the same view made directly under the "
            "FakeTensorMode) is"
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
        converters=("fake", "fake-real", "functional"),
        reason=(
            "an in-place metadata op (unsqueeze_) on a converted tensor whose storage is too "
            "small for it (shrunk to zero bytes) goes through where the real tensor raises "
            "'setStorage: ... out of bounds for storage': the operator difference "
            "op:view-unchecked-storage-bounds, which the control shows or not depending on the "
            "dispatch cache's history (after an inference-mode op on it, its meta kernel may "
            "check the bounds)"
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
