"""Settings for the project's own tests (not for users of the plugin).

Here, not at the repository's root: a root conftest.py would also be loaded
by ``pytest --metafidelity`` run from a checkout (it collects the suite
module under the root), and its profile would replace the suite's database
profile there.

Property tests are deterministic under CI: the ``ci`` profile derandomizes
Hypothesis rather than weakening any assertion.  Pick another profile with
``HYPOTHESIS_PROFILE=dev``.
"""

import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# -- torch's global state: every test leaves it as it found it ------------------------
#
# A test that leaves a dispatch mode pushed, a dispatch key excluded or grad
# mode off does not fail itself: it breaks whichever test the scheduler gives
# the same worker next.  The sly case is a guard that torch keeps in a local
# variable (``torch._tensor_str._str`` disables functorch while it prints):
# when torch raises there, the exception's traceback keeps the guard alive
# until that garbage is collected.  CI once failed two functorch tests that
# way, after meta_tensors() had rejected a tensor torch cannot print, on a
# worker order no local run had (fixed in strategies/torch_errors.py).  So
# each test is held to the snapshot of torch's global state that the
# ``purity`` check compares, when it ends and again once its garbage is
# collected: the test that leaked is the one that errors, naming what it left.

@pytest.fixture(scope="session", autouse=True)
def _long_lived_objects_frozen():
    """What importing torch and the package made is never garbage: frozen,
    the collection after each test looks only at what that test made.

    ``torch._dynamo`` is imported here, once, before any test: the
    ``pytester`` fixture takes Python's modules back to what they were when
    its test started, so a Dynamo first imported inside such a test (by a
    conversion with a ShapeEnv) left the worker without it -- and Dynamo
    cannot be imported twice in one process (its import registers the
    ``_inductor_test`` operator library, which torch refuses to register
    again): every later conversion on that worker failed to set its
    converter up.  The package's checks and registry likewise: a check
    module imported again registers a second copy of its check's state."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401

    import pytest_metafidelity  # noqa: F401
    from pytest_metafidelity import checks, faithful, known_differences  # noqa: F401

    checks.all_checks()

    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def _leaves_torch_global_state_as_found(_long_lived_objects_frozen):
    from pytest_metafidelity.snapshots import read_state

    before = read_state()
    yield
    left = _changed(before, read_state())
    gc.collect()
    collected = _changed(before, read_state())
    gc.freeze()  # what outlived the test: the next test's collection skips it
    if left or collected:
        pytest.fail(
            "the test left torch's global state changed:\n  "
            + "\n  ".join(left or [f"{c} (once its garbage was collected)" for c in collected]),
            pytrace=False)


def _changed(before: dict, after: dict) -> list[str]:
    """What differs between two readings of torch's global state, compared
    as the purity check compares them."""
    from pytest_metafidelity.snapshots import Snapshot, compare

    return [f"{m.attribute}: {m.real!r} before, {m.fake!r} after"
            for m in compare(Snapshot([], before), Snapshot([], after))]


# -- the distribution, built once per session (tests/test_packaging.py,
# tests/test_workflow.py's install steps) -------------------------------------

ROOT = Path(__file__).resolve().parents[1]
# Build outputs and environments of this checkout: a wheel built next to a
# stale build/ would ship modules that no longer exist.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__",
                                     ".hypothesis", ".pytest_cache", "metafidelity-reproducers")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source") / "project"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(source)],
        check=True,
    )
    (path,) = out.glob("pytest_metafidelity-*.whl")
    return path


# -- every process a test starts ends ----------------------------------------------------

@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose subprocesses are stopped at a time limit
    (tests/process_time_limits.py): the test then fails with the stacks
    each of its processes was in."""
    from process_time_limits import ProcessWatch

    watches: list[ProcessWatch] = []
    popen, run = pytester.popen, pytester.run

    def watched_popen(*args: Any, **kwargs: Any) -> Any:
        process = popen(*args, **kwargs)
        watches.append(ProcessWatch(process))
        return process

    def limited_run(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        del watches[:]
        try:
            result = run(*args, **kwargs)
        finally:
            for watch in watches:
                watch.close()
        for watch in watches:
            if watch.fired:
                pytest.fail(watch.failure(args, (pytester.path / "stderr").read_text(),
                                          (pytester.path / "stdout").read_text()),
                            pytrace=False)
        return result

    monkeypatch.setattr(pytester, "popen", watched_popen)
    monkeypatch.setattr(pytester, "run", limited_run)
    return pytester
