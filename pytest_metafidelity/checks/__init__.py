"""The checks: invariants a converted tensor must share with its real one.

Where are the checks?  One module each in this package, registered with
:func:`check`; the module's docstring documents the check.  A check takes a
:class:`Conversion` (real tensors, their converted counterparts, the
converter) and returns a list of :class:`Mismatch` -- empty when the
invariant holds.

``metadata`` (torch's assert_metadata_eq), ``oracle`` (public-API reading),
``aliasing`` (storage/object/version-counter partitions, ``_base``),
``storage`` (storage sizes), ``memo`` (same object again; released),
``autograd`` (creation_meta, non-leaves, grad_dtype, retains_grad),
``sparse`` (sparse structure), ``wrappers`` (functional, functorch,
subclasses; inner tensors recursively), ``purity`` (no side effects),
``behaviour`` (a program of views, in-place ops and autograd acts alike).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Iterator

# Modules defining checks, in report order.
CHECK_MODULES = (
    "metadata", "oracle", "aliasing", "storage", "memo", "autograd", "sparse", "wrappers",
    "purity", "behaviour",
)


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """One broken invariant: which check, where, which attribute, real vs fake."""

    check: str
    path: str  # e.g. "t0", "t0._base", "t1.grad"
    attribute: str
    real: Any
    fake: Any
    detail: str = ""

    def describe(self) -> str:
        text = (
            f"[{self.check}] {self.path}: {self.attribute} differs\n"
            f"    real: {self.real!r}\n"
            f"    fake: {self.fake!r}"
        )
        return text + (f"\n    ({self.detail})" if self.detail else "")

    @property
    def signature(self) -> str:
        """Stable de-duplication key: check and attribute, not values."""
        return f"{self.check}:{self.attribute}"


@dataclasses.dataclass
class Conversion:
    """What a check sees: the real tensors, in the order given by the user,
    their converted counterparts, and the converter that made them.

    ``order``: the order the tensors were converted in (the ``memo`` check
    converts them again in it).  ``before`` / ``after``: snapshots of the
    real tensors and of torch's global state taken just before and just
    after the conversion (see :mod:`.purity`; filled in by
    :func:`~pytest_metafidelity.faithful.check_faithful`).  ``inner``: True
    for the conversions the ``wrappers`` check builds for subclass inner
    tensors.  ``release_probes``: where a check that must see the converted
    tensors dropped (``memo``: released when no longer referenced) leaves a
    probe instead of converting everything again; the owner of the converted
    tensors (:func:`~pytest_metafidelity.faithful.check_faithful`) drops
    them, with this Conversion, and calls each probe.  None: the check does
    it on its own."""

    names: tuple[str, ...]
    real: tuple[Any, ...]
    fake: tuple[Any, ...]
    converter: Any
    order: tuple[int, ...] | None = None
    before: Any = None
    after: Any = None
    inner: bool = False
    release_probes: list[Callable[[], list["Mismatch"]]] | None = None
    program: Any = None

    def pairs(self) -> Iterator[tuple[str, Any, Any]]:
        return iter(zip(self.names, self.real, self.fake))


CheckFn = Callable[[Conversion], list[Mismatch]]


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    name: str
    summary: str
    fn: CheckFn


_CHECKS: dict[str, CheckSpec] = {}
_loaded = False


def check(name: str, summary: str) -> Callable[[CheckFn], CheckFn]:
    """Decorator registering a check under a short, stable ``name``."""

    def register(fn: CheckFn) -> CheckFn:
        if name in _CHECKS:
            raise ValueError(f"check {name!r} is registered twice")
        _CHECKS[name] = CheckSpec(name, summary, fn)
        return fn

    return register


def all_checks() -> dict[str, CheckSpec]:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in CHECK_MODULES:
            importlib.import_module(f"{__name__}.{module}")
    # In CHECK_MODULES order, whichever module was imported first.
    rank = {f"{__name__}.{m}": i for i, m in enumerate(CHECK_MODULES)}
    return dict(sorted(_CHECKS.items(), key=lambda kv: rank.get(kv[1].fn.__module__, len(rank))))


def run_checks(conversion: Conversion, names: list[str] | None = None) -> list[Mismatch]:
    """Run the named checks (default: all); a check that crashes is itself
    reported as a mismatch rather than hiding the others."""
    registry = all_checks()
    found: list[Mismatch] = []
    for name in names or list(registry):
        try:
            found.extend(registry[name].fn(conversion))
        except Exception as e:  # a crash is a finding, not a test-session crash
            found.append(Mismatch(name, "*", "check raised", "-", f"{type(e).__name__}: {e}"))
    return found
