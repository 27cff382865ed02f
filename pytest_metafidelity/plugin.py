"""The pytest plugin: a thin layer of hooks over plain functions.

How does ``--metafidelity`` start?  ``pytest_configure`` below validates the
options and points collection at the built-in suite module;
``pytest_generate_tests`` parametrizes it over kinds x converters;
``pytest_runtest_setup`` gives each item its Hypothesis settings;
``pytest_runtest_makereport`` turns the outcome into a record that the
terminal summary and the JSON report aggregate (across xdist workers too).

Without ``--metafidelity`` this module adds its options, a session fixture and
nothing else, and imports neither torch nor Hypothesis.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from . import options as _options

SUITE_FILE = os.path.join(os.path.dirname(__file__), "suite", "test_fidelity.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    if not _options.is_enabled(config):
        return
    try:
        opts = _options.resolve(config)
    except _options.OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line(
        "markers", "metafidelity_suite: an item of the built-in fakeification fidelity suite"
    )
    config.pluginmanager.register(FidelitySession(config, opts), "metafidelity-session")


class FidelitySession:
    """The hooks active only under ``--metafidelity``."""

    def __init__(self, config: pytest.Config, opts: Any) -> None:
        from .report import Collector
        from .suite.runner import SuiteRun

        self.config = config
        self.run = SuiteRun(opts)
        self.collector = Collector()
        self.is_worker = hasattr(config, "workerinput")
        _point_collection_at_suite(config)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
        if _same_file(module_path, SUITE_FILE):
            return _suite_module_class().from_parent(
                parent, path=module_path, nodeid=_suite_nodeid(self.config, module_path)
            )
        return None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "metafidelity_item" not in metafunc.fixturenames:
            return
        from .suite.runner import SuiteItem

        opts = self.run.options
        items = [SuiteItem(k, c) for k in opts.kinds for c in opts.converters]
        metafunc.parametrize("metafidelity_item", items, ids=[i.id for i in items])

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        suite = [i for i in items if _is_suite_item(i)]
        for item in suite:
            item.add_marker("metafidelity_suite")
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        self.run.n_items = max(1, -(-len(suite) // workers))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if _is_suite_item(item):
            from .suite.runner import fidelity_test

            # A per-item test with this run's settings (examples fitted to the budget).
            item.obj = fidelity_test(self.run, item.nodeid)  # type: ignore[attr-defined]
            self.run.start_item()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        if call.when != "call" or not _is_suite_item(item):
            return
        from .report import (PROPERTY, failure_records, fidelity_errors, item_record,
                             unexpectedly_passing_records)

        suite_item = item.callspec.params["metafidelity_item"]  # type: ignore[attr-defined]
        self.run.finish_item()
        directory = os.path.join(str(self.config.rootpath), self.run.options.reproducers)
        failures = []
        for error in fidelity_errors(call.excinfo.value if call.excinfo else None):
            failures += failure_records(
                error, kind=suite_item.kind, converter=suite_item.converter, nodeid=item.nodeid,
                directory=directory,
            )
        passing = unexpectedly_passing_records(
            self.run.unexpectedly_passing.get(item.nodeid, {}), kind=suite_item.kind,
            converter=suite_item.converter, nodeid=item.nodeid, directory=directory,
        )
        report = outcome.get_result()
        digest = self.run.digests.get(item.nodeid)
        record = item_record(item.nodeid, suite_item.kind, suite_item.converter,
                             self.run.tallies.get(item.nodeid, {}), report.outcome, failures,
                             digest.hexdigest() if digest else "",
                             known=self.run.known.get(item.nodeid, {}),
                             unexpectedly_passing=passing)
        report.user_properties.append((PROPERTY, json.dumps(record)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs on the controller for every worker's reports under xdist.
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "metafidelity":
                self.collector.add(json.loads(value))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not self.collector.items:
            return
        tr = terminalreporter
        tr.write_sep("=", "metafidelity: kinds x converters")
        tr.write_line(self.collector.table())
        failures = self.collector.failures_text()
        if failures:
            tr.write_sep("-", f"metafidelity: {len(self.collector.unique_failures())} distinct failure(s)")
            tr.write_line(failures)
        passing = self.collector.unexpectedly_passing_text()
        if passing:
            tr.write_sep("-", "metafidelity: known differences that did not occur (fixed upstream?)")
            tr.write_line(passing)
        if self.run.options.report:
            tr.write_line(f"metafidelity: JSON report written to {self.run.options.report}")

    def pytest_sessionfinish(self) -> None:
        if self.is_worker or not self.run.options.report:
            return
        seed = self.config.getoption("hypothesis_seed", None)
        self.collector.write_json(self.run.options.report, self.run.options, seed)


def _point_collection_at_suite(config: pytest.Config) -> None:
    """No path arguments: run only the suite.  With paths: the suite too
    (unless one of them already names the suite or one of its items)."""
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        if not any(_same_file(a.split("::")[0], SUITE_FILE) for a in config.args):
            config.args.append(SUITE_FILE)
    else:
        config.args[:] = [SUITE_FILE]


def _same_file(a: Any, b: str) -> bool:
    try:
        return os.path.samefile(str(a), b)
    except OSError:
        return False


def _suite_nodeid(config: pytest.Config, path: Any) -> str:
    """Relative to rootdir when the suite lives under it (editable installs),
    else the absolute path: either way ``pytest --metafidelity NODEID`` reruns
    an item."""
    try:
        return os.path.relpath(str(path), str(config.rootpath)) if str(path).startswith(
            str(config.rootpath) + os.sep) else str(path)
    except ValueError:
        return str(path)


def _suite_module_class() -> Any:
    class SuiteModule(pytest.Module):
        """The suite module; collects ``test_fidelity`` whatever the user's
        ``python_functions`` / ``python_classes`` settings say."""

        def funcnamefilter(self, name: str) -> bool:
            return name == "test_fidelity"

        def classnamefilter(self, name: str) -> bool:
            return False

    return SuiteModule


def _is_suite_item(item: Any) -> bool:
    return "metafidelity_item" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="session")
def metafidelity(request: pytest.FixtureRequest) -> Any:
    """``metafidelity(*tensors)``: assert the tensors convert faithfully, with
    the converters/checks/strictness selected by the metafidelity options
    (default: all).  Session-scoped, so it is usable inside ``@given`` tests."""
    config = request.config
    session = config.pluginmanager.get_plugin("metafidelity-session")
    opts = session.run.options if session is not None else None
    if opts is None:
        try:
            opts = _options.resolve(config)
        except _options.OptionError as e:
            raise pytest.UsageError(str(e)) from None
    from .faithful import assert_faithful

    def check(*tensors: Any, **overrides: Any) -> Any:
        kwargs = dict(converters=list(opts.converters), checks=list(opts.checks), strict=opts.strict)
        kwargs.update(overrides)
        return assert_faithful(*tensors, **kwargs)

    return check
