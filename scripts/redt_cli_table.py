"""Compact ReDT Table II/III summary from collected CLI results (``treebench collect``).

Per dataset: DT, RF and ReDT(RF) test accuracy and node counts (mean over the runs), next to the
paper, then the issue's acceptance counts: ReDT accuracy >= DT, ReDT nodes < DT, ReDT within 1.5 pp of
Table II. ReDT rows are split by teacher and ``pseudo_labels``.

    python scripts/redt_cli_table.py /tmp/out-redt/results/results.parquet [--experiment redt_table2_3_5]
"""

from __future__ import annotations

import argparse
import os
import sys

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redt_tables import PAPER_ACC, PAPER_NODES  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--experiment", default="redt_table2_3_5")
    args = ap.parse_args()
    df = pd.read_parquet(args.results)
    df = df[(df.experiment == args.experiment) & (df.status == "ok")].copy()
    df["nodes"] = df["n_splits"] + df["n_leaves"]
    df["acc"] = 100 * df["test_accuracy"]
    dt = df[df.method == "cart"].groupby("dataset")[["acc", "nodes"]].mean()
    rf = df[df.method == "rf"].groupby("dataset")["acc"].mean()
    redt = df[df.method == "redt"]
    order = [d for d in PAPER_ACC if d in set(df.dataset)]
    for (teacher, pseudo), g in redt.groupby(["param.teacher", "param.pseudo_labels"]):
        j = 0 if teacher == "rf" else 3
        m = g.groupby("dataset").agg(
            acc=("acc", "mean"),
            nodes=("nodes", "mean"),
            alpha=("info.alpha", "mean"),
            n=("acc", "size"),
        )
        print(f"ReDT teacher={teacher} pseudo_labels={pseudo}")
        print(
            f"{'dataset':10s} {'n':>2s} | {'DT acc':>6s} {'paper':>6s} | {f'{teacher} acc':>7s} {'paper':>6s} "
            f"| {'ReDT':>6s} {'paper':>6s} {'alpha':>5s} {'a*':>4s} | {'DT nod':>7s} {'paper':>6s} | "
            f"{'ReDT n':>7s} {'paper':>6s}"
        )
        acc_ge = nodes_lt = within = total = 0
        for d in order:
            if d not in m.index or d not in dt.index:
                continue
            pa, pn = PAPER_ACC[d], PAPER_NODES[d]
            r = m.loc[d]
            total += 1
            acc_ge += r.acc >= dt.loc[d, "acc"]
            nodes_lt += r.nodes < dt.loc[d, "nodes"]
            within += abs(r.acc - pa[2 + j]) <= 1.5
            t_acc = rf.get(d, float("nan")) if teacher == "rf" else float("nan")
            print(
                f"{d:10s} {int(r.n):2d} | {dt.loc[d, 'acc']:6.2f} {pa[0]:6.2f} | {t_acc:7.2f} "
                f"{pa[1 + j]:6.2f} | {r.acc:6.2f} {pa[2 + j]:6.2f} {r.alpha:5.2f} {pa[3 + j]:4.2f} | "
                f"{dt.loc[d, 'nodes']:7.0f} {pn[0]:6d} | {r.nodes:7.0f} {pn[2 if teacher == 'rf' else 4]:6d}"
            )
        print(
            f"ReDT acc >= DT on {acc_ge}/{total}; ReDT nodes < DT on {nodes_lt}/{total}; "
            f"ReDT within 1.5 pp of Table II on {within}/{total}\n"
        )


if __name__ == "__main__":
    main()
