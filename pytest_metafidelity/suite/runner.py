"""How one suite item (a tensor kind through a converter) runs.

The item's test is a real Hypothesis ``@given`` test, so ``--hypothesis-seed``,
``--hypothesis-show-statistics`` and shrinking work as usual.  Each example
draws a recipe of the item's kind and a conversion order, builds the tensors
(inside the recipe's contexts), converts them through one converter and runs
the checks.  A failing example raises :class:`FidelityError`, whose message
carries the reproducer of the shrunk example.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import time
import warnings
from collections import Counter
from typing import Any, Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@dataclasses.dataclass(frozen=True)
class SuiteItem:
    kind: str
    converter: str

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.converter}"


@dataclasses.dataclass
class SuiteRun:
    """Settings and running tallies for the suite in this process."""

    options: Any  # options.SuiteOptions
    n_items: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)
    items_done: int = 0
    examples_done: int = 0  # examples run in this process
    example_seconds: float = 0.0  # wall time of finished items ...
    examples_counted: int = 0  # ... and the examples they ran
    # nodeid -> Counter of outcome statuses over examples
    tallies: dict[str, Counter] = dataclasses.field(default_factory=dict)
    # nodeid -> digest of every case run, in order: equal digests, equal cases
    digests: dict[str, Any] = dataclasses.field(default_factory=dict)
    # nodeid -> Counter of known-difference entry ids that occurred
    known: dict[str, Counter] = dataclasses.field(default_factory=dict)
    # nodeid -> {entry id: [examples in which it did not occur, first reproducer]}
    unexpectedly_passing: dict[str, dict[str, list[Any]]] = dataclasses.field(
        default_factory=dict)

    def record_entries(self, nodeid: str, result: Any) -> None:
        """Which known-difference entries occurred, and which were expected
        but did not occur (with the first such example's reproducer)."""
        known = self.known.setdefault(nodeid, Counter())
        missing = self.unexpectedly_passing.setdefault(nodeid, {})
        for outcome in result.outcomes:
            known.update({entry_id for entry_id, _ in outcome.known})
            for entry_id in outcome.unexpectedly_passing:
                missing.setdefault(entry_id, [0, result.reproducer])[0] += 1

    def start_item(self) -> None:
        self._item_started = time.monotonic()
        self._item_examples = self.examples_done

    def finish_item(self) -> None:
        """Account an item's whole wall time (Hypothesis' own overhead, the
        draws, building, converting, checking) against its examples."""
        self.items_done += 1
        started = getattr(self, "_item_started", None)
        if started is not None:
            self.example_seconds += time.monotonic() - started
            self.examples_counted += self.examples_done - self._item_examples
            self._item_started = None

    def examples_for_next_item(self) -> int:
        """Fixed count, or what fits the remaining time budget given the
        measured cost of an example so far (between MIN and MAX)."""
        from ..options import MAX_BUDGET_EXAMPLES, MIN_EXAMPLES

        opts = self.options
        if opts.examples is not None:
            return opts.examples
        remaining_items = max(self.n_items - self.items_done, 1)
        remaining_time = opts.budget - (time.monotonic() - self.started)
        if remaining_time <= 0 or self.examples_counted == 0:
            return MIN_EXAMPLES
        per_example = self.example_seconds / self.examples_counted
        fit = int(remaining_time / remaining_items / per_example)
        return max(MIN_EXAMPLES, min(MAX_BUDGET_EXAMPLES, fit))


def item_settings(run: SuiteRun, nodeid: str) -> settings:
    opts = run.options
    profile = opts.profile
    kwargs: dict[str, Any] = dict(
        max_examples=run.examples_for_next_item(),
        deadline=None,
        derandomize=profile.derandomize,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    )
    if not profile.use_database:
        kwargs["database"] = None
    return settings(**kwargs)


def fidelity_test(run: SuiteRun | None = None, nodeid: str = "") -> Any:
    """The test function for suite items: ``test(metafidelity_item)``.

    With ``run`` None (as imported from the suite module) it uses default
    settings; the plugin swaps in a per-item version built with the run's
    options before the item runs.
    """

    @given(data=st.data())
    def test_fidelity(metafidelity_item: SuiteItem, data: Any) -> None:
        run_example(run, metafidelity_item, data, nodeid)

    if run is not None:
        test_fidelity = item_settings(run, nodeid)(test_fidelity)
    return test_fidelity


def run_example(run: SuiteRun | None, item: SuiteItem, data: Any, nodeid: str) -> None:
    opts = run.options if run is not None else None
    devices = list(opts.devices) if opts else None
    with quiet_torch_notices():
        _run_example(run, item, data, nodeid, opts, devices)


# Torch's notices about experimental dtypes and beta layouts: the suite uses
# them on purpose, so they are noise in its output.
TORCH_NOTICES = (
    "ComplexHalf support is experimental",
    "Sparse invariant checks are implicitly disabled",
    r"Sparse \w+ tensor support is in beta state",
)


@contextlib.contextmanager
def quiet_torch_notices() -> Iterator[None]:
    with warnings.catch_warnings():
        for message in TORCH_NOTICES:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        yield


def _run_example(
    run: SuiteRun | None, item: SuiteItem, data: Any, nodeid: str, opts: Any, devices: Any
) -> None:
    from ..faithful import FAILED, FidelityError, check_faithful
    from ..strategies import recipes

    recipe = data.draw(recipes(kinds=[item.kind], family=None, devices=devices), label="recipe")
    order = data.draw(st.permutations(range(len(recipe.outputs))), label="conversion order")
    program = _draw_program(data, recipe, opts)
    with recipe.active_contexts() as namespace:
        tensors = recipe.build_in(namespace)
        result = check_faithful(
            *tensors,
            converters=[item.converter],
            checks=list(opts.checks) if opts else None,
            order=order,
            strict=opts.strict if opts else False,
            program=program,
        )
    if run is not None:
        run.examples_done += 1
        digest = run.digests.setdefault(nodeid, hashlib.sha256())
        digest.update(f"{recipe.to_python()}{order}{program or ''}".encode())
        tally = run.tallies.setdefault(nodeid, Counter())
        tally["examples"] += 1
        for outcome in result.outcomes:
            tally[outcome.status] += 1
        run.record_entries(nodeid, result)
    if any(o.status == FAILED for o in result.outcomes):
        raise FidelityError(result)


def _draw_program(data: Any, recipe: Any, opts: Any) -> Any:
    """The ``behaviour`` check's program, when that check runs (none is
    drawn where programs do not apply to the recipe's kind)."""
    if opts is not None and "behaviour" not in opts.checks:
        return None
    from ..strategies.programs import programs

    return data.draw(programs(recipe), label="program")
