"""Where the reports' command line lived before the report package:
``report.cli`` now (run it as ``python -m pytest_metafidelity.report``);
these names stay importable from here."""

from __future__ import annotations

from .report.cli import main, markdown, new_failures

__all__ = ["main", "markdown", "new_failures"]
