"""E2EDT / E2EDF: end-to-end learned deterministic oblique decision trees and forests.

Hehn, Kooij & Hamprecht, "End-to-End Learning of Decision Trees and Forests", IJCV 2020 (extends
Hehn & Hamprecht, GCPR 2018).  A probabilistic oblique tree (right with prob. sigma(gamma (w.x +
b))) is grown greedily (one stump per node, trained on its deterministic data subset), then
fine-tuned end to end with the paper's EM scheme (E-step once per epoch, closed-form leaves, Adam on
the splits, steepness gamma annealed by ``steepness_inc`` per epoch and carried from Greedy into
Finetune).  At test time every node is a step function: one root-to-leaf path per sample.

The torch machinery lives in :mod:`treebench.methods.e2edt.core` (imported inside ``fit``).
"""

from __future__ import annotations

import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import RealNotInt
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods import checkpoint
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    InvalidParameterError,
    SizeMixin,
    StrOptions,
    _fit_context,
    import_torch,
    register,
    torch_generator,
    validate_sample_weight,
)

INFERENCE = ("deterministic", "root_hard", "probabilistic")
SPLIT_FEATURES = ("linear", "cnn")
GAINS = ("reference", "weighted")
STANDARDIZE = (True, False, "global", "unit_range")
#: batch_size="auto": Adam steps per epoch of the root split (the paper's 60 000 MNIST rows in
#: batches of 1000 give it 60), never a batch below AUTO_MIN_BATCH rows nor above the paper's 1000
AUTO_ROOT_STEPS = 64
AUTO_MIN_BATCH = 32
AUTO_MAX_BATCH = 1000
#: ... and a greedy stump on fewer rows gets about AUTO_NODE_STEPS steps per epoch: its batch is
#: ceil(rows / AUTO_NODE_STEPS) within [AUTO_MIN_NODE_BATCH, that batch] (deep nodes hold few rows)
AUTO_NODE_STEPS = 16
AUTO_MIN_NODE_BATCH = 4


#: cells of the [rows, leaves] tensors one Finetune group of trees may hold (2**25: 128 MiB float32)
_GROUP_CELLS = 2**25

#: what the Finetune loop changes, saved after each group (besides the group index, generator)
_FINETUNE_STATE = ("new_params", "gamma", "pi", "kept")


def auto_batch_size(n_rows):
    """Return the ``batch_size="auto"`` rule.

    Ceil(n / AUTO_ROOT_STEPS), clipped to [AUTO_MIN_BATCH, AUTO_MAX_BATCH].

    A split's stump trains on its own node's rows only, so with a fixed batch a small dataset gives
    every split one or two Adam steps per epoch (docs/methods/e2edt.md, "batch_size='auto'").
    """
    return int(min(AUTO_MAX_BATCH, max(AUTO_MIN_BATCH, math.ceil(n_rows / AUTO_ROOT_STEPS))))


class _E2EDBase(ClassifierMixin, SizeMixin, BaseEstimator):
    """Shared fit/predict of E2EDT (one tree) and E2EDF (a forest)."""

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("greedy levels", "finetune epochs")

    requires_torch = True
    _forest = False
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch EM/Adam over rows: repeated rows change the batches, so weights equal "
            "repeats in distribution only (tests/methods/test_sample_weight.py)"
        ),
    }

    # ------------------------------------------------------------------ validation
    _parameter_constraints = {
        "max_depth": [None, POSITIVE_INT],
        "max_leaves": [None, Interval(Integral, 2, None, closed="left")],
        "epochs": [POSITIVE_INT],
        "finetune_epochs": [None, NON_NEGATIVE_INT],
        "steepness_inc": [NON_NEGATIVE],
        "initial_steepness": [POSITIVE],
        "batch_size": [POSITIVE_INT, StrOptions({"auto"})],
        "learning_rate": [POSITIVE],
        "weight_decay": [NON_NEGATIVE],
        "max_attempts": [POSITIVE_INT],
        "inference": [StrOptions(set(INFERENCE))],
        "split_features": [StrOptions(set(SPLIT_FEATURES))],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "spatial_reg": [NON_NEGATIVE],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "image_shape": "no_validation",
        "keep_greedy": "no_validation",
        "standardize": "no_validation",
    }

    def _check_params(self, n_features):
        """Check across parameters and against the data.

        Single values: ``_parameter_constraints``.
        """
        if self.max_depth is None and self.max_leaves is None:
            raise InvalidParameterError("max_depth and max_leaves cannot both be None")
        needs_image = (
            self.split_features == "cnn" or self.spatial_reg > 0 or self._patch() is not None
        )
        if needs_image:
            shape = self._image_hw()
            if shape is None or shape[0] * shape[1] != n_features:
                raise InvalidParameterError(
                    f"image_shape must give (height, width) with height*width = {n_features} "
                    f"features for split_features='cnn', spatial_reg > 0 or patch_size, "
                    f"got {self.image_shape}"
                )

    def _image_hw(self):
        if self.image_shape is None:
            return None
        s = tuple(int(v) for v in self.image_shape)
        if len(s) == 3 and s[0] == 1:
            s = s[1:]
        return s if len(s) == 2 else None

    def _patch(self):
        return None

    def _n_trees(self):
        return 1

    def _k_features(self, p):
        return None

    # ------------------------------------------------------------------ fit
    def _fit_scaler(self, X):
        """Standardise with training statistics (the paper standardises inputs on train).

        ``standardize=True``: per feature; ``"global"``: one mean and SD over all features (image
        inputs, like the reference's MNIST normalisation); ``"unit_range"``: one min and max over
        all features, mapped to [0, 1] (the reference's USPS input, pixel values in [0, 1] with no
        standardisation); ``False``: inputs used as given.
        """
        if self.standardize not in STANDARDIZE:
            raise ValueError(f"standardize must be one of {STANDARDIZE}, got {self.standardize!r}")
        if self.standardize == "global":
            self.scale_mean_, self.scale_sd_ = np.float32(X.mean()), np.float32(X.std() or 1.0)
        elif self.standardize == "unit_range":
            lo, hi = np.float32(X.min()), np.float32(X.max())
            self.scale_mean_, self.scale_sd_ = lo, np.float32(hi - lo if hi > lo else 1.0)
        elif self.standardize:
            sd = X.std(axis=0)
            self.scale_mean_, self.scale_sd_ = X.mean(axis=0), np.where(sd > 0, sd, 1.0)
        else:
            self.scale_mean_, self.scale_sd_ = np.float32(0.0), np.float32(1.0)
        return self._scale(X)

    def _scale(self, X):
        return ((X - self.scale_mean_) / self.scale_sd_).astype(np.float32, copy=False)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, dtype=np.float32)
        check_classification_targets(y)
        sample_weight = validate_sample_weight(sample_weight, X)
        X = self._fit_scaler(X)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        n, p = X.shape
        self._check_params(p)
        torch = import_torch(self.n_jobs)
        from treebench.methods.e2edt import core

        rs = check_random_state(self.random_state)
        gen = torch_generator(rs)
        X_val = y_val = None
        if self.validation_fraction > 0:  # hold out a stratified validation part (Sect. 3.1)
            from sklearn.model_selection import train_test_split

            idx_tr, idx_val = train_test_split(
                np.arange(n),
                test_size=self.validation_fraction,
                random_state=rs,
                stratify=y_enc if np.bincount(y_enc).min() >= 2 else None,
            )
            X_val, y_val = X[idx_val], y_enc[idx_val]
            X, y_enc = X[idx_tr], y_enc[idx_tr]
            if sample_weight is not None:
                sample_weight = sample_weight[idx_tr]
                if not np.any(sample_weight > 0):
                    raise ValueError(
                        "sample_weight: all weights of the training part are zero "
                        "(the validation part holds every positive weight)"
                    )
            n = len(idx_tr)
        batch_size = self._batch_size(n)
        Xt = torch.from_numpy(np.ascontiguousarray(X))
        yt = torch.from_numpy(y_enc.astype(np.int64))
        if sample_weight is None:
            swt = torch.ones(n)
        else:  # mean 1 over the rows: the loss keeps its scale (and the learning rate its meaning)
            sw = sample_weight
            swt = torch.from_numpy((sw * n / sw.sum()).astype(np.float32))
        K = len(self.classes_)
        hw = self._image_hw()
        lap = None
        if self.spatial_reg > 0:
            lap = torch.from_numpy(core.grid_laplacian(*hw))
        bank_cls = core.CNNBank if self.split_features == "cnn" else core.LinearBank
        k_feat, patch = self._k_features(p), self._patch()
        diag = bool(getattr(self, "diagonal_patch", False))

        def make_bank(m):
            return bank_cls.init(
                m, p, gen, k=k_feat, image_shape=hw, patch=patch, diagonal_patch=diag
            )

        log = print if self.verbose else None
        # a checkpoint (when the runner enables one) after each greedy level and each Finetune
        # group: a killed fit of a large forest resumes where it stopped
        ck = checkpoint.current()
        ck_id = checkpoint.identity(self, X, y_enc, sample_weight) if ck is not None else None
        state = ck.load(ck_id, allow=core.CHECKPOINT_CLASSES) if ck is not None else None
        phase = None if state is None else state["phase"]

        def save(phase, at, **st):
            if ck is not None and ck.due():
                ck.save({"phase": phase, **st}, ck_id, at=at)

        if phase == "finetune":  # greedy trees already grown
            bank, struct, gamma, pi, info, self.greedy_ = state["greedy"]
        else:
            t0 = time.perf_counter()
            grower = core.Grower(
                make_bank,
                Xt,
                yt,
                swt,
                K,
                n_trees=self._n_trees(),
                max_depth=None if self.max_depth is None else int(self.max_depth),
                max_leaves=None if self.max_leaves is None else int(self.max_leaves),
                epochs=int(self.epochs),
                dgamma=float(self.steepness_inc),
                gamma0=float(self.initial_steepness),
                batch_size=batch_size,
                node_steps=AUTO_NODE_STEPS if self.batch_size == "auto" else None,
                node_min=AUTO_MIN_NODE_BATCH,
                gen=gen,
                max_attempts=int(self.max_attempts),
                weight_decay=float(self.weight_decay),
                lap=lap,
                reg=float(self.spatial_reg),
                lr=float(self.learning_rate),
                log=log,
                gain=getattr(self, "best_first_gain", "reference"),
            )
            grower.grow(
                save=None
                if ck is None
                else lambda gs: save("greedy", {"greedy_splits": gs["n_split"]}, grower=gs),
                resume=state["grower"] if phase == "greedy" else None,
            )
            bank, struct, gamma, pi = grower.result()
            info = {
                "batch_size": batch_size,
                "greedy_seconds": time.perf_counter() - t0,
                "greedy_stumps_trained": grower.n_stumps_trained,
                "greedy_failed_nodes": grower.n_failed,
                "greedy_splits": struct.n_splits,
            }
            self.greedy_ = None
            if bank is not None:
                info["greedy_train_accuracy"] = self._acc(core, bank, struct, pi, Xt, y_enc)
                if X_val is not None:
                    info["greedy_val_accuracy"] = self._acc(
                        core, bank, struct, pi, torch.from_numpy(X_val), y_val
                    )
            if self.keep_greedy and bank is not None:
                self.greedy_ = (
                    bank.select(np.arange(len(bank))),
                    struct,
                    gamma.clone(),
                    pi.clone(),
                )
        greedy = (bank, struct, gamma, pi, info, self.greedy_)
        fe = self._finetune_epochs()
        t1 = time.perf_counter()
        if fe > 0 and bank is not None:
            bank, gamma, pi, finfo = self._finetune(
                core, torch, bank, struct, gamma, pi, Xt, yt, swt, K, fe, gen, lap, log, batch_size,
                save=None
                if ck is None
                else lambda at, **st: save("finetune", at, greedy=greedy, **st),
                resume=state if phase == "finetune" else None,
            )  # fmt: skip
            info.update(finfo)
        info["finetune_seconds"] = time.perf_counter() - t1
        info["finetune_epochs"] = fe
        info["gamma_mean"] = float(gamma.mean()) if len(gamma) else float("nan")
        if X_val is not None and bank is not None:
            info["val_accuracy"] = self._acc(core, bank, struct, pi, torch.from_numpy(X_val), y_val)
        self.bank_, self.struct_, self.gamma_, self.pi_ = bank, struct, gamma, pi
        self.fit_info_ = info
        return self

    @staticmethod
    def _acc(core, bank, struct, pi, Xt, y_enc):
        leaves = core.route_hard(bank, struct, Xt)
        pred = pi[leaves].mean(1).argmax(1).numpy()
        return float((pred == y_enc).mean())

    def _finetune_epochs(self):
        if self.finetune_epochs is not None:
            return int(self.finetune_epochs)
        return 3 * int(self.epochs) if self._forest else int(self.epochs)

    def _batch_size(self, n):
        """Return the minibatch size for ``n`` training rows.

        ``auto_batch_size(n)`` or the given int.
        """
        if self.batch_size == "auto":
            return auto_batch_size(n)
        if self.batch_size >= n:
            warnings.warn(
                f"batch_size={self.batch_size} >= {n} training rows: every split gets one Adam "
                "step "
                "per epoch (batch_size='auto' scales the batch with the data)",
                UserWarning,
                stacklevel=3,
            )
        return int(self.batch_size)

    def _finetune(
        self, core, torch, bank, struct, gamma, pi, Xt, yt, swt, K, fe, gen, lap, log, batch_size,
        save=None, resume=None,
    ):  # fmt: skip
        """Finetune every tree; trees are independent, so a forest is processed in groups.

        ``save(at, **state)`` is called after each group with what the loop has changed, and
        ``resume``, such a state, goes on with the next group.
        """
        lt = struct.leaf_tree
        per_tree = np.bincount(lt, minlength=struct.n_trees)
        # trees per group: bounds the [nodes, batch] level-pass tensors (and h) in memory; the
        # compiled kernels keep only h [N, leaves of the group] (dense, exact)
        if core.use_kernels(bank, Xt, lap, float(self.spatial_reg)):
            budget = max(1, int(_GROUP_CELLS // (Xt.shape[0] * max(int(per_tree.max()), 1))))
        else:
            budget = max(1, int(_GROUP_CELLS // (4 * max(int(per_tree.max()), 1) * batch_size)))
        groups = [
            list(range(a, min(a + budget, struct.n_trees)))
            for a in range(0, struct.n_trees, budget)
        ]
        gamma, pi = gamma.clone(), pi.clone()
        kept = []
        new_params = [p.clone() for p in bank.params()]
        start = 0
        if resume is not None:
            start, new_params, gamma, pi, kept = (resume[k] for k in ("next", *_FINETUNE_STATE))
            gen.set_state(resume["gen"])
        for gi in range(start, len(groups)):
            g = groups[gi]
            sub, split_ids, leaf_ids = core.substructure(struct, g)
            if sub.n_splits == 0:
                continue
            sub_bank = bank.select(split_ids)
            cb = None
            if log is not None:

                def cb(e, g=g):
                    if (e + 1) % 5 == 0:
                        log(f"finetune trees {g[0]}..{g[-1]}: epoch {e + 1}/{fe}")

            sub_bank, sg, spi, info = core.finetune(
                sub_bank,
                sub,
                gamma[split_ids],
                pi[leaf_ids],
                Xt,
                yt,
                swt,
                K,
                fe,
                float(self.steepness_inc) if getattr(self, "anneal_finetune", True) else 0.0,
                batch_size,
                gen,
                weight_decay=float(self.weight_decay),
                lap=lap,
                reg=float(self.spatial_reg),
                lr=float(self.learning_rate),
                callback=cb,
            )
            sid = torch.as_tensor(split_ids)
            for dst, src in zip(new_params, sub_bank.params(), strict=True):
                dst[sid] = src
            gamma[sid] = sg
            pi[torch.as_tensor(leaf_ids)] = spi
            kept.append(info)
            if save is not None and gi + 1 < len(groups):
                save(
                    {"finetune_groups": gi + 1},
                    next=gi + 1,
                    gen=gen.get_state(),
                    **dict(zip(_FINETUNE_STATE, (new_params, gamma, pi, kept), strict=True)),
                )
        bank.set_params(new_params)
        return (
            bank,
            gamma,
            pi,
            {
                "h_topk_min": min(i["h_topk"] for i in kept) if kept else 0,
                "h_dropped_max": max(i["h_dropped_max"] for i in kept) if kept else 0.0,
            },
        )

    # ------------------------------------------------------------------ predict
    def _tensor(self, X):
        check_is_fitted(self, "struct_")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        X = self._scale(X)
        torch = import_torch(self.n_jobs)
        return torch, torch.from_numpy(np.ascontiguousarray(X))

    def _leaves_np(self, X, bank=None, struct=None):
        """Leaf id [N, T] (numpy) reached by deterministic routing (step function at every node).

        Linear splits: the compiled router of :mod:`treebench.methods._routing` on the raw inputs,
        with the standardisation folded into the splits (w.(x - m)/s + b = (w/s).x + b - (w/s).m,
        in float64), so predict makes no scaled copy of X and evaluates only the splits on each
        path.
        """
        check_is_fitted(self, "struct_")
        bank = self.bank_ if bank is None else bank
        struct = self.struct_ if struct is None else struct
        if bank is None:
            X = validate_data(self, X, dtype=np.float32, reset=False)
            return np.repeat(struct.leaf[struct.roots][None, :], len(X), axis=0)
        if bank.kind != "linear":
            torch, Xt = self._tensor(X)
            from treebench.methods.e2edt import core

            return core.route_hard(bank, struct, Xt).numpy()
        from treebench.methods._routing import route_oblique

        X = validate_data(self, X, dtype=np.float32, reset=False)
        W, b, feat = self._folded(bank)
        node, _ = route_oblique(
            X, W, b, struct.split, struct.left, struct.right, struct.roots, feat=feat
        )
        return struct.leaf[node]

    def _folded(self, bank):
        """(W, b, feat) of the linear splits applied to unscaled inputs (float64)."""
        W = bank.w.detach().numpy().astype(np.float64)
        b = bank.b.detach().numpy().astype(np.float64)
        p = int(self.n_features_in_)
        m = np.broadcast_to(np.asarray(self.scale_mean_, dtype=np.float64), (p,))
        sd = np.broadcast_to(np.asarray(self.scale_sd_, dtype=np.float64), (p,))
        feat = None if bank.feat is None else bank.feat.numpy()
        if feat is None:
            Wf = W / sd
            return Wf, b - Wf @ m, None
        Wf = W / sd[feat]
        return Wf, b - (Wf * m[feat]).sum(1), feat

    def _leaves(self, X):
        """Leaf id [N, T] (torch) reached by deterministic routing."""
        torch = import_torch(self.n_jobs)
        return torch.from_numpy(self._leaves_np(X))

    def apply(self, X):
        """Leaf index (in level order, over all trees) reached by every sample in every tree."""
        return self._leaves_np(X)

    @staticmethod
    def _mean_pi(pi, leaves):
        """Mean over trees of the leaves' class distributions (float32, like the torch mean)."""
        pi = pi.numpy() if hasattr(pi, "numpy") else pi
        return pi[leaves[:, 0]] if leaves.shape[1] == 1 else pi[leaves].mean(1)

    def predict_proba(self, X, inference=None):
        """Class probabilities; ``inference`` overrides the estimator's.

        'deterministic' (one path per sample), 'root_hard' (the reference's pre-2022 evaluation:
        hard only at the root) or 'probabilistic' (all paths, sigmoid gates).
        """
        check_is_fitted(self, "struct_")
        mode = self.inference if inference is None else inference
        if mode not in INFERENCE:
            raise ValueError(f"inference must be one of {INFERENCE}, got {mode!r}")
        if mode == "deterministic" or self.bank_ is None:
            return self._mean_pi(self.pi_, self._leaves_np(X)).astype(np.float64)
        torch, Xt = self._tensor(X)
        from treebench.methods.e2edt import core

        proba = core.soft_proba(
            self.bank_, self.struct_, self.gamma_, self.pi_, Xt, hard_root=(mode == "root_hard")
        )
        return proba.numpy().astype(np.float64)

    def predict(self, X, inference=None):
        check_is_fitted(self, "struct_")
        mode = self.inference if inference is None else inference
        if mode == "deterministic" or (mode in INFERENCE and self.bank_ is None):
            leaves = self._leaves_np(X)
            if leaves.shape[1] == 1:  # one tree: the class of each leaf, looked up
                return self.classes_[np.argmax(self.pi_.numpy(), axis=1)[leaves[:, 0]]]
            return self.classes_[np.argmax(self._mean_pi(self.pi_, leaves), axis=1)]
        return self.classes_[np.argmax(self.predict_proba(X, inference=inference), axis=1)]

    def greedy_predict(self, X):
        """Deterministic prediction of the tree(s) before Finetune (needs ``keep_greedy=True``)."""
        if getattr(self, "greedy_", None) is None:
            raise ValueError("set keep_greedy=True to keep the greedy model")
        bank, struct, _g, pi = self.greedy_
        leaves = self._leaves_np(X, bank, struct)
        return self.classes_[np.argmax(self._mean_pi(pi, leaves), axis=1)]

    # ------------------------------------------------------------------ size
    def size_report(self, X):
        s = self.struct_
        leaves = self._leaves_np(X)  # [N, T]
        depth_of_leaf = s.leaf_depth
        visited = depth_of_leaf[leaves]  # split evaluations per sample and tree
        mean_depth = float(visited.mean()) if visited.size else 0.0
        if self.inference == "deterministic":
            split_evals = float(visited.sum(1).mean()) if visited.size else 0.0
        else:  # a probabilistic evaluation touches every split
            split_evals = float(s.n_splits)
        return {
            "n_trees": int(s.n_trees),
            "n_splits": int(s.n_splits),
            "n_leaves": int(s.n_leaves),
            "depth": int(s.max_depth),
            "mean_depth": mean_depth,
            "split_evals": split_evals,
        }

    def to_graph(self):
        """Return the oblique tree(s) as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.e2edt.export import e2edt_graph

        return e2edt_graph(self)


_COMMON_DOC = """
    epochs : int
        Epochs per greedy stump (the paper's grid is {20, 35, 50, 65}; 15/30/45 for forests).
    finetune_epochs : int or None
        Epochs of the end-to-end Finetune; None = ``epochs`` for a tree, 3 x ``epochs`` for a
        forest. 0 = Greedy only.
    steepness_inc : float
        Delta gamma added to every split's steepness after every epoch (Greedy and Finetune);
        gamma is carried from Greedy into Finetune, never reset.
    initial_steepness : float
        gamma of a freshly created stump.
    batch_size : int or "auto"
        Minibatch rows of the Adam M-step (a stump's batches hold its own node's rows).  "auto":
        ``auto_batch_size(n)`` for n training rows, ceil(n / 64) within [32, 1000], so that the
        root split gets about 64 steps per epoch as in the paper's MNIST setting (60 000 rows,
        batches of 1000), and a greedy stump on m rows batches of ceil(m / 16) within [4, that]
        rows (about 16 steps per epoch at any depth); the value used is ``fit_info_["batch_size"]``.
    learning_rate, weight_decay : Adam M-step settings (betas 0.9/0.999, eps 1e-8).
    max_attempts : int
        Retrials of a stump whose deterministic split sends all samples one way.
    split_features : {"linear", "cnn"}
        Oblique split w.x + b, or the paper's small CNN per split (Sect. 3.4; needs image_shape).
    spatial_reg : float
        lambda of the Laplacian smoothness penalty sum_i w_i^T M w_i (Sect. 3.3; image inputs).
    inference : {"deterministic", "root_hard", "probabilistic"}
        Test-time routing.  "deterministic" is the paper's model; "root_hard" reproduces the
        reference code's evaluation before its 2022 fix (hard only at the root).
    keep_greedy : bool
        Keep a copy of the greedy model (``greedy_predict``), e.g. for Fig. 2.
    standardize : {True, False, "global", "unit_range"}
        Input scaling fitted on the training data: per feature to zero mean and unit variance
        (the paper's text), one mean and SD over all features ("global": the reference's MNIST
        normalisation), one min and max over all features mapped to [0, 1] ("unit_range": the
        reference's USPS input), or none.
    validation_fraction : float
        If > 0, hold out this stratified fraction of the training data, train on the rest and
        record ``fit_info_["val_accuracy"]`` / ``["greedy_val_accuracy"]`` (deterministic), to
        choose the number of epochs as in Sect. 3.1 (20 % there).
"""


@register(
    "e2edt",
    CLASSIFICATION,
    "E2EDT: end-to-end learned deterministic oblique tree (greedy EM stumps + EM finetune, "
    "steepness annealing; Hehn et al. 2019/2020)",
)
class E2EDTClassifier(_E2EDBase):
    """End-to-end learned deterministic oblique decision tree (E2EDT).

    Parameters
    ----------
    max_depth : int or None
        Level-wise greedy growth to this depth.
    max_leaves : int or None
        If set, best-first greedy growth (by information gain) to this many leaves.
    best_first_gain : {"reference", "weighted"}
        Which leaf best-first growth splits next.  ``"reference"``: the reference code's gain, the
        entropy of the node's (inherited, soft) leaf distribution minus the count-weighted entropies
        of the new stump's two soft leaf distributions, not weighted by the node's size (a node of
        100 samples can win over one of 10,000).  ``"weighted"``: the usual information gain of
        best-first trees, node share of the samples x entropy drop of the hard-routed empirical
        class frequencies.
    """

    __doc__ += _COMMON_DOC

    _parameter_constraints = {
        **_E2EDBase._parameter_constraints,
        "best_first_gain": [StrOptions(set(GAINS))],
    }

    def __init__(
        self,
        max_depth=8,
        max_leaves=None,
        best_first_gain="reference",
        epochs=20,
        finetune_epochs=None,
        steepness_inc=0.1,
        initial_steepness=1.0,
        batch_size="auto",
        learning_rate=1e-3,
        weight_decay=0.0,
        max_attempts=5,
        split_features="linear",
        spatial_reg=0.0,
        inference="deterministic",
        keep_greedy=False,
        validation_fraction=0.0,
        standardize=True,
        image_shape=None,
        n_jobs=None,
        random_state=None,
        verbose=False,
    ):
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.best_first_gain = best_first_gain
        self.epochs = epochs
        self.finetune_epochs = finetune_epochs
        self.steepness_inc = steepness_inc
        self.initial_steepness = initial_steepness
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.max_attempts = max_attempts
        self.split_features = split_features
        self.spatial_reg = spatial_reg
        self.inference = inference
        self.keep_greedy = keep_greedy
        self.validation_fraction = validation_fraction
        self.standardize = standardize
        self.image_shape = image_shape
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose


@register(
    "e2edf",
    CLASSIFICATION,
    "E2EDF: forest of E2EDT oblique trees on the full data, random feature subset or image "
    "patch per split, Finetune 3x greedy epochs (Hehn et al. 2020)",
)
class E2EDFClassifier(_E2EDBase):
    """End-to-end learned deterministic decision forest (E2EDF).

    Every tree is grown on the full training set (no bootstrap); each split sees its own random
    subset of ``max_features`` features, or a random ``patch_size`` x ``patch_size`` image patch.
    The prediction is the mean of the trees' leaf distributions (deterministic routing).

    Parameters
    ----------
    n_estimators : int
        Number of trees T.
    max_features : int, float or None
        Features per split (int, or fraction of p; None = all) when ``patch_size`` is None.
    patch_size : int or None
        Square patch width per split for image inputs (needs ``image_shape``).
    diagonal_patch : bool
        Replicate the reference code's patch sampler (one start for row and column: diagonal
        patches only).  False = independent row and column starts.
    anneal_finetune : bool
        Keep increasing gamma during the forest's Finetune (the paper).  False replicates the
        reference forest code, where the increase only reaches trees after Finetune has ended
        (``set_steepness`` walks ``self.trees``, which is empty until the last epoch).
    max_depth, max_leaves : as for E2EDT (forests in the paper: depth 10).
    """

    __doc__ += _COMMON_DOC
    _forest = True

    def __init__(
        self,
        n_estimators=10,
        max_depth=10,
        max_leaves=None,
        max_features=None,
        patch_size=None,
        diagonal_patch=False,
        anneal_finetune=True,
        epochs=45,
        finetune_epochs=None,
        steepness_inc=0.1,
        initial_steepness=1.0,
        batch_size=2000,
        learning_rate=1e-3,
        weight_decay=0.0,
        max_attempts=5,
        split_features="linear",
        spatial_reg=0.0,
        inference="deterministic",
        keep_greedy=False,
        validation_fraction=0.0,
        standardize=True,
        image_shape=None,
        n_jobs=None,
        random_state=None,
        verbose=False,
    ):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.max_features = max_features
        self.patch_size = patch_size
        self.diagonal_patch = diagonal_patch
        self.anneal_finetune = anneal_finetune
        self.epochs = epochs
        self.finetune_epochs = finetune_epochs
        self.steepness_inc = steepness_inc
        self.initial_steepness = initial_steepness
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.max_attempts = max_attempts
        self.split_features = split_features
        self.spatial_reg = spatial_reg
        self.inference = inference
        self.keep_greedy = keep_greedy
        self.validation_fraction = validation_fraction
        self.standardize = standardize
        self.image_shape = image_shape
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        **_E2EDBase._parameter_constraints,
        "n_estimators": [POSITIVE_INT],
        "patch_size": [None, POSITIVE_INT],
        "max_features": [None, Interval(RealNotInt, 0, 1, closed="right"), POSITIVE_INT],
        "anneal_finetune": "no_validation",
        "diagonal_patch": "no_validation",
    }

    def _check_params(self, n_features):
        if self.split_features == "cnn" and (
            self.patch_size is not None or self.max_features is not None
        ):
            raise InvalidParameterError(
                "split_features='cnn' cannot be combined with max_features/patch_size"
            )
        mf = self.max_features
        if mf is not None and not isinstance(mf, float) and int(mf) > n_features:
            raise InvalidParameterError(f"max_features must be in [1, {n_features}], got {mf}")
        super()._check_params(n_features)

    def _n_trees(self):
        return int(self.n_estimators)

    def _patch(self):
        return None if self.patch_size is None else int(self.patch_size)

    def _k_features(self, p):
        mf = self.max_features
        if mf is None or self.patch_size is not None:
            return None
        return max(1, int(round(mf * p))) if isinstance(mf, float) else int(mf)
