"""Predicates: exactly when each known difference occurs.

An entry's ``applies`` predicate says when its difference occurs, not
merely when it might (see the package docstring): the project's property
tests fail on a difference no entry explains and on an entry that expected a
difference that did not occur.

The triage asks every active entry's predicate on every case, passing ones
included (to notice an entry that did not occur).  Two markers make that
cheap without changing an answer: ``@family_wide`` (the predicate reads
only the family, so it is asked once per case rather than per tensor) and
``@needs(fact)`` (it can only hold when some tensor of the case has the
fact -- sparse, nested, subclass, functorch, functional, FunctionalTensor
-- so cases without it skip it); the project's tests hold both to what
they claim.  Work a
predicate repeats for each tensor of a case is kept per conversion with
:func:`_memo`.
"""

from __future__ import annotations

from typing import Any, Callable

from . import Case

STATIC_FAKE_CONVERTERS = ("fake", "fake-real")
FAKE_CONVERTERS = ("fake", "fake-dynamic", "fake-real", "fake-real-dynamic", "refake",
                   "refake-fresh")
ALL_BUT_FUNCTIONAL = ("meta", *FAKE_CONVERTERS)
REAL_CONVERTERS = ("fake-real", "fake-real-dynamic")
SUB_BYTE_DTYPES = tuple(f"{p}int{i}" for p in ("", "u") for i in range(1, 8))


def family_wide(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
    """Marks a predicate that reads only the case's family, conversion and
    converter -- never ``case.tensor`` or ``case.path`` -- so it holds for
    every tensor of a case or for none: the triage asks it once per case."""
    predicate.family_wide = True  # type: ignore[attr-defined]
    return predicate


def _is_sparse(t: Any) -> bool:
    return _layout(t).startswith("sparse")


def _is_nested(t: Any) -> bool:
    return bool(getattr(t, "is_nested", False))


def _is_subclass(t: Any) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(t)


def _is_functorch_wrapped(t: Any) -> bool:
    from ..checks._util import functorch_unwrapped

    return functorch_unwrapped(t) is not None


def _is_cpp_functional(t: Any) -> bool:
    import torch

    try:
        return bool(torch._is_functional_tensor(t))
    except Exception:
        return False


# Facts about a case's tensors (the family and the tensors the triage
# visits), cheap to read: a predicate marked ``@needs(fact)`` can only hold
# when some tensor of the case has the fact, and the triage skips it on the
# cases where none has.
FACTS: dict[str, Callable[[Any], bool]] = {
    "sparse": _is_sparse,
    "nested": _is_nested,
    "subclass": _is_subclass,
    "functorch": _is_functorch_wrapped,
    "functional": _is_cpp_functional,
    "FunctionalTensor": lambda t: _is_functional_tensor_wrapper(t),
}


def needs(fact: str) -> Callable[[Callable[[Case], bool]], Callable[[Case], bool]]:
    """Marks a predicate that holds only when some tensor of the case has
    ``fact`` (see FACTS)."""
    if fact not in FACTS:
        raise ValueError(f"unknown fact {fact!r}; known: {', '.join(FACTS)}")

    def mark(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
        predicate.needs = fact  # type: ignore[attr-defined]
        return predicate

    return mark


def _layout(t: Any) -> str:
    return str(getattr(t, "layout", "")).removeprefix("torch.")


def _dtype(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _strided(t: Any) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return (t is not None and _layout(t) == "strided"
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


def footprint(t: Any) -> Any:
    """The storage bytes a strided tensor's elements occupy (a sorted 1-D
    tensor of byte offsets)."""
    import torch

    offsets = torch.tensor([t.storage_offset()], dtype=torch.int64)
    for n, st in zip(t.shape, t.stride()):
        offsets = (offsets.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st).flatten()
    size = t.element_size()
    return torch.unique((offsets.unsqueeze(-1) * size + torch.arange(size)).flatten())


def reads_outside(t: Any, owner: Any) -> bool:
    """``t`` reads storage bytes that none of ``owner``'s elements occupy."""
    import torch

    return not bool(torch.isin(footprint(t), footprint(owner)).all())


def _functional_value(t: Any) -> Any:
    """What a C++ functional tensor wraps, else None."""
    import torch

    try:
        return torch._from_functional_tensor(t) if torch._is_functional_tensor(t) else None
    except Exception:
        return None


def visiting_order(conversion: Any) -> tuple[Any, ...]:
    """The real tensors in the order MetaConverter creates their converted
    counterparts: per tensor converted (in the conversion's order), a view's
    ``_base`` first (with the base's grad), the value a C++ functional tensor
    wraps (converted by the same MetaConverter, sharing its storage memo),
    then the tensor, then its grad.  Computed once per conversion (the
    predicates of every tensor of a case ask for it)."""
    cached = getattr(conversion, "_visiting_order", None)
    if cached is None:
        cached = tuple(_visiting_order(conversion))
        try:
            conversion._visiting_order = cached
        except AttributeError:  # not a checks.Conversion
            pass
    return cached


def _visiting_order(conversion: Any) -> list[Any]:
    from ..checks._util import base_of, grad_of, inner_tensors

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
        visit(_functional_value(t), depth + 1)
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
    from ..checks._util import is_view

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
    from ..checks._util import is_symbolic, resolve

    fake = resolve(case.conversion, case.path, fake=True)
    if fake is None:
        return False
    return not is_symbolic(fake.untyped_storage().nbytes())


def storage_sized_to_tensors(case: Case) -> bool:
    t = case.tensor
    if not _strided(t) or not _static_fake_nbytes(case):
        return False
    grow = case.converter != "meta"
    # The same prediction for every tensor on one storage: made once.
    predicted = _memo(case, ("converted storage nbytes", _storage(t), grow),
                      lambda: converted_storage_nbytes(case.conversion, t, grow_on_views=grow))
    return predicted is not None and predicted != t.untyped_storage().nbytes()


def functional_storage_sized_to_tensors(case: Case) -> bool:
    """The functional round trip gives each wrapped root (a non-view tensor,
    or a view's base) a storage sized to the tensors on it: its reach, grown
    by views of it reaching further -- unless the root reaches nothing: the
    zero-byte functional storage stays zero bytes."""
    from ..checks._util import base_of, is_view

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
    from ..checks._util import base_of, is_view

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
    from ..checks._util import base_of, is_view
    from ..checks.aliasing import version_partition

    t = case.tensor
    if t is None or len(case.family) < 2:
        return False
    family = list(case.family)
    if not any(u is t for u in family):
        return False
    # The same family for every tensor of the case: partitioned once.
    labels = _memo(case, ("version-partition", tuple(map(id, family))),
                   lambda: version_partition(family))
    index = next(i for i, u in enumerate(family) if u is t)
    if labels[index] is None:
        return False
    root = base_of(t) if is_view(t) else t
    return any(
        labels[j] == labels[index] and (base_of(u) if is_view(u) else u) is not root
        for j, u in enumerate(family) if j != index
    )


@needs("sparse")
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
    from ..checks._util import is_view

    t = case.tensor
    return t is not None and bool(t.requires_grad and t.is_leaf) and not is_view(t)


def retains_grad(case: Case) -> bool:
    t = case.tensor
    return t is not None and not t.is_leaf and bool(t.retains_grad)


def custom_grad_dtype(case: Case) -> bool:
    t = case.tensor
    return (t is not None and t.requires_grad and t.is_leaf
            and getattr(t, "grad_dtype", t.dtype) != t.dtype)


@needs("sparse")
def is_sparse_with_elements(case: Case) -> bool:
    t = case.tensor
    return t is not None and _layout(t).startswith("sparse") and int(t._nnz()) > 0


def is_coo_with_elements(case: Case) -> bool:
    t = case.tensor
    return t is not None and _layout(t) == "sparse_coo" and int(t._nnz()) > 0


def carried_values_not_copied(case: Case) -> bool:
    """The carried tensor's values differ where MetaConverter does not copy
    them: (a) the tensor (or its view base) is not exactly a torch.Tensor (an
    nn.Parameter, a FunctionalTensor, ...): _safe_copy skips it; (b) the first
    non-view tensor converted on the storage has offset 0, so the carried
    storage holds only that tensor's elements, and the tensor is another
    non-view tensor on it or reads bytes those elements do not occupy (an
    as_strided view of it)."""
    import torch

    from ..checks._util import base_of, is_view, resolve
    from ..checks.oracle import carried_values_differ

    t = case.tensor
    if t is None or not _strided(t) or t.numel() == 0:
        return False
    root = base_of(t) if is_view(t) else t
    not_copied = type(root) is not torch.Tensor
    if not not_copied:
        key = _storage(t)
        first = next((u for u in visiting_order(case.conversion)
                      if _strided(u) and not is_view(u) and _storage(u) == key), None)
        not_copied = first is not None and first.storage_offset() == 0 and (
            first is not root or reads_outside(t, first))
    if not not_copied:
        return False
    carried = resolve(case.conversion, case.path.removesuffix(".real_tensor") + ".real_tensor",
                      fake=True)
    return carried is not None and carried_values_differ(t, carried)


@family_wide
@needs("sparse")
def any_compressed_non_leaf(case: Case) -> bool:
    return any(_layout(t) in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")
               and t.requires_grad and not t.is_leaf for t in case.family)


@needs("sparse")
def coo_with_dynamic_dense_dims(case: Case) -> bool:
    """A COO tensor with a dense dimension of size >= 2 (dynamic: sizes 0
    and 1 are specialized)."""
    t = case.tensor
    return (t is not None and _layout(t) == "sparse_coo"
            and any(n >= 2 for n in t.shape[t.sparse_dim():]))


@family_wide
@needs("sparse")
def any_dynamic_coo_non_leaf(case: Case) -> bool:
    return any(_layout(t) == "sparse_coo" and t.requires_grad and not t.is_leaf
               and any(n >= 2 for n in t.shape) for t in case.family)


@family_wide
def any_functional_tensor_set_storage(case: Case) -> bool:
    """A (Python) FunctionalTensor that MetaConverter installs with set_ on a
    storage it has not converted yet -- a non-view with a storage offset,
    the first tensor converted on its storage (in MetaConverter's visiting
    order), its storage not empty: meta_storage then clones the storage's
    data for the carried real tensor.  (A later tensor on a converted
    storage reuses it; a view is made from its base.)"""
    from ..checks._util import is_view

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
    from ..checks._util import resolve

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


@needs("sparse")
def sparse_metadata_from_elements(case: Case) -> bool:
    """Queries whose result depends on nnz: _indices() of COO, values() of
    BSR/BSC (the block size)."""
    t = case.tensor
    if t is None or not _layout(t).startswith("sparse") or int(t._nnz()) == 0:
        return False
    # A meta COO tensor's _indices() do not disagree (no elements are read).
    layouts = ("sparse_bsr", "sparse_bsc") if t.device.type == "meta" else (
        "sparse_coo", "sparse_bsr", "sparse_bsc")
    return _layout(t) in layouts


@family_wide
def any_storage_too_small(case: Case) -> bool:
    """Our converters refuse to copy the values of a tensor whose storage is
    smaller than it (torch would segfault): ``crashing_copy`` held for a tensor
    when its turn to be converted came.  A conversion that succeeded passed
    that test for every tensor; reading the tensors again afterwards could
    disagree, because converting syncs C++ functional tensors, which can
    replace the value they wrap with one that reaches further."""
    from ..converters import crashing_copy

    if case.conversion.before is not None:  # the conversion succeeded
        return False
    return any(crashing_copy(t) for t in case.conversion.real)


@family_wide
def any_copy_fails(case: Case) -> bool:
    """MetaConverter's copy of a real tensor's values would raise: copy_ into
    empty_strided(size, stride) for the non-view tensors whose type is
    exactly torch.Tensor (and the tensors inside C++ functional and functorch
    wrappers); clone() of sparse tensors.  Decided by doing the same copy."""
    import torch

    from ..checks._util import is_view
    from ..converters import _family, storage_too_small

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


@family_wide
def reaches_past_first_tensor(case: Case) -> bool:
    """A tensor reaches past the storage of the first non-view tensor on its
    storage, which was allocated at offset 0 with that tensor's reach: the
    carried real tensors' storage is too small for it."""
    from ..checks._util import is_view

    conversion = case.conversion
    first: dict[Any, Any] = {}
    for u in visiting_order(conversion):
        # Meta tensors carry no real storage to be too small.
        if not _strided(u) or u.device.type == "meta" or u.untyped_storage().nbytes() == 0:
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


@family_wide
@needs("nested")
def any_strided_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and not is_traceable_wrapper_subclass(t)
               for t in case.family)


@family_wide
@needs("subclass")
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


@needs("FunctionalTensor")
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


@family_wide
def any_grad_of_another_dtype(case: Case) -> bool:
    from ..checks._util import grad_of

    for t in case.family:
        g = grad_of(t)
        if g is not None and g.dtype != t.dtype:
            return True
    return False


@family_wide
@needs("functional")
def any_functional_view(case: Case) -> bool:
    import torch

    is_functional = getattr(torch, "_is_functional_tensor", None)
    return is_functional is not None and any(
        is_functional(t) and t._is_view() and t.device.type not in ("xla", "lazy")
        for t in case.family
    )


@family_wide
@needs("subclass")
def any_jagged_nested(case: Case) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(getattr(t, "is_nested", False) and is_traceable_wrapper_subclass(t)
               for t in case.family)


@family_wide
@needs("sparse")
def any_compressed_requiring_grad(case: Case) -> bool:
    from ..converters import _compressed_requiring_grad

    return any(_compressed_requiring_grad(t) for t in case.family)


@family_wide
def zero_byte_scalar_item(case: Case) -> bool:
    """from_tensor with a ShapeEnv and a source reads ``item()`` of a 0-dim
    CPU int64/int32/int16/int8/float64 tensor to make a symbol for it: with
    a zero-byte storage that read raises."""
    from ..converters import storage_too_small

    return any(
        _strided(t) and t.dim() == 0 and t.device.type == "cpu" and type(t).__name__ == "Tensor"
        and _dtype(t) in ("int64", "int32", "int16", "int8", "float64") and storage_too_small(t)
        for t in case.conversion.real
    )


def _is_wrapper(t: Any) -> bool:
    """A C++ functional tensor or a functorch wrapper: MetaConverter converts
    the tensor inside it and wraps the result."""
    import torch

    from ..checks._util import functorch_unwrapped, safe

    return (functorch_unwrapped(t) is not None
            or bool(safe(lambda: torch._is_functional_tensor(t), False)))


def _functorch_innermost(case: Case) -> Any:
    """The plain tensor at the bottom of the functorch wrappers at
    ``case.path``: ``case.tensor`` itself when it was reached inside a
    functorch wrapper (a ``….unwrapped`` path), the innermost unwrapped
    tensor when ``case.tensor`` is a functorch wrapper; else None."""
    from ..checks._util import functorch_unwrapped

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


@needs("functorch")
def functorch_inner_requires_grad(case: Case) -> bool:
    """The tensor inside functorch wrappers requires grad: MetaConverter's
    _to_fake_tensor rebuilds it with empty_strided, without requires_grad
    (and so without its autograd history)."""
    from ..checks._util import functorch_unwrapped

    t = case.tensor
    return (t is not None and ".unwrapped" in case.path and functorch_unwrapped(t) is None
            and bool(t.requires_grad))


@needs("functorch")
def functorch_inner_storage_offset(case: Case) -> bool:
    """The tensor inside functorch wrappers has a storage offset, which the
    empty_strided rebuild drops (the wrappers report the inner offset)."""
    t = _functorch_innermost(case)
    return t is not None and _strided(t) and t.storage_offset() != 0


@needs("functorch")
def functorch_inner_storage_nbytes(case: Case) -> bool:
    """The storage of the tensor inside functorch wrappers is not the size
    empty_strided(size, stride) allocates: what the tensor reaches from
    offset 0."""
    from ..checks._util import functorch_unwrapped

    t = case.tensor
    if t is None or ".unwrapped" not in case.path or functorch_unwrapped(t) is not None:
        return False
    if not _strided(t):
        return False
    allocated = 0 if t.numel() == 0 else reach(t) - t.storage_offset() * t.element_size()
    return t.untyped_storage().nbytes() != allocated


@needs("functorch")
def functorch_inner_view(case: Case) -> bool:
    """A tensor inside a functorch wrapper (a wrapper of an inner level, or
    the plain tensor) is a view: _to_fake_tensor recurses through the
    levels without meta_tensor's view handling, so nothing it rebuilds is a
    view."""
    from ..checks._util import is_view

    t = case.tensor
    return t is not None and ".unwrapped" in case.path and is_view(t)


@family_wide
@needs("functorch")
def any_grad_tracking_non_leaf(case: Case) -> bool:
    """A GradTrackingTensor (not a view: those are refused) that requires
    grad and is not a leaf, among the tensors MetaConverter.meta_tensor
    converts (the tensors, their bases and grads)."""
    import torch

    from ..checks._util import is_view, safe

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

    from ..checks._util import hint
    from ..converters import DynamicFakeConverter, clear_dispatch_cache

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


@family_wide
@needs("subclass")
def subclass_view_replays_symbol(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose fake (made with a
    ShapeEnv, every dimension dynamic) has a view function carrying SymInts
    -- the symbols view replay made for its size arguments, or its own
    symbolic sizes where the view replays as as_strided -- other than
    ones specialized to 0 or 1: converting that fake again hands them to
    ShapeEnv.create_symbol."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ..checks._util import is_view, safe

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


@family_wide
@needs("subclass")
def subclass_view_replay_mismatch(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose replay under the
    Python dispatcher does not reproduce its sizes, strides and storage
    offset -- e.g. an empty diagonal() with a non-zero offset: torch._refs
    computes the storage offset the offset would give (ATen leaves an empty
    diagonal at the input's offset)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ..checks._util import is_view, safe

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

    from ..checks import Conversion, run_checks
    from ..converters import make_converter

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


@needs("subclass")
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

    from ..checks._util import is_view, safe

    if not _memo(case, "zero-element-subclass-view", lambda: any(
            is_traceable_wrapper_subclass(t) and is_view(t)
            and safe(lambda: t.numel() == 0, False) for t in case.family)):
        return False

    def differs() -> frozenset:
        on = _mismatch_signature(case, cache=True)
        off = _mismatch_signature(case, cache=False)
        return frozenset(path for _, path, _, _ in on - off)

    paths = _memo(case, "dispatch-cache", lambda: safe(differs, frozenset()))
    return case.path in paths


@needs("functional")
def functional_dynamic_storage_from_inner(case: Case) -> bool:
    """A C++ functional tensor whose converted inner tensor has symbolic
    sizes or strides: its functional storage then takes the size of the
    inner tensor's storage (0 for a zero-byte one, the real storage's size
    for one installed with set_ at an offset) -- where the real wrapper's is
    computed from its sizes, strides and offset.  The difference shows
    where that size is static."""
    import torch

    from ..checks._util import has_symbolic, is_symbolic, resolve, safe

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
    from ..checks._util import has_symbolic, hint
    from ..converters import DynamicFakeConverter

    conv = DynamicFakeConverter()
    try:
        f = conv._convert(u)
        return has_symbolic(f), hint(f.untyped_storage().nbytes())
    finally:
        conv.close()


@family_wide
@needs("functional")
def functional_zero_byte_resize(case: Case) -> bool:
    """A C++ functional tensor with no elements (its functional storage has
    zero bytes) whose wrapped tensor converts, with a ShapeEnv, to one with
    symbolic metadata and a storage with bytes (a tensor installed with set_
    at an offset): the converted wrapper's storage takes the wrapped
    storage's size (dynamic-functional-storage-size), and meta_tensor's
    closing resize_(0) of a zero-byte storage fails on the functional
    storage."""
    import torch

    from ..checks._util import safe

    def raises(t: Any) -> bool:
        if not safe(lambda: bool(torch._is_functional_tensor(t)), False) or t.numel() != 0:
            return False
        if t.untyped_storage().nbytes() != 0:
            return False
        symbolic, nbytes = _dynamic_fake_storage(torch._from_functional_tensor(t))
        return symbolic and nbytes != 0

    return any(_memo(case, ("functional-resize", id(t)), lambda: safe(lambda: raises(t), False))
               for t in case.family)


@needs("functional")
def functional_value_replaced(case: Case) -> bool:
    """A C++ functional tensor whose wrapped value the conversion replaced:
    it had updates pending (a view of it was mutated), which the describer's
    torch._sync applied -- regenerating the value from the updated base."""
    import torch

    from ..checks._util import safe
    from ..checks.purity import FUNCTIONAL_VALUE

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


@family_wide
@needs("functorch")
def real_functorch_view_refusal_fails(case: Case) -> bool:
    """A functorch-wrapped view -- MetaConverter refuses it with Dynamo's
    unimplemented(context=str(t)) -- whose description, with the real data
    that real-tensor propagation puts in it, cannot be printed (the values
    of a sub-byte or bits dtype cannot be read)."""
    from ..checks._util import functorch_unwrapped, is_view, safe

    return any(
        functorch_unwrapped(t) is not None and is_view(t)
        and _memo(case, ("refusal-str", id(t)),
                  lambda: safe(lambda: _describe_with_data_fails(t), False))
        for t in case.family
    )


# -- the behaviour check's conversion-level differences ----------------------------------------


def behaviour_grad_lost_conj_bit(case: Case) -> bool:
    """The ``behaviour`` check recorded, at this case's path, a gradient
    (``….grad``) that is a conjugate view on the real side and not on the
    converted side."""
    return case.path.endswith(".grad") and any(
        d[0] == "is_conj()" and d[1] == "True" and d[2] == "False" and d[5] == case.path
        for d in getattr(case.conversion, "behaviour_differences", ()) if len(d) > 5)


def behaviour_storage_bounds_unchecked(case: Case) -> bool:
    """The ``behaviour`` check recorded a step that raised 'out of bounds for
    storage' on the real side and nothing on the converted side."""
    return any(d[0] == "raised" and "out of bounds for storage" in d[1] and d[2] == "nothing"
               for d in getattr(case.conversion, "behaviour_differences", ()))
