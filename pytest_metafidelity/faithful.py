"""assert_faithful / check_faithful: convert tensors and run the checks.

Works without pytest.  One converter instance converts all the tensors given
(in ``order``), so memo and aliasing bugs across tensors show.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from .checks import Conversion, Mismatch, all_checks, run_checks
from .converters import CONVERTERS, Unsupported, make_converter
from .reproducer import recipe_for, reproducer_source

DEFAULT_CONVERTERS = ("meta", "fake", "fake-dynamic")

PASSED, FAILED, UNSUPPORTED, KNOWN = "passed", "failed", "unsupported", "known-difference"


@dataclasses.dataclass
class Outcome:
    """The result of one converter on the tensors."""

    converter: str
    status: str  # PASSED, FAILED, UNSUPPORTED or KNOWN
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)
    reason: str = ""  # why unsupported, or which known differences matched

    def describe(self) -> str:
        head = f"converter {self.converter!r}: {self.status}"
        if self.reason:
            head += f" ({self.reason})"
        return "\n".join([head, *("  " + m.describe().replace("\n", "\n  ") for m in self.mismatches)])


@dataclasses.dataclass
class FidelityResult:
    outcomes: list[Outcome]
    reproducer: str

    @property
    def ok(self) -> bool:
        return all(o.status != FAILED for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == FAILED]

    def describe(self) -> str:
        parts = [o.describe() for o in self.outcomes]
        parts.append("Reproducer (runnable Python):\n" + self.reproducer)
        return "\n".join(parts)


class FidelityError(AssertionError):
    """Conversion was not faithful.  ``.result`` holds the structured result."""

    def __init__(self, result: FidelityResult) -> None:
        self.result = result
        broken = sum(len(o.mismatches) for o in result.failures)
        super().__init__(
            f"{broken} broken invariant(s) across {len(result.failures)} converter(s)\n"
            + result.describe()
        )


def _validate(names: Sequence[str] | None, registry: dict[str, Any], what: str) -> None:
    for n in names or ():
        if n not in registry:
            raise ValueError(f"unknown {what} {n!r}; allowed: {', '.join(registry)}")


def convert_all(converter: Any, tensors: Sequence[Any], order: Sequence[int]) -> list[Any]:
    """Convert ``tensors`` through one converter, visiting them in ``order``."""
    converted: list[Any] = [None] * len(tensors)
    for i in order:
        converted[i] = converter.convert(tensors[i])
    return converted


def check_faithful(
    *tensors: Any,
    converters: Sequence[str] | str | None = None,
    checks: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
) -> FidelityResult:
    """Convert ``tensors`` with each converter and run ``checks`` (default all)."""
    if isinstance(converters, str):
        converters = [converters]
    converters = list(converters or DEFAULT_CONVERTERS)
    _validate(converters, CONVERTERS, "converter")
    _validate(checks, all_checks(), "check")
    if not tensors:
        raise ValueError("check_faithful() needs at least one tensor")
    order = list(range(len(tensors))) if order is None else list(order)
    if sorted(order) != list(range(len(tensors))):
        raise ValueError(f"order={order!r} must be a permutation of 0..{len(tensors) - 1}")

    recipe = recipe_for(tensors)
    names = recipe.outputs
    outcomes = []
    for name in converters:
        outcomes.append(_one_converter(name, names, tensors, checks, order))
    failing = [o.converter for o in outcomes if o.status == FAILED] or converters
    failing_checks = sorted({m.check for o in outcomes for m in o.mismatches}) or checks
    source = reproducer_source(recipe, converters=failing, checks=failing_checks, order=order)
    return FidelityResult(outcomes, source)


def _one_converter(
    name: str, names: Sequence[str], tensors: Sequence[Any], checks: Sequence[str] | None,
    order: Sequence[int],
) -> Outcome:
    try:
        converter = make_converter(name)
        try:
            fakes = convert_all(converter, tensors, order)
            mismatches = run_checks(
                Conversion(tuple(names), tuple(tensors), tuple(fakes), converter),
                list(checks) if checks else None,
            )
        finally:
            converter.close()
    except Unsupported as e:
        return Outcome(name, UNSUPPORTED, reason=str(e))
    except Exception as e:  # the converter crashed: a fidelity failure
        m = Mismatch("conversion", ", ".join(names), "raised", "a converted tensor",
                     f"{type(e).__name__}: {e}")
        return Outcome(name, FAILED, [m])
    return Outcome(name, FAILED if mismatches else PASSED, mismatches)


def assert_faithful(
    *tensors: Any,
    converters: Sequence[str] | str | None = None,
    checks: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
) -> FidelityResult:
    """Like :func:`check_faithful`, but raise :class:`FidelityError` listing
    every broken invariant, real vs fake, and a runnable reproducer."""
    result = check_faithful(*tensors, converters=converters, checks=checks, order=order)
    if not result.ok:
        raise FidelityError(result)
    return result
