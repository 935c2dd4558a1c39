"""Row selection and aggregation over the tidy results table (one row per record).

Everything is driven by :class:`~treebench.report.targets.Selector` data; no method or dataset name
appears in this code.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from treebench.report.targets import Selector
from treebench.results.table import core_hours


def _score(part: str):
    """Return the task's main score of ``part``.

    Accuracy for classification rows, R² for regression rows.
    """

    def fn(df: pd.DataFrame) -> pd.Series:
        cols = [c for c in (f"{part}_accuracy", f"{part}_r2") if c in df.columns]
        if not cols:
            raise KeyError(f"{part}_accuracy")
        out = df[cols[0]]
        return out.fillna(df[cols[1]]) if len(cols) == 2 else out

    return fn


#: metrics computed from recorded columns when a record does not carry them
DERIVED = {
    "test_error": lambda df: 1.0 - df["test_accuracy"],
    "train_error": lambda df: 1.0 - df["train_accuracy"],
    "n_nodes": lambda df: df["n_splits"] + df["n_leaves"],
    "n_splits_per_tree": lambda df: df["n_splits"] / df["n_trees"],
    # one column over mixed-task experiments (higher is better for both)
    "test_score": _score("test"),
    "train_score": _score("train"),
    # the same of the size-matched reference fitted beside the method (runner.fit_reference)
    "reference.test_score": _score("reference.test"),
}


def norm(v) -> str:
    """Return a param value as a comparable string.

    3, 3.0 and "3" match; None and NaN are ``null``.
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else repr(float(v))
    s = str(v)
    try:
        return norm(float(s)) if s.strip() not in ("", "nan") else s
    except ValueError:
        return {"None": "null", "True": "true", "False": "false"}.get(s, s)


def add_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Add the :data:`DERIVED` metrics where their inputs exist (and fill them where missing)."""
    if df.empty:
        return df
    df = df.copy()
    for name, fn in DERIVED.items():
        try:
            values = fn(df)
        except KeyError:
            continue
        df[name] = df[name].fillna(values) if name in df.columns else values
    return df


def select(
    df: pd.DataFrame,
    sel: Selector,
    experiment: str | None = None,
    largest_per: tuple = ("dataset",),
) -> pd.DataFrame:
    """Rows of ``df`` matching the selector (all statuses).

    A selector with ``largest`` keeps, within each block of ``largest_per`` columns (per dataset by
    default), only the rows whose ``largest`` column has the block's largest value; one with
    ``best_over`` then keeps, per block, only the rows of the configuration (values of the
    ``best_over`` columns) whose mean ``best_by`` over its ``ok`` rows is the ``best`` (min/max).
    """
    if df.empty:
        return df
    mask = pd.Series(True, index=df.index)
    exp = sel.experiment or experiment
    if exp is not None and "experiment" in df.columns:
        mask &= df["experiment"] == exp
    mask &= df["method"] == sel.method
    if sel.dataset is not None:
        mask &= df["dataset"] == sel.dataset
    for col, want in sel.where.items():
        if col not in df.columns:
            return df.iloc[0:0]
        wanted = {norm(w) for w in (want if isinstance(want, list) else [want])}
        mask &= df[col].map(norm).isin(wanted)
    rows = df[mask]
    if sel.largest is not None:
        rows = keep_largest(rows, sel.largest, largest_per)
    if sel.best_over:
        rows = keep_best(rows, sel.best_over, sel.best_by, sel.best, largest_per)
    return rows


def keep_best(
    rows: pd.DataFrame, over: tuple, by: str | None, best: str = "min", per: tuple = ()
) -> pd.DataFrame:
    """Return the rows of the configuration with the best mean ``by`` in each ``per`` block.

    A configuration is the values of the ``over`` columns; ``best`` is "min" or "max", over the
    ``ok`` rows of the block; ties go to the first configuration in sorted order. None if a column
    is not recorded or a block has no usable row.
    """
    if rows.empty or by not in rows.columns or any(c not in rows.columns for c in over):
        return rows.iloc[0:0]
    per = [c for c in per if c in rows.columns]
    blocks = [rows[c].astype(str) for c in per] or [pd.Series("", index=rows.index)]
    keys = blocks + [rows[c].map(norm).astype(str) for c in over]
    v = pd.to_numeric(rows[by], errors="coerce")
    usable = v.notna() & ((rows["status"] == "ok") if "status" in rows.columns else True)
    # (block, config) means, sorted by key: ties go to the first config
    by_block = (
        v[usable]
        .groupby([k[usable] for k in keys])
        .agg(exact_mean)
        .groupby(level=list(range(len(blocks))))
    )
    picked = by_block.idxmin() if best == "min" else by_block.idxmax()
    keep = pd.MultiIndex.from_arrays(keys).isin(list(picked))
    return rows[keep]


def keep_largest(rows: pd.DataFrame, col: str, per: tuple = ()) -> pd.DataFrame:
    """Return the rows whose numeric ``col`` is the largest among the ``ok`` rows of their block.

    The blocks are ``per``'s; none if ``col`` is not recorded.
    """
    if rows.empty or col not in rows.columns:
        return rows.iloc[0:0]
    v = pd.to_numeric(rows[col].map(norm), errors="coerce")
    usable = v.where(rows["status"] == "ok") if "status" in rows.columns else v
    per = [c for c in per if c in rows.columns]
    top = usable.groupby([rows[c] for c in per]).transform("max") if per else usable.max()
    return rows[v.notna() & (v == top)]


def prefer_full(rows: pd.DataFrame) -> pd.DataFrame:
    """If rows of both profiles exist, keep the ``full`` ones (the paper's protocol)."""
    if "profile" in rows.columns and (rows["profile"] == "full").any():
        return rows[rows["profile"] == "full"]
    return rows


def profile_of(rows: pd.DataFrame) -> str:
    """Return the profiles of ``rows`` joined by ``+`` (``full`` when none is recorded)."""
    if "profile" not in rows.columns or rows.empty:
        return "full"
    vals = sorted(set(rows["profile"].fillna("full")))
    return "+".join(vals)


def series_label(row: pd.Series, keys: list[str]) -> str:
    """Label of a row's series.

    The values of ``keys`` (``method`` first, params as ``k=v``; a param the row's method does not
    have is left out: ``cart``, not ``cart[finetune_passes=null]``).
    """
    parts = []
    for k in keys:
        v = row.get(k)
        if k in ("method", "dataset"):
            parts.append(str(v))
        elif norm(v) != "null" or k == keys[0]:
            parts.append(f"{k.split('.', 1)[-1]}={norm(v)}")
    if len(parts) == 1:
        return parts[0]
    return (
        f"{parts[0]}[{', '.join(parts[1:])}]"
        if keys[0] in ("method", "dataset")
        else ", ".join(parts)
    )


def aggregate(
    rows: pd.DataFrame,
    metric: str,
    best_over: tuple = (),
    best: str = "max",
    best_metric: str | None = None,
    nearest: dict | None = None,
) -> dict:
    """Mean, SD (ddof 1), n over the ``ok`` rows; with ``best_over``, the best config's numbers.

    Returns ``{mean, sd, n, runs, profile, n_failed, note}`` (``n`` values, over ``runs`` distinct
    seed x fold runs; with ``best_over`` also ``configs``, the set of configs it chose among, each a
    tuple of :func:`norm` values); ``mean`` is NaN when nothing usable exists.
    """
    out = {
        "mean": float("nan"),
        "sd": float("nan"),
        "n": 0,
        "runs": 0,
        "profile": profile_of(rows),
        "n_failed": int((rows["status"] == "failed").sum()) if "status" in rows else 0,
        "note": "",
    }
    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    if metric not in ok.columns:
        if not ok.empty:
            out["note"] = f"metric {metric} not recorded"
        return out
    ok = ok[ok[metric].notna()]
    if ok.empty:
        return out
    ok = prefer_full(ok)
    out["profile"] = profile_of(ok)
    if nearest:
        ok, note = _nearest_config(ok, nearest)
        out["note"] = note
        if ok.empty:
            return out
    if best_over:
        missing = [c for c in best_over if c not in ok.columns]
        best_over = tuple(c for c in best_over if c in ok.columns)
        if missing:
            out["note"] = f"best_over columns not recorded (ignored): {missing}"
    if best_over:
        keys = (
            ok[list(best_over)].map(norm)
            if hasattr(ok, "map")
            else ok[list(best_over)].applymap(norm)
        )
        if best_metric and best_metric not in ok.columns:  # never fall back to another metric
            out["note"] = f"best_by column {best_metric} not recorded"
            return out
        by = best_metric or metric
        grouped = ok[by].groupby([keys[c] for c in best_over])
        means = grouped.agg(exact_mean)
        pick = means.idxmax() if best == "max" else means.idxmin()
        pick = pick if isinstance(pick, tuple) else (pick,)
        m = np.ones(len(ok), dtype=bool)
        for c, v in zip(best_over, pick, strict=True):
            m &= (keys[c] == v).to_numpy()
        ok = ok[m]
        cfg = ", ".join(f"{c.split('.', 1)[-1]}={v}" for c, v in zip(best_over, pick, strict=True))
        on = "test" if by.startswith("test_") else by
        out["note"] = f"best of {counted(len(means), 'config')} (selected on {on}): {cfg}"
        out["configs"] = {k if isinstance(k, tuple) else (k,) for k in means.index}
    pooled = pooled_settings(ok)
    if pooled:
        out["note"] = "; ".join(x for x in (out["note"], pooled) if x)
    vals = ok[metric].astype(float)
    out.update(
        mean=exact_mean(vals),
        sd=float(vals.std(ddof=1)) if len(vals) > 1 else float("nan"),
        n=int(len(vals)),
        runs=n_runs(ok),
    )
    return out


RUN_COLUMNS = ("seed", "fold")


def pooled_settings(rows: pd.DataFrame) -> str:
    """Parameters that differ among ``rows`` whose numbers one mean pools ("" when none).

    A mean over several settings says so (forest sizes of a figure, or a budget by mistake). A
    parameter some records set and others leave at the method's default reads ``unset`` for the
    latter (``search_step in {secant, unset}``).
    """
    parts = []
    for c in (c for c in rows.columns if c.startswith("param.")):
        vals = sorted({norm(v) for v in rows[c]} - {"null"})
        if len(vals) > 1 or (vals and rows[c].map(norm).eq("null").any()):
            shown = vals + (["unset"] if len(vals) < rows[c].map(norm).nunique() else [])
            parts.append(f"{c.split('.', 1)[1]} in {{{', '.join(shown)}}}")
    return f"pools {'; '.join(parts)}" if parts else ""


def counted(n: int, noun: str) -> str:
    """``"1 record"``, ``"3 records"``: a count and its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def core_time(hours: float) -> str:
    """``hours`` of core time in words: "1.2 core-hours", "15 core-minutes" below an hour."""
    if hours >= 1:
        return f"{hours:,.1f} core-hours"
    return counted(round(60 * hours), "core-minute") if hours >= 1 / 120 else "under a core-minute"


def run_cost(rows: pd.DataFrame) -> float | None:
    """Return the core-hours of one run of ``rows``: the mean over their ok records.

    A run is a seed x fold, with every config its number pools or chooses among; None without any
    ok record.
    """
    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    runs = n_runs(ok)
    return core_hours(ok) / runs if runs else None


def n_runs(rows: pd.DataFrame) -> int:
    """Distinct runs (seed x fold) behind ``rows``.

    Several configs pooled in one mean (forest sizes of one seed, say) are one run, not several.
    """
    cols = [c for c in RUN_COLUMNS if c in rows.columns]
    if not cols:
        return int(len(rows))
    return int(len(rows[cols].drop_duplicates()))


def _nearest_config(ok: pd.DataFrame, nearest: dict) -> tuple[pd.DataFrame, str]:
    """Return the rows of the config whose mean ``col`` is closest to the value.

    A config is a set of varying ``param.*`` values.
    """
    ((col, want),) = nearest.items()
    if col not in ok.columns or ok[col].isna().all():
        return ok.iloc[0:0], f"nearest: column {col} not recorded"
    params = [c for c in ok.columns if c.startswith("param.") and ok[c].map(norm).nunique() > 1]
    if not params:
        got = exact_mean(ok[col])
        return ok, f"single config: {col} {got:.4g} (paper {want:g})"
    keys = pd.DataFrame({c: ok[c].map(norm) for c in params}, index=ok.index)
    means = ok[col].groupby([keys[c] for c in params]).agg(exact_mean)
    dist = (means - want).abs() / max(abs(want), 1e-12)
    pick = dist.idxmin()
    pick = pick if isinstance(pick, tuple) else (pick,)
    m = np.ones(len(ok), dtype=bool)
    for c, v in zip(params, pick, strict=True):
        m &= (keys[c] == v).to_numpy()
    cfg = ", ".join(f"{c.split('.', 1)[-1]}={v}" for c, v in zip(params, pick, strict=True))
    return (
        ok[m],
        f"nearest config to {col} = {want:g}: {cfg} ({col} "
        f"{means[pick if len(pick) > 1 else pick[0]]:.4g})",
    )


def exact_mean(values) -> float:
    """Return the mean of ``values`` from their correctly rounded sum (:func:`math.fsum`).

    The same bits in any row order, so equal runs give equal means and rank tests see their ties.
    """
    values = np.asarray(values, dtype=float)
    return math.fsum(values) / len(values) if len(values) else math.nan


def _block_rows(
    df: pd.DataFrame, sel: Selector, metric: str, per: tuple, experiment: str | None
) -> pd.DataFrame:
    """Return the ok rows of ``sel`` with a ``metric`` value, full-profile first per block."""
    rows = select(df, sel, experiment, largest_per=per)
    if rows.empty or metric not in rows.columns:
        return rows.iloc[0:0]
    ok = rows[(rows["status"] == "ok") & rows[metric].notna()]
    if not per:
        return prefer_full(ok)
    if len(ok):
        ok = ok.groupby(list(per), group_keys=False)[list(ok.columns)].apply(prefer_full)
    return ok


def per_block_means(
    df: pd.DataFrame, sel: Selector, metric: str, per: tuple, experiment: str | None = None
) -> pd.Series:
    """Mean of ``metric`` over the ok rows of ``sel``, per block (e.g. per dataset).

    The means do not depend on the rows' order (:func:`exact_mean`).
    """
    ok = _block_rows(df, sel, metric, per, experiment)
    if ok.empty:
        return pd.Series(dtype=float)
    if not per:  # one block: the mean over every selected row
        return pd.Series({"all": exact_mean(ok[metric])})
    return ok.groupby(list(per))[metric].agg(exact_mean)


def per_block(
    df: pd.DataFrame,
    sel: Selector,
    metric: str,
    per: tuple,
    agg: Callable[[pd.DataFrame], float | int | None],
    experiment: str | None = None,
) -> pd.Series:
    """``agg`` of the rows behind each :func:`per_block_means` mean (the same blocks and rows).

    :func:`n_runs` for the runs a mean is over, :func:`run_cost` for the core-hours of one.
    """
    ok = _block_rows(df, sel, metric, per, experiment)
    if ok.empty:
        return pd.Series(dtype=float)
    if not per:
        return pd.Series({"all": agg(ok)})
    return ok.groupby(list(per))[list(ok.columns)].apply(agg)


def curve_points(
    df: pd.DataFrame,
    sel: Selector,
    metric: str,
    size: str,
    per: tuple,
    experiment: str | None = None,
) -> pd.DataFrame:
    """Return a side's curve per block.

    One point per config (its varying ``param.*`` values), at the config's mean ``size`` and mean
    ``metric``, sorted by size; columns ``per``, ``x``, ``y``, ``runs`` (:func:`n_runs` behind the
    point), ``core_h`` (:func:`run_cost`), ``config`` (``"ccp_alpha=0.0001"``).
    """
    cols = [*per, "x", "y", "runs", "core_h", "config"]
    ok = _block_rows(df, sel, metric, per, experiment)
    if ok.empty or size not in ok.columns:
        return pd.DataFrame(columns=cols)
    ok = ok[ok[size].notna()]
    params = [c for c in ok.columns if c.startswith("param.") and ok[c].map(norm).nunique() > 1]
    keys = pd.DataFrame({c: ok[c].map(norm) for c in params}, index=ok.index)
    keys["_block"] = 0  # one block when ``per`` is empty
    for c in per:
        keys[c] = ok[c]
    by = [*per, *params] or ["_block"]
    g = ok.groupby([keys[c] for c in by])
    means = {"x": g[size].agg(exact_mean), "y": g[metric].agg(exact_mean)}
    rows = g[list(ok.columns)]
    pts = pd.DataFrame(
        {**means, "runs": rows.apply(n_runs), "core_h": rows.apply(run_cost).astype(float)}
    ).reset_index()
    pts["config"] = (
        pts[params].apply(
            lambda r: ", ".join(f"{c.split('.', 1)[-1]}={r[c]}" for c in params), axis=1
        )
        if params
        else ""
    )
    return pts[cols].sort_values([*per, "x"], kind="stable").reset_index(drop=True)
