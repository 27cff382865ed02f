"""What the predicates are built from: one-line facts about a tensor
(its layout, whether it is sparse, nested, a subclass, functorch-wrapped,
functional), the markers that let the triage skip predicates cheaply, and a
per-conversion memo.

The triage asks every active entry's predicate on every case, passing ones
included (to notice an entry that did not occur).  Two markers make that
cheap without changing an answer: ``@family_wide`` (the predicate reads
only the family, so it is asked once per case rather than per tensor),
``@needs(fact)`` (it can only hold when some tensor of the case has the
fact -- sparse, nested, subclass, functorch, functional, FunctionalTensor
-- so cases without it skip it) and ``@reads_record(attr)`` (it can only
hold when the ``behaviour`` check recorded something on the conversion);
the project's tests hold them to what they claim.  Work a predicate repeats for each tensor of a case is kept per
conversion with :func:`memo`.
"""

from __future__ import annotations

from typing import Any, Callable

# (plain_strided and storage_key are here for the predicates, which import
# their facts from this module)
from ..strategies.tensor_facts import (is_functorch_wrapped, is_wrapper_subclass, layout_name,
                                       plain_strided, storage_key)
from ..symbolic import is_symbolic
from .core import Case


def family_wide(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
    """Marks a predicate that reads only the case's family, conversion and
    converter -- never ``case.tensor`` or ``case.path`` -- so it holds for
    every tensor of a case or for none: the triage asks it once per case."""
    predicate.family_wide = True  # type: ignore[attr-defined]
    return predicate


def reads_record(attr: str) -> Callable[[Callable[[Case], bool]], Callable[[Case], bool]]:
    """Marks a predicate that can hold only when the conversion recorded
    something under ``attr`` (what the ``behaviour`` check saw): the triage
    skips it, without asking, where nothing was recorded."""

    def mark(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
        predicate.reads_record = attr  # type: ignore[attr-defined]
        return predicate

    return mark


def is_sparse(t: Any) -> bool:
    return layout_name(t).startswith("sparse")


def is_nested(t: Any) -> bool:
    return bool(getattr(t, "is_nested", False))


def is_cpp_functional(t: Any) -> bool:
    import torch

    try:
        return bool(torch._is_functional_tensor(t))
    except Exception:
        return False


FACTS: dict[str, Callable[[Any], bool]] = {
    "sparse": is_sparse,
    "nested": is_nested,
    "subclass": is_wrapper_subclass,
    "functorch": is_functorch_wrapped,
    "functional": is_cpp_functional,
    "FunctionalTensor": lambda t: is_functional_tensor(t),
}


def needs(fact: str) -> Callable[[Callable[[Case], bool]], Callable[[Case], bool]]:
    """Marks a predicate that holds only when some tensor of the case has
    ``fact`` (see FACTS)."""
    if fact not in FACTS:
        raise ValueError(f"unknown fact {fact!r}; known: {', '.join(FACTS)}")

    def mark(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
        predicate.needs = fact  # type: ignore[attr-defined]
        return predicate

    return mark




def static_fake_nbytes(case: Case) -> bool:
    fake = case.conversion.tensor_at(case.path, fake=True)
    if fake is None:
        return False
    return not is_symbolic(fake.untyped_storage().nbytes())


def functional_mode_active() -> bool:
    import torch

    key = getattr(torch._C, "_TorchDispatchModeKey", None)
    if key is None:
        return False
    return torch._C._get_dispatch_mode(key.FUNCTIONAL) is not None


def is_functional_tensor(t: Any) -> bool:
    from torch._subclasses.functional_tensor import FunctionalTensor

    return isinstance(t, FunctionalTensor)


def is_wrapper(t: Any) -> bool:
    """A C++ functional tensor or a functorch wrapper: MetaConverter converts
    the tensor inside it and wraps the result."""
    import torch

    from ..strategies.tensor_facts import functorch_unwrapped
    from ..strategies.torch_errors import safe

    return (functorch_unwrapped(t) is not None
            or bool(safe(lambda: torch._is_functional_tensor(t), False)))


def memo(case: Case, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per conversion and key (predicates run for every
    tensor of the family)."""
    cache = getattr(case.conversion, "_known_difference_memo", None)
    if cache is None:
        cache = {}
        try:
            case.conversion._known_difference_memo = cache
        except Exception:
            return compute()
    if key not in cache:
        cache[key] = compute()
    return cache[key]
