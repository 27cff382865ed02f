"""Helpers shared by the checks: symbolic hints (:mod:`..symbolic`), the graph of related
tensors (bases, grads, subclass inner tensors) walked on the real and the
converted side in lockstep, a tensor at a path.

The graph of one side, and reading it safely, are the strategies' own
(``strategies.tensor_facts``, ``strategies.torch_errors``): their names
stay importable from here, where the checks and known differences import
them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

from ..strategies.tensor_facts import (base_of, functional_value, functorch_unwrapped, grad_of,
                                       inner_tensors, is_view, walk_real)
from ..strategies.torch_errors import safe
from ..symbolic import UNKNOWN, has_symbolic, hint, hints, is_symbolic, same

__all__ = [
    "UNKNOWN", "base_of", "carried_real", "fake_device", "functorch_unwrapped", "grad_of",
    "has_symbolic", "hint", "hints", "inner_tensors", "is_symbolic", "is_view", "related",
    "resolve", "safe", "same", "walk_real",
]

def related(conv: Any, *, inner: bool = True, unique: bool = True) -> list[tuple[str, Any, Any]]:
    """(path, real, fake) for every tensor under test and what is reachable
    from it -- ``_base``, ``.grad`` (``tensor_facts.grad_of``) and (with
    ``inner``) subclass inner tensors -- walked in lockstep on both sides.  With ``unique``, each
    (real, fake) pair is listed once (at the first path that reaches it);
    without, every path is listed (identity checks need them all).

    Walked once per Conversion and arguments (the checks each ask; the
    tensors' graph does not change while they run): the list is the
    Conversion's, not to be modified."""
    cache = getattr(conv, "_related_walks", None)
    if cache is None:
        cache = {}
        try:
            conv._related_walks = cache
        except AttributeError:  # not a checks.Conversion
            pass
    key = (inner, unique)
    walked = cache.get(key)
    if walked is None:
        walked = cache[key] = []
        seen: set[tuple[int, int]] = set()
        for name, r, f in conv.pairs():
            _walk_pair(walked, seen, name, r, f, 0, inner, unique)
    return walked


# The walk is a module-level function, not a closure: a recursive closure is
# a reference cycle that would keep the walked (converted) tensors alive
# until the garbage collector runs (the ``memo`` check sees them released).
def _walk_pair(out: list, seen: set, path: str, r: Any, f: Any, depth: int, inner: bool,
               unique: bool) -> None:
    key = (id(r), id(f))
    if key in seen and unique:
        return
    seen.add(key)
    out.append((path, r, f))
    if depth > 8:
        return
    rb, fb = base_of(r), base_of(f)
    if rb is not None and fb is not None:
        _walk_pair(out, seen, f"{path}._base", rb, fb, depth + 1, inner, unique)
    rg, fg = grad_of(r), grad_of(f)
    if rg is not None and fg is not None:
        _walk_pair(out, seen, f"{path}.grad", rg, fg, depth + 1, inner, unique)
    if inner:
        fi = dict(inner_tensors(f))
        for attr, ri in inner_tensors(r):
            if attr in fi:
                _walk_pair(out, seen, f"{path}.{attr}", ri, fi[attr], depth + 1, inner, unique)


def resolve(conv: Any, path: str, *, fake: bool = False) -> Any:
    """The real (``fake=True``: converted) tensor at ``path`` of ``conv`` (a
    :class:`~pytest_metafidelity.checks.Conversion`, whose ``tensor_at`` this
    is, or a stand-in with its ``names``, ``real`` and ``fake``): "t0",
    "t0._base.grad", "t1.a", "t0.real_tensor", "t0.unwrapped"; or None."""
    head, *rest = path.split(".")
    try:
        t = (conv.fake if fake else conv.real)[conv.names.index(head)]
    except (ValueError, IndexError):
        return None
    for part in rest:
        if part == "_base":
            t = base_of(t)
        elif part == "grad":
            t = grad_of(t)
        elif part == "real_tensor":
            return getattr(t, "real_tensor", None) if fake else t
        elif part == "unwrapped":
            import torch

            value = functional_value(t)
            if value is not None and not safe(
                    lambda: torch._C._functorch.is_functorch_wrapped_tensor(t), False):
                t = value  # a C++ functional tensor's value
            else:
                unwrap = getattr(getattr(torch._C, "_functorch", None), "get_unwrapped", None)
                t = safe(lambda: unwrap(t)) if unwrap is not None else None
        else:
            t = dict(inner_tensors(t)).get(part)
        if t is None:
            return None
    return t


def fake_device(conv: Any, real: Any) -> Any:
    fn = getattr(conv.converter, "fake_device", None)
    return fn(real) if fn is not None else real.device


def carried_real(fake: Any) -> Any:
    """The real tensor a fake of a real-tensor-propagating mode carries
    (looking through a C++ functional wrapper), or None."""
    import torch

    carried = getattr(fake, "real_tensor", None)
    if carried is None and safe(lambda: torch._is_functional_tensor(fake), False):
        inner = safe(lambda: torch._from_functional_tensor(fake))
        carried = getattr(inner, "real_tensor", None)
    return carried


@contextlib.contextmanager
def quiet_fake_tensor_log() -> Iterator[None]:
    """FakeTensorMode logs every meta kernel that raises at ERROR level
    (with its traceback): a reading or a step that raises is an outcome
    here, not news for the user's terminal (a dynamic sparse fake's
    ``_nnz()`` raises an internal assert on every reading)."""
    import logging

    logger = logging.getLogger("torch._subclasses.fake_tensor")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was
