"""Acceptance measurements for E2EDT / E2EDF on mirror files (before the data branch lands).

  python scripts/run_e2edt_acceptance.py tree   --dataset letter --depth 8 --epochs 20
  python scripts/run_e2edt_acceptance.py fig2   --dataset mnist --depths 2 4 6 --epochs 20
  python scripts/run_e2edt_acceptance.py cnn    --epochs 20 [--n-train 60000]
  python scripts/run_e2edt_acceptance.py forest --dataset letter [--trees 70] [--epochs 45]
                                                [--dgamma 0.1] [--rf]

Every run uses 1 torch thread and prints one line per result (accuracy as a fraction).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from e2edt_data import LOADERS  # noqa: E402

from treebench.methods.e2edt import E2EDFClassifier, E2EDTClassifier  # noqa: E402

FOREST = {  # the sNDF settings used by the reference's forest CLI
    "letter": dict(n_estimators=70, max_features=8, epochs=45),
    "usps": dict(n_estimators=100, patch_size=10, image_shape=(16, 16), epochs=45),
    "mnist": dict(n_estimators=80, patch_size=15, image_shape=(28, 28), epochs=15),
}


def acc(est, X, y, **kw):
    return float((est.predict(X, **kw) == y).mean())


def load(name, n_train=None):
    Xtr, ytr, Xte, yte = LOADERS[name]()
    if n_train:
        idx = np.random.default_rng(0).permutation(len(Xtr))[:n_train]
        Xtr, ytr = Xtr[idx], ytr[idx]
    return Xtr, ytr, Xte, yte


def cmd_tree(a):
    Xtr, ytr, Xte, yte = load(a.dataset, a.n_train)
    t = time.time()
    e = E2EDTClassifier(
        max_depth=a.depth,
        epochs=a.epochs,
        steepness_inc=a.dgamma,
        n_jobs=1,
        random_state=a.seed,
        keep_greedy=True,
        verbose=a.verbose,
    ).fit(Xtr, ytr)
    print(
        f"[tree] {a.dataset} depth {a.depth} epochs {a.epochs} dgamma {a.dgamma}: fit "
        f"{time.time() - t:.1f} s, {e.fit_info_}"
    )
    print(
        f"[tree] greedy   train {float((e.greedy_predict(Xtr) == ytr).mean()):.4f} "
        f"test {float((e.greedy_predict(Xte) == yte).mean()):.4f}"
    )
    for mode in ("deterministic", "root_hard", "probabilistic"):
        print(
            f"[tree] finetune {mode:13s} train {acc(e, Xtr, ytr, inference=mode):.4f} "
            f"test {acc(e, Xte, yte, inference=mode):.4f}"
        )
    print(f"[tree] size {e.size_report(Xte)}")


def cmd_fig2(a):
    from sklearn.tree import DecisionTreeClassifier

    Xtr, ytr, Xte, yte = load(a.dataset, a.n_train)
    for d in a.depths:
        t = time.time()
        e = E2EDTClassifier(
            max_depth=d, epochs=a.epochs, n_jobs=1, random_state=a.seed, keep_greedy=True
        ).fit(Xtr, ytr)
        cart = DecisionTreeClassifier(max_depth=d, criterion="entropy", random_state=a.seed)
        cart.fit(Xtr, ytr)
        print(
            f"[fig2] {a.dataset} depth {d:2d} epochs {a.epochs}: "
            f"greedy train {float((e.greedy_predict(Xtr) == ytr).mean()):.4f} "
            f"test {float((e.greedy_predict(Xte) == yte).mean()):.4f} | "
            f"finetune train {acc(e, Xtr, ytr):.4f} test {acc(e, Xte, yte):.4f} "
            f"(root_hard test {acc(e, Xte, yte, inference='root_hard'):.4f}) | "
            f"CART train {cart.score(Xtr, ytr):.4f} test {cart.score(Xte, yte):.4f} | "
            f"{e.struct_.n_leaves} leaves, {time.time() - t:.0f} s",
            flush=True,
        )


def cmd_cnn(a):
    Xtr, ytr, Xte, yte = load("mnist", a.n_train)
    t = time.time()
    e = E2EDTClassifier(
        max_depth=None,
        max_leaves=10,
        split_features="cnn",
        image_shape=(28, 28),
        epochs=a.epochs,
        finetune_epochs=a.finetune_epochs,
        steepness_inc=a.dgamma,
        batch_size=a.batch_size or 1000,
        n_jobs=1,
        random_state=a.seed,
        keep_greedy=True,
        verbose=a.verbose,
    ).fit(Xtr, ytr)
    print(
        f"[cnn] MNIST n_train {len(Xtr)} best-first 10 leaves, epochs {a.epochs}, batch "
        f"{a.batch_size or 1000}, dgamma {a.dgamma}: fit {time.time() - t:.0f} s, "
        f"{e.fit_info_}"
    )
    print(
        f"[cnn] leaves {e.struct_.n_leaves}, greedy test "
        f"{float((e.greedy_predict(Xte) == yte).mean()):.4f}"
    )
    for mode in ("deterministic", "root_hard", "probabilistic"):
        print(f"[cnn] finetune {mode:13s} test {acc(e, Xte, yte, inference=mode):.4f}")
    print(f"[cnn] size {e.size_report(Xte)}, train leaf sizes {np.bincount(e.apply(Xtr)[:, 0])}")


def cmd_forest(a):
    Xtr, ytr, Xte, yte = load(a.dataset, a.n_train)
    kw = dict(FOREST[a.dataset])
    if a.trees:
        kw["n_estimators"] = a.trees
    if a.epochs:
        kw["epochs"] = a.epochs
    t = time.time()
    f = E2EDFClassifier(
        max_depth=10,
        steepness_inc=a.dgamma,
        n_jobs=1,
        random_state=a.seed,
        finetune_epochs=a.finetune_epochs,
        verbose=a.verbose,
        **kw,
    ).fit(Xtr, ytr)
    rep = f.size_report(Xte)
    print(f"[forest] {a.dataset} {kw} dgamma {a.dgamma}: fit {time.time() - t:.0f} s {f.fit_info_}")
    print(
        f"[forest] E2EDF test {acc(f, Xte, yte):.4f} (root_hard {acc(f, Xte, yte, inference='root_hard'):.4f}) "
        f"splits/tree {rep['n_splits'] / rep['n_trees']:.1f} split_evals/sample {rep['split_evals']:.1f}"
    )
    if a.rf:
        from sklearn.ensemble import RandomForestClassifier

        rf = RandomForestClassifier(100, max_depth=10, random_state=a.seed, n_jobs=1).fit(Xtr, ytr)
        print(f"[forest] RF(100, depth 10) test {rf.score(Xte, yte):.4f}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("tree", "fig2", "cnn", "forest"):
        p = sub.add_parser(name)
        p.add_argument("--dataset", default="letter")
        p.add_argument("--epochs", type=int, default=None if name == "forest" else 20)
        p.add_argument("--finetune-epochs", type=int, default=None)
        p.add_argument("--dgamma", type=float, default=0.1)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--n-train", type=int, default=None)
        p.add_argument("--verbose", action="store_true")
        p.add_argument("--depth", type=int, default=8)
        p.add_argument("--depths", type=int, nargs="+", default=[2, 4, 6, 8])
        p.add_argument("--trees", type=int, default=None)
        p.add_argument("--rf", action="store_true")
        p.add_argument("--batch-size", type=int, default=None)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    {"tree": cmd_tree, "fig2": cmd_fig2, "cnn": cmd_cnn, "forest": cmd_forest}[a.cmd](a)


if __name__ == "__main__":
    main()
