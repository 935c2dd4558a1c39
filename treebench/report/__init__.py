"""Reports: aggregated tables, paper targets and checks, side-by-side tables, figures, statistics.

``summary_table`` is looked up on first use: importing a submodule (a run's record printed by
:mod:`~treebench.report.console`) must not load the paper targets' pydantic schema.
"""

__all__ = ["summary_table"]


def __getattr__(name: str):
    """``summary_table`` from :mod:`treebench.report.tables`, imported when first asked for."""
    if name != "summary_table":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from treebench.report.tables import summary_table

    return summary_table
