"""Helpers for testing the strategies: a tensor's metadata signature, the
aliasing partition of a group of tensors, and rebuilding a recipe from its
printed source.

Shared by the strategy test modules (import as ``helpers_strategies``);
extend rather than replace.
"""

from __future__ import annotations

from typing import Any, Sequence

_COMPRESSED_ROW = ("sparse_csr", "sparse_bsr")
_COMPRESSED_COL = ("sparse_csc", "sparse_bsc")


def layout_name(t: Any) -> str:
    return str(t.layout).removeprefix("torch.")


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception as e:  # some attributes do not exist for some layouts
        return f"<{type(e).__name__}>"


def tensor_signature(t: Any, *, with_base: bool = True) -> dict[str, Any]:
    """Everything about ``t`` that fakeification must preserve and that a
    recipe must rebuild identically (no values, no identities)."""
    layout = layout_name(t)
    sig: dict[str, Any] = {
        "type": type(t).__name__,
        "shape": tuple(t.shape),
        "dtype": t.dtype,
        "layout": layout,
        "device": str(t.device),
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "is_view": t._is_view(),
        "is_conj": t.is_conj(),
        "is_neg": t.is_neg(),
        "is_inference": t.is_inference(),
    }
    if layout == "strided":
        storage = t.untyped_storage()
        sig.update(
            stride=tuple(t.stride()),
            storage_offset=t.storage_offset(),
            storage_nbytes=storage.nbytes(),
        )
    elif layout == "sparse_coo":
        sig.update(
            sparse_dim=t.sparse_dim(),
            dense_dim=t.dense_dim(),
            is_coalesced=t.is_coalesced(),
            nnz=t._nnz(),
            indices=(tuple(t._indices().shape), t._indices().dtype),
            values=(tuple(t._values().shape), t._values().dtype),
        )
    elif layout in _COMPRESSED_ROW + _COMPRESSED_COL:
        row = layout in _COMPRESSED_ROW
        compressed = t.crow_indices() if row else t.ccol_indices()
        plain = t.col_indices() if row else t.row_indices()
        sig.update(
            sparse_dim=t.sparse_dim(),
            dense_dim=t.dense_dim(),
            nnz=t._nnz(),
            compressed_indices=(tuple(compressed.shape), compressed.dtype),
            plain_indices=(tuple(plain.shape), plain.dtype),
            values=(tuple(t.values().shape), t.values().dtype),
        )
    if getattr(t, "is_quantized", False):  # its integer values and quantization parameters
        import torch

        scheme = t.qscheme()
        sig["qscheme"] = scheme
        sig["int_repr"] = tuple(t.int_repr().flatten().tolist())
        if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            sig["qparams"] = (t.q_scale(), t.q_zero_point())
        else:
            sig["qparams"] = (t.q_per_channel_scales().tolist(),
                              t.q_per_channel_zero_points().tolist(), t.q_per_channel_axis())
    if layout == "_mkldnn":  # no storage nor strides: its values, which the recipe rebuilds
        sig["values"] = tuple(t.detach().to_dense().float().flatten().tolist())
    if with_base and t._is_view() and t._base is not None:
        sig["base"] = tensor_signature(t._base, with_base=False)
    grad = _safe(lambda: t.grad if t.is_leaf else None)
    if grad is not None and not isinstance(grad, str):
        sig["grad"] = tensor_signature(grad, with_base=False)
    return sig


def storage_key(t: Any) -> Any:
    """Identity of ``t``'s storage, or None when it has none (sparse)."""
    if layout_name(t) != "strided":
        return None
    return t.untyped_storage()._cdata


def partition(keys: Sequence[Any]) -> tuple[int, ...]:
    """Canonical labels: item i gets the index of the first item with its
    key; items whose key is None each stand alone (-1)."""
    first: dict[Any, int] = {}
    return tuple(first.setdefault(k, i) if k is not None else -1 for i, k in enumerate(keys))


def aliasing_partition(tensors: Sequence[Any]) -> dict[str, tuple[int, ...]]:
    """How ``tensors`` share storages, objects and ``_base``s, comparable
    between two builds of the same recipe."""
    bases = [t._base if t._is_view() else None for t in tensors]
    return {
        "storage": partition([storage_key(t) for t in tensors]),
        "object": partition([id(t) for t in tensors]),
        "base": partition([id(b) if b is not None else None for b in bases]),
        # which output (if any) is another output's _base
        "base_is_output": tuple(
            next((j for j, u in enumerate(tensors) if b is u), -1) for b in bases
        ),
    }


def shares_storage(a: Any, b: Any) -> bool:
    ka, kb = storage_key(a), storage_key(b)
    return ka is not None and ka == kb


def summaries_from_source(
    recipe: Any, signature: Any = None, partition_of: Any = None
) -> tuple[list[dict[str, Any]], Any]:
    """Exec ``recipe.to_python()`` in a fresh namespace (inside the recipe's
    contexts, via its epilogue) and return the outputs' signatures and
    aliasing partition (by default :func:`tensor_signature` and
    :func:`aliasing_partition`)."""
    namespace: dict[str, Any] = {
        "__mf_signature__": signature or tensor_signature,
        "__mf_partition__": partition_of or aliasing_partition,
    }
    outputs = ", ".join(recipe.outputs)
    epilogue = (
        f"__mf_outputs__ = ({outputs},)\n"
        "__mf_result__ = ([__mf_signature__(t) for t in __mf_outputs__], "
        "__mf_partition__(__mf_outputs__))"
    )
    exec(compile(recipe.to_python(epilogue=epilogue), "<recipe source>", "exec"), namespace)
    return namespace["__mf_result__"]


def summaries_from_build(
    recipe: Any, signature: Any = None, partition_of: Any = None
) -> tuple[list[dict[str, Any]], Any]:
    """The same as :func:`summaries_from_source`, through ``recipe.build_in``
    inside the recipe's contexts."""
    signature, partition_of = signature or tensor_signature, partition_of or aliasing_partition
    with recipe.active_contexts() as namespace:
        tensors = recipe.build_in(namespace)
        return [signature(t) for t in tensors], partition_of(tensors)


def namespace_of(recipe: Any) -> dict[str, Any]:
    """Every variable the recipe binds (recipes without contexts only)."""
    with recipe.active_contexts() as namespace:
        recipe.build_in(namespace)
    return namespace


# -- wrapper-aware signatures: autograd, functorch, functional, subclasses ------
#
# ``tensor_signature`` reads storages, which functorch wrappers do not have;
# these walk every wrapper layer instead (functorch ``unwrapped``, functional
# inner tensor, traceable-subclass inner tensors), and add the autograd state
# the autograd kinds set (grad_dtype, retains_grad, Parameter/Buffer).


def _dim_value(s: Any) -> Any:
    """An int size/stride, or "j" for a nested int (new in every build)."""
    try:
        return int(s)
    except Exception:
        return "j"


def wrapper_kind(t: Any) -> str:
    """"batched", "grad", "functional", "subclass" or "plain"."""
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    fc = torch._C._functorch
    if fc.is_batchedtensor(t):
        return "batched"
    if fc.is_gradtrackingtensor(t):
        return "grad"
    if torch._is_functional_tensor(t):
        return "functional"
    if is_traceable_wrapper_subclass(t):
        return "subclass"
    return "plain"


def inner_tensors(t: Any) -> list[tuple[str, Any]]:
    """(attribute, tensor) for the next wrapper layer down, if any."""
    import torch

    kind = wrapper_kind(t)
    if kind in ("batched", "grad"):
        return [("unwrapped", torch._C._functorch.get_unwrapped(t))]
    if type(t).__name__ == "FunctionalTensor" and isinstance(getattr(t, "elem", None), torch.Tensor):
        return [("elem", t.elem)]
    if kind == "functional":
        return [("functional_inner", torch._from_functional_tensor(t))]
    if kind == "subclass":
        attrs, _ = t.__tensor_flatten__()
        return [(a, getattr(t, a)) for a in attrs if isinstance(getattr(t, a), torch.Tensor)]
    return []


def deep_signature(t: Any, *, with_base: bool = True, depth: int = 0) -> dict[str, Any]:
    """Everything a recipe must rebuild identically, through every wrapper."""
    import torch
    import torch._C._functorch as fc

    kind = wrapper_kind(t)
    sig: dict[str, Any] = {
        "type": f"{type(t).__module__}.{type(t).__qualname__}",
        "wrapper": kind,
        "shape": tuple(_dim_value(s) for s in t.shape),
        "dtype": t.dtype,
        "layout": layout_name(t),
        "device": str(t.device),
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "is_view": t._is_view(),
        "is_conj": t.is_conj(),
        "is_neg": t.is_neg(),
        "is_inference": t.is_inference(),
        "is_parameter": isinstance(t, torch.nn.Parameter),
        "is_buffer": bool(getattr(t, "_is_buffer", False)),
        "retains_grad": _safe(lambda: t.retains_grad),
        "grad_dtype": _safe(lambda: t.grad_dtype) if t.is_leaf else None,
        "creation_meta": (
            _safe(lambda: str(torch._C._autograd._get_creation_meta(t))) if t._is_view() else None
        ),
        "stride": _safe(lambda: tuple(_dim_value(s) for s in t.stride())),
        "storage_offset": _safe(lambda: _dim_value(t.storage_offset())),
    }
    if kind in ("batched", "grad"):
        sig["level"] = fc.maybe_get_level(t)
        sig["bdim"] = fc.maybe_get_bdim(t) if kind == "batched" else None
    if kind == "subclass":
        sig["flatten_ctx"] = repr(t.__tensor_flatten__()[1])
    if kind == "plain" and layout_name(t) == "strided":
        sig["storage_nbytes"] = _safe(lambda: t.untyped_storage().nbytes())
    if depth < 6:
        for attr, inner in inner_tensors(t):
            sig[f"inner:{attr}"] = deep_signature(inner, depth=depth + 1)
        if with_base and t._is_view() and t._base is not None:
            sig["base"] = deep_signature(t._base, with_base=False, depth=depth + 1)
        grad = _safe(lambda: _grad_quietly(t))
        if grad is not None and not isinstance(grad, str):
            sig["grad"] = deep_signature(grad, with_base=False, depth=depth + 1)
    return sig


def _grad_quietly(t: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf warns
        return t.grad


def deep_storage_key(t: Any) -> Any:
    """Storage identity of ``t`` or, for functorch wrappers (no storage), of
    the tensor they wrap; None when there is none."""
    kind = wrapper_kind(t)
    if kind in ("batched", "grad"):
        return deep_storage_key(inner_tensors(t)[0][1])
    try:
        return t.untyped_storage()._cdata
    except Exception:
        return None


def deep_nodes(tensors: Sequence[Any]) -> list[tuple[str, Any]]:
    """(path, tensor) for every tensor reachable from ``tensors`` through
    ``_base``, ``.grad`` and wrapper layers, in a deterministic order."""
    out: list[tuple[str, Any]] = []

    def walk(path: str, t: Any, depth: int) -> None:
        out.append((path, t))
        if depth > 6:
            return
        for attr, inner in inner_tensors(t):
            walk(f"{path}.{attr}", inner, depth + 1)
        if t._is_view() and t._base is not None:
            walk(f"{path}._base", t._base, depth + 1)
        grad = _safe(lambda: _grad_quietly(t))
        if grad is not None and not isinstance(grad, str):
            walk(f"{path}.grad", grad, depth + 1)

    for i, t in enumerate(tensors):
        walk(f"out{i}", t, 0)
    return out


def deep_partition(tensors: Sequence[Any]) -> dict[str, Any]:
    """Storage and object-identity partitions over :func:`deep_nodes`."""
    nodes = deep_nodes(tensors)
    return {
        "paths": tuple(p for p, _ in nodes),
        "storage": partition([deep_storage_key(t) for _, t in nodes]),
        "object": partition([id(t) for _, t in nodes]),
    }


def deep_summaries_from_source(recipe: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """:func:`summaries_from_source` with :func:`deep_signature` and
    :func:`deep_partition`; the summary is taken inside the recipe's contexts."""
    return summaries_from_source(recipe, deep_signature, deep_partition)


def deep_summaries_from_build(recipe: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The same through ``recipe.build_in`` inside ``recipe.active_contexts()``."""
    return summaries_from_build(recipe, deep_signature, deep_partition)
