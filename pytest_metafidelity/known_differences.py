"""Known differences: places where a converter is knowingly not faithful.

Each :class:`KnownDifference` is either *by design* (``link`` is
:data:`BY_DESIGN` and ``reason`` says why) or an *upstream bug* (``link`` is
the upstream issue or pull request reporting it, or :data:`UNFILED` while
there is none -- :mod:`pytest_metafidelity.upstream` drafts the report;
``reason`` describes it; ``related`` lists upstream threads on the same
code), and applies only to the torch versions in ``[since, until)`` and to
the converters it names.

How :func:`~pytest_metafidelity.faithful.check_faithful` uses the registry:

* A mismatch is *explained* by an entry when the entry is active (torch
  version, converter), names the mismatch's check, its ``attribute``
  pattern matches the mismatch's attribute (``re.fullmatch``), and its
  ``applies`` predicate holds for the case (the real tensor at the
  mismatch's path, the converter, the whole family).  A converter whose
  every mismatch is explained gets the status ``known-difference`` and its
  reason lists the entry ids.
* An entry for the ``conversion`` check (the converter raised) also names
  what it raises: ``raises``, a regular expression searched for in the
  mismatch's ``fake`` side (``"TypeName: message"``); a conversion that
  raised something else is not explained by it.
* An active entry whose predicate holds for some tensor of the family (and
  whose check ran) *expects* a mismatch.  If none of the mismatches is
  explained by it, the difference no longer occurs -- perhaps fixed upstream
  -- and the outcome is ``unexpectedly-passing`` (listing the entry ids), so
  the fix is noticed.  Predicates must therefore be exact: they say when the
  difference occurs, not merely when it might.  The family's tensors are
  the tensors converted, what they reach (``_base``, a leaf's ``.grad``,
  subclass inner tensors) and, when the ``wrappers`` check ran, the tensors
  inside functorch wrappers (at ``….unwrapped``).  The ``conversion`` check runs on every conversion: an
  entry expecting the converter to raise is unexpectedly passing when the
  conversion succeeds; when it raised something another entry explains,
  entries expecting a different error are not judged (the first error
  stops the conversion).
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
# An upstream bug with no upstream report yet: ``python -m
# pytest_metafidelity.upstream ID`` drafts one from the entry.
UNFILED = "not yet reported upstream (draft: python -m pytest_metafidelity.upstream)"


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
    link: str  # BY_DESIGN, UNFILED, or the upstream issue / pull request reporting it
    converters: tuple[str, ...] | None = None  # None: every converter
    since: str | None = None  # first torch version with the difference
    until: str | None = None  # first torch version without it (exclusive)
    reproducer: str = ""  # minimal runnable Python showing the difference
    # check "conversion": regular expression the raised "Type: message" must
    # contain (re.search); None: any error
    raises: str | None = None
    # Upstream threads on the same code that do not report this difference
    # (the change that introduced it, a neighbouring bug, a candidate fix).
    related: tuple[str, ...] = ()

    @property
    def unfiled(self) -> bool:
        return self.link == UNFILED

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
            and (mismatch.check != "conversion" or self.raises is None
                 or re.search(self.raises, str(mismatch.fake)) is not None)
            and _holds(self.applies, case)
        )

    def describe(self) -> str:
        where = ("by design" if self.by_design
                 else "upstream bug, not yet reported upstream" if self.unfiled
                 else f"upstream bug: {self.link}")
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
    storage it has not converted yet -- a non-view with a storage offset,
    the first tensor converted on its storage (in MetaConverter's visiting
    order), its storage not empty: meta_storage then clones the storage's
    data for the carried real tensor.  (A later tensor on a converted
    storage reuses it; a view is made from its base.)"""
    from .checks._util import is_view

    converted: set[Any] = set()
    for u in visiting_order(case.conversion):
        if _layout(u) != "strided" or type(u).__name__ == "FakeTensor":
            continue
        try:
            key = _storage(u)
        except Exception:
            continue
        if (_is_functional_tensor_wrapper(u) and not is_view(u) and key not in converted
                and u.storage_offset() != 0 and u.untyped_storage().nbytes() != 0):
            return True  # (cloning a zero-byte storage copies nothing: no error)
        converted.add(key)
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
            if type(t) is not torch.Tensor or storage_too_small(t) or _is_wrapper(t):
                continue  # (torch copies what is inside a wrapper, not the wrapper)
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


def _is_wrapper(t: Any) -> bool:
    """A C++ functional tensor or a functorch wrapper: MetaConverter converts
    the tensor inside it and wraps the result."""
    import torch

    from .checks._util import functorch_unwrapped, safe

    return (functorch_unwrapped(t) is not None
            or bool(safe(lambda: torch._is_functional_tensor(t), False)))


def _functorch_innermost(case: Case) -> Any:
    """The plain tensor at the bottom of the functorch wrappers at
    ``case.path``: ``case.tensor`` itself when it was reached inside a
    functorch wrapper (a ``….unwrapped`` path), the innermost unwrapped
    tensor when ``case.tensor`` is a functorch wrapper; else None."""
    from .checks._util import functorch_unwrapped

    t = case.tensor
    if t is None:
        return None
    inside = ".unwrapped" in case.path
    for _ in range(16):
        u = functorch_unwrapped(t)
        if u is None:
            break
        t, inside = u, True
    return t if inside else None


def functorch_inner_requires_grad(case: Case) -> bool:
    """The tensor inside functorch wrappers requires grad: MetaConverter's
    _to_fake_tensor rebuilds it with empty_strided, without requires_grad
    (and so without its autograd history)."""
    from .checks._util import functorch_unwrapped

    t = case.tensor
    return (t is not None and ".unwrapped" in case.path and functorch_unwrapped(t) is None
            and bool(t.requires_grad))


def functorch_inner_storage_offset(case: Case) -> bool:
    """The tensor inside functorch wrappers has a storage offset, which the
    empty_strided rebuild drops (the wrappers report the inner offset)."""
    t = _functorch_innermost(case)
    return t is not None and _strided(t) and t.storage_offset() != 0


def functorch_inner_storage_nbytes(case: Case) -> bool:
    """The storage of the tensor inside functorch wrappers is not the size
    empty_strided(size, stride) allocates: what the tensor reaches from
    offset 0."""
    from .checks._util import functorch_unwrapped

    t = case.tensor
    if t is None or ".unwrapped" not in case.path or functorch_unwrapped(t) is not None:
        return False
    if not _strided(t):
        return False
    allocated = 0 if t.numel() == 0 else reach(t) - t.storage_offset() * t.element_size()
    return t.untyped_storage().nbytes() != allocated


def functorch_inner_view(case: Case) -> bool:
    """A tensor inside a functorch wrapper (a wrapper of an inner level, or
    the plain tensor) is a view: _to_fake_tensor recurses through the
    levels without meta_tensor's view handling, so nothing it rebuilds is a
    view."""
    from .checks._util import is_view

    t = case.tensor
    return t is not None and ".unwrapped" in case.path and is_view(t)


def any_grad_tracking_non_leaf(case: Case) -> bool:
    """A GradTrackingTensor (not a view: those are refused) that requires
    grad and is not a leaf, among the tensors MetaConverter.meta_tensor
    converts (the tensors, their bases and grads)."""
    import torch

    from .checks._util import is_view, safe

    fns = getattr(torch._C, "_functorch", None)
    if fns is None:
        return False
    return any(
        safe(lambda: bool(fns.is_gradtrackingtensor(t)), False) and t.requires_grad
        and not t.is_leaf and not is_view(t)
        for t in case.family
    )


def _memo(case: Case, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per conversion and key (predicates run for every
    tensor of the family)."""
    cache = getattr(case.conversion, "_known_difference_memo", None)
    if cache is None:
        cache = {}
        try:
            case.conversion._known_difference_memo = cache
        except Exception:
            return compute()
    if key not in cache:
        cache[key] = compute()
    return cache[key]


class _FoundSymbol(Exception):
    pass


def _first_fake_replays_symbol(t: Any) -> bool:
    """Convert the subclass view ``t`` as the refake converters' first step
    does (``fake-dynamic``, the dispatch cache emptied first); True when the
    fake's own view function carries a SymInt that is not specialized to 0
    or 1 (found while visiting its arguments, before any op runs)."""
    import torch

    from .checks._util import hint
    from .converters import DynamicFakeConverter, clear_dispatch_cache

    def visit(s: Any) -> Any:
        if isinstance(s, torch.SymInt) and hint(s) not in (0, 1):
            raise _FoundSymbol
        return s

    clear_dispatch_cache()
    first = DynamicFakeConverter()
    try:
        fake = first._convert(t)
        mode = getattr(fake, "fake_mode", None) or first.mode
        cached, mode.cache_enabled = mode.cache_enabled, False
        try:
            fake._view_func_unsafe(fake._base, visit, lambda x: x)
        except _FoundSymbol:
            return True
        finally:
            mode.cache_enabled = cached
        return False
    finally:
        first.close()


def subclass_view_replays_symbol(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose fake (made with a
    ShapeEnv, every dimension dynamic) has a view function carrying SymInts
    -- the symbols view replay made for its size arguments, or its own
    symbolic sizes where the view replays as as_strided -- other than
    ones specialized to 0 or 1: converting that fake again hands them to
    ShapeEnv.create_symbol."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from .checks._util import is_view, safe

    return any(
        is_traceable_wrapper_subclass(t) and is_view(t) and t._base is not None
        and _memo(case, ("refake-symint", id(t)),
                  lambda: safe(lambda: _first_fake_replays_symbol(t), False))
        for t in case.family
    )


def _python_dispatcher_replay_differs(t: Any) -> bool:
    """Replaying the view ``t`` on a meta conversion of its base under the
    Python dispatcher (as MetaConverter's view_from_base does for
    subclass views) gives other sizes, strides or storage offset than
    ``t`` has."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.meta_utils import MetaConverter

    base = MetaConverter()(t._base)
    with enable_python_dispatcher():
        r = t._view_func_unsafe(base, lambda s: s, lambda x: x)
    return ((tuple(r.shape), tuple(r.stride()), r.storage_offset())
            != (tuple(t.shape), tuple(t.stride()), t.storage_offset()))


def subclass_view_replay_mismatch(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose replay under the
    Python dispatcher does not reproduce its sizes, strides and storage
    offset -- e.g. an empty diagonal() with a non-zero offset: torch._refs
    computes the storage offset the offset would give (ATen leaves an empty
    diagonal at the input's offset)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from .checks._util import is_view, safe

    return any(
        is_traceable_wrapper_subclass(t) and is_view(t) and t._base is not None
        and _memo(case, ("replay-refs", id(t)),
                  lambda: safe(lambda: _python_dispatcher_replay_differs(t), False))
        for t in case.family
    )


# The checks the dispatch-cache experiment runs (memo and purity convert
# again or compare snapshots: not what a view replay changes).
_CACHE_AB_CHECKS = ("metadata", "oracle", "aliasing", "storage", "autograd", "wrappers")


def _mismatch_signature(case: Case, *, cache: bool) -> frozenset:
    """Convert the case's tensors again, as its converter did (a fresh
    converter, the same order), with FakeTensorMode's dispatch cache on or
    off; the (check, path, attribute[, error]) of what the checks find."""
    import torch._dynamo.config as dynamo_config

    from .checks import Conversion, run_checks
    from .converters import make_converter

    conversion = case.conversion
    names, real = tuple(conversion.names), tuple(conversion.real)
    order = list(conversion.order) if conversion.order is not None else list(range(len(real)))
    with dynamo_config.patch(fake_tensor_cache_enabled=cache):
        converter = make_converter(case.converter)
        try:
            fakes: list[Any] = [None] * len(real)
            try:
                for i in order:
                    fakes[i] = converter.convert(real[i])
            except Exception as e:
                return frozenset({("conversion", ", ".join(names), "raised",
                                   f"{type(e).__name__}: {e}")})
            found = run_checks(Conversion(names, real, tuple(fakes), converter,
                                          order=tuple(order)), list(_CACHE_AB_CHECKS))
            return frozenset((m.check, m.path, m.attribute, "") for m in found)
        finally:
            converter.close()


def dispatch_cache_zero_element_view(case: Case) -> bool:
    """The family has a zero-element view of a traceable wrapper subclass
    (MetaConverter replays such views op by op -- a dense view is rebuilt
    with as_strided, which the cache handles -- and a view of a
    zero-element tensor is computed through prims.as_strided), and
    converting the tensors again with FakeTensorMode's dispatch cache on
    finds a difference at ``case.path`` that converting them with the cache
    off does not: the difference comes from the cache (each conversion
    starts with an empty cache, so both runs are deterministic)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from .checks._util import is_view, safe

    if not any(is_traceable_wrapper_subclass(t) and is_view(t)
               and safe(lambda: t.numel() == 0, False) for t in case.family):
        return False

    def differs() -> frozenset:
        on = _mismatch_signature(case, cache=True)
        off = _mismatch_signature(case, cache=False)
        return frozenset(path for _, path, _, _ in on - off)

    paths = _memo(case, "dispatch-cache", lambda: safe(differs, frozenset()))
    return case.path in paths


def functional_dynamic_storage_from_inner(case: Case) -> bool:
    """A C++ functional tensor whose converted inner tensor has symbolic
    sizes or strides: its functional storage then takes the size of the
    inner tensor's storage (0 for a zero-byte one, the real storage's size
    for one installed with set_ at an offset) -- where the real wrapper's is
    computed from its sizes, strides and offset.  The difference shows
    where that size is static."""
    import torch

    from .checks._util import has_symbolic, is_symbolic, resolve, safe

    t = case.tensor
    if t is None or not safe(lambda: bool(torch._is_functional_tensor(t)), False):
        return False
    fake = resolve(case.conversion, case.path, fake=True)
    if fake is None or not safe(lambda: bool(torch._is_functional_tensor(fake)), False):
        return False
    inner = torch._from_functional_tensor(fake)
    if not has_symbolic(inner):
        return False
    n = inner.untyped_storage().nbytes()
    return not is_symbolic(n) and n != t.untyped_storage().nbytes()


def _dynamic_fake_storage(u: Any) -> tuple[bool, Any]:
    """(symbolic sizes/strides/offset?, storage nbytes) of ``u`` converted
    as ``fake-dynamic`` converts it."""
    from .checks._util import has_symbolic, hint
    from .converters import DynamicFakeConverter

    conv = DynamicFakeConverter()
    try:
        f = conv._convert(u)
        return has_symbolic(f), hint(f.untyped_storage().nbytes())
    finally:
        conv.close()


def functional_zero_byte_resize(case: Case) -> bool:
    """A C++ functional tensor with no elements (its functional storage has
    zero bytes) whose wrapped tensor converts, with a ShapeEnv, to one with
    symbolic metadata and a storage with bytes (a tensor installed with set_
    at an offset): the converted wrapper's storage takes the wrapped
    storage's size (dynamic-functional-storage-size), and meta_tensor's
    closing resize_(0) of a zero-byte storage fails on the functional
    storage."""
    import torch

    from .checks._util import safe

    def raises(t: Any) -> bool:
        if not safe(lambda: bool(torch._is_functional_tensor(t)), False) or t.numel() != 0:
            return False
        if t.untyped_storage().nbytes() != 0:
            return False
        symbolic, nbytes = _dynamic_fake_storage(torch._from_functional_tensor(t))
        return symbolic and nbytes != 0

    return any(_memo(case, ("functional-resize", id(t)), lambda: safe(lambda: raises(t), False))
               for t in case.family)


def functional_value_replaced(case: Case) -> bool:
    """A C++ functional tensor whose wrapped value the conversion replaced:
    it had updates pending (a view of it was mutated), which the describer's
    torch._sync applied -- regenerating the value from the updated base."""
    import torch

    from .checks._util import safe
    from .checks.purity import FUNCTIONAL_VALUE

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


def _describe_with_data_fails(t: Any) -> bool:
    from torch._subclasses.meta_utils import MetaTensorDescriber

    desc = MetaTensorDescriber(copy_data=True).describe_tensor(t)
    try:
        str(desc)
    except Exception:
        return True
    return False


def real_functorch_view_refusal_fails(case: Case) -> bool:
    """A functorch-wrapped view -- MetaConverter refuses it with Dynamo's
    unimplemented(context=str(t)) -- whose description, with the real data
    that real-tensor propagation puts in it, cannot be printed (the values
    of a sub-byte or bits dtype cannot be read)."""
    from .checks._util import functorch_unwrapped, is_view, safe

    return any(
        functorch_unwrapped(t) is not None and is_view(t)
        and _memo(case, ("refusal-str", id(t)),
                  lambda: safe(lambda: _describe_with_data_fails(t), False))
        for t in case.family
    )


# -- the registry ---------------------------------------------------------------

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
            "elements), so a set_ alias converted later reads uninitialized bytes where the "
            "first one does not reach (order-dependent)"
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
    ran = set(checks_run)
    # The tensors inside functorch wrappers are checked by ``wrappers`` only.
    family_nodes = (walk_real(conversion.names, conversion.real, unwrap="wrappers" in ran)
                    if conversion is not None else [])
    family = tuple(r for _, r in walk_real(conversion.names, conversion.real)) if conversion \
        is not None else ()

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

    crashed = {m.check for m in mismatches if m.attribute == "check raised"}
    # A conversion that raised shows one error: entries expecting another
    # cannot be judged.
    conversion_raised = any(m.check == "conversion" for m in mismatches)
    passing = []
    for e in entries:
        if e.id in hit or not set(e.checks) & ran or set(e.checks) & crashed:
            continue
        if conversion_raised and "conversion" in e.checks:
            continue
        if any(_holds(e.applies, case(p, r)) for p, r in family_nodes):
            passing.append(e.id)
    return Triage(unexplained, explained, passing, sorted(hit))
