"""Statistical comparison of methods over datasets (Demšar 2006), with scipy and scikit-posthocs.

* :func:`friedman` — Friedman test (scipy) on a blocks × groups table (rows = datasets, columns =
  methods).
* :func:`nemenyi` — Nemenyi post-hoc p-values (scikit-posthocs), average ranks and the critical
  difference.
* :func:`wilcoxon` — Wilcoxon signed-rank test (scipy) on paired per-dataset scores.
* :func:`cd_diagram` — critical-difference diagram (scikit-posthocs) saved as PNG and PDF.
* :func:`corrected_ttest` — Nadeau & Bengio's (2003) corrected resampled t-test of paired scores
  from repeated random train/test splits (scipy's t distribution).
* :func:`iman_davenport` — Friedman's statistic from average ranks with the Iman–Davenport F
  correction (Demšar 2006, Sect. 3.2.2).
* :func:`holm` — Holm's step-down adjusted p-values (statsmodels).
* :func:`pairwise_wilcoxon` — every pair's Wilcoxon signed-rank test, Holm-adjusted, with the
  matched-pairs rank-biserial correlation as effect size.
* :func:`bayes_signed_rank` — Benavoli et al.'s Bayesian signed-rank test with a ROPE (baycomp).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps


def average_ranks(table: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Mean rank of each column over the rows (rank 1 = best; ties get the average rank)."""
    ranks = table.rank(axis=1, ascending=not higher_is_better, method="average")
    return ranks.mean(axis=0)


def friedman(table: pd.DataFrame) -> dict:
    """Friedman chi-square test over the columns of ``table`` (blocks in rows).

    Returns ``{statistic, p, n, k, test}``; ``n`` = number of blocks (datasets), ``k`` = groups.
    """
    table = table.dropna()
    if table.shape[1] < 3:
        raise ValueError(f"the Friedman test needs >= 3 groups, got {table.shape[1]}")
    if table.shape[0] < 2:
        raise ValueError(f"the Friedman test needs >= 2 blocks, got {table.shape[0]}")
    stat, p = sps.friedmanchisquare(*[table[c].to_numpy(float) for c in table.columns])
    return {
        "statistic": float(stat),
        "p": float(p),
        "n": int(table.shape[0]),
        "k": int(table.shape[1]),
        "test": "Friedman",
    }


def critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Return the Nemenyi critical difference q_α · sqrt(k(k+1)/(6N)).

    q_α is from the studentized range (scipy).
    """
    q = sps.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def nemenyi(table: pd.DataFrame, alpha: float = 0.05, higher_is_better: bool = True) -> dict:
    """Nemenyi post-hoc test after Friedman.

    Pairwise p-values, average ranks, critical difference.
    """
    import scikit_posthocs as sp

    table = table.dropna()
    data = table if higher_is_better else -table
    pvals = sp.posthoc_nemenyi_friedman(data.reset_index(drop=True))
    pvals.index = pvals.columns = list(table.columns)
    return {
        "p_values": pvals,
        "ranks": average_ranks(table, higher_is_better),
        "cd": critical_difference(table.shape[1], table.shape[0], alpha),
        "alpha": alpha,
        "n": int(table.shape[0]),
        "k": int(table.shape[1]),
        "test": "Nemenyi",
    }


def wilcoxon(x, y) -> dict:
    """Two-sided Wilcoxon signed-rank test of paired samples (e.g. per-dataset means)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.shape} vs {y.shape}")
    if np.allclose(x, y):
        return {"statistic": 0.0, "p": 1.0, "n": int(x.size), "test": "Wilcoxon signed-rank"}
    res = sps.wilcoxon(x, y)
    return {
        "statistic": float(res.statistic),
        "p": float(res.pvalue),
        "n": int(x.size),
        "test": "Wilcoxon signed-rank",
    }


def corrected_ttest(diff, n_train: int, n_test: int) -> dict:
    """Run the corrected resampled t-test (Nadeau & Bengio 2003) of paired differences ``diff``.

    The differences are of J random train/test splits (score − reference per split).

    The splits share training rows, so the variance of the mean difference is
    ``(1/J + n_test/n_train) · s²`` instead of ``s²/J``; ``t = mean / sqrt(that)`` with J − 1
    degrees of freedom, two-sided. Zero variance gives p = 0 for a non-zero mean, 1 for zero.

    Returns
    -------
    dict
        ``n`` (J), ``mean``, ``sd`` (ddof 1), ``t``, ``df``, ``p``, ``d`` (mean / sd, the
        standardised effect; NaN when sd = 0).
    """
    d = np.asarray(diff, float)
    d = d[~np.isnan(d)]
    j = int(d.size)
    out = {"n": j, "mean": float(d.mean()) if j else np.nan, "sd": np.nan, "t": np.nan}
    out.update({"df": j - 1, "p": np.nan, "d": np.nan})
    if j < 2:
        return out
    sd = float(d.std(ddof=1))
    out["sd"] = sd
    if sd == 0.0:
        out["p"] = 1.0 if out["mean"] == 0.0 else 0.0
        return out
    se = np.sqrt((1.0 / j + n_test / n_train) * sd**2)
    t = out["mean"] / se
    out.update({"t": float(t), "p": float(2 * sps.t.sf(abs(t), j - 1)), "d": out["mean"] / sd})
    return out


def iman_davenport(table: pd.DataFrame, higher_is_better: bool = True) -> dict:
    """Run the Friedman test over the columns of ``table`` with the Iman–Davenport correction.

    Datasets are in rows. As Demšar (2006) computes them: from the average ranks R_j (ties
    averaged), ``χ²_F = 12N/(k(k+1)) · (Σ R_j² − k(k+1)²/4)`` and
    ``F_F = (N−1)χ²_F / (N(k−1) − χ²_F)`` on (k−1, (k−1)(N−1)) degrees of freedom.

    Returns ``{chi2, p_chi2, F, p, df1, df2, n, k, ranks, test}`` (``p`` of F_F; ``ranks`` a
    Series, rank 1 = best); rows with a missing value are left out.
    """
    table = table.dropna()
    n, k = table.shape
    if k < 3 or n < 2:
        raise ValueError(f"the Friedman test needs >= 3 methods and >= 2 datasets, got {k} and {n}")
    ranks = average_ranks(table, higher_is_better)
    chi2 = 12.0 * n / (k * (k + 1)) * (float((ranks**2).sum()) - k * (k + 1) ** 2 / 4.0)
    df1, df2 = k - 1, (k - 1) * (n - 1)
    denom = n * (k - 1) - chi2
    f = (n - 1) * chi2 / denom if denom > 0 else np.inf
    return {
        "chi2": float(chi2),
        "p_chi2": float(sps.chi2.sf(chi2, k - 1)),
        "F": float(f),
        "p": float(sps.f.sf(f, df1, df2)) if np.isfinite(f) else 0.0,
        "df1": df1,
        "df2": df2,
        "n": int(n),
        "k": int(k),
        "ranks": ranks,
        "test": "Friedman (Iman-Davenport)",
    }


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (``statsmodels.stats.multitest.multipletests``).

    NaN entries stay NaN and do not count in the family.
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


def rank_biserial(x, y) -> float:
    """Matched-pairs rank-biserial correlation of x − y (Kerby 2014).

    (R+ − R−) / (R+ + R−) over the non-zero differences, in [−1, 1]; positive when x tends to be
    higher.
    """
    d = np.asarray(x, float) - np.asarray(y, float)
    d = d[d != 0]
    if not d.size:
        return 0.0
    r = sps.rankdata(np.abs(d))
    plus, minus = r[d > 0].sum(), r[d < 0].sum()
    return float((plus - minus) / (plus + minus))


def pairwise_wilcoxon(table: pd.DataFrame) -> pd.DataFrame:
    """Run a Wilcoxon signed-rank test of every pair of columns of ``table`` over its rows.

    The rows are datasets; the p-values are Holm-adjusted over all pairs.

    Returns one row per pair ``a, b, n, median_diff (a − b), r (rank-biserial), W, p, p_holm``.
    """
    cols = list(table.columns)
    out = []
    for i, a in enumerate(cols):
        for b in cols[i + 1 :]:
            pair = table[[a, b]].dropna()
            res = wilcoxon(pair[a], pair[b]) if len(pair) else {"statistic": np.nan, "p": np.nan}
            out.append(
                {
                    "a": a,
                    "b": b,
                    "n": len(pair),
                    "median_diff": float((pair[a] - pair[b]).median()) if len(pair) else np.nan,
                    "r": rank_biserial(pair[a], pair[b]) if len(pair) else np.nan,
                    "W": res["statistic"],
                    "p": res["p"],
                }
            )
    res = pd.DataFrame(out, columns=["a", "b", "n", "median_diff", "r", "W", "p"])
    res["p_holm"] = holm(res["p"].to_numpy(float))
    return res


def pvalue_matrix(pairs: pd.DataFrame, column: str = "p_holm") -> pd.DataFrame:
    """Return the symmetric method × method matrix of a :func:`pairwise_wilcoxon` p-value column.

    1 on the diagonal: the form scikit-posthocs' CD diagram reads.
    """
    names = list(dict.fromkeys([*pairs["a"], *pairs["b"]]))
    m = pd.DataFrame(1.0, index=names, columns=names)
    for a, b, p in pairs[["a", "b", column]].itertuples(index=False):
        m.loc[a, b] = m.loc[b, a] = 1.0 if np.isnan(p) else p
    return m


def bayes_signed_rank(x, y, rope: float, seed: int = 0, nsamples: int = 50000) -> dict:
    """Run the Bayesian signed-rank test (Benavoli et al. 2014/2017) of paired scores x and y.

    ``baycomp.SignedRankTest`` on per-dataset scores, with a region of practical equivalence
    ``rope`` (in score units).

    Returns ``{p_better, p_equiv, p_worse, n, rope}``: the posterior probabilities that x is
    better than y by more than ``rope``, within it, worse; Monte Carlo with ``nsamples`` draws
    seeded by ``seed`` (deterministic).
    """
    from baycomp import SignedRankTest

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    out = {"n": int(x.size), "rope": float(rope)}
    if x.size < 2:
        return {**out, "p_better": np.nan, "p_equiv": np.nan, "p_worse": np.nan}
    # baycomp's (p_left, p_rope, p_right): left = the first argument higher
    left, eq, right = SignedRankTest.probs(x, y, rope=rope, nsamples=nsamples, random_state=seed)
    return {**out, "p_better": float(left), "p_equiv": float(eq), "p_worse": float(right)}


class _StableLabel(str):
    """A group name whose hash does not change between processes.

    Scikit-posthocs draws the crossbars from sets of names, and a salted ``str`` hash would reorder
    them (and the PNG bytes) on every run.
    """

    def __hash__(self) -> int:
        import zlib

        return zlib.crc32(self.encode())


def cd_diagram(
    nem: dict, path_stem: str | Path, title: str = "", formats: tuple = (".png", ".pdf")
) -> list[Path]:
    """Draw the critical-difference diagram of a :func:`nemenyi` result.

    Write ``.png`` and ``.pdf``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scikit_posthocs as sp

    from treebench.report.figures import label_method, method_color

    fig, ax = plt.subplots(figsize=(7, 1.0 + 0.4 * nem["k"]))
    # each method in its colour of every figure
    ranks, pvals = nem["ranks"].copy(), nem["p_values"].copy()
    ranks.index = pd.Index([_StableLabel(g) for g in ranks.index], dtype=object)
    labels = pd.Index([_StableLabel(g) for g in pvals.columns], dtype=object)  # object: pandas
    pvals.index = pvals.columns = labels  # would turn str subclasses back into plain str
    colors = {g: method_color(label_method(str(g))) for g in ranks.index}
    sp.critical_difference_diagram(ranks, pvals, ax=ax, alpha=nem["alpha"], color_palette=colors)
    if title:
        import textwrap

        ax.set_title("\n".join(textwrap.wrap(title, 90)), fontsize=8)
    fig.tight_layout()
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in formats:
        meta = {"Software": None} if ext == ".png" else None
        fig.savefig(stem.with_suffix(ext), dpi=150, metadata=meta)
        out.append(stem.with_suffix(ext))
    plt.close(fig)
    return out


def caption(res: dict, metric: str, alpha: float | None = None) -> str:
    """One sentence naming the test, N, α and the result."""
    a = f", α = {alpha}" if alpha is not None else ""
    if res["test"] == "Friedman":
        return (
            f"Friedman test on {metric} over N = {res['n']} datasets, k = {res['k']} methods{a}: "
            f"χ² = {res['statistic']:.4g}, p = {res['p']:.3g}."
        )
    if res["test"] == "Nemenyi":
        return (
            f"Nemenyi post-hoc test (after Friedman) on {metric}, N = {res['n']} datasets, "
            f"k = {res['k']} methods, α = {res['alpha']}: critical difference {res['cd']:.3f} "
            "ranks."
        )
    return (
        f"Wilcoxon signed-rank test on {metric} over N = {res['n']} paired datasets{a}: "
        f"W = {res['statistic']:.4g}, p = {res['p']:.3g}."
    )
