"""`wrappers`: wrapper tensors keep their wrapping.

1. Functional-ness: ``isinstance(t, FunctionalTensor)`` and
   ``torch._is_functional_tensor(t)`` agree.
2. functorch: functorch-wrapped-ness, BatchedTensor-ness,
   GradTrackingTensor-ness, the level and the batch dim agree; the unwrapped
   tensors (path ``….unwrapped``) are checked recursively.  So is a C++
   functional tensor's value (``torch._from_functional_tensor(t)``, also at
   ``….unwrapped``: ``MetaTensorDesc.unwrapped`` describes both), as it
   stands after the conversion synced it: its geometry, storage and carried
   real tensor, which the wrapper's own readings do not show.
3. Traceable wrapper subclasses: the subclass type, the
   ``__tensor_flatten__`` attribute names and context agree, so do the values
   of the attributes that hold no tensor (opaque values, such as an ``Enum``
   member, ``<attr> (opaque attribute)``), and every inner
   tensor (path ``t0.<attr>``) is checked recursively with the ``metadata``,
   ``oracle``, ``storage``, ``autograd``, ``sparse`` and ``wrappers``
   checks; inner-tensor mismatches are reported under those checks' names.
   (The ``aliasing`` check already includes inner tensors in its
   partitions; ``memo`` and ``purity`` concern the outer tensors only.)

functorch and functional-tensor queries are private torch APIs: each is
feature-detected, and a query torch lacks is skipped.
"""

from __future__ import annotations

from typing import Any

from ..strategies.tensor_facts import (FUNCTIONALIZATION_QUERIES, functional_value,
                                       functionalization_attribute, inner_tensors,
                                       opaque_attributes)
from ..symbolic import hint
from . import Conversion, Mismatch, check
from ._util import related, safe

# Checks run on inner (subclass / functorch-unwrapped) tensor pairs.
INNER_CHECKS = ("metadata", "oracle", "storage", "autograd", "sparse", "wrappers")


def _functorch(name: str) -> Any:
    import torch

    return getattr(getattr(torch._C, "_functorch", None), name, None)


class _WrappingQueries:
    """The queries :func:`read_wrapping` asks, looked up once: those this
    torch lacks are left out."""

    def __init__(self) -> None:
        import torch

        self.functional_tensor: Any = None
        try:
            from torch._subclasses.functional_tensor import FunctionalTensor

            self.functional_tensor = FunctionalTensor
        except Exception:
            pass
        queries = [("torch._is_functional_tensor()", getattr(torch, "_is_functional_tensor", None))]
        queries += [(q, _functorch(q)) for q in ("is_functorch_wrapped_tensor",
                                                  "is_batchedtensor", "is_gradtrackingtensor")]
        self.flags = [(key, fn) for key, fn in queries if fn is not None]
        self.level = _functorch("maybe_get_level")
        self.bdim = _functorch("maybe_get_bdim")
        # functionalization's own state of a functional tensor: what it
        # records of the mutations of it (FUNCTIONALIZATION_QUERIES), and the
        # views it is regenerated through from its base when the base is
        # mutated (its ViewMeta chain)
        self.functionalization = [
            (functionalization_attribute(name), fn) for name in FUNCTIONALIZATION_QUERIES
            if (fn := getattr(torch, f"_functionalize_{name}", None)) is not None]
        self.view_metas = getattr(getattr(torch._C, "_functionalization", None),
                                  "get_view_meta_sequence", None)


_QUERIES: list[_WrappingQueries] = []
# How many views a functional tensor's ViewMeta chain holds, as users read it.
VIEW_CHAIN = "len(torch._C._functionalization.get_view_meta_sequence())"


def _ask(fn: Any, t: Any) -> Any:
    try:
        return fn(t)
    except Exception:
        return None


def read_wrapping(t: Any) -> dict[str, Any]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if not _QUERIES:
        _QUERIES.append(_WrappingQueries())
    q = _QUERIES[0]
    out: dict[str, Any] = {}
    if q.functional_tensor is not None:
        out["isinstance(FunctionalTensor)"] = isinstance(t, q.functional_tensor)
    for key, fn in q.flags:
        flag = _ask(fn, t)
        out[key] = None if flag is None else bool(flag)
    if out.get("torch._is_functional_tensor()"):
        for key, fn in q.functionalization:
            reading = _ask(fn, t)
            # (a counter that is symbolic as its hint: reading adds no guard)
            out[key] = reading if isinstance(reading, (bool, type(None))) else hint(reading)
        if q.view_metas is not None:
            views = _ask(q.view_metas, t)
            out[VIEW_CHAIN] = None if views is None else len(views)
    if out.get("is_functorch_wrapped_tensor"):
        if q.level is not None:
            out["functorch level"] = _ask(q.level, t)
        if out.get("is_batchedtensor") and q.bdim is not None:
            out["batch dim"] = _ask(q.bdim, t)
    subclass = is_traceable_wrapper_subclass(t)
    out["traceable wrapper subclass"] = subclass
    if subclass:
        out["subclass type"] = f"{type(t).__module__}.{type(t).__qualname__}"
        attrs, ctx = safe(lambda: t.__tensor_flatten__(), (None, None))
        out["__tensor_flatten__ attrs"] = tuple(attrs) if attrs is not None else None
        out["__tensor_flatten__ context"] = ctx
        # what the attrs that hold no tensor hold (an opaque value, passed
        # through to __tensor_unflatten__ as it is)
        for attr, value in opaque_attributes(t):
            out[f"{attr} (opaque attribute)"] = value
    return out


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


def wrapping_mismatches(conv: Conversion) -> list[Mismatch]:
    """The wrappers check's own readings (:func:`read_wrapping`) of every
    tensor of ``conv`` and what it reaches, compared; not the checks it runs
    on inner tensors."""
    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        found += _compare_wrapping(path, read_wrapping(real), read_wrapping(fake))
    return found


def unwrapped_values(conv: Conversion) -> list[tuple[str, Any, Any]]:
    """(path, real, converted) of the tensor inside every pair of functorch
    wrappers and C++ functional tensors in ``conv`` and what they reach, at
    ``….unwrapped``, level by level: what the wrappers check checks as inner
    tensors (a subclass's inner tensors aside)."""
    pairs = []
    for path, real, fake in related(conv, inner=False):
        expected, got = read_wrapping(real), read_wrapping(fake)
        found = (_functorch_unwrapped(path, real, fake, expected, got)
                 + _functional_values(path, real, fake, expected, got))
        pairs += found
        for inner_path, r, f in found:  # (functorch levels nest: a wrapper of a wrapper)
            pairs += unwrapped_values(Conversion((inner_path,), (r,), (f,), conv.converter,
                                                 inner=True))
    return pairs


def _functorch_unwrapped(path: str, real: Any, fake: Any, expected: dict[str, Any],
                         got: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    if not (expected.get("is_functorch_wrapped_tensor") and got.get("is_functorch_wrapped_tensor")):
        return []
    unwrap = _functorch("get_unwrapped")
    if unwrap is None:
        return []
    ru, fu = safe(lambda: unwrap(real)), safe(lambda: unwrap(fake))
    return [(f"{path}.unwrapped", ru, fu)] if ru is not None and fu is not None else []


def _functional_values(path: str, real: Any, fake: Any, expected: dict[str, Any],
                       got: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    # (a functional tensor of a functorch level is unwrapped as a functorch wrapper)
    if (expected.get("is_functorch_wrapped_tensor") or got.get("is_functorch_wrapped_tensor")
            or not expected.get("torch._is_functional_tensor()")
            or not got.get("torch._is_functional_tensor()")):
        return []
    rv, fv = functional_value(real), functional_value(fake)
    return [(f"{path}.unwrapped", rv, fv)] if rv is not None and fv is not None else []


def _compare_wrapping(path: str, expected: dict[str, Any], got: dict[str, Any]) -> list[Mismatch]:
    return [Mismatch(check="wrappers", path=path, attribute=key, real=expected[key],
                     fake=got[key])
            for key in expected if key in got and not _equal(expected[key], got[key])]


@check("wrappers", "functional-ness, functorch level/bdim, subclass type/context; inner tensors recursively")
def wrappers_check(conv: Conversion) -> list[Mismatch]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from . import run_checks

    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        expected, got = read_wrapping(real), read_wrapping(fake)
        found += _compare_wrapping(path, expected, got)
        inner_pairs = (_functorch_unwrapped(path, real, fake, expected, got)
                       + _functional_values(path, real, fake, expected, got))
        if is_traceable_wrapper_subclass(real) and is_traceable_wrapper_subclass(fake):
            fake_inner = dict(inner_tensors(fake))
            for attr, inner in inner_tensors(real):
                if attr in fake_inner:
                    inner_pairs.append((f"{path}.{attr}", inner, fake_inner[attr]))
        for sub_path, r, f in inner_pairs:
            sub = Conversion((sub_path,), (r,), (f,), conv.converter, inner=True)
            found += run_checks(sub, list(INNER_CHECKS))
    return found
