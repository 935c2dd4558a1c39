"""Compact ReDT Table II/III summary from collected CLI results (``treebench collect``).

Per dataset: DT, the teacher and ReDT test accuracy, node counts and alpha* (means over the runs),
next to the paper, then the issue's acceptance counts: ReDT accuracy >= DT, ReDT nodes < DT, ReDT
within 1.5 pp of Table II, and the Wilcoxon signed-rank test of ReDT vs DT accuracy (per-dataset
means, as ``treebench check``; and per (dataset, seed) pair). ReDT rows are grouped by teacher, purity
rule, jackknife repetitions and alpha selection; DT and the teacher are averaged over the same
(dataset, seed) runs as the ReDT group.

    python scripts/redt_cli_table.py outputs/results/results.parquet [--experiment redt_table2_3_5]
"""

from __future__ import annotations

import argparse
import os
import sys

import pandas as pd
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redt_tables import PAPER_ACC, PAPER_NODES  # noqa: E402

GROUP = [
    "param.teacher",
    "param.pseudo_labels",
    "param.n_repeats",
    "param.alpha_selection",
    "param.cv_soft_labels",
]


def _wilcoxon(a, b):
    if len(a) < 2 or (a == b).all():
        return float("nan"), float("nan")
    r = stats.wilcoxon(a, b)
    return float(r.statistic), float(r.pvalue)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--experiment", default="redt_table2_3_5")
    args = ap.parse_args()
    df = pd.read_parquet(args.results)
    df = df[(df.experiment == args.experiment) & (df.status == "ok")].copy()
    df["nodes"] = df["n_splits"] + df["n_leaves"]
    df["acc"] = 100 * df["test_accuracy"]
    for c in GROUP:
        if c not in df:
            df[c] = None
    key = ["dataset", "seed"]
    dt_runs = df[df.method == "cart"].groupby(key)[["acc", "nodes"]].mean()
    redt = df[df.method == "redt"]
    order = [d for d in PAPER_ACC if d in set(df.dataset)]
    for gkey, g in redt.groupby(GROUP, dropna=False):
        teacher = gkey[0]
        j = 0 if teacher == "rf" else 3
        t_runs = df[df.method == teacher].groupby(key)["acc"].mean()
        runs = g.groupby(key).agg(
            acc=("acc", "mean"), nodes=("nodes", "mean"), alpha=("info.alpha", "mean")
        )
        runs = runs.join(dt_runs.add_suffix("_dt"), how="inner").join(t_runs.rename("t_acc"))
        if runs.empty:
            continue
        runs["win"] = (runs.acc >= runs.acc_dt).astype(int)
        m = runs.groupby("dataset").agg(
            acc=("acc", "mean"),
            nodes=("nodes", "mean"),
            alpha=("alpha", "mean"),
            acc_dt=("acc_dt", "mean"),
            nodes_dt=("nodes_dt", "mean"),
            t_acc=("t_acc", "mean"),
            n=("acc", "size"),
            wins=("win", "sum"),
        )
        print(
            "ReDT " + " ".join(f"{c.split('.')[-1]}={v}" for c, v in zip(GROUP, gkey, strict=True))
        )
        print(
            f"{'dataset':10s} {'n':>2s} | {'DT acc':>6s} {'paper':>6s} | {f'{teacher} acc':>9s} "
            f"{'paper':>6s} | {'ReDT':>6s} {'paper':>6s} {'d(DT)':>6s} {'>=DT':>4s} {'alpha':>5s} "
            f"{'a*':>4s} | {'DT nod':>7s} {'paper':>6s} | {'ReDT n':>7s} {'paper':>6s}"
        )
        acc_ge = nodes_lt = within = total = 0
        for d in order:
            if d not in m.index:
                continue
            pa, pn = PAPER_ACC[d], PAPER_NODES[d]
            r = m.loc[d]
            total += 1
            acc_ge += r.acc >= r.acc_dt
            nodes_lt += r.nodes < r.nodes_dt
            within += abs(r.acc - pa[2 + j]) <= 1.5
            print(
                f"{d:10s} {int(r.n):2d} | {r.acc_dt:6.2f} {pa[0]:6.2f} | {r.t_acc:9.2f} "
                f"{pa[1 + j]:6.2f} | {r.acc:6.2f} {pa[2 + j]:6.2f} {r.acc - r.acc_dt:+6.2f} "
                f"{int(r.wins):2d}/{int(r.n)} {r.alpha:5.2f} {pa[3 + j]:4.2f} | {r.nodes_dt:7.0f} "
                f"{pn[0]:6d} | {r.nodes:7.0f} {pn[2 if teacher == 'rf' else 4]:6d}"
            )
        s1, p1 = _wilcoxon(m.acc.to_numpy(), m.acc_dt.to_numpy())
        s2, p2 = _wilcoxon(runs.acc.to_numpy(), runs.acc_dt.to_numpy())
        print(
            f"ReDT acc >= DT on {acc_ge}/{total}; ReDT nodes < DT on {nodes_lt}/{total}; "
            f"ReDT within 1.5 pp of Table II on {within}/{total}\n"
            f"Wilcoxon ReDT vs DT accuracy: per-dataset means N={total} stat {s1:.4g} p={p1:.4g}; "
            f"per run N={len(runs)} stat {s2:.4g} p={p2:.4g} (ReDT >= DT in "
            f"{int((runs.acc >= runs.acc_dt).sum())}/{len(runs)} runs)\n"
        )


if __name__ == "__main__":
    main()
