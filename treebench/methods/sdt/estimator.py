"""Soft Decision Tree (Frosst & Hinton 2017), the One-Stage paper's "Soft Decision Tree" baseline.

A complete depth-``max_depth`` tree of sigmoid routers on ``[x; 1]``: a row reaches every leaf with
the product of the routing probabilities along its path, and the prediction is the
path-probability-weighted mixture of the leaves' class logits (trained with cross-entropy). The
regulariser pushes every inner node towards using both subtrees equally: ``-lam * 2**-depth * (log a
+ log(1 - a))`` per node, where ``a`` is the node's mean left probability over the minibatch
weighted by the rows' path probabilities.

Defaults follow the most-starred public implementation (``xuyxu/Soft-Decision-Tree``), which the
One-Stage paper used with default hyperparameters: depth 5, lam 1e-3, Adam lr 1e-3, weight decay
5e-4, batch 128, 50 epochs. The One-Stage experiments set ``max_depth`` to 6 ("all tree models at
depth 6"). Classification only. Inference is the soft mixture (the model has no hard counterpart).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    SizeMixin,
    _fit_context,
    import_torch,
    register,
    torch_generator,
    validate_sample_weight,
)
from treebench.methods.progress import report


@register(
    "sdt",
    CLASSIFICATION,
    "Soft Decision Tree (Frosst & Hinton 2017): sigmoid routers, leaf-logit mixture, "
    "balanced-routing penalty",
)
class SoftDecisionTreeClassifier(SizeMixin, ClassifierMixin, BaseEstimator):
    """Soft decision tree classifier; see the module docstring.

    Parameters
    ----------
    max_depth : int
        Depth of the complete tree (2**max_depth leaves).
    lam : float
        Strength of the balanced-routing penalty (decays as 2**-depth of the node).
    learning_rate, weight_decay : float
        Adam settings.
    batch_size, max_epochs : int
        Minibatch size and number of epochs (no early stopping).
    standardize : bool
        Standardise the features with the training statistics.
    """

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("epochs",)

    requires_torch = True
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch Adam over rows: repeated rows change the batches, so weights equal "
            "repeats in distribution only (tests/methods/test_sample_weight.py)"
        ),
    }

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 1, 14, closed="both")],
        "lam": [NON_NEGATIVE],
        "learning_rate": [POSITIVE],
        "weight_decay": [NON_NEGATIVE],
        "batch_size": [POSITIVE_INT],
        "max_epochs": [POSITIVE_INT],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "standardize": "no_validation",
    }

    def __init__(
        self,
        max_depth=5,
        lam=1e-3,
        learning_rate=1e-3,
        weight_decay=5e-4,
        batch_size=128,
        max_epochs=50,
        standardize=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.max_depth = max_depth
        self.lam = lam
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.standardize = standardize
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _mu(self, torch, Xa, Wn):
        """Leaf path probabilities (B, 2**D) and the per-layer routing probabilities."""
        p = torch.sigmoid(Xa @ Wn)  # (B, n_inner), level order
        B = Xa.shape[0]
        mu = Xa.new_ones(B, 1)
        layers = []
        for lvl in range(self.max_depth):
            pl = p[:, 2**lvl - 1 : 2 ** (lvl + 1) - 1]
            layers.append((mu, pl))
            mu = torch.stack([mu * pl, mu * (1 - pl)], dim=2).reshape(B, -1)
        return mu, layers

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the soft decision tree on ``X, y``."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, t = np.unique(y, return_inverse=True)
        torch = import_torch(self.n_jobs)
        g = torch_generator(self.random_state)
        if self.standardize:
            self.x_mean_ = X.mean(0)
            sd = X.std(0)
            self.x_scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        Xa = torch.as_tensor(self._augment(X))
        T = torch.as_tensor(t, dtype=torch.long)
        sample_weight = validate_sample_weight(sample_weight, X)
        sw = (
            torch.ones(len(t), dtype=torch.float32)
            if sample_weight is None
            else torch.as_tensor(sample_weight.astype(np.float32))
        )
        D, k, dp1 = int(self.max_depth), len(self.classes_), Xa.shape[1]
        n_inner, n_leaf = 2**D - 1, 2**D
        # PyTorch Linear default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        b1, b2 = 1 / np.sqrt(dp1), 1 / np.sqrt(n_leaf)
        Wn = torch.empty(dp1, n_inner).uniform_(-b1, b1, generator=g).requires_grad_()
        L = torch.empty(n_leaf, k).uniform_(-b2, b2, generator=g).requires_grad_()
        opt = torch.optim.Adam([Wn, L], lr=self.learning_rate, weight_decay=self.weight_decay)
        coeff = [self.lam * 2.0**-lvl for lvl in range(D)]
        n = len(t)
        for epoch in range(int(self.max_epochs)):
            perm = torch.randperm(n, generator=g)
            tot = 0.0
            for s in range(0, n, int(self.batch_size)):
                b = perm[s : s + int(self.batch_size)]
                mu, layers = self._mu(torch, Xa[b], Wn)
                logits = mu @ L
                ce = torch.nn.functional.cross_entropy(logits, T[b], reduction="none")
                # weighted mean over the minibatch (a minibatch of zero-weight rows contributes 0)
                loss = (ce * sw[b]).sum() / sw[b].sum().clamp_min(1e-12)
                pen = 0.0
                for lvl, (m, pl) in enumerate(layers):
                    a = (m * pl).sum(0) / m.sum(0).clamp_min(1e-12)
                    a = a.clamp(1e-7, 1 - 1e-7)
                    pen = pen - coeff[lvl] * (torch.log(a) + torch.log(1 - a)).sum()
                opt.zero_grad()
                (loss + pen).backward()
                opt.step()
                tot += float(loss.detach()) * len(b)
            report("epochs", epoch + 1, int(self.max_epochs))
            if self.verbose:
                print(f"epoch {epoch + 1}: train CE {tot / n:.4f}")
        self.inner_ = Wn.detach().numpy().copy()
        self.leaf_logits_ = L.detach().numpy().copy()
        self.fit_info_ = {"epochs": int(self.max_epochs)}
        return self

    def _augment(self, X):
        return np.hstack([(X - self.x_mean_) / self.x_scale_, np.ones((len(X), 1))]).astype(
            np.float32
        )

    def _logits(self, X):
        """Mixture of the leaves' class logits (n_samples, n_classes)."""
        check_is_fitted(self, "leaf_logits_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Xa = self._augment(X)
        p = 1.0 / (1.0 + np.exp(-(Xa @ self.inner_)))
        mu = np.ones((len(Xa), 1), dtype=np.float32)
        for lvl in range(self.max_depth):
            pl = p[:, 2**lvl - 1 : 2 ** (lvl + 1) - 1]
            mu = np.stack([mu * pl, mu * (1 - pl)], axis=2).reshape(len(Xa), -1)
        return mu @ self.leaf_logits_

    def decision_function(self, X):
        """Class scores (the logits) of shape (n_samples, n_classes).

        For two classes, as scikit-learn's binary convention, the score of ``classes_[1]`` minus
        that of ``classes_[0]`` (n_samples,), positive where :meth:`predict` gives ``classes_[1]``.
        """
        z = self._logits(X)
        if z.shape[1] == 2:
            return z[:, 1].astype(np.float64) - z[:, 0].astype(np.float64)
        return z

    def predict_proba(self, X):
        """Return the class probabilities: the softmax of the tree's output."""
        z = self._logits(X)
        z = z - z.max(1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(1, keepdims=True)

    def predict(self, X):
        """Return the most probable class of every row of ``X``."""
        z = self._logits(X)  # first: raises NotFittedError before classes_ is read
        return self.classes_[np.argmax(z, axis=1)]

    def size_report(self, X):
        """Return the size of the complete tree of depth ``max_depth``."""
        D = int(self.max_depth)
        return {
            "n_trees": 1,
            "n_splits": 2**D - 1,
            "n_leaves": 2**D,
            "depth": D,
            "mean_depth": float(D),
            "split_evals": float(2**D - 1),
        }

    def to_graph(self):
        """Return the soft tree as a soft oblique :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.sdt.export import sdt_graph

        return sdt_graph(self)
