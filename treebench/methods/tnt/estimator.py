"""Tree in Tree (TnT) decision graphs (Zhu & Shoaran, NeurIPS 2021), its ensembles and the NDG baseline.

A TnT model is a decision graph (a DAG): internal nodes hold axis-aligned tests ``x[j] > t -> right``,
leaves hold class labels, and a node may have several parents. It is grown by Algorithm 2 of the paper:
``N1`` merge phases of ``N2`` grow rounds. In a grow round every node (each after all of its parents)
gets a *substitute* micro CART fitted on its samples (a leaf: their labels; an internal node: its
*sensitive* samples, whose prediction depends on the branch taken, relabelled 0 = left / 1 = right),
with sample-weighted cost-complexity pruning ``ccp_alpha_i = C * W / W_i``. After the ``N2`` rounds
dead internal nodes are bypassed (PRUNE) and every substitute is inlined into the graph (MERGE), so
several parents share a child. ``N1 = 1`` is CART with cost-complexity pruning.

How it is computed:

* micro trees (gini) are grown and exactly pruned by numba kernels (:mod:`.core`) on rank-coded
  features, equal to ``DecisionTreeClassifier(ccp_alpha=C_i)`` up to ties between equally good splits;
  the scikit-learn builder remains for other criteria and as the reference-exact debug path;
* the graph is flat integer arrays (:mod:`treebench.methods._flatgraph`), routed by the compiled router
  of :mod:`treebench.methods._routing`; a micro tree is refitted only if its samples or targets changed;
* a grow sweep visits the graph in waves of equal longest-path depth, whose micro trees are
  independent and fitted in ``n_jobs`` threads (the graph does not depend on ``n_jobs``);
* ``finetune_passes > 0`` runs a TAO-style refit of the decision nodes, an **approximation** of the
  paper's unpublished fine-tune (recorded in ``fit_info_``).

Details and the reasons behind them: ``docs/methods/tnt.md``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods._flatgraph import compact, dag_depth, topo_order, waves
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    SizeMixin,
    _fit_context,
    combine_sizes,
    member_size,
    register,
    validate_sample_weight,
)

# ----------------------------------------------------------------------------- flat graph utilities


def graph_predict_nodes(X, feature, threshold, left, right, root=0, backend="auto"):
    """Leaf reached by each row of ``X`` in a flat decision graph, and the number of splits visited.

    ``left[i] < 0`` marks a leaf; a row goes right iff ``x[feature] > threshold``. Returns
    ``(leaf_index, n_internal_visited)`` from :func:`treebench.methods._routing.route_axis` (compiled
    with numba, else a numpy loop over levels; ``backend`` chooses).
    """
    from treebench.methods._routing import route_axis  # numba loads with the first prediction

    return route_axis(X, feature, threshold, left, right, root=root, backend=backend)


class _GraphClassifierMixin(SizeMixin):
    """predict / predict_proba / size_report for a fitted flat decision graph.

    Fitted state: ``feature_, threshold_, children_left_, children_right_, value_`` (class index at
    leaves, -1 at internal nodes), ``classes_``; root = node 0.
    """

    def _check_X(self, X):
        check_is_fitted(self, "feature_")
        X = validate_data(self, X, reset=False, dtype=np.float32)
        return X

    def apply(self, X):
        """Index of the leaf reached by every row of ``X``."""
        X = self._check_X(X)
        leaf, _ = graph_predict_nodes(
            X, self.feature_, self.threshold_, self.children_left_, self.children_right_
        )
        return leaf

    def predict(self, X):
        leaf = self.apply(X)  # first: raises NotFittedError before any fitted attribute is read
        return self.classes_[self.value_[leaf]]

    def predict_proba(self, X):
        """One-hot of the predicted class: the graph's leaves carry labels only (as in the paper).

        Hard probabilities keep ``BaggingClassifier`` on majority voting, as for the reference code.
        """
        leaf = self.apply(X)
        idx = self.value_[leaf]
        proba = np.zeros((len(idx), len(self.classes_)))
        proba[np.arange(len(idx)), idx] = 1.0
        return proba

    @property
    def n_splits_(self):
        return int((self.children_left_ >= 0).sum())

    @property
    def n_leaves_(self):
        return int((self.children_left_ < 0).sum())

    def size_report(self, X):
        X = self._check_X(X)
        _, steps = graph_predict_nodes(
            X, self.feature_, self.threshold_, self.children_left_, self.children_right_
        )
        md = float(steps.mean()) if len(steps) else 0.0
        return {
            "n_trees": 1,
            "n_splits": self.n_splits_,
            "n_leaves": self.n_leaves_,
            "depth": dag_depth(self.children_left_, self.children_right_),
            "mean_depth": md,
            "split_evals": md,
        }

    def _set_graph(self, feature, threshold, left, right, value, root):
        f, t, lft, rgt, v = compact(feature, threshold, left, right, value, root)
        f[lft < 0] = 0
        t[lft < 0] = 0.0
        self.feature_, self.threshold_ = f, t
        self.children_left_, self.children_right_, self.value_ = lft, rgt, v

    def to_graph(self):
        """The decision graph (shared children kept) as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.tnt.export import tnt_graph

        return tnt_graph(self)


def _prepare(est, X, y, sample_weight):
    """Validate inputs, encode labels, scale the weights and drop the rows of weight 0.

    Integer weights are counts and are used as given: node weights are then exact sums, equal to
    those of the rows repeated, so ties between equally good splits resolve as on repeated rows
    (rescaled, they lost that exactness). Other weights (AdaBoost's) are rescaled to sum to the
    number of rows, as before, so that TnT-AdaBoost fits are unchanged. A fit depends on the scale
    of the weights only through floating-point rounding, and with it tie-breaking.
    """
    X, y = validate_data(est, X, y, dtype=np.float32, order="C")
    check_classification_targets(y)
    classes, yi = np.unique(y, return_inverse=True)
    w = validate_sample_weight(sample_weight, X)
    if w is None:
        w = np.ones(len(yi))
    else:
        if not np.array_equal(w, np.round(w)):
            w = w * (len(yi) / w.sum())
        keep = w > 0
        if not keep.all():
            X, yi, w = X[keep], yi[keep], w[keep]
    return np.ascontiguousarray(X), yi.astype(np.int64), w, classes


# ----------------------------------------------------------------------------- micro trees


def _core():
    """The numba kernels (imported on first use so that importing this module stays light)."""
    from treebench.methods.tnt import core as _tnt_core

    return _tnt_core


class _MicroTree:
    """A fitted micro CART: scikit-learn's Cython ``Tree`` (``tree_``), its ``classes_`` and the class
    predicted at every node (``node_label``)."""

    __slots__ = ("tree_", "classes_", "node_label")

    def __init__(self, tree, classes):
        self.tree_ = tree
        self.classes_ = classes
        self.node_label = classes[np.argmax(tree.value[:, 0, :], axis=1)].astype(np.int64)

    def predict(self, X):
        return self.node_label[self.tree_.apply(X)]

    def predict_rows(self, X, rows):
        return self.node_label[self.tree_.apply(X[rows])]


class _FlatTree:
    """A micro CART grown by the numba builder (``_tnt_core.build_micro``), with the attribute names of
    scikit-learn's ``Tree`` (``tree_`` is the object itself) so both backends share the graph code."""

    __slots__ = (
        "feature",
        "threshold",
        "children_left",
        "children_right",
        "node_label",
        "node_count",
    )

    def __init__(self, feature, threshold, left, right, label):
        self.feature, self.threshold = feature, threshold
        self.children_left, self.children_right = left, right
        self.node_label = label
        self.node_count = len(left)

    @property
    def tree_(self):
        return self

    def predict_rows(self, X, rows):
        return _core().tree_route(
            X,
            self.feature,
            self.threshold,
            self.children_left,
            self.children_right,
            self.node_label,
            rows,
        )


def _fit_micro_sklearn(X, y, w, ccp_alpha, seed, criterion, min_samples_leaf):
    """The same tree as ``DecisionTreeClassifier(ccp_alpha=..., random_state=seed).fit(X, y, w)``.

    Calls scikit-learn's Cython builder directly (as ``BaseDecisionTree._fit`` does for float32 dense X
    without missing values) to skip the per-call Python validation, which dominates for the thousands of
    small micro trees; falls back to the public estimator if the private API is unavailable.
    """
    try:
        from sklearn.tree._criterion import Entropy, Gini
        from sklearn.tree._splitter import BestSplitter
        from sklearn.tree._tree import DepthFirstTreeBuilder, Tree, _build_pruned_tree_ccp
    except ImportError:  # pragma: no cover - private scikit-learn API moved
        est = DecisionTreeClassifier(
            criterion=criterion,
            min_samples_leaf=min_samples_leaf,
            ccp_alpha=ccp_alpha,
            random_state=seed,
        ).fit(X, y, sample_weight=w)
        return _MicroTree(est.tree_, est.classes_)
    classes, yenc = np.unique(y, return_inverse=True)
    n_classes = np.array([len(classes)], dtype=np.intp)
    yy = np.ascontiguousarray(yenc.reshape(-1, 1), dtype=np.float64)
    crit = {"gini": Gini, "entropy": Entropy, "log_loss": Entropy}[criterion](1, n_classes)
    n_features = X.shape[1]
    splitter = BestSplitter(
        crit, n_features, min_samples_leaf, 0.0, np.random.RandomState(seed), None
    )
    tree = Tree(n_features, n_classes, 1)
    builder = DepthFirstTreeBuilder(
        splitter, max(2, 2 * min_samples_leaf), min_samples_leaf, 0.0, np.iinfo(np.int32).max, 0.0
    )
    builder.build(tree, X, yy, np.ascontiguousarray(w, dtype=np.float64), None)
    if ccp_alpha > 0.0:
        pruned = Tree(n_features, n_classes, 1)
        _build_pruned_tree_ccp(pruned, tree, ccp_alpha)
        tree = pruned
    return _MicroTree(tree, classes)


# ----------------------------------------------------------------------------- TnT builder


class _TnTBuilder:
    """Mutable state of one TnT fit (graph lists, live substitutes, per-node sample sets)."""

    def __init__(self, X, y, w, n_classes, C, tree_kwargs, seed, enc=None, n_threads=1):
        self.X, self.y, self.w = X, y, w
        self.n_threads = max(1, int(n_threads))
        self.W = float(w.sum())
        self.K = n_classes
        self.C = C
        self.tree_kwargs = tree_kwargs
        self.seed = seed
        # numba backend (gini): features rank-coded once; the sklearn backend is kept for other criteria
        # and as the reference-exact path (scikit-learn's random feature order breaks ties)
        self.backend = tree_kwargs.get("backend") or (
            "numba" if tree_kwargs.get("criterion", "gini") == "gini" else "sklearn"
        )
        if self.backend == "numba" and tree_kwargs.get("criterion", "gini") != "gini":
            raise ValueError("the numba micro-tree backend supports criterion='gini' only")
        if self.backend == "numba":
            self.enc = _core().encode_features(X) if enc is None else enc
            # features are visited in a random order drawn from the seed (ties between equally good
            # splits on different features are broken by it, as scikit-learn's random feature order does)
            feats = np.flatnonzero(self.enc[1] > 1).astype(np.int64)
            self.feats0 = np.random.RandomState(seed).permutation(feats)
        # graph (lists; -1 = none). A single leaf predicting the weighted majority (label irrelevant).
        self.feat, self.thr, self.left, self.right = [0], [0.0], [-1], [-1]
        self.label = [int(np.argmax(np.bincount(y, weights=w, minlength=n_classes)))]
        self.root = 0
        self.n_micro_fits = 0
        self.reference_order = False
        self.n_reused = 0
        self.guard_bypasses = 0

    # -- live graph: graph nodes 0..G-1, micro-tree nodes appended; redirect[g] = entry of node g
    def _start_phase(self):
        G = len(self.feat)
        cap = 2 * G + 64
        self.G = G
        self.lf = np.zeros(cap, dtype=np.int64)
        self.lt = np.zeros(cap, dtype=np.float64)
        self.ll = np.full(cap, -1, dtype=np.int64)
        self.lr = np.full(cap, -1, dtype=np.int64)
        self.lv = np.full(cap, -1, dtype=np.int64)
        self.lf[:G] = self.feat
        self.lt[:G] = self.thr
        self.ll[:G] = self.left
        self.lr[:G] = self.right
        self.lv[:G] = self.label
        self.redirect = np.arange(cap, dtype=np.int64)
        self.size = G
        self.subs = [None] * G  # (tree, kind) per graph node
        self.memo = [None] * G  # (subset index, targets) of the last fit
        self.order = topo_order(self.ll[:G], self.lr[:G], self.root)
        self.waves = waves(self.order, self.ll[:G], self.lr[:G])

    def _alloc(self, m):
        if self.size + m > len(self.lf):
            cap = 2 * (self.size + m)
            for name, fill in (("lf", 0), ("lt", 0.0), ("ll", -1), ("lr", -1), ("lv", -1)):
                a = getattr(self, name)
                b = np.full(cap, fill, dtype=a.dtype)
                b[: len(a)] = a
                setattr(self, name, b)
            r = np.arange(cap, dtype=np.int64)
            r[: len(self.redirect)] = self.redirect
            self.redirect = r
        base = self.size
        self.size += m
        return base

    def _install(self, g, tree):
        """Make ``tree`` (a fitted micro CART) the live substitute of graph node ``g``."""
        self.subs[g] = tree
        t = tree.tree_
        cl, cr = t.children_left, t.children_right
        labels = tree.node_label
        m = t.node_count
        base = self._alloc(m)
        internal_g = self.ll[g] >= 0
        is_leaf = cl < 0
        sl = slice(base, base + m)
        if internal_g:
            target = np.where(labels == 0, self.ll[g], self.lr[g])
            if m == 1:  # constant routing: both branches to the same graph child
                self.lf[base], self.lt[base] = 0, 0.0
                self.ll[base] = self.lr[base] = target[0]
                self.lv[base] = -1
            else:
                kid_l = np.where(is_leaf[np.maximum(cl, 0)], target[np.maximum(cl, 0)], base + cl)
                kid_r = np.where(is_leaf[np.maximum(cr, 0)], target[np.maximum(cr, 0)], base + cr)
                self.lf[sl] = np.where(is_leaf, 0, t.feature)
                self.lt[sl] = np.where(is_leaf, 0.0, t.threshold)
                self.ll[sl] = np.where(is_leaf, -1, kid_l)
                self.lr[sl] = np.where(is_leaf, -1, kid_r)
                self.lv[sl] = -1  # micro leaves of an internal node are never reached
        else:
            self.lf[sl] = np.where(is_leaf, 0, t.feature)
            self.lt[sl] = np.where(is_leaf, 0.0, t.threshold)
            self.ll[sl] = np.where(is_leaf, -1, base + cl)
            self.lr[sl] = np.where(is_leaf, -1, base + cr)
            self.lv[sl] = np.where(is_leaf, labels, -1)
        self.redirect[g] = base

    def _remove(self, g):
        self.subs[g] = None
        self.memo[g] = None
        self.redirect[g] = g

    def _live_predict(self, start, rows):
        """Label predicted by the live graph from graph node ``start`` for the samples ``rows``."""
        return _core().live_infer(
            self.X, self.lf, self.lt, self.ll, self.lr, self.lv, self.redirect, int(start), rows
        )

    def _infer(self, starts, rows):
        """Label predicted by the live graph from start node ``starts[i]`` for sample ``rows[i]``."""
        out = np.empty(len(rows), dtype=np.int64)
        for s0 in np.unique(starts):
            sel = starts == s0
            out[sel] = self._live_predict(s0, rows[sel])
        return out

    def _route(self, g, rows):
        """Split the samples ``rows`` at graph node ``g`` (live routing): (left rows, right rows)."""
        tree = self.subs[g]
        if tree is None:
            go = self.X[rows, self.lf[g]] > self.lt[g]
        else:
            go = tree.predict_rows(self.X, rows) == 1
        return rows[~go], rows[go]

    def _fit_micro(self, g, rows, targets):
        self._fit_many([(g, rows, targets)])

    def _micro_args(self, g, rows, targets):
        """Arguments of the micro-tree fit of node ``g``, or None if its last fit is reused / it has
        no samples (then its substitute is dropped)."""
        memo = self.memo[g]
        if (
            memo is not None
            and self.subs[g] is not None
            and np.array_equal(memo[0], rows)
            and np.array_equal(memo[1], targets)
        ):
            self.n_reused += 1
            return None
        w = self.w[rows]
        ws = float(w.sum())
        if len(rows) == 0 or ws <= 0:
            self._remove(g)
            return None
        if self.backend == "numba":
            codes, nbins, vals, voff = self.enc
            K = self.K if self.ll[g] < 0 else 2
            return (
                codes,
                nbins,
                vals,
                voff,
                self.feats0,
                rows,
                targets,
                w,
                K,
                self.C * self.W,  # = ccp_alpha_i * W_i: the per-leaf penalty in weight units
                int(self.tree_kwargs.get("min_samples_leaf", 1)),
            )
        return (
            self.X[rows],
            targets,
            w,
            self.C * self.W / ws,
            self.seed,
            self.tree_kwargs.get("criterion", "gini"),
            self.tree_kwargs.get("min_samples_leaf", 1),
        )

    def _fit_many(self, jobs):
        """Fit the micro trees of ``jobs`` = [(node, rows, targets)] (nodes of one wave: none is an
        ancestor or descendant of another, so their fits are independent) and install them in order.
        With ``n_threads > 1`` the numba fits run in a thread pool (the kernels release the GIL)."""
        todo = []
        for g, rows, targets in jobs:
            args = self._micro_args(g, rows, targets)
            if args is not None:
                todo.append((g, rows, targets, args))
        if not todo:
            return
        if self.backend == "numba":
            build = _core().build_micro
            if self.n_threads > 1 and len(todo) > 1:
                pool = self._pool()
                # largest fits first, so that the two threads finish together
                big = sorted(range(len(todo)), key=lambda i: -len(todo[i][1]))
                futs = {i: pool.submit(build, *todo[i][3]) for i in big}
                results = [futs[i].result() for i in range(len(todo))]
            else:
                results = [build(*t[3]) for t in todo]
            trees = [_FlatTree(f, t, lft, rgt, lab) for f, t, lft, rgt, lab, _ in results]
        else:
            trees = [_fit_micro_sklearn(*t[3]) for t in todo]
        for (g, rows, targets, _), tree in zip(todo, trees, strict=True):
            self.n_micro_fits += 1
            self._install(g, tree)
            self.memo[g] = (rows, targets)

    def _pool(self):
        if getattr(self, "_executor", None) is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(self.n_threads)
        return self._executor

    def close(self):
        if getattr(self, "_executor", None) is not None:
            self._executor.shutdown()
            self._executor = None

    def grow(self):
        """One breadth-first sweep; returns per-node (n_reached, n_left, n_right) for PRUNE.

        Nodes are visited wave by wave (a wave = the nodes at the same longest-path depth, so all
        parents of a node are in earlier waves and none of its descendants in its own): a node's
        samples depend only on its ancestors' substitutes and its targets only on its descendants'
        (not refitted yet in this sweep), so this equals the node-by-node topological sweep."""
        n = len(self.y)
        incoming = {self.root: [np.arange(n)]}
        stats = {}
        for wave in self.waves:
            jobs, rows_of = [], {}
            for g in wave:
                parts = incoming.pop(g, [])
                rows = np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
                rows_of[g] = rows
                if self.ll[g] < 0:
                    jobs.append((g, rows, self.y[rows]))
                elif rows.size:
                    yl = self._live_predict(self.ll[g], rows)
                    yr = self._live_predict(self.lr[g], rows)
                    yt = self.y[rows]
                    care = yl != yr
                    lw = care & (yl == yt)
                    rw = care & (yr == yt)
                    if (
                        self.reference_order
                    ):  # the reference code's sample order: left winners first
                        sub = np.concatenate([rows[lw], rows[rw]])
                        tgt = np.r_[np.zeros(lw.sum(), np.int64), np.ones(rw.sum(), np.int64)]
                        jobs.append((g, sub, tgt))
                    else:
                        sel = lw | rw
                        jobs.append((g, rows[sel], rw[sel].astype(np.int64)))
                else:
                    self._remove(g)
            self._fit_many(jobs)
            for g in wave:
                if self.ll[g] >= 0:
                    lrows, rrows = self._route(g, rows_of[g])
                    stats[g] = (rows_of[g].size, lrows.size, rrows.size)
                    incoming.setdefault(int(self.ll[g]), []).append(lrows)
                    incoming.setdefault(int(self.lr[g]), []).append(rrows)
        return stats

    def prune_and_merge(self, stats, do_prune=True):
        """PRUNE dead internal nodes (bypass them), then MERGE every live substitute into the graph."""
        bypass = {}
        if do_prune:
            for g, (nr, nl, nrr) in stats.items():
                if nr == 0:
                    self._remove(g)  # unreached: drop the substitute, keep the node as it is
                elif nl == 0:  # every sample goes right
                    bypass[g] = int(self.lr[g])
                elif nrr == 0:  # every sample goes left
                    bypass[g] = int(self.ll[g])
        # Guard (pitfall 3): a live substitute of an internal node that is a single leaf must never turn
        # the node into a class leaf; it is a constant routing, i.e. a bypass to one child.
        for g in self.order:
            tree = self.subs[g]
            if (
                tree is not None
                and self.ll[g] >= 0
                and g not in bypass
                and tree.tree_.node_count == 1
            ):
                lab = int(tree.node_label[0])
                bypass[g] = int(self.ll[g] if lab == 0 else self.lr[g])
                self.guard_bypasses += 1

        def resolve(c):
            seen = 0
            while c in bypass:
                c = bypass[c]
                seen += 1
                if seen > len(self.feat) + 1:  # pragma: no cover
                    raise RuntimeError("bypass cycle")
            return c

        feat, thr, left, right, label = [], [], [], [], []
        G = self.G
        # graph nodes keep their ids 0..G-1; new nodes are appended
        feat = list(self.lf[:G])
        thr = list(self.lt[:G])
        left = [int(resolve(c)) if c >= 0 else -1 for c in self.ll[:G]]
        right = [int(resolve(c)) if c >= 0 else -1 for c in self.lr[:G]]
        label = list(self.lv[:G])
        for g in self.order:
            tree = self.subs[g]
            if tree is None or g in bypass:
                continue
            t = tree.tree_
            cl, cr = t.children_left, t.children_right
            labels = tree.node_label
            internal_g = self.ll[g] >= 0
            if t.node_count == 1:  # only leaves reach here (guard above)
                label[g] = int(labels[0])
                left[g] = right[g] = -1
                continue
            # ids: micro node 0 -> g; other micro internal nodes (and, for leaf g, micro leaves) -> new
            ids = np.full(t.node_count, -1, dtype=np.int64)
            ids[0] = g
            for j in range(1, t.node_count):
                if cl[j] >= 0 or not internal_g:
                    ids[j] = len(feat)
                    feat.append(0)
                    thr.append(0.0)
                    left.append(-1)
                    right.append(-1)
                    label.append(-1)
            gl, gr = left[g], right[g]
            for j in range(t.node_count):
                k = ids[j]
                if cl[j] < 0:
                    if not internal_g:
                        feat[k], thr[k], left[k], right[k], label[k] = (
                            0,
                            0.0,
                            -1,
                            -1,
                            int(labels[j]),
                        )
                    continue

                def kid(c, cl=cl, ids=ids, internal_g=internal_g, labels=labels, gl=gl, gr=gr):
                    if cl[c] >= 0 or not internal_g:
                        return int(ids[c])
                    return gl if labels[c] == 0 else gr

                feat[k], thr[k] = int(t.feature[j]), float(t.threshold[j])
                left[k], right[k], label[k] = kid(cl[j]), kid(cr[j]), -1
        root = resolve(self.root)
        f, th, lft, rgt, v = compact(feat, thr, left, right, label, root)
        self.feat, self.thr = list(f), list(th)
        self.left, self.right, self.label = list(lft), list(rgt), list(v)
        self.root = 0

    def fit(self, N1, N2, prune=True):
        try:
            for _ in range(N1):
                self._start_phase()
                stats = {}
                for _ in range(N2):
                    stats = self.grow()
                self.prune_and_merge(stats, do_prune=prune)
        finally:
            self.close()
        return self

    def arrays(self):
        return self.feat, self.thr, self.left, self.right, self.label, self.root


def _weighted_gini_err(y, w, K):
    return w.sum() - np.bincount(y, weights=w, minlength=K).max() if len(y) else 0.0


def tao_finetune(X, y, w, K, feature, threshold, left, right, value, passes, seed):
    """TAO-style fine-tune of a flat graph (an approximation; the paper's procedure is unpublished).

    For ``passes`` sweeps in topological order: each decision node reached by samples is refitted as the
    best single axis-aligned split (depth-1 CART, gini) on its care set (relabelled 0 = left child is
    right, 1 = right child is right, weighted); the new split is kept only if it does not increase the
    weighted misclassification of the care set. Then every reached leaf takes the weighted majority
    class of its samples. Returns the new arrays and the number of changed splits.
    """
    feature, threshold = feature.copy(), threshold.copy()
    value = value.copy()
    order = topo_order(left, right, 0)
    changed = 0
    for _ in range(passes):
        incoming = {0: [np.arange(len(y))]}
        for g in order:
            parts = incoming.pop(g, [])
            rows = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
            if left[g] < 0:
                if rows.size:
                    value[g] = int(np.argmax(np.bincount(y[rows], weights=w[rows], minlength=K)))
                continue
            if rows.size:
                Xs = X[rows]
                yl = value[
                    graph_predict_nodes(Xs, feature, threshold, left, right, root=left[g])[0]
                ]
                yr = value[
                    graph_predict_nodes(Xs, feature, threshold, left, right, root=right[g])[0]
                ]
                yt = y[rows]
                care = yl != yr
                rw = care & (yr == yt)
                lw = care & (yl == yt)
                sel = lw | rw
                if sel.any() and rw[sel].any() and lw[sel].any():
                    tgt = rw[sel].astype(np.int64)
                    ws = w[rows][sel]
                    Xc = Xs[sel]
                    old = (Xc[:, feature[g]] > threshold[g]).astype(np.int64)
                    err_old = ws[old != tgt].sum()
                    stump = DecisionTreeClassifier(max_depth=1, random_state=seed)
                    stump.fit(Xc, tgt, sample_weight=ws)
                    if stump.tree_.node_count == 3:
                        f, t = int(stump.tree_.feature[0]), float(stump.tree_.threshold[0])
                        new = (Xc[:, f] > t).astype(np.int64)
                        if ws[new != tgt].sum() < err_old - 1e-12:
                            feature[g], threshold[g] = f, t
                            changed += 1
                go = Xs[:, feature[g]] > threshold[g]
                incoming.setdefault(int(left[g]), []).append(rows[~go])
                incoming.setdefault(int(right[g]), []).append(rows[go])
    return feature, threshold, value, changed


def post_prune(X, feature, threshold, left, right, value):
    """Bypass decision nodes whose training samples all go one way (and nodes with left == right)."""
    n = X.shape[0]
    order = topo_order(left, right, 0)
    incoming = {0: [np.arange(n)]}
    bypass = {}
    for g in order:
        parts = incoming.pop(g, [])
        rows = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        if left[g] < 0:
            continue
        go = X[rows, feature[g]] > threshold[g]
        if left[g] == right[g]:
            bypass[g] = int(left[g])
        elif rows.size and not go.any():
            bypass[g] = int(left[g])
        elif rows.size and go.all():
            bypass[g] = int(right[g])
        incoming.setdefault(int(left[g]), []).append(rows[~go])
        incoming.setdefault(int(right[g]), []).append(rows[go])

    def resolve(c):
        while c in bypass:
            c = bypass[c]
        return c

    lft = np.array([resolve(c) if c >= 0 else -1 for c in left])
    rgt = np.array([resolve(c) if c >= 0 else -1 for c in right])
    return feature, threshold, lft, rgt, value, resolve(0)


# ----------------------------------------------------------------------------- the estimator


def _n_threads(n_jobs):
    if n_jobs is None:
        return 1
    import os

    n = int(n_jobs)
    return max(1, (os.cpu_count() or 1) + 1 + n if n < 0 else n)


_TNT = "Tree in Tree decision graph (Zhu & Shoaran 2021): micro CARTs grown in nodes and merged into a DAG"


@register("tnt", CLASSIFICATION, _TNT)
class TnTClassifier(_GraphClassifierMixin, ClassifierMixin, BaseEstimator):
    """Tree in Tree (TnT) decision graph classifier.

    Parameters
    ----------
    ccp_alpha : float
        The paper's C: cost-complexity penalty (per split, in units of the Gini impurity weighted by the
        training-weight fraction). Micro tree *i* uses ``ccp_alpha * W / W_i``.
    N1 : int
        Merge phases (paper: 2). ``N1 = 1`` is CART with cost-complexity pruning.
    N2 : int
        Grow rounds per merge phase (paper: 5; the reference code's default is 3).
    target_splits : int or None
        If set, search ``ccp_alpha`` (log bisection, starting at ``ccp_alpha``) so that #S is close to this
        budget; the model closest to it is kept (``fit_info_`` records the search).
    target_tol : float
        Relative tolerance on #S that stops the search early.
    max_search : int
        Maximum number of TnT fits in the search.
    finetune_passes : int
        TAO-style fine-tune passes after growing (0 = off). An approximation, see the module docstring.
    criterion, min_samples_leaf : micro-tree (``DecisionTreeClassifier``) settings.
    random_state : int, RandomState or None
        Seed of every micro tree (an int is used as is, as in the reference code).
    n_jobs : int or None
        Threads for the micro-tree fits of one grow wave (None = 1, -1 = all cores). The fitted graph
        does not depend on it.
    verbose : int
    """

    _parameter_constraints = {
        "ccp_alpha": [NON_NEGATIVE],
        "N1": [POSITIVE_INT],
        "N2": [POSITIVE_INT],
        "target_splits": [None, Interval(Real, 1, None, closed="left")],
        "target_tol": [NON_NEGATIVE],
        "max_search": [POSITIVE_INT],
        "finetune_passes": [NON_NEGATIVE_INT],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "criterion": "no_validation",
        "min_samples_leaf": "no_validation",
    }

    def __init__(
        self,
        ccp_alpha=1e-4,
        N1=2,
        N2=5,
        target_splits=None,
        target_tol=0.05,
        max_search=10,
        finetune_passes=0,
        criterion="gini",
        min_samples_leaf=1,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.ccp_alpha = ccp_alpha
        self.N1 = N1
        self.N2 = N2
        self.target_splits = target_splits
        self.target_tol = target_tol
        self.max_search = max_search
        self.finetune_passes = finetune_passes
        self.criterion = criterion
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _seed(self):
        if isinstance(self.random_state, int | np.integer):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(0, 2**31 - 1))

    def _backend(self):
        """Micro-tree backend: numba (gini, default) or scikit-learn (other criteria; and the
        reference-exact path used by ``_reference_compat`` / ``_micro_backend = "sklearn"``, debug aids
        that are not hyperparameters)."""
        if getattr(self, "_reference_compat", False):
            return "sklearn"
        b = getattr(self, "_micro_backend", None)
        if b is not None:
            return b
        return "numba" if self.criterion == "gini" else "sklearn"

    def _fit_once(self, X, y, w, K, C, seed, enc=None):
        b = _TnTBuilder(
            X,
            y,
            w,
            K,
            C,
            {
                "criterion": self.criterion,
                "min_samples_leaf": self.min_samples_leaf,
                "backend": self._backend(),
            },
            seed,
            enc=enc,
            n_threads=_n_threads(self.n_jobs),
        )
        if getattr(self, "_reference_compat", False):
            # Debug aid for scripts/compare_tnt_reference.py (not a hyperparameter): the reference
            # code's weights (sum 1) and care-set order, so that near-ties between splits resolve as
            # there. Same algorithm; only floating-point tie-breaking differs without it.
            b.w = w / w.sum()
            b.W = 1.0
            b.reference_order = True
        b.fit(int(self.N1), int(self.N2))
        f, t, lft, rgt, v, root = b.arrays()
        f, t, lft, rgt, v = compact(f, t, lft, rgt, v, root)
        info = {
            "micro_fits": b.n_micro_fits,
            "micro_backend": b.backend,
            "micro_reused": b.n_reused,
            "guard_bypasses": b.guard_bypasses,
        }
        return (f, t, lft, rgt, v), int((lft >= 0).sum()), info

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y, w, classes = _prepare(self, X, y, sample_weight)
        self.classes_ = classes
        K = len(classes)
        seed = self._seed()
        C = float(self.ccp_alpha)
        info = {"ccp_alpha_used": C, "search_fits": 1}
        # features are rank-coded once per fit (shared by the fits of the C search)
        enc = _core().encode_features(X) if self._backend() == "numba" else None
        if self.target_splits is None:
            graph, nS, finfo = self._fit_once(X, y, w, K, C, seed, enc)
        else:
            graph, nS, finfo, info = self._search(X, y, w, K, C, seed, enc)
        del enc
        info.update(finfo)
        f, t, lft, rgt, v = graph
        if self.finetune_passes:
            f, t, v, changed = tao_finetune(
                X, y, w, K, f, t, lft, rgt, v, int(self.finetune_passes), seed
            )
            f, t, lft, rgt, v, root = post_prune(X, f, t, lft, rgt, v)
            f, t, lft, rgt, v = compact(f, t, lft, rgt, v, root)
            info["finetune_changed_splits"] = changed
            info["finetune"] = "TAO-style approximation (paper's procedure unpublished)"
        self._set_graph(f, t, lft, rgt, v, 0)
        info["n_splits"] = self.n_splits_
        self.fit_info_ = info
        return self

    def _search(self, X, y, w, K, C, seed, enc=None):
        target = float(self.target_splits)
        tried = []  # (C, nS, graph, info)

        def run(c):
            graph, nS, finfo = self._fit_once(X, y, w, K, c, seed, enc)
            tried.append((c, nS, graph, finfo))
            if self.verbose:
                print(f"[tnt] ccp_alpha={c:.3g} -> #S={nS}")
            return nS

        def good(nS):
            return abs(nS - target) <= self.target_tol * target

        lo = hi = None  # lo: C with #S >= target (small C); hi: C with #S < target
        c = C if C > 0 else 1e-4
        nS = run(c)
        while not good(nS) and len(tried) < self.max_search:
            if nS >= target:
                lo = c
                c = c * 4.0 if hi is None else np.sqrt(lo * hi)
            else:
                hi = c
                c = c / 4.0 if lo is None else np.sqrt(lo * hi)
            nS = run(c)
        best = min(tried, key=lambda r: (abs(r[1] - target), r[0]))
        info = {
            "ccp_alpha_used": float(best[0]),
            "search_fits": len(tried),
            "target_splits": int(target),
        }
        return best[2], best[1], best[3], info


# ----------------------------------------------------------------------------- ensembles


class _TnTEnsemble(SizeMixin, ClassifierMixin, BaseEstimator):
    """Shared code: a scikit-learn ensemble (``ensemble_``) of TnT graphs built in ``fit``."""

    _parameter_constraints = {
        **{
            k: TnTClassifier._parameter_constraints[k]
            for k in ("ccp_alpha", "N1", "N2", "target_splits", "finetune_passes")
        },
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "n_estimators": [POSITIVE_INT],
    }

    def _base(self):
        return TnTClassifier(
            ccp_alpha=self.ccp_alpha,
            N1=self.N1,
            N2=self.N2,
            target_splits=self.target_splits,
            finetune_passes=self.finetune_passes,
        )

    @_fit_context(prefer_skip_nested_validation=False)  # members validate their own parameters
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, dtype=np.float32)
        self.ensemble_ = self._make(len(X)).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.ensemble_.classes_
        self.estimators_ = self.ensemble_.estimators_
        self.fit_info_ = {
            "member_splits_mean": float(np.mean([e.n_splits_ for e in self.estimators_])),
            "n_members": len(self.estimators_),
        }
        return self

    def predict(self, X):
        check_is_fitted(self, "ensemble_")
        X = validate_data(self, X, reset=False, dtype=np.float32)
        return self.ensemble_.predict(X)

    def predict_proba(self, X):
        check_is_fitted(self, "ensemble_")
        X = validate_data(self, X, reset=False, dtype=np.float32)
        return self.ensemble_.predict_proba(X)

    def size_report(self, X):
        check_is_fitted(self, "ensemble_")
        X = np.asarray(X, dtype=np.float32)
        feats = getattr(self.ensemble_, "estimators_features_", None)
        if feats is not None:
            return combine_sizes(
                [member_size(m, X[:, f]) for m, f in zip(self.estimators_, feats, strict=True)]
            )
        return combine_sizes([member_size(m, X) for m in self.estimators_])

    def to_graph(self):
        """The ensemble of TnT graphs as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.tnt.export import tnt_graph

        return tnt_graph(self)


@register(
    "tnt_bagging",
    CLASSIFICATION,
    "TnT-bagging: BaggingClassifier (bootstrap, all features) of TnT graphs",
)
class TnTBagging(_TnTEnsemble):
    """Bagging (scikit-learn ``BaggingClassifier``, bootstrap samples, all features) of TnT graphs."""

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "the bootstrap draws n rows (by weight), so repeated rows change both the draws and "
            "their number (as for scikit-learn's BaggingClassifier)"
        ),
    }

    _parameter_constraints = {**_TnTEnsemble._parameter_constraints, "max_samples": "no_validation"}

    def __init__(
        self,
        n_estimators=10,
        ccp_alpha=1e-4,
        N1=2,
        N2=5,
        target_splits=None,
        finetune_passes=0,
        max_samples=None,
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.ccp_alpha = ccp_alpha
        self.N1 = N1
        self.N2 = N2
        self.target_splits = target_splits
        self.finetune_passes = finetune_passes
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self, n_samples):
        # max_samples=None means n bootstrap rows whatever the weights. Newer scikit-learn draws rows
        # by weight and reads a float max_samples as a fraction of the weight sum (1.0 would give
        # AdaBoost's weights, sum 1, a one-row bootstrap); an int is a row count in every version
        # and, unweighted, draws the same rows as 1.0 did.
        return BaggingClassifier(
            estimator=self._base(),
            n_estimators=self.n_estimators,
            max_samples=n_samples if self.max_samples is None else self.max_samples,
            random_state=self.random_state,
            n_jobs=self.n_jobs,  # members in joblib worker processes (numba kernels hold the GIL)
        )


@register("tnt_adaboost", CLASSIFICATION, "TnT-AdaBoost: AdaBoostClassifier (SAMME) of TnT graphs")
class TnTAdaBoost(_TnTEnsemble):
    """AdaBoost (scikit-learn ``AdaBoostClassifier``, SAMME) of TnT graphs."""

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "AdaBoost's normalised weights are not counts; weighted and repeated fits agree up to "
            "rounding, which can break ties between splits differently (as for AdaBoostClassifier)"
        ),
    }

    _parameter_constraints = {**_TnTEnsemble._parameter_constraints, "learning_rate": [POSITIVE]}

    def __init__(
        self,
        n_estimators=10,
        ccp_alpha=1e-4,
        N1=2,
        N2=5,
        target_splits=None,
        finetune_passes=0,
        learning_rate=1.0,
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.ccp_alpha = ccp_alpha
        self.N1 = N1
        self.N2 = N2
        self.target_splits = target_splits
        self.finetune_passes = finetune_passes
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self, n_samples):
        return AdaBoostClassifier(
            estimator=self._base(),
            n_estimators=self.n_estimators,
            learning_rate=self.learning_rate,
            random_state=self.random_state,
        )


# ----------------------------------------------------------------------------- NDG (Algorithm 1)


def _gini_R(counts, W):
    """Weighted Gini of leaves from class-weight rows, in units of the total weight fraction."""
    tot = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(tot > 0, tot - (counts**2).sum(axis=-1) / np.where(tot > 0, tot, 1), 0.0)
    return g / W


@register(
    "ndg",
    CLASSIFICATION,
    "Naive decision graph (Algorithm 1 of the TnT paper): greedy leaf split/merge with penalty C",
)
class NDGClassifier(_GraphClassifierMixin, ClassifierMixin, BaseEstimator):
    """Naive decision graph: greedily split a leaf or merge two leaves, whichever gains most.

    Objective: weighted Gini impurity of the leaves (in weight-fraction units) + ``C`` per leaf (for a
    tree, per split). Splitting leaf *l* gains ``R(l) - R(l_L) - R(l_R) - C`` (best axis-aligned split,
    a depth-1 CART); merging leaves *i*, *j* (one leaf with both sets of parents) gains
    ``C - (R(l_i + l_j) - R(l_i) - R(l_j))``. Each iteration applies the single best operation while its
    gain is positive, at most ``max_iter`` times. Nodes whose two branches end up on the same leaf are
    bypassed at the end.

    Attributes
    ----------
    n_iter_ : int
        Split and merge operations applied (at most ``max_iter``).
    """

    _parameter_constraints = {
        "C": [NON_NEGATIVE],
        "max_iter": [NON_NEGATIVE_INT],
        "min_samples_leaf": "no_validation",
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
    }

    def __init__(self, C=3e-4, max_iter=100000, min_samples_leaf=1, random_state=None, n_jobs=None):
        self.C = C
        self.max_iter = max_iter
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y, w, classes = _prepare(self, X, y, sample_weight)
        self.classes_ = classes
        K = len(classes)
        W = float(w.sum())
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        C = float(self.C)
        feat, thr, left, right, label = [0], [0.0], [-1], [-1], [0]
        leaves = {0: np.arange(len(y))}  # leaf node -> sample rows
        split_cache = {}  # leaf -> (gain, feature, threshold)

        count_cache = {}  # leaf -> class weights of its samples

        def counts(rows, g=None):
            if g is not None and g in count_cache:
                return count_cache[g]
            c = np.bincount(y[rows], weights=w[rows], minlength=K)
            if g is not None:
                count_cache[g] = c
            return c

        def best_split(g):
            rows = leaves[g]
            if g in split_cache:
                return split_cache[g]
            res = (-np.inf, 0, 0.0)
            if len(rows) >= 2 * self.min_samples_leaf and len(np.unique(y[rows])) > 1:
                st = DecisionTreeClassifier(
                    max_depth=1, min_samples_leaf=self.min_samples_leaf, random_state=seed
                ).fit(X[rows], y[rows], sample_weight=w[rows])
                t = st.tree_
                if t.node_count == 3:
                    wn, imp = t.weighted_n_node_samples, t.impurity
                    gain = (wn[0] * imp[0] - wn[1] * imp[1] - wn[2] * imp[2]) / W - C
                    res = (gain, int(t.feature[0]), float(t.threshold[0]))
            split_cache[g] = res
            return res

        n_split = n_merge = 0
        for _ in range(int(self.max_iter)):
            ids = list(leaves)
            sg = [best_split(g) for g in ids]
            i_best = int(np.argmax([s[0] for s in sg]))
            best = ("split", sg[i_best][0], ids[i_best], None)
            if len(ids) > 1:
                cnt = np.array([counts(leaves[g], g) for g in ids])
                R = _gini_R(cnt, W)
                T, S2 = cnt.sum(1), (cnt**2).sum(1)
                Tm = np.maximum(T[:, None] + T[None, :], 1e-300)  # merged leaf, O(L^2) memory
                merged = (Tm - (S2[:, None] + S2[None, :] + 2.0 * (cnt @ cnt.T)) / Tm) / W
                mg = C - (merged - R[:, None] - R[None, :])
                iu = np.triu_indices(len(ids), 1)
                k = int(np.argmax(mg[iu]))
                if mg[iu][k] > best[1]:
                    best = ("merge", mg[iu][k], ids[iu[0][k]], ids[iu[1][k]])
            if not (best[1] > 0):
                break
            if best[0] == "split":
                g = best[2]
                _, f, t = sg[i_best]
                rows = leaves.pop(g)
                split_cache.pop(g, None)
                count_cache.pop(g, None)
                go = X[rows, f] > t
                a, b = len(feat), len(feat) + 1
                feat += [0, 0]
                thr += [0.0, 0.0]
                left += [-1, -1]
                right += [-1, -1]
                label += [0, 0]
                feat[g], thr[g], left[g], right[g], label[g] = f, t, a, b, -1
                leaves[a], leaves[b] = rows[~go], rows[go]
                n_split += 1
            else:
                gi, gj = best[2], best[3]
                rows = np.sort(np.concatenate([leaves.pop(gi), leaves.pop(gj)]))
                for h in (gi, gj):
                    split_cache.pop(h, None)
                    count_cache.pop(h, None)
                leaves[gi] = rows
                left = [gi if c == gj else c for c in left]
                right = [gi if c == gj else c for c in right]
                n_merge += 1
        for g, rows in leaves.items():
            label[g] = int(np.argmax(counts(rows))) if len(rows) else 0
        f, t, lft, rgt, v, root = post_prune(
            X, np.array(feat), np.array(thr), np.array(left), np.array(right), np.array(label)
        )
        self._set_graph(f, t, lft, rgt, v, root)
        self.n_iter_ = n_split + n_merge
        self.fit_info_ = {
            "n_split_ops": n_split,
            "n_merge_ops": n_merge,
            "n_splits": self.n_splits_,
        }
        return self
