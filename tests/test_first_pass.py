"""The first pass of a budget run: every item's first round before any item
goes deep, a failure found there reported at once, each item's protocol run
once across workers, a crash in the pass kept; ``-x`` exits 1 under xdist;
starved items flagged (issue: fast feedback)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from pytest_metafidelity.report import Collector, ItemRecord, Spending
from pytest_metafidelity.report_html import render
from pytest_metafidelity.suite import first_pass
from pytest_metafidelity.suite.budget import starved

# -- the shared state ---------------------------------------------------------


def test_the_first_pass_is_split_among_the_workers_and_replacements_get_none(tmp_path) -> None:
    items = [f"item{i}" for i in range(7)]
    shares = [first_pass.FirstPass(str(tmp_path), w, 3).share(items) for w in range(3)]
    assert sorted(sum(shares, [])) == sorted(items)  # every item once
    assert shares[1] == ["item1", "item4"]
    # gw3 replaces a dead worker of three: the pass was the dead one's.
    assert first_pass.FirstPass(str(tmp_path), 3, 3).share(items) == []


def test_an_item_is_claimed_once_whoever_asks(tmp_path) -> None:
    one, other = (first_pass.FirstPass(str(tmp_path), w, 2, total_items=4) for w in (0, 1))
    assert one.items_left() == 2.5  # 4 items, none started, per worker (this one included)
    assert not other.claimed("a")
    assert one.claim("a") and not other.claim("a") and not one.claim("a")
    assert other.claimed("a") and not other.claimed("b")  # the first pass skips "a" now
    assert other.claim("b")
    assert other.items_left() == 1.5


def test_a_passed_first_round_is_read_back_by_any_worker(tmp_path) -> None:
    record = first_pass.FirstPassRecord(examples=3, seconds=0.25, tally={"examples": 3,
                                        "passed": 3}, known={"entry": 1}, pid=os.getpid())
    first_pass.FirstPass(str(tmp_path), 0, 2).record("item", record)
    assert first_pass.FirstPass(str(tmp_path), 1, 2).passed("item") == record
    assert first_pass.FirstPass(str(tmp_path), 1, 2).passed("other") is None
    first_pass.remove_state(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_the_first_pass_runs_earlier_failures_first_then_each_kind_cheapest_first() -> None:
    cost = {"a-meta": 1.0, "a-fake": 2.0, "b-meta": 3.0, "b-fake": 4.0, "c-meta": 0.5,
            "c-fake": 5.0}
    order = first_pass.cost_order(cost, failed_before=lambda n: n == "b-fake",
                                  cost=cost.__getitem__, kind=lambda n: n.split("-")[0])
    # Every kind once (its cheapest item), then every kind's second item.
    assert order == ["b-fake", "c-meta", "a-meta", "b-meta", "a-fake", "c-fake"]


# -- starved items ------------------------------------------------------------


def _item(nodeid: str, examples: int, seconds: float, share: float = 1.0,
          outcome: str = "passed") -> dict:
    return {"nodeid": nodeid, "kind": nodeid.split("-")[0], "converter": "meta",
            "outcome": outcome, "counts": {"examples": examples}, "failures": [],
            "spending": {"slice": 0.0, "share": share, "seconds": seconds, "rounds": 1,
                         "examples": examples, "first_pass": 3, "extended": False}}


def test_an_item_that_got_less_than_a_quarter_of_its_share_is_starved() -> None:
    assert starved(Spending.from_json(_item("a", 6, 0.2)["spending"]), 6, 20) == (
        "starved: 6 examples (median item 20), 0.20 s of a 1.00 s share")
    assert starved(Spending.from_json(_item("a", 6, 0.25)["spending"]), 6, 20) == ""
    assert starved(None, 6, 20) == ""  # no budget: no share


def test_starved_items_are_flagged_in_the_terminal_the_json_and_the_page() -> None:
    collector = Collector()
    for record in (_item("dense-meta", 40, 1.0), _item("view-meta", 20, 0.9),
                   _item("nested_jagged-meta", 6, 0.02),
                   # a failed item stopped early on purpose
                   _item("conj_neg-meta", 2, 0.01, outcome="failed")):
        collector.add(ItemRecord.from_json(record))
    assert set(collector.starved()) == {"nested_jagged-meta"}
    text = collector.spending_text()
    assert "1 item(s) starved" in text
    assert "nested_jagged-meta: starved: 6 examples (median item 13), 0.02 s of a 1.00 s share" \
        in text
    assert "fewest examples 2, median 13" in text
    from pytest_metafidelity.options import PROFILES, SuiteOptions

    options = SuiteOptions(kinds=(), converters=(), checks=(), devices=("cpu",),
                           profile=PROFILES["dev"], examples=None, budget=40.0, strict=False,
                           report=None, reproducers="r")
    doc = collector.document(options, seed=None)
    flagged = {i["nodeid"]: i["starved"] for i in doc["items"]}
    assert flagged["nested_jagged-meta"].startswith("starved: 6 examples")
    assert flagged["dense-meta"] == "" and flagged["conj_neg-meta"] == ""
    page = render(json.loads(json.dumps(doc)))
    assert "Starved items (1)" in page and 'class="cell status-passed starved"' in page


# -- the suite ----------------------------------------------------------------

# ``meta``, except that its result loses the conj and neg bits (their
# dispatch keys, nothing of the data): a fault every conj_neg example with
# either bit shows, and no other kind.
BITLESS = textwrap.dedent(
    '''
    import torch

    from pytest_metafidelity.converters import MetaConverterAdapter, register_converter


    class Bitless(MetaConverterAdapter):
        name = "bitless"

        def _convert(self, t):
            converted = super()._convert(t)
            if t.is_conj() or t.is_neg():
                torch._C._set_conj(converted, False)
                torch._C._set_neg(converted, False)
            return converted


    register_converter(Bitless)
    '''
)
SUITE = ["--metafidelity", "--metafidelity-kinds=dense,view,conj_neg",
         "--metafidelity-converters=meta,bitless", "--hypothesis-seed=1", "-p", "no:cacheprovider"]


@pytest.fixture
def bitless(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(bitless_converter=BITLESS)
    pytester.makeconftest("import bitless_converter  # noqa: F401")
    return pytester


def _items(report) -> list[dict]:
    return json.loads(report.read_text())["items"]


def test_a_fault_in_the_last_item_is_reported_before_any_item_goes_deep(
        bitless: pytest.Pytester) -> None:
    report = bitless.path / "report.json"
    result = bitless.runpytest_subprocess(*SUITE, "--metafidelity-budget=60", "-x",
                                          f"--metafidelity-report={report}")
    # The conj_neg item comes last in the collection order; the first pass
    # found it failing, so it ran at once, and -x stopped the run there --
    # with pytest's status for failed tests, not xdist's interruption.
    assert result.ret == 1, result.stdout.str()
    (item,) = _items(report)
    assert item["kind"] == "conj_neg" and item["converter"] == "bitless"
    assert item["outcome"] == "failed" and "is_" in item["failures"][0]["attribute"]
    result.assert_outcomes(failed=1)


def test_with_two_workers_every_item_runs_once_and_a_first_pass_failure_counts_once(
        bitless: pytest.Pytester) -> None:
    report = bitless.path / "report.json"
    result = bitless.runpytest_subprocess(*SUITE, "--metafidelity-budget=12", "-n", "2",
                                          f"--metafidelity-report={report}")
    assert result.ret == 1
    items = _items(report)
    assert sorted(i["nodeid"].split("[")[1] for i in items) == sorted(
        f"{k}-{c}]" for k in ("dense", "view", "conj_neg") for c in ("meta", "bitless"))
    outcomes = {(i["kind"], i["converter"]): i["outcome"] for i in items}
    assert outcomes.pop(("conj_neg", "bitless")) == "failed"
    assert set(outcomes.values()) == {"passed"}
    result.assert_outcomes(failed=1, passed=5)
    # Each passed item counts its first round: run by the first pass (on
    # either worker), or by its own turn when that came first.
    for i in items:
        if i["outcome"] == "passed":
            assert i["spending"]["first_pass"] in (0, 3) and i["counts"]["examples"] >= 3
            assert i["counts"]["passed"] + i["counts"]["known-difference"] + i["counts"][
                "unsupported"] == i["counts"]["examples"]
    assert any(i["spending"]["first_pass"] == 3 for i in items if i["outcome"] == "passed")
    # The run's directory keeps nothing of the first pass.
    journal = bitless.path / ".pytest_cache"
    assert not journal.exists() or not any(p.name in first_pass.STATE for p in journal.rglob("*"))


@pytest.mark.parametrize("workers", [[], ["-n", "0"]], ids=["xdist", "in-process"])
def test_x_stops_at_the_first_failure_with_status_1(bitless: pytest.Pytester,
                                                    workers: list[str]) -> None:
    # A fixed number of examples: no first pass, the items in their order;
    # conj_neg-meta, after the failing item, never runs.
    result = bitless.runpytest_subprocess(*SUITE, "--metafidelity-converters=bitless,meta",
                                          "--metafidelity-examples=5", "-x", *workers)
    assert result.ret == 1
    result.assert_outcomes(failed=1, passed=4)
    assert "conj_neg-meta" not in result.stdout.str()


CRASHES_ON_CONJ = textwrap.dedent(
    '''
    import ctypes

    from pytest_metafidelity.converters import MetaConverterAdapter, register_converter


    class Segfaulting(MetaConverterAdapter):
        """meta, but reads address 0 (SIGSEGV) on conj or neg tensors."""
        name = "segfaulting"

        def _convert(self, t):
            if t.is_conj() or t.is_neg():
                ctypes.string_at(0)
            return super()._convert(t)


    register_converter(Segfaulting)
    '''
)


def test_a_crash_in_the_first_pass_is_the_crashing_items_and_every_item_still_runs(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(crashing_converter=CRASHES_ON_CONJ)
    pytester.makeconftest("import crashing_converter  # noqa: F401")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense,conj_neg",
        "--metafidelity-converters=meta,segfaulting", "--metafidelity-budget=8",
        "--metafidelity-shrink-crashes=0", "--hypothesis-seed=1", "--max-worker-restart=1",
        "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
        f"--metafidelity-report={report}")
    assert result.ret == 1
    items = {(i["kind"], i["converter"]): i for i in _items(report)}
    assert set(items) == {(k, c) for k in ("dense", "conj_neg") for c in ("meta", "segfaulting")}
    crashed = items.pop(("conj_neg", "segfaulting"))
    (crash,) = crashed["crashes"]
    assert crash["signal"] == "SIGSEGV" and "converters=['segfaulting']" in crash["reproducer"]
    assert crashed["outcome"] == "failed"
    # The item whose turn it was when the worker died ran after all.
    assert {i["outcome"] for i in items.values()} == {"passed"}
    result.stdout.fnmatch_lines(["*crashed (SIGSEGV)*(ahead of its turn, in the first pass)*"])
    assert "maximum crashed workers reached" not in result.stdout.str()
