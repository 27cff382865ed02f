"""The converters under test: each turns real tensors into meta or fake ones.

A converter instance converts one family of tensors (in an order the caller
chooses), so its memo and aliasing bookkeeping are exercised across tensors.
A documented refusal by torch (NotImplemented, UnsupportedFakeTensorException,
Dynamo's "unimplemented") is raised as :class:`Unsupported`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable


class Unsupported(Exception):
    """The converter refused the tensor in a way torch documents."""


@dataclasses.dataclass(frozen=True)
class ConverterSpec:
    name: str
    summary: str
    factory: Callable[[], "Converter"]
    # Returns None when usable with the installed torch, else why not.
    unavailable: Callable[[], str | None] = lambda: None


class Converter:
    """Base class.  Subclasses implement :meth:`_convert`."""

    name = "?"
    # True when converted sizes/strides may be SymInts.
    symbolic = False

    def convert(self, t: Any) -> Any:
        from torch._subclasses.fake_tensor import UnsupportedFakeTensorException

        try:
            r = self._convert(t)
        except UnsupportedFakeTensorException as e:
            raise Unsupported(f"UnsupportedFakeTensorException: {e.reason}") from e
        except Exception as e:
            if type(e).__name__ in ("Unsupported", "UncapturedHigherOrderOpError") and type(
                e
            ).__module__.startswith("torch._dynamo"):
                raise Unsupported(f"dynamo unimplemented: {e}") from e
            raise
        if r is NotImplemented:
            raise Unsupported(f"{type(self).__name__} returned NotImplemented")
        return r

    def _convert(self, t: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Release what the converter holds (modes, memo)."""


class MetaConverterAdapter(Converter):
    """``MetaConverter`` with its default callback: meta tensors."""

    name = "meta"

    def __init__(self) -> None:
        from torch._subclasses.meta_utils import MetaConverter

        self.impl = MetaConverter()

    def _convert(self, t: Any) -> Any:
        return self.impl(t)


class FakeConverter(Converter):
    """``FakeTensorMode().from_tensor`` with static shapes."""

    name = "fake"

    def __init__(self) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.mode = FakeTensorMode()

    def _convert(self, t: Any) -> Any:
        return self.mode.from_tensor(t)


class DynamicFakeConverter(Converter):
    """``FakeTensorMode`` with a ``ShapeEnv``; every dimension marked dynamic
    through a symbolic context, as Dynamo does with dynamic shapes."""

    name = "fake-dynamic"
    symbolic = True

    def __init__(self) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False)
        self._count = 0

    def _convert(self, t: Any) -> Any:
        from torch._dynamo.source import ConstantSource

        self._count += 1
        return self.mode.from_tensor(
            t,
            source=ConstantSource(f"input{self._count}"),
            symbolic_context=all_dynamic_context(t),
        )


def all_dynamic_context(t: Any) -> Any:
    """A symbolic context making every dimension of ``t`` dynamic, recursing
    into traceable-wrapper-subclass inner tensors and view bases."""
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic,
        StatelessSymbolicContext,
        SubclassSymbolicContext,
    )
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    ndim = t.dim()
    base = t._base if t._is_view() and t._base is not None else None
    view_base_context = all_dynamic_context(base) if base is not None else None
    common = dict(
        dynamic_sizes=[DimDynamic.DYNAMIC] * ndim,
        constraint_sizes=[None] * ndim,
        view_base_context=view_base_context,
    )
    if is_traceable_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        inner = {a: all_dynamic_context(getattr(t, a)) for a in attrs}
        return SubclassSymbolicContext(inner_contexts=inner, **common)
    return StatelessSymbolicContext(**common)


CONVERTERS: dict[str, ConverterSpec] = {
    spec.name: spec
    for spec in (
        ConverterSpec("meta", MetaConverterAdapter.__doc__ or "", MetaConverterAdapter),
        ConverterSpec("fake", FakeConverter.__doc__ or "", FakeConverter),
        ConverterSpec("fake-dynamic", DynamicFakeConverter.__doc__ or "", DynamicFakeConverter),
    )
}


def converter_names() -> list[str]:
    return list(CONVERTERS)


def make_converter(name: str) -> Converter:
    try:
        spec = CONVERTERS[name]
    except KeyError:
        raise ValueError(
            f"unknown converter {name!r}; allowed: {', '.join(CONVERTERS)}"
        ) from None
    reason = spec.unavailable()
    if reason is not None:
        raise Unsupported(f"converter {name!r} is not available with this torch: {reason}")
    return spec.factory()
