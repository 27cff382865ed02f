"""--metafidelity-database: parsing, the databases built, the Hypothesis
version marker, and a real redis-server shared by two runs (and lost
mid-run)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis.database import (DirectoryBasedExampleDatabase, GitHubArtifactDatabase,
                                 InMemoryExampleDatabase, MultiplexedDatabase, ReadOnlyDatabase)

from pytest_metafidelity import databases
from pytest_metafidelity.options import OptionError

from process_time_limits import run_limited
from test_plugin import DROP_VIEW_OFFSET

QUIET = ["-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


def test_parse_each_form() -> None:
    directory, read_only, redis_db, artifact = databases.parse(
        " .hypothesis/shared , ro:/tmp/x,redis://127.0.0.1:6380/2,github-artifact:me/proj:db")
    assert (directory.kind, directory.target, directory.read_only) == (
        "directory", ".hypothesis/shared", False)
    assert (read_only.kind, read_only.target, read_only.read_only) == ("directory", "/tmp/x", True)
    assert (redis_db.kind, redis_db.target) == ("redis", "redis://127.0.0.1:6380/2")
    assert (artifact.kind, artifact.target, artifact.artifact, artifact.read_only) == (
        "github-artifact", "me/proj", "db", True)
    assert databases.parse(None) == databases.parse("  ") == ()
    assert databases.parse("github-artifact:me/proj")[0].artifact is None
    # A password in a URL stays out of what is shown (warnings, errors).
    (secret,) = databases.parse("redis://user:s3cret@host:6379/0")
    assert secret.text == "redis://user:***@host:6379/0" and "s3cret" in secret.target
    with pytest.raises(OptionError) as info:
        databases.parse("redis://:s3cret@host:6379/x")
    assert "s3cret" not in str(info.value) and "redis://:***@host:6379/x" in str(info.value)


@pytest.mark.parametrize("spec, bad", [
    ("ftp://host/db", "ftp://host/db"),
    ("db,,other", "db,,other"),
    ("ro:", "ro:"),
    ("github-artifact:justowner", "github-artifact:justowner"),
    ("github-artifact:a/b:c:d", "github-artifact:a/b:c:d"),
    ("redis://:6379/0", "redis://:6379/0"),
    ("redis://host:port/0", "redis://host:port/0"),
    ("redis://host:6379/zero", "redis://host:6379/zero"),
])
def test_bad_spec_names_the_value_and_what_is_allowed(spec: str, bad: str) -> None:
    with pytest.raises(OptionError) as info:
        databases.parse(spec)
    message = str(info.value)
    assert "--metafidelity-database" in message and repr(bad) in message
    assert "redis://HOST[:PORT][/DB]" in message and "github-artifact:OWNER/REPO" in message


def test_missing_redis_client_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = databases.importlib.util.find_spec
    monkeypatch.setattr(databases.importlib.util, "find_spec",
                        lambda name, *a: None if name == "redis" else real_find_spec(name, *a))
    with pytest.raises(OptionError, match=r"pip install 'pytest-metafidelity\[redis\]'"):
        databases.parse("redis://localhost:6379/0")


def test_bad_spec_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--metafidelity", "--metafidelity-database=ftp://x/y")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--metafidelity-database: 'ftp://x/y' has the unknown scheme 'ftp'" in result.stderr.str()


def test_build_composes_hypothesis_databases(tmp_path: Path) -> None:
    db = databases.build(databases.parse(f"{tmp_path / 'a'},ro:{tmp_path / 'b'},"
                                         "github-artifact:me/proj:nightly-db"))
    assert isinstance(db, MultiplexedDatabase)
    local, read_only, artifact = db._wrapped
    assert isinstance(local, DirectoryBasedExampleDatabase)
    assert isinstance(read_only, ReadOnlyDatabase)
    assert isinstance(read_only._wrapped, DirectoryBasedExampleDatabase)
    # The artifact database cannot write: wrapped read-only, though not asked.
    assert isinstance(artifact, ReadOnlyDatabase)
    github = artifact._wrapped.db
    assert isinstance(github, GitHubArtifactDatabase)
    assert (github.owner, github.repo, github.artifact_name) == ("me", "proj", "nightly-db")
    db.save(b"k", b"v")
    assert list(local.fetch(b"k")) == [b"v"] and list(read_only.fetch(b"k")) == []
    single = databases.build(databases.parse(str(tmp_path / "c")))
    assert isinstance(single, DirectoryBasedExampleDatabase)


class Unreachable(InMemoryExampleDatabase):
    """A database whose server went away after ``ok`` calls."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    def _call(self) -> None:
        self.ok -= 1
        if self.ok < 0:
            raise ConnectionError("Connection refused")

    def fetch(self, key: bytes) -> Iterator[bytes]:
        self._call()
        return super().fetch(key)

    def save(self, key: bytes, value: bytes) -> None:
        self._call()
        super().save(key, value)


def test_lost_database_is_one_warning_then_skipped() -> None:
    server = Unreachable(ok=2)
    db = databases._tolerant_class()(server, "redis://gone:1/0")
    db.save(b"k", b"v")
    assert list(db.fetch(b"k")) == [b"v"]
    with pytest.warns(databases.DatabaseWarning,
                      match=r"example database redis://gone:1/0 is unavailable "
                            r"\(ConnectionError: Connection refused\); the run goes on"):
        db.save(b"k", b"w")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(db.fetch(b"k")) == []  # no second warning, no error
        db.save(b"k", b"x")
        db.move(b"k", b"j", b"x")
    assert server.ok == -1  # not called again once lost


def test_version_marker_warns_on_another_hypothesis(tmp_path: Path) -> None:
    import hypothesis

    db = DirectoryBasedExampleDatabase(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        databases.check_version(db, "DB")  # empty: no warning
        databases.check_version(db, "DB")  # same version: no warning
    assert list(db.fetch(databases.VERSION_KEY)) == [hypothesis.__version__.encode()]
    db.delete(databases.VERSION_KEY, hypothesis.__version__.encode())
    db.save(databases.VERSION_KEY, b"6.123.0")
    with pytest.warns(databases.DatabaseWarning,
                      match=r"example database DB was written by Hypothesis 6\.123\.0, this run "
                            r"uses .*every runner sharing a database must run the same Hypothesis"):
        databases.check_version(db, "DB")
    assert list(db.fetch(databases.VERSION_KEY)) == [hypothesis.__version__.encode()]


# --- a real redis-server ---------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Any]:
    """A redis-server on 127.0.0.1 at a free port, stopped afterwards."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server not found (Debian: apt-get install redis-server)")
    redis = pytest.importorskip("redis", reason="the redis client is not installed "
                                                "(pip install 'pytest-metafidelity[redis]')")
    port = _free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    try:
        yield proc, port, client
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=20)


def _suite(pytester: pytest.Pytester, *args: str) -> Any:
    return pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=view", "--metafidelity-converters=fake", *args,
        *QUIET)


def test_failure_stored_in_redis_is_replayed_first_by_another_run(
    pytester: pytest.Pytester, redis_server: Any
) -> None:
    _, port, client = redis_server
    pytester.makeconftest(DROP_VIEW_OFFSET)
    shared = f"--metafidelity-database=redis://127.0.0.1:{port}/0"
    first = _suite(pytester, "--metafidelity-examples=30", shared)
    first.assert_outcomes(failed=1)
    assert client.keys(b"hypothesis-example:*"), "nothing was stored in redis"
    # One example per item: the first example Hypothesis generates (the
    # simplest, a view at offset 0) passes, so only a replay can fail.
    empty = f"--metafidelity-database=redis://127.0.0.1:{port}/1"
    _suite(pytester, "--metafidelity-examples=1", empty).assert_outcomes(passed=1)
    second = _suite(pytester, "--metafidelity-examples=1", shared)
    second.assert_outcomes(failed=1)
    assert "storage_offset" in second.stdout.str()


# Stops the redis server (pid in METAFIDELITY_TEST_REDIS_PID) before the
# second suite item: the first ran with the database, the second loses it.
# (A fixture, not a hook: the suite lives outside this conftest's directory.)
STOP_REDIS_BEFORE_SECOND_ITEM = textwrap.dedent(
    """
    import os, signal, time

    @pytest.fixture(autouse=True)
    def stop_redis_before_second_item(request):
        if request.node.nodeid.endswith("[view-fake]"):
            os.kill(int(os.environ["METAFIDELITY_TEST_REDIS_PID"]), signal.SIGKILL)
            time.sleep(0.5)
    """
)


def test_losing_redis_mid_run_is_a_warning_and_keeps_results(
    pytester: pytest.Pytester, redis_server: Any
) -> None:
    proc, port, _ = redis_server
    pytester.makeconftest(DROP_VIEW_OFFSET + STOP_REDIS_BEFORE_SECOND_ITEM)
    pytester._monkeypatch.setenv("METAFIDELITY_TEST_REDIS_PID", str(proc.pid))
    report = pytester.path / "report.json"
    spec = f"redis://127.0.0.1:{port}/0"
    result = pytester.runpytest_subprocess(
        "--metafidelity", "--metafidelity-kinds=view", "--metafidelity-converters=meta,fake",
        "--metafidelity-examples=30", f"--metafidelity-database={spec}",
        f"--metafidelity-report={report}", "-p", "no:randomly", *QUIET)
    assert proc.wait(timeout=10) is not None  # the server really is gone
    result.assert_outcomes(passed=1, failed=1)  # not an internal error
    out = result.stdout.str()
    assert out.count(f"the example database {spec} is unavailable") == 1, out[-3000:]
    assert "the run goes on without it" in out
    doc = json.loads(report.read_text())
    assert any(f["converter"] == "fake" and "storage_offset" in f["attribute"]
               for f in doc["failures"])


ITEM_SETTINGS = textwrap.dedent(
    """
    import sys
    from hypothesis import settings
    from pytest_metafidelity import databases
    from pytest_metafidelity.options import PROFILES, SuiteOptions
    from pytest_metafidelity.suite.run import SuiteRun
    from pytest_metafidelity.suite.runner import item_settings

    def options(profile, spec):
        return SuiteOptions(kinds=("dense",), converters=("fake",), checks=("metadata",),
                            devices=("cpu",), profile=PROFILES[profile], examples=2, budget=None,
                            strict=False, report=None, reproducers="r",
                            database=databases.parse(spec))

    ci = item_settings(SuiteRun(options("ci", None)), 2)
    print("ci alone:", ci.database, ci.derandomize)
    shared = item_settings(SuiteRun(options("ci", sys.argv[1])), 2)
    print("profile:", settings.default.database is shared.database,
          settings.get_profile("metafidelity").database is shared.database)
    print("ci with database:", type(shared.database).__name__, shared.derandomize)
    """
)


def test_items_inherit_the_database_from_the_settings_profile(tmp_path: Path) -> None:
    script = tmp_path / "item_settings.py"
    script.write_text(ITEM_SETTINGS)
    result = run_limited([sys.executable, str(script), str(tmp_path / "db")], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ci alone: None True",  # the ci profile: derandomized, no database
        "profile: True True",  # loaded as the profile "metafidelity", inherited by the item
        # given explicitly it wins over ci, whose examples then are random
        "ci with database: DirectoryBasedExampleDatabase False",
    ]
