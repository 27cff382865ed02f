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
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence

from ..findings import (CheckCrashed, InternalError, Mismatch, RealExtent, Reconverted,
                        StepCase, StepDifference)

if TYPE_CHECKING:
    import torch

    from ..converters import Converter
    from ..snapshots import Snapshot
    from ..strategies.programs import Program
    from ..strategies.recipe import FunctionRecipe, Recipe

__all__ = [
    "CHECK_MODULES", "CheckCrashed", "CheckFn", "CheckSpec", "Conversion", "InternalError",
    "Judge", "Mismatch", "all_checks", "check", "check_modules", "default_checks", "run_checks",
]

# The report order of the built-in checks' modules.  Every other module of
# this package whose name does not start with "_" is found and imported too,
# after these, by name (the checks it defines register on import): adding a
# check is its module and its row in the README's table, no list.
CHECK_MODULES = (
    "metadata", "oracle", "aliasing", "storage", "memo", "autograd", "sparse", "wrappers",
    "purity", "behaviour", "reconvert",
)


def check_modules() -> list[str]:
    """The modules of this package that define checks: CHECK_MODULES, then
    every other public module found in the package's folders, by name."""
    import pkgutil

    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return [*CHECK_MODULES, *(m for m in found if m not in CHECK_MODULES)]


class Judge(Protocol):
    """What the ``behaviour`` check asks of the registry of known
    differences while a program runs: which differences present before the
    first step are known (what a step on those tensors then does follows
    from them), and which operator differences a step's differences are.
    Whoever runs the check hands one over on the :class:`Conversion`
    (``check_faithful``: the registry's, for the converter), so that no
    check imports the registry: data flows one way.  What it raises is an
    internal error of the check that asked."""

    def explain(self, mismatches: list[Mismatch], conversion: "Conversion", checks: set[str]
                ) -> tuple[list[tuple[str, Mismatch]], list[Mismatch]]:
        """(entry id, mismatch) for each of ``mismatches`` a known difference
        explains (``checks``: those that ran), and the others."""
        ...

    def operator_differences(self, statement: str, mismatches: Sequence[Mismatch], *,
                             without_control: bool = False,
                             real_extents: dict[str, RealExtent | None] | None = None
                             ) -> list[str] | None:
        """The name of the operator difference each of a step's differences
        is (``statement``: the step's source), where the control shows it
        too (``without_control``: none could be built, and only the step's
        errors decide); None unless every one is explained."""
        ...

    def expected(self, step: StepCase) -> list[str]:
        """The ids of the entries whose ``on_step`` condition holds for
        ``step``: the step must show their difference."""
        ...


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
    it on its own.  ``program``: the program the ``behaviour`` check runs;
    ``judge``: what it asks of the registry of known differences (a
    :class:`Judge`; None: nothing is known, no operator difference registered).
    ``recipe``: the recipe that rebuilds the real tensors (the ``behaviour``
    and ``reconvert`` checks run on copies it makes), or the function
    ``check_faithful(remake=...)`` was given (a ``FunctionRecipe``); None where it could
    not be written, or for a Conversion built by hand (the checks then
    write it from the tensors)."""

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
    recipe: "Recipe | FunctionRecipe | None" = None
    judge: Judge | None = None
    # What the program checks saw, for their known differences to read
    # (:mod:`..findings`): ``behaviour`` records the steps' differences no
    # control explained, the ids of the known differences a differing step
    # followed from, the carried tensors read where their storage was never
    # copied, and the operator differences it attributed steps to;
    # ``reconvert``, each second conversion.
    behaviour_differences: set[StepDifference] = dataclasses.field(default_factory=set)
    behaviour_follows: set[str] = dataclasses.field(default_factory=set)
    behaviour_uncopied_reads: set[str] = dataclasses.field(default_factory=set)
    # (entry id, step index): a step the judge said must show the entry's difference
    behaviour_expected: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    op_differences: set[str] = dataclasses.field(default_factory=set)
    reconvert_records: list[Reconverted] = dataclasses.field(default_factory=list)
    # Why the ``behaviour`` check did not run a program that has steps (the
    # copies of the real side could not be made): the outcome says so.
    program_not_run: str | None = None

    def pairs(self) -> Iterator[tuple[str, "torch.Tensor", "torch.Tensor | None"]]:
        return iter(zip(self.names, self.real, self.fake))

    def tensor_at(self, path: str, *, fake: bool = False) -> Any:
        """The real (``fake=True``: converted) tensor at ``path`` ("t0",
        "t0._base.grad", "t1.a", "t0.real_tensor", "t0.unwrapped"), or None
        where there is none."""
        from ._util import resolve

        return resolve(self, path, fake=fake)

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
    # True: the check changes the converted tensors it is handed (it runs
    # programs on them).  It runs after every other check, and the known
    # differences judge the other checks' findings before it runs.
    mutates: bool = False


_CHECKS: dict[str, CheckSpec] = {}
_loaded = False


def check(name: str, summary: str, *, default: bool = True,
          mutates: bool = False) -> Callable[[CheckFn], CheckFn]:
    """Decorator registering a check under a short, stable ``name``;
    ``default=False`` makes it opt-in, ``mutates=True`` says it changes the
    converted tensors (:class:`CheckSpec`)."""
    for argument, value in (("default", default), ("mutates", mutates)):
        if not isinstance(value, bool):
            raise TypeError(f"check({name!r}): {argument}={value!r}; expected True or False")

    def register(fn: CheckFn) -> CheckFn:
        if name in _CHECKS:
            raise ValueError(f"check {name!r} is registered twice")
        _CHECKS[name] = CheckSpec(name, summary, fn, default, mutates)
        return fn

    return register


# The registered checks as all_checks() last ordered them: (the specs it
# was ordered from, the ordered dict).
_ORDERED: list[tuple[tuple[CheckSpec, ...], dict[str, CheckSpec]]] = []


def all_checks() -> dict[str, CheckSpec]:
    """The registered checks, in the order of :func:`check_modules`
    (whichever module was imported first), then those registered elsewhere.
    A copy: ordered again only when the registrations change."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in check_modules():
            importlib.import_module(f"{__name__}.{module}")
    specs = tuple(_CHECKS.values())
    if not _ORDERED or len(specs) != len(_ORDERED[0][0]) or any(
            a is not b for a, b in zip(specs, _ORDERED[0][0])):
        rank = {f"{__name__}.{m}": i for i, m in enumerate(check_modules())}
        ordered = dict(sorted(_CHECKS.items(),
                              key=lambda kv: rank.get(kv[1].fn.__module__, len(rank))))
        _ORDERED[:] = [(specs, ordered)]
    return dict(_ORDERED[0][1])


def default_checks() -> list[str]:
    """The checks run when none are named, in report order: every
    registered check but the opt-in ones."""
    return [name for name, spec in all_checks().items() if spec.default]


def mutating_checks(names: Sequence[str]) -> list[str]:
    """Those of ``names`` that change the converted tensors (``CheckSpec.mutates``)."""
    registry = all_checks()
    return [n for n in names if n in registry and registry[n].mutates]


def reading_first(names: Sequence[str]) -> list[str]:
    """``names`` with the checks that change the converted tensors last,
    each group in its given order."""
    mutating = mutating_checks(names)
    return [n for n in names if n not in mutating] + mutating


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
    for name in reading_first(names or default_checks()):
        try:
            found.extend(registry[name].fn(conversion))
        except Exception as e:
            if internal_errors is None:
                raise CheckCrashed(name) from e
            internal_errors.append(InternalError(name, e))
    return found
