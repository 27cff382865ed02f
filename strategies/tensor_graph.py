"""The tensors one tensor reaches: its view base, a leaf's ``.grad``, a
traceable wrapper subclass's inner tensors and (on request) the tensor
inside a functorch wrapper -- each read without raising.

The strategies walk it to see what a drawn tensor holds; the plugin's
checks and known differences walk it too (``checks._util`` re-exports these
names and walks real and fake tensors in lockstep).
"""

from __future__ import annotations

from typing import Any

from .torch_errors import safe


def is_view(t: Any) -> bool:
    try:  # not safe(): it is asked for every tensor by several checks
        return bool(t._is_view())
    except Exception:
        return False


def base_of(t: Any) -> Any:
    return t._base if is_view(t) else None


def grad_of(t: Any) -> Any:
    """``t.grad`` for a leaf (non-leaves' .grad is not read: it warns; a
    leaf's does not, so no warning filter is needed)."""
    try:
        if not t.is_leaf:
            return None
        return t.grad
    except Exception:
        return None


def inner_tensors(t: Any) -> list[tuple[str, Any]]:
    """(attr, inner tensor) of a traceable wrapper subclass, else []."""
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if not is_traceable_wrapper_subclass(t):
        return []
    try:
        attrs, _ = t.__tensor_flatten__()
    except Exception:
        return []
    out = []
    for a in attrs:
        v = getattr(t, a, None)
        if isinstance(v, torch.Tensor):
            out.append((a, v))
    return out


def is_functorch_wrapped(t: Any) -> bool:
    """Whether ``t`` is a functorch wrapper (BatchedTensor,
    GradTrackingTensor): a ``torch.Tensor`` with no storage of its own."""
    import torch

    fns = getattr(torch._C, "_functorch", None)
    try:  # not safe(): it is asked for every plain tensor by the predicates
        return fns is not None and bool(fns.is_functorch_wrapped_tensor(t))
    except Exception:
        return False


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
