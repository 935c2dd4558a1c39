"""Statistical comparison of methods over datasets (Demšar 2006), with scipy and scikit-posthocs.

* :func:`friedman` — Friedman test (scipy) on a blocks × groups table (rows = datasets, columns = methods).
* :func:`nemenyi` — Nemenyi post-hoc p-values (scikit-posthocs), average ranks and the critical difference.
* :func:`wilcoxon` — Wilcoxon signed-rank test (scipy) on paired per-dataset scores.
* :func:`cd_diagram` — critical-difference diagram (scikit-posthocs) saved as PNG and PDF.
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
    """Nemenyi critical difference q_α · sqrt(k(k+1)/(6N)), q_α from the studentized range (scipy)."""
    q = sps.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def nemenyi(table: pd.DataFrame, alpha: float = 0.05, higher_is_better: bool = True) -> dict:
    """Nemenyi post-hoc test after Friedman: pairwise p-values, average ranks, critical difference."""
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


class _StableLabel(str):
    """A group name whose hash does not change between processes: scikit-posthocs draws the
    crossbars from sets of names, and a salted ``str`` hash would reorder them (and the PNG bytes)
    on every run."""

    def __hash__(self) -> int:
        import zlib

        return zlib.crc32(self.encode())


def cd_diagram(
    nem: dict, path_stem: str | Path, title: str = "", formats: tuple = (".png", ".pdf")
) -> list[Path]:
    """Draw the critical-difference diagram of a :func:`nemenyi` result; write ``.png`` and ``.pdf``."""
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
            f"k = {res['k']} methods, α = {res['alpha']}: critical difference {res['cd']:.3f} ranks."
        )
    return (
        f"Wilcoxon signed-rank test on {metric} over N = {res['n']} paired datasets{a}: "
        f"W = {res['statistic']:.4g}, p = {res['p']:.3g}."
    )
