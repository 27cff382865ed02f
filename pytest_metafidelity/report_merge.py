"""Where merging reports lived before the report package: ``report.merge``
now; these names stay importable from here."""

from __future__ import annotations

from .report.merge import (OUTCOME_ORDER, ReportError, columns, item_key, known_differences,
                           load, merge, table, unexpectedly_passing)

__all__ = ["OUTCOME_ORDER", "ReportError", "columns", "item_key", "known_differences", "load",
           "merge", "table", "unexpectedly_passing"]
