"""What the strategies draw of every property: each property of
:mod:`pytest_metafidelity.properties` read on each drawn real tensor.

    .venv/bin/python benchmarks/property_coverage.py [EXAMPLES_PER_KIND]

Draws EXAMPLES_PER_KIND (default 20) tensors of every kind ``meta_tensors()``
draws, families of every family kind ``tensor_families()`` draws, and the
recipes of every kind whose tensors exist only inside a functorch level or a
mode (read inside it), on the cpu and meta devices, derandomized (the same
tensors every run).  Reads every
property on every tensor (the reads that may crash only where safe: see
:mod:`pytest_metafidelity.property_values`) and prints the property table
with what was drawn of each -- ``both`` (two values or more), ``only X``,
``partly`` (one value, and reading raised on some tensors), ``never read``
(with why) -- its rule, and the totals.  A property a newer torch adds
shows as a row with nothing drawn and no rule.
"""

from __future__ import annotations

import collections
import sys
import warnings
from typing import Any

from hypothesis import HealthCheck, given, settings

from pytest_metafidelity.properties import Property, markdown_table, markdown_totals, properties
from pytest_metafidelity.property_values import NotRead, TensorReading, read_value
from pytest_metafidelity.strategies import (Recipe, available_kinds, meta_tensors, recipes,
                                            tensor_families)

DEVICES = ["cpu", "meta"]


class Tally:
    """Per property: the values read, the reads that raised, why not read."""

    def __init__(self) -> None:
        self.values: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter)
        self.raised: collections.Counter[str] = collections.Counter()
        self.not_read: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter)
        self.tensors = 0

    def read(self, props: list[Property], t: Any) -> None:
        self.tensors += 1
        reading = TensorReading(t)
        for p in props:
            try:
                self.values[p.written][read_value(p, reading)] += 1
            except NotRead as e:
                self.not_read[p.written][str(e)] += 1
            except Exception:
                self.raised[p.written] += 1

    def category(self, p: Property) -> str:
        values = self.values.get(p.written)
        if not values:
            return "never read"
        if len(values) >= 2:
            return "both"
        return "partly" if self.raised[p.written] else "one way"

    def drawn(self, p: Property) -> str:
        values = self.values.get(p.written)
        if not values:
            why = self.not_read.get(p.written)
            if why:
                return "never read (" + "; ".join(sorted(why)) + ")"
            return ("never read (raised)" if self.raised[p.written]
                    else "never read")
        shown = ", ".join(f"{v} {n}" for v, n in sorted(values.items()))
        text = ("both: " if len(values) >= 2 else "only ") + shown
        if self.raised[p.written]:
            text += f"; raised on {self.raised[p.written]}"
        return text


def draw_and_read(examples: int, props: list[Property]) -> Tally:
    tally = Tally()
    run = settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                   suppress_health_check=list(HealthCheck))
    for kind in available_kinds().values():
        if kind.needs_context:
            # Tensors of a functorch level or a mode exist only inside it:
            # read there, as the suite converts them.
            @run
            @given(recipes(kinds=[kind.name], devices=DEVICES))
            def read_inside(recipe: Recipe) -> None:
                with recipe.active_contexts() as namespace:
                    for t in recipe.build_in(namespace):
                        tally.read(props, t)

            read_inside()
            continue
        strategy = (tensor_families(kinds=[kind.name], devices=DEVICES) if kind.family
                    else meta_tensors(kinds=[kind.name], devices=DEVICES).map(lambda t: (t,)))

        @run
        @given(strategy)
        def read_all(tensors: tuple[Any, ...]) -> None:
            for t in tensors:
                tally.read(props, t)

        read_all()
    return tally


def main() -> None:
    import torch

    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    props = properties()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tally = draw_and_read(examples, props)
    categories = collections.Counter(tally.category(p) for p in props)
    print(f"# Properties of torch {torch.__version__}: what {tally.tensors} drawn real tensors "
          f"carry ({examples} examples per kind, devices {', '.join(DEVICES)})")
    print()
    print(markdown_totals(props))
    print()
    print("Drawn: " + ", ".join(f"{categories[c]} {c}" for c in
                                 ("both", "one way", "partly", "never read")))
    print()
    print(markdown_table(props, {p.written: tally.drawn(p) for p in props}))


if __name__ == "__main__":
    main()
