"""The registry of tensor kinds: one generator per branch of the converter.

A kind is a function ``draw_kind(draw, builder, config) -> list[str]`` that
adds lines to a :class:`~.recipe.RecipeBuilder` and returns the names of the
tensors under test.  Kind modules register themselves with :func:`kind`;
``KIND_MODULES`` lists this package's, in the order that shrinking prefers
(simplest first).

A kind declares what it supports, as a converter declares its capabilities,
and everything else is computed from the declarations: whether ``behaviour``
programs run on it (``programs``: True, or why not), its cost per example
(``cost_ms``: what ``--metafidelity-shard`` balances by) and whether it
yields several aliasing tensors (``family``).  So a kind defined outside this
package (a user's module, a test's conftest) registers with ``@kind`` and
the suite, the shards and the programs take it as they take ours.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from typing import Any, Callable, Literal

# Modules that define kinds, simplest first: shrinking moves toward the first
# kind of the first module.  Kinds registered from elsewhere come after them.
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
    "nested_strided",
    "zero_tensors",
    "foreign_memory",
)

Draw = Callable[..., Any]
DrawKind = Callable[[Draw, Any, Any], list[str]]

# A kind's name is an item id's first part and a --metafidelity-kinds value.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    summary: str
    draw: DrawKind
    # Returns None when the installed torch can build this kind, else why not.
    unavailable: Callable[[], str | None]
    # True when the tensors only exist inside the recipe's contexts (functorch
    # levels, modes): such kinds are drawn by recipes()/the suite, never by
    # meta_tensors(), which must hand out tensors that outlive the draw.
    needs_context: bool = False
    # True when the kind yields several aliasing tensors (tensor_families()).
    family: bool = False
    # True when the ``behaviour`` check runs programs on its tensors, else
    # the reason why it does not (the README's kinds table lists it).
    programs: Literal[True] | str = True
    # Milliseconds per example for a converter of factor 1 (see
    # ``pytest_metafidelity.shards``), or None when not measured: the
    # shards then estimate it as the median kind.
    cost_ms: float | None = None

    @property
    def runs_programs(self) -> bool:
        return self.programs is True


_KINDS: dict[str, Kind] = {}
_loaded = False


def _always() -> str | None:
    return None


def _declaration_error(name: Any, what: str) -> ValueError:
    return ValueError(f"@kind({name!r}): {what}")


def _validate(name: Any, summary: Any, *, needs_context: Any, family: Any, programs: Any,
              cost_ms: Any) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _declaration_error(name, "the name must be letters, digits and underscores, "
                                       "not starting with a digit")
    if not isinstance(summary, str) or not summary.strip():
        raise _declaration_error(name, f"summary={summary!r} must be a non-empty str")
    for arg, value in (("needs_context", needs_context), ("family", family)):
        if not isinstance(value, bool):
            raise _declaration_error(name, f"{arg}={value!r} must be True or False")
    if programs is not True and not (isinstance(programs, str) and programs.strip()):
        raise _declaration_error(name, f"programs={programs!r} must be True (programs run on "
                                       "its tensors) or a non-empty str saying why they do not")
    if cost_ms is not None and (isinstance(cost_ms, bool) or not isinstance(cost_ms, (int, float))
                                or not math.isfinite(cost_ms) or cost_ms <= 0):
        raise _declaration_error(name, f"cost_ms={cost_ms!r} must be a positive number of "
                                       "milliseconds per example, or None (not measured)")


def kind(
    name: str,
    summary: str,
    *,
    unavailable: Callable[[], str | None] = _always,
    needs_context: bool = False,
    family: bool = False,
    programs: Literal[True] | str = True,
    cost_ms: float | None = None,
) -> Callable[[DrawKind], DrawKind]:
    """Decorator registering a kind generator under ``name``, with what it
    declares (see :class:`Kind`).  A bad declaration raises ValueError
    naming the value and what is allowed."""
    _validate(name, summary, needs_context=needs_context, family=family, programs=programs,
              cost_ms=cost_ms)

    def register(fn: DrawKind) -> DrawKind:
        if not _is_builtin(fn):
            # Ours first, whenever the other is registered: shrinking
            # prefers the first kinds, and the suite lists them first.
            all_kinds()
        if name in _KINDS:
            raise ValueError(f"tensor kind {name!r} is registered twice")
        _KINDS[name] = Kind(name, summary, fn, unavailable, needs_context, family, programs,
                            cost_ms)
        return fn

    return register


def unregister_kind(name: str) -> None:
    """Remove the kind registered under ``name`` (a test's, a user's)."""
    if name not in all_kinds():
        raise ValueError(f"unregister_kind: no tensor kind {name!r} is registered; registered: "
                         f"{', '.join(_KINDS)}")
    del _KINDS[name]


def _is_builtin(fn: DrawKind) -> bool:
    return getattr(fn, "__module__", None) in {f"{__package__}.{m}" for m in KIND_MODULES}


def all_kinds() -> dict[str, Kind]:
    """Every registered kind, available or not, in registration order: this
    package's in ``KIND_MODULES`` order, then the others."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in KIND_MODULES:
            importlib.import_module(f"{__package__}.{module}")
    return dict(_KINDS)


def available_kinds() -> dict[str, Kind]:
    """The kinds the installed torch can build."""
    return {n: k for n, k in all_kinds().items() if k.unavailable() is None}


def program_kinds() -> tuple[str, ...]:
    """The kinds whose tensors ``behaviour`` programs run on (declared
    ``programs=True``), available or not."""
    return tuple(n for n, k in all_kinds().items() if k.runs_programs)
