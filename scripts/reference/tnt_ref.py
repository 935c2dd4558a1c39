"""TnT: treebench's TnTClassifier vs the authors' TreeInTree.TnT (fit time, #splits, accuracy).

For every dataset, seed and C (= ccp_alpha) both implementations fit with the same N1, N2, C and
random_state; prints #splits, #leaves, train/test accuracy, wall and CPU seconds of ``fit``, the
speed ratio, the test-prediction agreement and the accuracy difference. ``--cart`` adds best-first
CART (``max_leaf_nodes``) at the #splits of our graph and at ``--cart-splits``.

Data (``treebench.api.load_fold``): letter = UCI file order 16000/4000, mnist = raw 0-255 pixels
60000/10000 (``--n-train`` keeps the first n training images), usps = ESL zip.train/zip.test, digits
= the bundled set with the runner's split. ``--split holdout`` pools train and test and draws a
seeded 33 % test part (scikit-learn ``train_test_split``), the protocol of docs/methods/tnt.md.
``--compat`` makes treebench use the reference's weight scale and care-set order (tie-breaking only;
then the graphs are identical on digits).

Typical: letter C = 1.2e-4 (~1.3k splits), mnist C = 1e-4 with ``--n-train 10000``.
"""

from __future__ import annotations

import numpy as np
from _common import fold, ratio, timed, use_reference

REPOSITORY = "github.com/BingzhaoZhu/TnTDecisionGraph"


def add_arguments(p):
    """Add this comparison's options to the ``compare.py tnt`` parser ``p``."""
    p.add_argument("--dataset", nargs="+", default=["letter"], help="letter, mnist, usps, digits")
    p.add_argument("--C", type=float, nargs="+", default=[1.2e-4], help="ccp_alpha values")
    p.add_argument("--N1", type=int, default=2)
    p.add_argument("--N2", type=int, default=5)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--n-train", type=int, default=None, help="first n training samples only")
    p.add_argument("--split", choices=["given", "holdout"], default="given")
    p.add_argument("--cart", action="store_true", help="also best-first CART at the same #splits")
    p.add_argument("--cart-splits", type=int, nargs="*", default=[], help="more CART sizes")
    p.add_argument("--compat", action="store_true", help="reference tie-breaking in treebench")


def load(name, seed, split, n_train):
    """Return ``(Xtr, ytr, Xte, yte)`` of ``name`` for ``seed``, labels as class indices.

    ``split="holdout"`` splits the pooled rows 67/33; ``n_train`` keeps the first training rows.
    """
    Xtr, ytr, Xte, yte = fold(name, seed)
    if split == "holdout":
        from sklearn.model_selection import train_test_split

        X, y = np.r_[Xtr, Xte], np.r_[ytr, yte]
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.33, random_state=seed)
    if n_train:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    classes = np.unique(ytr)
    f = np.float64
    return (
        Xtr.astype(f),
        np.searchsorted(classes, ytr),
        Xte.astype(f),
        np.searchsorted(classes, yte),
    )


def fit_ours(a, data, C, seed):
    """Fit treebench's TnT on ``data`` and return its times, size and accuracies."""
    from treebench.api import make_estimator

    Xtr, ytr, Xte, yte = data
    m = make_estimator(
        "tnt",
        params={"ccp_alpha": C, "N1": a.N1, "N2": a.N2, "target_splits": None, "n_jobs": 1},
        random_state=seed,
    )
    if a.compat:
        m._reference_compat = True  # debug aid of TnTClassifier, not a hyperparameter
    with timed() as t:
        m.fit(Xtr, ytr)
    r = dict(splits=m.n_splits_, leaves=m.n_leaves_, wall=t.wall, cpu=t.cpu)
    r.update(train=m.score(Xtr, ytr), test=m.score(Xte, yte), pred=m.predict(Xte))
    return r


def fit_ref(a, data, C, seed):
    """Fit the reference TnT on ``data`` and return its times, size and accuracies."""
    from TreeInTree import TnT  # the reference implementation, from the --ref checkout

    Xtr, ytr, Xte, yte = data
    ref = TnT(N1=a.N1, N2=a.N2, ccp_alpha=C, random_state=seed)
    with timed() as t:
        ref.fit(Xtr, ytr)
    n_int, n_leaf = ref.check_complexity()
    pred = np.asarray(ref.predict(Xte)).ravel()
    train = float((np.asarray(ref.predict(Xtr)).ravel() == ytr).mean())
    r = dict(splits=n_int, leaves=n_leaf, wall=t.wall, cpu=t.cpu)
    r.update(train=train, test=float((pred == yte).mean()), pred=pred)
    return r


def cart(data, n_splits, seed):
    """Fit CART with at most ``n_splits`` splits; return its splits, train and test accuracy."""
    from sklearn.tree import DecisionTreeClassifier

    Xtr, ytr, Xte, yte = data
    m = DecisionTreeClassifier(max_leaf_nodes=n_splits + 1, random_state=seed).fit(Xtr, ytr)
    return m.tree_.node_count // 2, m.score(Xtr, ytr), m.score(Xte, yte)


def line(name, r):
    """Return one printed result line of implementation ``name``."""
    return (
        f"  {name:10s} fit {r['wall']:8.2f} s wall, {r['cpu']:8.2f} s CPU | #S {r['splits']:5d} "
        f"leaves {r['leaves']:5d} | train {r['train']:.4f} test {r['test']:.4f}"
    )


def suite(ref, dataset="letter", C=5e-4, seed=0):
    """Return the fits of ``compare.py all``.

    Implementation -> callable returning one fit's numbers.
    """
    from argparse import Namespace

    from sklearn.datasets import load_iris

    from treebench.api import make_estimator

    make_estimator("tnt", params={"ccp_alpha": 1e-2, "n_jobs": 1}).fit(*load_iris(return_X_y=True))
    a = Namespace(N1=2, N2=5, compat=False)
    data = load(dataset, seed, "given", None)

    def one(fit):
        r = fit(a, data, C, seed)
        return {"cpu": r["cpu"], "wall": r["wall"], "accuracy": r["test"], "size": r["splits"]}

    fits = {"treebench": lambda: one(fit_ours)}
    if ref:
        use_reference(ref)
        fits["reference"] = lambda: one(fit_ref)
    return fits


def run(a):
    """Run the comparison with the options ``a`` and print its rows."""
    from sklearn.datasets import load_iris

    from treebench.api import make_estimator

    if a.ref:
        use_reference(a.ref)
    # compile / load the numba kernels outside the timed region
    make_estimator("tnt", params={"ccp_alpha": 1e-2, "n_jobs": 1}).fit(*load_iris(return_X_y=True))
    summary = []
    for ds in a.dataset:
        for seed in a.seeds:
            data = load(ds, seed, a.split, a.n_train)
            print(f"{ds} ({a.split}) seed {seed}: train {data[0].shape}, test {data[2].shape}")
            for n in a.cart_splits:
                s, tr, te = cart(data, n, seed)
                print(f"  CART       #S {s:5d} | train {tr:.4f} test {te:.4f}", flush=True)
            for C in a.C:
                print(f" N1={a.N1} N2={a.N2} ccp_alpha={C:g}", flush=True)
                ours = fit_ours(a, data, C, seed)
                print(line("treebench", ours), flush=True)
                if a.cart:
                    s, tr, te = cart(data, ours["splits"], seed)
                    print(f"  {'CART':10s} same #S {s:5d} | train {tr:.4f} test {te:.4f}")
                if not a.ref:
                    continue
                ref = fit_ref(a, data, C, seed)
                print(line("reference", ref), flush=True)
                s = (
                    f"{ds} seed {seed} C={C:g}: reference/treebench "
                    f"{ratio(ref['wall'], ours['wall'])} "
                    f"wall, {ratio(ref['cpu'], ours['cpu'])} CPU; test agreement "
                    f"{(ref['pred'] == ours['pred']).mean():.4f}; test accuracy difference "
                    f"{100 * (ours['test'] - ref['test']):+.2f} pp; #S {ours['splits']} vs "
                    f"{ref['splits']}"
                )
                print(s, flush=True)
                summary.append(s)
    if len(summary) > 1:
        print("\n".join(["", *summary]))
