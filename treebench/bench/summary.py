"""Bench tables from the raw rows.

Medians per method and dataset, ratios to CART, scaling slopes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from treebench.bench.config import basis_columns

RAW_COLUMNS = [
    "section",
    "dataset",
    "method",
    "repeat",
    "warmup",
    "status",
    "n_train",
    "n_test",
    "n_features",
    "threads",
    "param",
    "value",
    "fit_s",
    "fit_cpu_s",
    "predict_s",
    "predict_cpu_s",
    "predict_calls",
    "predict_samples_per_s",
    "predict_cpu_samples_per_s",
    "ref_samples_per_s",
    "ref_cpu_samples_per_s",
    "peak_rss_mb",
    "peak_traced_mb",
    "split_evals",
    "n_splits",
    "depth",
    "accuracy",
    "fits",
    "error",
]
SUMMARY_COLUMNS = [
    "dataset",
    "method",
    "status",
    "n_train",
    "n_test",
    "n_features",
    "repeats",
    "fit_s_median",
    "fit_s_min",
    "fit_s_max",
    "fit_wall_s_median",
    "fit_ratio_cart",
    "predict_sps_median",
    "predict_sps_min",
    "predict_sps_max",
    "predict_wall_sps_median",
    "predict_ratio_cart",
    "peak_rss_mb",
    "peak_traced_mb",
    "split_evals",
    "split_evals_ratio_cart",
    "n_splits",
    "accuracy",
]


def summarize(raw: pd.DataFrame, ref: str = "cart", basis: str = "cpu") -> pd.DataFrame:
    """Median/min/max per (dataset, method) of the timed main rows; ratios against ``ref``.

    ``fit_s_*`` and ``predict_sps_*`` are on the ``basis`` (CPU time of the process by default);
    ``fit_wall_s_median`` and ``predict_wall_sps_median`` are wall-clock medians.
    """
    FIT, PRED = basis_columns(basis)
    main = raw[(raw["section"] == "main") & (~raw["warmup"].astype(bool))]
    warm = raw[(raw["section"] == "main") & (raw["warmup"].astype(bool))]
    out = []
    for (ds, m), g in main.groupby(["dataset", "method"], sort=False):
        ok = g[g["status"] == "ok"]
        w = warm[(warm["dataset"] == ds) & (warm["method"] == m)]
        rec = {
            "dataset": ds,
            "method": m,
            "status": "ok" if len(ok) else g["status"].iloc[0],
            "n_train": g["n_train"].iloc[0],
            "n_test": g["n_test"].iloc[0],
            "n_features": g["n_features"].iloc[0],
            "repeats": len(ok),
        }
        if len(ok):
            f, p = ok[FIT].astype(float), ok[PRED].astype(float)
            rec.update(
                fit_s_median=f.median(),
                fit_s_min=f.min(),
                fit_s_max=f.max(),
                fit_wall_s_median=ok["fit_s"].astype(float).median(),
                predict_wall_sps_median=ok["predict_samples_per_s"].astype(float).median(),
                predict_sps_median=p.median(),
                predict_sps_min=p.min(),
                predict_sps_max=p.max(),
                peak_rss_mb=(w["peak_rss_mb"] if len(w) else ok["peak_rss_mb"]).astype(float).max(),
                peak_traced_mb=w["peak_traced_mb"].astype(float).max() if len(w) else None,
                split_evals=ok["split_evals"].astype(float).median(),
                n_splits=ok["n_splits"].astype(float).median(),
                accuracy=ok["accuracy"].astype(float).median(),
            )
        out.append(rec)
    s = pd.DataFrame(out).reindex(columns=SUMMARY_COLUMNS)
    for _ds, g in s.groupby("dataset", sort=False):
        r = g[g["method"] == ref]
        if not len(r):
            continue
        r = r.iloc[0]
        idx = g.index
        s.loc[idx, "fit_ratio_cart"] = s.loc[idx, "fit_s_median"] / r["fit_s_median"]
        s.loc[idx, "predict_ratio_cart"] = (
            s.loc[idx, "predict_sps_median"] / r["predict_sps_median"]
        )
        s.loc[idx, "split_evals_ratio_cart"] = s.loc[idx, "split_evals"] / r["split_evals"]
    return s


def fit_slope(x, t, model: str = "power") -> float:
    """Least-squares slope of log t vs log x (``power``) or of log2 t vs x (``exp2``)."""
    x, t = np.asarray(x, float), np.asarray(t, float)
    ok = np.isfinite(x) & np.isfinite(t) & (t > 0) & (x > 0)
    if ok.sum() < 3:
        return float("nan")
    xx = np.log(x[ok]) if model == "power" else x[ok]
    yy = np.log(t[ok]) if model == "power" else np.log2(t[ok])
    return float(np.polyfit(xx, yy, 1)[0])


def scaling_summary(
    raw: pd.DataFrame, cfg: dict, settings: dict, basis: str = "wall"
) -> pd.DataFrame:
    """Fitted slopes per method and axis, the expected value and a flag when it is exceeded."""
    FIT = basis_columns(basis)[0]
    tol = float(cfg["scaling"].get("tolerance", 0.3))
    out = []
    for sec in ("scaling_n", "scaling_param"):
        d = raw[(raw["section"] == sec) & (raw["status"] == "ok")]
        for m, g in d.groupby("method", sort=False):
            st = settings.get(m, {})
            if sec == "scaling_n":
                axis, model, exp = "n_samples", "power", st.get("expected", {}).get("n_samples")
            else:
                sw = st.get("sweep") or {}
                axis, model, exp = sw.get("param"), sw.get("model", "power"), sw.get("expected")
            slope = fit_slope(g["value"].astype(float), g[FIT].astype(float), model)
            flag = exp is not None and np.isfinite(slope) and slope > float(exp) + tol
            out.append(
                {
                    "method": m,
                    "axis": axis,
                    "model": "log-log" if model == "power" else "log2 t per unit",
                    "points": len(g),
                    "range": f"{g['value'].min():g}-{g['value'].max():g}",
                    "fit_s_range": f"{g[FIT].min():.3g}-{g[FIT].max():.3g}",
                    "slope": slope,
                    "expected": exp,
                    "flag": "SLOWER THAN STATED" if flag else "",
                }
            )
    return pd.DataFrame(out)


def small_summary(raw: pd.DataFrame, ref: str = "cart", basis: str = "cpu") -> pd.DataFrame:
    """Return the small section per method and measurement (a dataset's fits, or the tune job).

    Median seconds on the ``basis`` over the timed rows, their count, and the ratio to ``ref``'s
    median on the same measurement; a measurement without an ``ok`` row keeps its first status.
    """
    FIT = basis_columns(basis)[0]
    d = raw[raw["section"].isin(["small", "small_tune"]) & ~raw["warmup"].astype(bool)]
    out = []
    for (sec, ds, m), g in d.groupby(["section", "dataset", "method"], sort=False):
        ok = g[g["status"] == "ok"]
        out.append(
            {
                "measure": "fit" if sec == "small" else f"{g['param'].iloc[0]} job",
                "dataset": ds,
                "n_rows": int(g["n_train"].iloc[0]),
                "n_features": int(g["n_features"].iloc[0]),
                "method": m,
                "status": "ok" if len(ok) else g["status"].iloc[0],
                "repeats": len(ok),
                "fit_s_median": ok[FIT].astype(float).median() if len(ok) else np.nan,
                "fits": ok["fits"].astype(float).median() if len(ok) else np.nan,
            }
        )
    s = pd.DataFrame(out)
    if not len(s):
        return s
    base = s[s["method"] == ref].set_index(["measure", "dataset"])["fit_s_median"]
    s["ratio_cart"] = [
        r.fit_s_median / base.get((r.measure, r.dataset), np.nan) for r in s.itertuples()
    ]
    return s


def small_slopes(raw: pd.DataFrame, basis: str = "cpu") -> pd.DataFrame:
    """Fit time vs rows of the small section's ``slope`` series.

    Per method and variant, the log-log slope (:func:`fit_slope`) over the rows measured.
    """
    FIT = basis_columns(basis)[0]
    d = raw[(raw["section"] == "small_slope") & (raw["status"] == "ok")]
    out = []
    for (m, variant), g in d.groupby(["method", "param"], sort=False):
        x, t = g["value"].astype(float), g[FIT].astype(float)
        out.append(
            {
                "method": m,
                "variant": variant,
                "points": len(g),
                "rows": " / ".join(f"{v:g}" for v in x),
                "fit_s": " / ".join(f"{v:.3g}" for v in t),
                "slope": fit_slope(x, t, "power"),
            }
        )
    return pd.DataFrame(out)
