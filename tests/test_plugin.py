"""The pytest plugin end to end, through pytester."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import textwrap

import pytest

FAST = ["--metafidelity-examples=3", "-p", "no:cacheprovider",
        "-W", "ignore::pytest.PytestAssertRewriteWarning"]

# A converter made faulty on purpose: fake views lose their storage offset.
DROP_VIEW_OFFSET = textwrap.dedent(
    """
    import pytest
    from torch._subclasses.fake_tensor import FakeTensorMode

    _original = FakeTensorMode.from_tensor

    def _drops_view_offset(self, t, **kwargs):
        fake = _original(self, t, **kwargs)
        if t._is_view() and fake.storage_offset() != 0:
            fake = fake._base.as_strided(fake.shape, fake.stride(), 0)
        return fake

    @pytest.fixture(autouse=True)
    def faulty_converter(monkeypatch):
        monkeypatch.setattr(FakeTensorMode, "from_tensor", _drops_view_offset)
    """
)


def test_plugin_import_does_not_import_torch() -> None:
    code = (
        "import sys, pytest_metafidelity, pytest_metafidelity.plugin;"
        "assert 'torch' not in sys.modules, 'torch imported';"
        "assert 'hypothesis' not in sys.modules, 'hypothesis imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plain_pytest_run_does_not_import_torch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user="""
        import sys
        def test_no_torch():
            assert "torch" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_no_paths_runs_only_the_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user="def test_user(): pass")
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense,view", "--metafidelity-converters=fake",
        "-v", *FAST,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_fidelity?dense-fake?*", "*test_fidelity?view-fake?*"])
    assert "test_user" not in result.stdout.str()


def test_paths_run_the_suite_and_those_tests(pytester: pytest.Pytester) -> None:
    path = pytester.makepyfile(test_user="def test_user(): pass")
    result = pytester.runpytest_subprocess(
        str(path), "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=fake",
        "-v", *FAST,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*PASSED*test_user.py::test_user*"])  # one xdist worker


def test_stock_torch_passes_and_prints_the_table(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense,view",
        "--metafidelity-converters=meta,fake,fake-dynamic", "--metafidelity-checks=metadata,aliasing",
        *FAST,
    )
    result.stdout.fnmatch_lines(["*metafidelity: kinds x converters*", "kind*converter*passed*failed*"])
    result.stdout.fnmatch_lines(["view*fake-dynamic*3*0*"])


@pytest.mark.parametrize(
    "option, value, valid",
    [
        ("--metafidelity-kinds", "dense,nope", "dense"),
        ("--metafidelity-converters", "fake,nope", "fake-dynamic"),
        ("--metafidelity-checks", "nope", "aliasing"),
        ("--metafidelity-profile", "nope", "nightly"),
        ("--metafidelity-devices", "nope", "cpu"),
        ("--metafidelity-examples", "zero", "number"),
    ],
)
def test_bad_option_is_a_usage_error(
    pytester: pytest.Pytester, option: str, value: str, valid: str
) -> None:
    result = pytester.runpytest_subprocess("--metafidelity", f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    bad = value.split(",")[-1]
    assert option in err
    assert bad in err  # the bad value, quoted or not
    assert valid in err


def test_faulty_converter_fails_with_a_reproducer(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(DROP_VIEW_OFFSET)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=view", "--metafidelity-converters=fake",
        "--metafidelity-examples=30", f"--metafidelity-report={report}", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "storage_offset" in out
    assert "Reproducer (runnable Python)" in out
    # Shrunk without Hypothesis' explain phase (its tracing slows shrinking
    # several times, and it names lines of our own checks).
    assert "Explanation:" not in out and "always and only run by failing" not in out
    doc = json.loads(report.read_text())
    (failure,) = [f for f in doc["failures"]
                  if f["check"] == "metadata" and "storage_offset" in f["attribute"]]
    assert failure["kind"] == "view" and failure["converter"] == "fake"
    assert int(failure["fake"]) == 0 and int(failure["real"]) != 0

    # The reproducer file rebuilds the tensors: it passes on stock torch ...
    script = failure["reproducer_file"]
    runpy.run_path(script, run_name="__main__")
    # ... and fails the same way under the same faulty converter.
    from torch._subclasses.fake_tensor import FakeTensorMode

    namespace: dict = {}
    exec(DROP_VIEW_OFFSET, namespace)
    mp = pytest.MonkeyPatch()
    mp.setattr(FakeTensorMode, "from_tensor", namespace["_drops_view_offset"])
    try:
        from pytest_metafidelity import FidelityError

        with pytest.raises(FidelityError) as info:
            runpy.run_path(script, run_name="__main__")
    finally:
        mp.undo()
    (mismatch,) = [m for o in info.value.result.failures for m in o.mismatches
                   if m.check == "metadata" and "storage_offset" in m.attribute]
    assert (repr(mismatch.real), repr(mismatch.fake)) == (failure["real"], failure["fake"])


def _report(pytester: pytest.Pytester, name: str, *args: str) -> dict:
    path = pytester.path / name
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense,view",
        "--metafidelity-converters=meta,fake", "--metafidelity-examples=4",
        "--hypothesis-seed=7", f"--metafidelity-report={path}", *args, *FAST[1:],
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*metafidelity: kinds x converters*", "TOTAL*4 items*"])
    return json.loads(path.read_text())


def test_xdist_aggregates_and_same_seed_gives_same_cases(pytester: pytest.Pytester) -> None:
    serial = _report(pytester, "serial.json")
    parallel = _report(pytester, "parallel.json", "-n", "2")
    assert len(parallel["items"]) == 4
    by_id = {i["nodeid"]: i for i in serial["items"]}
    for item in parallel["items"]:
        twin = by_id[item["nodeid"]]
        assert item["counts"] == twin["counts"]
        assert item["cases_digest"] == twin["cases_digest"] != ""
    assert str(serial["environment"]["seed"]) == "7"
    assert serial["environment"]["torch"].startswith("2.")


def test_each_item_of_a_kind_draws_its_own_examples_under_a_forced_seed(
        pytester: pytest.Pytester) -> None:
    """Under --hypothesis-seed every item's first round has a seed of its
    own: the items of a kind (one per converter) would otherwise draw the
    same examples, as they share one inner test function.  The same seed
    still draws the same examples for each item, run after run."""
    def digests(name: str) -> dict[str, str]:
        path = pytester.path / name
        result = pytester.runpytest_subprocess(
            "--metafidelity", "--metafidelity-kinds=dense",
            "--metafidelity-converters=fake,refake", "--metafidelity-examples=4",
            "--hypothesis-seed=7", f"--metafidelity-report={path}", *FAST[1:])
        result.assert_outcomes(passed=2)
        return {i["converter"]: i["cases_digest"] for i in json.loads(path.read_text())["items"]}

    first = digests("first.json")
    assert first["fake"] != first["refake"]
    assert digests("again.json") == first


def test_options_from_ini_and_environment(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        metafidelity = true
        metafidelity_kinds = dense
        metafidelity_converters = meta
        metafidelity_examples = 2
        """
    )
    result = pytester.runpytest_subprocess("-v", *FAST[1:])
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PASSED*test_fidelity?dense-meta?*"])
    # The environment beats the ini file; the command line beats both.
    pytester._monkeypatch.setenv("METAFIDELITY_KINDS", "view")
    result = pytester.runpytest_subprocess("-v", *FAST[1:])
    result.stdout.fnmatch_lines(["*PASSED*test_fidelity?view-meta?*"])
    result = pytester.runpytest_subprocess("-v", "--metafidelity-kinds=conj_neg", *FAST[1:])
    result.stdout.fnmatch_lines(["*PASSED*test_fidelity?conj_neg-meta?*"])


def test_hypothesis_statistics_cover_suite_items(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=fake",
        "--hypothesis-show-statistics", *FAST,
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "Hypothesis Statistics" in out and "kind: dense" in out


def test_failures_are_listed_once_per_signature(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(DROP_VIEW_OFFSET)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=view,view_family", "--metafidelity-converters=fake",
        "--metafidelity-examples=30", f"--metafidelity-report={report}", *FAST[1:],
    )
    doc = json.loads(report.read_text())
    signatures = [f["signature"] for f in doc["failures"]]
    assert signatures and len(signatures) == len(set(signatures))
    summary = result.stdout.str().split("distinct failure(s)")[1]
    assert summary.count("reproducer: ") == len(signatures)
    for f in doc["failures"]:
        assert (pytester.path / f["reproducer_file"]).exists()


# A registered difference that never occurs: expected on every tensor the
# "fake" converter sees, so the suite reports it as unexpectedly passing.
NEVER_OCCURS = textwrap.dedent(
    """
    import pytest
    from pytest_metafidelity import known_differences as kd

    NEVER = kd.KnownDifference(
        id="test-never-occurs", check="metadata", attribute="never",
        applies=lambda case: case.tensor is not None, converters=("fake",),
        reason="a difference that never occurs",
        link="https://github.com/pytorch/pytorch/issues/1", reproducer="pass\\n",
    )

    @pytest.fixture(autouse=True)
    def never_occurs(monkeypatch):
        monkeypatch.setattr(kd, "KNOWN_DIFFERENCES", [*kd.KNOWN_DIFFERENCES, NEVER])
    """
)


def test_entries_that_did_not_occur_are_named_with_a_reproducer(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NEVER_OCCURS)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta,fake",
        f"--metafidelity-report={report}", *FAST,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*metafidelity: known differences that did not occur (fixed upstream?)*",
        "test-never-occurs (https://github.com/pytorch/pytorch/issues/1): dense through fake (3x)",
        "    reproducer: *dense-fake-passing-test-never-occurs.py",
    ])
    items = {i["converter"]: i for i in json.loads(report.read_text())["items"]}
    assert items["meta"]["unexpectedly_passing"] == []
    (passing,) = items["fake"]["unexpectedly_passing"]
    assert (passing["entry"], passing["examples"]) == ("test-never-occurs", 3)
    assert items["fake"]["counts"]["unexpectedly-passing"] == 3
    script = (pytester.path / passing["reproducer_file"]).read_text()
    assert "known difference test-never-occurs did not occur for dense through fake" in script
    assert passing["reproducer"] in script and "assert_faithful(" in script


LOADER_PROBE = """
import sys

def pytest_sessionfinish(session):
    import hypothesis.core
    with open("loader.txt", "w") as f:
        f.write(type(hypothesis.core.__spec__.loader).__name__)
"""


@pytest.mark.parametrize("metafidelity", [True, False])
def test_a_metafidelity_run_imports_hypothesis_without_rewriting_its_asserts(
        pytester: pytest.Pytester, metafidelity: bool) -> None:
    # pytest rewrites every module of a plugin's distribution, Hypothesis'
    # 70-odd among them, in every process (uncached where no bytecode is
    # written): the suite does not need them rewritten.  Other runs keep
    # pytest's behaviour.
    pytester.makeconftest(LOADER_PROBE)
    pytester.makepyfile(test_one="def test_one():\n    import hypothesis\n")
    args = (["--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
             "--metafidelity-examples=1", "-n", "0"] if metafidelity else [])
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    loader = (pytester.path / "loader.txt").read_text()
    assert (loader == "AssertionRewritingHook") is not metafidelity, loader


FREEZE_PROBE = """
import atexit, gc, os

def pytest_configure(config):
    if hasattr(config, "workerinput"):
        def note():
            with open(os.path.join(config.rootpath, "frozen.txt"), "w") as f:
                f.write(str(gc.get_freeze_count()))
        atexit.register(note)
"""


def test_a_worker_exits_without_collecting_what_torch_left(pytester: pytest.Pytester) -> None:
    # Its last report sent, a worker freezes its objects: the interpreter's
    # exit then skips the collector's passes over torch's (about 0.5 s of
    # every -x run).  Nothing is frozen in the controller.
    pytester.makeconftest(FREEZE_PROBE)
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=meta",
        "--metafidelity-examples=1", "-n", "1", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert int((pytester.path / "frozen.txt").read_text()) > 0
