"""One-Stage Tree (Xu et al., Machine Learning 2022).

An oblique hard tree built and pruned in one stage.

Model: a complete depth-``max_depth`` binary tree in level order (:mod:`.core`). Every potential
split node ``i`` has a router with two linear logits on ``[x; 1]`` (go left iff ``(w_i0 - w_i1)^T
[x; 1] > 0``) and an architecture switch ``gamma_i in [0, 1]`` (``gamma_bar_i = 1[gamma_i >= 0.5]``:
1 = split, 0 = pruned); every node holds a value ``v_i`` (class distribution or regression target)
used when the node acts as a leaf.

Training is the paper's alternating bilevel scheme (Alg. 1, Eqs. 9-17), one step per minibatch: lazy
proximal step on gamma, a router step under straight-through Gumbel-softmax path samples,
closed-form node values (Eq. 17) and a gamma step on the validation rows (``gamma_gradient``: the
tangent at ``gamma_bar`` or, by default, the ``'flip'`` secant, which lets a pruned node bud again).
The two ablations of the paper (Joint Tree, Gumbel Tree) differ only in this step and are strategy
objects (:mod:`.strategies`). All gradients are closed-form numpy (the model is a hard tree, so a
step touches O(batch * nodes) numbers); tests check them against torch autograd.

Early stopping monitors the validation loss and restores the best epoch (epoch cap / patience:
200 / 15 for classification as in the paper, 400 / 70 for regression, ``patience=None``).
``patience="auto"`` (the default) counts the patience in minibatch steps instead:
``auto_patience(n_batches, paper)`` epochs, at least the paper's, so that a small training part (few
batches per epoch, a noisy validation loss) is not stopped after a few hundred steps; the value used
is ``fit_info_["patience"]``. At the end of ``fit`` splits
that cannot change any prediction are turned into leaves, so ``size_report`` counts effective splits
(``fit_info_`` also reports the gamma-only count).

Settings the paper leaves open or where it is not followed, and the evidence for each choice:
``docs/methods/onestage.md``.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods import checkpoint
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    REGRESSION,
    UNIT,
    Interval,
    InvalidParameterError,
    SizeMixin,
    StrOptions,
    _fit_context,
    register,
    validate_sample_weight,
)
from treebench.methods.onestage.core import (
    GammaPass,
    LeafSums,
    adam_pair,
    center_router_biases,
    collapse_neutral_splits,
    compiled_logistic_exact,
    n_internal,
    node_values,
    reachable,
    route_paths,
    router_backward,
    router_rows,
    stop_nodes,
    stop_positions,
)
from treebench.methods.onestage.strategies import (
    BilevelSearch,
    FitState,
    GumbelArchitecture,
    JointRelaxation,
    wdiff,
)
from treebench.methods.progress import report

#: patience="auto": minibatch steps without a better validation loss before the fit stops
#: (the paper's 15 epochs of its median set, ~900 training rows in batches of 32; see
#: docs/methods/onestage.md)
AUTO_PATIENCE_STEPS = 1000
_NO_LOGISTIC = np.empty((0, 0))  # router_backward evaluates the logistic itself
_NO_WD = np.empty((0, 0), dtype=np.float32)  # adam_pair writes no logit differences


def auto_patience(n_batches, paper):
    """Return the ``patience="auto"`` rule.

    Ceil(AUTO_PATIENCE_STEPS / n_batches) epochs, at least ``paper``.
    """
    return int(max(paper, math.ceil(AUTO_PATIENCE_STEPS / max(n_batches, 1))))


# ----------------------------------------------------------------------------- estimator


class _OneStageBase(SizeMixin, BaseEstimator):
    """Shared implementation; see the module docstring.

    Subclasses fix the task and the architecture search (``_strategy``).
    """

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("epochs",)

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch Adam, Gumbel noise per row and a validation part drawn by row: weights "
            "equal repeats in distribution only (tests/methods/test_sample_weight.py)"
        ),
    }
    _strategy = BilevelSearch()  # how the architecture is searched: strategies.py
    _parameter_constraints = {
        "max_depth": [Interval(Integral, 1, 16, closed="both")],
        "learning_rate": [POSITIVE],
        "batch_size": [POSITIVE_INT],
        "max_epochs": [None, POSITIVE_INT],
        "patience": [None, POSITIVE_INT, StrOptions({"auto"})],
        "gamma_learning_rate": [None, POSITIVE],
        "gamma_optimizer": [StrOptions({"adam", "sgd"})],
        "gamma_l1": [NON_NEGATIVE],
        "gamma_init": [None, UNIT],
        "gamma_gradient": [StrOptions({"tangent", "flip"})],
        "temperature": [POSITIVE],
        "prob_floor": [POSITIVE],
        "router_init": [StrOptions({"default", "data"})],
        "step_rows": [StrOptions({"all", "batch"})],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "standardize": "no_validation",
        "validation_fraction": "no_validation",
    }
    _task = CLASSIFICATION

    def __init__(
        self,
        max_depth=6,
        learning_rate=0.01,
        batch_size=32,
        max_epochs=None,
        patience="auto",
        validation_fraction=0.25,
        gamma_learning_rate=None,
        gamma_optimizer="sgd",
        gamma_l1=0.0,
        gamma_init=None,
        gamma_gradient="flip",
        temperature=1.0,
        prob_floor=0.5,
        standardize=True,
        router_init="default",
        step_rows="all",
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.gamma_learning_rate = gamma_learning_rate
        self.gamma_optimizer = gamma_optimizer
        self.gamma_l1 = gamma_l1
        self.gamma_init = gamma_init
        self.gamma_gradient = gamma_gradient
        self.temperature = temperature
        self.prob_floor = prob_floor
        self.standardize = standardize
        self.router_init = router_init
        self.step_rows = step_rows
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        """Check across parameters (single values: ``_parameter_constraints``)."""
        vf = self.validation_fraction
        if self._strategy.holds_out(self) and not 0.0 < vf < 1.0:
            raise InvalidParameterError(f"validation_fraction must be in (0, 1), got {vf!r}")

    def _joint_holdout(self):
        """Joint Tree only.

        Hold ``validation_fraction`` out for early stopping (see the docstring).
        """
        return bool(getattr(self, "early_stopping_holdout", False))

    def _by_task(self, value, cast, clf, reg):
        """``cast(value)``, or the task's default when ``value`` is None."""
        if value is not None:
            return cast(value)
        return clf if self._task == CLASSIFICATION else reg

    def _patience(self, n_batches):
        """Early-stopping patience in epochs.

        ``None`` = 15 (paper) for classification, 70 for regression; ``"auto"``:
        :func:`auto_patience` of ``n_batches`` per epoch and those values.
        """
        if self.patience == "auto":
            return auto_patience(n_batches, self._by_task(None, int, 15, 70))
        return self._by_task(self.patience, int, 15, 70)

    def _gamma_step(self):
        """Step of the gamma update; ``None`` = 1.0 for classification, 0.1 for regression (SGD)."""
        if self.gamma_learning_rate is None and self.gamma_optimizer == "adam":
            return 0.01
        return self._by_task(self.gamma_learning_rate, float, 1.0, 0.1)

    def _gamma_init(self):
        """Return the initial gamma.

        ``None`` = 0.5 for classification (the authors' [0.5, 0.5]), 1.0 for regression.
        """
        return self._by_task(self.gamma_init, float, 0.5, 1.0)

    def _max_epochs(self):
        """Return the epoch cap.

        ``None`` = 200 (paper) for classification, 400 for regression (authors' scripts).
        """
        return self._by_task(self.max_epochs, int, 200, 400)

    # ------------------------------------------------------------------ targets
    # ``_encode_targets(y) -> (Y, t)`` (targets as an (n, k) matrix for node values, plus what the
    # loss needs) comes from the task part, _ClassifierPart or _RegressorPart, mixed in before this.
    def _loss_and_grad(self, f, t, w):
        """Per-row loss and d loss / d f for responses ``f`` (n,) of target codes ``t``."""
        if self._task == CLASSIFICATION:
            fc = np.maximum(f, self.prob_floor)  # clamp; gradient passes straight through the clamp
            return -np.log(fc) * w, -w / fc
        r = f - t
        return r * r * w, 2.0 * r * w

    def _resp(self, V, nodes, t):
        """Loss-relevant response of ``nodes`` (any shape, rows first) for row targets ``t``."""
        if self._task == CLASSIFICATION:
            k = V.shape[1]
            return V.ravel()[nodes * k + t.reshape((-1,) + (1,) * (nodes.ndim - 1))]
        return V[:, 0][nodes]

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=self._task == REGRESSION)
        sw = validate_sample_weight(sample_weight, X)
        if sw is None:
            sw = np.ones(len(y))
        Y, t = self._encode_targets(y)
        rng = check_random_state(self.random_state)
        D = int(self.max_depth)
        nth = int(self.n_jobs) if self.n_jobs and self.n_jobs > 0 else 1
        self._nth = nth
        n_int = n_internal(D)

        if self.standardize:
            self.x_mean_ = X.mean(axis=0)
            sd = X.std(axis=0)
            self.x_scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        Xa = np.hstack([(X - self.x_mean_) / self.x_scale_, np.ones((len(X), 1))]).astype(
            np.float32
        )

        idx = np.arange(len(y))
        strategy = self._strategy
        all_rows = not strategy.holds_out(self)
        if all_rows:
            tr, va = idx, idx
        else:
            strat = t if self._task == CLASSIFICATION and np.bincount(t).min() >= 2 else None
            tr, va = train_test_split(
                idx, test_size=self.validation_fraction, random_state=rng, stratify=strat
            )
        Xtr, Ytr, ttr, wtr = Xa[tr], Y[tr], t[tr], sw[tr]
        codes = ttr if self._task == CLASSIFICATION else None
        Xva, tva, wva = Xa[va], t[va], sw[va]
        if not wtr.any():
            raise ValueError(
                "sample_weight: all weights of the training part are zero "
                "(the validation part holds every positive weight)"
            )
        wtr = wtr / max(wtr.mean(), 1e-12)
        wva = wva / max(wva.mean(), 1e-12)
        n_tr, dp1 = Xtr.shape

        # routers: two PyTorch-Linear-initialised outputs per split node, stored as (d+1, n_int, 2)
        bound = 1.0 / np.sqrt(dp1 - 1) if dp1 > 1 else 1.0
        W = rng.uniform(-bound, bound, size=(dp1, n_int, 2))
        if self.router_init == "data":
            center_router_biases(W, Xtr[wtr > 0], D)
        gamma = np.full(n_int, self._gamma_init())
        st = FitState(
            D=D,
            n_int=n_int,
            nth=nth,
            tau=float(self.temperature),
            lr=float(self.learning_rate),
            glr=self._gamma_step(),
            Xtr=Xtr,
            Ytr=Ytr,
            ttr=ttr,
            wtr=wtr,
            codes=codes,
            Xva=Xva,
            tva=tva,
            wva=wva,
            W=W,
            gamma=gamma,
            Wd=None,
            V=None,
            adam={"m": np.zeros(W.shape[:2]), "v": np.zeros(W.shape[:2]), "t": 0},
            gadam={"m": np.zeros(n_int), "v": np.zeros(n_int), "t": 0},
        )
        batch_rows = self.step_rows == "batch"
        if batch_rows:
            st.leaves = LeafSums(Ytr, wtr, D, codes)
        st.refresh_values()

        def disc_loss(Xs, ts, ws, Wd, V, keep):
            paths = route_paths(Xs, Wd, D)
            s1, _ = stop_positions(keep[paths[:, :D]])
            f = self._resp(V, paths[np.arange(len(ts)), s1], ts)
            return float(self._loss_and_grad(f, ts, ws)[0].mean())

        mon = (Xtr, ttr, wtr) if all_rows else (Xva, tva, wva)
        best = (np.inf, st.W.copy(), st.gamma.copy(), st.V.copy(), 0)
        bad = 0
        history = []
        epoch = 0
        bs = int(self.batch_size)
        patience = self._patience(-(-n_tr // bs))
        ck = checkpoint.current()
        ck_id = self._checkpoint_identity(X, y, sw) if ck is not None else None
        state = ck.load(ck_id) if ck is not None else None
        start = 1
        if state is not None:  # resume after the saved epoch: everything the loop reads or changes
            for name in ("W", "gamma", "Wd", "V", "adam", "gadam"):
                setattr(st, name, state[name])
            st.WdT = router_rows(st.Wd)
            rng.set_state(state["rng"])
            best, bad, history = state["best"], state["bad"], list(state["history"])
            start = state["epoch"] + 1
            if batch_rows:  # the saved values are exact (refreshed at the epoch's end)
                st.refresh_values()
        for epoch in range(start, self._max_epochs() + 1):
            order = rng.permutation(n_tr)
            st.noise = rng.logistic(size=(n_tr, n_int))  # g0 - g1 for Gumbel(0,1) g0, g1
            arch_noise = strategy.epoch_noise(rng, -(-n_tr // bs), n_int)
            if batch_rows:
                st.vorder = rng.permutation(len(va))
            for step, s in enumerate(range(0, n_tr, bs)):
                strategy.step(self, st, order[s : s + bs], step, arch_noise)
            if batch_rows:  # every row routed again: exact values for the epoch's loss
                st.refresh_values()
            report("epochs", epoch, self._max_epochs())
            keep = st.gamma >= 0.5
            loss = strategy.monitored_loss(self, st, mon, keep, disc_loss)
            n_kept = int(reachable(keep, D).sum())
            if self.verbose:
                tr_loss = disc_loss(Xtr, ttr, wtr, st.Wd, st.V, keep)
                history.append((epoch, tr_loss, loss, n_kept))
                print(
                    f"epoch {epoch}: train loss {tr_loss:.5f}, monitored loss {loss:.5f}, "
                    f"splits kept {n_kept}"
                )
            if loss < best[0] - 1e-12:
                best = (loss, st.W.copy(), st.gamma.copy(), st.V.copy(), epoch)
                bad = 0
            else:
                bad += 1
                if bad >= patience:
                    break
            if ck is not None and epoch < self._max_epochs() and ck.due():
                ck.save(
                    {
                        **{n: getattr(st, n) for n in ("W", "gamma", "Wd", "V", "adam", "gadam")},
                        "rng": rng.get_state(),
                        "best": best,
                        "bad": bad,
                        "history": history,
                        "epoch": epoch,
                    },
                    ck_id,
                    at={"epochs": int(epoch)},
                )

        _, W, gamma, V, best_epoch = best
        self.W_ = W
        self.gamma_ = gamma
        keep_gamma = gamma >= 0.5  # final prox_C1
        Wd = wdiff(W)
        self.Wdiff_ = Wd
        paths = route_paths(Xtr, Wd, D, n_threads=nth)
        self.values_ = node_values(paths[:, D], Ytr, wtr, D, codes)
        reach_gamma = reachable(keep_gamma, D)
        self.keep_ = collapse_neutral_splits(paths, wtr > 0, keep_gamma, D)
        reach = reachable(self.keep_, D)
        self.fit_info_ = {
            "epochs": epoch,
            "best_epoch": best_epoch,
            "patience": patience,
            "best_monitored_loss": float(best[0]),
            "n_train_part": int(n_tr),
            "n_val_part": 0 if all_rows else int(len(va)),
            "internal_kept": int(reach.sum()),
            "internal_total": int(n_int),
            "frac_pruned": float(1.0 - reach.sum() / n_int),
            "internal_kept_gamma": int(reach_gamma.sum()),
            "frac_pruned_gamma": float(1.0 - reach_gamma.sum() / n_int),
        }
        self.depth_ = D
        if self.verbose:
            self.history_ = history
        return self

    def _checkpoint_identity(self, X, y, sw) -> dict:
        """:func:`checkpoint.identity` of this fit on the data as fitted."""
        return checkpoint.identity(self, X, np.asarray(y), sw)

    @staticmethod
    def _adam(p, g, st, lr, b1, b2, eps):
        st["m"] *= b1
        st["m"] += (1 - b1) * g
        st["v"] *= b2
        st["v"] += (1 - b2) * (g * g)
        t = st["t"]
        mhat = st["m"] / (1 - b1**t)
        vhat = st["v"] / (1 - b2**t)
        p -= lr * mhat / (np.sqrt(vhat) + eps)

    @staticmethod
    def _adam_routers(W, g0, st, lr, b1, b2, eps, out=None):
        """Adam on the routers ``W`` (d+1, n_int, 2) from ``g0``, the gradient of the first logits.

        The second logits' gradient is always ``-g0``, so their moments are the first ones negated
        (``m``) and equal (``v``) and their step is the first one's negated, exactly (IEEE rounding
        is symmetric in sign): the same numbers as :meth:`_adam` on the stacked gradient, at half
        the cost, in one compiled pass (:func:`~.core.adam_pair`). ``st`` holds the first logits'
        moments. ``out=(Wd, WdT)`` also receives the new logit differences (:func:`wdiff` and its
        transpose).
        """
        t = st["t"]
        for k in ("m", "v"):  # updated in place through flat views
            if not st[k].flags.c_contiguous:
                st[k] = np.ascontiguousarray(st[k])
        Wd, WdT = (_NO_WD, _NO_WD) if out is None else out
        adam_pair()(W, g0, st["m"], st["v"], lr, b1, b2, eps, 1 - b1**t, 1 - b2**t, Wd, WdT)

    def _router_grad(self, Xb, tb, wb, noise, W, V, keep, tau, D, with_gamma=False, Wd=None):
        """Return the minibatch loss's gradient w.r.t. the routers' first logits, (d+1, n_int).

        Under one Gumbel-softmax path sample; the second logits' gradient is its negation.

        Straight-through: the forward pass follows the hard sample; the backward pass differentiates
        Eq. (2) with the soft Gumbel-softmax weights ``y0 = sigmoid((z + g0 - g1) / tau)``.
        ``keep`` is the mixing weight of Eq. (2): the discrete ``gamma_bar`` (bool) or, for the
        Joint Tree, the relaxed ``gamma`` in [0, 1]; ``with_gamma`` also returns the gradient with
        respect to it, ``delta_i * (f_children_i - v_i)`` summed over the minibatch.
        """
        B = len(tb)
        n_int = keep.size
        mix = keep.astype(np.float64)
        if Wd is None:  # the routers' logit differences (the fit keeps them as wdiff(W))
            Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
        Z = Xb @ Wd  # (B, n_int) logit differences
        cls = self._task == CLASSIFICATION
        y0 = _NO_LOGISTIC
        if not compiled_logistic_exact():  # scipy's logistic for the kernel (the same numbers)
            y0 = expit((Z + noise) / tau)
        # compiled: perturbed logits, hard responses bottom up, reach top down, gz and the gamma
        # summands per row
        SUB, gz = np.empty((B, n_int)), np.empty((B, n_int))
        t = np.asarray(tb, dtype=np.float64)
        floor = float(self.prob_floor) if cls else 0.0
        router_backward()(Z, noise, V, t, wb, mix, D, cls, floor, tau, y0, SUB, gz)
        g0 = Xb.T.astype(np.float64) @ gz
        if not with_gamma:
            return g0
        return g0, SUB.sum(axis=0)

    def _relaxed_loss(self, Xs, ts, ws, W, V, gamma, D):
        """Mean loss of the relaxed model (Eq. 2 with continuous ``gamma``, argmax routing)."""
        Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
        right = Xs @ Wd <= 0  # argmax routing (Eq. 18)
        n = len(ts)
        Vb = V.T[ts] if self._task == CLASSIFICATION else np.broadcast_to(V[:, 0], (n, V.shape[0]))
        R = np.array(Vb, dtype=np.float64)
        for lvl in range(D - 1, -1, -1):
            ids = np.arange(2**lvl - 1, 2 ** (lvl + 1) - 1)
            sub = np.take_along_axis(R, 2 * ids + 1 + right[:, ids], axis=1)
            R[:, ids] = gamma[ids] * sub + (1.0 - gamma[ids]) * Vb[:, ids]
        return float(self._loss_and_grad(R[:, 0], ts, ws)[0].mean())

    def _gamma_grad(self, Xs, ts, ws, Wd, V, keep, D, n_int, WdT=None):
        """Gradient of the mean loss w.r.t. the discrete gamma_bar (Eq. 15), applied to gamma.

        ``gamma_gradient='tangent'``: node i on a row's deterministic path gets
        ``dl/df * (f_children_i - v_i)`` while the row still reaches it (``delta_i``): for the split
        nodes above the stop, ``f_children`` is the prediction; for the pruned node where the row
        stops, it is the response of its children's subtree.
        ``gamma_gradient='flip'``: node i gets ``l(f_children_i) - l(v_i)``, the change of the row's
        loss between gamma_bar_i = 1 and 0 (the slope of the secant over [0, 1]; for MSE exactly the
        relaxed derivative at gamma_i = 1/2, the prox_C1 threshold).
        """
        return self._gamma_pass(Xs, ts, ws, D)(keep, V, Wd, WdT)[:n_int]

    def _gamma_pass(self, Xs, ts, ws, D):
        """:meth:`_gamma_grad` on the rows ``Xs`` as a prepared :class:`~.core.GammaPass`."""
        cls = self._task == CLASSIFICATION
        floor = float(self.prob_floor) if cls else 0.0
        return GammaPass(Xs, ts, ws, D, cls, floor, self.gamma_gradient == "flip")

    # ------------------------------------------------------------------ inference
    def _transform(self, X):
        check_is_fitted(self, "values_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return np.hstack([(X - self.x_mean_) / self.x_scale_, np.ones((len(X), 1))]).astype(
            np.float32
        )

    def _stops(self, X):
        check_is_fitted(self, "values_")
        X = validate_data(self, X, dtype=(np.float64, np.float32), reset=False)
        return stop_nodes(X, self.x_mean_, self.x_scale_, self.Wdiff_, self.keep_, self.depth_)

    def apply(self, X):
        """Index (level order) of the node where each row stops (deterministic routing)."""
        return self._stops(X)[0]

    def size_report(self, X):
        reach = reachable(self.keep_, self.depth_)
        n_splits = int(reach.sum())
        if n_splits:
            lvl = np.floor(np.log2(np.flatnonzero(reach) + 1)).astype(int)
            depth = int(lvl.max()) + 1
        else:
            depth = 0
        _, s1 = self._stops(X)
        md = float(s1.mean()) if len(s1) else 0.0
        return {
            "n_trees": 1,
            "n_splits": n_splits,
            "n_leaves": n_splits + 1,
            "depth": depth,
            "mean_depth": md,
            "split_evals": md,
        }

    def to_graph(self):
        """Return the pruned oblique tree as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.onestage.export import onestage_graph

        return onestage_graph(self)


class _ClassifierPart(ClassifierMixin):
    _task = CLASSIFICATION

    def _encode_targets(self, y):
        check_classification_targets(y)
        self.classes_, t = np.unique(y, return_inverse=True)
        Y = np.zeros((len(t), len(self.classes_)))
        Y[np.arange(len(t)), t] = 1.0
        return Y, t

    def predict_proba(self, X):
        node = self.apply(X)  # first: raises NotFittedError before values_ is read
        return self.values_[node]

    def predict(self, X):
        node = self.apply(X)  # the class of each node's value, not an (n, classes) copy
        return self.classes_[np.argmax(self.values_, axis=1)[node]]


class _RegressorPart(RegressorMixin):
    _task = REGRESSION

    def _encode_targets(self, y):
        y = np.asarray(y, dtype=np.float64).ravel()
        self.y_mean_ = float(y.mean())
        sd = float(y.std())
        self.y_scale_ = sd if sd > 0 else 1.0
        z = (y - self.y_mean_) / self.y_scale_
        return z[:, None], z

    def predict(self, X):
        node = self.apply(X)  # first: raises NotFittedError before values_ is read
        return self.values_[node, 0] * self.y_scale_ + self.y_mean_


_DESC = (
    "One-Stage Tree (Xu et al. 2022): oblique hard tree, Gumbel-softmax paths, closed-form "
    "leaves, pruning by proximal steps on a validation split"
)


@register("onestage", CLASSIFICATION, _DESC)
class OneStageClassifier(_ClassifierPart, _OneStageBase):
    """One-Stage Tree classifier (see module docstring)."""


@register("onestage", REGRESSION)
class OneStageRegressor(_RegressorPart, _OneStageBase):
    """One-Stage Tree regressor (see module docstring)."""


_JOINT = (
    "One-Stage ablation 'Joint Tree' (Eq. 8): relaxed gamma trained with the routers on the "
    "training loss; the validation part only early-stops"
)


class _JointPart:
    """Joint Tree: the base parameters plus ``early_stopping_holdout`` (see the module docstring).

    ``early_stopping_holdout=True``: ``validation_fraction`` of the rows is held out and used only
    for early stopping (the same train/validation parts as One-Stage for the same ``random_state``);
    ``False``: every row trains and early stopping monitors the training loss.
    ``gamma_learning_rate``, ``gamma_optimizer`` and ``gamma_gradient`` do not apply.
    """

    _strategy = JointRelaxation()

    _parameter_constraints = {
        **_OneStageBase._parameter_constraints,
        "early_stopping_holdout": ["boolean"],
    }

    def __init__(
        self,
        max_depth=6,
        learning_rate=0.01,
        batch_size=32,
        max_epochs=None,
        patience="auto",
        validation_fraction=0.25,
        gamma_learning_rate=None,
        gamma_optimizer="sgd",
        gamma_l1=0.0,
        gamma_init=None,
        gamma_gradient="flip",
        temperature=1.0,
        prob_floor=0.5,
        standardize=True,
        router_init="default",
        step_rows="all",
        early_stopping_holdout=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        super().__init__(
            max_depth=max_depth,
            learning_rate=learning_rate,
            batch_size=batch_size,
            max_epochs=max_epochs,
            patience=patience,
            validation_fraction=validation_fraction,
            gamma_learning_rate=gamma_learning_rate,
            gamma_optimizer=gamma_optimizer,
            gamma_l1=gamma_l1,
            gamma_init=gamma_init,
            gamma_gradient=gamma_gradient,
            temperature=temperature,
            prob_floor=prob_floor,
            standardize=standardize,
            router_init=router_init,
            step_rows=step_rows,
            random_state=random_state,
            n_jobs=n_jobs,
            verbose=verbose,
        )
        self.early_stopping_holdout = early_stopping_holdout


@register("onestage_joint", CLASSIFICATION, _JOINT)
class OneStageJointClassifier(_JointPart, OneStageClassifier):
    """Joint Tree ablation (classification)."""


@register("onestage_joint", REGRESSION)
class OneStageJointRegressor(_JointPart, OneStageRegressor):
    """Joint Tree ablation (regression)."""


_GUMBEL = "One-Stage ablation 'Gumbel Tree': architecture sampled by Gumbel-softmax each step"


@register("onestage_gumbel", CLASSIFICATION, _GUMBEL)
class OneStageGumbelClassifier(OneStageClassifier):
    """Gumbel Tree ablation (classification)."""

    _strategy = GumbelArchitecture()


@register("onestage_gumbel", REGRESSION)
class OneStageGumbelRegressor(OneStageRegressor):
    """Gumbel Tree ablation (regression)."""

    _strategy = GumbelArchitecture()
