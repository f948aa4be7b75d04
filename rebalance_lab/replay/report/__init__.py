"""The replay's report: one self-contained HTML page, a short terminal summary and the headline as CSV/JSON.

spec/replay-inputs.md §7.3; issue 20 items 4-7. Input is the derived tables of §7.2 as lists of row
dicts (:mod:`rebalance_lab.replay.tables`), the merged :class:`ParseReport`, and a ``meta`` dict
describing the run. Keys read from ``meta``, all optional: ``inputs``, ``formats``, ``master``,
``whatif_assignors``, ``timings`` (seconds per phase), ``counts``, ``report`` (printed at the end of
the terminal summary), ``tz`` (the zone times are shown in: the run's ``--tz``; UTC by default) and
``percentile`` (the replay's method, ``nearest_rank`` by default).

Modules, in reading order: :mod:`.fmt` (numbers and times), :mod:`.data` (the summary both outputs
show), :mod:`.headline` (actual against each what-if), :mod:`.html` (table cells, CSS, the sort
script), :mod:`.timeline` and :mod:`.overtime` (the busiest groups), :mod:`.sections`,
:mod:`.compare`, :mod:`.evidence`, :mod:`.page`, :mod:`.terminal`, :mod:`.export`.

The page uses inline SVG and CSS only; a few lines of our own JavaScript sort the tables, and the
page reads the same without them. Every value that comes from the inputs is HTML-escaped. Plots
and tables are capped so 10,000 groups still give a page of a few hundred kilobytes; the page says
what it left out. No pyspark or pyarrow here: the report runs on plain rows in the driver.
"""

from __future__ import annotations

from rebalance_lab.replay.report.compare import MAX_HEADLINE_GROUPS, MAX_TABLE_GROUPS
from rebalance_lab.replay.report.data import PALETTE, Summary, summarize
from rebalance_lab.replay.report.export import export_tables
from rebalance_lab.replay.report.fmt import fmt_ms, fmt_pct, percentile
from rebalance_lab.replay.report.page import BUSY_GROUPS, render, write_report
from rebalance_lab.replay.report.terminal import terminal_summary
from rebalance_lab.replay.report.timeline import MAX_LANES, densest_window

__all__ = ["BUSY_GROUPS", "MAX_HEADLINE_GROUPS", "MAX_LANES", "MAX_TABLE_GROUPS", "PALETTE", "Summary",
           "densest_window", "export_tables", "fmt_ms", "fmt_pct", "percentile", "render", "summarize",
           "terminal_summary", "write_report"]
