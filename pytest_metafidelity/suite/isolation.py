"""Crash isolation: the suite runs in pytest-xdist worker processes.

A native crash or a hang in torch kills the process it happens in.  So
``pytest --metafidelity`` never runs the suite in the process that reports
it: without ``-n``, it runs one xdist worker (``-n 1``); with ``-n N``, N.
When a worker dies, the controller -- which outlives it -- reads the
worker's journal (:mod:`.journal`), reports the case (:mod:`.crashes`),
and xdist starts a replacement that runs the items not yet run.  A crash the
plugin has recorded does not count against ``--max-worker-restart``.

``-n 0`` (or ``-p no:xdist``, ``--pdb``, ``--trace``) runs in-process, for
debugging: a crash then ends the run, and the next run reports the case from
the journal it left.

Why xdist workers rather than a supervising parent or a child per item: a
worker imports torch once and runs many items (a child per item would pay
about a second of imports each), xdist already replaces dead workers,
reschedules their pending items and ships reports to one process, and the
same design then serves ``-n 1`` and ``-n 16``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

WORKER_JOURNALS = "metafidelity_journal"  # key in xdist's workerinput


def wants_one_worker(config: pytest.Config) -> bool:
    """True when the suite should run in one xdist worker because the user
    chose no distribution at all."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return False
    option = config.option
    if getattr(option, "numprocesses", 0) is not None:  # -n given (-n 0 too)
        return False
    if getattr(option, "dist", "no") != "no" or getattr(option, "tx", None):
        return False
    debugging = option.usepdb or getattr(option, "trace", False)
    return not (debugging or option.collectonly)


def use_one_worker(config: pytest.Config) -> None:
    """What ``-n 1`` sets (pytest-xdist's own ``pytest_cmdline_main`` may
    run before or after this)."""
    config.option.numprocesses = 1
    config.option.dist = "load"
    config.option.tx = ["popen"]


def is_distributing(config: pytest.Config) -> bool:
    """True on an xdist controller that runs workers."""
    return (not hasattr(config, "workerinput")
            and getattr(config.option, "dist", "no") != "no"
            and bool(getattr(config.option, "tx", None)))


def worker_name(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return workerinput["workerid"] if workerinput else "main"


def journal_root(config: pytest.Config, reproducers: str) -> str:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return str(cache.mkdir("metafidelity-journal"))
    return os.path.join(str(config.rootpath), reproducers, ".journal")


def forgive_recorded_crash(config: pytest.Config) -> None:
    """A crash the plugin recorded is a finding, not a broken worker: it
    does not count against ``--max-worker-restart``.  (xdist counts failed
    workers in a private attribute, right after ``pytest_handlecrashitem``.)"""
    dsession = config.pluginmanager.getplugin("dsession")
    if dsession is not None and isinstance(getattr(dsession, "_failed_nodes_count", None), int):
        dsession._failed_nodes_count -= 1
