"""ReDT Table IV on MNIST (mirror files read directly): DT vs ReDT with a DNN teacher (T = 4).

The teacher (``mlp`` = 784-256 hidden units, or ``lenet``) is trained on all 60000 training images
(the paper's "standard temperature-based method"), its soft labels are softmax(logits / T) on the
training images, and ReDT trees are grown for the given alphas. Prints accuracy and nodes of DT, the
teacher and every ReDT tree. One thread.

    python scripts/redt_mnist.py --teacher mlp --epochs 8 --alphas 0.2 0.5
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redt_data  # noqa: E402

from treebench.methods.redt import ReDTClassifier  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teacher", default="mlp", choices=["mlp", "lenet"])
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--alphas", nargs="+", type=float, default=[0.2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-dt", action="store_true")
    args = ap.parse_args()
    Xtr, ytr, Xte, yte = redt_data.load_mnist()
    Xtr, Xte = Xtr.astype(np.float32), Xte.astype(np.float32)
    with threadpool_limits(1):
        if not args.no_dt:
            t0 = time.perf_counter()
            dt = DecisionTreeClassifier(min_samples_split=6, random_state=args.seed).fit(Xtr, ytr)
            print(f"DT: acc {dt.score(Xte, yte):.4f} nodes {dt.tree_.node_count} "
                  f"rules {dt.get_n_leaves()} ({time.perf_counter() - t0:.0f}s)", flush=True)
        e = args.epochs
        tp = {"epochs": e, "milestones": [max(1, round(0.4 * e)), max(2, round(0.8 * e))]}
        est = ReDTClassifier(teacher=args.teacher, teacher_params=tp, n_jobs=1,
                             random_state=args.seed, verbose=0)
        est._check_params()
        t0 = time.perf_counter()
        teacher = est._make_teacher(args.seed)
        teacher.fit(Xtr, ytr)
        S = teacher.predict_proba(Xtr)
        print(f"{args.teacher} teacher ({e} epochs): test acc {teacher.score(Xte, yte):.4f}, train acc "
              f"{(S.argmax(1) == ytr).mean():.4f}, mean max soft prob {S.max(1).mean():.3f} "
              f"({time.perf_counter() - t0:.0f}s)", flush=True)
        for a in args.alphas:
            t0 = time.perf_counter()
            tree = est._grow(Xtr, ytr, S, a, 10)
            acc = (tree.predict_value(Xte).argmax(1) == yte).mean()
            print(f"ReDT({args.teacher}) alpha {a}: acc {acc:.4f} nodes {tree.node_count} "
                  f"rules {tree.n_leaves} ({time.perf_counter() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
