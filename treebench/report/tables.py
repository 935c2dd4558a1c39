"""Aggregate tidy results into method × dataset tables of mean ± SD."""

from __future__ import annotations

import pandas as pd

_SIZE_COLS = ("n_splits", "n_leaves", "split_evals")


def headline_metric(df: pd.DataFrame) -> str:
    """The first test metric column present (``test_accuracy`` before ``test_r2``)."""
    for col in ("test_accuracy", "test_r2", "test_error"):
        if col in df.columns and df[col].notna().any():
            return col
    cols = [c for c in df.columns if c.startswith("test_")]
    if not cols:
        raise ValueError("no test metric in the results")
    return cols[0]


def summary_table(df: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    """Mean and SD of the test metric, size and fit time per (dataset, method), over seeds and folds.

    Only ``ok`` rows count; ``n`` is the number of runs aggregated, ``failed``/``skipped`` their counts.
    """
    if df.empty:
        return pd.DataFrame()
    status = df.groupby(["dataset", "method"])["status"].value_counts().unstack(fill_value=0)
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return status.reset_index()
    parts = []
    # each task has its own headline metric (accuracy for classification, R² for regression)
    for _, rows in ok.groupby(ok["task"] if "task" in ok.columns else pd.Series(0, ok.index)):
        m = metric if metric and metric in rows.columns else headline_metric(rows)
        agg = {
            "n": (m, "size"),
            "mean": (m, "mean"),
            "sd": (m, "std"),
            "fit_s": ("fit_seconds", "median"),
        }
        for c in _SIZE_COLS:
            if c in rows.columns:
                agg[c] = (c, "mean")
        part = rows.groupby(["dataset", "method"]).agg(**agg)
        part.insert(0, "metric", m)
        parts.append(part)
    out = pd.concat(parts).sort_index()
    for s in ("failed", "skipped"):
        out[s] = status[s] if s in status.columns else 0
    out = out.reset_index()
    metrics = list(dict.fromkeys(out["metric"]))
    out.attrs["metric"] = " / ".join(metrics)
    if len(metrics) == 1:
        out = out.drop(columns="metric")
    return out
