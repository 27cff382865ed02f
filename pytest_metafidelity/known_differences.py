"""Known differences: places where a converter is knowingly not faithful.

Each :class:`KnownDifference` is either *by design* (``link`` is
:data:`BY_DESIGN` and ``reason`` says why) or an *upstream bug* (``link`` is
the upstream issue; ``reason`` describes it), and applies only to the torch
versions in ``[since, until)`` and to the converters it names.

How :func:`~pytest_metafidelity.faithful.check_faithful` uses the registry:

* A mismatch is *explained* by an entry when the entry is active (torch
  version, converter), names the mismatch's check, its ``attribute``
  pattern matches the mismatch's attribute (``re.fullmatch``), and its
  ``applies`` predicate holds for the case (the real tensor at the
  mismatch's path, the converter, the whole family).  A converter whose
  every mismatch is explained gets the status ``known-difference`` and its
  reason lists the entry ids.
* An active entry whose predicate holds for some tensor of the family (and
  whose check ran) *expects* a mismatch.  If none of the mismatches is
  explained by it, the difference no longer occurs -- perhaps fixed upstream
  -- and the outcome is ``unexpectedly-passing`` (listing the entry ids), so
  the fix is noticed.  Predicates must therefore be exact: they say when the
  difference occurs, not merely when it might.
* With ``strict=True`` neither is tolerated: explained mismatches and
  unexpectedly passing entries make the outcome ``failed``.  Without it,
  ``assert_faithful`` passes but warns :class:`UnexpectedlyPassing`.

Every entry observed upstream carries a minimal reproducer (``reproducer``),
which the project's tests run.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable

BY_DESIGN = "by design"


class UnexpectedlyPassing(UserWarning):
    """A registered known difference did not occur."""


@dataclasses.dataclass(frozen=True)
class Case:
    """What an ``applies`` predicate sees."""

    converter: str  # converter name
    path: str  # e.g. "t0", "t0._base", "t1.grad"
    tensor: Any  # the real tensor at ``path`` (None when there is none)
    family: tuple[Any, ...]  # every real tensor involved (bases, grads, inner)
    conversion: Any  # the checks.Conversion


@dataclasses.dataclass(frozen=True)
class KnownDifference:
    id: str
    check: str | tuple[str, ...]  # the check(s) that report it ("conversion": it raised)
    attribute: str  # regular expression, full match against Mismatch.attribute
    applies: Callable[[Case], bool]
    reason: str
    link: str  # BY_DESIGN, or the upstream issue / pull request
    converters: tuple[str, ...] | None = None  # None: every converter
    since: str | None = None  # first torch version with the difference
    until: str | None = None  # first torch version without it (exclusive)
    reproducer: str = ""  # minimal runnable Python showing the difference

    @property
    def by_design(self) -> bool:
        return self.link == BY_DESIGN

    @property
    def checks(self) -> tuple[str, ...]:
        return (self.check,) if isinstance(self.check, str) else tuple(self.check)

    def active(self, converter: str, version: Any = None) -> bool:
        if self.converters is not None and converter not in self.converters:
            return False
        return version_in_range(version, self.since, self.until)

    def matches(self, mismatch: Any, case: Case) -> bool:
        return (
            mismatch.check in self.checks
            and re.fullmatch(self.attribute, mismatch.attribute) is not None
            and _holds(self.applies, case)
        )

    def describe(self) -> str:
        where = "by design" if self.by_design else f"upstream bug: {self.link}"
        return f"{self.id} ({where}): {self.reason}"


def _holds(predicate: Callable[[Case], bool], case: Case) -> bool:
    try:
        return bool(predicate(case))
    except Exception:
        return False


def torch_version() -> Any:
    import torch

    return torch.__version__


def version_in_range(version: Any, since: str | None, until: str | None) -> bool:
    from torch.torch_version import TorchVersion

    v = TorchVersion(str(version if version is not None else torch_version()))
    if since is not None and v < since:
        return False
    if until is not None and v >= until:
        return False
    return True


# -- predicates -----------------------------------------------------------------
#
# A predicate says exactly when the difference occurs (see the module
# docstring): the project's property tests fail on a difference no entry
# explains and on an entry that expected a difference that did not occur.

STATIC_FAKE_CONVERTERS = ("fake", "fake-real")
FAKE_CONVERTERS = ("fake", "fake-dynamic", "fake-real", "fake-real-dynamic", "refake",
                   "refake-fresh")
ALL_BUT_FUNCTIONAL = ("meta", *FAKE_CONVERTERS)
REAL_CONVERTERS = ("fake-real", "fake-real-dynamic")
SUB_BYTE_DTYPES = tuple(f"{p}int{i}" for p in ("", "u") for i in range(1, 8))


def _layout(t: Any) -> str:
    return str(getattr(t, "layout", "")).removeprefix("torch.")


def _dtype(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _strided(t: Any) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return (t is not None and _layout(t) == "strided" and t.device.type != "meta"
            and type(t).__name__ != "FakeTensor" and not is_traceable_wrapper_subclass(t))


def _storage(t: Any) -> Any:
    return t.untyped_storage()._cdata


def reach(t: Any) -> int:
    """Bytes of storage a strided tensor reaches, its offset included (0 when
    it has no elements) -- ATen's computeStorageNbytes."""
    if t.numel() == 0:
        return 0
    last = t.storage_offset() + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size()


def visiting_order(conversion: Any) -> list[Any]:
    """The real tensors in the order MetaConverter creates their converted
    counterparts: per tensor converted (in the conversion's order), a view's
    ``_base`` first (with the base's grad), then the tensor, then its grad."""
    from .checks._util import base_of, grad_of, inner_tensors

    seq: list[Any] = []
    seen: set[int] = set()

    def visit(t: Any, depth: int) -> None:
        if t is None or id(t) in seen or depth > 8:
            return
        visit(base_of(t), depth + 1)
        if id(t) in seen:
            return
        for _, inner in inner_tensors(t):  # a subclass's inner tensors come first
            visit(inner, depth + 1)
        seen.add(id(t))
        seq.append(t)
        visit(grad_of(t), depth + 1)

    order = conversion.order if conversion.order is not None else range(len(conversion.real))
    for i in order:
        visit(conversion.real[i], 0)
    return seq


def converted_storage_nbytes(conversion: Any, t: Any, *, grow_on_views: bool) -> int | None:
    """The size MetaConverter gives the converted storage of ``t``'s storage
    S: 0 if S has zero bytes; else the storage allocated for the first
    non-view tensor on S (sized to that tensor's reach when its offset is 0
    -- ``empty_strided``; else S's real size -- ``set_`` on a storage of S's
    size), grown by each later tensor on S that reaches further: ``set_``
    for non-views; ``as_strided`` for views, which grows fake tensors'
    storages (``grow_on_views``) but not meta tensors'."""
    from .checks._util import is_view

    key = _storage(t)
    real_n = t.untyped_storage().nbytes()
    if real_n == 0:
        return 0
    size = None
    for u in visiting_order(conversion):
        if not _strided(u) or _storage(u) != key:
            continue
        if size is None:
            if is_view(u):
                return None  # S's first tensor is a view of a tensor we don't see
            size = reach(u) if u.storage_offset() == 0 else real_n
        elif not is_view(u) or grow_on_views:
            size = max(size, reach(u))
    return size


def _static_fake_nbytes(case: Case) -> bool:
    from .checks._util import is_symbolic, resolve

    fake = resolve(case.conversion, case.path, fake=True)
    if fake is None:
        return False
    return not is_symbolic(fake.untyped_storage().nbytes())


def storage_sized_to_tensors(case: Case) -> bool:
    t = case.tensor
    if not _strided(t) or not _static_fake_nbytes(case):
        return False
    grow = case.converter != "meta"
    predicted = converted_storage_nbytes(case.conversion, t, grow_on_views=grow)
    return predicted is not None and predicted != t.untyped_storage().nbytes()


def functional_storage_sized_to_tensors(case: Case) -> bool:
    """The functional round trip gives each wrapped root (a non-view tensor,
    or a view's base) a storage sized to the tensors on it: its reach, grown
    by views of it reaching further -- unless the root reaches nothing: the
    zero-byte functional storage stays zero bytes."""
    from .checks._util import base_of, is_view

    t = case.tensor
    if not _strided(t) or not _static_fake_nbytes(case):
        return False
    root = base_of(t) if is_view(t) else t
    size = reach(root)
    if size:  # a zero-byte functional storage stays zero bytes when converted
        for u in case.family:
            if _strided(u) and is_view(u) and base_of(u) is root:
                size = max(size, reach(u))
    return size != t.untyped_storage().nbytes()


def functional_separates_aliases(case: Case) -> bool:
    """Tensors sharing a storage without being views of one base."""
    from .checks._util import base_of, is_view

    t = case.tensor
    if not _strided(t):
        return False
    root = base_of(t) if is_view(t) else t
    for u in case.family:
        if _strided(u) and _storage(u) == _storage(t):
            if (base_of(u) if is_view(u) else u) is not root:
                return True
    return False


def shares_version_counter_outside_view_tree(case: Case) -> bool:
    """``case.tensor`` shares its version counter with a tensor of the family
    that is not in its view tree (not its base, a view of its base, ...) --
    e.g. ``x`` and ``x.detach()``.  Converters share version counters only
    along view relationships."""
    from .checks._util import base_of, is_view
    from .checks.aliasing import version_partition

    t = case.tensor
    if t is None:
        return False
    family = list(case.family)
    if not any(u is t for u in family):
        return False
    labels = version_partition(family)
    index = next(i for i, u in enumerate(family) if u is t)
    if labels[index] is None:
        return False
    root = base_of(t) if is_view(t) else t
    return any(
        labels[j] == labels[index] and (base_of(u) if is_view(u) else u) is not root
        for j, u in enumerate(family) if j != index
    )


def sparse_coo_non_leaf(case: Case) -> bool:
    t = case.tensor
    return (t is not None and _layout(t) == "sparse_coo" and t.requires_grad
            and not t.is_leaf)


def is_inference_tensor(case: Case) -> bool:
    t = case.tensor
    return t is not None and bool(t.is_inference())


def is_parameter(case: Case) -> bool:
    import torch

    return isinstance(case.tensor, torch.nn.Parameter)


def requires_grad_leaf(case: Case) -> bool:
    """A leaf that requires grad and is not a view (views are re-created on
    the wrapped base, not wrapped)."""
    from .checks._util import is_view

    t = case.tensor
    return t is not None and bool(t.requires_grad and t.is_leaf) and not is_view(t)


def retains_grad(case: Case) -> bool:
    t = case.tensor
    return t is not None and not t.is_leaf and bool(t.retains_grad)


def custom_grad_dtype(case: Case) -> bool:
    t = case.tensor
    return (t is not None and t.requires_grad and t.is_leaf
            and getattr(t, "grad_dtype", t.dtype) != t.dtype)


def is_sparse_with_elements(case: Case) -> bool:
    t = case.tensor
    return t is not None and _layout(t).startswith("sparse") and int(t._nnz()) > 0


def is_coo_with_elements(case: Case) -> bool:
    t = case.tensor
    return t is not None and _layout(t) == "sparse_coo" and int(t._nnz()) > 0


def carried_values_not_copied(case: Case) -> bool:
    """The carried tensor's values differ where MetaConverter does not copy
    them: (a) the tensor (or its view base) is not exactly a torch.Tensor (an
    nn.Parameter, a FunctionalTensor, ...): _safe_copy skips it; (b) another
    tensor on the same storage was converted first, at offset 0: the carried
    storage holds only that tensor's elements."""
    import torch

    from .checks._util import base_of, is_view, resolve
    from .checks.oracle import values_equal

    t = case.tensor
    if t is None or not _strided(t) or t.numel() == 0:
        return False
    root = base_of(t) if is_view(t) else t
    not_copied = type(root) is not torch.Tensor
    if not not_copied:
        key = _storage(t)
        first = next((u for u in visiting_order(case.conversion)
                      if _strided(u) and not is_view(u) and _storage(u) == key), None)
        not_copied = first is not None and first is not root and first.storage_offset() == 0
    if not not_copied:
        return False
    carried = resolve(case.conversion, case.path.removesuffix(".real_tensor") + ".real_tensor",
                      fake=True)
    return carried is not None and values_equal(t, carried) is False


def any_compressed_non_leaf(case: Case) -> bool:
    return any(_layout(t) in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")
               and t.requires_grad and not t.is_leaf for t in case.family)


def coo_with_dynamic_dense_dims(case: Case) -> bool:
    """A COO tensor with a dense dimension of size >= 2 (dynamic: sizes 0
    and 1 are specialized)."""
    t = case.tensor
    return (t is not None and _layout(t) == "sparse_coo"
            and any(n >= 2 for n in t.shape[t.sparse_dim():]))


def any_dynamic_coo_non_leaf(case: Case) -> bool:
    return any(_layout(t) == "sparse_coo" and t.requires_grad and not t.is_leaf
               and any(n >= 2 for n in t.shape) for t in case.family)


def any_functional_tensor_set_storage(case: Case) -> bool:
    """A (Python) FunctionalTensor that MetaConverter installs with set_ on a
    storage it clones -- one with a storage offset, or sharing its storage."""
    from .checks._util import is_view

    for t in case.family:
        if not _is_functional_tensor_wrapper(t) or is_view(t):
            continue
        if t.storage_offset() != 0:
            return True
        key = t.untyped_storage()._cdata
        if any(u is not t and _layout(u) == "strided" and u.untyped_storage()._cdata == key
               for u in case.family):
            return True
    return False


def carried_zero_bytes_regrown(case: Case) -> bool:
    """A zero-byte storage (its tensor not copied, so no crash): the carried
    real tensor is a fresh empty_strided one, with bytes."""
    from .checks._util import resolve

    t = case.tensor
    if not case.path.endswith(".real_tensor") or not _strided(t):
        return False
    if t.untyped_storage().nbytes() != 0:
        return False
    carried = resolve(case.conversion, case.path, fake=True)
    return carried is not None and carried.untyped_storage().nbytes() != 0


def carries_conj_neg(case: Case) -> bool:
    t = case.tensor
    return t is not None and _strided(t) and bool(t.is_conj() or t.is_neg())


def sparse_metadata_from_elements(case: Case) -> bool:
    """Queries whose result depends on nnz: _indices() of COO, values() of
    BSR/BSC (the block size)."""
    t = case.tensor
    if t is None or not _layout(t).startswith("sparse") or int(t._nnz()) == 0:
        return False
    return _layout(t) in ("sparse_coo", "sparse_bsr", "sparse_bsc")


def any_storage_too_small(case: Case) -> bool:
    from .converters import crashing_copy

    return any(crashing_copy(t) for t in case.conversion.real)


def any_copy_fails(case: Case) -> bool:
    """MetaConverter's copy of a real tensor's values would raise: copy_ into
    empty_strided(size, stride) for the non-view tensors whose type is
    exactly torch.Tensor (and the tensors inside C++ functional and functorch
    wrappers); clone() of sparse tensors.  Decided by doing the same copy."""
    import torch

    from .checks._util import is_view
    from .converters import _family, storage_too_small

    for top in case.conversion.real:
        for t in _family(top):
            if type(t) is not torch.Tensor or storage_too_small(t):
                continue
            try:
                with torch.no_grad():
                    if _layout(t).startswith("sparse"):
                        t.clone()
                    elif _layout(t) == "strided" and not is_view(t):
                        dst = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype,
                                                  device=t.device)
                        dst.copy_(t)
            except Exception:
                return True
    return False


def reaches_past_first_tensor(case: Case) -> bool:
    """A tensor reaches past the storage of the first non-view tensor on its
    storage, which was allocated at offset 0 with that tensor's reach: the
    carried real tensors' storage is too small for it."""
    from .checks._util import is_view

    conversion = case.conversion
    first: dict[Any, Any] = {}
    for u in visiting_order(conversion):
        if not _strided(u) or u.untyped_storage().nbytes() == 0:
            continue
        key = _storage(u)
        if key not in first:
            if is_view(u):
                first[key] = None
                continue
            first[key] = u
            continue
        owner = first[key]
        if owner is not None and owner.storage_offset() == 0 and reach(u) > reach(owner):
            return True
    return False


def any_strided_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and not is_traceable_wrapper_subclass(t)
               for t in case.family)


def any_wrapper_subclass(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(is_traceable_wrapper_subclass(t) for t in case.family)


def _functional_mode_active() -> bool:
    import torch

    key = getattr(torch._C, "_TorchDispatchModeKey", None)
    if key is None:
        return False
    return torch._C._get_dispatch_mode(key.FUNCTIONAL) is not None


def _is_functional_tensor_wrapper(t: Any) -> bool:
    from torch._subclasses.functional_tensor import FunctionalTensor

    return isinstance(t, FunctionalTensor)


def functional_wrapper_dropped(case: Case) -> bool:
    """A FunctionalTensor converts to a plain tensor: always for fake
    converters; for the meta converter when no FunctionalTensorMode is active
    (under one, the mode wraps meta's factory result again)."""
    t = case.tensor
    if t is None or not _is_functional_tensor_wrapper(t):
        return False
    return case.converter != "meta" or not _functional_mode_active()


def meta_wrapped_by_functional_mode(case: Case) -> bool:
    t = case.tensor
    return t is not None and not _is_functional_tensor_wrapper(t) and _functional_mode_active()


def any_grad_of_another_dtype(case: Case) -> bool:
    from .checks._util import grad_of

    for t in case.family:
        g = grad_of(t)
        if g is not None and g.dtype != t.dtype:
            return True
    return False


def any_functional_view(case: Case) -> bool:
    import torch

    is_functional = getattr(torch, "_is_functional_tensor", None)
    return is_functional is not None and any(
        is_functional(t) and t._is_view() and t.device.type not in ("xla", "lazy")
        for t in case.family
    )


def any_jagged_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and is_traceable_wrapper_subclass(t)
               for t in case.family)


def any_compressed_requiring_grad(case: Case) -> bool:
    from .converters import _compressed_requiring_grad

    return any(_compressed_requiring_grad(t) for t in case.family)


def zero_byte_scalar_item(case: Case) -> bool:
    """from_tensor with a ShapeEnv and a source reads ``item()`` of a 0-dim
    CPU int64/int32/int16/int8/float64 tensor to make a symbol for it: with
    a zero-byte storage that read raises."""
    from .converters import storage_too_small

    return any(
        _strided(t) and t.dim() == 0 and t.device.type == "cpu" and type(t).__name__ == "Tensor"
        and _dtype(t) in ("int64", "int32", "int16", "int8", "float64") and storage_too_small(t)
        for t in case.conversion.real
    )


# -- the registry ---------------------------------------------------------------

UNFILED = "unfiled (found by pytest-metafidelity; reproducer below)"

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
            "elements), so a set_ alias converted later reads uninitialized bytes where the "
            "first one does not reach (order-dependent)"
        ),
        link=UNFILED,
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
        reason=(
            "with dynamic sizes, the clone() that fakes a sparse COO non-leaf's history runs "
            "empty_strided on a sparse tensor: 'NotImplementedError: Could not run "
            "aten::empty_strided with arguments from the SparseMeta (SparseCPU with real-tensor "
            "propagation) backend'"
        ),
        link=UNFILED,
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
    ),
    KnownDifference(
        id="dynamic-sparse-nnz-internal-assert",
        check="sparse",
        attribute=r"_nnz\(\)",
        applies=coo_with_dynamic_dense_dims,
        converters=("fake-dynamic", "fake-real-dynamic", "refake", "refake-fresh"),
        reason=(
            "_nnz() of a fake sparse COO tensor with a dynamic dense dimension (size >= 2) "
            "raises 'RuntimeError: 0 INTERNAL ASSERT FAILED ... dispatch_on_subclass called "
            "with NO overloaded args'"
        ),
        link=UNFILED,
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
        link=UNFILED,
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
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode\n"
            "x = torch.randn(4, 6).to_sparse_csr().requires_grad_()\n"
            "with FunctionalTensorMode():\n"
            "    FunctionalTensor.to_functional(x)  # process aborts (SIGABRT)\n"
        ),
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
]


def registry() -> list[KnownDifference]:
    return list(KNOWN_DIFFERENCES)


def by_id(entry_id: str) -> KnownDifference:
    for e in KNOWN_DIFFERENCES:
        if e.id == entry_id:
            return e
    raise KeyError(entry_id)


@dataclasses.dataclass
class Triage:
    """How the registry judged one converter's mismatches."""

    unexplained: list[Any]
    explained: list[tuple[str, Any]]  # (entry id, mismatch)
    unexpectedly_passing: list[str]  # entry ids
    occurred: list[str] = dataclasses.field(default_factory=list)  # ids of entries that matched


def triage(
    converter: str,
    mismatches: list[Any],
    conversion: Any,
    checks_run: Iterable[str],
    entries: Iterable[KnownDifference] | None = None,
) -> Triage:
    """Split ``mismatches`` into explained and unexplained; find the active
    entries that expected a difference here but saw none."""
    from .checks._util import resolve, walk_real

    entries = [e for e in (registry() if entries is None else entries) if e.active(converter)]
    family_nodes = walk_real(conversion.names, conversion.real) if conversion is not None else []
    family = tuple(r for _, r in family_nodes)

    def case(path: str, tensor: Any) -> Case:
        return Case(converter, path, tensor, family, conversion)

    unexplained, explained = [], []
    hit: set[str] = set()
    for m in mismatches:
        tensor = resolve(conversion, m.path) if conversion is not None else None
        matching = [e for e in entries if e.matches(m, case(m.path, tensor))]
        if not matching:
            unexplained.append(m)
        else:
            # Every entry that predicts this difference saw it occur.
            explained.append((matching[0].id, m))
            hit.update(e.id for e in matching)

    ran = set(checks_run)
    crashed = {m.check for m in mismatches if m.attribute == "check raised"}
    passing = []
    for e in entries:
        if e.id in hit or not set(e.checks) & ran or set(e.checks) & crashed:
            continue
        if any(_holds(e.applies, case(p, r)) for p, r in family_nodes):
            passing.append(e.id)
    return Triage(unexplained, explained, passing, sorted(hit))
