"""Torch errors that keep a thread-state guard alive: let their frames go at once.

Some of torch's Python code holds a guard in a local variable instead of a
``with`` statement.  ``torch._tensor_str._str`` does, while it prints a
tensor: ``guard = torch._C._DisableFuncTorch()``.  The guard's effect
(functorch's dispatch keys excluded on this thread) ends when the object is
freed.  When printing raises, the exception's traceback keeps that frame, so
the guard, alive: until the exception is garbage-collected, every functorch
transform on the thread silently does nothing (``_wrap_for_grad(t, level) * 2``
is a plain tensor).  Collected out of the order they were made, several such
guards leave functorch disabled for good.

So where we catch torch's errors and go on, the frames they hold are cleared
at once, which frees those guards here, in order.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable


def release_frames(error: BaseException, *, drop_tracebacks: bool = False) -> None:
    """Clear the local variables of the finished frames ``error`` (and the
    exceptions it is chained to) keeps alive, so that what they hold is freed
    now.  The tracebacks still print (file, line, function); with
    ``drop_tracebacks`` they are removed too."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # skips frames still running
        if drop_tracebacks:
            e.__traceback__ = None
        stack += [e.__context__, e.__cause__]


def printable(t: Any) -> bool:
    """Whether torch can print ``t`` (Hypothesis prints the tensors of a
    failing example, HypoFuzz every example), leaving this thread's dispatch
    state as it was even when printing fails (see the module docstring)."""
    try:
        repr(t)
        return True
    except (NotImplementedError, RuntimeError) as e:
        release_frames(e)
        return False


def safe(fn: Callable[[], Any], default: Any = None) -> Any:
    """``fn()``, or ``default`` where it raises.  What the error's frames
    hold is freed at once (a guard torch keeps in a local variable would
    otherwise change this thread's dispatch keys at some later garbage
    collection: see the module docstring)."""
    try:
        return fn()
    except Exception as e:
        release_frames(e)
        return default
