"""The entries of the registry of known differences, one module per domain.

Each module defines ``ENTRIES``, a list of :class:`~..core.KnownDifference`,
each entry right after the predicate saying exactly when it occurs.  The
registry is the concatenation of the modules' lists in :data:`DOMAINS`
order; the order matters only where two entries explain the same mismatch
(the first one is named as its explanation, both count as occurring).
"""

from __future__ import annotations

import importlib

from ..core import KnownDifference

# The domains, in registry order (a new domain module is listed here).  Where
# entries of two domains can explain one mismatch, the order is the one the
# single list they came from had (real-tensor propagation before
# functionalization, say: a carried copy that fails is named before a
# refusal of a functional view).
DOMAINS = (
    "sparse", "mkldnn", "storage", "real_tensors", "autograd", "nested", "functorch", "subclasses",
    "functionalization", "zero_tensors", "operators", "behaviour", "reconvert",
)


def all_entries() -> list[KnownDifference]:
    entries: list[KnownDifference] = []
    for domain in DOMAINS:
        entries.extend(importlib.import_module(f"{__name__}.{domain}").ENTRIES)
    return entries
