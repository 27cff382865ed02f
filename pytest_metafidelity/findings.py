"""Findings: what a check reports -- a broken invariant (:class:`Mismatch`,
real vs fake, named as users write the attribute) or a crash of our own
code (:class:`InternalError`, never explained away by a known difference).

The lowest layer of the checking code: checks, the snapshots of purity,
the known-difference registry, the reports and ``faithful`` all speak in
these types, and this module imports none of them.

The program checks also record what they saw on the ``Conversion``, for
their entries in the known-difference registry to read
(:class:`StepDifference`, :class:`Reconverted`; the fields
``behaviour_differences``, ``behaviour_follows``, ``behaviour_uncopied_reads``,
``behaviour_expected``, ``op_differences`` and ``reconvert_records`` of
:class:`~.checks.Conversion`), and a program step is shown to the
entries' step conditions as a :class:`StepCase`.
"""

from __future__ import annotations

import dataclasses
from typing import Any


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


@dataclasses.dataclass(frozen=True)
class RealExtent:
    """What the real tensor a step's difference is on spans: its ``shape``
    as users read it (inside functorch levels, the logical shape) and the
    elements its memory holds (``stored``: those of the tensor inside every
    functorch wrapper -- a vmap over a batch of size 0 holds none, whatever
    its logical shape).  Where it holds none, no stride moves through
    memory."""

    shape: tuple[int, ...]
    stored: int

    @property
    def holds_no_elements(self) -> bool:
        return self.stored == 0 or 0 in self.shape


@dataclasses.dataclass(frozen=True)
class StepDifference:
    """What a program step changed on one side only, as the ``behaviour``
    check recorded it where no control explained it: the registry's
    ``behaviour`` entries read it (``real``/``fake`` as shown: ``str`` of
    the readings, ``Type: message`` of an error or ``nothing``; and
    ``real_value``/``fake_value``, the readings themselves where they are
    plain data -- sizes, strides, flags -- else None).  Two records of the
    same difference are equal whatever their values."""

    attribute: str  # e.g. "stride()", "raised", "values"
    real: str
    fake: str
    # elements the memory of the real tensor it is on holds (inside functorch
    # wrappers, the innermost tensor's: RealExtent.stored; None: on no tensor)
    numel: int | None
    shape: tuple[int, ...] | None  # its shape (inside functorch levels, the logical one)
    path: str  # e.g. "t0", "t1._base", "*"
    source: str  # the step's source
    real_value: Any = dataclasses.field(default=None, compare=False)
    fake_value: Any = dataclasses.field(default=None, compare=False)

    @staticmethod
    def plain(value: Any) -> Any:
        """``value`` where it is plain data (None, a bool, an int, a float, a
        str, or a tuple or list of them, nested; a ``torch.Size`` as a
        tuple), else None: a record holds no tensor alive."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (tuple, list)):
            items = [StepDifference.plain(v) for v in value]
            if all(i is not None or v is None for i, v in zip(items, value)):
                return tuple(items)
        return None

    @property
    def extent(self) -> RealExtent | None:
        """What the real tensor it is on spans (None: on no tensor)."""
        if self.numel is None or self.shape is None:
            return None
        return RealExtent(self.shape, self.numel)


@dataclasses.dataclass(frozen=True)
class StepCase:
    """A program step as the ``behaviour`` check runs it, once the real
    side ran it and before the converted side does: what an entry's
    ``on_step`` condition (a step that must show the entry's difference)
    sees.  ``real``: the real side's live tensors by name, as the step left
    them; ``fake``: the converted side's, as they are before it;
    ``inputs``: the names of the converted tensors (the others a program
    made); ``real_raised``: what the step raised on the real side (``Type:
    message``; None: nothing).  The tensors are only read, never changed."""

    converter: str
    statement: str  # the step's statement (``p0 = t0[1:]``), without its context
    context: str | None  # the context manager it runs in (``torch.no_grad()``), or None
    real: dict[str, Any]
    fake: dict[str, Any]
    inputs: tuple[str, ...]
    real_raised: str | None


@dataclasses.dataclass(frozen=True)
class Reconverted:
    """What one second conversion did, as the ``reconvert`` check recorded it."""

    path: str  # the tensor changed, e.g. "t0"
    change: str  # a Change's name
    same_object: bool  # the converter handed back the first conversion's object
    # ... and that object reads (oracle, storage size) exactly as it did right
    # after the first conversion: the change did not reach it
    stale: bool
    # what changed in the real tensor's reading ("path: attribute"), among
    # what matched the first converted tensor
    changed: tuple[str, ...] = ()
