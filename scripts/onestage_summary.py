"""Summarise onestage_bench.py JSON lines: per-dataset means, wins vs a reference, average ranks.

Usage: python scripts/onestage_summary.py FILE.jsonl [FILE.jsonl ...] [--ref cart] [--depth 6]
Rows are grouped by (dataset, method spec, depth); only seeds present for every method of a dataset
are compared. Prints the mean test score per dataset and method, the mean train score, the count of
datasets where each method beats --ref, the average rank (1 = best; ties share ranks) and, when scipy
has it, the Friedman statistic over the methods.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
from scipy import stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--ref", default="cart")
    ap.add_argument("--depth", type=int, default=None)
    a = ap.parse_args()
    rows = [json.loads(ln) for f in a.files for ln in open(f) if ln.strip()]
    if a.depth is not None:
        rows = [r for r in rows if r["depth"] == a.depth]
    by = defaultdict(dict)
    for r in rows:
        by[(r["dataset"], r["method"])][r["seed"]] = r
    datasets = sorted({d for d, _ in by}, key=lambda d: [r["dataset"] for r in rows].index(d))
    methods = sorted({m for _, m in by}, key=lambda m: [r["method"] for r in rows].index(m))
    table = {}
    print(f"{'dataset':14s} " + " ".join(f"{m[:22]:>22s}" for m in methods))
    for d in datasets:
        ms = [m for m in methods if (d, m) in by]
        if len(ms) < len(methods):
            continue
        seeds = set.intersection(*(set(by[(d, m)]) for m in ms))
        table[d] = {
            m: (
                np.mean([by[(d, m)][s]["test"] for s in seeds]),
                np.mean([by[(d, m)][s]["train"] for s in seeds]),
                np.mean(
                    [by[(d, m)][s].get("info", {}).get("internal_kept", np.nan) for s in seeds]
                ),
            )
            for m in ms
        }
        print(
            f"{d:14s} "
            + " ".join(f"{table[d][m][0]:7.2f} (tr {table[d][m][1]:6.2f})" + " " * 5 for m in ms)
            + f" seeds={len(seeds)}"
        )
    if not table:
        return
    M = np.array([[table[d][m][0] for m in methods] for d in table])
    ranks = np.array([stats.rankdata(-row) for row in M])
    print(
        "average rank: "
        + ", ".join(f"{m}={r:.2f}" for m, r in zip(methods, ranks.mean(0), strict=True))
    )
    refs = [m for m in methods if m.split(":")[0] == a.ref]
    if refs:
        j = methods.index(refs[0])
        for i, m in enumerate(methods):
            if i != j:
                w = int((M[:, i] > M[:, j]).sum())
                print(
                    f"{m} beats {refs[0]} on {w}/{len(M)} datasets (test); mean diff "
                    f"{np.mean(M[:, i] - M[:, j]):+.2f}"
                )
    if len(methods) >= 3 and len(M) >= 2:
        print("Friedman:", stats.friedmanchisquare(*M.T))
    for m in methods:
        kept = [table[d][m][2] for d in table]
        if not np.all(np.isnan(kept)):
            print(f"{m}: mean internal nodes kept {np.nanmean(kept):.1f}")


if __name__ == "__main__":
    main()
