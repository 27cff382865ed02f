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
``behaviour`` (a program of views, in-place ops and autograd acts alike),
``reconvert`` (converted again after an in-place change, the fake is current).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    import torch

    from ..converters import Converter
    from ..strategies.programs import Program
    from .purity import Snapshot

# Modules defining checks, in report order.
CHECK_MODULES = (
    "metadata", "oracle", "aliasing", "storage", "memo", "autograd", "sparse", "wrappers",
    "purity", "behaviour", "reconvert",
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
    real: tuple["torch.Tensor", ...]
    # None where the conversion has not made it (it raised)
    fake: tuple["torch.Tensor | None", ...]
    # a Converter; the behaviour check passes a stand-in with its attributes
    converter: "Converter | Any"
    order: tuple[int, ...] | None = None
    before: "Snapshot | None" = None
    after: "Snapshot | None" = None
    inner: bool = False
    release_probes: list[Callable[[], list["Mismatch"]]] | None = None
    program: "Program | None" = None

    def pairs(self) -> Iterator[tuple[str, "torch.Tensor", "torch.Tensor | None"]]:
        return iter(zip(self.names, self.real, self.fake))

    def __repr__(self) -> str:
        """The tensors' metadata, never their values: a traceback that shows
        a check's arguments prints this, and torch's repr of a tensor whose
        storage holds no bytes segfaults."""
        converter = getattr(self.converter, "name", type(self.converter).__name__)
        real = ", ".join(_outline(t) for t in self.real)
        fake = ", ".join(_outline(t) for t in self.fake)
        return (f"Conversion(names={self.names!r}, converter={converter!r}, "
                f"real=({real}), fake=({fake}))")


def _outline(t: Any) -> str:
    """``Tensor(size=..., dtype=..., device=...)``, read without touching data."""
    if t is None:
        return "None"
    try:
        return (f"{type(t).__name__}(size={tuple(t.shape)}, dtype={t.dtype}, "
                f"device={t.device})")
    except Exception as e:  # a tensor whose metadata cannot be read
        return f"{type(t).__name__}(<{type(e).__name__}>)"


CheckFn = Callable[[Conversion], list[Mismatch]]


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    """A registered check.  ``default``: run when no checks are named
    (``--metafidelity-checks``, ``checks=``); an opt-in check (False) runs
    only where named -- one whose every finding on stock torch is a known
    difference by design, say, which would otherwise turn every outcome
    into ``known-difference``."""

    name: str
    summary: str
    fn: CheckFn
    default: bool = True


_CHECKS: dict[str, CheckSpec] = {}
_loaded = False


def check(name: str, summary: str, *, default: bool = True) -> Callable[[CheckFn], CheckFn]:
    """Decorator registering a check under a short, stable ``name``;
    ``default=False`` makes it opt-in (:class:`CheckSpec`)."""
    if not isinstance(default, bool):
        raise TypeError(f"check({name!r}): default={default!r}; expected True or False")

    def register(fn: CheckFn) -> CheckFn:
        if name in _CHECKS:
            raise ValueError(f"check {name!r} is registered twice")
        _CHECKS[name] = CheckSpec(name, summary, fn, default)
        return fn

    return register


# The registered checks as all_checks() last ordered them: (the specs it
# was ordered from, the ordered dict).
_ORDERED: list[tuple[tuple[CheckSpec, ...], dict[str, CheckSpec]]] = []


def all_checks() -> dict[str, CheckSpec]:
    """The registered checks, in CHECK_MODULES order (whichever module was
    imported first), then those registered elsewhere.  A copy: ordered again
    only when the registrations change."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in CHECK_MODULES:
            importlib.import_module(f"{__name__}.{module}")
    specs = tuple(_CHECKS.values())
    if not _ORDERED or len(specs) != len(_ORDERED[0][0]) or any(
            a is not b for a, b in zip(specs, _ORDERED[0][0])):
        rank = {f"{__name__}.{m}": i for i, m in enumerate(CHECK_MODULES)}
        ordered = dict(sorted(_CHECKS.items(),
                              key=lambda kv: rank.get(kv[1].fn.__module__, len(rank))))
        _ORDERED[:] = [(specs, ordered)]
    return dict(_ORDERED[0][1])


def default_checks() -> list[str]:
    """The checks run when none are named, in report order: every
    registered check but the opt-in ones."""
    return [name for name, spec in all_checks().items() if spec.default]


class CheckCrashed(Exception):
    """A check raised instead of returning its mismatches: a bug in the check
    (or in the code it calls), never a finding about torch.  Chained to what
    the check raised (``__cause__``)."""

    def __init__(self, check: str) -> None:
        super().__init__(f"internal error in check {check!r}")
        self.check = check


@dataclasses.dataclass(frozen=True)
class InternalError:
    """A check that crashed: ``error`` is what it raised, with its traceback.
    Kept apart from :class:`Mismatch` so that no known difference can ever
    explain it away."""

    check: str
    error: BaseException

    @property
    def signature(self) -> str:
        return f"internal-error:{self.check}:{type(self.error).__name__}"

    def traceback(self) -> str:
        """The traceback from the check's own frame down (and anything the
        error is chained to)."""
        import traceback

        tb = self.error.__traceback__
        # run_checks' own frame says nothing about the crash.
        while tb is not None and tb.tb_frame.f_locals.get("__tracebackhide__"):
            tb = tb.tb_next
        return "".join(traceback.format_exception(type(self.error), self.error, tb))

    def describe(self) -> str:
        return (f"[internal error in check {self.check!r}] a bug in pytest-metafidelity or in "
                f"a registered check, not a difference in torch:\n"
                + "    " + self.traceback().rstrip().replace("\n", "\n    "))


def run_checks(conversion: Conversion, names: list[str] | None = None,
               internal_errors: list[InternalError] | None = None) -> list[Mismatch]:
    """Run the named checks (default: :func:`default_checks`) and return
    their mismatches.

    A check that raises is an internal error, not a mismatch: with
    ``internal_errors`` given, it is appended there and the other checks
    still run; without, :class:`CheckCrashed` is raised, chained to the
    check's exception."""
    __tracebackhide__ = True
    registry = all_checks()
    found: list[Mismatch] = []
    for name in names or default_checks():
        try:
            found.extend(registry[name].fn(conversion))
        except Exception as e:
            if internal_errors is None:
                raise CheckCrashed(name) from e
            internal_errors.append(InternalError(name, e))
    return found
