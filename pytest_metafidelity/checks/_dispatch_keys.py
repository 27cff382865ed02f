"""Dispatch keys: the names of the special states a tensor carries, read
from ``torch._C._dispatch_keys(t)``.

A per-backend key is a functionality joined to a backend (``SparseCPU`` is
``Sparse`` on ``CPU``; ``CPU`` itself is ``Dense`` on ``CPU``).  The backend
is the tensor's device -- the converter's fake device differs by design
(``Meta`` for the meta converter) and the ``oracle`` compares ``device``
itself -- so keys are compared by functionality: the real tensor carries
``SparseCPU`` where its fake carries ``SparseMeta``, and that is the same.

The backends are introspected, not listed: a backend is whatever has an
``Autograd<backend>`` key in torch's full key set.
"""

from __future__ import annotations

import functools
from typing import Any

# The per-backend functionalities, longest prefix first ("" is Dense).
_PER_BACKEND_PREFIXES = ("SparseCsr", "Sparse", "Quantized", "NestedTensor", "Autograd",
                         "Autocast", "")

# What the oracle compares (``oracle``: "<label> in torch._C._dispatch_keys(t)").
# Per-backend functionalities by name, the others by key.  Conjugate,
# Negative, Functionalize and the functorch keys are compared through the
# predicates that read them (is_conj(), is_neg(), the ``wrappers`` check).
COMPARED_FUNCTIONALITIES = ("Dense", "Sparse", "SparseCsr", "Quantized", "NestedTensor",
                            "Autograd")
COMPARED_KEYS = ("MkldnnCPU", "ZeroTensor", "ADInplaceOrView", "AutogradOther",
                 "AutogradNestedTensor")


def keyset_names(keyset: Any) -> tuple[str, ...]:
    """The key names of a DispatchKeySet, in torch's order."""
    text = str(keyset)
    inner = text[text.index("(") + 1:text.rindex(")")]
    return tuple(name.strip() for name in inner.split(",") if name.strip())


@functools.lru_cache(maxsize=None)
def all_runtime_keys() -> tuple[str, ...]:
    """Every key a tensor's key set can hold (``_dispatch_keyset_full()``;
    where torch lacks it, the DispatchKey enum's members that are not
    aliases, markers or alias keys -- those a key set can hold)."""
    import torch

    full = getattr(torch._C, "_dispatch_keyset_full", None)
    if full is not None:
        return keyset_names(full())
    names: list[str] = []
    for name in torch._C.DispatchKey.__members__:
        try:
            names.extend(keyset_names(torch._C.DispatchKeySet(getattr(torch._C.DispatchKey,
                                                                      name))))
        except Exception:
            continue
    return tuple(dict.fromkeys(names))


@functools.lru_cache(maxsize=None)
def backends() -> tuple[str, ...]:
    """The backends: the names X with an ``AutogradX`` key."""
    keys = set(all_runtime_keys())
    return tuple(k for k in all_runtime_keys() if f"Autograd{k}" in keys)


@functools.lru_cache(maxsize=None)
def split_key(key: str) -> tuple[str, str | None]:
    """(functionality, backend) of a per-backend key; (key, None) for the
    others.  ``SparseCPU`` -> ("Sparse", "CPU"), ``CPU`` -> ("Dense", "CPU")."""
    known = set(backends())
    for prefix in _PER_BACKEND_PREFIXES:
        if key.startswith(prefix) and key[len(prefix):] in known:
            return (prefix or "Dense"), key[len(prefix):]
    return key, None


def label(functionality: str) -> str:
    """How a functionality is named in a mismatch: ``Sparse<backend>``,
    ``<backend>`` for Dense, the key itself for the others."""
    if functionality in COMPARED_FUNCTIONALITIES:
        return ("" if functionality == "Dense" else functionality) + "<backend>"
    return functionality


def attribute(functionality: str) -> str:
    """The mismatch attribute for a compared functionality or key."""
    return f"{label(functionality)} in torch._C._dispatch_keys(t)"


def compared_keys(t: Any) -> dict[str, str]:
    """The compared functionalities ``t`` carries: functionality -> the key
    that carries it (``{"Sparse": "SparseCPU", "Autograd": "AutogradCPU"}``)."""
    import torch

    found: dict[str, str] = {}
    for key in _keyset_names(str(torch._C._dispatch_keys(t))):
        compared = _compared_as(key)
        if compared is not None:
            found[compared] = key
    return found


@functools.lru_cache(maxsize=None)
def _keyset_names(text: str) -> tuple[str, ...]:
    return keyset_names(text)


@functools.lru_cache(maxsize=None)
def _compared_as(key: str) -> str | None:
    """The compared functionality (or key) ``key`` stands for, else None."""
    functionality, backend = split_key(key)
    if backend is not None and functionality in COMPARED_FUNCTIONALITIES:
        return functionality
    return key if key in COMPARED_KEYS else None
