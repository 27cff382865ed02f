"""Where a report's HTML page lived before the report package:
``report.html_page`` now; these names stay importable from here."""

from __future__ import annotations

from .report.html_page import CSS, SCRIPT, STATUSES, cell_status, render

__all__ = ["CSS", "SCRIPT", "STATUSES", "cell_status", "render"]
