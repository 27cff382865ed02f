"""The public strategies: recipes(), meta_tensors(), tensor_families()."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from hypothesis import event, note, reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .config import make_config
from .kinds import Kind, all_kinds, available_kinds
from .lazy import lazy
from .recipe import Recipe, RecipeBuilder
from .torch_errors import printable
from .torch_notices import quiet_torch_notices

if TYPE_CHECKING:
    import torch


def select_kinds(
    kinds: Iterable[str] | str | None,
    exclude_kinds: Iterable[str] | str | None = None,
    *,
    family: bool | None = False,
    allow_context: bool = True,
    argname: str = "kinds",
) -> list[Kind]:
    """Resolve kind names against the registry, with a clear error for a name
    that does not exist and for one the installed torch cannot build."""
    registry = all_kinds()
    usable = available_kinds()

    def names(value: Any, arg: str) -> list[str]:
        if value is None:
            return []
        value = [value] if isinstance(value, str) else list(value)
        for n in value:
            if n not in registry:
                raise InvalidArgument(
                    f"{arg}: unknown tensor kind {n!r}; allowed: {', '.join(registry)}"
                )
        return value

    wanted = names(kinds, argname)
    excluded = set(names(exclude_kinds, "exclude_kinds"))
    if wanted:
        for n in wanted:
            if n not in usable:
                raise InvalidArgument(
                    f"{argname}: tensor kind {n!r} cannot be built with this torch: "
                    f"{registry[n].unavailable()}"
                )
        chosen = [usable[n] for n in wanted]
    else:
        chosen = [
            k for k in usable.values()
            if (family is None or k.family == family) and (allow_context or not k.needs_context)
        ]
    if not allow_context:
        bad = [k.name for k in chosen if k.needs_context]
        if bad:
            raise InvalidArgument(
                f"{argname}: {', '.join(bad)} only exist inside a functorch level or mode; "
                "draw them with recipes() and build them inside recipe.active_contexts()"
            )
    chosen = [k for k in chosen if k.name not in excluded]
    if not chosen:
        raise InvalidArgument(f"{argname}={kinds!r} with exclude_kinds={exclude_kinds!r} leaves no kind")
    return chosen


def recipes(
    *,
    kinds: Iterable[str] | str | None = None,
    exclude_kinds: Iterable[str] | str | None = None,
    family: bool | None = False,
    **generation: Any,
) -> st.SearchStrategy[Recipe]:
    """Recipes (source that builds tensors) of the given kinds.

    ``family=False`` draws single-tensor kinds, ``True`` aliasing families,
    ``None`` both.  ``generation`` takes the arguments of :func:`meta_tensors`.
    Kinds that need a live context are included; build their tensors with
    ``with recipe.active_contexts() as ns: recipe.build_in(ns)``.
    Arguments are checked when the test runs (``InvalidArgument``).
    """
    return lazy(recipes, recipe_strategy, dict(kinds=kinds, exclude_kinds=exclude_kinds,
                                               family=family, **generation))


def recipe_strategy(
    *,
    kinds: Iterable[str] | str | None = None,
    exclude_kinds: Iterable[str] | str | None = None,
    family: bool | None = False,
    **generation: Any,
) -> st.SearchStrategy[Recipe]:
    """:func:`recipes`, with its arguments checked now: for the suite, which
    makes one per example."""
    chosen = select_kinds(kinds, exclude_kinds, family=family)
    cfg = make_config(**generation)
    return _recipes(chosen, cfg)


def _recipes(chosen: list[Kind], cfg: Any) -> st.SearchStrategy[Recipe]:
    return _draw_recipe(chosen, cfg)


# Defined once, at module level: Hypothesis reads the source of every
# function decorated with @composite (about 1 ms), which a composite
# defined inside _recipes() would pay on each call -- the suite asks for a
# strategy per example.
@st.composite
def _draw_recipe(draw: Any, chosen: list[Kind], cfg: Any) -> Recipe:
    k = chosen[draw(st.integers(0, len(chosen) - 1))]
    b = RecipeBuilder()
    b.kind(k.name)  # the "# kinds:" header of the recipe's source
    try:
        with quiet_torch_notices():
            outputs = k.draw(draw, b, cfg)
            recipe = b.finish(outputs)
    finally:
        b.close()
    event(f"kind: {k.name}")
    return recipe


def _quiet_built(recipe: Recipe) -> tuple["torch.Tensor", ...]:
    """The recipe's tensors, for the user's test (torch's notices about the
    dtypes and layouts we chose kept out of it)."""
    with quiet_torch_notices():
        tensors = recipe.build()
    note(f"metafidelity reproducer:\n{recipe.to_python()}")
    # The user's test gets tensors torch can print: Hypothesis prints a
    # failing example, HypoFuzz every example.  A few bit-carrying views
    # cannot be printed (a neg view of float8: "neg_cpu" not implemented).
    if not all(printable(t) for t in tensors):
        reject()
    return tensors


def meta_tensors(
    *,
    dtype: Any = None,
    shape: Any = None,
    min_dims: int = 0,
    max_dims: int | None = None,
    min_side: int = 0,
    max_side: int | None = None,
    kinds: Iterable[str] | str | None = None,
    exclude_kinds: Iterable[str] | str | None = None,
    devices: Any = None,
    requires_grad: Any = None,
    max_storage_bytes: int = 1 << 16,
) -> st.SearchStrategy["torch.Tensor"]:
    """A strategy for one tensor of any kind the converter handles.

    Arguments follow ``hypothesis.extra.numpy.arrays``: each takes a value or
    a strategy.  ``dtype``: a torch dtype, its name, a list, or a strategy
    (default: every dtype this torch can build and print; shell dtypes such
    as bits8 or uint3 when asked for).  Storages resized to zero bytes,
    which torch crashes printing, are left to the suite and ``recipes()``.  ``shape`` or
    ``min_dims``/``max_dims``/``min_side``/``max_side``.  ``kinds`` and
    ``exclude_kinds``: kind names (see ``all_kinds()``).  ``devices``: "cpu",
    "meta", "cuda:N" or a list (default cpu).  ``requires_grad``: forced
    value, or None for both.  ``max_storage_bytes``: bound on each storage.

    The tensor's recipe travels with it (``recipe_of(t)``) and is printed as
    runnable Python in Hypothesis' falsifying-example notes.  Arguments are
    checked when the test runs (``InvalidArgument``), not when the strategy
    is made.
    """
    # locals(): exactly the arguments, as given.
    return lazy(meta_tensors, _meta_tensor_strategy, dict(locals()))


def _meta_tensor_strategy(*, kinds: Any, exclude_kinds: Any, **generation: Any
                          ) -> st.SearchStrategy["torch.Tensor"]:
    chosen = select_kinds(kinds, exclude_kinds, family=False, allow_context=False)
    cfg = make_config(**generation, printable=True)
    return _recipes(chosen, cfg).map(lambda r: _quiet_built(r)[0])


def tensor_families(
    *,
    kinds: Iterable[str] | str | None = None,
    exclude_kinds: Iterable[str] | str | None = None,
    **generation: Any,
) -> st.SearchStrategy[tuple["torch.Tensor", ...]]:
    """A strategy for a tuple of tensors that alias each other (views of one
    base, ``set_`` aliases, grads that alias, subclasses with aliasing inner
    tensors).  Takes the arguments of :func:`meta_tensors`; ``kinds`` names
    family kinds.  Convert the tuple through one converter: aliasing bugs only
    show across tensors converted together."""
    return lazy(tensor_families, _family_strategy,
                dict(kinds=kinds, exclude_kinds=exclude_kinds, **generation))


def _family_strategy(*, kinds: Any, exclude_kinds: Any, **generation: Any
                     ) -> st.SearchStrategy[tuple["torch.Tensor", ...]]:
    chosen = select_kinds(kinds, exclude_kinds, family=True, allow_context=False)
    cfg = make_config(**generation, printable=True)
    return _recipes(chosen, cfg).map(_quiet_built)
