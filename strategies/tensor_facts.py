"""Facts about one tensor and what it reaches, read without raising: the
one place every strategy, converter, check, known difference and the
describer asks them.

* the family walk: its view base, its ``.grad``, a traceable wrapper
  subclass's inner tensors and (on request) the tensor inside a functorch
  wrapper (:func:`walk_real`, :func:`base_of`, :func:`grad_of`,
  :func:`inner_tensors`, :func:`functorch_unwrapped`);
* plain strided or not (:func:`plain_strided`), the layout groups
  (:data:`COMPRESSED_LAYOUTS`, :func:`layout_name`);
* storages: identity (:func:`storage_key`), which tensors share a version
  counter (:func:`version_partition`), the bytes a geometry reaches and the
  tensors that reach past their storage's end (:func:`bytes_reached`,
  :func:`storage_too_small`);
* autograd: a view's creation meta (:func:`creation_meta`).

It lives with the strategies, the lowest layer, so that they ask the same
questions as the plugin without importing it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from .torch_errors import safe


def is_view(t: Any) -> bool:
    try:  # not safe(): it is asked for every tensor by several checks
        return bool(t._is_view())
    except Exception:
        return False


def is_wrapper_subclass(t: Any) -> bool:
    """A traceable wrapper subclass (``__tensor_flatten__``: TwoTensor, a
    nested jagged tensor, DTensor-like wrappers)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(t)


def is_zero_tensor(t: Any) -> bool:
    """A zero tensor (``torch._efficientzerotensor``, the ``ZeroTensor``
    key): its storage has a size but holds no data, so eager writes through
    a null pointer wherever that storage is resized or read as another
    tensor's."""
    try:
        return bool(t._is_zerotensor())
    except Exception:  # a subclass or layout without the method
        return False


def in_shared_memory(t: Any) -> bool:
    """Whether ``t``'s storage is in shared memory (``share_memory_()``):
    eager segfaults growing such a storage (``resize_``)."""
    try:
        storage = t.untyped_storage()
    except Exception:  # no storage of its own
        return False
    return storage_is_shared(storage)


def storage_is_shared(storage: Any) -> bool:
    """Whether an untyped storage is in shared memory; False for a storage
    that cannot say (a zero tensor's holds no data)."""
    try:
        return bool(storage.is_shared())
    except Exception:
        return False


def base_of(t: Any) -> Any:
    return t._base if is_view(t) else None


def grad_of(t: Any) -> Any:
    """``t.grad``: a leaf's, or a non-leaf's -- one that retains its grad
    (``retain_grad()`` before a backward), or whose ``.grad`` was set.
    (Reading a non-leaf's ``.grad`` warns where it has none: read without
    that warning.)"""
    try:
        if t.is_leaf or t.retains_grad:  # (no warning to silence)
            return t.grad
        return any_grad(t)
    except Exception:
        return None


def _flattened(t: Any) -> list[tuple[str, Any]]:
    """(attr, value) of each attribute a traceable wrapper subclass's
    ``__tensor_flatten__`` names, else []."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if not is_traceable_wrapper_subclass(t):
        return []
    try:
        attrs, _ = t.__tensor_flatten__()
    except Exception:
        return []
    return [(a, getattr(t, a, None)) for a in attrs]


def inner_tensors(t: Any) -> list[tuple[str, Any]]:
    """(attr, inner tensor) of a traceable wrapper subclass, else []."""
    import torch

    return [(a, v) for a, v in _flattened(t) if isinstance(v, torch.Tensor)]


def opaque_attributes(t: Any) -> list[tuple[str, Any]]:
    """(attr, value) of the attributes a traceable wrapper subclass's
    ``__tensor_flatten__`` names that hold no tensor (opaque values, such as
    an ``Enum`` member), else []."""
    import torch

    return [(a, v) for a, v in _flattened(t) if not isinstance(v, torch.Tensor)]


def is_functorch_wrapped(t: Any) -> bool:
    """Whether ``t`` is a functorch wrapper (BatchedTensor,
    GradTrackingTensor): a ``torch.Tensor`` with no storage of its own."""
    import torch

    fns = getattr(torch._C, "_functorch", None)
    try:  # not safe(): it is asked for every plain tensor by the predicates
        return fns is not None and bool(fns.is_functorch_wrapped_tensor(t))
    except Exception:
        return False


def is_vmap_or_grad_wrapper(t: Any) -> bool:
    """Whether ``t`` is a BatchedTensor or a GradTrackingTensor: a functorch
    wrapper of a vmap or grad level, which MetaConverter rebuilds level by
    level with ``_to_fake_tensor``; not a functional tensor of a
    ``functionalize`` level (also functorch-wrapped), which it converts
    through ``meta_tensor``, keeping what is inside."""
    import torch

    fns = getattr(torch._C, "_functorch", None)
    try:
        return fns is not None and (bool(fns.is_batchedtensor(t))
                                    or bool(fns.is_gradtrackingtensor(t)))
    except Exception:
        return False


# The level MetaConverter reads for a GradTrackingTensor whose grad transform
# has returned (its GRAD_TENSOR_SENTINEL_VALUE).
ESCAPED_GRAD_LEVEL = -2


def is_escaped_grad_wrapper(t: Any) -> bool:
    """Whether ``t`` is a GradTrackingTensor whose level is gone (it escaped
    its ``torch.func.grad``: kept past the function's return), which
    MetaConverter converts to the fake of the tensor inside it, unwrapped."""
    import torch

    fns = getattr(torch._C, "_functorch", None)
    try:
        return (fns is not None and bool(fns.is_gradtrackingtensor(t))
                and fns.maybe_get_level(t) == ESCAPED_GRAD_LEVEL)
    except Exception:
        return False


# What functionalization records of a functional tensor, asked of one through
# ``torch._functionalize_<name>(t)``; the ``wrappers`` check compares them.  The other ``torch._functionalize_*``
# functions act on a tensor, or read what another check compares
# (``pytest_metafidelity.properties.FUNCTIONALIZATION_NOT_READ`` says why); a
# new one is read once it is listed here, and unexplained until then.
FUNCTIONALIZATION_QUERIES = (
    "has_data_mutation", "has_metadata_mutation", "mutation_counter",
    "was_storage_changed", "storage_changed_counter",
    "was_inductor_storage_resized", "inductor_storage_resized_counter",
    "are_all_mutations_hidden_from_autograd", "are_all_mutations_under_no_grad_or_inference_mode",
    "is_multi_output_view", "is_symbolic",
)


def functionalization_attribute(name: str) -> str:
    """How a reading of functionalization's state is reported, as users
    write it: ``torch._functionalize_mutation_counter()``."""
    return f"torch._functionalize_{name}()"


def functorch_unwrapped(t: Any) -> Any:
    """The tensor inside a functorch wrapper, or None."""
    import torch

    if not is_functorch_wrapped(t):
        return None
    return safe(lambda: torch._C._functorch.get_unwrapped(t))


def walk_real(names: Any, tensors: Any, *, unwrap: bool = False) -> list[tuple[str, Any]]:
    """(path, tensor) for the tensors and what they reach (``_base``, a
    leaf's ``.grad``, subclass inner tensors; with ``unwrap``, the tensor
    inside a functorch wrapper, at ``….unwrapped`` as the ``wrappers`` check
    names it), one side only, each tensor once; paths as in
    ``checks._util.related``."""
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()
    for name, t in zip(names, tensors):
        _walk_one(out, seen, name, t, 0, unwrap)
    return out


# A module-level function, not a closure: a recursive closure is a reference
# cycle that would keep the walked tensors alive until the garbage collector
# runs (the ``memo`` check sees converted tensors released).
def _walk_one(out: list, seen: set, path: str, t: Any, depth: int, unwrap: bool) -> None:
    if t is None or id(t) in seen or depth > 8:
        return
    seen.add(id(t))
    out.append((path, t))
    _walk_one(out, seen, f"{path}._base", base_of(t), depth + 1, unwrap)
    _walk_one(out, seen, f"{path}.grad", grad_of(t), depth + 1, unwrap)
    for attr, inner in inner_tensors(t):
        _walk_one(out, seen, f"{path}.{attr}", inner, depth + 1, unwrap)
    if unwrap:
        _walk_one(out, seen, f"{path}.unwrapped", functorch_unwrapped(t), depth + 1, unwrap)


def family_of(t: Any, depth: int = 0) -> Iterator[Any]:
    """``t``, its view base, its ``.grad`` (a non-leaf's too), subclass inner
    tensors and the tensors inside C++ functional and functorch wrappers,
    recursively: every tensor a conversion of ``t`` may touch (a tensor
    reached twice comes twice).  :func:`walk_real` is the walk the checks
    name paths by (the ``.grad`` of :func:`grad_of`; functorch wrappers on request)."""
    yield t
    if depth > 8:
        return
    reached = (base_of(t), any_grad(t), *(inner for _, inner in inner_tensors(t)),
               functional_value(t), functorch_unwrapped(t))
    for u in reached:
        if u is not None:
            yield from family_of(u, depth + 1)


def functional_value(t: Any) -> Any:
    """The tensor a C++ functional tensor wraps (its value), or None.  (A Python
    FunctionalTensor is converted as a plain tensor: MetaConverter does not
    look inside it.)"""
    import torch

    try:
        return torch._from_functional_tensor(t) if torch._is_functional_tensor(t) else None
    except Exception:
        return None


def any_grad(t: Any) -> Any:
    """``t.grad``, a non-leaf's too (without its warning)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf warns
        return t.grad


# -- layouts -----------------------------------------------------------------------------------

# The compressed sparse layouts, by name (``layout_name``).
COMPRESSED_LAYOUTS = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def layout_name(t: Any) -> str:
    """``"strided"``, ``"sparse_coo"``, ... (``torch.`` left off)."""
    return str(getattr(t, "layout", "")).removeprefix("torch.")


def plain_strided(t: Any) -> bool:
    """A strided tensor whose storage is its own: not a traceable wrapper
    subclass, a FakeTensor or a functorch wrapper."""
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if type(t) in (torch.Tensor, torch.nn.Parameter):  # the common case, answered at once
        # (a functorch wrapper is a torch.Tensor too, with no storage to read)
        return t.layout == torch.strided and not is_functorch_wrapped(t)
    return (t is not None and layout_name(t) == "strided"
            and type(t).__name__ != "FakeTensor" and not is_traceable_wrapper_subclass(t))


# -- storages ----------------------------------------------------------------------------------


def storage_key(t: Any) -> Any:
    """Identity of ``t``'s storage, or None when it has none (sparse, ...)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:
        return None


def _version(t: Any) -> int | None:
    return safe(lambda: int(t._version))


def version_partition(tensors: list[Any]) -> list[Any]:
    """Which tensors share a version counter: bump each in turn, see whose
    ``_version`` moved, put the counter back.  A label per tensor (the index
    of the first tensor of its group), None for a tensor without a readable
    version counter (inference tensors)."""
    import torch

    bump = getattr(getattr(torch.autograd, "graph", None), "increment_version", None)
    restore = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
    if bump is None or restore is None:
        return [None] * len(tensors)
    labels: list[Any] = [None] * len(tensors)
    for i, t in enumerate(tensors):
        if labels[i] is not None or _version(t) is None:
            continue
        before = [_version(u) for u in tensors]
        own = before[i]
        if own is None:
            continue
        try:
            bump(t)
        except Exception:
            continue
        try:
            after = [_version(u) for u in tensors]
        finally:
            _set_version(restore, t, own)
        for j, (a, b) in enumerate(zip(before, after)):
            if a is not None and b is not None and a != b and labels[j] is None:
                labels[j] = i
    return labels


def _set_version(restore: Callable[..., Any], t: Any, value: int) -> None:
    try:
        restore((t,), (value,))
    except TypeError:  # older signature: one tensor, one int
        restore(t, value)


def bytes_reached(shape: Any, stride: Any, offset: int, element_size: int) -> int:
    """Bytes of storage a strided tensor of that geometry reaches, its offset
    included (0 when it has no elements) -- ATen's computeStorageNbytes."""
    if any(n == 0 for n in shape):
        return 0
    return (offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * element_size


def storage_too_small(t: Any) -> bool:
    """True when a strided tensor reaches past the end of its storage (e.g.
    after ``untyped_storage().resize_(0)``): reading its values crashes the
    process (https://github.com/pytorch/pytorch/issues/171676)."""
    import torch

    try:
        if t.layout != torch.strided or t.device.type == "meta":
            return False
        return t.untyped_storage().nbytes() < bytes_reached(
            t.shape, t.stride(), t.storage_offset(), t.element_size())
    except Exception:
        return False


def reaches_past_storage(t: Any) -> bool:
    """Whether ``t``, or what it reaches (a view's base, its ``.grad``,
    a wrapper subclass's inner tensors), reaches past the end of its
    storage: an op on ``t`` may read or write there (a wrapper's own
    ``untyped_storage()`` holds nothing to check), and so does one on a C++
    functional tensor whose value reaches past its storage, or on a functorch
    wrapper whose inner tensor does."""
    if any(storage_too_small(u) for _, u in walk_real(["t"], [t])):
        return True
    inner = functional_value(t)
    if inner is None:
        inner = functorch_unwrapped(t)
    return inner is not None and reaches_past_storage(inner)


# -- autograd ----------------------------------------------------------------------------------


def leaves_reached(t: Any) -> list[Any]:
    """The leaf tensors ``t``'s backward accumulates into (the variables of
    the AccumulateGrad nodes its grad_fn reaches)."""
    out: list[Any] = []
    seen: set[int] = set()
    todo = [t.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        leaf = getattr(node, "variable", None)  # an AccumulateGrad node
        if leaf is not None:
            out.append(leaf)
        todo.extend(n for n, _ in getattr(node, "next_functions", ()))
    return out


def leaf_view_reached(t: Any) -> Any:
    """The leaf view of ``t``'s root (``t._base``) that ``t``'s backward
    accumulates into: the view ``requires_grad_()`` was called on, that
    ``t`` was made from.  None where the graph names no such leaf."""
    root = getattr(t, "_base", None)
    if root is None:
        return None
    return next((leaf for leaf in leaves_reached(t)
                 if leaf._is_view() and leaf._base is root), None)


def creation_meta(t: Any) -> Any:
    """A view's ``CreationMeta`` as text (``"CreationMeta.NO_GRAD_MODE"``),
    None for a tensor that is not a view."""
    import torch

    get = getattr(torch._C._autograd, "_get_creation_meta", None)
    if get is None or not is_view(t):
        return None
    return safe(lambda: str(get(t)))
