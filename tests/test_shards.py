"""--metafidelity-shard=I/N: the N shards are exactly the suite, the same
whatever the order, balanced by estimated cost."""

from __future__ import annotations

import random
import re
import statistics

import pytest

from pytest_metafidelity import shards
from pytest_metafidelity.options import OptionError
from pytest_metafidelity.strategies import all_kinds

KINDS = sorted(all_kinds())
CONVERTERS = sorted(shards.CONVERTER_FACTOR)
SUITE = {f"{k}-{c}": (k, c) for k in KINDS for c in CONVERTERS}


@pytest.mark.parametrize("count", [1, 2, 3, 7, 300])
def test_shards_partition_the_suite_in_any_order(count: int) -> None:
    assignment = shards.assign(SUITE, count)
    assert set(assignment) == set(SUITE) and set(assignment.values()) <= set(range(1, count + 1))
    shuffled = list(SUITE.items())
    random.Random(count).shuffle(shuffled)
    assert shards.assign(dict(shuffled), count) == assignment


def test_shards_are_balanced_by_estimated_cost() -> None:
    for count in (2, 4, 8):
        loads = [0.0] * count
        for item, shard in shards.assign(SUITE, count).items():
            loads[shard - 1] += shards.estimated_cost(*SUITE[item])
        heaviest_item = max(shards.estimated_cost(*v) for v in SUITE.values())
        assert max(loads) - min(loads) <= heaviest_item, (count, loads)
    # Costs differ: a count-balanced split would not be cost-balanced.
    costs = sorted(shards.estimated_cost(*v) for v in SUITE.values())
    assert costs[-1] > 10 * costs[0]


def test_a_kind_costs_what_it_declares() -> None:
    kinds = all_kinds()
    declared = [k.cost_ms for k in kinds.values() if k.cost_ms is not None]
    assert len(declared) >= len(kinds) - 1  # user_subclass is not measured
    for name, k in kinds.items():
        if k.cost_ms is not None:
            assert shards.estimated_cost(name, "fake") == k.cost_ms * shards.CONVERTER_FACTOR["fake"]


def test_unknown_kinds_and_converters_get_a_cost() -> None:
    median = statistics.median(k.cost_ms for k in all_kinds().values() if k.cost_ms is not None)
    assert shards.estimated_cost("brand_new_kind", "brand-new") == median > 0
    assert shards.estimated_cost("user_subclass", "brand-new") == median  # declares none
    assert shards.assign({"a-b": ("a", "b"), "c-d": ("c", "d")}, 2) == {"a-b": 1, "c-d": 2}


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "1/0", "a/b", "1/2/3", "-1/2"])
def test_bad_shard_names_the_value_and_the_form(value: str) -> None:
    with pytest.raises(OptionError, match=re.escape(f"--metafidelity-shard: {value!r}") +
                       r".*expected I/N with 1 <= I <= N"):
        shards.parse(value)
    assert shards.parse(None) is None and shards.parse(" 2 / 5 ") == (2, 5)


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("--metafidelity", "--co", "-q", "-p", "no:cacheprovider",
                                           *args)
    assert result.ret == 0, result.stdout.str()[-2000:]
    return re.findall(r"test_fidelity\[([^\]]+)\]", result.stdout.str())


def test_shard_runs_union_to_the_whole_suite(pytester: pytest.Pytester) -> None:
    whole = _collected(pytester)
    parts = [_collected(pytester, f"--metafidelity-shard={i}/3") for i in (1, 2, 3)]
    assert len(whole) > 100
    assert sorted(sum(parts, [])) == sorted(whole)  # every item once: union, no overlap
    assert all(parts)
    # The environment sets it too (CI matrices), and it is deselection that pytest reports.
    pytester._monkeypatch.setenv("METAFIDELITY_SHARD", "2/3")
    result = pytester.runpytest_subprocess("--metafidelity", "--co", "-q", "-p", "no:cacheprovider")
    assert f"{len(parts[1])}/{len(whole)} tests collected ({len(whole) - len(parts[1])} deselected)" \
        in result.stdout.str()


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--metafidelity", "--metafidelity-shard=5/4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--metafidelity-shard: '5/4' is not valid" in result.stderr.str()
