"""Reports: aggregated tables (and, as they land, paper comparisons, figures and checks)."""

from treebench.report.tables import summary_table

__all__ = ["summary_table"]
