"""The comparison with the authors' code: columns of ``references.csv`` and its Markdown table.

``scripts/reference/compare.py all`` measures (treebench and the papers' reference implementations,
alternately, one thread) and writes the CSV; ``treebench bench`` renders the committed CSV into
BENCHMARKS.md without needing the references.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: one row per fit: a comparison (method, dataset, setting) × implementation × repeat
REFERENCE_COLUMNS = [
    "method",
    "dataset",
    "setting",
    "implementation",
    "repeat",
    "status",
    "fit_cpu_s",
    "fit_wall_s",
    "accuracy",
    "size",
    "treebench_commit",
    "reference_repo",
    "reference_commit",
    "date",
    "load_avg",
    "command",
]
#: the command that writes ``docs/bench/references.csv`` (scripts/README.md)
COMMAND = "python scripts/reference/compare.py all --refs DIR"


def read_references(path: str | Path) -> pd.DataFrame:
    """``references.csv`` with the columns of :data:`REFERENCE_COLUMNS` (missing ones empty)."""
    df = pd.read_csv(path, dtype={"treebench_commit": str, "reference_commit": str})
    return df.reindex(columns=REFERENCE_COLUMNS)


def _num(v, nd=3) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    return f"{v:.{nd}g}" if abs(v) < 1e5 else f"{v:.3g}"


def _spread(s: pd.Series) -> str:
    """``median [min, max]`` of the finite values, ``-`` if none."""
    s = pd.to_numeric(s, errors="coerce").dropna()
    if not len(s):
        return "-"
    if len(s) == 1:
        return _num(s.iloc[0])
    return f"{_num(s.median())} [{_num(s.min())}, {_num(s.max())}]"


def _acc(s: pd.Series) -> str:
    s = pd.to_numeric(s, errors="coerce").dropna()
    return f"{100 * s.mean():.2f}" if len(s) else "-"


def _size(s: pd.Series) -> str:
    s = pd.to_numeric(s, errors="coerce").dropna()
    if not len(s):
        return "-"
    lo, hi = int(s.min()), int(s.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def references_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison.

    CPU seconds of both (median [min, max] of the repeats), the ratio treebench/reference of the CPU
    medians, wall medians, mean test accuracy (%) and size of both.
    """
    rows = []
    keys = ["method", "dataset", "setting"]
    for (method, dataset, setting), g in df.groupby(keys, sort=False, dropna=False):
        ours = g[(g["implementation"] == "treebench") & (g["status"] == "ok")]
        ref = g[(g["implementation"] == "reference") & (g["status"] == "ok")]
        other = g[g["status"] != "ok"]["status"]
        status = "; ".join(dict.fromkeys(other.astype(str))) or "ok"
        c_ours = pd.to_numeric(ours["fit_cpu_s"]).median() if len(ours) else np.nan
        c_ref = pd.to_numeric(ref["fit_cpu_s"]).median() if len(ref) else np.nan
        w_ours = pd.to_numeric(ours["fit_wall_s"]).median() if len(ours) else np.nan
        w_ref = pd.to_numeric(ref["fit_wall_s"]).median() if len(ref) else np.nan
        repo = g["reference_repo"].dropna()
        commit = g["reference_commit"].dropna()
        rows.append(
            {
                "method": method,
                "dataset": dataset,
                "setting": setting,
                "cpu_treebench": _spread(ours["fit_cpu_s"]),
                "cpu_reference": _spread(ref["fit_cpu_s"]),
                "ratio": _num(c_ours / c_ref) if c_ref > 0 and np.isfinite(c_ours) else "-",
                "wall": f"{_num(w_ours)} / {_num(w_ref)}",
                "acc": f"{_acc(ours['accuracy'])} / {_acc(ref['accuracy'])}",
                "size": f"{_size(ours['size'])} / {_size(ref['size'])}",
                "runs": f"{len(ours)} / {len(ref)}",
                "reference": (repo.iloc[0] if len(repo) else "-")
                + (f" @ {str(commit.iloc[0])[:7]}" if len(commit) else ""),
                "status": status,
            }
        )
    return pd.DataFrame(rows)


#: header of each column of :func:`references_table`
TABLE_HEADERS = {
    "method": "method",
    "dataset": "data",
    "setting": "setting",
    "cpu_treebench": "treebench fit CPU s",
    "cpu_reference": "reference fit CPU s",
    "ratio": "CPU treebench / reference",
    "wall": "wall s (treebench / reference)",
    "acc": "test acc % (treebench / reference)",
    "size": "splits (treebench / reference)",
    "runs": "fits",
    "reference": "reference code",
    "status": "status",
}


def references_markdown(df: pd.DataFrame) -> str:
    """Return the Markdown table of :func:`references_table`."""
    t = references_table(df).rename(columns=TABLE_HEADERS)
    return t.to_markdown(index=False, disable_numparse=True)


def provenance(df: pd.DataFrame) -> dict[str, str]:
    """Command, treebench commit, dates and load averages of a results frame (for the prose)."""
    dates = sorted(str(d) for d in df["date"].dropna())
    loads = list(dict.fromkeys(str(v) for v in df["load_avg"].dropna()))
    commits = list(dict.fromkeys(str(v)[:7] for v in df["treebench_commit"].dropna()))
    cmd = list(dict.fromkeys(str(v) for v in df["command"].dropna()))
    return {
        "command": "` and `".join(cmd) if cmd else COMMAND,
        "commit": ", ".join(commits) or "?",
        "dates": f"{dates[0]} – {dates[-1]}" if dates else "?",
        "load": f"{loads[0]} … {loads[-1]}" if loads else "?",
    }
