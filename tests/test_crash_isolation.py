"""Runs that lose nothing: native crashes, exits and hangs become reported
cases with reproducers, and the run goes on (issue: crash-proof runs)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

# Converters made to die on purpose, on some inputs only: views with a
# nonzero storage offset.  Built on ``meta``, whose other outcomes on the
# ``view`` kind are all clean, so every failure below is the crash's.
CRASHY = textwrap.dedent(
    '''
    import ctypes
    import os
    import time

    from pytest_metafidelity.converters import MetaConverterAdapter, register_converter


    def _hits(t):
        return t._is_view() and t.storage_offset() != 0


    class Segfaulting(MetaConverterAdapter):
        """meta, but reads address 0 (SIGSEGV) on offset views."""
        name = "segfaulting"

        def _convert(self, t):
            if _hits(t):
                ctypes.string_at(0)
            return super()._convert(t)


    class Aborting(MetaConverterAdapter):
        """meta, but aborts (SIGABRT) on offset views."""
        name = "aborting"

        def _convert(self, t):
            if _hits(t):
                os.abort()
            return super()._convert(t)


    class Exiting(MetaConverterAdapter):
        """meta, but raises SystemExit(3) on offset views."""
        name = "exiting"

        def _convert(self, t):
            if _hits(t):
                raise SystemExit(3)
            return super()._convert(t)


    class Hanging(MetaConverterAdapter):
        """meta, but sleeps for an hour on offset views."""
        name = "hanging"

        def _convert(self, t):
            if _hits(t):
                time.sleep(3600)
            return super()._convert(t)


    for cls in (Segfaulting, Aborting, Exiting, Hanging):
        register_converter(cls)
    '''
)
DYING = ("segfaulting", "aborting", "exiting", "hanging")
# How each converter's reproducer must end when run standalone.
EXPECTED_RETURNCODE = {"segfaulting": -signal.SIGSEGV, "aborting": -signal.SIGABRT,
                       "exiting": 3}
COMMON = ["--metafidelity", "--metafidelity-kinds=view,dense", "--metafidelity-examples=25",
          "--metafidelity-example-timeout=4", "--metafidelity-shrink-crashes=20",
          "--hypothesis-seed=3", "-p", "no:cacheprovider",
          "-W", "ignore::pytest.PytestAssertRewriteWarning"]


@pytest.fixture
def crashy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(crashy_converters=CRASHY)
    pytester.makeconftest("import crashy_converters  # noqa: F401")
    return pytester


def _standalone(path: str, cwd: str, timeout: float) -> int | None:
    """The return code of running a reproducer file on its own (None: it
    was still running after ``timeout`` seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    try:
        return subprocess.run([sys.executable, path], cwd=cwd, env=env, timeout=timeout,
                              capture_output=True).returncode
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["default", "n2"])
def test_every_crash_is_reported_with_a_reproducer_and_every_item_runs(
    crashy: pytest.Pytester, workers: list[str]
) -> None:
    report = crashy.path / "report.json"
    converters = ",".join(("meta", *DYING))
    result = crashy.runpytest_subprocess(
        *COMMON, f"--metafidelity-converters={converters}", f"--metafidelity-report={report}",
        # Recorded crashes do not count against xdist's restart limit.
        "--max-worker-restart=1", *workers,
    )
    assert result.ret == 1
    doc = json.loads(report.read_text())
    items = {(i["kind"], i["converter"]): i for i in doc["items"]}
    # Every item ran and is in the JSON report and in the table.
    assert set(items) == {(k, c) for k in ("view", "dense") for c in ("meta", *DYING)}
    out = result.stdout.str()
    for kind, converter in items:
        assert any(line.split()[:2] == [kind, converter] for line in out.splitlines())
    assert "maximum crashed workers reached" not in out

    for converter in DYING:
        item = items[("view", converter)]
        (crash,) = item["crashes"]
        status = "hung" if converter == "hanging" else "crashed"
        assert crash["status"] == status and item["counts"][status] == 1
        assert item["outcome"] == "failed"
        if converter in ("segfaulting", "aborting"):
            assert crash["signal"] == {"segfaulting": "SIGSEGV", "aborting": "SIGABRT"}[converter]
            assert "crashy_converters.py" in crash["frames"]  # faulthandler's last frames
        if converter == "exiting":
            assert crash["exit_status"] == 3
        if converter == "hanging":
            assert "crashy_converters.py" in crash["frames"] and crash["timeout"] == 4
        source = open(crash["reproducer_file"]).read()
        assert f"converters=[{converter!r}]" in source and "import crashy_converters" in source
        code = _standalone(crash["reproducer_file"], str(crashy.path), timeout=20)
        if converter == "hanging":
            assert code is None  # it hangs standalone too
        else:
            assert code == EXPECTED_RETURNCODE[converter], (converter, code)
    # The clean items stay clean: the crashes did not leak into other items.
    assert items[("view", "meta")]["outcome"] == "passed"
    assert {c["signature"] for c in doc["crashes"]} == {
        c["signature"] for i in doc["items"] for c in i["crashes"]}
    for line in ("*metafidelity: 4 crash(es) and hang(s)*", "*crashed (SIGSEGV)*",
                 "*crashed (SIGABRT)*", "*crashed (exit status 3)*", "*hung (no result within 4*"):
        result.stdout.fnmatch_lines([line])


def test_a_crash_is_replayed_first_by_the_next_run(crashy: pytest.Pytester) -> None:
    # An explicit database: under CI=true Hypothesis' default profile has none.
    args = ["--metafidelity", "--metafidelity-kinds=view", "--metafidelity-converters=segfaulting",
            "--metafidelity-examples=40", "--metafidelity-shrink-crashes=0", "-p", "no:cacheprovider",
            f"--metafidelity-database={crashy.path / 'examples'}"]
    first = crashy.runpytest_subprocess(*args, f"--metafidelity-report={crashy.path / 'a.json'}")
    assert first.ret == 1
    (crash,) = json.loads((crashy.path / "a.json").read_text())["crashes"]
    assert crash["saved_to_database"] is True
    second = crashy.runpytest_subprocess(*args, f"--metafidelity-report={crashy.path / 'b.json'}")
    assert second.ret == 1
    (again,) = json.loads((crashy.path / "b.json").read_text())["crashes"]
    assert again["example"] == 0  # the first example of the next run is the saved case
    assert again["signal"] == "SIGSEGV"


def test_in_process_crash_is_reported_by_the_next_run(crashy: pytest.Pytester) -> None:
    args = ["--metafidelity", "--metafidelity-kinds=view", "--metafidelity-examples=40",
            "--metafidelity-shrink-crashes=0", "-p", "no:cacheprovider", "-n", "0"]
    # Up to 200 examples: the run dies at the first offset view (CI once drew
    # none in 40); without a crash every example would run.
    died = crashy.runpytest_subprocess(*args, "--metafidelity-converters=segfaulting",
                                       "--metafidelity-examples=200")
    assert died.ret == -signal.SIGSEGV, died.stdout.str()  # -n 0: nothing isolates the suite
    report = crashy.path / "report.json"
    after = crashy.runpytest_subprocess(*args, "--metafidelity-converters=meta",
                                        f"--metafidelity-report={report}")
    after.stdout.fnmatch_lines(["*[[]crashed[]] view through segfaulting: crashed (SIGSEGV) "
                                "(in an earlier run that died)*"])
    (crash,) = json.loads(report.read_text())["crashes"]
    assert crash["earlier_run"] and _standalone(crash["reproducer_file"], str(crashy.path),
                                                20) == -signal.SIGSEGV


def test_crashes_are_shrunk_in_child_processes(pytester: pytest.Pytester) -> None:
    # Dies on any view with 4 or more elements: the first crash found is
    # rarely the smallest.
    pytester.makepyfile(big_crash=textwrap.dedent(
        '''
        import ctypes
        from pytest_metafidelity.converters import MetaConverterAdapter, register_converter

        class BigViews(MetaConverterAdapter):
            """meta, but segfaults on views of 4 or more elements."""
            name = "big-views"

            def _convert(self, t):
                if t._is_view() and t.numel() >= 4:
                    ctypes.string_at(0)
                return super()._convert(t)

        register_converter(BigViews)
        '''))
    pytester.makeconftest("import big_crash  # noqa: F401")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=view", "--metafidelity-converters=big-views",
        "--metafidelity-examples=60", "--metafidelity-shrink-crashes=60", "--hypothesis-seed=11",
        f"--metafidelity-report={report}", "-p", "no:cacheprovider")
    assert result.ret == 1
    (crash,) = json.loads(report.read_text())["crashes"]
    assert crash["shrinking"].startswith("shrunk from"), crash["shrinking"]
    assert crash["reproduces"] is True
    assert _standalone(crash["reproducer_file"], str(pytester.path), 20) == -signal.SIGSEGV
    result.stdout.fnmatch_lines(["*shrinking: shrunk from * candidate(s) run in child processes*"])


def test_a_budget_is_spent(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    budget = 10.0
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta,fake",
        f"--metafidelity-budget={budget}", f"--metafidelity-report={report}",
        "-p", "no:cacheprovider")
    assert result.ret == 0
    items = json.loads(report.read_text())["items"]
    spent = sum(i["spending"]["seconds"] for i in items)
    assert spent >= 0.8 * budget, [i["spending"] for i in items]
    # Past the old 50-example cap, in rounds -- where the machine runs fast
    # enough for that (a loaded two-core machine ran 2.6 examples/s).
    examples = [i["counts"]["examples"] for i in items]
    if sum(examples) / spent * budget / len(items) >= 100:
        assert max(examples) > 50, examples
    assert sum(i["spending"]["rounds"] for i in items) > len(items)
    result.stdout.fnmatch_lines(["metafidelity: 2 items, * examples (*/s) in * s of items' time, "
                                 "* rounds*"])


# A registered check that fails in a helper whose argument is a tensor on a
# zero-byte storage: torch's repr of it reads the missing bytes and
# segfaults, and pytest's traceback prints every frame's arguments.
FAILS_BESIDE_AN_UNPRINTABLE_TENSOR = textwrap.dedent(
    '''
    import torch

    from pytest_metafidelity.checks import check


    def _compare(unprintable, conv):
        raise ValueError("the check gave up")


    @check("unprintable", "fails beside a tensor torch cannot print")
    def unprintable_check(conv):
        t = torch.arange(4.0)
        t.untyped_storage().resize_(0)
        _compare(t, conv)
    '''
)


@pytest.mark.parametrize("flags", [[], ["--showlocals", "--tb=long"]], ids=["default", "locals"])
def test_a_failure_is_reported_without_printing_its_frames_tensors(
        pytester: pytest.Pytester, flags: list[str]) -> None:
    pytester.makeconftest(FAILS_BESIDE_AN_UNPRINTABLE_TENSOR)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
        "--metafidelity-checks=metadata,unprintable", "--metafidelity-examples=5",
        f"--metafidelity-report={report}", "-p", "no:cacheprovider", *flags)
    out = result.stdout.str()
    assert "node down" not in out and "worker 'gw0' crashed" not in out
    result.assert_outcomes(failed=1)
    # The finding's own text: the check's traceback (no arguments), the
    # reproducer, Hypothesis' falsifying example.
    result.stdout.fnmatch_lines([
        "FidelityError: internal error in check 'unprintable'*",
        "*in _compare*", "*ValueError: the check gave up",
        "Reproducer (runnable Python):", "*assert_faithful(t0, converters=*",
        "Fa*: test_fidelity(*",  # "Falsifying example" ("Failing test case" after 6.16x)
    ])
    assert "conv = Conversion(" not in out and "unprintable = " not in out
    [item] = json.loads(report.read_text())["items"]
    assert item["counts"]["internal-error"] >= 1 and not item["crashes"]


# A failing check, and a plugin whose formatting of a suite item's failure
# aborts the process: a crash while a failure is reported.
CRASHES_WHILE_REPORTING = textwrap.dedent(
    '''
    import os

    import pytest

    from pytest_metafidelity.checks import Mismatch, check


    @check("always-fails", "reports one mismatch on every input")
    def always_fails(conv):
        return [Mismatch(check="always-fails", path="t0", attribute="stride()", real=(1,),
                         fake=(2,))]


    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(items):
        for item in items:
            item.repr_failure = lambda excinfo, *args: os.abort()
    '''
)


def test_a_crash_while_a_failure_is_reported_keeps_the_case(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CRASHES_WHILE_REPORTING)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
        "--metafidelity-checks=always-fails", "--metafidelity-examples=5",
        f"--metafidelity-report={report}", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*crashed (SIGABRT) while its failure was being reported*"])
    doc = json.loads(report.read_text())
    [item] = doc["items"]
    [crash] = item["crashes"]
    assert crash["status"] == "crashed" and crash["signal"] == "SIGABRT"
    # (the first failure Hypothesis formats: a found one, or only the
    # shrunk one in later Hypothesis versions)
    assert crash["while_reporting"] is True and crash["example"] >= 0
    assert "conftest.py" in crash["frames"]  # where it died: the formatting
    assert crash["shrinking"].startswith("not shrunk: it crashed while its failure")
    # The reproducer is the failing example's, and shows the failure standalone.
    source = open(crash["reproducer_file"]).read()
    assert "checks=['always-fails']" in source
    assert _standalone(crash["reproducer_file"], str(pytester.path), timeout=60) == 1


# A program step that crashes torch while the program is drawn (drawing
# runs each step on a copy of the real tensors): here every step segfaults.
CRASHING_DRAW = textwrap.dedent(
    '''
    import ctypes

    from pytest_metafidelity.strategies import programs


    def crashing_run_step(step, namespace):
        ctypes.string_at(0)


    programs.run_step = crashing_run_step
    '''
)


def _run_with_a_crashing_draw(pytester: pytest.Pytester, shrink_seconds: int
                              ) -> tuple[Any, dict[str, Any]]:
    """A run of dense x meta whose program steps segfault while drawn: the
    run's result and its one crash record."""
    pytester.makeconftest(CRASHING_DRAW)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
        "--metafidelity-examples=5", f"--metafidelity-shrink-crashes={shrink_seconds}",
        "-p", "no:cacheprovider", f"--metafidelity-report={report}",
        "-W", "ignore::pytest.PytestAssertRewriteWarning")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    (crash,) = json.loads(report.read_text())["crashes"]
    return result, crash


def test_a_crash_while_a_program_is_drawn_keeps_the_case(pytester: pytest.Pytester) -> None:
    _, crash = _run_with_a_crashing_draw(pytester, shrink_seconds=0)
    assert (crash["kind"], crash["converter"], crash["signal"]) == ("dense", "meta", "SIGSEGV")
    # The case: its recipe, the program up to the step that crashed, and the
    # frames of that step.
    source = open(crash["reproducer_file"]).read()
    assert "# kinds: dense" in source and "assert_faithful(" in source, source
    assert "program = Program.parse('''" in source and "program=program" in source, source
    assert "crashing_run_step" in json.dumps(crash), crash


def test_a_crash_while_shrinking_draws_a_candidate_ends_neither_the_run_nor_its_report(
        pytester: pytest.Pytester) -> None:
    # Shrinking redraws the crashed case and its program (the same draws the
    # suite makes, steps run on a copy of the real tensors): here that
    # segfaults again.  It once did so in the controller, which died before
    # writing the summary and the report.
    result, crash = _run_with_a_crashing_draw(pytester, shrink_seconds=60)
    result.stdout.fnmatch_lines(["*crashed (SIGSEGV)*"])
    assert crash["shrinking"].startswith(
        "not shrunk: the process shrinking it killed by SIGSEGV while drawing"), crash
    source = open(crash["reproducer_file"]).read()
    assert "# kinds: dense" in source and "assert_faithful(" in source, source


# A recipe line that crashes torch while the example is drawn (drawing runs
# each line): here a kind of the conftest's whose third line segfaults when
# the size it drew is 2 or more.
CRASHING_RECIPE = textwrap.dedent(
    '''
    from hypothesis import strategies as st

    from pytest_metafidelity.strategies.kinds import kind


    @kind("crashing_recipe", "a tensor whose recipe segfaults for sizes of 2 or more",
          programs="a test kind", cost_ms=1)
    def crashing_recipe_kind(draw, b, cfg):
        n = draw(st.integers(0, 3))
        t = b.let(f"torch.zeros({n})")
        b.need("import ctypes")
        if n >= 2:
            b.stmt("ctypes.string_at(0)")
        return [t]
    '''
)


def test_a_crash_while_a_recipe_is_drawn_keeps_the_case(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CRASHING_RECIPE)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=crashing_recipe",
        "--metafidelity-converters=meta", "--metafidelity-examples=20",
        "--metafidelity-shrink-crashes=0", "-p", "no:cacheprovider",
        f"--metafidelity-report={report}", "-W", "ignore::pytest.PytestAssertRewriteWarning")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    # The item is in the table and the report as crashed (it once vanished
    # from both: the journal only heard of an example once it was drawn).
    result.stdout.fnmatch_lines(["*crashing_recipe*meta*1*", "*[[]crashed[]] crashing_recipe "
                                 "through meta: crashed (SIGSEGV)*"])
    (crash,) = json.loads(report.read_text())["crashes"]
    assert (crash["kind"], crash["signal"]) == ("crashing_recipe", "SIGSEGV"), crash
    assert crash["choices"], crash  # the draws so far: they replay up to the line
    # The case: the recipe up to the line that crashed, which crashes on its own.
    source = open(crash["reproducer_file"]).read()
    assert re.search(r"t0 = torch\.zeros\([23]\)\nctypes\.string_at\(0\)\n", source), source
    assert _standalone(crash["reproducer_file"], str(pytester.path), timeout=60) == -signal.SIGSEGV
