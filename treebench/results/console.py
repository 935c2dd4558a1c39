"""Terminal output of one run's records (what ``treebench run`` prints after a single job)."""

from __future__ import annotations

import json
import math

from rich.table import Table

from treebench.results.record import Record
from treebench.term import make_console

console = make_console()


def fmt(v) -> str:
    """Return a value as a table cell: floats to 4 significant digits, NaN as ``-``."""
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def print_records(records: list[Record]) -> None:
    """Print each record's identity, metrics, size and timing as a two-column table."""
    for rec in records:
        t = Table(
            title=f"{rec['method']} on {rec['dataset']} (seed {rec['seed']}, fold {rec['fold']})",
            show_header=False,
        )
        t.add_column("field", style="bold")
        t.add_column("value")
        t.add_row(
            "status",
            rec["status"]
            + (f": {rec.get('reason') or rec.get('error')}" if rec["status"] != "ok" else ""),
        )
        for k, v in (rec.get("metrics") or {}).items():
            t.add_row(k, fmt(v))
        for k, v in (rec.get("size") or {}).items():
            t.add_row(k, fmt(v))
        for k in ("fit_seconds", "predict_seconds", "n_train", "n_test", "n_features", "split_id"):
            if k in rec:
                t.add_row(k, fmt(rec[k]))
        tuning = rec.get("tuning")
        if tuning:  # the configuration that was fitted: the search's choice over the config's
            fitted = {**(rec.get("params") or {}), **tuning["best_params"]}
            t.add_row("params (tuned)", json.dumps(fitted, default=str))
        else:
            t.add_row("params", json.dumps(rec.get("params"), default=str))
        if tuning:  # what the search chose, on what budget, and what it cost
            cv = tuning["cv"]
            t.add_row(
                "tuned",
                f"{json.dumps(tuning['best_params'], default=str)}: inner {tuning['scoring']} "
                f"{fmt(tuning['best_score'])} ({tuning['search_cv']}, {tuning['n_candidates']} "
                f"candidates, {cv['n_splits']}-fold {cv['splitter']}, "
                f"{tuning['seconds']:.1f}s)",
            )
        t.add_row("key", rec["key"])
        console.print(t)
