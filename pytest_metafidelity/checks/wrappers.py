"""`wrappers`: wrapper tensors keep their wrapping.

1. Functional-ness: ``isinstance(t, FunctionalTensor)`` and
   ``torch._is_functional_tensor(t)`` agree.
2. functorch: functorch-wrapped-ness, BatchedTensor-ness,
   GradTrackingTensor-ness, the level and the batch dim agree; the unwrapped
   tensors (path ``….unwrapped``) are checked recursively.
3. Traceable wrapper subclasses: the subclass type, the
   ``__tensor_flatten__`` attribute names and context agree, and every inner
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

from . import Conversion, Mismatch, check
from ._util import related, safe

# Checks run on inner (subclass / functorch-unwrapped) tensor pairs.
INNER_CHECKS = ("metadata", "oracle", "storage", "autograd", "sparse", "wrappers")


def _functorch(name: str) -> Any:
    import torch

    return getattr(getattr(torch._C, "_functorch", None), name, None)


def read_wrapping(t: Any) -> dict[str, Any]:
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    out: dict[str, Any] = {}
    try:
        from torch._subclasses.functional_tensor import FunctionalTensor

        out["isinstance(FunctionalTensor)"] = isinstance(t, FunctionalTensor)
    except Exception:
        pass
    is_functional = getattr(torch, "_is_functional_tensor", None)
    if is_functional is not None:
        out["torch._is_functional_tensor()"] = safe(lambda: bool(is_functional(t)))
    for query in ("is_functorch_wrapped_tensor", "is_batchedtensor", "is_gradtrackingtensor"):
        fn = _functorch(query)
        if fn is not None:
            out[query] = safe(lambda: bool(fn(t)))
    if out.get("is_functorch_wrapped_tensor"):
        level = _functorch("maybe_get_level")
        if level is not None:
            out["functorch level"] = safe(lambda: level(t))
        if out.get("is_batchedtensor"):
            bdim = _functorch("maybe_get_bdim")
            if bdim is not None:
                out["batch dim"] = safe(lambda: bdim(t))
    subclass = is_traceable_wrapper_subclass(t)
    out["traceable wrapper subclass"] = subclass
    if subclass:
        out["subclass type"] = f"{type(t).__module__}.{type(t).__qualname__}"
        attrs, ctx = safe(lambda: t.__tensor_flatten__(), (None, None))
        out["__tensor_flatten__ attrs"] = tuple(attrs) if attrs is not None else None
        out["__tensor_flatten__ context"] = ctx
    return out


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


@check("wrappers", "functional-ness, functorch level/bdim, subclass type/context; inner tensors recursively")
def wrappers_check(conv: Conversion) -> list[Mismatch]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from . import run_checks

    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        expected, got = read_wrapping(real), read_wrapping(fake)
        for key in expected:
            if key in got and not _equal(expected[key], got[key]):
                found.append(Mismatch(
                    check="wrappers", path=path, attribute=key, real=expected[key], fake=got[key]))
        inner_pairs: list[tuple[str, Any, Any]] = []
        if expected.get("is_functorch_wrapped_tensor") and got.get("is_functorch_wrapped_tensor"):
            unwrap = _functorch("get_unwrapped")
            if unwrap is not None:
                ru, fu = safe(lambda: unwrap(real)), safe(lambda: unwrap(fake))
                if ru is not None and fu is not None:
                    inner_pairs.append((f"{path}.unwrapped", ru, fu))
        if is_traceable_wrapper_subclass(real) and is_traceable_wrapper_subclass(fake):
            attrs, _ = real.__tensor_flatten__()
            fattrs, _ = fake.__tensor_flatten__()
            for attr in attrs:
                if attr in fattrs:
                    inner_pairs.append((f"{path}.{attr}", getattr(real, attr), getattr(fake, attr)))
        for sub_path, r, f in inner_pairs:
            sub = Conversion((sub_path,), (r,), (f,), conv.converter, inner=True)
            found += run_checks(sub, list(INNER_CHECKS))
    return found
