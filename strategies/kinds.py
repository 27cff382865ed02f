"""The registry of tensor kinds: one generator per branch of the converter.

A kind is a function ``draw_kind(draw, builder, config) -> list[str]`` that
adds lines to a :class:`~.recipe.RecipeBuilder` and returns the names of the
tensors under test.  Kind modules register themselves with :func:`kind`;
``KIND_MODULES`` lists them, in the order that shrinking prefers (simplest
first).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

# Modules that define kinds, simplest first: shrinking moves toward the first
# kind of the first module.
KIND_MODULES = (
    "dense",
    "scalar",
    "views",
    "conj_neg",
    "dtype_views",
    "sparse",
    "mkldnn",
    "quantized",
    "families",
    "autograd",
    "wrappers",
    "subclasses",
)

Draw = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    summary: str
    draw: Callable[[Draw, Any, Any], list[str]]
    # Returns None when the installed torch can build this kind, else why not.
    unavailable: Callable[[], str | None]
    # True when the tensors only exist inside the recipe's contexts (functorch
    # levels, modes): such kinds are drawn by recipes()/the suite, never by
    # meta_tensors(), which must hand out tensors that outlive the draw.
    needs_context: bool = False
    # True when the kind yields several aliasing tensors (tensor_families()).
    family: bool = False


_KINDS: dict[str, Kind] = {}
_loaded = False


def _always() -> str | None:
    return None


def kind(
    name: str,
    summary: str,
    *,
    unavailable: Callable[[], str | None] = _always,
    needs_context: bool = False,
    family: bool = False,
) -> Callable[[Callable[[Draw, Any, Any], list[str]]], Callable[[Draw, Any, Any], list[str]]]:
    """Decorator registering a kind generator under ``name``."""

    def register(fn: Callable[[Draw, Any, Any], list[str]]) -> Callable[[Draw, Any, Any], list[str]]:
        if name in _KINDS:
            raise ValueError(f"tensor kind {name!r} is registered twice")
        _KINDS[name] = Kind(name, summary, fn, unavailable, needs_context, family)
        return fn

    return register


def all_kinds() -> dict[str, Kind]:
    """Every registered kind, available or not, in registration order."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in KIND_MODULES:
            importlib.import_module(f"{__package__}.{module}")
    return dict(_KINDS)


def available_kinds() -> dict[str, Kind]:
    """The kinds the installed torch can build."""
    return {n: k for n, k in all_kinds().items() if k.unavailable() is None}
