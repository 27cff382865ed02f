"""`behaviour`: the converted tensors act like the real ones under a program.

Every other check compares real and converted tensors at one instant, right
after conversion; ``torch.compile`` then *runs* a program on the fakes.
This check runs a short program (:mod:`pytest_metafidelity.strategies.programs`:
views, in-place ops, autograd, under no_grad / inference_mode /
enable_grad) on both sides in lockstep and, after every step, requires:

* the step raised on both sides or on neither, with the same exception class;
  a step that runs past :func:`.step_time_limit.current_limit` (20 s) on one
  side is stopped there and reported as ``timed out`` (where it was stopped,
  real vs fake), not left to hang the example;
* for every live tensor (the tensors under test and the tensors the program
  made, with what they reach), the fields the ``oracle`` and ``aliasing``
  checks compare -- their own code runs on the live tensors -- including,
  for converters that carry real tensors, the carried tensors' values; and
  the ``retains_grad`` of non-leaves (the ``autograd`` check's reading);
* the same ``_version`` bumps.

Differences already present before the first step are the instantaneous
checks' business (and the known differences'): only the differences a step
introduces count.  A step on tensors that a known difference already
separates, and that then differs, follows from it
(``behaviour-follows-known-difference``; what a step made or changed carries
the difference on, and an in-place step changes every view of the same
base as the tensors it names, their histories too) -- except where that difference is
only a storage's size and the step does not depend on the storage's extent
(no ``as_strided``, ``set_``, ``resize_`` or storage access): a backward's
gradient or a view's shape cannot follow from it; nor, where it is only a
sparse fake's count of elements, what a step makes whatever the elements
(``coalesce()``'s result is coalesced).  The real side runs on a
copy rebuilt from the tensors' recipe (their storages' bytes copied over);
the converted side is the conversion's own converted tensors, which the
program changes: the check is registered ``mutates=True``, so it runs after
every other check and after the known differences judged their findings.
Neither side may change the user's tensors: after the program they must be
exactly as before (values, version, metadata; the ``purity`` reading).

Before the converted side runs a step, the check asks its judge which
registered differences the step must show (an entry's ``on_step``
condition, given the real side's tensors as the step left them) and
records them on the conversion (``behaviour_expected``): the triage then
finds an entry whose step did not differ at all unexpectedly passing.

Conversion bug or operator difference?  When a step differs, the same
program runs on a *control*: the tensors built by the recipe directly under
a ``FakeTensorMode`` (on the ``meta`` device for the ``meta`` converter),
never converted.  If the control differs from the real tensors the same
way, the difference is the operator's (its meta kernel or fake impl), not
the conversion's: it is judged against the registry of operator differences
(:mod:`pytest_metafidelity.known_differences.definitions.operators`), which
the check asks through the conversion's ``judge`` (:class:`~.Judge`, handed
over by ``check_faithful``; the check imports no registry), and reported
as ``op-difference <id>`` -- a known difference -- or, unregistered, as a
failing ``op-difference: <attribute>``.  Otherwise it is a conversion bug.

The check needs a program (``Conversion.program``): the suite draws one per
example, ``assert_faithful(..., programs=N)`` runs N seeded ones, and
``assert_faithful(..., program=SOURCE)`` replays one.  Without a program,
or where programs do not apply (functional and functorch wrappers, meta
tensors, tensors whose recipe cannot rebuild them: ``why_no_programs``), it
reports nothing.  Sparse, nested jagged and wrapper subclass tensors run
programs of their layout's own vocabulary; what a sparse fake cannot have
(its specified elements: ``sparse-nnz``) is a known difference at the
start, so a step reading ``values()`` follows from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .. import snapshots
from ..converters import clear_dispatch_cache
from ..findings import RealExtent, StepCase, StepDifference
from ..strategies.described import recipe_for
from ..strategies.programs import run_step, why_no_programs
from ..strategies.recipe import raised_by_recipe
from ..strategies.tensor_facts import (creation_meta, functional_value, inner_tensors,
                                       is_zero_tensor, plain_strided, storage_key,
                                       version_partition)
from . import Conversion, Judge, Mismatch, check, step_time_limit
from ._util import quiet_fake_tensor_log, walk_real

if TYPE_CHECKING:
    import torch

    from ..converters import Converter
    from ..strategies.programs import Program, Step
    from ..strategies.recipe import FunctionRecipe, Recipe

CHECK = "behaviour"
# The attribute of a step that ran past the step time limit on one side
# (:mod:`.step_time_limit`) and not on the other.
TIMED_OUT = "timed out"


@dataclasses.dataclass(frozen=True)
class StepMismatch(Mismatch):
    """A difference a program step introduced; ``step`` is its index."""

    step: int = -1


def first_differing_step(mismatches: Sequence[Mismatch]) -> int | None:
    steps = [m.step for m in mismatches if isinstance(m, StepMismatch) and m.step >= 0]
    return min(steps) if steps else None


# -- one side of the lockstep ------------------------------------------------------------------


@dataclasses.dataclass
class Side:
    """The tensors a program runs on, and how to run a step on them."""

    namespace: dict[str, Any]
    live: list[str]
    mode: Any = None  # entered around each step (a FakeTensorMode), or None

    @classmethod
    def of(cls, names: Sequence[str], tensors: Sequence[torch.Tensor], mode: Any = None) -> "Side":
        import torch

        return cls({"torch": torch, **dict(zip(names, tensors))}, list(names), mode)

    def tensors(self, names: Sequence[str]) -> tuple[Any, ...]:
        return tuple(self.namespace.get(n) for n in names)

    def run(self, step: Step) -> BaseException | None:
        with quiet_fake_tensor_log(), (self.mode if self.mode is not None
                                         else contextlib.nullcontext()):
            return step_time_limit.run_within(step_time_limit.current_limit(),
                                              lambda: run_step(step, self.namespace))


def _versions(tensors: Sequence[torch.Tensor]) -> list[int | None]:
    out: list[int | None] = []
    for t in tensors:
        try:
            out.append(int(t._version))
        except Exception:
            out.append(None)
    return out


def _message(e: BaseException) -> str:
    """The first line of the message, lower case, without numbers, SymInt
    names and punctuation."""
    import re

    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return " ".join(re.sub(r"\b[su]\d+\b|[^a-z ]", " ", first.lower()).split())


def same_error(a: BaseException | None, b: BaseException | None) -> bool:
    """Both None, or errors of one class saying much the same: sizes, SymInt
    names and the name of the view op (fakes re-create views as
    ``as_strided``) differ between real and fake messages; which rule was
    broken does not."""
    if a is None or b is None:
        return a is None and b is None
    if type(a) is not type(b):
        return False
    import difflib

    return difflib.SequenceMatcher(None, _message(a), _message(b), autojunk=False).ratio() >= 0.6


def _raised(e: BaseException | None) -> str:
    """``"Type: first line of the message"``, or ``"nothing"``."""
    if e is None:
        return "nothing"
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


class _ReadAs:
    """Stands in for the converter when comparing: its fake device and
    whether it carries real tensors."""

    def __init__(self, converter: Any, carries_real: bool | None = None) -> None:
        self.converter = converter
        self.carries_real = (bool(getattr(converter, "carries_real", False))
                             if carries_real is None else carries_real)
        self.symbolic = bool(getattr(converter, "symbolic", False))

    def fake_device(self, real: Any) -> Any:
        fn = getattr(self.converter, "fake_device", None)
        return fn(real) if fn is not None else real.device


def compare_live(names: Sequence[str], real: Sequence[torch.Tensor], other: Sequence[torch.Tensor],
                 reader: Any) -> list[Mismatch]:
    """The ``oracle``, ``aliasing`` and ``sparse`` checks on the live tensors."""
    from .aliasing import aliasing_check
    from .oracle import oracle_check
    from .sparse import sparse_check

    conv = Conversion(tuple(names), tuple(real), tuple(other), reader)
    found: list[Mismatch] = []
    # (a dynamic sparse fake's _nnz() logs its internal assert)
    with quiet_fake_tensor_log():
        for fn in (oracle_check, aliasing_check, sparse_check):
            # A crash here is an internal error of the behaviour check (run_checks
            # reports it with its traceback), not a difference.
            found += fn(conv)
    return found + _retains_grad(conv)


def _retains_grad(conv: Conversion) -> list[Mismatch]:
    """``retains_grad`` of the non-leaves (the ``autograd`` check's reading):
    a ``retain_grad()`` that does not take on a converted non-leaf shows at
    once, not only where a later backward and a ``.grad`` read follow it."""
    from ._util import related, safe

    found = []
    for path, r, o in related(conv, inner=False):
        if safe(lambda: r.is_leaf) is False:
            rr, orr = safe(lambda: r.retains_grad), safe(lambda: o.retains_grad)
            if rr != orr:
                found.append(Mismatch(check=CHECK, path=path, attribute="retains_grad",
                                      real=rr, fake=orr))
    return found


# Attributes of partitions: the aliasing check names only the first tensor
# whose block differs, which a step may change without changing the partition.
PARTITIONS = ("storage identity", "object identity", "version counter sharing",
              "carried real_tensor storage identity")


def _key(m: Mismatch) -> tuple[str, str]:
    return ("*" if m.attribute in PARTITIONS else m.path, m.attribute)


@dataclasses.dataclass
class Lockstep:
    """A program run on the real tensors and on another side, compared
    after every step against the differences present before the first."""

    names: tuple[str, ...]
    real: Side
    other: Side
    reader: Any
    baseline: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    # Tensors whose version counter is shared differently before the first
    # step (the ``aliasing`` check's business): their bumps are not compared.
    unshared: set[str] = dataclasses.field(default_factory=set)
    known_sharing: bool = False
    # The order the tensors were converted in (known-difference predicates read it).
    order: tuple[int, ...] | None = None
    # Ids of the known differences at the start that are only a storage's
    # size, and only a sparse tensor's count of elements (``known_at_start``).
    storage_size_only: set[str] = dataclasses.field(default_factory=set)
    elements_only: set[str] = dataclasses.field(default_factory=set)
    # What is asked of the registry of known differences (None: nothing is known).
    judge: Judge | None = None
    # The converted tensors' names (``StepCase.inputs``), and the ids of the
    # entries the judge said the last step must show (``Judge.expected``).
    inputs: tuple[str, ...] = ()
    expected: list[str] = dataclasses.field(default_factory=list)

    def compare(self) -> list[Mismatch]:
        live = [n for n in self.real.live if n in self.other.live]
        return compare_live(live, self.real.tensors(live), self.other.tensors(live), self.reader)

    def start(self) -> None:
        found = self.compare()
        self.found_at_start = found
        self.baseline = {_key(m) for m in found}
        sharing = [m for m in found if m.attribute == "version counter sharing"]
        if sharing and self._known(sharing):
            self.known_sharing = True
            live = self.real.live
            self.unshared = _version_groups_differ(live, self.real.tensors(live),
                                                   self.other.tensors(live))

    def _known(self, mismatches: list[Mismatch]) -> bool:
        """Whether known differences explain every one of ``mismatches``
        (then what follows from them is not a new difference)."""
        return not self._explain(mismatches, {"aliasing"})[1]

    def _explain(self, mismatches: list[Mismatch], checks: set[str]
                 ) -> tuple[list[tuple[str, Mismatch]], list[Mismatch]]:
        """The judge's (:class:`~.Judge`) explained and unexplained ``mismatches``."""
        if self.judge is None:
            return [], list(mismatches)
        live = [n for n in self.real.live if n in self.other.live]
        order = self.order if self.order is not None and len(self.order) == len(live) else None
        conv = Conversion(tuple(live), self.real.tensors(live), self.other.tensors(live),
                          self.reader, order=order)
        # (a crash in the judge is ours: an internal error of this check)
        return self.judge.explain(mismatches, conv, checks)

    def known_at_start(self) -> dict[str, set[str]]:
        """Tensor name -> ids of the known differences it (or what it
        reaches) shows before the first step, by the ``oracle``,
        ``aliasing``, ``storage``, ``autograd`` and ``sparse`` readings (a
        sparse fake has no specified elements: its ``values()`` differ) and
        the ``wrappers`` check's own (a functorch wrapper whose level is
        gone converts to a plain tensor: what ops on it do differs), with
        the storage, autograd and oracle readings of the tensor inside a functorch
        wrapper or a C++ functional tensor."""
        from .autograd import autograd_check
        from .oracle import oracle_check
        from .sparse import sparse_check
        from .storage import storage_check
        from .wrappers import unwrapped_values, wrapping_mismatches

        live = [n for n in self.real.live if n in self.other.live]
        conv = Conversion(tuple(live), self.real.tensors(live), self.other.tensors(live),
                          self.reader, order=self.order)
        found = list(self.found_at_start)
        with quiet_fake_tensor_log():  # (a dynamic sparse fake's _nnz() logs its assert)
            for fn in (storage_check, autograd_check, sparse_check, wrapping_mismatches):
                found += fn(conv)  # (a crash is ours: an internal error of this check)
            # and the tensor inside a functorch wrapper or a C++ functional
            # tensor (the wrappers check reads it): its autograd state, which
            # ops on the wrapper act on, and its storage, which
            # functionalization writes whole
            for path, rv, fv in unwrapped_values(conv):
                inner = Conversion((path,), (rv,), (fv,), self.reader, inner=True)
                found += storage_check(inner) + autograd_check(inner) + oracle_check(inner)
        explained = (self._explain(found, {"oracle", "aliasing", "storage", "autograd", "sparse",
                                           "wrappers"})[0]
                     if found else [])
        known: dict[str, set[str]] = {}
        attributes: dict[str, set[str]] = {}  # entry id -> what it explained
        for entry_id, m in explained:
            attributes.setdefault(entry_id, set()).add(m.attribute)
            known.setdefault(m.path.split(".")[0], set()).add(entry_id)
            if m.attribute == "version counter sharing":
                # (the aliasing check names one tensor: all whose counter differs)
                for name in self.unshared:
                    known.setdefault(name.split(".")[0], set()).add(entry_id)
        # A view of a tensor with a known difference carries it too: of the
        # tensor named, or of the one at the difference's path (a base that
        # several views share is named through the first of them).
        from ._util import resolve

        by_object: dict[int, set[str]] = {}
        for n, ids in known.items():
            if n in self.real.namespace:
                by_object.setdefault(id(self.real.namespace[n]), set()).update(ids)
        for entry_id, m in explained:
            at = resolve(conv, m.path)
            if at is not None:
                by_object.setdefault(id(at), set()).add(entry_id)
        for n in live:
            for u in (self.real.namespace.get(n), *_bases(self.real.namespace.get(n))):
                if u is not None and id(u) in by_object:
                    known.setdefault(n, set()).update(by_object[id(u)])
        # The differences that are only a storage's size: a later step shows
        # them only where it depends on the storage's extent.
        self.storage_size_only = {i for i, a in attributes.items() if a <= STORAGE_SIZE}
        # and only the count of a sparse tensor's elements: a later step's
        # outcome that holds whatever the elements (``HOLDS_WHATEVER_THE_ELEMENTS``)
        # does not follow from them.
        self.elements_only = {i for i, a in attributes.items() if a <= ELEMENT_COUNT}
        return known

    def _expected(self, step: Step, raised_real: BaseException | None) -> list[str]:
        """The judge's entries that ``step`` must show (:meth:`~.Judge.expected`),
        asked once the real side ran it and before the other side does."""
        if self.judge is None:
            return []
        name = getattr(getattr(self.reader, "converter", None), "name", "?")
        return self.judge.expected(StepCase(
            name, step.statement, step.context,
            {n: self.real.namespace.get(n) for n in self.real.live},
            {n: self.other.namespace.get(n) for n in self.other.live}, self.inputs,
            None if raised_real is None else _raised(raised_real)))

    def step(self, step: Step) -> list[Mismatch]:
        """Run ``step`` on both sides; the differences it introduced."""
        import torch

        live = [n for n in self.real.live if n in self.other.live]
        before_real = _versions(self.real.tensors(live))
        before_other = _versions(self.other.tensors(live))
        raised_real = self.real.run(step)
        self.expected = self._expected(step, raised_real)
        raised_other = self.other.run(step)
        found: list[Mismatch] = []
        if not same_error(raised_real, raised_other):
            # What differs afterwards follows from it: the step is the difference.
            # One side stopped at the step time limit: not an error of its own
            # (whether the control "differs the same way" asks whether it timed out too).
            stopped = any(isinstance(e, step_time_limit.StepTimeout)
                          for e in (raised_real, raised_other))
            return [Mismatch(
                check=CHECK, path=step.output or "*",
                attribute=TIMED_OUT if stopped else "raised",
                real=_raised(raised_real), fake=_raised(raised_other))]
        out = step.output
        if out is not None:
            r, o = self.real.namespace.get(out), self.other.namespace.get(out)
            if raised_real is None and isinstance(r, torch.Tensor):
                self.real.live.append(out)
            if raised_other is None and isinstance(o, torch.Tensor):
                self.other.live.append(out)
            if raised_real is None and raised_other is None and (
                    isinstance(r, torch.Tensor) != isinstance(o, torch.Tensor)):
                found.append(Mismatch(
                    check=CHECK, path=out, attribute="result is a tensor",
                    real=isinstance(r, torch.Tensor), fake=isinstance(o, torch.Tensor)))
        if self.known_sharing:
            self.unshared = _version_groups_differ(live, self.real.tensors(live),
                                                   self.other.tensors(live))
        for name, a0, b0, a1, b1 in zip(live, before_real, before_other,
                                        _versions(self.real.tensors(live)),
                                        _versions(self.other.tensors(live))):
            if a0 is None or b0 is None or a1 is None or b1 is None or name in self.unshared:
                continue
            if a1 - a0 != b1 - b0:
                found.append(Mismatch(
                    check=CHECK, path=name, attribute="_version bump", real=a1 - a0, fake=b1 - b0,
                    detail="an in-place op bumps the version counter of every alias"))
        found += [m for m in self.compare() if _key(m) not in self.baseline]
        return found


def _bases(t: torch.Tensor | None) -> list[torch.Tensor]:
    """``t._base``, its ``_base``, ... (a view's base is not a view)."""
    from ._util import base_of

    out: list[torch.Tensor] = []
    b = base_of(t) if t is not None else None
    while b is not None and len(out) < 8:
        out.append(b)
        b = base_of(b)
    return out


def _version_groups_differ(names: Sequence[str], real: Sequence[torch.Tensor],
                           other: Sequence[torch.Tensor]) -> set[str]:
    """Names whose version-counter group (the tensors sharing its counter)
    is not the same on both sides."""
    r, o = version_partition(list(real)), version_partition(list(other))

    def group(labels: list[Any], i: int) -> frozenset[int]:
        return frozenset(j for j, x in enumerate(labels) if x is not None and x == labels[i])

    return {n for i, n in enumerate(names) if group(r, i) != group(o, i)}


# -- real copies and controls ------------------------------------------------------------------


def _copy_bytes(originals: Sequence[torch.Tensor], copies: Sequence[torch.Tensor], names: Sequence[str]) -> None:
    """Give the rebuilt copies the originals' storage bytes (recipes may
    leave storages uninitialized)."""
    import torch

    pairs = dict(walk_real(names, copies))
    done: set[int] = set()
    for path, t in walk_real(names, originals):
        c = pairs.get(path)
        values = (functional_value(t), functional_value(c))
        if values[0] is not None and values[1] is not None:
            # (a C++ functional tensor's storage cannot be copied: its value's can)
            t, c = values
        # (a wrapper subclass's bytes are its inner tensors', walked too; a
        # sparse tensor has no storage of its own; a zero tensor's storage
        # holds no data)
        if c is None or not plain_strided(t) or not plain_strided(c) or is_zero_tensor(t):
            continue
        src, dst = t.untyped_storage(), c.untyped_storage()
        if id(dst) in done or src.nbytes() != dst.nbytes() or src.device.type == "meta":
            continue
        done.add(id(dst))
        with torch.no_grad(), torch.inference_mode(False):
            dst.copy_(src)


def rebuild(recipe: Recipe | FunctionRecipe, originals: Sequence[torch.Tensor], names: Sequence[str]) -> Any:
    """Copies of the user's tensors (the real side), or None when the recipe
    does not rebuild them faithfully (:func:`rebuilt_or_why_not`)."""
    return rebuilt_or_why_not(recipe, originals, names)[0]


def rebuilt_or_why_not(recipe: Recipe | FunctionRecipe, originals: Sequence[torch.Tensor],
                       names: Sequence[str]) -> tuple[Any, str | None]:
    """(copies of the user's tensors, None), or (None, why not) when the
    recipe does not rebuild them faithfully: torch refuses to run it again,
    or it makes other tensors.  What comparing them raises is our error, and
    propagates (an internal error of the check, never "no program")."""
    import torch

    try:
        made = recipe.build_again()
    except Exception as e:
        if not raised_by_recipe(e, recipe):
            raise  # ours: an internal error of the check
        # torch refused the recipe's code
        return None, f"making the tensors again raised {type(e).__name__}: {e}"[:500]
    copies, why = _as_copies(made, originals, names)
    if copies is None and any(torch._is_functional_tensor(t) for t in made if t is not None):
        # Converting a C++ functional tensor syncs it (``functional-sync-on-convert``):
        # its pending updates are applied, and regenerating it from its base
        # may give it other strides.  The copies are made as the conversion
        # left the originals.
        made = recipe.build_again()
        for t in made:
            if t is not None and torch._is_functional_tensor(t):
                torch._sync(t)
        copies, _ = _as_copies(made, originals, names)
    if copies is None:
        return None, f"the tensors made again differ from those given: {why}"[:500]
    return copies, None


def rebuilt_or_why(recipe: Recipe | FunctionRecipe, originals: Sequence[torch.Tensor], names: Sequence[str]
                   ) -> tuple[Any, str | None]:
    """(copies, None), or (None, how the copies ``recipe`` made differ from
    ``originals``); what building or reading them raises propagates."""
    return _as_copies(recipe.build_again(), originals, names)


def _as_copies(copies: Any, originals: Sequence[torch.Tensor], names: Sequence[str]
               ) -> tuple[Any, str | None]:
    if len(copies) != len(originals):
        return None, f"{len(copies)} tensors made, {len(originals)} given"
    # (a recipe described from tensors whose metadata could not be read,
    # such as a functorch wrapper handed over without its recipe, binds None)
    unmade = [name for name, c in zip(names, copies) if c is None]
    if unmade:
        return None, f"{', '.join(unmade)}: not made (the recipe could not describe it)"
    _copy_bytes(originals, copies, names)
    differ = compare_live(names, originals, copies, _ReadAs(None, False))
    if differ:
        m = differ[0]
        return None, f"{m.path}: {m.attribute}: given {m.real!r}, made {m.fake!r}"
    rebuilt = dict(walk_real(names, copies))
    for path, t in walk_real(names, originals):
        if path not in rebuilt:
            return None, f"{path}: not made"
        if creation_meta(t) != creation_meta(rebuilt[path]):
            return None, (f"{path}: creation meta: given {creation_meta(t)!r}, made "
                          f"{creation_meta(rebuilt[path])!r}")
    return copies, None


@contextlib.contextmanager
def _no_constants() -> Iterator[None]:
    """FakeTensorMode keeps the value of a one-element tensor literal
    (``torch.tensor(False)``) as the fake's ``constant`` and runs later ops
    on it for real; a converted fake never has one.  A control made like
    that would raise where the converted fake cannot (a bool ``mul_(2)``)."""
    from torch._subclasses import fake_tensor

    was = fake_tensor.CONSTANT_NUMEL_LIMIT
    fake_tensor.CONSTANT_NUMEL_LIMIT = -1
    try:
        yield
    finally:
        fake_tensor.CONSTANT_NUMEL_LIMIT = was


@contextlib.contextmanager
def _shared_memory_left_private() -> Iterator[None]:
    """``share_memory_()`` of a meta storage (a fake's, or one on the meta
    device) does nothing, where torch raises ('_share_fd_: only available on
    CPU'): which host memory a storage lives in is the allocator's state, no
    metadata of the tensors (``is_shared()`` is not compared), and a fake
    has none.  So a recipe that shares its storages (kind ``foreign_memory``,
    or a user's ``remake``) still makes a control."""
    import torch

    share = torch.UntypedStorage.share_memory_

    def share_memory_(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.device.type == "meta":
            return self
        return share(self, *args, **kwargs)

    torch.UntypedStorage.share_memory_ = share_memory_  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.UntypedStorage.share_memory_ = share  # type: ignore[method-assign]


def _control(recipe: Recipe | FunctionRecipe, meta: bool, carries_real: bool = False) -> tuple[Any, Any]:
    """The recipe's tensors made directly under a fresh FakeTensorMode (or
    on the meta device), not converted: (tensors, mode to run steps in).
    With ``carries_real``, the mode propagates real tensors, as the
    converter's does.  Like converted fakes, they carry no constants, and
    their storages stay in private memory."""
    with _no_constants(), _shared_memory_left_private():
        return _control_tensors(recipe, meta, carries_real)


def _control_tensors(recipe: Recipe | FunctionRecipe, meta: bool, carries_real: bool) -> tuple[Any, Any]:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    if meta:
        with torch.device("meta"):
            tensors = recipe.build_again()
        if all(t.device.type == "meta" for _, t in walk_real(recipe.outputs, tensors)):
            return tensors, None
    if carries_real:
        import torch._functorch.config as functorch_config

        with functorch_config.patch(fake_tensor_propagate_real_tensors=True):
            mode = FakeTensorMode(allow_non_fake_inputs=True)
        try:
            with mode:
                return recipe.build_again(), mode
        except Exception as e:
            if not raised_by_recipe(e, recipe):
                raise
            # a recipe real tensors cannot be propagated through: a plain control
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with mode:
            return recipe.build_again(), mode
    except Exception as e:
        if not raised_by_recipe(e, recipe):
            raise
        # Some tensors are only made under a mode with a ShapeEnv (a nested
        # jagged tensor's ragged size is a nested int): a control with one.
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
        with mode:
            return recipe.build_again(), mode


def _fake_mode(fakes: Sequence[torch.Tensor]) -> Any:
    """The FakeTensorMode the converted tensors belong to, looked for inside
    wrapper subclasses too: a wrapper of fakes (TwoTensor, a nested jagged
    tensor) has no mode of its own, and a step run outside the mode makes
    real tensors where it creates any (the zeros backward fills an unused
    gradient with), which the fakes then refuse."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    pending = list(fakes)
    while pending:
        f = pending.pop(0)
        mode = getattr(f, "fake_mode", None)
        if mode is not None:
            return mode
        if is_traceable_wrapper_subclass(f):
            pending.extend(inner for _, inner in inner_tensors(f))
    return None


# -- the check ---------------------------------------------------------------------------------


@check(CHECK, "random programs of views, in-place ops and autograd act alike on real and fake",
       mutates=True)
def behaviour_check(conv: Conversion) -> list[Mismatch]:
    program = getattr(conv, "program", None)
    if program is None or not program.steps or conv.inner:
        return []
    if any(f is None for f in conv.fake):
        return []  # (the conversion raised: that is the finding)
    why = why_no_programs(conv.real)
    names = tuple(program.inputs)  # the program's names for the tensors, in order
    if why is None and len(names) != len(conv.real):
        why = f"it runs on {len(names)} tensor(s), {len(conv.real)} were converted"
    if why is not None:
        conv.program_not_run = why
        return []
    recipe = conv.recipe if conv.recipe is not None else recipe_for(conv.real)
    copies, why = rebuilt_or_why_not(recipe, conv.real, recipe.outputs)
    if copies is None:
        conv.program_not_run = why
        return []
    # The program runs on the conversion's own converted tensors and changes
    # them: this check runs after every other and after the known
    # differences judged their findings (``mutates=True``).  The dispatch
    # cache is emptied first, so that what the other checks ran under the
    # mode cannot change a step's outcome (a reproducer runs this check alone).
    clear_dispatch_cache()
    fakes = tuple(f for f in conv.fake if f is not None)  # (all of them: checked above)
    before = snapshots.capture(names, tuple(conv.real))
    return _run_program(conv, recipe, names, program, copies, conv.converter, fakes, before)


def _run_program(conv: Conversion, recipe: Recipe | FunctionRecipe, names: tuple[str, ...], program: Program,
                 copies: Any, converter: Converter, fakes: tuple[torch.Tensor, ...],
                 before: Any) -> list[Mismatch]:
    reader = _ReadAs(converter)
    run = Lockstep(names, Side.of(names, copies), Side.of(names, fakes, _fake_mode(fakes)),
                   reader, order=conv.order, judge=conv.judge, inputs=names)
    run.start()
    known = run.known_at_start()
    found: list[Mismatch] = []
    for k, step in enumerate(program.steps):
        differs = run.step(step)
        conv.behaviour_expected.extend((entry_id, k) for entry_id in run.expected)
        ids = set().union(*(known[n] for n in _names_in(step, known)))
        # (a storage's size explains no step that does not depend on it: a
        # backward's .grad values, a view's shape)
        explaining = (ids if _depends_on_storage(step) or _writes_functional(step, run.real)
                      else ids - run.storage_size_only)
        if differs and explaining and explaining <= run.elements_only:
            # (what the step makes whatever the elements cannot follow from their count)
            fixed = [m for m in differs if _holds_whatever_the_elements(step, m)]
            if fixed:
                found = _classify(conv, recipe, names, program, k, fixed, run.real.namespace)
                break
        if differs and explaining:
            found = _follows_known(conv, program, k, differs, sorted(explaining))
            break
        if differs:
            found = _classify(conv, recipe, names, program, k, differs, run.real.namespace)
            break
        if ids:  # what the step made or changed carries the known difference on
            for n in _changed_by(step, run.real):
                known.setdefault(n, set()).update(ids)
    after = snapshots.capture(names, tuple(conv.real))
    for m in snapshots.compare(before, after):
        found.append(StepMismatch(
            check=CHECK, path=m.path, attribute=f"user tensor {m.attribute}", real=m.real,
            fake=m.fake,
            detail="the user's tensor before vs after the program ran on the "
                   "converted tensors",
            step=len(program.steps) - 1))
    return found


# The storage check's readings of a storage's size.
STORAGE_SIZE = frozenset({"untyped_storage().nbytes()", "untyped_storage().nbytes() == 0"})
# What a step's outcome may depend on a storage's extent through: strides
# checked against it, the storage read directly -- and every method whose aten
# op torch tags ``inplace_view`` (``t_``, ``squeeze_``, ``set_``, ``resize_``
# ...): each sets the tensor's sizes and strides anew, checked against the
# storage's bounds.  (``detach_`` carries the tag too, but sets neither.)
_STORAGE_DEPENDENT = ("as_strided", "storage")
_SETS_NO_GEOMETRY = frozenset({"detach_"})


def _depends_on_storage(step: Step) -> bool:
    import re

    return any(word in step.source for word in _STORAGE_DEPENDENT) or any(
        _is_inplace_view(name) for name in re.findall(r"\.(\w+_)\(", step.source))


def _writes_functional(step: Step, side: Side) -> bool:
    """Whether the step calls an in-place method and names a C++ functional
    tensor: functionalization writes the update into the value's whole
    storage (read to its end: with elements there that the converted
    storage lacks, a kernel missing for the dtype raises on the real side
    only)."""
    return _calls_in_place(step) and any(
        functional_value(side.namespace[n]) is not None for n in _names_in(step, side.live))


def _calls_in_place(step: Step) -> bool:
    """Whether the step calls an in-place method (``t.mul_(2)``)."""
    import re

    return re.search(r"\.\w+_\(", step.source) is not None


@functools.lru_cache(maxsize=None)
def _is_inplace_view(method: str) -> bool:
    """Whether an overload of aten's ``method`` carries torch's ``inplace_view`` tag."""
    import torch

    packet = getattr(torch.ops.aten, method, None)
    if method in _SETS_NO_GEOMETRY or packet is None or not hasattr(packet, "overloads"):
        return False
    tag = getattr(torch.Tag, "inplace_view", None)
    return tag is not None and any(
        tag in getattr(packet, o).tags for o in packet.overloads())


# The sparse check's readings that differ where a sparse fake's count of
# elements does (``sparse-nnz``; with a carried real tensor, the readings
# that then raise: ``real-sparse-nnz-metadata``).
ELEMENT_COUNT = frozenset({"_nnz()", "index dtype", "blocksize"})
# What the result of a step ending in a method call is, whatever the
# elements of the sparse tensor it was called on: method -> the attribute of
# a tensor and its value.  ``coalesce()`` returns a coalesced tensor (itself,
# where it was), with elements or without; and no other tensor's flag changes.
HOLDS_WHATEVER_THE_ELEMENTS = {"coalesce": ("is_coalesced()", True)}


def _holds_whatever_the_elements(step: Step, m: Mismatch) -> bool:
    """Whether difference ``m`` after ``step`` is in what the step's last
    method call makes whatever the elements (``HOLDS_WHATEVER_THE_ELEMENTS``):
    the real side has the value it must have, the fake side not."""
    import re

    call = re.search(r"\.(\w+)\([^()]*\)\s*$", step.source.strip())
    held = HOLDS_WHATEVER_THE_ELEMENTS.get(call.group(1)) if call else None
    return held is not None and (m.attribute, m.real) == held and m.fake != held[1]


def _names_in(step: Step, names: Any) -> list[str]:
    """The names of ``names`` that the step's source mentions (or binds)."""
    import re

    words = set(re.findall(r"[A-Za-z_]\w*", step.source))
    return [n for n in names if n in words]


def _changed_by(step: Step, side: Side) -> list[str]:
    """The live names that the step mentions (or binds) and, where it calls
    an in-place method, every live view of the same base as one of those:
    an in-place op on a view rewrites its base's autograd history
    (``CopySlices``), and so that of the base's other views."""
    named = _names_in(step, side.live)
    if not _calls_in_place(step):
        return named
    roots = {id(_view_root(side.namespace[n])) for n in named}
    return named + [n for n in side.live if n not in named
                    and id(_view_root(side.namespace[n])) in roots]


def _view_root(t: torch.Tensor) -> torch.Tensor:
    from ..strategies.tensor_facts import base_of

    base = base_of(t)
    return t if base is None else base


def _follows_known(conv: Conversion, program: Program, k: int, differs: list[Mismatch],
                   ids: list[str]) -> list[Mismatch]:
    """The step acts on tensors that already differ, at conversion, in a way
    known differences explain: what differs now follows from those."""
    step = program.steps[k]
    for entry_id in ids:
        conv.behaviour_follows.add(entry_id)
    m = differs[0]
    return [StepMismatch(check=CHECK, path=m.path, attribute=FOLLOWS, real=m.real, fake=m.fake,
                         detail=f"step {k + 1} of {len(program.steps)}: {step.source!r}; "
                         f"{m.attribute} differs, on tensors that already differ by "
                         f"{', '.join(ids)}", step=k)]


# The attribute of a difference that follows from known ones.
FOLLOWS = "follows from a known difference"


def _extents(namespace: dict[str, Any], differs: list[Mismatch]) -> list[RealExtent | None]:
    """What the real tensor each difference is on spans (None where there
    is none): its shape, and the elements held by the tensor inside its
    functorch wrappers (a BatchedTensor's logical shape says nothing of a
    batch of size 0)."""
    from ..strategies.tensor_facts import functorch_unwrapped
    from ._util import resolve

    conv = Conversion(tuple(namespace), tuple(namespace.values()), tuple(namespace.values()),
                      None)
    out: list[RealExtent | None] = []
    for m in differs:
        t = resolve(conv, m.path)
        try:
            shape = tuple(int(n) for n in t.shape)
            inner = t
            while (unwrapped := functorch_unwrapped(inner)) is not None:
                inner = unwrapped
            out.append(RealExtent(shape, int(inner.numel())))
        except Exception:
            out.append(None)
    return out


def _reads_uncopied(conv: Conversion, names: tuple[str, ...], namespace: dict[str, Any],
                    path: str) -> bool:
    """The real tensor whose carried tensor (``path``: ``<tensor>.real_tensor``)
    has other values reads storage bytes that the carried copy of its
    storage never held: MetaConverter copies a storage for the first
    non-view tensor it converts on it, that tensor's elements only, when it
    is at offset 0 (the conversion-time known difference real-values-not-copied;
    here a step's view reads them).  The real side's tensors are rebuilt
    copies of the conversion's: a storage is matched by the path of a tensor
    on it that still has the geometry it had when converted."""
    from ..converter_model import reads_outside, visiting_order
    from ._util import is_view, resolve, walk_real

    if not path.endswith(".real_tensor"):
        return False
    live = Conversion(tuple(namespace), tuple(namespace.values()), tuple(namespace.values()),
                      None)
    t = resolve(live, path.removesuffix(".real_tensor"))
    if t is None or not plain_strided(t) or t.numel() == 0:
        return False

    def geometry(u: Any) -> tuple:
        return (tuple(u.shape), u.stride(), u.storage_offset(), u.dtype,
                u.untyped_storage().nbytes())

    copies = dict(walk_real(names, tuple(namespace.get(n) for n in names)))
    storages = set()  # the conversion's storage that t's is a copy of
    for p, u in walk_real(names, conv.real):
        c = copies.get(p)
        if (c is not None and plain_strided(u) and plain_strided(c)
                and storage_key(c) == storage_key(t) and geometry(c) == geometry(u)):
            storages.add(storage_key(u))
    if len(storages) != 1:
        return False
    first = next((u for u in visiting_order(conv) if plain_strided(u) and not is_view(u)
                  and storage_key(u) in storages), None)
    return first is not None and first.storage_offset() == 0 and reads_outside(t, first)


def _classify(conv: Conversion, recipe: Recipe | FunctionRecipe, names: tuple[str, ...], program: Program, k: int,
              differs: list[Mismatch], namespace: dict[str, Any]) -> list[Mismatch]:
    """Conversion bug or operator difference: replay the first ``k + 1``
    steps on the control and compare.  ``namespace``: the real side's.
    What the control shows too is the operator's, the rest the
    conversion's (a stale item memo beside an in-place op's autograd
    difference): each judged on its own."""
    step = program.steps[k]
    where = f"step {k + 1} of {len(program.steps)}: {step.source!r}"
    control = _control_differs(recipe, names, program, k, conv)
    extents = dict(zip(map(id, differs), _extents(namespace, differs)))
    if control is None:
        entries = _operator_differences(conv, step.source, differs, without_control=True,
                                        real_extents={m.path: extents[id(m)] for m in differs})
        if entries is not None:
            return _as_op_differences(conv, entries, differs, lambda m: (
                f"{where}; no control could be built, and the step's errors alone "
                "show the operator difference"), k)
        return _conversion_bugs(conv, step, differs, extents, names, namespace, k,
                                f"{where}; no control could be built")
    own = [m for m in differs if _key(m) not in control]
    shared = [m for m in differs if _key(m) in control]
    found = _conversion_bugs(conv, step, own, extents, names, namespace, k,
                             f"{where}; the control (the same tensors made directly under the "
                             "mode, not converted) does not differ: a conversion bug")
    if not shared:
        return found
    entries = _operator_differences(conv, step.source, shared,
                                    real_extents={m.path: extents[id(m)] for m in shared})
    if entries is not None:
        return found + _as_op_differences(
            conv, entries, shared, lambda m: f"{where}; {m.attribute} differs on the control too",
            k)
    return found + [StepMismatch(
        check=CHECK, path=m.path, attribute=f"op-difference: {m.attribute}", real=m.real,
        fake=m.fake,
        detail=f"{where}; the control (the same tensors made directly under the mode, "
               "not converted) differs the same way: an operator difference, not "
               "registered in known_differences/definitions/operators.py",
        step=k)
            for m in shared]


def _conversion_bugs(conv: Conversion, step: Step, differs: list[Mismatch],
                     extents: dict[int, RealExtent | None], names: tuple[str, ...],
                     namespace: dict[str, Any], k: int, detail: str) -> list[Mismatch]:
    """``differs`` reported as they are, and recorded for the behaviour
    entries of the known-difference registry to read."""
    for m in differs:
        extent = extents[id(m)]
        conv.behaviour_differences.add(StepDifference(
            m.attribute, str(m.real), str(m.fake), None if extent is None else extent.stored,
            None if extent is None else extent.shape, m.path, step.source,
            real_value=StepDifference.plain(m.real), fake_value=StepDifference.plain(m.fake)))
        if m.attribute == "values" and _reads_uncopied(conv, names, namespace, m.path):
            conv.behaviour_uncopied_reads.add(m.path)
    return [StepMismatch(
        check=CHECK, path=m.path, attribute=m.attribute, real=m.real, fake=m.fake,
        detail=detail + (f"; {m.detail}" if m.detail else ""), step=k)
            for m in differs]


def _operator_differences(conv: Conversion, statement: str, mismatches: list[Mismatch], *,
                          without_control: bool = False,
                          real_extents: dict[str, RealExtent | None] | None = None
                          ) -> list[str] | None:
    """The judge's (:meth:`~.Judge.operator_differences`): None without one."""
    if conv.judge is None:
        return None
    return conv.judge.operator_differences(statement, mismatches, without_control=without_control,
                                           real_extents=real_extents)


def _as_op_differences(conv: Conversion, names: list[str], differs: list[Mismatch],
                       detail: Callable[[Mismatch], str], k: int) -> list[Mismatch]:
    """The step's differences as the operator differences ``names``
    (each reported once per conversion)."""
    reported: list[Mismatch] = []
    for name, m in zip(names, differs):
        if name in conv.op_differences:
            continue
        conv.op_differences.add(name)
        reported.append(StepMismatch(
            check=CHECK, path=m.path, attribute=f"op-difference {name}", real=m.real,
            fake=m.fake, detail=detail(m), step=k))
    return reported


def _control_differs(recipe: Recipe | FunctionRecipe, names: tuple[str, ...], program: Program, k: int,
                     conv: Conversion) -> set[tuple[str, str]] | None:
    """(path, attribute) of what differs between the real tensors and the
    control at step ``k``, or None when no control can be built."""
    meta = not getattr(conv.converter, "fake_tensors", False)
    # Like every conversion, the control starts from an empty dispatch cache:
    # what it shows depends on the recipe alone, as in a reproducer's process.
    clear_dispatch_cache()
    try:
        with quiet_fake_tensor_log():
            control, mode = _control(recipe, meta, bool(getattr(conv.converter, "carries_real",
                                                                 False)))
    except Exception as e:
        if not raised_by_recipe(e, recipe):
            raise  # ours (building the control): an internal error of the check
        return None  # torch refused the recipe's code under the mode (or on meta)
    copies = rebuild(recipe, conv.real, recipe.outputs)
    if copies is None:
        return None
    reader = _ReadAs(conv.converter)
    if meta and mode is not None:
        reader = _ReadAs(None, carries_real=False)
    run = Lockstep(names, Side.of(names, copies), Side.of(names, control, mode), reader)
    run.start()
    differs: list[Mismatch] = []
    for step in program.steps[:k + 1]:
        differs = run.step(step)
    return {_key(m) for m in differs}
