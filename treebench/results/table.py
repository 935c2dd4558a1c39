"""The tidy results table: one row per stored record, params flattened to ``param.<name>`` columns."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from treebench.results.ledger import Ledger, combined_records
from treebench.results.store import Store

_NESTED = ("params", "size", "metrics", "info", "provenance")


def _flatten(rec: dict) -> dict:
    row = {
        k: v
        for k, v in rec.items()
        if k not in _NESTED and k != "also_experiments" and not isinstance(v, dict)
    }
    for group in _NESTED:
        for k, v in (rec.get(group) or {}).items():
            name = (
                k
                if group in ("size", "metrics")
                else f"{group[:-1] if group.endswith('s') else group}.{k}"
            )
            row[name] = v if not isinstance(v, (dict, list)) else str(v)
    return row


def per_experiment(rec: dict) -> list[dict]:
    """One copy of ``rec`` per experiment it belongs to (its label plus ``also_experiments``)."""
    also = [e for e in rec.get("also_experiments") or [] if e != rec.get("experiment")]
    return [rec] + [{**rec, "experiment": e} for e in also]


def to_frame(records) -> pd.DataFrame:
    """Records as a DataFrame, one row per (record, experiment it belongs to).

    Params become ``param.*`` columns and provenance ``provenance.*``. A fit shared by several
    experiments (same run key) appears once under each of them.
    """
    rows = [_flatten(r) for rec in records for r in per_experiment(rec)]
    return pd.DataFrame(rows)


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy whose object columns holding several value types (e.g. verbose False and 0 from two
    methods) are strings, which Parquet needs; the returned table keeps the original values."""
    out = df.copy()
    for col in [c for c in out.columns if out[c].dtype == object]:  # not pandas 3's str columns
        kinds = {type(v) for v in out[col].dropna()}
        if len(kinds) > 1:
            out[col] = out[col].map(lambda v: v if v is None or v != v else str(v))
    return out


def collect(
    store_dir: str | os.PathLike | None,
    out_dir: str | os.PathLike | None = None,
    experiment: str | None = None,
    status: str | None = None,
    ledger: Ledger | None = None,
    problems: list | None = None,
) -> pd.DataFrame:
    """Merge records into one table, optionally written as Parquet and CSV to ``out_dir``.

    Reads the local store at ``store_dir`` (None: none) and the committed ``ledger``, one record per
    run key (see :func:`~treebench.results.ledger.combined_records`). The ``(path, reason)`` of each
    unreadable store record is appended to ``problems`` when given.
    """
    store = Store(store_dir) if store_dir is not None else None
    local = store.records() if store is not None else ()
    df = to_frame(combined_records(local, ledger))
    if problems is not None and store is not None:
        problems.extend(store.problems)
    if not df.empty:
        if experiment is not None:
            df = df[df["experiment"] == experiment]
        if status is not None:
            df = df[df["status"] == status]
        df = df.sort_values(["experiment", "dataset", "method", "seed", "fold"]).reset_index(
            drop=True
        )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"results-{experiment}" if experiment else "results"
        for suffix, write in ((".parquet", _parquet_safe(df).to_parquet), (".csv", df.to_csv)):
            tmp = out / f".{stem}{suffix}.tmp"
            write(tmp, index=False)
            os.replace(tmp, out / f"{stem}{suffix}")
    return df
