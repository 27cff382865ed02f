"""What a ``--metafidelity`` process does to start and to end sooner.

**Start.** pytest rewrites the asserts of every module of a distribution that
registers a pytest plugin, and Hypothesis registers one: the 70-odd
Hypothesis modules the suite imports are parsed and rewritten in the
controller and again in every worker.  Where Python writes no bytecode
(``PYTHONDONTWRITEBYTECODE``, read-only site-packages, most CI images) the
rewritten modules are never cached, and that costs about 0.75 s per process
on a two-core machine (``benchmarks/startup.py``).  A ``--metafidelity`` run
asserts nothing through Hypothesis' own asserts -- its findings are the
suite's records -- so it imports Hypothesis unrewritten.  The user's test
files and conftests are rewritten as always.

**End.** A worker that has imported torch spends about half a second
exiting, most of it in the garbage collector's passes over torch's and
Dynamo's objects while the interpreter shuts down; the controller (and a
``-x`` run's exit) waits for it.  A worker that has sent its last report
freezes what is left (``gc.freeze()``): it exits in about a tenth of that.
Only worker processes do, never one that goes on running Python after its
session (a pytester run in the same process).
"""

from __future__ import annotations

import gc

import pytest

# Modules whose asserts the suite does not need rewritten (pytest marks them
# because their distributions register pytest plugins).
UNREWRITTEN = ("hypothesis",)


def import_unrewritten(config: pytest.Config) -> list[str]:
    """Take :data:`UNREWRITTEN` off pytest's list of modules to rewrite,
    before anything imports them; the names taken off.  pytest keeps that
    list in its import hook's ``_must_rewrite`` (no public API): where a
    pytest has none, nothing changes."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if not isinstance(marked, set):
        return []
    taken = [name for name in UNREWRITTEN if name in marked]
    marked.difference_update(taken)
    return taken


def exit_quickly() -> None:
    """Let the process exit without the garbage collector's passes over
    what it allocated: call it when nothing is left to run but the exit."""
    gc.freeze()
