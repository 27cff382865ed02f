"""A time limit on one program step: a step that runs past it is stopped and
reported as an outcome (:class:`StepTimeout`, naming where it was), not a
hang of the whole example.

Some of torch's symbolic reasoning can run for minutes on a small input
(sympy's CNF conversion under ``ShapeEnv.get_implications``, reached from a
``view`` of a fake with symbolic sizes); without a limit such a step costs
the example's whole hang limit (the suite's crash-proofing, 300 s) and is
reported as ``hung``, on every run that replays it from the example
database.  With it, the step is a behaviour difference like any other -- the
real tensor answered, the fake did not -- which the known-difference
registry can name.

How: one watchdog thread per process, armed around each step, raises
:class:`StepExpired` in the stepping thread (``PyThreadState_SetAsyncExc``)
when the limit passes.  It needs no signal (so it cannot disturb
pytest-timeout, HypoFuzz or the caller's own alarms) and works off the main
thread.  The exception arrives at the next Python bytecode: a step stuck in
native code is not interrupted, and the example's hang limit still applies.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import os
import threading
import time
from typing import Any, Callable

# Seconds one program step may run on one side.  Ordinary steps take
# milliseconds (symbolic ones up to about a tenth of a second on a slow
# machine); the limit is far above that, and far below the suite's 300 s
# limit for a whole example.
STEP_TIME_LIMIT_S = 20.0

_LIMIT: contextvars.ContextVar[float] = contextvars.ContextVar("step_time_limit",
                                                              default=STEP_TIME_LIMIT_S)


def current_limit() -> float:
    """The limit on one step here: :data:`STEP_TIME_LIMIT_S` unless
    :func:`for_example_timeout` set a shorter one."""
    return _LIMIT.get()


@contextlib.contextmanager
def for_example_timeout(example_timeout: float | None) -> Any:
    """Steps run inside get a quarter of ``example_timeout`` where that is
    less than :data:`STEP_TIME_LIMIT_S`: a step stuck on the converted side
    may be stuck on the control too, and the example has more to do, so a
    stuck step is reported as a difference before the example is reported
    hung.  (None or 0: no example limit; the default stays.)"""
    limit = STEP_TIME_LIMIT_S
    if example_timeout:
        limit = min(limit, example_timeout / 4)
    token = _LIMIT.set(limit)
    try:
        yield limit
    finally:
        _LIMIT.reset(token)


class StepExpired(BaseException):
    """Raised inside a step that ran past its limit.  A BaseException, so
    that torch's own ``except Exception`` fallbacks do not swallow it and
    carry on with the same slow work."""


class StepTimeout(Exception):
    """The outcome of a step stopped at its time limit; ``stuck_in`` is the
    innermost frames it was running, innermost first."""

    def __init__(self, seconds: float, stuck_in: tuple[str, ...]) -> None:
        self.seconds = seconds
        self.stuck_in = stuck_in
        where = ""
        if stuck_in:
            where = f"; stopped in {stuck_in[0]}"
            callers = [f for f in stuck_in[1:] if f.startswith("torch.")][:4]
            if callers:
                where += ", called from " + " < ".join(callers)
        super().__init__(f"the step did not finish within {seconds:g} s{where}")


def run_within(seconds: float | None, fn: Callable[[], Any]) -> Any:
    """``fn()``, or a :class:`StepTimeout` when it runs past ``seconds``
    (None: no limit)."""
    if seconds is None:
        return fn()
    try:
        with _watchdog().armed(seconds):
            return fn()
    except StepExpired as e:
        from ..strategies.torch_errors import release_frames

        stuck = _frames(e.__traceback__)
        release_frames(e, drop_tracebacks=True)  # frees the stopped frames' locals now
        return StepTimeout(seconds, stuck)


def _frames(tb: Any) -> tuple[str, ...]:
    """``module.qualname`` of each frame of ``tb``, innermost first."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        module = tb.tb_frame.f_globals.get("__name__", "?")
        out.append(f"{module}.{getattr(code, 'co_qualname', code.co_name)}")
        tb = tb.tb_next
    return tuple(reversed(out))


def _raise_in(thread_id: int, exc: type[BaseException]) -> None:
    """Schedule ``exc`` in thread ``thread_id`` (see :class:`_Armed` on why a
    scheduled exception is never cancelled)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


class _Arm:
    """One armed step: the thread to stop and when."""

    __slots__ = ("tid", "deadline", "sent")

    def __init__(self, tid: int, deadline: float) -> None:
        self.tid, self.deadline = tid, deadline
        self.sent = False  # the watchdog has scheduled the stop


class _Watchdog:
    """A daemon thread stopping the steps whose deadline passed.

    The stepping thread never takes a lock once its step may have been
    stopped: an exception arriving while it held one would leave the lock
    held.  Who ends an armed step -- the step finishing or the watchdog
    firing -- is decided by which of them pops it from ``_active`` (one
    atomic dict operation)."""

    POLL_S = 0.25

    def __init__(self) -> None:
        self._active: dict[_Arm, bool] = {}
        self._wake = threading.Event()
        threading.Thread(target=self._watch, name="metafidelity-step-limit",
                         daemon=True).start()

    def _watch(self) -> None:
        while True:
            if not self._active:
                self._wake.wait()
                self._wake.clear()
                continue
            now = time.monotonic()
            for arm in list(self._active):
                if arm.deadline <= now and self._active.pop(arm, False):
                    try:
                        _raise_in(arm.tid, StepExpired)
                    finally:
                        arm.sent = True
            soonest = min((a.deadline for a in list(self._active)), default=now + self.POLL_S)
            time.sleep(min(self.POLL_S, max(soonest - now, 0.0)))

    def armed(self, seconds: float) -> "_Armed":
        return _Armed(self, seconds)


# How long a stop the watchdog has sent may take to arrive in a thread that
# runs Python code: the next bytecode boundary, normally microseconds away.
ARRIVAL_S = 1.0


class _Armed:
    """Arms the watchdog for the enclosed step.

    A stop is never cancelled: CPython 3.11's ``PyThreadState_SetAsyncExc``
    with no exception clears the thread's pending one but leaves the
    interpreter's "async exception pending" flag set, which sends every later
    bytecode through the slow path -- the whole process runs many times
    slower.  So when the watchdog fired, the step is reported as stopped
    (:class:`StepExpired` leaves this block), which it was, within a
    scheduling delay:

    * the stop came out of the step: it goes on;
    * the step ended as the watchdog fired: the stop arrives here at once,
      while this waits for it (once the watchdog says it has sent it);
    * the stop arrived inside the step, which swallowed it (``except
      BaseException``) or raised another exception in its place (a
      ``finally`` or context-manager exit failing on the interrupted state):
      it is re-raised from the exception's context chain, or, swallowed
      without trace, a new one is raised once :data:`ARRIVAL_S` has shown
      that none is pending."""

    def __init__(self, dog: _Watchdog, seconds: float) -> None:
        self.dog = dog
        self.arm = _Arm(threading.get_ident(), time.monotonic() + seconds)

    def __enter__(self) -> None:
        self.dog._active[self.arm] = True
        self.dog._wake.set()

    def __exit__(self, exc_type: Any, exc: BaseException | None, _tb: Any) -> None:
        if self.dog._active.pop(self.arm, False) or exc_type is StepExpired:
            return  # not fired; or fired, and its stop came out of the step
        arrived = _stop_in_chain(exc)
        if arrived is None:
            while not self.arm.sent:  # the watchdog took the step; its stop is on the way
                time.sleep(0.0001)
            deadline = time.monotonic() + ARRIVAL_S
            while time.monotonic() < deadline:  # a pending stop arrives here
                time.sleep(0.0001)
            arrived = StepExpired()  # it had arrived, and left no trace
        raise arrived  # its context: exc (CPython cuts the cycle through the chain)


def _stop_in_chain(exc: BaseException | None) -> StepExpired | None:
    """The :class:`StepExpired` among ``exc``'s causes and contexts."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, StepExpired):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


_dog: tuple[int, _Watchdog] | None = None
_dog_lock = threading.Lock()


def _watchdog() -> _Watchdog:
    """This process's watchdog (a forked child -- HypoFuzz's workers --
    starts its own: threads do not survive a fork)."""
    global _dog
    with _dog_lock:
        if _dog is None or _dog[0] != os.getpid():
            _dog = (os.getpid(), _Watchdog())
        return _dog[1]


def _after_fork_in_child() -> None:
    global _dog_lock
    _dog_lock = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)
