"""The pytest plugin: a thin layer of hooks over plain functions.

How does ``--metafidelity`` start?  ``pytest_cmdline_main`` below asks for
one xdist worker when no ``-n`` was given, so a crash in torch never takes
the reporting process with it (:mod:`.suite.isolation`); ``pytest_configure``
validates the options and points collection at the built-in suite module;
``pytest_generate_tests`` parametrizes it over kinds x converters;
``pytest_collection_modifyitems`` gives each item its Hypothesis test and
settings (at collection, so runners that bypass pytest's runtest hooks --
HypoFuzz -- get them too);
``pytest_runtest_protocol`` runs a budget run's first pass before the first
item's turn, and an item the first pass found failing at once
(:mod:`.suite.first_pass`);
``pytest_runtest_makereport`` turns the outcome into a record that the
terminal summary and the JSON report aggregate (across xdist workers too);
``pytest_handlecrashitem`` turns a dead worker's journal into a crash record.

Without ``--metafidelity`` this module adds its options, a session fixture and
nothing else, and imports neither torch nor Hypothesis.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from . import options as _options
from . import shards as _shards
from .outcomes import FAILED

if TYPE_CHECKING:
    from .options import SuiteOptions

SUITE_FILE = os.path.join(os.path.dirname(__file__), "suite", "test_fidelity.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not _options.is_enabled(config):
        return
    from .suite import isolation, process_costs

    process_costs.import_unrewritten(config)
    if isolation.wants_one_worker(config):
        isolation.use_one_worker(config)


def pytest_configure(config: pytest.Config) -> None:
    if not _options.is_enabled(config):
        return
    from .suite import isolation

    try:
        # The controller of xdist workers runs no example: unless there are
        # names to validate, it leaves torch to the workers, which start
        # that much sooner.
        opts = _options.resolve(config, registries=not isolation.is_distributing(config))
    except _options.OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line(
        "markers", "metafidelity_suite: an item of the built-in fakeification fidelity suite"
    )
    config.pluginmanager.register(FidelitySession(config, opts), "metafidelity-session")


class FidelitySession:
    """The hooks active only under ``--metafidelity``."""

    def __init__(self, config: pytest.Config, opts: SuiteOptions) -> None:
        from .report import Collector
        from .suite import isolation, journal
        from .suite.progress import Progress
        from .suite.run import SuiteRun

        self.config = config
        self.run = SuiteRun(opts)
        self.collector = Collector()
        self.is_worker = hasattr(config, "workerinput")
        self.distributing = isolation.is_distributing(config)
        self.reproducers = os.path.join(str(config.rootpath), opts.reproducers)
        if not self.distributing:  # this process runs the examples
            from .crash_guards import run_known_crashes_in_children

            run_known_crashes_in_children(opts.run_known_crashes)
        # --collect-only (how HypoFuzz collects): no example runs in this
        # session, so no journal; HypoFuzz calls the items' tests after the
        # session is over, when a journal would be closed.  Nor are an
        # earlier run's crash remains consumed here: the next real run
        # reports them.
        self.collect_only = bool(config.option.collectonly)
        self.journal_directory = ""
        if self.is_worker:
            self.journal_directory = config.workerinput[isolation.WORKER_JOURNALS]  # type: ignore[attr-defined]
        elif not self.collect_only:
            root = isolation.journal_root(config, opts.reproducers)
            self._recover_earlier_crashes(root)
            self.journal_directory = journal.run_directory(root)
        if not (self.distributing or self.collect_only):  # this process runs the examples
            self.run.journal = journal.Journal(self.journal_directory,
                                               isolation.worker_name(config), opts.example_timeout)
            if self.run.budget is not None:
                from .suite.first_pass import FirstPass, worker_position

                worker, workers = worker_position(getattr(config, "workerinput", None))
                self.run.first_pass = FirstPass(self.journal_directory, worker, workers)
        self.progress = None if self.is_worker else Progress.for_run(config, opts)
        # The kinds registered when the suite's kinds were settled (None
        # where they were not: an xdist controller leaves them to workers).
        self.kinds_at_start: tuple[str, ...] | None = None
        if opts.complete:
            from .strategies.kinds import all_kinds

            self.kinds_at_start = tuple(all_kinds())
        if opts.database:
            # Loaded as the settings profile before any test module is
            # imported: users' own @given tests in this run, and HypoFuzz
            # (which fuzzes only tests on the profile's database), use it too.
            self.run.database()
        _point_collection_at_suite(config)

    def pytest_sessionstart(self) -> None:
        if self.run.options.database:
            # Again, after every plugin has configured: under CI=true
            # Hypothesis' own plugin loads its "ci" profile after ours.
            self.run.database()

    def _recover_earlier_crashes(self, root: str) -> None:
        """Cases left by runs that died with no controller to report them
        (``-n 0``): reported now, as from an earlier run."""
        from .suite import crashes, journal

        for remains in journal.abandoned(root):
            record = crashes.crash_record(remains, returncode=None, directory=self.reproducers,
                                          earlier_run=True, database=self.run.database())
            self.collector.add_crash(record)
            remains.discard()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: tell each worker where its journal goes."""
        from .suite import isolation

        node.workerinput[isolation.WORKER_JOURNALS] = self.journal_directory

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist controller: a worker died running ``crashitem``.  Its journal
        says which example; record it as a crash of that item."""
        from .report import PROPERTY, item_record
        from .suite import crashes, isolation, journal

        node = getattr(report, "node", None)
        name = getattr(getattr(node, "gateway", None), "id", None)
        remains = journal.read(self.journal_directory, name) if name else None
        if remains is None:
            return
        entry = remains.entry
        out_of_turn = entry.out_of_turn and entry.nodeid and entry.nodeid != crashitem
        if entry.nodeid != crashitem and not out_of_turn:
            return
        record = crashes.crash_record(remains, returncode=crashes.returncode_of(node),
                                      directory=self.reproducers, database=self.run.database())
        remains.discard()
        where = ""
        if out_of_turn:
            # The worker died running an item ahead of its turn (the first
            # pass), before ``crashitem``'s turn began: the crash is the
            # journaled item's, whose turn is then skipped (claimed), and
            # ``crashitem`` runs after all.
            where = " (ahead of its turn, in the first pass)"
            from .suite.first_pass import FirstPass

            FirstPass(self.journal_directory).claim(entry.nodeid)
            if hasattr(sched, "mark_test_pending"):
                sched.mark_test_pending(crashitem)
            report.nodeid = entry.nodeid
        tally = Counter({"examples": entry.example + 1, record.status: 1})
        item = item_record(entry.nodeid, entry.kind, entry.converter, tally, FAILED, [], "",
                           crashes=[record])
        report.user_properties.append((PROPERTY, json.dumps(item.to_json())))
        report.longrepr = (f"{crashes.describe(record)} in example {entry.example + 1} of "
                           f"{entry.nodeid}{where}\n  reproducer: {record.reproducer_file}\n"
                           f"  last frames:\n{record.frames}")
        isolation.forgive_recorded_crash(self.config)

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
        self._warn_of_kinds_registered_late()
        _shards.apply_shard(self.config, items, self.run.options.shard)
        from .suite.failure_text import report_findings_as_text
        from .suite.runner import fidelity_test

        suite = [i for i in items if _is_suite_item(i)]
        opts = self.run.options
        nothing_to_run = None
        if not opts.devices:  # every device asked for is a GPU this machine lacks
            nothing_to_run = pytest.mark.skip(reason="; ".join(r for _, r in opts.skipped_devices)
                                              + ": no device left to run the suite on")
        for item in suite:
            item.add_marker("metafidelity_suite")
            if nothing_to_run is not None:
                item.add_marker(nothing_to_run)
            # The item's own test: this run's settings, a fixed number of
            # examples or rounds that spend its share of the time budget.
            item.obj = fidelity_test(self.run, item.nodeid)  # type: ignore[attr-defined]
            report_findings_as_text(item)
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        self.run.set_item_count(max(1, -(-len(suite) // workers)))
        if self.run.first_pass is not None:
            self.run.first_pass.total_items = len(suite)
            self.run.first_pass.done = nothing_to_run is not None
        if self.progress is not None:
            self.progress.total_items = len(suite)

    def _warn_of_kinds_registered_late(self) -> None:
        """A kind registered while test modules were collected came after the
        suite's items were made: it is no suite item, which must not pass
        unnoticed."""
        if self.kinds_at_start is None:
            return
        from .strategies.kinds import all_kinds

        late = [k for k in all_kinds() if k not in self.kinds_at_start]
        if late:
            import warnings

            warnings.warn(pytest.PytestConfigWarning(
                f"metafidelity: tensor kind(s) {', '.join(map(repr, late))} registered after the "
                "suite's items were made (in a test module?) are no suite items; register them "
                "in a conftest.py or a plugin module (see 'Adding a kind' in the README)"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None
                                ) -> bool | None:
        """Before the first suite item's turn, the first pass; an item whose
        protocol already ran (found failing by a first pass, here or in
        another worker) is skipped when its turn comes."""
        state = self.run.first_pass
        if state is None or not _is_suite_item(item):
            return None
        if not state.done:
            state.done = True
            self._first_pass(item)
        session = item.session
        if session.shouldfail or session.shouldstop or not state.claim(item.nodeid):
            return True
        return None

    def _first_pass(self, current: pytest.Item) -> None:
        """Every item's first round, in this worker's share and cost order;
        an item that fails runs its whole protocol now, before ``current``."""
        from .suite.first_pass import cost_order

        state = self.run.first_pass
        assert state is not None
        session = current.session
        suite = {i.nodeid: i for i in session.items
                 if _is_suite_item(i) and i.get_closest_marker("skip") is None}

        def params(nodeid: str) -> Any:
            return suite[nodeid].callspec.params["metafidelity_item"]  # type: ignore[attr-defined]

        def cost(nodeid: str) -> float:
            return _shards.estimated_cost(params(nodeid).kind, params(nodeid).converter)

        order = cost_order(state.share(list(suite)), self.run.failed_before, cost,
                           lambda nodeid: params(nodeid).kind)
        try:
            for nodeid in order:
                if session.shouldfail or session.shouldstop:
                    break
                if state.claimed(nodeid):  # its turn began on another worker
                    continue
                item = suite[nodeid]
                if not item.obj.first_pass(params(nodeid)) and state.claim(nodeid):  # type: ignore[attr-defined]
                    self.run.out_of_turn = True
                    try:
                        _run_protocol(item, nextitem=current)
                    finally:
                        self.run.out_of_turn = False
        finally:
            if self.run.journal is not None:
                self.run.journal.disarm()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield  # the failure, if any, is formatted by now
        if call.when != "call" or not _is_suite_item(item):
            return
        if self.run.journal is not None:
            self.run.journal.end()
            self.run.journal.disarm()
        from .report import (PROPERTY, failure_records, fidelity_errors, item_record,
                             unexpectedly_passing_records)
        from .suite.crashes import crash_errors, exit_crash_record

        suite_item = item.callspec.params["metafidelity_item"]  # type: ignore[attr-defined]
        directory = self.reproducers
        failures = []
        error = call.excinfo.value if call.excinfo else None
        for fidelity_error in fidelity_errors(error):
            failures += failure_records(
                fidelity_error, kind=suite_item.kind, converter=suite_item.converter,
                nodeid=item.nodeid, directory=directory,
            )
        crashed = [exit_crash_record(e, kind=suite_item.kind, converter=suite_item.converter,
                                     nodeid=item.nodeid, directory=directory)
                   for e in crash_errors(error)]
        passing = unexpectedly_passing_records(
            self.run.unexpectedly_passing.get(item.nodeid, {}), kind=suite_item.kind,
            converter=suite_item.converter, nodeid=item.nodeid, directory=directory,
        )
        report = outcome.get_result()
        digest = self.run.digests.get(item.nodeid)
        tally = Counter(self.run.tallies.get(item.nodeid, {}))
        for crash in crashed:
            tally[crash.status] += 1
        spending = self.run.spending.get(item.nodeid)
        record = item_record(item.nodeid, suite_item.kind, suite_item.converter,
                             tally, report.outcome, failures,
                             digest.hexdigest() if digest else "",
                             known=self.run.known.get(item.nodeid, {}),
                             unexpectedly_passing=passing, crashes=crashed,
                             spending=spending.as_record() if spending else None)
        report.user_properties.append((PROPERTY, json.dumps(record.to_json())))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs on the controller for every worker's reports under xdist;
        # crash reports (made by xdist for a dead worker) have when "???".
        if report.when not in ("call", "???"):
            return
        from .report import PROPERTY, ItemRecord

        for name, value in report.user_properties:
            if name == PROPERTY:
                record = ItemRecord.from_json(json.loads(value))
                self.collector.add(record)
                if self.progress is not None:
                    self.progress.item_done(record)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        tr = terminalreporter
        for _, reason in self.run.options.skipped_devices:
            tr.write_line(f"metafidelity: {reason}")
        if not (self.collector.items or self.collector.earlier_crashes):
            return
        tr.write_sep("=", "metafidelity: kinds x converters")
        tr.write_line(self.collector.table())
        failures = self.collector.failures_text()
        if failures:
            tr.write_sep("-", f"metafidelity: {len(self.collector.unique_failures())} distinct failure(s)")
            tr.write_line(failures)
        crashes = self.collector.crashes_text()
        if crashes:
            tr.write_sep("-", f"metafidelity: {len(self.collector.unique_crashes())} crash(es) "
                              "and hang(s)")
            tr.write_line(crashes)
        passing = self.collector.unexpectedly_passing_text()
        if passing:
            tr.write_sep("-", "metafidelity: known differences that did not occur (fixed upstream?)")
            tr.write_line(passing)
        tr.write_line(self.collector.spending_text())
        if self.run.options.report:
            tr.write_line(f"metafidelity: JSON report written to {self.run.options.report}")

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.is_worker:  # its last report is sent: only the exit is left
            from .suite import process_costs

            process_costs.exit_quickly()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.run.journal is not None:
            self.run.journal.close()
        if self.is_worker or self.collect_only:
            return
        if _stopped_after_failures(session):
            # -x / --maxfail under xdist: the run ended as pytest ends it
            # without xdist, with the status of failed tests, not of an
            # interrupted run (which scripts read as a usage error).
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from .suite.first_pass import remove_state

        remove_state(self.journal_directory)
        try:
            os.rmdir(self.journal_directory)
        except OSError:
            pass
        if not self.run.options.complete and (self.run.options.report or
                                              self.collector.unique_crashes()):
            # The report names every kind, converter and check; shrinking
            # converts and checks again.
            self.run.options = _options.resolve(self.config)
        if self.run.options.shrink_crashes and self.collector.unique_crashes():
            from .suite.crash_shrinking import shrink_crashes

            shrink_crashes(self.collector, self.run.options, self.reproducers)
        if not self.run.options.report:
            return
        seed = self.config.getoption("hypothesis_seed", None)
        self.collector.write_json(self.run.options.report, self.run.options, seed)


def _run_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """An item's whole runtest protocol (what pytest's default
    ``pytest_runtest_protocol`` does), out of its turn.  An xdist worker
    tags each report with the index of the item whose turn it is: for the
    time being, that is this item's."""
    from _pytest.runner import runtestprotocol

    worker = next((p for p in item.config.pluginmanager.get_plugins()
                   if type(p).__name__ == "WorkerInteractor"), None)
    turn = getattr(worker, "item_index", None)
    if worker is not None:
        worker.item_index = item.session.items.index(item)
    try:
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        runtestprotocol(item, nextitem=nextitem, log=True)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    finally:
        if worker is not None:
            worker.item_index = turn


def _stopped_after_failures(session: pytest.Session) -> bool:
    """The xdist controller stopped the run at ``--maxfail`` (``-x``)."""
    if session.exitstatus != pytest.ExitCode.INTERRUPTED or not session.testsfailed:
        return False
    maxfail = session.config.getoption("maxfail", 0) or 0
    dsession = session.config.pluginmanager.getplugin("dsession")
    reason = str(getattr(dsession, "shouldstop", "") or "")
    return bool(maxfail) and session.testsfailed >= maxfail and reason.startswith("stopping after")


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
