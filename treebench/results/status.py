"""What ``treebench status`` counts.

Records per experiment, method, dataset and status (and how many are done locally but not in the
ledger yet), and which failed or skipped runs to list.
"""

from __future__ import annotations

from pathlib import Path

#: failed/skipped runs listed one per line; the rest are counted by reason
LISTED_RUNS = 50
COUNTED = ("ok", "skipped", "failed", "local")


def status_counts(df, ledger_keys=frozenset()):
    """Return the records per (experiment, method, dataset) and status, sorted.

    With a ``local`` column: done records whose key is not in ``ledger_keys``.
    """
    import pandas as pd

    v = df[["experiment", "method", "dataset", "status", "key"]]  # what the counts need
    v = v.assign(local=(v["status"] != "failed") & ~v["key"].isin(ledger_keys))
    by = [v["experiment"].astype(str), v["method"], v["dataset"]]
    counts = pd.crosstab(by, v["status"])
    counts["local"] = v.groupby([v["experiment"].astype(str), "method", "dataset"])["local"].sum()
    for col in COUNTED:
        if col not in counts:
            counts[col] = 0
    return counts[list(COUNTED)].sort_index().astype(int)


def failed_and_skipped(df, limit: int = LISTED_RUNS):
    """Return the failed and skipped rows to list one by one, and the rest as counts.

    At most ``limit`` rows; the rest as counts per ``"status: reason"`` (None when nothing is left
    over): thousands of lines help nobody.
    """
    import pandas as pd

    listed = df[df["status"].isin(["failed", "skipped"])] if len(df) else df
    if len(listed) <= limit:
        return listed, None
    rest = listed.iloc[limit:]
    why = rest["error"] if "error" in rest else pd.Series(None, index=rest.index)
    if "reason" in rest:
        why = why.fillna(rest["reason"])
    return listed.iloc[:limit], (
        rest["status"] + ": " + why.astype(str).str.slice(0, 160)
    ).value_counts()


def records_since(store: Path, t0: float) -> int:
    """Return the records written to ``store`` since ``t0``.

    Not the ``.tmp-*`` file of a write in flight.
    """
    n = 0
    for p in Path(store).glob("*/[!.]*.json"):
        try:
            n += p.stat().st_mtime >= t0
        except OSError:
            pass
    return n
