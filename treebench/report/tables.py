"""Aggregate tidy results into tables of mean ± SD per (dataset, method, configuration)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from treebench.report.select import norm

_SIZE_COLS = ("n_splits", "n_leaves", "split_evals")
#: column groups a summary never reads (unless one is its ``metric``)
_UNREAD = ("info.", "provenance.", "tuning.", "reference.")
#: compile seconds from which the summary shows a ``compile_s`` column (the slowest run's)
_SHOWN_COMPILE_S = 0.5
#: code of a param column that is not part of a row's configuration (same for all its runs)
_SAME = -2


def headline_metric(df: pd.DataFrame) -> str:
    """Return the first test metric column present (``test_accuracy`` before ``test_r2``)."""
    for col in ("test_accuracy", "test_r2", "test_error"):
        if col in df.columns and df[col].notna().any():
            return col
    cols = [c for c in df.columns if c.startswith("test_")]
    if not cols:
        raise ValueError("no test metric in the results")
    return cols[0]


def _sort_key(label: str) -> tuple:
    """Order of normalised param values: null first, then numbers by value, then text."""
    if label == "null":
        return (0, 0.0, "")
    try:
        return (1, float(label), "")
    except ValueError:
        return (2, 0.0, label)


def _hashable(v):
    """``v`` itself if a scalar, else its repr (lists and dicts cannot be grouped on)."""
    return v if isinstance(v, float | int | str | bool | type(None)) else repr(v)


def _param_codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Return integer codes of a param column's normalised values, and their labels.

    3, 3.0 and "3" share one code; codes are in the :func:`_sort_key` order of the labels; missing
    values have code -1.
    """
    try:
        raw, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:  # unhashable values (lists, dicts) in a frame not built by to_frame
        raw, uniques = pd.factorize(col.map(_hashable), use_na_sentinel=True)
    names = [norm(u) for u in uniques]  # one norm() per distinct value, not per row
    labels = sorted(set(names), key=_sort_key)
    if not names:
        return np.full(len(col), -1), labels
    pos = {lab: i for i, lab in enumerate(labels)}
    remap = np.array([pos[n] for n in names])
    return np.where(raw >= 0, remap[raw], -1), labels


def config_columns(df: pd.DataFrame, by: tuple = ("dataset", "method")) -> pd.DataFrame:
    """Each row's configuration within its ``by`` block.

    The ``param.*`` values, the tuning budget ``tune`` and the ``reference`` fit beside the method,
    that differ there.

    Returns a frame on ``df``'s index with ``config`` (e.g. ``"max_depth=3, n_estimators=50"``;
    empty when the block has one configuration; missing and None values read ``null``) and
    ``config_rank`` (an integer ordering the configurations by their values, numbers numerically).
    """
    params = sorted(c for c in df.columns if c.startswith("param."))
    # a tuned run, or one with a reference fit beside it, is its own configuration
    params += [c for c in ("tune", "reference") if c in df.columns]
    out = pd.DataFrame({"config": "", "config_rank": 0}, index=df.index)
    if df.empty or not params:
        return out
    coded = [_param_codes(df[c]) for c in params]
    codes = np.empty((len(df), len(params)), dtype=np.int32, order="F")  # rows x params
    for j, (k, _) in enumerate(coded):
        codes[:, j] = k
    # each row's block (-1: a missing block value, which no block holds)
    keys = pd.DataFrame({i: df[c].to_numpy() for i, c in enumerate(by) if c in df.columns})
    if keys.empty:
        block = np.zeros(len(df), dtype=np.int64)
    else:
        block = keys.groupby(list(keys.columns), sort=False).ngroup().to_numpy()
        block = np.where(np.isnan(block), -1, block).astype(np.int64)
    # a param varies in a block where its smallest and largest code there differ
    order = np.argsort(block, kind="stable")
    order = order[block[order] >= 0]
    differs = np.zeros(codes.shape, dtype=bool)
    if len(order):
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, np.diff(block[order]) != 0])
        varies = np.minimum.reduceat(sorted_codes, starts) != np.maximum.reduceat(
            sorted_codes, starts
        )
        differs[order] = np.repeat(varies, np.diff(np.r_[starts, len(order)]), axis=0)
    # a config's codes over the columns that vary in its block; the other columns are constant
    configs = np.where(differs, codes, _SAME)
    varying = np.flatnonzero((configs != _SAME).any(axis=0))
    # each row's configuration, numbered in lexicographic order of the codes (groupby's
    # compressed group index: np.unique over rows or a MultiIndex cost seconds at 100k rows)
    keys = pd.DataFrame(configs[:, varying])
    rank = keys.groupby(list(keys.columns), sort=True).ngroup().to_numpy() if len(varying) else 0
    rank = np.broadcast_to(rank, len(df))
    _, first = np.unique(rank, return_index=True)
    distinct = configs[np.ix_(first, varying)]
    labels = [
        ", ".join(
            f"{params[j].removeprefix('param.')}={coded[j][1][k] if k >= 0 else 'null'}"
            for j, k in zip(varying, cfg, strict=True)
            if k != _SAME
        )
        for cfg in distinct  # one label per distinct configuration, not per row
    ]
    out["config"] = np.asarray(labels, dtype=object)[rank]
    out["config_rank"] = rank
    return out


def summary_table(df: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    """Mean and SD of the test metric, size and fit time per configuration, over seeds and folds.

    A configuration is a (dataset, method) pair plus the values of the ``param.*`` columns that
    differ among that method's runs on that dataset, shown as ``config`` (see
    :func:`config_columns`; empty when the method ran one configuration there). Each run key
    counts once, so a record listed under several experiments (``to_frame`` gives it one row per
    experiment) is not counted twice. Only ``ok`` runs enter the mean; ``n`` is the number of
    distinct ``ok`` runs aggregated, ``failed``/``skipped`` the counts of the others.
    ``fit_s`` is the median fit time without numba's compile seconds (``compile_seconds`` of a
    record), shown as ``compile_s`` (the largest of a configuration's runs) when any run of the
    table compiled for at least half a second.
    """
    if df.empty:
        return pd.DataFrame()
    # the columns read below (identity, status, params, metrics, sizes): fewer to copy
    keep = [c for c in df.columns if not c.startswith(_UNREAD) or c == metric]
    df = df[keep]
    if "key" in df.columns:
        df = df.drop_duplicates("key")
    df = df.reset_index(drop=True)
    df = pd.concat([df, config_columns(df)], axis=1)
    # fit time without the numba compile (or cache load) of a process's first fit, shown apart
    compile_s = df["compile_seconds"] if "compile_seconds" in df.columns else None
    if compile_s is not None and "fit_seconds" in df.columns:
        df = df.assign(fit_seconds=df["fit_seconds"] - compile_s.fillna(0.0))
    keys = ["dataset", "method", "config_rank", "config"]
    status = df.groupby(keys)["status"].value_counts().unstack(fill_value=0)
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return status.reset_index().drop(columns="config_rank")
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
        if compile_s is not None and rows["compile_seconds"].fillna(0).max() >= _SHOWN_COMPILE_S:
            agg["compile_s"] = ("compile_seconds", "max")
        for c in _SIZE_COLS:
            if c in rows.columns:
                agg[c] = (c, "mean")
        part = rows.groupby(keys).agg(**agg)
        part.insert(0, "metric", m)
        parts.append(part)
    out = pd.concat(parts).sort_index()
    for s in ("failed", "skipped"):
        out[s] = status[s] if s in status.columns else 0
    out = out.reset_index().drop(columns="config_rank")
    metrics = list(dict.fromkeys(out["metric"]))
    out.attrs["metric"] = " / ".join(metrics)
    if len(metrics) == 1:
        out = out.drop(columns="metric")
    return out
