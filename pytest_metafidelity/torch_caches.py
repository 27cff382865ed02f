"""Torch's process-wide caches that grow without bound over a long run.

The caches of ``ShapeEnv``'s methods are class-wide and keyed by the
``ShapeEnv``; two of them have no size limit.  So they keep every
``ShapeEnv`` of a symbolic conversion (its guards, value ranges, source
locations and its own fake-tensor dispatch cache) alive for the life of the
process.  A few module-level caches have no size limit either.  ``torch.compile`` makes a few
``ShapeEnv`` objects per process; a fuzzing run makes one per example, so
over hours those caches are where the memory goes.

:func:`conversion_done` counts conversions and every :data:`RELEASE_EVERY`
of them empties those caches.  Emptying a cache only costs torch the work of
filling it again: every entry is the result of a pure computation (the
implications of an expression, a range already applied to a symbol, a
dispatch result), so no behaviour of torch changes, for our conversions or
for anybody else's.
"""

from __future__ import annotations

import importlib
from typing import Any

# Examples of the suite convert once per converter: a few hundred conversions
# keep the caches useful inside an example and bound what they hold to a few
# megabytes.
RELEASE_EVERY = 256

# Module-level caches with no size limit, by name; a name this torch lacks
# is skipped.
UNBOUNDED_MODULE_CACHES = (
    # keyed by expressions and the ranges of their symbols
    ("torch.fx.experimental.symbolic_shapes", "_maybe_evaluate_static_worker"),
)

_since_release = 0


def shape_env_caches() -> list[Any]:
    """Every cache of a ``ShapeEnv`` method: they are class-wide and keyed by
    the ``ShapeEnv``, so each keeps ShapeEnvs alive (``get_implications``
    and ``constrain_symbol_range`` with no size limit at all)."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return [attr for attr in vars(ShapeEnv).values() if hasattr(attr, "cache_clear")]


def module_caches() -> list[Any]:
    """The caches of :data:`UNBOUNDED_MODULE_CACHES` this torch has."""
    found = []
    for module, name in UNBOUNDED_MODULE_CACHES:
        cache = getattr(importlib.import_module(module), name, None)
        if hasattr(cache, "cache_clear"):
            found.append(cache)
    return found


def release_unbounded_caches() -> None:
    """Empty torch's unbounded caches now (see the module docstring)."""
    global _since_release
    _since_release = 0
    for cache in shape_env_caches() + module_caches():
        cache.cache_clear()
    from torch._subclasses.fake_tensor import FakeTensorMode

    # The class-wide dispatch cache of non-symbolic fake modes, keyed by the
    # metadata of every input it has seen.  (Not ``cache_clear()``: that also
    # resets the hit and miss counters, which are somebody's statistics.)
    FakeTensorMode.cache.clear()


def conversion_done(count: int = 1) -> None:
    """Note ``count`` conversions; every :data:`RELEASE_EVERY` empties the
    caches."""
    global _since_release
    _since_release += count
    if _since_release >= RELEASE_EVERY:
        release_unbounded_caches()
