"""Reports: aggregated tables, paper targets and checks, side-by-side tables, figures and statistics."""

from treebench.report.tables import summary_table

__all__ = ["summary_table"]
