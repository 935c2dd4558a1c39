"""ReDT Table IV on MNIST (mirror files read directly): DT vs ReDT with a DNN teacher (T = 4).

The teacher (``mlp`` = 784-256 hidden units, or ``lenet``) is trained on all 60000 training images
(the paper's "standard temperature-based method"), its soft labels are softmax(logits / T) on the
training images, and ReDT trees are grown for the given alphas. Prints accuracy and nodes of DT, the
teacher and every ReDT tree. One thread.

    python scripts/redt_mnist.py --teacher mlp --epochs 8 --alphas 0.2 0.5

``--n-train N`` uses a random N-image subset of the training set (test set whole); ``--pseudo soft
soft_or_hard`` grows every alpha under each purity rule; ``--soft-cache DIR`` keeps the teacher's soft
labels (and its test accuracy) so another call skips training. The teacher's disagreement with the
labels on its own training images is printed: with the paper's rule (Eq. 4) every disagreeing image
inside an otherwise pure region forces more splits.
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
    ap.add_argument("--n-train", type=int, default=None, help="random training subset size")
    ap.add_argument("--pseudo", nargs="+", default=["soft"], help="ReDT pseudo_labels rules")
    ap.add_argument("--soft-cache", default=None, help="directory for the teacher's soft labels")
    ap.add_argument(
        "--soft-source",
        default="full",
        choices=["full", "jackknife"],
        help="full = teacher trained on all training images (paper); jackknife = 1x5 out-of-fold",
    )
    args = ap.parse_args()
    Xtr, ytr, Xte, yte = redt_data.load_mnist()
    Xtr, Xte = Xtr.astype(np.float32), Xte.astype(np.float32)
    if args.n_train:
        sub = np.sort(np.random.RandomState(args.seed).permutation(len(ytr))[: args.n_train])
        Xtr, ytr = Xtr[sub], ytr[sub]
    print(f"MNIST train {Xtr.shape} test {Xte.shape}", flush=True)
    with threadpool_limits(1):
        if not args.no_dt:
            t0 = time.perf_counter()
            dt = DecisionTreeClassifier(min_samples_split=6, random_state=args.seed).fit(Xtr, ytr)
            print(
                f"DT: acc {dt.score(Xte, yte):.4f} nodes {dt.tree_.node_count} "
                f"rules {dt.get_n_leaves()} ({time.perf_counter() - t0:.0f}s)",
                flush=True,
            )
        e = args.epochs
        tp = {"epochs": e, "milestones": [max(1, round(0.4 * e)), max(2, round(0.8 * e))]}
        est = ReDTClassifier(
            teacher=args.teacher, teacher_params=tp, n_jobs=1, random_state=args.seed, verbose=0
        )
        est._check_params()
        t0 = time.perf_counter()
        cache = None
        if args.soft_cache:
            os.makedirs(args.soft_cache, exist_ok=True)
            cache = os.path.join(
                args.soft_cache,
                f"mnist_{args.teacher}_e{e}_n{args.n_train}_s{args.seed}_{args.soft_source}.npz",
            )
        if cache and os.path.exists(cache):
            z = np.load(cache)
            S, test_acc = z["S"], float(z["test_acc"])
        elif (
            args.soft_source == "jackknife"
        ):  # Alg. 1 on the DNN too: 1 x 5 out-of-fold soft labels
            est.set_params(dnn_soft_labels="jackknife", n_repeats=1, n_folds=5)
            S = est.soft_labels(Xtr, ytr, 10, np.random.RandomState(args.seed))
            test_acc = float("nan")  # five teachers, none scored on the test set
            if cache:
                np.savez(cache, S=S, test_acc=test_acc)
        else:
            teacher = est._make_teacher(args.seed)
            teacher.fit(Xtr, ytr)
            S, test_acc = teacher.predict_proba(Xtr), float(teacher.score(Xte, yte))
            if cache:
                np.savez(cache, S=S, test_acc=test_acc)
        print(
            f"{args.teacher} teacher ({e} epochs): test acc {test_acc:.4f}, train acc "
            f"{(S.argmax(1) == ytr).mean():.4f} (= pseudo-labels agreeing with labels), mean max "
            f"soft prob {S.max(1).mean():.3f} ({time.perf_counter() - t0:.0f}s)",
            flush=True,
        )
        for pseudo in args.pseudo:
            est.pseudo_labels = pseudo
            for a in args.alphas:
                t0 = time.perf_counter()
                tree = est._grow(Xtr, ytr, S, a, 10)
                acc = (tree.predict_value(Xte).argmax(1) == yte).mean()
                print(
                    f"ReDT({args.teacher}, {pseudo}) alpha {a}: acc {acc:.4f} nodes "
                    f"{tree.node_count} rules {tree.n_leaves} ({time.perf_counter() - t0:.0f}s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
