"""The head-to-head report, docs/headtohead.md: every method at one tuning budget vs same-size CART.

Made from the records of experiment ``headtohead`` only
(``treebench/conf/experiment/headtohead.yaml``): coverage, a per-dataset table and accuracy-vs-size
Pareto plot, critical-difference diagrams, wins/ties/losses against the size-matched reference each
record carries (``reference``, fitted by :func:`treebench.runner.fit_reference`), and
tuned-vs-defaults counts wherever the same (method, dataset, seed) was run with and without
``tune=``. Methods and datasets come from the records and the experiment's sweep plan, none from
this code.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report import stats as st
from treebench.report.figures import _mpl, method_color
from treebench.report.paper import to_markdown
from treebench.report.select import add_derived, exact_mean

EXPERIMENT = "headtohead"
#: significance level of the paired test behind win/tie/loss
ALPHA = 0.05
#: config groups whose overrides change what a run key holds (``method.params.x=``, ``split=``);
#: choosing a method, dataset or tune budget (``method=``, ...) is the sweep's own
_CONFIG_ROOTS = ("method", "dataset", "tune", "split", "metrics", "reference")
_SWEPT = ("method", "dataset", "tune")
#: an untuned record's ``tune`` label
UNTUNED = "none"
WIN, TIE, LOSS, UNTESTED = "win", "tie", "loss", "untested"
_TOL = 1e-12
#: the head-to-head's bound on a tuned method's loss to same-size CART, in points
MAX_LOSS = 2.0


# --------------------------------------------------------------------------------------- the rows


def _side_config(overrides) -> bool:
    """Return True when a record's overrides change its configuration beyond the sweep's choices.

    Such as ``method.params.x=`` or ``split=kfold5``; ``threads=`` and the like do not.
    """
    if not isinstance(overrides, list | tuple | np.ndarray):
        return False
    for o in overrides:
        key = str(o).split("=", 1)[0].lstrip("+~")
        root = key.replace("/", ".").split(".", 1)[0]
        if root in _CONFIG_ROOTS and not (key == root and root in _SWEPT):
            return True
    return False


def score_rows(df: pd.DataFrame, experiment: str = EXPERIMENT) -> pd.DataFrame:
    """Return the experiment's records as one row per run with the columns this report reads.

    Returns
    -------
    DataFrame
        ``method, dataset, task, seed, profile, tune, status, reason, score, ref_score, n_leaves,
        ref_leaves, fit_seconds, tuning_seconds, shared`` (score = test accuracy for
        classification, test R² for regression; ``ref_*`` of the record's same-size reference;
        ``shared``: a row copied into profile ``full`` by :func:`_shared_with_full`). Records whose
        overrides change the configuration (another configuration of a method) are left out.
    """
    cols = [
        "method",
        "dataset",
        "task",
        "seed",
        "profile",
        "tune",
        "status",
        "reason",
        "score",
        "ref_score",
        "n_leaves",
        "ref_leaves",
        "fit_seconds",
        "tuning_seconds",
        "shared",
    ]
    if df.empty or "experiment" not in df.columns:
        return pd.DataFrame(columns=cols)
    rows = df[df["experiment"] == experiment]
    if "overrides" in rows.columns:
        rows = rows[~rows["overrides"].map(_side_config)]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    rows = add_derived(rows)

    def col(name):
        return rows[name] if name in rows.columns else pd.Series(np.nan, index=rows.index)

    out = pd.DataFrame(
        {
            "method": rows["method"],
            "dataset": rows["dataset"],
            "task": col("task").fillna("classification"),
            "seed": pd.to_numeric(rows["seed"]).astype(int),
            # the profile a run was made under; a full plan's copy is added below
            "profile": col("ran_profile").astype(object).fillna(col("profile")).fillna("full"),
            "tune": col("tune").fillna(UNTUNED),
            "status": rows["status"],
            "reason": col("reason"),
            "score": pd.to_numeric(col("test_score"), errors="coerce"),
            "ref_score": pd.to_numeric(col("reference.test_score"), errors="coerce"),
            "n_leaves": pd.to_numeric(col("n_leaves"), errors="coerce"),
            "ref_leaves": pd.to_numeric(col("reference.n_leaves"), errors="coerce"),
            "fit_seconds": pd.to_numeric(col("fit_seconds"), errors="coerce"),
            "tuning_seconds": pd.to_numeric(col("tuning.seconds"), errors="coerce"),
        }
    )
    out["shared"] = False
    out = pd.concat([out, _shared_with_full(rows, out)], ignore_index=True)
    return out.sort_values(["profile", "tune", "dataset", "method", "seed"]).reset_index(drop=True)


def _shared_with_full(rows: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """Return copies, labelled profile ``full``, of the other profiles' rows in the full plan too.

    The rows that are jobs of the full plan too: those a full sweep found done
    (``ran_profile``, from the record's ``full_plan_of``) and those whose method parameters equal
    those of the method's ``full`` records (the same job, the same run key, which a full sweep will
    find done and skip).
    """
    pcols = [c for c in rows.columns if c.startswith("param.")]

    def signature(r):
        return json.dumps(
            {c: r[c] for c in pcols if not (r[c] is None or r[c] != r[c])},
            sort_keys=True,
            default=str,
        )

    sig = pd.Series([signature(r) for r in rows[pcols].to_dict("records")], index=rows.index)
    key = out["method"] + "\x1f" + sig.loc[out.index]
    full = set(key[out["profile"] == "full"])
    labelled = (
        rows["ran_profile"].loc[out.index].notna()
        if "ran_profile" in rows.columns
        else pd.Series(False, index=out.index)
    )
    shared = (out["profile"] != "full") & (key.isin(full) | labelled)
    return out[shared].assign(profile="full", shared=True)


def headline_setting(rows: pd.DataFrame) -> tuple[str, str] | None:
    """Return the (profile, tune) the main sections show.

    Full profile before reduced, tuned before untuned, then the one with most ok records (ties by
    name); None without ok records.
    """
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        return None
    counts = ok.groupby(["profile", "tune"]).size()
    best = sorted(
        counts.items(), key=lambda kv: (kv[0][0] != "full", kv[0][1] == UNTUNED, -kv[1], kv[0])
    )
    return best[0][0]


def experiment_plan(conf_dir: str | Path | None, experiment: str, profile: str) -> dict | None:
    """Return the methods, datasets and seeds the experiment's sweep runs under ``profile``.

    From its config file's ``hydra.sweeper``; None when there is no such file.
    """
    from treebench.config import load_yaml, plan_values, sweep_plan

    path = Path(conf_dir) / "experiment" / f"{experiment}.yaml" if conf_dir else None
    if path is None or not path.exists():
        return None
    cfg = load_yaml(path.read_text()) or {}
    plan = sweep_plan((cfg.get("hydra") or {}).get("sweeper") or {}, profile)
    return {
        "methods": plan_values(plan, "method"),
        "datasets": plan_values(plan, "dataset"),
        "seeds": [int(s) for s in plan_values(plan, "seed")],
    }


# ------------------------------------------------------------------------------ paired comparison


def paired_outcome(score, ref, alpha: float = ALPHA) -> dict:
    """Win, tie or loss of a method against its reference from paired per-seed scores.

    Win/loss when a two-sided paired t-test (``scipy.stats.ttest_rel``) gives p < ``alpha``, by the
    sign of the mean difference; else tie. Identical differences (zero variance) are a win or
    loss by their sign, a tie when zero. Fewer than two pairs are ``untested``.

    Returns
    -------
    dict
        ``n`` pairs, ``mean`` and ``sd`` of score − reference, ``p`` (NaN when not computed) and
        ``outcome`` (:data:`WIN`, :data:`TIE`, :data:`LOSS` or :data:`UNTESTED`).
    """
    from scipy import stats as sps

    a, b = np.asarray(score, float), np.asarray(ref, float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    d = a - b
    n = int(d.size)
    out = {
        "n": n,
        "mean": float(d.mean()) if n else math.nan,
        "sd": float(d.std(ddof=1)) if n > 1 else math.nan,
        "p": math.nan,
    }
    if n < 2:
        return {**out, "outcome": UNTESTED}
    if np.ptp(d) <= _TOL:
        sign = 0 if abs(out["mean"]) <= _TOL else np.sign(out["mean"])
    else:
        out["p"] = float(sps.ttest_rel(a, b).pvalue)
        sign = np.sign(out["mean"]) if out["p"] < alpha else 0
    return {**out, "outcome": {1: WIN, 0: TIE, -1: LOSS}[int(sign)]}


def outcomes(rows: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """:func:`paired_outcome` per (method, dataset) over the ok rows given (one setting)."""
    ok = rows[rows["status"] == "ok"]
    out = []
    for (m, ds), g in ok.groupby(["method", "dataset"], sort=True):
        res = paired_outcome(g["score"], g["ref_score"], alpha)
        out.append({"method": m, "dataset": ds, "task": g["task"].iloc[0], **res})
    cols = ["method", "dataset", "task", "n", "mean", "sd", "p", "outcome"]
    return pd.DataFrame(out, columns=cols)


def wtl_counts(res: pd.DataFrame) -> pd.DataFrame:
    """Wins, ties, losses (and untested cells) per method from :func:`outcomes`."""
    cols = ["method", WIN, TIE, LOSS, UNTESTED, "datasets"]
    if res.empty:
        return pd.DataFrame(columns=cols)
    t = pd.crosstab(res["method"], res["outcome"])
    for c in (WIN, TIE, LOSS, UNTESTED):
        if c not in t.columns:
            t[c] = 0
    t["datasets"] = t[[WIN, TIE, LOSS, UNTESTED]].sum(axis=1)
    return t[[WIN, TIE, LOSS, UNTESTED, "datasets"]].reset_index().rename_axis(None, axis=1)[cols]


def tuned_vs_defaults(
    rows: pd.DataFrame, alpha: float = ALPHA
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each method's outcome against same-size CART untuned and tuned, on the same seeds.

    For every profile and tuned budget, a (method, dataset) enters when some seed has an ok record
    both with ``tune=none`` and with that budget; both outcomes use exactly those seeds.

    Returns
    -------
    (summary, detail)
        ``detail``: one row per (profile, tune, method, dataset) with the seeds, mean ± SD of
        score − reference and the outcome of each setting. ``summary``: per (profile, tune,
        method), the datasets compared, the number where the method beats or ties same-size CART
        untuned and tuned, and the largest mean loss (in points: percentage points of accuracy,
        100 × R²) with the dataset it is on.
    """
    ok = rows[(rows["status"] == "ok") & rows["score"].notna() & rows["ref_score"].notna()]
    if "shared" in ok.columns:  # compared where they ran, not again as the full profile's copies
        ok = ok[~ok["shared"].astype(bool)]
    detail = []
    for prof in sorted(ok["profile"].unique()):
        p = ok[ok["profile"] == prof]
        base = p[p["tune"] == UNTUNED]
        for tune in sorted(t for t in p["tune"].unique() if t != UNTUNED):
            tuned = p[p["tune"] == tune]
            key = ["method", "dataset", "seed"]
            pairs = base.drop_duplicates(key).merge(
                tuned.drop_duplicates(key), on=key, suffixes=("_d", "_t")
            )
            for (m, ds), g in pairs.groupby(["method", "dataset"], sort=True):
                d = paired_outcome(g["score_d"], g["ref_score_d"], alpha)
                t = paired_outcome(g["score_t"], g["ref_score_t"], alpha)
                detail.append(
                    {
                        "profile": prof,
                        "tune": tune,
                        "method": m,
                        "dataset": ds,
                        "seeds": ",".join(map(str, sorted(g["seed"]))),
                        "n": d["n"],
                        "Δ untuned": d["mean"],
                        "sd untuned": d["sd"],
                        "p untuned": d["p"],
                        "untuned": d["outcome"],
                        "Δ tuned": t["mean"],
                        "sd tuned": t["sd"],
                        "p tuned": t["p"],
                        "tuned": t["outcome"],
                    }
                )
    dcols = ["profile", "tune", "method", "dataset", "seeds", "n"]
    dcols += [f"{k} {s}" for s in ("untuned", "tuned") for k in ("Δ", "sd", "p")] + [
        "untuned",
        "tuned",
    ]
    detail = pd.DataFrame(detail, columns=list(dict.fromkeys(dcols)))
    summary = []
    for (prof, tune, m), g in detail.groupby(["profile", "tune", "method"], sort=True):
        n = sorted(set(g["n"]))
        row = {
            "profile": prof,
            "tune": tune,
            "method": m,
            "datasets": len(g),
            "seeds each": str(n[0]) if len(n) == 1 else f"{n[0]}–{n[-1]}",
        }
        for s in ("untuned", "tuned"):
            row[f"beats or ties, {s}"] = int(g[s].isin([WIN, TIE]).sum())
        for s in ("untuned", "tuned"):
            worst = g.loc[g[f"Δ {s}"].idxmin()]
            row[f"largest loss {s} (pts)"] = max(0.0, -100 * worst[f"Δ {s}"])
            row[f"on ({s})"] = worst["dataset"] if worst[f"Δ {s}"] < 0 else ""
        row["tuned ≥ untuned"] = row["beats or ties, tuned"] >= row["beats or ties, untuned"]
        row[f"tuned loss ≤ {MAX_LOSS:g} pts"] = row["largest loss tuned (pts)"] <= MAX_LOSS
        summary.append(row)
    return pd.DataFrame(summary), detail


# ----------------------------------------------------------------------------------- aggregation


def _pm(mean: float, sd: float, scale: float = 1.0, digits: int = 2) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return ""
    s = f"{scale * mean:.{digits}f}"
    return s if sd is None or math.isnan(sd) else f"{s} ± {scale * sd:.{digits}f}"


def _g(v: float) -> str:
    return "" if v is None or math.isnan(v) else f"{v:.3g}"


def _scale(task: str) -> tuple[float, int, str]:
    """(factor, decimals, name) of a task's score in tables: accuracy in %, R² as is."""
    return (100.0, 2, "accuracy (%)") if task == "classification" else (1.0, 4, "R²")


def pareto_front(x, y) -> np.ndarray:
    """Return the mask of the points no other point dominates.

    A point dominates with fewer or equal leaves and a higher or equal score, one of them
    strictly; a point without both values is on no front.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    front = np.isfinite(x) & np.isfinite(y)
    for i in np.flatnonzero(front):
        dom = (x <= x[i]) & (y >= y[i]) & ((x < x[i]) | (y > y[i]))
        front[i] = not dom.any()
    return front


def cell_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (method, dataset) over the ok rows: seeds, mean and SD of score and the other columns."""
    ok = rows[rows["status"] == "ok"]
    g = ok.groupby(["dataset", "method"], sort=True)
    out = pd.DataFrame(
        {
            "task": g["task"].first(),
            "n": g["seed"].nunique(),
            "score": g["score"].mean(),
            "score_sd": g["score"].std(ddof=1),
            "ref_score": g["ref_score"].mean(),
            "ref_score_sd": g["ref_score"].std(ddof=1),
            "n_leaves": g["n_leaves"].mean(),
            "ref_leaves": g["ref_leaves"].mean(),
            "fit_seconds": g["fit_seconds"].mean(),
            "tuning_seconds": g["tuning_seconds"].mean(),
        }
    )
    return out.reset_index()


def seeds_label(n: int, expected: int) -> str:
    """Return a cell's seeds: ``5`` when complete, ``3 of 5 seeds`` when not."""
    return str(n) if n >= expected else f"{n} of {expected} seeds"


def coverage(rows: pd.DataFrame, plan: dict) -> tuple[pd.DataFrame, list[str]]:
    """Return the records per method × dataset and the missing cells.

    Returns
    -------
    (table, missing)
        ``table``: rows = methods, columns = datasets; a cell is the number of seeds with an ok
        record (``3 of 5 seeds`` when incomplete), ``n/a`` when the method skipped the dataset
        (wrong task), ``—`` when nothing is recorded. ``missing``: one line per incomplete cell
        naming its missing seeds.
    """
    seeds = plan["seeds"]
    datasets = list(dict.fromkeys([*plan["datasets"], *sorted(rows["dataset"].unique())]))
    methods = list(dict.fromkeys([*plan["methods"], *sorted(rows["method"].unique())]))
    table, missing = [], []
    for m in methods:
        line = {"method": m}
        for ds in datasets:
            cell = rows[(rows["method"] == m) & (rows["dataset"] == ds)]
            have = sorted(set(cell.loc[cell["status"] == "ok", "seed"]))
            if not have and (cell["status"] == "skipped").any():
                line[ds] = "n/a"
                continue
            line[ds] = seeds_label(len(have), len(seeds)) if have else "—"
            lack = [s for s in seeds if s not in have]
            if lack:
                missing.append(
                    f"{m} on {ds}: seed{'s' if len(lack) > 1 else ''} {', '.join(map(str, lack))}"
                )
        table.append(line)
    return pd.DataFrame(table, columns=["method", *datasets]), missing


# ---------------------------------------------------------------------------------------- figures


def pareto_figure(cells: pd.DataFrame, dataset: str, task: str, path: Path) -> Path:
    """Draw score against leaves (log) of one dataset into ``path``.

    One point per method (its fixed colour, ±1 SD), its same-size CART as a cross of the same
    colour, the Pareto front as a dashed step line.
    """
    plt = _mpl()
    scale, _, name = _scale(task)
    c = cells.sort_values("method")
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    for _, r in c.iterrows():
        col = method_color(r["method"])
        ax.errorbar(
            r["n_leaves"],
            scale * r["score"],
            yerr=0 if math.isnan(r["score_sd"]) else scale * r["score_sd"],
            fmt="o",
            ms=5,
            capsize=2,
            color=col,
            label=r["method"],
        )
        if not math.isnan(r["ref_score"]):
            ax.scatter(r["ref_leaves"], scale * r["ref_score"], marker="x", s=22, color=col, lw=1)
    front = c[pareto_front(c["n_leaves"], c["score"])].sort_values("n_leaves")
    if len(front):
        ax.step(
            front["n_leaves"],
            scale * front["score"],
            where="post",
            color="k",
            ls="--",
            lw=0.9,
            label="Pareto front",
        )
        ax.scatter(
            front["n_leaves"],
            scale * front["score"],
            s=110,
            facecolors="none",
            edgecolors="k",
            lw=0.9,
        )
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    # minor ticks labelled at 2x and 5x a power of ten only, so that labels do not run together
    sparse = FuncFormatter(
        lambda v, _: (
            f"{v:g}" if v > 0 and round(v / 10 ** math.floor(math.log10(v))) in (2, 5) else ""
        )
    )
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(sparse)
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("leaves (all trees; mean over seeds)")
    ax.set_ylabel(f"test {name}")
    ax.set_title(f"{dataset}: mean ± SD over seeds; × = the method's same-size CART", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def cd_blocks(cells: pd.DataFrame, expected: int) -> tuple[pd.DataFrame, list[str]]:
    """Return the datasets × methods table of mean scores a critical-difference diagram ranks.

    Only complete cells (all expected seeds) count. Datasets enter where every method is
    complete; while that leaves fewer than two datasets and more than three methods, the method
    complete on the fewest datasets (then by name) is left out.

    Returns
    -------
    (table, left_out)
        The score table (rows = datasets) and the methods left out.
    """
    full = cells[cells["n"] >= expected]
    table = full.pivot(index="dataset", columns="method", values="score")
    table = table.reindex(columns=sorted(cells["method"].unique()))
    left_out: list[str] = []
    while table.shape[1] > 3 and table.dropna().shape[0] < 2:
        worst = sorted(table.columns, key=lambda m: (table[m].notna().sum(), m))[0]
        left_out.append(worst)
        table = table.drop(columns=[worst])
    return table.dropna(), left_out


def cd_blocks_common(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str], dict[str, int]]:
    """Return a provisional :func:`cd_blocks` while cells are incomplete.

    Per dataset, the mean score over the seeds every method of the table has there (paired seeds; a
    dataset whose methods share none is left out), with the same leave-out rule.

    Returns
    -------
    (table, left_out, seeds)
        The score table, the methods left out and, per dataset in the table, the seeds it uses.
    """
    ok = rows[(rows["status"] == "ok") & rows["score"].notna()]
    methods = sorted(ok["method"].unique())
    left_out: list[str] = []
    while True:
        cur = ok[ok["method"].isin(methods)]
        table, seeds = {}, {}
        for ds, g in cur.groupby("dataset", sort=True):
            per = g.groupby("method")["seed"].apply(set)
            if len(per) < len(methods):
                continue
            common = set.intersection(*per)
            if common:
                sel = g[g["seed"].isin(common)]
                table[ds] = sel.groupby("method")["score"].agg(exact_mean)
                seeds[ds] = len(common)
        t = pd.DataFrame(table).T.reindex(columns=methods)
        if len(methods) <= 3 or len(t) >= 2:
            return t.dropna(), left_out, seeds
        have = {m: ok[ok["method"] == m]["dataset"].nunique() for m in methods}
        worst = sorted(methods, key=lambda m: (have[m], m))[0]
        left_out.append(worst)
        methods = [m for m in methods if m != worst]


# --------------------------------------------------------------------------------------- the page


def _not_run(experiment: str, plan: dict | None) -> list[str]:
    size = (
        f" ({len(plan['methods'])} methods × {len(plan['datasets'])} datasets × "
        f"{len(plan['seeds'])} seeds)"
        if plan
        else ""
    )
    return [
        "**Not run yet.** The records it is made from hold no run of experiment "
        f"`{experiment}`{size}. "
        "Its sections (coverage, per-dataset tables and Pareto plots, critical-difference "
        "diagrams, "
        "wins/ties/losses against same-size CART, tuned vs defaults) appear once they do:\n",
        "```bash\n"
        f"treebench run experiment={experiment}                                 # tune=small, full "
        "plan\n"
        f"treebench run -m experiment={experiment} profile=reduced tune=none,small  # tuned vs "
        "defaults\n"
        "treebench ledger add\n"
        "treebench report --headtohead\n"
        "```\n",
    ]


def _dataset_table(cells: pd.DataFrame, res: pd.DataFrame, expected: int) -> pd.DataFrame:
    task = cells["task"].iloc[0]
    scale, digits, name = _scale(task)
    front = pareto_front(cells["n_leaves"], cells["score"])
    c = cells.assign(front=front).merge(
        res, on=["method", "dataset"], how="left", suffixes=("", "_r")
    )
    c = c.sort_values(["score", "method"], ascending=[False, True])
    out = pd.DataFrame(
        {
            "method": c["method"],
            "seeds": [seeds_label(n, expected) for n in c["n"]],
            f"test {name}": [
                _pm(a, b, scale, digits) for a, b in zip(c["score"], c["score_sd"], strict=True)
            ],
            "leaves": [_g(v) for v in c["n_leaves"]],
            "fit s": [_g(v) for v in c["fit_seconds"]],
            "tuning s": [_g(v) for v in c["tuning_seconds"]],
            "Pareto": ["•" if f else "" for f in c["front"]],
            f"same-size CART {name}": [
                _pm(a, b, scale, digits)
                for a, b in zip(c["ref_score"], c["ref_score_sd"], strict=True)
            ],
            "Δ (pts)": [_pm(a, b, 100.0, 2) for a, b in zip(c["mean"], c["sd"], strict=True)],
            "p": [_g(v) for v in c["p"]],
            "vs same-size CART": c["outcome"].fillna(UNTESTED),
        }
    )
    return out


def headtohead_markdown(
    df: pd.DataFrame,
    conf_dir: str | Path | None = None,
    experiment: str = EXPERIMENT,
    stamp: str = "the given records",
    figures_dir: str | Path | None = None,
    figures_link: str = "headtohead",
    alpha: float = ALPHA,
) -> str:
    """``docs/headtohead.md``: the head-to-head report of ``experiment`` from the records in ``df``.

    Deterministic for its inputs (no clock): ``stamp`` names the records it was made from. With
    ``figures_dir``, the Pareto plots and critical-difference diagrams are written there as PNGs
    (the folder is the report's own: old PNGs are removed) and linked as
    ``figures_link/<name>.png``.

    Parameters
    ----------
    df : DataFrame
        The results table (:func:`treebench.results.collect`); only ``experiment``'s rows are read.
    conf_dir : path, optional
        The config root, for the experiment's sweep plan (the methods, datasets and seeds a
        complete run has). Without it, the plan is what the records hold.
    """
    fig_dir = Path(figures_dir) if figures_dir is not None else None
    if fig_dir is not None:
        for old in fig_dir.glob("*.png"):
            old.unlink()
    rows = score_rows(df, experiment)
    setting = headline_setting(rows)
    md = [
        "# Head-to-head: every method tuned at one budget, beside same-size CART\n",
        f"Generated by `treebench report --headtohead` from {stamp} and "
        f"`treebench/conf/experiment/{experiment}.yaml`. Regenerate after adding runs to the "
        "ledger; do not edit by hand.\n",
        "The benchmark no paper ran: the papers' methods and the baselines, each tuned "
        "on its training part at the same budget (`tune=small`: successive halving over 8 "
        "candidates, 3-fold inner CV; [docs/tuning.md](tuning.md)), on one split protocol (a fresh "
        "80/20 holdout per seed). Beside every model the runner fits **same-size CART**: CART "
        "grown "
        "best-first to the model's number of leaves on the same fold (`reference` in the record). "
        "Scores: test accuracy for classification, test R² for regression. Leaves count all trees "
        "of an ensemble.\n",
    ]
    profile, tune = setting if setting else ("full", UNTUNED)
    plan = experiment_plan(conf_dir, experiment, profile)
    if setting is None:
        md += _not_run(experiment, plan)
        if plan:
            md.append(
                f"Plan: methods {', '.join(plan['methods'])}; datasets "
                f"{', '.join(plan['datasets'])}; "
                f"seeds {', '.join(map(str, plan['seeds']))}.\n"
            )
        return "\n".join(md)
    # a skipped record (the method cannot do the task) is stopped before tuning: any budget's
    main = rows[(rows["profile"] == profile) & ((rows["tune"] == tune) | (rows["status"] != "ok"))]
    if plan is None:
        plan = {
            "methods": sorted(main["method"].unique()),
            "datasets": sorted(main["dataset"].unique()),
            "seeds": sorted(main["seed"].unique()),
        }
    main = main[main["seed"].isin(plan["seeds"])]
    expected = len(plan["seeds"])
    others = rows[rows["status"] == "ok"].groupby(["profile", "tune"]).size()
    md.append(
        f"Main sections: profile `{profile}`, tune `{tune}` "
        f"({int((main['status'] == 'ok').sum())} ok records). Chosen as the "
        "full profile before reduced, tuned before untuned, then the most records; other settings "
        "with ok records: "
        + (
            ", ".join(
                f"`{p}` / `{t}` ({n})" for (p, t), n in others.items() if (p, t) != (profile, tune)
            )
            or "none"
        )
        + ".\n"
    )
    # coverage
    cov, missing = coverage(main, plan)
    n_ok = int((main["status"] == "ok").sum())
    n_na = int((cov.iloc[:, 1:] == "n/a").to_numpy().sum())
    md += [
        "## Coverage\n",
        f"Plan (profile `{profile}`): {len(plan['methods'])} methods × {len(plan['datasets'])} "
        f"datasets × seeds {', '.join(map(str, plan['seeds']))}. {n_ok} ok records. A cell gives "
        f"the seeds with a record; an incomplete one reads `k of {expected} seeds` and its means "
        "below are over those seeds only, labelled so; `n/a` = the method cannot do the dataset's "
        f"task (skipped record; {n_na} cells); `—` = nothing recorded. A run of another profile "
        "whose method parameters are this profile's (the same job, found done by this profile's "
        "sweep) counts here too.\n",
        to_markdown(cov),
    ]
    if missing:
        md.append(
            f"<details><summary>Missing: {len(missing)} cells</summary>\n\n"
            + "\n".join(f"- {m}" for m in missing)
            + "\n</details>\n"
        )
    else:
        md.append("Nothing missing.\n")
    cells = cell_means(main)
    res = outcomes(main, alpha)
    # per dataset
    md += [
        "## Per dataset\n",
        "Per method, mean ± SD over its seeds: test score; leaves; fit seconds (the refit of the "
        "chosen configuration, one thread); tuning seconds (the whole search); • = on the Pareto "
        "front (no method has fewer or equal leaves and a higher or equal score); same-size CART's "
        "score; Δ = method − same-size CART in points (percentage points of accuracy, 100 × R²), "
        "mean ± SD over paired seeds; p and the outcome of the paired test (rule under *Wins, ties "
        "and losses*).\n",
    ]
    for ds in [d for d in cov.columns[1:] if d in set(cells["dataset"])]:
        c = cells[cells["dataset"] == ds]
        md.append(f"### {ds} ({c['task'].iloc[0]})\n")
        md.append(to_markdown(_dataset_table(c, res, expected)))
        if fig_dir is not None:
            p = pareto_figure(c, ds, c["task"].iloc[0], fig_dir / f"pareto_{ds}.png")
            md.append(f"![{ds}: test score vs leaves, Pareto front]({figures_link}/{p.name})\n")
    # critical difference
    md += [
        "## Critical-difference diagrams\n",
        "Methods ranked per dataset by mean test score (accuracy for classification, R² for "
        "regression; rank 1 = best), one diagram per task, since several methods do "
        f"classification only. Only complete cells enter (all {expected} seeds): a dataset "
        "enters when every method of the diagram is complete on it; while that leaves fewer than "
        "two datasets, the method complete on the fewest is left out. Friedman test, then "
        f"Nemenyi post-hoc at α = {alpha} (Demšar 2006).\n",
    ]
    for task in sorted(cells["task"].unique()):
        table, left = cd_blocks(cells[cells["task"] == task], expected)
        md.append(f"### {task}\n")
        tag = ""
        if table.shape[1] < 3 or table.shape[0] < 2:
            md.append(
                f"Not computed over complete cells: needs >= 3 methods complete on >= 2 datasets "
                f"(have {table.shape[1]} methods × {table.shape[0]} datasets).\n"
            )
            table, left, seeds = cd_blocks_common(main[main["task"] == task])
            if table.shape[1] < 3 or table.shape[0] < 2:
                continue
            used = sorted({seeds[d] for d in table.index})
            span = str(used[0]) if len(used) == 1 else f"{used[0]}-{used[-1]}"
            tag = f"provisional, {span} of {expected} seeds"
            md.append(
                f"**Provisional ranking** ({span} of {expected} seeds per dataset): until the "
                "cells "
                "are complete, each "
                "dataset's mean over the seeds every method below has there (paired seeds); it "
                "will move as seeds land.\n"
            )
        if left:
            md.append(f"Left out (too few datasets): {', '.join(left)}.\n")
        fr = st.friedman(table)
        nem = st.nemenyi(table, alpha)
        md.append(
            f"Datasets ({len(table)}): {', '.join(table.index)}. "
            f"{st.caption(fr, 'test score', alpha)} "
            f"{st.caption(nem, 'test score')}\n"
        )
        ranks = nem["ranks"].round(3).rename("mean rank").to_frame().reset_index(names="method")
        ranks = ranks.sort_values(["mean rank", "method"])
        md.append(to_markdown(ranks))
        if fig_dir is not None:
            files = st.cd_diagram(
                nem,
                fig_dir / f"cd_{task}",
                formats=(".png",),
                title=(
                    f"{task}, test score{f' ({tag})' if tag else ''}: Friedman p = {fr['p']:.3g}; "
                    f"Nemenyi, N = {nem['n']} datasets, k = {nem['k']}, α = {alpha}, "
                    f"CD = {nem['cd']:.2f}"
                ),
            )
            md.append(f"![critical-difference diagram, {task}]({figures_link}/{files[0].name})\n")
    # wins / ties / losses
    counts = wtl_counts(res)
    md += [
        "## Wins, ties and losses against same-size CART\n",
        "Per method and dataset, the paired per-seed differences method − same-size CART (the "
        f"record's `reference`, same fold, same leaves). **Win or loss when a two-sided paired "
        f"t-test (`scipy.stats.ttest_rel`) gives p < {alpha}, by the sign of the mean difference; "
        "else tie.** Identical differences (zero variance) are a win or loss by their sign, a tie "
        "when zero; fewer than two paired seeds are *untested* and not counted. Incomplete cells "
        "use the seeds they have (see *Coverage*).\n",
        to_markdown(counts),
    ]
    if len(res):
        grid = res.assign(
            cell=[
                f"{o} ({_pm(m, math.nan, 100.0, 1)}, {n})"
                for o, m, n in zip(res["outcome"], res["mean"], res["n"], strict=True)
            ]
        ).pivot(index="method", columns="dataset", values="cell")
        grid = grid.reindex(columns=[d for d in cov.columns[1:] if d in grid.columns]).fillna("")
        md.append(
            "Per dataset (outcome (mean Δ in points, seeds)):\n\n" + to_markdown(grid.reset_index())
        )
    # tuned vs defaults
    summary, detail = tuned_vs_defaults(rows, alpha)
    md += [
        "## Tuned vs defaults\n",
        "Wherever the same (method, dataset, seed) has a record without tuning (`tune=none`, the "
        "method's defaults) and with a tuning budget, in the same profile: per method, the "
        "datasets where it beats or ties same-size CART (win or tie, rule above) untuned and "
        "tuned, both over exactly the seeds both have; and its largest loss to same-size CART "
        "(mean Δ over those seeds, in points; 0 = no loss) and where. The check: tuned "
        "beats-or-ties on at least as many datasets as untuned (`tuned ≥ untuned`), and no loss "
        f"over {MAX_LOSS:g} points tuned (`tuned loss ≤ {MAX_LOSS:g} pts`; the head-to-head asks "
        "it of "
        "E2EDT).\n",
    ]
    if summary.empty:
        md.append(
            "No (method, dataset, seed) has records both with and without tuning yet "
            f"(`treebench run -m experiment={experiment} profile=reduced tune=none,small`).\n"
        )
    else:
        show = summary.copy()
        for s in ("untuned", "tuned"):
            show[f"largest loss {s} (pts)"] = show[f"largest loss {s} (pts)"].map(
                lambda v: f"{v:.2f}"
            )
        for c in ("tuned ≥ untuned", f"tuned loss ≤ {MAX_LOSS:g} pts"):
            show[c] = show[c].map({True: "yes", False: "no"})
        md.append(to_markdown(show))
        d = detail.copy()
        for s in ("untuned", "tuned"):
            d[f"Δ {s} (pts)"] = [
                _pm(a, b, 100.0, 2) for a, b in zip(d[f"Δ {s}"], d[f"sd {s}"], strict=True)
            ]
            d[f"p {s}"] = d[f"p {s}"].map(_g)
        d = d[
            [
                "profile",
                "tune",
                "method",
                "dataset",
                "seeds",
                "Δ untuned (pts)",
                "p untuned",
                "untuned",
                "Δ tuned (pts)",
                "p tuned",
                "tuned",
            ]
        ]
        md.append(
            "Per dataset (Δ = method − same-size CART, mean ± SD over the seeds listed):\n\n"
            + to_markdown(d)
        )
    return "\n".join(md)
