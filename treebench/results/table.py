"""Tidy results table: one row per stored record, params flattened to ``param.<name>`` columns."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.results.index import concat, store_rows
from treebench.results.ledger import Ledger, merge_labels
from treebench.results.record import DONE_STATUSES, FORMAT_FIELD, Record, Reference, Tuning

#: nested groups flattened into the row, each with its columns' prefix
_NESTED = {
    "params": "param.",
    "size": "",
    "metrics": "",
    "info": "info.",
    "provenance": "provenance.",
}
#: top-level fields that are no column: the plan labels (rows are expanded by them) and the file's
#: format version (how the record is stored, not what it says)
_NOT_TOP = frozenset({*_NESTED, "also_experiments", "full_plan_of", "ran_profile", FORMAT_FIELD})
ALSO = "__also_experiments"  # a record's extra experiment labels, until rows are expanded
FULL = "__full_plan_of"  # experiments whose full plan holds a record made under another profile
COLS = "__columns"  # a row's column names in order (joined by _SEP)
_SEP = "\x1f"


def _flatten(rec: Record) -> dict:
    row = {k: v for k, v in rec.items() if k not in _NOT_TOP and not isinstance(v, dict)}
    if rec.get("full_plan_of"):  # set on the rows of those experiments (:func:`per_experiment`)
        row["ran_profile"] = rec.get("ran_profile")
    for group, prefix in _NESTED.items():
        for k, v in (rec.get(group) or {}).items():
            row[prefix + k] = str(v) if isinstance(v, (dict, list)) else v
    tuning: Tuning | None = rec.get("tuning")
    if tuning:  # a tuned run's budget (``tune``, part of its configuration in tables) and choice
        row["tune"] = (
            f"{tuning['strategy']}({tuning['n_candidates']}, cv={tuning['cv']['n_splits']})"
        )
        for k, v in tuning.items():
            if k != "candidates":  # every candidate's scores stay in the record
                row[f"tuning.{k}"] = v if not isinstance(v, (dict, list)) else str(v)
    ref: Reference | None = rec.get("reference")
    if ref:  # the size-matched baseline fitted beside the method (runner.fit_reference)
        row["reference"] = (
            f"{ref['method']}({', '.join(f'{p}={f}' for p, f in ref['match'].items())})"
        )
        for k, v in {**ref["metrics"], **ref["size"], "fit_seconds": ref["fit_seconds"]}.items():
            row[f"reference.{k}"] = v
    return row


def per_experiment(rec: Record) -> list[Record]:
    """One copy of ``rec`` per experiment it belongs to (its label plus ``also_experiments``).

    Each has the ``full`` profile where that experiment's full plan holds it (``full_plan_of``;
    the profile it ran under in ``ran_profile``), as :func:`records_frame` has them.
    """
    also = [e for e in rec.get("also_experiments") or [] if e != rec.get("experiment")]
    full = set(rec.get("full_plan_of") or [])
    out = [rec] + [{**rec, "experiment": e} for e in also]
    ran = rec.get("profile") or "full"
    return [
        {**r, "profile": "full", "ran_profile": ran} if r.get("experiment") in full else r
        for r in out
    ]


def to_frame(records) -> pd.DataFrame:
    """Return records as a DataFrame, one row per (record, experiment it belongs to).

    Params become ``param.*`` columns and provenance ``provenance.*``. A fit shared by several
    experiments (same run key) appears once under each of them.
    """
    rows = [_flatten(r) for rec in records for r in per_experiment(rec)]
    return _ran_profile_last(pd.DataFrame(rows))


def _ran_profile_last(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``ran_profile`` (when present) as its last column.

    Where first appearance would put it depends on which rows come first, which differs between
    the cached and parsed tables.
    """
    if "ran_profile" not in df.columns or df.columns[-1] == "ran_profile":
        return df
    return df[[*(c for c in df.columns if c != "ran_profile"), "ran_profile"]]


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Return a copy whose object columns holding several value types are strings.

    Such columns (e.g. verbose False and 0 from two methods) become strings, which Parquet needs;
    the returned table keeps the original values.
    """
    out = df.copy(deep=False)  # columns are replaced below, never written into
    for col in [c for c in out.columns if out[c].dtype == object]:  # not pandas 3's str columns
        kinds = set(map(type, out[col].dropna()))
        if len(kinds) > 1:
            out[col] = out[col].map(lambda v: v if v is None or v != v else str(v))
    return out


def _row(rec: Record) -> dict:
    """Return a record's flat row, with its extra experiment labels and its column names.

    The labels are for :func:`_expand`, the column names (in order) for :func:`_columns`.
    """
    row = _flatten(rec)
    cols = _SEP.join(row)
    row[ALSO] = list(rec.get("also_experiments") or []) or None
    row[FULL] = list(rec.get("full_plan_of") or []) or None
    row[COLS] = cols
    return row


def _columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its columns in order of first appearance over its rows.

    That is how ``pd.DataFrame(list_of_rows)`` orders them (reports list parameters in that
    order).
    """
    order: dict[str, None] = {}
    for names in pd.unique(df[COLS].astype(object)):
        order.update(dict.fromkeys(names.split(_SEP)))
    return df[[*order, ALSO, FULL]]


def _expand(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (record, experiment it belongs to), as :func:`per_experiment` gives."""
    if df.empty or ALSO not in df.columns:
        return df.drop(columns=[ALSO, FULL], errors="ignore")
    also = df[ALSO]
    if also.isna().all():
        out = df.drop(columns=[ALSO]).reset_index(drop=True)
        return _full_profiles(out)
    own = df["experiment"].to_numpy(dtype=object)
    extra = {  # row -> its other labels; only the few rows that have some
        i: [a for a in x if a != own[i]]
        for i, x in enumerate(also.to_numpy(dtype=object))
        if isinstance(x, list)
    }
    counts = np.ones(len(df), dtype=np.int64)
    for i, labels in extra.items():
        counts[i] += len(labels)
    first = np.cumsum(counts) - counts  # each record's first row in the output
    experiment = np.empty(int(counts.sum()), dtype=object)
    experiment[first] = own
    for i, labels in extra.items():
        experiment[first[i] + 1 : first[i] + 1 + len(labels)] = labels
    out = df.drop(columns=[ALSO]).take(np.repeat(np.arange(len(df)), counts))
    out["experiment"] = experiment
    return _full_profiles(out.reset_index(drop=True))


def _full_profiles(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (one row per record and experiment) with profile ``full`` where a full plan holds it.

    Profile ``full`` goes on the rows whose experiment's full plan holds the record (its
    ``full_plan_of``), and the profile it ran under in ``ran_profile`` there; the :data:`FULL`
    column is dropped.
    """
    if FULL not in df.columns:
        return df
    if df[FULL].isna().all():
        return df.drop(columns=[FULL])
    full = df[FULL].to_numpy(dtype=object)
    rows = [
        i
        for i, (labels, e) in enumerate(
            zip(full, df["experiment"].to_numpy(dtype=object), strict=True)
        )
        if isinstance(labels, list) and e in labels
    ]
    out = df.drop(columns=[FULL])
    if rows:
        out = out.copy()
        at = out.index[rows]
        ran = out["profile"] if "profile" in out.columns else pd.Series(None, index=out.index)
        out["ran_profile"] = (  # _flatten made the column
            out["ran_profile"].astype(object)
            if "ran_profile" in out.columns
            else pd.Series(None, index=out.index, dtype=object)
        )
        out.loc[at, "ran_profile"] = ran.loc[at].fillna("full").to_numpy(dtype=object)
        out["ran_profile"] = out["ran_profile"].infer_objects()  # as one DataFrame() call types it
        out.loc[at, "profile"] = "full"
    return out


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(None, index=df.index, dtype=object)


def core_seconds(df: pd.DataFrame) -> pd.Series:
    """Each row's core time in seconds.

    That is the CPU time its run measured (``cpu_seconds``: process, threads and child processes),
    else, for records made before runs measured it, its wall-clock seconds times the threads it
    held (which also counts time spent waiting for a core).
    """
    threads = pd.to_numeric(_column(df, "threads"), errors="coerce").fillna(1.0)
    wall = pd.to_numeric(_column(df, "wall_seconds"), errors="coerce").fillna(0.0)
    cpu = pd.to_numeric(_column(df, "cpu_seconds"), errors="coerce")
    return cpu.fillna(wall * threads).astype(float)


def core_hours(df: pd.DataFrame, measured: bool = False) -> float:
    """Core-hours behind the rows.

    Each distinct run's :func:`core_seconds` (tuning included; a resumed fit counts its last leg
    only), summed and divided by 3,600; with ``measured``, only the runs that measured their CPU
    time.
    """
    if df.empty:
        return 0.0
    runs = df.drop_duplicates("key")
    if measured:
        runs = runs[pd.to_numeric(_column(runs, "cpu_seconds"), errors="coerce").notna()]
    return float(core_seconds(runs).sum()) / 3600.0


def records_frame(
    store_dir: str | os.PathLike | None, ledger: Ledger | None = None, problems=None
) -> pd.DataFrame:
    """Return the rows of ledger + store, one per (run key, experiment).

    They are :func:`to_frame` of :func:`~treebench.results.ledger.combined_records`, read through
    the store's shard caches (:mod:`treebench.results.index`) so that 100,000 records take
    seconds.
    """
    probs: list = [] if problems is None else problems
    local = store_rows(Path(store_dir), _row, probs) if store_dir is not None else pd.DataFrame()
    led = (
        pd.DataFrame([_row(r) for r in ledger.records()]) if ledger is not None else pd.DataFrame()
    )
    if ledger is not None:  # damaged ledger lines, named by file and line
        probs.extend(p for p in ledger.problems if p not in probs)
    if led.empty and local.empty:
        return pd.DataFrame()
    if led.empty or local.empty:
        return _ran_profile_last(_expand(_columns(led if local.empty else local)))
    in_led = local["key"].isin(set(led["key"]))
    # a key in both keeps the store's record (the newer run) unless that one failed
    mine = local[in_led & local["status"].isin(DONE_STATUSES)]
    if not mine.empty:
        theirs = led.set_index("key").loc[mine["key"]]
        merged = [
            merge_labels(
                {
                    "experiment": e,
                    "profile": p,
                    "also_experiments": a or [],
                    "full_plan_of": f or [],
                },
                {
                    "experiment": oe,
                    "profile": op,
                    "also_experiments": oa or [],
                    "full_plan_of": of or [],
                },
            )
            for e, p, a, f, oe, op, oa, of in zip(
                mine["experiment"],
                _column(mine, "profile"),
                mine[ALSO],
                mine[FULL],
                theirs["experiment"],
                _column(theirs, "profile"),
                theirs[ALSO],
                theirs[FULL],
                strict=True,
            )
        ]
        mine = mine.assign(
            **{
                ALSO: [m.get("also_experiments") or None for m in merged],
                FULL: [m.get("full_plan_of") or None for m in merged],
            }
        )
        pos = pd.Series(range(len(led)), index=led["key"])
        top = pd.concat([led[~led["key"].isin(set(mine["key"]))], mine], ignore_index=True)
        top = top.iloc[pos.loc[top["key"]].argsort(kind="stable")]
    else:
        top = led
    return _ran_profile_last(_expand(_columns(concat([top, local[~in_led]]))))


def collect(
    store_dir: str | os.PathLike | None,
    out_dir: str | os.PathLike | None = None,
    experiment: str | None = None,
    status: str | None = None,
    ledger: Ledger | None = None,
    problems: list | None = None,
    csv: bool = False,
) -> pd.DataFrame:
    """Merge records into one table, optionally written to ``out_dir``.

    The table is written as Parquet (and with ``csv``, CSV).

    Reads the local store at ``store_dir`` (None: none) and the committed ``ledger``, one record per
    run key (see :func:`~treebench.results.ledger.combined_records`). The ``(path, reason)`` of each
    unreadable or invalid store record and damaged ledger line is appended to ``problems`` when
    given (they are left out of the table).
    """
    df = records_frame(store_dir, ledger, problems)
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
        writers = [(".parquet", _parquet_safe(df).to_parquet)] + (
            [(".csv", df.to_csv)] if csv else []
        )
        for suffix, write in writers:
            tmp = out / f".{stem}{suffix}.tmp"
            write(tmp, index=False)
            os.replace(tmp, out / f"{stem}{suffix}")
    return df
