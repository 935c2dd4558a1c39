"""Random Hinge Forest and Random Hinge Ferns (Lay et al., arXiv 1802.03882, 2018).

ReLU "hinge" trees whose output is ``w_leaf * |r*|`` with r* the smallest-|margin| decision on the
sample's path, trained end to end in PyTorch together with a learnable feature pool (inner products
or 5x5/stride-3 convolutions) behind the paper's running-statistics batch normalisation.

Registered as ``hinge_forest`` and ``hinge_fern`` for classification and regression. Torch is
imported only inside ``fit``/``predict`` (see ``net.py`` for the modules).

Model selection: minibatch training for ``n_iterations`` steps with a snapshot every
``snapshot_every`` steps. ``n_iterations="auto"`` (the default; needs ``selection="validation"``)
stops once ``AUTO_PATIENCE_SNAPSHOTS`` snapshots in a row have not lowered the validation loss,
within a budget of ``AUTO_MAX_ITERATIONS`` steps (classification, the paper's 40 000); a classifier
then snapshots every ``AUTO_SNAPSHOT_EPOCHS`` passes over its training rows when that is sooner than
``snapshot_every`` steps, so the budget follows the data (the rule worked through for german and
iris: ``docs/methods/hinge.md``, "The auto budget follows the data"). Regression
(``AUTO_PATIENCE_SNAPSHOTS_REGRESSION`` within ``AUTO_MAX_ITERATIONS_REGRESSION``) keeps the
``snapshot_every`` grid. ``fit_info_`` records the budget, the snapshot interval, the steps run and
whether the fit stopped early.

``selection="validation"`` (default) keeps the snapshot with the lowest loss on a validation part
held out from the training data; ``"last"`` keeps the final state; ``"test"`` is the papers'
protocol for Letter/USPS/MNIST (*best test error over model states*): it needs ``fit(...,
eval_set=(X_test, y_test))``, is optimistic and is labelled in ``fit_info_``. With an ``eval_set``,
``fit_info_`` also records its error at the best, the selected and the last state. The runner passes
its test part as ``eval_set`` only when :meth:`wants_eval_set` is true.

Initialisation: ``weight_init="torch"`` (PyTorch's Kaiming-uniform default) or ``"bleak"`` (the
authors' framework: pool and head weights ~ N(0, 1)); ``conv_bn`` picks per-``"channel"`` or
per-``"position"`` batch norm statistics for the conv pool.

Training speed: the UCI network (linear pool of <= 64 inputs, scalar leaves, linear head, AdaGrad)
runs its whole step in one numba kernel (:class:`~treebench.methods.hinge.net.CompiledUCITrainer`,
tested equal to the torch path); everything else runs the torch step with the compiled forest
forward/backward and :class:`HingeAdam`. Details and measurements: ``docs/methods/hinge.md``.

Checkpoints: inside :func:`treebench.methods.checkpoint.checkpointing` (the runner, every
``checkpoint_every`` seconds) the fit saves its whole training state at snapshot boundaries and a
later fit of the same parameters and data resumes from it, bit-identical to an uninterrupted fit
(``tests/test_checkpoint.py``).
"""

from __future__ import annotations

import copy
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods import checkpoint
from treebench.methods._threads import blas_limit
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    REGRESSION,
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
from treebench.methods.progress import report

#: n_iterations="auto": snapshots without a lower validation loss before the fit stops, and the
#: budget of steps (classification: the paper's 40 000); classification snapshots every
#: AUTO_SNAPSHOT_EPOCHS passes over the training rows when that is sooner than snapshot_every steps;
#: regression improves slowly with plateaus, and is still improving at 40 000: 4x the patience and
#: the budget, on the snapshot_every grid (docs/methods/hinge.md)
AUTO_PATIENCE_SNAPSHOTS = 10
AUTO_SNAPSHOT_EPOCHS = 10
AUTO_MAX_ITERATIONS = 40000
AUTO_PATIENCE_SNAPSHOTS_REGRESSION = 40
AUTO_MAX_ITERATIONS_REGRESSION = 160000
_OPTIMIZERS = ("adagrad", "adam", "lazy_adam")
_SELECTIONS = ("validation", "last", "test")
_PROTOCOLS = {  # recorded in fit_info_["protocol"]: how the kept model state was chosen
    "validation": "lowest validation loss over model states",
    "last": "last model state",
    "test": "best test error over model states (paper protocol, optimistic)",
}


class _HingeBase(SizeMixin, BaseEstimator):
    """Shared implementation; subclasses fix ``_kind`` ("tree"/"fern") and the task."""

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = ("iterations",)

    requires_torch = True
    _kind = "tree"
    _is_classifier = True
    _compiled_training = True  # the UCI network's one-kernel step when it applies (tests switch it)
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch SGD and a validation part drawn by row: repeated rows change both, so "
            "weights equal repeats in distribution only (tests/methods/test_sample_weight.py)"
        ),
    }

    def __init__(
        self,
        n_estimators=100,
        max_depth=10,
        features="linear",
        n_features=100,
        aggregation="linear",
        optimizer="adagrad",
        learning_rate=0.05,
        n_iterations="auto",
        batch_size=53,
        snapshot_every=500,
        selection="validation",
        validation_fraction=0.25,
        threshold_init=3.0,
        leaf_init_std=0.01,
        weight_init="torch",
        conv_bn="channel",
        image_shape=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.features = features
        self.n_features = n_features
        self.aggregation = aggregation
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.n_iterations = n_iterations
        self.batch_size = batch_size
        self.snapshot_every = snapshot_every
        self.selection = selection
        self.validation_fraction = validation_fraction
        self.threshold_init = threshold_init
        self.leaf_init_std = leaf_init_std
        self.weight_init = weight_init
        self.conv_bn = conv_bn
        self.image_shape = image_shape
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    _parameter_constraints = {
        "n_estimators": [POSITIVE_INT],
        "max_depth": [Interval(Integral, 1, 30, closed="both")],
        "features": [StrOptions({"linear", "conv", "none"})],
        "n_features": [POSITIVE_INT],
        "aggregation": [StrOptions({"linear", "sum"})],
        "optimizer": [StrOptions(set(_OPTIMIZERS))],
        "learning_rate": [POSITIVE],
        "n_iterations": [POSITIVE_INT, StrOptions({"auto"})],
        "batch_size": [POSITIVE_INT],
        "snapshot_every": [POSITIVE_INT],
        "selection": [StrOptions(set(_SELECTIONS))],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "threshold_init": [NON_NEGATIVE],
        "leaf_init_std": [NON_NEGATIVE],
        "weight_init": [StrOptions({"torch", "bleak"})],
        "conv_bn": [StrOptions({"channel", "position"})],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "image_shape": "no_validation",
    }

    def _check_params(self):
        """Check across parameters (single values: ``_parameter_constraints``)."""
        if self.selection == "validation" and self.validation_fraction == 0:
            raise InvalidParameterError("selection='validation' needs validation_fraction > 0")
        if self.n_iterations == "auto" and self.selection != "validation":
            raise InvalidParameterError(
                "n_iterations='auto' stops on the validation loss: it needs selection='validation' "
                f"(got {self.selection!r}); give an int number of iterations"
            )

    def _budget(self, n_train):
        """Return the iteration budget of ``n_iterations`` for ``n_train`` training rows.

        (maximum iterations, patience in snapshots or None, steps between snapshots); the rule: the
        module docstring.
        """
        if self.n_iterations != "auto":
            return int(self.n_iterations), None, self.snapshot_every
        if not self._is_classifier:
            return (
                AUTO_MAX_ITERATIONS_REGRESSION,
                AUTO_PATIENCE_SNAPSHOTS_REGRESSION,
                self.snapshot_every,
            )
        epoch = max(n_train / min(self.batch_size, n_train), 1.0)  # steps per pass over the rows
        snap = min(self.snapshot_every, max(1, round(AUTO_SNAPSHOT_EPOCHS * epoch)))
        return AUTO_MAX_ITERATIONS, AUTO_PATIENCE_SNAPSHOTS, snap

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Train the whole network; ``eval_set=(X, y)`` is only needed for ``selection="test"``."""
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float32, y_numeric=not self._is_classifier)
        if self._is_classifier:
            check_classification_targets(y)
        sample_weight = validate_sample_weight(sample_weight, X)
        if self.selection == "test" and eval_set is None:
            raise InvalidParameterError(
                "selection='test' (best test error over model states) needs "
                "fit(..., eval_set=(X_test, y_test))"
            )
        torch = import_torch(self._torch_threads())
        from treebench.methods.hinge.net import (
            CompiledUCITrainer,
            HingeNet,
            make_optimizer,
            torch_train_steps,
        )

        rs = check_random_state(self.random_state)
        gen = torch_generator(rs)
        n = X.shape[0]
        sw = (
            np.ones(n, dtype=np.float32)
            if sample_weight is None
            else sample_weight.astype(np.float32)
        )
        sw = sw * (n / float(sw.sum()))  # mean 1: the loss keeps its scale

        if self._is_classifier:
            self._le = LabelEncoder().fit(y)
            self.classes_ = self._le.classes_
            yt = self._le.transform(y).astype(np.int64)
            n_out = len(self.classes_)
            self._y_mu, self._y_sd = 0.0, 1.0
        else:
            y = y.astype(np.float64)
            self._y_mu = float(y.mean())
            self._y_sd = float(y.std()) or 1.0
            yt = ((y - self._y_mu) / self._y_sd).astype(np.float32)
            n_out = 1

        idx = np.arange(n)
        if self.selection == "validation":
            strat = yt if self._is_classifier and np.bincount(yt).min() >= 2 else None
            try:
                tr, va = train_test_split(
                    idx,
                    test_size=self.validation_fraction,
                    random_state=rs.randint(2**31 - 1),
                    stratify=strat,
                )
            except ValueError:
                tr, va = train_test_split(
                    idx, test_size=self.validation_fraction, random_state=rs.randint(2**31 - 1)
                )
        else:
            tr, va = idx, idx[:0]
        if not sw[tr].any():
            raise ValueError(
                "sample_weight: all weights of the training part are zero "
                "(the validation part holds every positive weight)"
            )

        net = HingeNet(
            X.shape[1],
            n_out,
            self.n_estimators,
            self.max_depth,
            self._kind,
            pool=self.features,
            n_features=self.n_features,
            aggregation=self.aggregation,
            image_shape=self.image_shape,
            threshold_range=self.threshold_init,
            leaf_std=self.leaf_init_std,
            generator=gen,
            weight_init=self.weight_init,
            conv_bn=self.conv_bn,
        )
        opt = make_optimizer(self.optimizer, net, float(self.learning_rate))

        Xt = torch.from_numpy(np.ascontiguousarray(X))
        Yt = torch.from_numpy(yt)
        Wt = torch.from_numpy(sw)
        X_tr, Y_tr, W_tr = Xt[tr], Yt[tr], Wt[tr]
        X_va, Y_va = Xt[va], Yt[va]
        uniform_w = sample_weight is None
        if eval_set is not None:
            Xe = np.asarray(validate_data(self, eval_set[0], dtype=np.float32, reset=False))
            Xe = torch.from_numpy(np.ascontiguousarray(Xe))
            ye = np.asarray(eval_set[1])
        n_tr = len(tr)
        bs = min(self.batch_size, n_tr)

        def loss_fn(out, yb, wb):
            if self._is_classifier:
                per = torch.nn.functional.cross_entropy(out, yb, reduction="none")
            else:
                per = (out.squeeze(-1) - yb) ** 2
            return per.mean() if wb is None else (per * wb).mean()

        def eval_error(Xs, ys):
            pred = self._predict_net(net, Xs)
            if self._is_classifier:
                return float(np.mean(self.classes_[pred.argmax(1)] != ys))
            pr = pred[:, 0] * self._y_sd + self._y_mu
            return float(np.mean((pr - ys) ** 2))

        best_state, best_score, best_it = None, np.inf, 0
        eval_best, eval_curve = np.inf, []
        loss_curve = []  # mean training loss per snapshot interval
        val_curve = []  # validation loss per snapshot (selection="validation")
        compiled = None
        if self._compiled_training and CompiledUCITrainer.applies(net, self.optimizer, X.dtype):
            # the UCI network's whole step in one numba kernel (same arithmetic, no per-op cost)
            compiled = CompiledUCITrainer(
                net, X[tr], yt[tr], sw[tr], self._is_classifier, float(self.learning_rate)
            )
        perm, pos = torch.randperm(n_tr, generator=gen), 0

        def next_batches(k):
            nonlocal perm, pos
            out = np.empty((k, bs), np.int64)
            pn = perm.numpy()
            for j in range(k):
                if pos + bs > n_tr:
                    perm, pos = torch.randperm(n_tr, generator=gen), 0
                    pn = perm.numpy()
                out[j] = pn[pos : pos + bs]
                pos += bs
            return out

        ck = checkpoint.current()
        ck_id = self._checkpoint_identity(X, yt, sw, eval_set) if ck is not None else None
        state = ck.load(ck_id) if ck is not None else None
        it, train_before = 0, 0.0
        if state is not None:  # resume: everything the loop below reads or changes
            net.load_state_dict(state["net"])
            if compiled is not None:
                for dst, src in zip(compiled.acc, state["compiled_acc"], strict=True):
                    np.copyto(dst, src)
            else:
                opt.load_state_dict(state["opt"])
            gen.set_state(state["gen"])
            perm, pos = state["perm"], state["pos"]
            it, train_before = state["it"], state["train_seconds"]
            best_state, best_score, best_it = (
                state["best_state"],
                state["best_score"],
                state["best_it"],
            )
            eval_best, eval_curve = state["eval_best"], list(state["eval_curve"])
            loss_curve = list(state["loss_curve"])
            val_curve = list(state.get("val_curve", []))

        max_it, patience, snap = self._budget(n_tr)
        stopped_early = False
        t0 = time.perf_counter()
        # the compiled kernel reads no module mode: its network stays in eval mode, and the
        # snapshots' validation passes switch modes only on the torch path
        torch_steps = compiled is None
        net.train(torch_steps)
        while it < max_it:
            stop = min((it // snap + 1) * snap, max_it)
            batches = next_batches(stop - it)
            if compiled is not None:
                # one BLAS thread: the kernel's [B, P] x [P, F] products are tiny, and extra BLAS
                # threads spinning on the shared machine cost ~10x (madelon, 8 ms -> 0.8 ms a step)
                with blas_limit(1):
                    mean_loss = compiled.run(batches)
            else:
                mean_loss = torch_train_steps(
                    net, opt, X_tr, Y_tr, None if uniform_w else W_tr, batches, loss_fn
                )
            it = stop
            report("iterations", it, max_it)
            loss_curve.append((it, mean_loss))
            score = None
            if self.selection == "validation":
                with torch.no_grad():
                    if torch_steps:
                        net.eval()
                    score = float(loss_fn(self._forward_chunks(net, X_va), Y_va, None))
                    if torch_steps:
                        net.train()
                val_curve.append((it, score))
            e_err = None
            if eval_set is not None:
                e_err = eval_error(Xe, ye)
                eval_curve.append((it, e_err))
                eval_best = min(eval_best, e_err)
                if self.selection == "test":
                    score = e_err
            if self.selection == "last":
                score = -it
            if score < best_score:
                best_score, best_it = score, it
                best_state = _snapshot(net)
            if self.verbose:
                print(
                    f"[hinge] it {it} loss {mean_loss:.4f} score {score:.4f} "
                    f"eval {e_err} {time.perf_counter() - t0:.1f}s",
                    flush=True,
                )
            # snapshots since the best (best_it is on the snapshot grid, or the last, shorter step)
            if patience is not None and -(-(it - best_it) // snap) >= patience:
                stopped_early = it < max_it
                break
            if ck is not None and it < max_it and ck.due():
                ck.save(
                    {
                        "net": net.state_dict(),
                        "opt": None if compiled is not None else opt.state_dict(),
                        "compiled_acc": None if compiled is None else list(compiled.acc),
                        "gen": gen.get_state(),
                        "perm": perm,
                        "pos": pos,
                        "it": it,
                        "train_seconds": train_before + time.perf_counter() - t0,
                        "best_state": best_state,
                        "best_score": best_score,
                        "best_it": best_it,
                        "eval_best": eval_best,
                        "eval_curve": eval_curve,
                        "loss_curve": loss_curve,
                        "val_curve": val_curve,
                    },
                    ck_id,
                    at={"iterations": int(it)},
                )
        train_s = train_before + time.perf_counter() - t0
        net.load_state_dict(best_state)
        net.eval()
        self.net_ = net
        self.n_features_pool_ = net.n_pool
        info = {
            "selection": self.selection,
            "protocol": _PROTOCOLS[self.selection],
            "best_iteration": int(best_it),
            "n_iterations": int(it),  # run (n_iterations="auto": up to the budget)
            "max_iterations": int(max_it),
            "snapshot_every": int(snap),
            "stopped_early": bool(stopped_early),
            "n_train_used": int(n_tr),
            "n_validation": int(len(va)),
            "train_seconds": float(train_s),
            "seconds_per_1000_iterations": float(1000 * train_s / max(it, 1)),
            "n_parameters": int(sum(p.numel() for p in net.parameters())),
            "compiled_training": compiled is not None,
        }
        if self.selection == "validation":
            info["best_validation_loss"] = float(best_score)
            info["validation_loss_curve"] = " ".join(f"{i}:{v:.4g}" for i, v in val_curve)
        info["train_loss_curve"] = " ".join(f"{i}:{v:.4g}" for i, v in loss_curve)
        if eval_set is not None:
            info["eval_best_error"] = float(eval_best)  # best over model states (optimistic)
            info["eval_selected_error"] = float(dict(eval_curve)[best_it])
            info["eval_last_error"] = float(eval_curve[-1][1])
            # the whole curve, compactly ("iteration:error" per snapshot), to see where the best was
            info["eval_curve"] = " ".join(f"{i}:{e:.5g}" for i, e in eval_curve)
        self.fit_info_ = info
        self.eval_curve_ = eval_curve
        return self

    def _checkpoint_identity(self, X, yt, sw, eval_set) -> dict:
        """:func:`checkpoint.identity` of this fit.

        The training arrays as fitted, the eval set, and whether the compiled trainer runs.
        """
        ev = (None, None) if eval_set is None else (eval_set[0], np.asarray(eval_set[1]))
        ev_x = np.asarray(ev[0], dtype=np.float32) if ev[0] is not None else None
        return checkpoint.identity(self, X, yt, sw, ev_x, ev[1], compiled=self._compiled_training)

    def wants_eval_set(self):
        """Return True when fit needs the test part (``selection="test"``).

        That is the papers' labelled protocol; the runner then calls
        ``fit(X, y, eval_set=(X_test, y_test))``.
        """
        return self.selection == "test"

    def _torch_threads(self):
        """Intra-op threads for training.

        The hinge forest itself runs in single-threaded compiled kernels and, with the linear pool,
        every torch op is tiny (a 53 x 16 x 100 product): extra threads only spin. Measured on the
        shared 2-core machine (Letter, 100 trees, depth 10): 2 threads took ~10x the CPU and wall
        time of 1. So ``n_jobs`` is used only by the conv pool.
        """
        return self.n_jobs if self.features == "conv" else 1

    # ------------------------------------------------------------------ inference
    @staticmethod
    def _forward_chunks(net, Xt, chunk=8192):
        torch = import_torch()
        with torch.no_grad():
            outs = [net(Xt[i : i + chunk]) for i in range(0, Xt.shape[0], chunk)]
        return torch.cat(outs) if outs else net(Xt)

    def _predict_net(self, net, Xt):
        was = net.training
        net.eval()
        out = self._forward_chunks(net, Xt).numpy()
        net.train(was)
        return out

    def _raw(self, X):
        """Return the network outputs of the rows of ``X``, each row independent of the others.

        [n, K] (classification) or [n, 1] (:meth:`HingeNet.forward_rowwise`).
        """
        check_is_fitted(self, "net_")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        torch = import_torch(self.n_jobs)
        Xt = torch.from_numpy(np.ascontiguousarray(X))
        net = self.net_
        was = net.training
        net.eval()
        chunk = 8192
        outs = [net.forward_rowwise(Xt[i : i + chunk]) for i in range(0, Xt.shape[0], chunk)]
        net.train(was)
        return (torch.cat(outs) if outs else net.forward_rowwise(Xt)).numpy()

    def size_report(self, X):
        check_is_fitted(self, "net_")
        f = self.net_.forest
        M, D = f.n_trees, f.depth
        return {
            "n_trees": int(M),
            "n_splits": int(M * f.n_decisions),
            "n_leaves": int(M * f.n_leaves),
            "depth": int(D),
            "mean_depth": float(D),
            "split_evals": float(M * D),
        }

    def to_graph(self):
        """Return feature pool, batch norm, hinge trees/ferns and head as a GraphEnsemble.

        A :class:`treebench.inspect.GraphEnsemble`, exact once the running statistics are fixed.
        """
        from treebench.methods.hinge.export import hinge_graph

        return hinge_graph(self)


def _snapshot(net) -> dict:
    """Return a copy of ``net``'s state dict with its tensors cloned.

    It is what ``copy.deepcopy`` of it gives, at a tenth of its cost.
    """
    sd = net.state_dict()
    out = type(sd)((k, v.detach().clone()) for k, v in sd.items())
    out._metadata = copy.deepcopy(getattr(sd, "_metadata", None))
    return out


class _HingeClassifier(ClassifierMixin, _HingeBase):
    _is_classifier = True

    def decision_function(self, X):
        """Class scores (the logits) of shape (n_samples, n_classes).

        For two classes, as scikit-learn's binary convention, the score of ``classes_[1]`` minus
        that of ``classes_[0]`` (n_samples,), positive where :meth:`predict` gives ``classes_[1]``.
        """
        z = self._raw(X)
        if z.shape[1] == 2:
            return z[:, 1].astype(np.float64) - z[:, 0].astype(np.float64)
        return z

    def predict_proba(self, X):
        z = self._raw(X).astype(np.float64)
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(1, keepdims=True)

    def predict(self, X):
        z = self._raw(X)  # first: raises NotFittedError before classes_ is read
        return self.classes_[z.argmax(1)]


class _HingeRegressor(RegressorMixin, _HingeBase):
    _is_classifier = False

    def predict(self, X):
        return self._raw(X)[:, 0].astype(np.float64) * self._y_sd + self._y_mu


_DESC_F = "Random Hinge Forest (Lay et al. 2018): ReLU hinge trees trained end to end (PyTorch)"
_DESC_R = "Random Hinge Ferns (Lay et al. 2018): ReLU hinge ferns trained end to end (PyTorch)"


@register("hinge_forest", CLASSIFICATION, _DESC_F)
class HingeForestClassifier(_HingeClassifier):
    """Random Hinge Forest classifier (softmax loss)."""

    _kind = "tree"


@register("hinge_forest", REGRESSION)
class HingeForestRegressor(_HingeRegressor):
    """Random Hinge Forest regressor (L2 loss on the standardised target)."""

    _kind = "tree"


@register("hinge_fern", CLASSIFICATION, _DESC_R)
class HingeFernClassifier(_HingeClassifier):
    """Random Hinge Ferns classifier (softmax loss)."""

    _kind = "fern"


@register("hinge_fern", REGRESSION)
class HingeFernRegressor(_HingeRegressor):
    """Random Hinge Ferns regressor (L2 loss on the standardised target)."""

    _kind = "fern"
