"""Experiments: predicates that decide by doing what torch would do --
converting a tensor again, replaying a view, printing a description --
rather than by reading the tensor.  Each is run at most once per
conversion and tensor (the callers memoize them).
"""

from __future__ import annotations

from typing import Any

from ..strategies.torch_errors import release_frames
from ..symbolic import has_symbolic, hint
from .core import Case


class _FoundSymbol(Exception):
    pass


def first_fake_replays_symbol(t: Any) -> bool:
    """Convert the subclass view ``t`` as the refake converters' first step
    does (``fake-dynamic``, the dispatch cache emptied first); True when the
    fake's own view function carries a SymInt that is not specialized to 0
    or 1 (found while visiting its arguments, before any op runs)."""
    import torch

    from ..converters import DynamicFakeConverter, clear_dispatch_cache

    def visit(s: Any) -> Any:
        if isinstance(s, torch.SymInt) and hint(s) not in (0, 1):
            raise _FoundSymbol
        return s

    clear_dispatch_cache()
    first = DynamicFakeConverter()
    try:
        fake = first._convert(t)
        base = fake._base
        if base is None:  # (not a view once converted: nothing replays a view)
            return False
        mode = getattr(fake, "fake_mode", None) or first.mode
        cached, mode.cache_enabled = mode.cache_enabled, False
        try:
            fake._view_func_unsafe(base, visit, lambda x: x)
        except _FoundSymbol:
            return True
        finally:
            mode.cache_enabled = cached
        return False
    finally:
        first.close()


def python_dispatcher_replay_differs(t: Any) -> bool:
    """Replaying the view ``t`` on a meta conversion of its base under the
    Python dispatcher (as MetaConverter's view_from_base does for
    subclass views) gives other sizes, strides or storage offset than
    ``t`` has."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.meta_utils import MetaConverter

    base: Any = MetaConverter()(t._base)
    with enable_python_dispatcher():
        r = t._view_func_unsafe(base, lambda s: s, lambda x: x)
    return ((tuple(r.shape), tuple(r.stride()), r.storage_offset())
            != (tuple(t.shape), tuple(t.stride()), t.storage_offset()))


_CACHE_AB_CHECKS = ("metadata", "oracle", "aliasing", "storage", "autograd", "wrappers")


def mismatch_signature(case: Case, *, cache: bool) -> frozenset:
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
                release_frames(e)
                return frozenset({("conversion", ", ".join(names), "raised",
                                   f"{type(e).__name__}: {e}")})
            found = run_checks(Conversion(names, real, tuple(fakes), converter,
                                          order=tuple(order)), list(_CACHE_AB_CHECKS))
            return frozenset((m.check, m.path, m.attribute, "") for m in found)
        finally:
            converter.close()


def dynamic_fake_storage(u: Any) -> tuple[bool, Any]:
    """(symbolic sizes/strides/offset?, storage nbytes) of ``u`` converted
    as ``fake-dynamic`` converts it."""
    from ..converters import DynamicFakeConverter

    conv = DynamicFakeConverter()
    try:
        f = conv._convert(u)
        return has_symbolic(f), hint(f.untyped_storage().nbytes())
    finally:
        conv.close()


def describe_with_data_fails(t: Any) -> bool:
    from torch._subclasses.meta_utils import MetaTensorDescriber

    desc = MetaTensorDescriber(copy_data=True).describe_tensor(t)
    try:
        str(desc)  # prints the copied data: torch's printer may raise
    except Exception as e:
        release_frames(e)
        return True
    return False
