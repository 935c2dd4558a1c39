"""The PMLB benchmark's evaluation (experiment ``benchmark``): tables a renderer reads.

Every function takes the experiment's records (as :func:`benchmark_rows` gives them) and returns a
pandas table or a dict of them; :func:`evaluate` gathers them all and :func:`benchmark_markdown`
renders docs/benchmark.md from that with the jinja2 template ``templates/benchmark.md.j2``.

The statistics follow Demšar (2006), Nadeau & Bengio (2003) and Benavoli et al. (2017):

* per dataset, each single tree or graph against CART grown best-first to its own size measure
  (the record's ``reference``) by the corrected resampled t-test over the seeds, Holm-adjusted over
  the method's datasets: a win or loss needs adjusted p < :data:`ALPHA`;
* across datasets (one score per method and dataset: the mean over seeds), per task: Friedman with
  the Iman–Davenport correction, every pair's Wilcoxon signed-rank test Holm-adjusted (the CD
  diagram's bars join the pairs it cannot tell apart), and the Bayesian signed-rank test with a
  ROPE of :data:`ROPE` (1 point of accuracy, 0.01 of R²), each method against its same-size CART
  and every pair of methods.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.config import CONF_DIR, load_yaml
from treebench.report import stats as st
from treebench.results.cost import method_choice

EXPERIMENT = "benchmark"
#: significance level of every frequentist test on the page
ALPHA = 0.05
#: region of practical equivalence of the Bayesian tests, in score units (1 pp of accuracy)
ROPE = 0.01
#: seed of the Bayesian tests' Monte Carlo draws (the page is byte-identical run to run)
BAYES_SEED = 0
BAYES_SAMPLES = 20000
WIN, TIE, LOSS = "win", "tie", "loss"
#: method families (a method file's ``family:``), in the page's order
FAMILIES = {
    "optimal_tree": "optimal trees",
    "greedy_tree": "greedy trees",
    "nongreedy_tree": "non-greedy / differentiable trees",
    "graph": "decision graphs",
    "ensemble": "ensembles",
    "non_tree": "non-tree baselines",
}
UNASSIGNED = "unassigned"


@cache
def method_meta(name: str, conf_dir: str = CONF_DIR) -> dict:
    """Return a method file's ``family`` and ``size_measure`` (following its ``defaults:`` parent).

    ``{"family": "unassigned", "size_measure": None}`` for a method without a file.
    """
    path = Path(conf_dir) / "method" / f"{name}.yaml"
    if not path.is_file():
        return {"family": UNASSIGNED, "size_measure": None}
    conf = load_yaml(path.read_text()) or {}
    parents = [d for d in conf.get("defaults") or [] if isinstance(d, str) and d != "_self_"]
    base = method_meta(parents[0], conf_dir) if parents else {}
    return {
        "family": conf.get("family", base.get("family", UNASSIGNED)),
        "size_measure": conf.get("size_measure", base.get("size_measure")),
    }


# --------------------------------------------------------------------------------------- the rows

ROW_COLUMNS = [
    "method",
    "dataset",
    "task",
    "seed",
    "status",
    "reason",
    "score",
    "ref_score",
    "n_splits",
    "n_leaves",
    "n_trees",
    "ref_size",
    "size",
    "n_train",
    "n_test",
    "cpu_seconds",
    "family",
    "measure",
]


def benchmark_rows(df: pd.DataFrame, experiment: str = EXPERIMENT) -> pd.DataFrame:
    """Return the experiment's records (profile ``full``) as rows of this page's columns, one a run.

    ``score`` is test accuracy (classification) or test R² (regression); ``size`` the model's own
    size measure (its method file's ``size_measure``: leaves of a tree, splits of a graph; NaN for
    a method without one), ``ref_size`` its same-size CART's value of that measure; ``n_splits``
    counts the split nodes of every tree (an ensemble's total size).
    """
    from treebench.report.select import add_derived

    if df.empty or "experiment" not in df.columns:
        return pd.DataFrame(columns=ROW_COLUMNS)
    rows = df[df["experiment"] == experiment]
    if "profile" in rows.columns:
        rows = rows[rows["profile"].fillna("full") == "full"]
    if rows.empty:
        return pd.DataFrame(columns=ROW_COLUMNS)
    rows = add_derived(rows)

    def col(name):
        if name in rows.columns:
            return pd.to_numeric(rows[name], errors="coerce")
        return pd.Series(np.nan, index=rows.index)

    # a method config of another's estimator (tnt_finetune: tnt with a fine-tune) by its file name
    label = rows["overrides"].map(method_choice) if "overrides" in rows.columns else None
    label = rows["method"] if label is None else label.fillna(rows["method"])
    meta = {m: method_meta(m) for m in label.unique()}
    measure = label.map(lambda m: meta[m]["size_measure"])
    out = pd.DataFrame(
        {
            "method": label,
            "dataset": rows["dataset"],
            "task": rows["task"] if "task" in rows.columns else "classification",
            "seed": pd.to_numeric(rows["seed"]).astype(int),
            "status": rows["status"],
            "reason": _text(rows, "reason").fillna(_text(rows, "error")),
            "score": col("test_score"),
            "ref_score": col("reference.test_score"),
            "n_splits": col("n_splits"),
            "n_leaves": col("n_leaves"),
            "n_trees": col("n_trees"),
            "n_train": col("n_train"),
            "n_test": col("n_test"),
            "cpu_seconds": col("cpu_seconds").fillna(col("wall_seconds") * col("threads")),
            "family": label.map(lambda m: meta[m]["family"]),
            "measure": measure,
        }
    )
    own = {m: col(m) for m in ("n_leaves", "n_splits")}
    ref = {m: col(f"reference.{m}") for m in ("n_leaves", "n_splits")}
    out["size"] = [
        own[m].loc[i] if isinstance(m, str) else np.nan
        for i, m in zip(out.index, measure, strict=True)
    ]
    out["ref_size"] = [
        ref[m].loc[i] if isinstance(m, str) else np.nan
        for i, m in zip(out.index, measure, strict=True)
    ]
    out = out[ROW_COLUMNS].sort_values(["task", "dataset", "method", "seed"])
    return out.reset_index(drop=True)


def _text(rows: pd.DataFrame, name: str) -> pd.Series:
    if name in rows.columns:
        return rows[name].astype(object)
    return pd.Series([None] * len(rows), index=rows.index, dtype=object)


def cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Return one row per (task, dataset, method) cell.

    Seeds with an ok record, failed/skipped counts, mean and SD of the score, mean same-size CART
    score, mean size measure and split nodes, CPU seconds.
    """
    cols = ["task", "dataset", "method", "family", "n", "failed", "skipped", "score", "score_sd"]
    cols += ["ref_score", "size", "ref_size", "n_splits", "cpu_seconds"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    g = rows.groupby(["task", "dataset", "method"], sort=True)
    ok = rows[rows["status"] == "ok"].groupby(["task", "dataset", "method"], sort=True)
    out = pd.DataFrame(
        {
            "family": g["family"].first(),
            "n": ok["seed"].nunique(),
            "failed": g["status"].agg(lambda s: int((s == "failed").sum())),
            "skipped": g["status"].agg(lambda s: int((s == "skipped").sum())),
            "score": ok["score"].mean(),
            "score_sd": ok["score"].std(ddof=1),
            "ref_score": ok["ref_score"].mean(),
            "size": ok["size"].mean(),
            "ref_size": ok["ref_size"].mean(),
            "n_splits": ok["n_splits"].mean(),
            "cpu_seconds": g["cpu_seconds"].sum(),
        }
    )
    out["n"] = out["n"].fillna(0).astype(int)
    return out.reset_index()[cols]


# ------------------------------------------------------------------- per dataset: vs same-size CART


def vs_reference(rows: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Each (task, method, dataset) with a same-size reference.

    The corrected resampled t-test of score − reference over its seeds
    (:func:`treebench.report.stats.corrected_ttest`, with the runs' train and test sizes),
    Holm-adjusted over the method's datasets per task; ``outcome`` win/loss by the sign of the mean
    difference when the adjusted p < ``alpha``, else tie.
    """
    cols = ["task", "method", "dataset", "n", "mean", "sd", "t", "p", "p_holm", "d", "outcome"]
    ok = rows[(rows["status"] == "ok") & rows["ref_score"].notna()]
    out = []
    for (task, m, ds), g in ok.groupby(["task", "method", "dataset"], sort=True):
        res = st.corrected_ttest(
            g["score"] - g["ref_score"], int(g["n_train"].mean()), int(g["n_test"].mean())
        )
        out.append({"task": task, "method": m, "dataset": ds, **res})
    res = pd.DataFrame(out, columns=[c for c in cols if c not in ("p_holm", "outcome")])
    res["p_holm"] = np.nan
    for _, idx in res.groupby(["task", "method"]).groups.items():
        res.loc[idx, "p_holm"] = st.holm(res.loc[idx, "p"].to_numpy(float))
    sig = res["p_holm"] < alpha
    res["outcome"] = np.where(sig & (res["mean"] > 0), WIN, np.where(sig, LOSS, TIE))
    res.loc[res["p_holm"].isna(), "outcome"] = "untested"
    return res[cols]


# ---------------------------------------------------------------------- across datasets, per task


def score_table(cell_df: pd.DataFrame, task: str, n_seeds: int) -> tuple[pd.DataFrame, list[str]]:
    """Return the datasets × methods table of mean scores for ``task``, and the datasets left out.

    The table holds the datasets where every method of the task has all ``n_seeds`` seeds
    (complete blocks, as the rank tests need); the others with records are left out.
    """
    c = cell_df[(cell_df["task"] == task) & (cell_df["n"] > 0)]
    if c.empty:
        return pd.DataFrame(), []
    wide = c.pivot(index="dataset", columns="method", values="score").sort_index(axis=1)
    seeds = c.pivot(index="dataset", columns="method", values="n").reindex_like(wide)
    complete = wide[(seeds >= n_seeds).all(axis=1)]
    return complete, sorted(set(wide.index) - set(complete.index))


def across_datasets(table: pd.DataFrame, rope: float = ROPE) -> dict:
    """Return the rank tests of a :func:`score_table` (higher is better) across datasets.

    Friedman/Iman–Davenport, pairwise Holm-Wilcoxon and pairwise Bayesian signed-rank tests. Empty
    dict when it has < 2 datasets or < 3 methods.
    """
    if table.shape[0] < 2 or table.shape[1] < 3:
        return {}
    fr = st.iman_davenport(table)
    pairs = st.pairwise_wilcoxon(table)
    bayes = [
        st.bayes_signed_rank(table[a], table[b], rope, seed=BAYES_SEED, nsamples=BAYES_SAMPLES)
        for a, b in pairs[["a", "b"]].itertuples(index=False)
    ]
    for k in ("p_better", "p_equiv", "p_worse"):
        pairs[k] = [b[k] for b in bayes]
    pairs["mean_diff"] = [
        float((table[a] - table[b]).mean()) for a, b in pairs[["a", "b"]].itertuples(index=False)
    ]
    return {"friedman": fr, "pairs": pairs, "ranks": fr["ranks"].sort_values()}


def method_summary(
    rows: pd.DataFrame, cell_df: pd.DataFrame, vs: pd.DataFrame, ranks: dict, rope: float = ROPE
) -> pd.DataFrame:
    """Return one row per (task, method).

    Family, size measure, N datasets with a score, mean rank (over the task's complete blocks; NaN
    when not ranked), wins/ties/losses against same-size CART (:func:`vs_reference`), the Bayesian
    signed-rank P(better)/P(equivalent)/P(worse) of the method against its same-size CART over
    datasets, the median difference to it, the mean size measure and split nodes, CPU hours.
    """
    cols = ["task", "method", "family", "measure", "N", "mean_rank", WIN, TIE, LOSS]
    cols += ["p_better", "p_equiv", "p_worse", "median_diff", "size", "n_splits", "cpu_hours"]
    out = []
    for (task, m), c in cell_df[cell_df["n"] > 0].groupby(["task", "method"], sort=True):
        v = vs[(vs["task"] == task) & (vs["method"] == m)]
        both = c.dropna(subset=["score", "ref_score"])
        b = st.bayes_signed_rank(
            both["score"], both["ref_score"], rope, seed=BAYES_SEED, nsamples=BAYES_SAMPLES
        )
        r = ranks.get(task)
        out.append(
            {
                "task": task,
                "method": m,
                "family": c["family"].iloc[0],
                "measure": method_meta(m)["size_measure"],
                "N": len(c),
                "mean_rank": float(r[m]) if r is not None and m in r.index else np.nan,
                WIN: int((v["outcome"] == WIN).sum()),
                TIE: int((v["outcome"] == TIE).sum()),
                LOSS: int((v["outcome"] == LOSS).sum()),
                "p_better": b["p_better"],
                "p_equiv": b["p_equiv"],
                "p_worse": b["p_worse"],
                "median_diff": float((both["score"] - both["ref_score"]).median())
                if len(both)
                else np.nan,
                "size": float(c["size"].mean()),
                "n_splits": float(c["n_splits"].mean()),
                "cpu_hours": float(
                    rows[(rows["task"] == task) & (rows["method"] == m)]["cpu_seconds"].sum()
                )
                / 3600,
            }
        )
    return pd.DataFrame(out, columns=cols)


def ensembles_vs_rf(table: pd.DataFrame, summary: pd.DataFrame, rope: float = ROPE) -> pd.DataFrame:
    """Each ensemble of a task's :func:`score_table` against RF over the same datasets.

    Mean and median difference, Wilcoxon p (Holm over the ensembles), rank-biserial r, Bayesian
    P(better)/P(equivalent)/P(worse), and its mean total split nodes.
    """
    cols = ["method", "N", "mean_diff", "median_diff", "r", "p", "p_holm", "p_better", "p_equiv"]
    cols += ["p_worse", "n_splits"]
    if "rf" not in table.columns:
        return pd.DataFrame(columns=cols)
    fam = dict(zip(summary["method"], summary["family"], strict=True))
    splits = dict(zip(summary["method"], summary["n_splits"], strict=True))
    out = []
    for m in [c for c in table.columns if fam.get(c) == "ensemble" and c != "rf"]:
        w = st.wilcoxon(table[m], table["rf"])
        b = st.bayes_signed_rank(table[m], table["rf"], rope, BAYES_SEED, BAYES_SAMPLES)
        out.append(
            {
                "method": m,
                "N": len(table),
                "mean_diff": float((table[m] - table["rf"]).mean()),
                "median_diff": float((table[m] - table["rf"]).median()),
                "r": st.rank_biserial(table[m], table["rf"]),
                "p": w["p"],
                "p_better": b["p_better"],
                "p_equiv": b["p_equiv"],
                "p_worse": b["p_worse"],
                "n_splits": splits.get(m, np.nan),
            }
        )
    res = pd.DataFrame(out, columns=[c for c in cols if c != "p_holm"])
    res["p_holm"] = st.holm(res["p"].to_numpy(float)) if len(res) else []
    return res[cols]


# ------------------------------------------------------------------------------ size and budget


def pareto(cell_df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the accuracy–size Pareto front per dataset, and how often each method is on it.

    Size is the split nodes of all trees (mean over seeds), score the mean score; the counts are
    per (task, method) over its datasets' fronts.

    Returns ``(fronts, frequency)``: ``fronts`` the cells with ``on_front``; ``frequency`` per
    (task, method): ``on_front`` datasets, ``N`` datasets, ``share``.
    """
    from treebench.report.headtohead import pareto_front

    # non-tree models have no split nodes to be small with
    c = cell_df[
        (cell_df["n"] > 0) & cell_df["n_splits"].notna() & (cell_df["family"] != "non_tree")
    ].copy()
    c["on_front"] = False
    for _, idx in c.groupby(["task", "dataset"]).groups.items():
        c.loc[idx, "on_front"] = pareto_front(c.loc[idx, "n_splits"], c.loc[idx, "score"])
    freq = (
        c.groupby(["task", "method"], sort=True)["on_front"]
        .agg(on_front="sum", N="count")
        .reset_index()
    )
    freq["on_front"] = freq["on_front"].astype(int)
    freq["share"] = freq["on_front"] / freq["N"]
    return c[["task", "dataset", "method", "n_splits", "score", "on_front"]], freq


def expected_best(scores, k: int) -> float:
    """Return expected maximum of ``k`` of ``scores`` drawn without replacement.

    The mean over every order of the search (the limit of resampling it), ``sum_i s_(i) C(i-1, k-1)
    / C(n, k)``.
    """
    s = np.sort(np.asarray(scores, float))
    n = s.size
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    weights = np.array([math.comb(i, k - 1) for i in range(n)], float) / math.comb(n, k)
    return float(weights @ s)


def budget_curves(records: list[dict], experiment: str = EXPERIMENT) -> pd.DataFrame:
    """Return score against tuning budget from the recorded tuning candidates.

    Grinsztajn et al. 2022's view, on what the records hold: per (task, method) and k = 1..K, the
    mean over runs of the expected best inner-CV score after k configurations minus the best of
    all K, in score units.

    The records keep every candidate's inner-CV score but the test score of the refitted best
    only, so this is the search's own (inner-CV) score; with successive halving, the first round
    (all K candidates on the same subsample) is used.
    """
    cols = ["task", "method", "k", "regret", "runs"]
    acc: dict[tuple, list[list[float]]] = {}
    for r in records:
        if r.get("experiment") != experiment or r.get("status") != "ok":
            continue
        if (r.get("profile") or "full") != "full":
            continue
        cand = (r.get("tuning") or {}).get("candidates") or {}
        means, iters = cand.get("mean") or [], cand.get("iter") or [0] * len(cand.get("mean") or [])
        first = [m for m, i in zip(means, iters, strict=False) if i == 0 and m is not None]
        first = [m for m in first if np.isfinite(m)]
        if len(first) < 2:
            continue
        top = max(first)
        curve = [top - expected_best(first, k) for k in range(1, len(first) + 1)]
        method = method_choice(r.get("overrides")) or r["method"]
        acc.setdefault((r.get("task") or "classification", method), []).append(curve)
    out = []
    for (task, m), curves in sorted(acc.items()):
        kmax = min(len(c) for c in curves)
        for k in range(1, kmax + 1):
            out.append(
                {
                    "task": task,
                    "method": m,
                    "k": k,
                    "regret": float(np.mean([c[k - 1] for c in curves])),
                    "runs": len(curves),
                }
            )
    return pd.DataFrame(out, columns=cols)


# ----------------------------------------------------------------------------------- everything


def suite_plan(conf_dir: str | Path | None = None) -> dict:
    """Return the experiment's suites (their datasets as run), methods and seeds from its config."""
    from treebench.config import plan_values, search_dirs, sweep_plan
    from treebench.suites import load

    conf = load_yaml((Path(conf_dir or CONF_DIR) / "experiment" / f"{EXPERIMENT}.yaml").read_text())
    plan = sweep_plan(conf["hydra"]["sweeper"])
    suites = {s: load(s, search_dirs()).members for s in plan_values(plan, "suite")}
    return {
        "suites": suites,
        "methods": plan_values(plan, "method"),
        "seeds": [int(s) for s in plan_values(plan, "seed")],
    }


def evaluate(df: pd.DataFrame, records: list[dict], plan: dict, rope: float = ROPE) -> dict:
    """Every table of the page, per task.

    Rows, cells, the per-dataset tests, the across-dataset tests, the method summary, ensembles vs
    RF, the Pareto fronts and the budget curves.
    """
    rows = benchmark_rows(df)
    cell_df = cells(rows)
    vs = vs_reference(rows)
    tasks = {}
    for suite, members in plan["suites"].items():
        sub = cell_df[cell_df["dataset"].isin(members)]
        task = sub["task"].iloc[0] if len(sub) else None
        table, left_out = (
            score_table(sub, task, len(plan["seeds"])) if task else (pd.DataFrame(), [])
        )
        tasks[suite] = {
            "task": task,
            "planned": len(members),
            "covered": int(sub.loc[sub["n"] > 0, "dataset"].nunique()),
            "table": table,
            "left_out": left_out,
            "tests": across_datasets(table, rope),
        }
    ranks = {t["task"]: t["tests"]["ranks"] for t in tasks.values() if t["task"] and t["tests"]}
    summary = method_summary(rows, cell_df, vs, ranks, rope)
    for t in tasks.values():
        s = summary[summary["task"] == t["task"]]
        t["ensembles"] = ensembles_vs_rf(t["table"], s, rope) if len(t["table"]) else None
    fronts, freq = pareto(cell_df)
    return {
        "rows": rows,
        "cells": cell_df,
        "vs_reference": vs,
        "suites": tasks,
        "summary": summary,
        "fronts": fronts,
        "pareto": freq,
        "budget": budget_curves(records),
        "plan": plan,
        "rope": rope,
        "alpha": ALPHA,
    }


# -------------------------------------------------------------------------------------- the page


def _unit(task: str | None) -> tuple[float, int, str]:
    """(factor, decimals, unit) of a task's scores on the page: accuracy in points, R² as is."""
    return (100.0, 2, "points of accuracy") if task == "classification" else (1.0, 4, "R²")


def _num(v, digits: int = 2) -> str:
    if v is None or not np.isfinite(v):
        return ""
    text = f"{v:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"


def _p(v) -> str:
    return "" if v is None or not np.isfinite(v) else (f"{v:.3g}" if v >= 1e-4 else "<1e-4")


def _md(df: pd.DataFrame) -> str:
    """Return a table as Markdown, its cells as formatted here (no re-parsing of numbers)."""
    if df.empty:
        return "_(empty)_"
    return df.to_markdown(index=False, disable_numparse=True)


def _summary_display(s: pd.DataFrame, task: str) -> pd.DataFrame:
    f, dg, _ = _unit(task)
    s = s.sort_values(["mean_rank", "method"], na_position="last")
    same = s["measure"].notna()
    return pd.DataFrame(
        {
            "method": s["method"],
            "family": s["family"].map(lambda x: FAMILIES.get(x, x)),
            "N": s["N"],
            "mean rank": s["mean_rank"].map(lambda v: _num(v, 2)),
            "W/T/L vs same-size CART": [
                f"{w}/{t}/{lo}" if m else "no claim"
                for w, t, lo, m in zip(s[WIN], s[TIE], s[LOSS], same, strict=True)
            ],
            "P(better)/P(equiv.)/P(worse) vs CART": [
                f"{_num(a)}/{_num(b)}/{_num(c)}" if m and np.isfinite(a) else ""
                for a, b, c, m in zip(s["p_better"], s["p_equiv"], s["p_worse"], same, strict=True)
            ],
            "median Δ vs CART": [
                _num(v * f, dg) if m else "" for v, m in zip(s["median_diff"], same, strict=True)
            ],
            "size measure": s["measure"].fillna("—"),
            "mean size": s["size"].map(lambda v: _num(v, 1)),
            "split nodes (all trees)": s["n_splits"].map(lambda v: _num(v, 1)),
            "CPU h": s["cpu_hours"].map(lambda v: _num(v, 2)),
        }
    )


def _pairs_display(pairs: pd.DataFrame, task: str) -> pd.DataFrame:
    f, dg, _ = _unit(task)
    return pd.DataFrame(
        {
            "a": pairs["a"],
            "b": pairs["b"],
            "N": pairs["n"],
            "mean Δ (a − b)": pairs["mean_diff"].map(lambda v: _num(v * f, dg)),
            "r": pairs["r"].map(lambda v: _num(v, 2)),
            "Wilcoxon p": pairs["p"].map(_p),
            "Holm p": pairs["p_holm"].map(_p),
            "P(a better)": pairs["p_better"].map(_num),
            "P(equiv.)": pairs["p_equiv"].map(_num),
            "P(b better)": pairs["p_worse"].map(_num),
        }
    )


def _ensembles_display(e: pd.DataFrame, task: str) -> pd.DataFrame:
    f, dg, _ = _unit(task)
    return pd.DataFrame(
        {
            "ensemble": e["method"],
            "N": e["N"],
            "mean Δ vs RF": e["mean_diff"].map(lambda v: _num(v * f, dg)),
            "median Δ": e["median_diff"].map(lambda v: _num(v * f, dg)),
            "r": e["r"].map(lambda v: _num(v, 2)),
            "Wilcoxon p": e["p"].map(_p),
            "Holm p": e["p_holm"].map(_p),
            "P(better)/P(equiv.)/P(worse)": [
                f"{_num(a)}/{_num(b)}/{_num(c)}"
                for a, b, c in zip(e["p_better"], e["p_equiv"], e["p_worse"], strict=True)
            ],
            "split nodes (all trees)": e["n_splits"].map(lambda v: _num(v, 0)),
        }
    )


def _budget_display(b: pd.DataFrame, task: str) -> pd.DataFrame:
    f, dg, _ = _unit(task)
    if b.empty:
        return b
    wide = b.pivot(index="method", columns="k", values="regret") * f
    out = wide.map(lambda v: _num(v, dg))
    out.columns = [f"k={k}" for k in out.columns]
    runs = b.groupby("method")["runs"].first()
    out.insert(0, "runs", runs.loc[out.index].astype(int))
    return out.reset_index()


def _friedman_text(fr: dict, task: str) -> str:
    f = "∞ (every dataset ranks the methods alike)" if np.isinf(fr["F"]) else f"{fr['F']:.2f}"
    return (
        f"Friedman over N = {fr['n']} datasets, k = {fr['k']} methods: χ²_F = {fr['chi2']:.2f}"
        f" (p = {_p(fr['p_chi2'])}); Iman–Davenport F_F = {f} on ({fr['df1']}, {fr['df2']})"
        f" degrees of freedom, p = {_p(fr['p'])}."
    )


def _dataset_display(
    c: pd.DataFrame, v: pd.DataFrame, front: pd.DataFrame, task: str
) -> pd.DataFrame:
    f, dg, _ = _unit(task)
    c = c.merge(v[["method", "dataset", "p_holm", "outcome"]], on=["method", "dataset"], how="left")
    c = c.merge(front[["method", "dataset", "on_front"]], on=["method", "dataset"], how="left")
    c = c.sort_values(["score", "method"], ascending=[False, True], na_position="last")
    state = [
        ("failed" if fl else "skipped" if sk else "—") if n == 0 else ""
        for n, fl, sk in zip(c["n"], c["failed"], c["skipped"], strict=True)
    ]
    return pd.DataFrame(
        {
            "method": c["method"],
            "n": c["n"],
            "score": [
                s or f"{_num(m * f, dg)} ± {_num(sd * f, dg)}"
                for s, m, sd in zip(state, c["score"], c["score_sd"].fillna(0.0), strict=True)
            ],
            "same-size CART": c["ref_score"].map(lambda x: _num(x * f, dg)),
            "Δ": (c["score"] - c["ref_score"]).map(lambda x: _num(x * f, dg)),
            "Holm p": c["p_holm"].map(_p),
            "outcome": c["outcome"].fillna(""),
            "size": c["size"].map(lambda x: _num(x, 1)),
            "split nodes": c["n_splits"].map(lambda x: _num(x, 1)),
            "Pareto": c["on_front"].map(lambda x: "on front" if x is True else ""),
            "failed": c["failed"],
        }
    )


def _template(name: str):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown, not HTML  # noqa: S701
    )
    return env.get_template(name)


def benchmark_markdown(
    ev: dict, stamp: str, figures_dir: Path | None = None, figures_link: str = "benchmark"
) -> dict[str, str]:
    """docs/benchmark.md and its per-dataset page from :func:`evaluate`'s tables.

    Returns ``{"benchmark.md": text, "benchmark/datasets.md": text}``; with ``figures_dir`` the
    critical-difference diagrams are written there (``cd_<suite>.png``), linked under
    ``figures_link``.
    """
    plan = ev["plan"]
    suites = []
    for name, t in ev["suites"].items():
        task = t["task"]
        s = ev["summary"][ev["summary"]["task"] == task] if task else ev["summary"].iloc[0:0]
        tests = t["tests"]
        entry = {
            "name": name,
            "task": task,
            "planned": t["planned"],
            "covered": t["covered"],
            "ranked": len(t["table"]),
            "left_out_text": (
                f" (left out, a method short of a seed: {', '.join(t['left_out'])})"
                if t["left_out"]
                else ""
            ),
            "summary": _md(_summary_display(s, task)) if len(s) else "_(no records yet)_",
            "families": [],
            "unit": _unit(task)[2],
        }
        for fam, title in [*FAMILIES.items(), (UNASSIGNED, "unassigned")]:
            part = s[s["family"] == fam]
            if len(part):
                table = _summary_display(part, task).drop(columns="family")
                entry["families"].append({"title": title.capitalize(), "table": _md(table)})
        if tests:
            entry["friedman"] = _friedman_text(tests["friedman"], task)
            entry["pairs"] = _md(_pairs_display(tests["pairs"], task))
            entry["cd_link"] = f"{figures_link}/cd_{name}.png"
            if figures_dir is not None:
                nem = {
                    "ranks": tests["ranks"],
                    "p_values": st.pvalue_matrix(tests["pairs"]),
                    "alpha": ev["alpha"],
                    "k": len(tests["ranks"]),
                }
                st.cd_diagram(
                    nem,
                    Path(figures_dir) / f"cd_{name}",
                    title=f"{name}: mean ranks, N = {tests['friedman']['n']} datasets",
                    formats=(".png",),
                )
        e = t.get("ensembles")
        if e is not None and len(e):
            entry["ensembles"] = _md(_ensembles_display(e, task))
        pf = ev["pareto"][ev["pareto"]["task"] == task] if task else ev["pareto"].iloc[0:0]
        pf = pf.sort_values(["share", "method"], ascending=[False, True])
        entry["pareto"] = _md(
            pd.DataFrame(
                {
                    "method": pf["method"],
                    "on the front": pf["on_front"],
                    "N": pf["N"],
                    "share": pf["share"].map(lambda v: f"{v:.0%}"),
                }
            )
        )
        b = ev["budget"][ev["budget"]["task"] == task] if task else ev["budget"].iloc[0:0]
        entry["budget"] = _md(_budget_display(b, task)) if len(b) else "_(no tuned records)_"
        suites.append(entry)
    cells_df = ev["cells"]
    failed = cells_df[cells_df["failed"] > 0]
    reasons = ev["rows"][ev["rows"]["status"] == "failed"].groupby(["dataset", "method"])["reason"]
    failures = (
        _md(
            pd.DataFrame(
                {
                    "dataset": failed["dataset"],
                    "method": failed["method"],
                    "failed seeds": failed["failed"],
                    "reason (first)": [
                        str(reasons.get_group((d, m)).dropna().iloc[0])[:120]
                        if (d, m) in reasons.groups and reasons.get_group((d, m)).notna().any()
                        else ""
                        for d, m in zip(failed["dataset"], failed["method"], strict=True)
                    ],
                }
            )
        )
        if len(failed)
        else ""
    )
    main = _template("benchmark.md.j2").render(
        stamp=stamp,
        seeds=", ".join(map(str, plan["seeds"])),
        not_run=not_run(plan["methods"]),
        alpha=ev["alpha"],
        rope_text=f"{ev['rope'] * 100:g} point of accuracy ({ev['rope']:g} of R²)",
        suites=suites,
        datasets_link=f"{figures_link}/datasets.md",
        failures=failures,
    )
    datasets = []
    for (task, ds), c in cells_df.groupby(["task", "dataset"], sort=True):
        v = ev["vs_reference"][ev["vs_reference"]["dataset"] == ds]
        front = ev["fronts"][ev["fronts"]["dataset"] == ds]
        table = _dataset_display(c, v, front, task)
        datasets.append({"name": ds, "task": task, "table": _md(table)})
    per = _template("benchmark_datasets.md.j2").render(stamp=stamp, datasets=datasets)
    return {"benchmark.md": main, f"{figures_link}/datasets.md": per}


def not_run(methods: list[str]) -> str:
    """Return the registered methods the plan leaves out (the experiment file says why)."""
    from treebench.methods._catalog import method_names

    left = [m for m in method_names() if m not in methods]
    return (", ".join(f"`{m}`" for m in left) or "none") + " (the experiment file says why)"
