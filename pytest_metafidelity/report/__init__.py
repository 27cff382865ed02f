"""Reports of a suite run, and what is made of them afterwards.

The modules import one way only, each from those before it:

    records     one typed record (to_json/from_json) per item, failure,
                crash, known difference that did not occur; reproducer files
    tables      the kinds x converters table, records once per signature
    collector   the controller gathers the records: terminal table and
                texts, the run's JSON report
    merge       several runs' JSON reports as one
    html_page   a report as a self-contained HTML page
    cli         ``python -m pytest_metafidelity.report merge|html|new-failures``
    __main__    runs the cli

Importing this package loads only records and collector (no torch); the
names the plugin and the crash shrinking use are here.
"""

from __future__ import annotations

from .collector import Collector, shorten
from .records import (COLUMNS, PROPERTY, Crash, Failure, ItemRecord, ReportError, Spending,
                      UnexpectedPass, failure_records, fidelity_errors, item_record,
                      unexpectedly_passing_records)

__all__ = [
    "COLUMNS", "PROPERTY", "Collector", "Crash", "Failure", "ItemRecord", "ReportError",
    "Spending", "UnexpectedPass", "failure_records", "fidelity_errors", "item_record", "shorten",
    "unexpectedly_passing_records",
]
