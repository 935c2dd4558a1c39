"""TnT's grow / prune / merge (Algorithm 2 of the paper), its micro trees and the fine-tune pass.

:class:`_TnTBuilder` grows substitutes for every node of the live graph in waves of equal
longest-path depth and merges them; micro trees come from the numba builder of :mod:`.core` or,
for other criteria and as the reference-exact path, from scikit-learn.
"""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from treebench.graph.flat import compact, topo_order, waves
from treebench.methods.progress import report
from treebench.methods.tnt.graph import graph_predict_nodes

# ----------------------------------------------------------------------------- micro trees


def _core():
    """Return the numba kernels.

    Imported on first use so that importing this module stays light.
    """
    from treebench.methods.tnt import core as _tnt_core

    return _tnt_core


class _MicroTree:
    """A fitted micro CART.

    Scikit-learn's Cython ``Tree`` (``tree_``), its ``classes_`` and the class predicted at every
    node (``node_label``).
    """

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
    """A micro CART grown by the numba builder (``_tnt_core.build_micro``).

    It has the attribute names of scikit-learn's ``Tree`` (``tree_`` is the object itself), so both
    backends share the graph code.
    """

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
    """Return the tree that ``DecisionTreeClassifier(ccp_alpha=..., random_state=seed)`` grows.

    The same tree as its ``fit(X, y, w)``.

    Calls scikit-learn's Cython builder directly (as ``BaseDecisionTree._fit`` does for float32
    dense X without missing values) to skip the per-call Python validation, which dominates for the
    thousands of small micro trees; falls back to the public estimator if the private API is
    unavailable.
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
        # numba backend (gini): features rank-coded once; the sklearn backend is kept for other
        # criteria and as the reference-exact path (scikit-learn's random feature order breaks ties)
        self.backend = tree_kwargs.get("backend") or (
            "numba" if tree_kwargs.get("criterion", "gini") == "gini" else "sklearn"
        )
        if self.backend == "numba" and tree_kwargs.get("criterion", "gini") != "gini":
            raise ValueError("the numba micro-tree backend supports criterion='gini' only")
        if self.backend == "numba":
            self.enc = _core().encode_features(X) if enc is None else enc
            # features are visited in a random order drawn from the seed (it breaks ties between
            # equally good splits on different features as scikit-learn's random feature order does)
            feats = np.flatnonzero(self.enc[1] > 1).astype(np.int64)
            self.feats0 = np.random.RandomState(seed).permutation(feats)
        # graph (lists; -1 = none). A single leaf predicting the weighted majority (any label).
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
        """Return the label the live graph predicts from node ``starts[i]`` for row ``rows[i]``."""
        out = np.empty(len(rows), dtype=np.int64)
        for s0 in np.unique(starts):
            sel = starts == s0
            out[sel] = self._live_predict(s0, rows[sel])
        return out

    def _route(self, g, rows):
        """Split the samples ``rows`` at graph node ``g`` (live routing).

        (left rows, right rows).
        """
        tree = self.subs[g]
        if tree is None:
            go = self.X[rows, self.lf[g]] > self.lt[g]
        else:
            go = tree.predict_rows(self.X, rows) == 1
        return rows[~go], rows[go]

    def _fit_micro(self, g, rows, targets):
        self._fit_many([(g, rows, targets)])

    def _micro_args(self, g, rows, targets):
        """Return the arguments of the micro-tree fit of node ``g``, or None.

        None if its last fit is reused or it has no samples (then its substitute is dropped).
        """
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
        """Fit the micro trees of ``jobs`` = [(node, rows, targets)] and install them in order.

        The nodes are of one wave: none is an ancestor or descendant of another, so their fits are
        independent. With ``n_threads > 1`` the numba fits run in a thread pool (the kernels
        release the GIL).
        """
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
        (not refitted yet in this sweep), so this equals the node-by-node topological sweep.
        """
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
        """PRUNE dead internal nodes (bypass them), then MERGE live substitutes into the graph."""
        bypass = {}
        if do_prune:
            for g, (nr, nl, nrr) in stats.items():
                if nr == 0:
                    self._remove(g)  # unreached: drop the substitute, keep the node as it is
                elif nl == 0:  # every sample goes right
                    bypass[g] = int(self.lr[g])
                elif nrr == 0:  # every sample goes left
                    bypass[g] = int(self.ll[g])
        # Guard (pitfall 3): a live substitute of an internal node that is a single leaf must never
        # turn the node into a class leaf; it is a constant routing, i.e. a bypass to one child.
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
            # ids: micro node 0 -> g; other micro internal nodes (and, for leaf g, micro leaves)
            # -> new
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
            for phase in range(N1):
                self._start_phase()
                stats = {}
                for r in range(N2):
                    stats = self.grow()
                    report("grow rounds", phase * N2 + r + 1, N1 * N2)
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

    For ``passes`` sweeps in topological order: each decision node reached by samples is refitted as
    the best single axis-aligned split (depth-1 CART, gini) on its care set (relabelled 0 = left
    child is right, 1 = right child is right, weighted); the new split is kept only if it does not
    increase the weighted misclassification of the care set. Then every reached leaf takes the
    weighted majority class of its samples. Returns the new arrays and the number of changed splits.
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
    """Bypass decision nodes whose training samples all go one way.

    And nodes with left == right.
    """
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
