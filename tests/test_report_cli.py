"""``python -m pytest_metafidelity.report merge|html|new-failures``: merged
shard reports equal an unsharded run, and the page renders in a real
headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_metafidelity import report_html, report_merge
from pytest_metafidelity.report import (COLUMNS, Crash, Failure, ItemRecord, ReportError,
                                        UnexpectedPass)
from pytest_metafidelity.report_cli import main, new_failures

QUIET = ["-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


def _item(kind: str, converter: str, **counts: int) -> dict[str, Any]:
    return {"nodeid": f"/path{len(kind)}/test_fidelity.py::test_fidelity[{kind}-{converter}]",
            "kind": kind, "converter": converter,
            "outcome": "failed" if counts.get("failed") or counts.get("crashed") else "passed",
            "counts": {c: counts.get(c.replace("-", "_"), 0) for c in COLUMNS} | (
                {k: v for k, v in counts.items() if k not in COLUMNS and "_" not in k}),
            "cases_digest": "d", "failures": [], "known_differences": {},
            "unexpectedly_passing": []}


def _failure(signature: str, nodeid: str) -> dict[str, Any]:
    check, kind, converter, attribute = signature.split("|")
    return {"signature": signature, "check": check, "kind": kind, "converter": converter,
            "path": "t0", "attribute": attribute, "real": "7", "fake": "0", "detail": "",
            "reproducer": "import torch\n", "reproducer_file": f"r/{kind}.py",
            "replay": f"python r/{kind}.py", "nodeid": nodeid}


def _doc(items: list[dict[str, Any]], devices: list[str] | None = None) -> dict[str, Any]:
    return {"environment": {"torch": "2.13.0", "seed": "7", "profile": "ci", "devices": ["cpu"]},
            "options": {"devices": devices or ["cpu"], "converters": ["meta", "fake"],
                        "examples": 5, "budget": None},
            "items": items,
            "failures": [f for i in items for f in i["failures"]]}


def _shard_docs() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two shards: the same failure signature in both, a crash twice in one,
    a known difference in both, an entry that did not occur in one."""
    a, b = _item("view", "fake", passed=3, failed=2, examples=5), _item("view", "meta", passed=5)
    # "later" stands for a count column report.py does not have (yet)
    c = _item("view_family", "fake", passed=1, failed=4, examples=5, crashed=1, later=2)
    sig = "metadata|view|fake|storage_offset"
    a["failures"] = [_failure(sig, a["nodeid"])]
    c["failures"] = [_failure(sig, c["nodeid"]), _failure("oracle|view_family|fake|x", c["nodeid"])]
    crash = {"signature": "crash|view_family|fake|SIGSEGV", "status": "crashed",
             "kind": "view_family", "converter": "fake", "nodeid": c["nodeid"], "signal": 11,
             "exit_status": -11, "frames": "frame 0\nframe 1", "reproducer": "import torch\n",
             "reproducer_file": "r/crash.py"}
    c["crashes"] = [crash, dict(crash)]
    a["known_differences"] = {"entry-x": 2}
    b["known_differences"] = {"entry-x": 1}
    b["unexpectedly_passing"] = [{"entry": "entry-y", "kind": "view", "converter": "meta",
                                  "examples": 5, "link": "https://example.org/y",
                                  "reproducer": "pass\n", "reproducer_file": "r/y.py",
                                  "nodeid": b["nodeid"]}]
    return _doc([a, b]), _doc([c])


def test_merge_deduplicates_by_signature_and_sums_every_column() -> None:
    one, two = _shard_docs()
    doc = report_merge.merge([one, two], ["1.json", "2.json"])
    assert [(i["kind"], i["converter"]) for i in doc["items"]] == [
        ("view", "fake"), ("view", "meta"), ("view_family", "fake")]
    assert doc["columns"] == [*COLUMNS, "later"]
    (shared,) = [f for f in doc["failures"] if f["signature"].startswith("metadata|view|")]
    assert len(doc["failures"]) == 2  # metadata|view|fake|... kept once
    assert shared["nodeids"] == [one["items"][0]["nodeid"], two["items"][0]["nodeid"]]
    (crash,) = doc["crashes"]
    assert crash["signal"] == 11 and crash["nodeids"] == [two["items"][0]["nodeid"]]
    assert doc["known_differences"] == {"entry-x": {"examples": 3,
                                                    "items": ["view-fake", "view-meta"]}}
    assert [p["entry"] for p in doc["unexpectedly_passing"]] == ["entry-y"]
    assert [i["file"] for i in doc["inputs"]] == ["1.json", "2.json"]
    text = report_merge.table(doc)
    assert re.search(r"^TOTAL\s+3 items\s+9\s+6\s", text, re.M), text
    assert text.splitlines()[0].split()[-1] == "later" and text.splitlines()[-1].endswith(" 2")


def test_merge_sums_an_item_run_twice_and_keeps_device_sets_apart() -> None:
    one, _ = _shard_docs()
    again, _ = _shard_docs()
    gpu = _doc([_item("view", "fake", passed=4, examples=4)], devices=["cuda:0"])
    doc = report_merge.merge([one, again, gpu])
    view_fake = [i for i in doc["items"] if (i["kind"], i["converter"]) == ("view", "fake")]
    assert [(i["devices"], i["counts"]["examples"]) for i in view_fake] == [
        (["cpu"], 10), (["cuda:0"], 4)]
    assert view_fake[0]["outcome"] == "failed"
    assert len(doc["failures"]) == 1
    assert "devices" in report_merge.table(doc).splitlines()[0]


def test_bad_input_is_an_error_naming_the_file(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "items"}')
    assert main(["merge", str(tmp_path / "out.json"), str(bad)]) == 2
    assert f"{bad}: not a metafidelity JSON report" in capsys.readouterr().err
    assert main(["html", str(tmp_path / "out.html"), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: cannot read" in capsys.readouterr().err


def test_new_failures_are_those_not_in_the_older_report(tmp_path: Path) -> None:
    one, two = _shard_docs()
    merged = report_merge.merge([one, two])
    assert {r.signature for r in new_failures(merged, report_merge.merge([one]))} == {
        "oracle|view_family|fake|x", "crash|view_family|fake|SIGSEGV"}
    paths = [tmp_path / n for n in ("new.json", "old.json")]
    paths[0].write_text(json.dumps(merged))
    paths[1].write_text(json.dumps(merged))
    out = tmp_path / "issue.md"
    assert main(["new-failures", str(out), str(paths[0]), str(paths[1])]) == 0
    assert not out.exists()  # nothing new: no issue body
    assert main(["new-failures", str(out), str(paths[0]), str(tmp_path / "none.json")]) == 0
    body = out.read_text()
    assert body.count("### ") == 3 and "Rerun: `pytest --metafidelity" in body
    assert "crashed (signal 11, exit status -11)" in body


def test_page_shows_every_section_and_loads_nothing(tmp_path: Path) -> None:
    one, two = _shard_docs()
    page = report_html.render(report_merge.merge([one, two], ["shard-1.json", "shard-2.json"]))
    for text in ('<table id="heatmap">', 'data-status="failed"', 'data-status="crashed"',
                 "storage_offset", "frame 1", "https://example.org/y", "shard-2.json",
                 'pytest --metafidelity "/path4/test_fidelity.py::test_fidelity[view-fake]"',
                 "entry-x", "torch</th><td>2.13.0"):
        assert text in page, text
    assert page.count('class="cell ') == 4  # 2 kinds x 2 converters
    assert 'data-status="not run"' in page  # view_family through meta did not run
    # Self-contained: nothing fetched at view time.
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    # Escaped: a reproducer cannot inject markup.
    one["items"][0]["failures"][0]["reproducer"] = "</pre><script>alert(1)</script>"
    assert "<script>alert(1)" not in report_html.render(one)


def test_a_crash_shows_its_frames_one_per_line() -> None:
    one, two = _shard_docs()
    page = report_html.render(report_merge.merge([one, two]))
    assert "<pre>frame 0\nframe 1</pre>" in page


def test_records_read_back_equal_and_written_again_unchanged() -> None:
    """Every record of a report is read into its typed record and written
    out again key for key, value for value, fields this version does not
    know included; a record missing optional fields gets their defaults
    once, and is then written unchanged."""
    one, two = _shard_docs()
    one["items"][0]["failures"][0]["from_a_later_version"] = [1, 2]
    merged = report_merge.merge([one, two])  # its records were written by to_json
    for raw in merged["items"]:
        item = ItemRecord.from_json(raw)
        assert item.to_json() == raw
        assert all(isinstance(f, Failure) for f in item.failures)
        assert all(isinstance(c, Crash) for c in item.crashes)
    for record_type, key in ((Failure, "failures"), (Crash, "crashes"),
                             (UnexpectedPass, "unexpectedly_passing")):
        assert merged[key], key
        for raw in merged[key]:
            assert record_type.from_json(raw).to_json() == raw
    for raw in one["items"]:  # written by hand, with fewer fields
        once = ItemRecord.from_json(raw).to_json()
        assert ItemRecord.from_json(once).to_json() == once
        assert {k: once[k] for k in raw if k != "failures"} == {
            k: v for k, v in raw.items() if k != "failures"}
    failure = ItemRecord.from_json(one["items"][0]).failures[0]
    assert failure.extra == {"from_a_later_version": [1, 2]}
    assert failure.to_json()["from_a_later_version"] == [1, 2]
    assert failure.traceback is None and "traceback" not in failure.to_json()


def test_a_record_missing_what_identifies_it_is_an_error_naming_it(tmp_path: Path,
                                                                  capsys: Any) -> None:
    with pytest.raises(ReportError, match="a failure record lacks 'signature'"):
        Failure.from_json({"kind": "dense", "converter": "meta"})
    with pytest.raises(ReportError, match="an item record's 'failures' must be a list"):
        ItemRecord.from_json({"nodeid": "n", "kind": "dense", "converter": "meta",
                              "failures": "none"})
    one, _ = _shard_docs()
    del one["items"][0]["kind"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(one))
    assert main(["html", str(tmp_path / "page.html"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: an item record lacks 'kind'" in err


def test_the_table_the_json_and_the_page_spell_each_status_one_way() -> None:
    """One vocabulary (``outcomes``): the count columns of the JSON report
    and the terminal table, and the statuses the HTML page shows."""
    from pytest_metafidelity.outcomes import ENDINGS, ITEM_OUTCOMES, KNOWN, STATUSES

    assert COLUMNS == (*ENDINGS, "examples") and set(STATUSES) <= set(ENDINGS)
    one, two = _shard_docs()
    one["items"][1]["counts"]["known-difference"] = 1
    doc = report_merge.merge([one, two])
    page = report_html.render(doc)
    shown = set(re.findall(r'data-status="([^"]+)"', page))
    assert KNOWN in shown and shown <= {*ENDINGS, "not run"}, shown
    assert {i["outcome"] for i in doc["items"]} <= set(ITEM_OUTCOMES)
    header = report_merge.table(doc).splitlines()[0].split()
    assert [c for c in header if c in ENDINGS] == list(ENDINGS)


# --- end to end --------------------------------------------------------------

SMALL = ["--metafidelity", "--metafidelity-kinds=dense,view,conj_neg,sparse_coo",
         "--metafidelity-converters=meta,fake,fake-dynamic", "--metafidelity-examples=3",
         "--hypothesis-seed=11", *QUIET]


def _run(pytester: pytest.Pytester, name: str, *args: str) -> Path:
    path = pytester.path / name
    result = pytester.runpytest_subprocess(*SMALL, f"--metafidelity-report={path}", *args)
    assert result.ret == 0, result.stdout.str()[-3000:]
    return path


def test_two_shards_merged_equal_one_unsharded_run(pytester: pytest.Pytester) -> None:
    whole = json.loads(_run(pytester, "whole.json").read_text())
    shards = [_run(pytester, f"shard{i}.json", f"--metafidelity-shard={i}/2") for i in (1, 2)]
    sizes = [len(json.loads(p.read_text())["items"]) for p in shards]
    assert sum(sizes) == 12 and min(sizes) >= 4  # balanced by cost
    out = pytester.path / "merged.json"
    cli = subprocess.run([sys.executable, "-m", "pytest_metafidelity.report", "merge", str(out),
                          *map(str, shards)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "TOTAL" in cli.stdout and "12 items" in cli.stdout
    merged = json.loads(out.read_text())

    def outcomes(doc: dict[str, Any]) -> dict[tuple[str, str], Any]:
        return {(i["kind"], i["converter"]): (i["outcome"], i["counts"], i["cases_digest"])
                for i in doc["items"]}

    assert outcomes(merged) == outcomes(whole)
    assert len(merged["items"]) == 12


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium not found (Debian: apt-get install chromium)")


def _browse(page: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=3000", "--window-size=1300,1100", *args,
         page.as_uri()], capture_output=True, text=True, timeout=120)


def _console(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


def test_console_errors_are_seen(tmp_path: Path) -> None:
    """The check below can fail: a page whose script throws is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    assert any("notDefined is not defined" in line for line in _console(_browse(page, "--dump-dom")))


def test_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    one, two = _shard_docs()
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps(report_merge.merge([one, two])))
    page = tmp_path / "page.html"
    assert main(["html", str(page), str(merged)]) == 0
    dom = _browse(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom) == []
    assert '<body data-ready="1">' in dom.stdout  # the page's script ran to its end
    heatmap = re.search(r'<table id="heatmap">.*?</table>', dom.stdout, re.S)
    assert heatmap and heatmap.group(0).count("<td class=\"cell") == 4
    screenshot = tmp_path / "page.png"
    shot = _browse(page, f"--screenshot={screenshot}")
    assert shot.returncode == 0 and _console(shot) == []
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000  # a rendered page, not a blank one
