"""Known differences of sparse layouts (COO and compressed): elements, nnz-dependent metadata,
non-leaf autograd history.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...converters import where
from ..core import BY_DESIGN, Case, KnownDifference, UNFILED
from ..facts import family_wide, layout_name, needs

ENTRIES: list[KnownDifference] = []


@needs("sparse")
def is_sparse_with_elements(case: Case) -> bool:
    t = case.tensor
    return t is not None and layout_name(t).startswith("sparse") and int(t._nnz()) > 0


ENTRIES.append(KnownDifference(
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
))


@needs("sparse")
def sparse_coo_non_leaf(case: Case) -> bool:
    t = case.tensor
    return (t is not None and layout_name(t) == "sparse_coo" and t.requires_grad
            and not t.is_leaf)


ENTRIES.append(KnownDifference(
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
))


@family_wide
@needs("sparse")
def any_dynamic_coo_non_leaf(case: Case) -> bool:
    return any(layout_name(t) == "sparse_coo" and t.requires_grad and not t.is_leaf
               and any(n >= 2 for n in t.shape) for t in case.family)


ENTRIES.append(KnownDifference(
    id="dynamic-sparse-non-leaf",
    check="conversion",
    attribute=r"raised",
    applies=any_dynamic_coo_non_leaf,
    converters=where(symbolic=True),
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
))


@needs("sparse")
def coo_with_dynamic_dense_dims(case: Case) -> bool:
    """A COO tensor with a dense dimension of size >= 2 (dynamic: sizes 0
    and 1 are specialized)."""
    t = case.tensor
    return (t is not None and layout_name(t) == "sparse_coo"
            and any(n >= 2 for n in t.shape[t.sparse_dim():]))


ENTRIES.append(KnownDifference(
    id="dynamic-sparse-nnz-internal-assert",
    check="sparse",
    attribute=r"_nnz\(\)",
    applies=coo_with_dynamic_dense_dims,
    converters=where(symbolic=True),
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
))


@family_wide
@needs("sparse")
def view_of_a_compressed_tensor(case: Case) -> bool:
    """Some tensor converted is a view whose base has a compressed sparse
    layout (its ``values()``, or a view of them)."""
    from ...strategies.tensor_facts import COMPRESSED_LAYOUTS, base_of, is_view

    for t in case.family:
        base = base_of(t) if is_view(t) else None
        if base is not None and layout_name(base) in COMPRESSED_LAYOUTS:
            return True
    return False


ENTRIES.append(KnownDifference(
    id="compressed-values-view-unconvertible",
    check="conversion",
    attribute=r"raised",
    applies=view_of_a_compressed_tensor,
    reason=(
        "converting a view of a sparse compressed tensor (a CSR/CSC/BSR/BSC tensor's "
        "values(), or a slice of them) raises, where a view of a sparse COO tensor is refused: "
        "MetaConverter refuses views of sparse tensors ('Views out of sparse tensors not "
        "currently supported': NotImplemented, so FakeTensorMode raises "
        "UnsupportedFakeTensorException) by testing t._base.is_sparse, which is False for the "
        "compressed layouts; the view is then rebuilt from its base with as_strided, which "
        "has no kernel for a sparse compressed tensor: NotImplementedError (under a ShapeEnv, "
        "UnsupportedOperatorException); where the base requires grad, view_from_base reads "
        "the base's strides first: 'Sparse CSR tensors do not have strides'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/120588",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode, UnsupportedFakeTensorException\n"
        "def error(t):\n"
        "    try:\n"
        "        FakeTensorMode().from_tensor(t)\n"
        "    except Exception as e:\n"
        "        return e\n"
        "coo, csr = torch.eye(2).to_sparse(), torch.eye(2).to_sparse_csr()\n"
        "assert isinstance(error(coo.values()), UnsupportedFakeTensorException)  # refused\n"
        "e = error(csr.values())\n"
        "assert type(e) is NotImplementedError and 'aten.as_strided' in str(e), e\n"
        "csr.requires_grad_()\n"
        "e = error(csr.values())\n"
        "assert str(e) == 'Sparse CSR tensors do not have strides', e\n"
    ),
    raises=(r"^(NotImplementedError: could not find kernel for aten\.as_strided\.default at "
            r"dispatch key DispatchKey\.Sparse(Csr)?\w+|"
            r"UnsupportedOperatorException: aten\.as_strided\.default|"
            r"RuntimeError: Sparse (CSR|CSC|BSR|BSC) tensors do not have strides)$"),
))
