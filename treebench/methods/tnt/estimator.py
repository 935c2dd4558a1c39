"""Tree in Tree (TnT) decision graphs (Zhu & Shoaran, NeurIPS 2021), ensembles and the NDG baseline.

A TnT model is a decision graph (a DAG): internal nodes hold axis-aligned tests ``x[j] > t ->
right``, leaves hold class labels, and a node may have several parents. It is grown by Algorithm 2
of the paper: ``N1`` merge phases of ``N2`` grow rounds. In a grow round every node (each after all
of its parents) gets a *substitute* micro CART fitted on its samples (a leaf: their labels; an
internal node: its *sensitive* samples, whose prediction depends on the branch taken, relabelled 0 =
left / 1 = right), with sample-weighted cost-complexity pruning ``ccp_alpha_i = C * W / W_i``. After
the ``N2`` rounds dead internal nodes are bypassed (PRUNE) and every substitute is inlined into the
graph (MERGE), so several parents share a child. ``N1 = 1`` is CART with cost-complexity pruning.

How it is computed (grow / prune / merge: :mod:`.builder`; the fitted graph: :mod:`.graph`):

* micro trees (gini) are grown and exactly pruned by numba kernels (:mod:`.core`) on rank-coded
  features, equal to ``DecisionTreeClassifier(ccp_alpha=C_i)`` up to ties between equally good
  splits; the scikit-learn builder remains for other criteria and as the reference-exact debug path;
* the graph is flat integer arrays (:mod:`treebench.graph.flat`), routed by the compiled router
  of :mod:`treebench.methods._routing`; a micro tree is refitted only if its samples or targets
  changed;
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
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.graph.flat import compact
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    SizeMixin,
    StrOptions,
    _fit_context,
    combine_sizes,
    member_size,
    register,
)
from treebench.methods.tnt.builder import _core, _TnTBuilder, post_prune, tao_finetune
from treebench.methods.tnt.graph import _GraphClassifierMixin, _prepare

# ----------------------------------------------------------------------------- the estimator


def _n_threads(n_jobs):
    if n_jobs is None:
        return 1
    import os

    n = int(n_jobs)
    return max(1, (os.cpu_count() or 1) + 1 + n if n < 0 else n)


_TNT = (
    "Tree in Tree decision graph (Zhu & Shoaran 2021): micro CARTs grown in nodes and merged "
    "into a DAG"
)


@register("tnt", CLASSIFICATION, _TNT)
class TnTClassifier(_GraphClassifierMixin, ClassifierMixin, BaseEstimator):
    """Tree in Tree (TnT) decision graph classifier.

    Parameters
    ----------
    ccp_alpha : float
        The paper's C: cost-complexity penalty (per split, in units of the Gini impurity weighted by
        the training-weight fraction). Micro tree *i* uses ``ccp_alpha * W / W_i``.
    N1 : int
        Merge phases (paper: 2). ``N1 = 1`` is CART with cost-complexity pruning.
    N2 : int
        Grow rounds per merge phase (paper: 5; the reference code's default is 3).
    target_splits : int or None
        If set, search ``ccp_alpha`` (starting at ``ccp_alpha``) so that #S is close to this budget;
        the model closest to it is kept (``fit_info_`` records the search).
    search_step : {"bisect", "secant"}
        How the search moves C: ×4 steps until #S is bracketed, then bisection in log C; or secant
        steps on log #S against log C (slope 1 until two fits give one), kept inside the bracket.
    target_tol : float
        Relative tolerance on #S that stops the search early.
    max_search : int
        Maximum number of TnT fits in the search.
    finetune_passes : int
        TAO-style fine-tune passes after growing (0 = off). An approximation, see the module
        docstring.
    criterion, min_samples_leaf : micro-tree (``DecisionTreeClassifier``) settings.
    random_state : int, RandomState or None
        Seed of every micro tree (an int is used as is, as in the reference code).
    n_jobs : int or None
        Threads for the micro-tree fits of one grow wave (None = 1, -1 = all cores). The fitted
        graph does not depend on it.
    verbose : int
    """

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("grow rounds",)

    _parameter_constraints = {
        "ccp_alpha": [NON_NEGATIVE],
        "N1": [POSITIVE_INT],
        "N2": [POSITIVE_INT],
        "target_splits": [None, Interval(Real, 1, None, closed="left")],
        "target_tol": [NON_NEGATIVE],
        "max_search": [POSITIVE_INT],
        "search_step": [StrOptions({"bisect", "secant"})],
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
        search_step="bisect",
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
        self.search_step = search_step
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
        """Micro-tree backend.

        Numba (gini, default) or scikit-learn (other criteria; and the reference-exact path used by
        ``_reference_compat`` / ``_micro_backend = "sklearn"``, debug aids that are not
        hyperparameters).
        """
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
        """Grow the TnT decision graph on ``X, y`` (weighted by ``sample_weight``)."""
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
            else:
                hi = c
            if self.search_step == "secant":
                c = _secant_step(tried, target, lo, hi)
            elif nS >= target:
                c = c * 4.0 if hi is None else np.sqrt(lo * hi)
            else:
                c = c / 4.0 if lo is None else np.sqrt(lo * hi)
            nS = run(c)
        best = min(tried, key=lambda r: (abs(r[1] - target), r[0]))
        info = {
            "ccp_alpha_used": float(best[0]),
            "search_fits": len(tried),
            "target_splits": int(target),
        }
        return best[2], best[1], best[3], info


def _secant_step(tried, target, lo, hi):
    """Next C of a secant search.

    #S is about a power of C, so step along the line through the last two (log C, log #S) fits
    (slope -1 after the first), clipped to [-2, -0.5], and fall back to the bracket's log midpoint
    when the step leaves the bracket ``(lo, hi)``.
    """
    c1, n1 = tried[-1][0], max(tried[-1][1], 1)
    slope = -1.0
    if len(tried) > 1:
        c0, n0 = tried[-2][0], max(tried[-2][1], 1)
        if c0 != c1 and n0 != n1:
            slope = float(np.clip(np.log(n1 / n0) / np.log(c1 / c0), -2.0, -0.5))
    c = c1 * (target / n1) ** (1.0 / slope)
    if lo is not None and hi is not None and not lo < c < hi:
        c = np.sqrt(lo * hi)
    return float(c)


# ----------------------------------------------------------------------------- ensembles


class _TnTEnsemble(SizeMixin, ClassifierMixin, BaseEstimator):
    """Shared code: a scikit-learn ensemble (``ensemble_``) of TnT graphs built in ``fit``."""

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("grow rounds",)

    _parameter_constraints = {
        **{
            k: TnTClassifier._parameter_constraints[k]
            for k in ("ccp_alpha", "N1", "N2", "target_splits", "search_step", "finetune_passes")
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
            search_step=self.search_step,
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
            "member_search_fits": int(sum(e.fit_info_["search_fits"] for e in self.estimators_)),
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
        """Return the ensemble of TnT graphs as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.tnt.export import tnt_graph

        return tnt_graph(self)


@register(
    "tnt_bagging",
    CLASSIFICATION,
    "TnT-bagging: BaggingClassifier (bootstrap, all features) of TnT graphs",
)
class TnTBaggingClassifier(_TnTEnsemble):
    """Bagging of TnT graphs (scikit-learn ``BaggingClassifier``): bootstrap rows, all features."""

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
        search_step="bisect",
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
        self.search_step = search_step
        self.finetune_passes = finetune_passes
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self, n_samples):
        # max_samples=None means n bootstrap rows whatever the weights. Newer scikit-learn draws
        # rows by weight and reads a float max_samples as a fraction of the weight sum (1.0 would
        # give AdaBoost's weights, sum 1, a one-row bootstrap); an int is a row count in every
        # version and, unweighted, draws the same rows as 1.0 did.
        return BaggingClassifier(
            estimator=self._base(),
            n_estimators=self.n_estimators,
            max_samples=n_samples if self.max_samples is None else self.max_samples,
            random_state=self.random_state,
            n_jobs=self.n_jobs,  # members in joblib worker processes (numba kernels hold the GIL)
        )


class _SearchFromPreviousAdaBoost(AdaBoostClassifier):
    """SAMME AdaBoost whose member *k* starts its C search at the C member *k* - 1 ended at.

    Successive members see slowly changing weights, so the previous C is usually within the #S
    tolerance at once; a search started at a fixed C repeats the same walk (several TnT fits) for
    every member.
    """

    def _make_estimator(self, append=True, random_state=None):
        est = super()._make_estimator(append=append, random_state=random_state)
        fitted = self.estimators_[:-1] if append else self.estimators_
        if fitted:
            est.set_params(ccp_alpha=fitted[-1].fit_info_["ccp_alpha_used"])
        return est


@register("tnt_adaboost", CLASSIFICATION, "TnT-AdaBoost: AdaBoostClassifier (SAMME) of TnT graphs")
class TnTAdaBoostClassifier(_TnTEnsemble):
    """AdaBoost (scikit-learn ``AdaBoostClassifier``, SAMME) of TnT graphs.

    Parameters
    ----------
    search_start : {"ccp_alpha", "previous"}
        With ``target_splits``: every member searches C from ``ccp_alpha``, or each member after the
        first from the C the previous member ended at (fewer TnT fits, above all with
        ``search_step="secant"``; every member still meets ``target_splits`` within the same
        tolerance).
    The others as for :class:`TnTClassifier` and scikit-learn's ``AdaBoostClassifier``.
    """

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "AdaBoost's normalised weights are not counts; weighted and repeated fits agree up to "
            "rounding, which can break ties between splits differently (as for AdaBoostClassifier)"
        ),
    }

    _parameter_constraints = {
        **_TnTEnsemble._parameter_constraints,
        "learning_rate": [POSITIVE],
        "search_start": [StrOptions({"ccp_alpha", "previous"})],
    }

    def __init__(
        self,
        n_estimators=10,
        ccp_alpha=1e-4,
        N1=2,
        N2=5,
        target_splits=None,
        search_step="bisect",
        finetune_passes=0,
        learning_rate=1.0,
        search_start="ccp_alpha",
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.ccp_alpha = ccp_alpha
        self.N1 = N1
        self.N2 = N2
        self.target_splits = target_splits
        self.search_step = search_step
        self.finetune_passes = finetune_passes
        self.learning_rate = learning_rate
        self.search_start = search_start
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self, n_samples):
        boost = (
            _SearchFromPreviousAdaBoost if self.search_start == "previous" else AdaBoostClassifier
        )
        return boost(
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

    Objective: weighted Gini impurity of the leaves (in weight-fraction units) + ``C`` per leaf (for
    a tree, per split). Splitting leaf *l* gains ``R(l) - R(l_L) - R(l_R) - C`` (best axis-aligned
    split, a depth-1 CART); merging leaves *i*, *j* (one leaf with both sets of parents) gains ``C -
    (R(l_i + l_j) - R(l_i) - R(l_j))``. Each iteration applies the single best operation while its
    gain is positive, at most ``max_iter`` times. Nodes whose two branches end up on the same leaf
    are bypassed at the end.

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
        """Fit the ensemble of TnT graphs on ``X, y`` (weighted by ``sample_weight``)."""
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
