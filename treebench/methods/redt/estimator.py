"""ReDT: rectified decision trees distilled from a teacher (Li et al., arXiv 2008.09413).

A soft-label CART (:mod:`.softcart`) is grown on mixed labels
``y_mixed = alpha * onehot(y) + (1 - alpha) * y_soft``; leaves predict the mean mixed label (Eq. 6).
The soft labels come from a teacher:

* forest teachers (``rf``, ``gbdt`` or any scikit-learn classifier): the paper's M-fold jackknife
  repeated R times (Alg. 1), so a sample's soft label comes only from teachers that never saw it;
* DNN teachers (``mlp``, ``lenet``, ``vgg11``): trained on all training data, soft label
  ``softmax(logits / T)`` (``dnn_soft_labels="jackknife"`` applies Alg. 1 to them too).

A node is split only if it holds more than ``k`` samples and is not pure (Alg. 2). ``pseudo_labels``
chooses what "pure" means where the paper is ambiguous: ``"soft_or_hard"`` (default: its soft
pseudo-labels or its hard labels all agree), ``"soft"`` (the literal Alg. 2) or ``"mixed"``. A node
with zero mixed-label impurity is always a leaf.

``alpha="auto"`` (default) picks alpha from ``alpha_grid`` and refits on all training data.
``alpha_selection="cv"`` pools accuracy over ``n_folds``-fold cross-validation on the training data,
with soft labels from teachers that never saw the validation fold (``cv_soft_labels="heldout"``;
reusing the final soft labels would inflate the CV accuracy of small alpha); ``"holdout"`` uses one
``val_size`` split. The paper's protocol (best alpha by test accuracy) is a sweep of fixed
``alpha``.

Checkpoints: inside :func:`treebench.methods.checkpoint.checkpointing` (the runner) a fit with an
integer ``random_state`` keeps each finished unit of work (one teacher's probabilities, one alpha-CV
fold's counts) in the run's checkpoint; a rerun replays the same random draws and recomputes only
the units that had not finished, so it gives the fit an uninterrupted run gives.

Why these defaults, the measurements behind them and the paper's open points:
``docs/methods/redt.md``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from functools import partial
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.graph.flat import node_depths
from treebench.methods import checkpoint
from treebench.methods.base import (
    CLASSIFICATION,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    UNIT,
    Interval,
    InvalidParameterError,
    SizeMixin,
    StrOptions,
    _fit_context,
    import_torch,
    register,
    register_cache,
    torch_generator,
    validate_sample_weight,
)
from treebench.methods.progress import report
from treebench.methods.redt.softcart import CRITERIA, build_tree

FOREST_TEACHERS = ("rf", "gbdt")
DNN_TEACHERS = ("mlp", "lenet", "vgg11")
#: VGG configuration A (Simonyan & Zisserman 2015): 3x3 convolutions (channels), "M" = 2x2 max pool
VGG11 = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")
PSEUDO_LABELS = ("soft", "mixed", "soft_or_hard")
ALPHA_SELECTION = ("cv", "holdout")
CV_SOFT_LABELS = ("heldout", "shared")
DEFAULT_ALPHA_GRID = tuple(round(0.1 * i, 1) for i in range(11))


# ----------------------------------------------------------------------------- teachers


def forest_teacher(name: str, params: dict | None, random_state):
    """Return the paper's forest teachers.

    100 trees, minimum leaf size 5 (GBDT depth 3 = sklearn default).
    """
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    params = dict(params or {})
    if name == "rf":
        kw = {"n_estimators": 100, "min_samples_leaf": 5, "max_features": "sqrt", "n_jobs": 1}
        kw.update(params)
        return RandomForestClassifier(random_state=random_state, **kw)
    kw = {"n_estimators": 100, "min_samples_leaf": 5, "max_depth": 3, "learning_rate": 0.1}
    kw.update(params)
    return GradientBoostingClassifier(random_state=random_state, **kw)


def _dropout_class():
    """Return the ``Dropout`` class: inverted dropout drawing masks from its own generator.

    It has ``torch.nn.Dropout``'s arithmetic, but its masks come from the generator it holds, not
    from torch's global one. Made on first use (torch is imported lazily); the module's
    ``__getattr__`` makes it for unpickling too.
    """
    cls = globals().get("_Dropout")
    if cls is None:
        import torch

        class _Dropout(torch.nn.Module):
            def __init__(self, p, gen):
                super().__init__()
                self.p, self.gen = float(p), gen

            def forward(self, x):
                if not self.training or self.p == 0:
                    return x
                keep = torch.rand(x.shape, generator=self.gen) >= self.p
                return x * keep / (1.0 - self.p)

        _Dropout.__module__, _Dropout.__qualname__ = __name__, "_Dropout"
        cls = globals()["_Dropout"] = _Dropout
    return cls


def __getattr__(name):
    if name == "_Dropout":
        return _dropout_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TorchTeacher(ClassifierMixin, BaseEstimator):
    """DNN teacher (torch, imported lazily).

    ``mlp`` (two hidden layers, 784 and 256 units), LeNet-5 or VGG-11.

    VGG-11 is configuration A (8 convolutions, 3 fully connected layers of 4096, 4096 and K units
    with dropout 0.5); its five pools need 32 x 32 inputs, so smaller images are padded with the
    value of a raw 0 pixel (MNIST's background) to 32 x 32, as LeNet-5's original input was.

    ``predict_proba`` returns ``softmax(logits / temperature)``. Trained with Adam (the paper: 50
    epochs, lr divided by 10 at epochs 20 and 40; its initial lr 0.1 diverges with Adam, so lr =
    1e-3 here). Inputs are standardised with one global mean and standard deviation fitted on the
    training data.
    """

    def __init__(
        self,
        arch="mlp",
        epochs=50,
        lr=1e-3,
        batch_size=128,
        milestones=(20, 40),
        weight_decay=0.0,
        temperature=4.0,
        image_shape=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.arch = arch
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.milestones = milestones
        self.weight_decay = weight_decay
        self.temperature = temperature
        self.image_shape = image_shape
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _net(self, torch, d, K, gen):
        nn = torch.nn
        if self.arch == "mlp":
            return nn.Sequential(
                nn.Linear(d, 784), nn.ReLU(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, K)
            )
        if self.arch not in ("lenet", "vgg11"):
            raise ValueError(f"arch must be one of {DNN_TEACHERS}, got {self.arch!r}")
        shape = tuple(self.image_shape) if self.image_shape is not None else None
        if shape is None:
            side = int(round(np.sqrt(d)))
            if side * side != d:
                raise ValueError(f"{self.arch} needs image_shape (features are not a square image)")
            shape = (side, side)
        c, h, w = (1, *shape) if len(shape) == 2 else shape
        self._shape = (c, h, w)
        if self.arch == "vgg11":
            return self._vgg11(torch, c, h, w, K, gen)
        h1, w1 = h // 2, w // 2  # conv 5x5 pad 2 keeps size, pool halves it
        h2, w2 = (h1 - 4) // 2, (w1 - 4) // 2
        return nn.Sequential(
            nn.Unflatten(1, (c, h, w)),
            nn.Conv2d(c, 6, 5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * h2 * w2, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, K),
        )

    def _vgg11(self, torch, c, h, w, K, gen):
        nn = torch.nn
        H, W = max(32, h), max(32, w)
        if H % 32 or W % 32:
            raise ValueError(
                f"vgg11 needs images of at most 32 x 32 or multiples of 32, got {h} x {w}"
            )
        top, left = (H - h) // 2, (W - w) // 2
        layers = [
            nn.Unflatten(1, (c, h, w)),
            nn.ConstantPad2d((left, W - w - left, top, H - h - top), -self.mean_ / self.std_),
        ]
        for v in VGG11:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU()]
                c = v
        d = c * (H // 32) * (W // 32)
        Dropout = _dropout_class()
        return nn.Sequential(
            *layers,
            nn.Flatten(),
            nn.Linear(d, 4096), nn.ReLU(), Dropout(0.5, gen),
            nn.Linear(4096, 4096), nn.ReLU(), Dropout(0.5, gen),
            nn.Linear(4096, K),
        )  # fmt: skip

    def fit(self, X, y, sample_weight=None):
        """Train the network teacher on ``X, y``."""
        torch = import_torch(self.n_jobs)
        X = np.asarray(X, dtype=np.float32)
        self.classes_, yi = np.unique(y, return_inverse=True)
        self.mean_, self.std_ = float(X.mean()), float(X.std()) or 1.0
        gen = torch_generator(self.random_state)
        with torch.device("meta"):  # built without drawing torch's global generator ...
            net = self._net(torch, X.shape[1], len(self.classes_), gen)
        net = net.to_empty(device="cpu")
        with (
            torch.no_grad()
        ):  # ... then PyTorch's default init bounds, drawn from our own generator
            for m in net.modules():
                if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
                    bound = 1.0 / np.sqrt(m.weight[0].numel())
                    m.weight.uniform_(-bound, bound, generator=gen)
                    m.bias.uniform_(-bound, bound, generator=gen)
        Xt = torch.from_numpy((X - self.mean_) / self.std_)
        yt = torch.from_numpy(yi.astype(np.int64))
        opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(self.milestones), gamma=0.1)
        n = len(Xt)
        net.train()
        for ep in range(int(self.epochs)):
            perm = torch.randperm(n, generator=gen)
            tot = 0.0
            for b in range(0, n, int(self.batch_size)):
                ib = perm[b : b + int(self.batch_size)]
                loss = torch.nn.functional.cross_entropy(net(Xt[ib]), yt[ib])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += loss.item() * len(ib)
            sched.step()
            if self.verbose:
                print(f"[{self.arch}] epoch {ep + 1}/{self.epochs} loss {tot / n:.4f}")
        net.eval()
        for m in net.modules():  # the fitted net keeps no generator (it pickles)
            if hasattr(m, "gen"):
                m.gen = None
        self.net_ = net
        return self

    def logits(self, X):
        """Return the network's logits of the rows of ``X``."""
        torch = import_torch(self.n_jobs)
        X = (np.asarray(X, dtype=np.float32) - self.mean_) / self.std_
        out = []
        with torch.no_grad():
            for b in range(0, len(X), 2048):
                out.append(self.net_(torch.from_numpy(X[b : b + 2048])).numpy())
        return np.concatenate(out).astype(np.float64)

    def predict_proba(self, X):
        """Return the class probabilities: the softmax of the logits at the temperature."""
        z = self.logits(X) / float(self.temperature)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Return the class with the largest logit for every row of ``X``."""
        return self.classes_[self.logits(X).argmax(axis=1)]


class _Units:
    """The finished units of work of one fit, by name, saved to the run's checkpoint when due.

    Without a checkpoint it keeps nothing and every unit is computed.
    """

    def __init__(self, ck=None, identity=None):
        self.ck, self.identity = ck, identity
        state = ck.load(identity) if ck is not None else None
        self.done: dict = dict(state["units"]) if state is not None else {}

    def get(self, name):
        """Return the stored result of unit ``name``, or None."""
        return self.done.get(name)

    def put(self, name, value):
        """Keep ``value`` as unit ``name``'s result (and save when the checkpoint is due)."""
        if self.ck is not None:
            self.done[name] = value
            if self.ck.due():
                self.ck.save({"units": self.done}, self.identity, at={"units": len(self.done)})
        return value


def _run_units(units, names, fits, n_jobs, phase):
    """Results of ``fits`` (zero-argument callables named ``names``).

    The stored ones from ``units``, the others computed in batches of one round of ``n_jobs`` thread
    workers (sklearn forests and torch release the GIL), with progress reported as ``phase`` after
    each batch.
    """
    units = units if units is not None else _Units()
    out = [units.get(n) for n in names]
    todo = [i for i, o in enumerate(out) if o is None]
    step = effective_n_jobs(n_jobs)
    for b in range(0, len(todo), step):
        batch = todo[b : b + step]
        res = Parallel(n_jobs=n_jobs, prefer="threads")(delayed(fits[i])() for i in batch)
        for i, r in zip(batch, res, strict=True):
            out[i] = units.put(names[i], r)
        report(phase, len(names) - len(todo) + b + len(batch), len(names))
    return out


def _fit_proba(teacher, X, y, tr, te, K, sample_weight):
    """Fit ``teacher`` on rows ``tr``; return its probabilities on rows ``te``, (len(te), K)."""
    kw = {} if sample_weight is None else {"sample_weight": sample_weight[tr]}
    teacher.fit(X[tr], y[tr], **kw)
    P = np.zeros((len(te), K))
    P[:, np.asarray(teacher.classes_, dtype=np.int64)] = teacher.predict_proba(X[te])
    return P


def jackknife_soft_labels(
    make_teacher,
    X,
    y,
    K,
    n_folds=5,
    n_repeats=5,
    random_state=None,
    n_jobs=None,
    sample_weight=None,
    return_folds=False,
    units=None,
):
    """Alg. 1 repeated ``n_repeats`` times: out-of-fold teacher probabilities, averaged.

    ``make_teacher(seed)`` returns an unfitted classifier; ``y`` holds integer codes 0..K-1. A
    sample's soft label only ever comes from teachers whose training folds exclude it.
    ``return_folds=True`` also returns the fold id of every row in the first repetition. ``units``
    (a fit's :class:`_Units`) supplies the teacher fits a checkpoint already holds.
    """
    rs = check_random_state(random_state)
    tasks = []
    for _ in range(int(n_repeats)):
        kf = KFold(int(n_folds), shuffle=True, random_state=rs.randint(2**31 - 1))
        for tr, te in kf.split(X):
            tasks.append((make_teacher(rs.randint(2**31 - 1)), tr, te))
    outs = _run_units(
        units,
        [f"jackknife/{i}" for i in range(len(tasks))],
        [partial(_fit_proba, t, X, y, tr, te, K, sample_weight) for t, tr, te in tasks],
        n_jobs,
        "teacher fits (jackknife)",
    )
    S = np.zeros((len(y), K))
    for (_, _, te), P in zip(tasks, outs, strict=True):
        S[te] += P
    S /= int(n_repeats)
    S /= S.sum(axis=1, keepdims=True)
    if not return_folds:
        return S
    folds = np.empty(len(y), dtype=np.int64)  # fold ids of the first repetition
    for i, (_, _, te) in enumerate(tasks[: int(n_folds)]):
        folds[te] = i
    return S, folds


def pair_heldout_soft_labels(
    make_teacher, X, y, K, folds, random_state=None, n_jobs=None, sample_weight=None, units=None
):
    """Soft labels for cross-validating alpha without the teacher ever seeing the validation fold.

    ``folds`` (n,) holds fold ids 0..M-1. Returns ``Scv`` of shape (M, n, K): for validation fold
    ``v``, ``Scv[v, i]`` (``i`` outside fold ``v``) is the probability from a teacher fitted on the
    rows in neither ``i``'s fold nor ``v`` - Alg. 1 run on the CV training part with the same folds,
    so its soft labels hold no information about the validation labels. One teacher per pair of
    folds: M (M - 1) / 2 fits. Rows of fold ``v`` itself are left at zero in ``Scv[v]``. ``units``
    as in :func:`jackknife_soft_labels`.
    """
    rs = check_random_state(random_state)
    M = int(folds.max()) + 1
    pairs = [(a, b) for a in range(M) for b in range(a + 1, M)]
    tasks = []
    for a, b in pairs:
        out = (folds == a) | (folds == b)
        tasks.append(
            (make_teacher(rs.randint(2**31 - 1)), np.flatnonzero(~out), np.flatnonzero(out))
        )
    outs = _run_units(
        units,
        [f"pair/{a}-{b}" for a, b in pairs],
        [partial(_fit_proba, t, X, y, tr, te, K, sample_weight) for t, tr, te in tasks],
        n_jobs,
        "teacher fits (fold pairs)",
    )
    Scv = np.zeros((M, len(y), K))
    for (a, b), (_, _, te), P in zip(pairs, tasks, outs, strict=True):
        P = P / P.sum(axis=1, keepdims=True)
        fa = folds[te] == a  # rows of fold a get this teacher when b validates, and vice versa
        Scv[b, te[fa]] = P[fa]
        Scv[a, te[~fa]] = P[~fa]
    return Scv


# ----------------------------------------------------------------------------- soft-label memo

# A search over alpha (tune=, or a sweep inside one process) fits the same teacher on the same rows
# once per candidate: the soft labels do not depend on alpha. They are memoised here, keyed on
# everything they are a function of (rows, labels, weights, teacher settings and the random
# generator's state on entry), so a hit returns exactly what the computation would, and leaves the
# generator in the state the computation would have left it. Forest teachers with an int
# random_state only (DNN teachers are not bit-reproducible across thread counts); bounded in
# entries and bytes.
_MEMO: OrderedDict = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_MAX_ENTRIES = 64  # a sweep may run every seed of a dataset at one alpha before the next alpha
_MEMO_MAX_BYTES = 256 * 2**20


def _memo_nbytes(value):
    out = value if isinstance(value, tuple) else (value,)
    return sum(a.nbytes for a in out if isinstance(a, np.ndarray))


def _memo_get(key):
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
        return hit


def _memo_put(key, value, state_after):
    if _memo_nbytes(value) > _MEMO_MAX_BYTES:
        return
    with _MEMO_LOCK:
        _MEMO[key] = (value, state_after)
        while (
            len(_MEMO) > _MEMO_MAX_ENTRIES
            or sum(_memo_nbytes(v) for v, _ in _MEMO.values()) > _MEMO_MAX_BYTES
        ):
            _MEMO.popitem(last=False)


@register_cache
def _memo_clear():
    with _MEMO_LOCK:
        _MEMO.clear()


def _copy(value):
    if isinstance(value, tuple):
        return tuple(None if a is None else a.copy() for a in value)
    return value.copy()


# ----------------------------------------------------------------------------- the estimator


@register(
    "redt",
    CLASSIFICATION,
    "ReDT: soft-label CART distilled from an RF/GBDT (jackknife) or DNN (temperature) teacher",
)
class ReDTClassifier(ClassifierMixin, SizeMixin, BaseEstimator):
    """Rectified decision tree (ReDT).

    Parameters
    ----------
    teacher : {"rf", "gbdt", "mlp", "lenet", "vgg11"} or estimator
        Soft-label teacher; an unfitted scikit-learn classifier with ``predict_proba`` is cloned.
    teacher_params : dict or None
        Overrides of the teacher's parameters (e.g. ``{"n_estimators": 100}`` or ``{"epochs":
        50}``).
    alpha : float in [0, 1] or "auto"
        Weight of the hard label in the mixed label; "auto" selects it from ``alpha_grid``.
    alpha_grid : list of float or None
        Candidates for ``alpha="auto"``; ``None`` = 0, 0.1, ..., 1 (the paper's grid; 1 = plain
        CART).
    alpha_selection : {"cv", "holdout"}
        How ``alpha="auto"`` scores the grid: "cv" = accuracy pooled over ``n_folds``-fold
        cross-validation on the training data (the folds of the jackknife's first repetition);
        "holdout" = accuracy on one stratified split of ``val_size``.
    cv_soft_labels : {"heldout", "shared"}
        Soft labels of the CV training parts: "heldout" = from teachers that never saw the
        validation fold (one teacher per pair of folds, M (M - 1) / 2 extra fits; for DNN teachers
        with ``dnn_soft_labels="full"`` one teacher per fold); "shared" = the final soft labels (no
        extra fits, but their teachers saw the validation folds' labels, which favours small alpha).
    val_size : float
        Fraction of the training data held out to select alpha with ``alpha_selection="holdout"``.
    n_folds, n_repeats : int
        Jackknife folds M and repetitions R (paper: 5 and 5).
    temperature : float
        Softmax temperature T of DNN teachers (paper: 4).
    dnn_soft_labels : {"full", "jackknife"}
        DNN soft labels from one teacher trained on all data (paper) or by the jackknife.
    pseudo_labels : {"soft_or_hard", "soft", "mixed"}
        Purity stop: "soft_or_hard" (default) = the soft pseudo-labels (Eq. 4) or the hard labels
        all agree; "soft" = the pseudo-labels only (literal Alg. 2); "mixed" = argmax of the mixed
        labels.
    k : int
        Split a node only if it holds more than ``k`` samples (paper: 5).
    min_samples_leaf : int
        Minimum samples per child (1: the paper has no such rule).
    criterion : {"gini", "entropy"}
    max_depth : int or None
    backend : {"auto", "numba", "numpy"}
        Split-search implementation (same tree; numba is much faster).
    image_shape : tuple or None
        Filled by the runner for image data (the LeNet-5 and VGG-11 teachers).
    n_jobs : int or None
        Parallel jackknife fits (joblib) and torch threads.
    random_state : int, RandomState or None
    verbose : int
    """

    #: what ``fit`` reports through :mod:`treebench.methods.progress` (the contract test checks it)
    progress_phases = (
        "teacher fits (jackknife)",
        "teacher fits (fold pairs)",
        "teacher fits (DNN)",
        "alpha folds",
        "alpha candidates",
    )

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "the teacher's jackknife folds split rows (a copy of a row can train the teacher that "
            "labels it) and k counts rows; the distilled tree honours weights exactly "
            "(tests/methods/test_sample_weight.py)"
        ),
    }

    def __init__(
        self,
        teacher="rf",
        teacher_params=None,
        alpha="auto",
        alpha_grid=None,
        alpha_selection="cv",
        cv_soft_labels="heldout",
        val_size=0.2,
        n_folds=5,
        n_repeats=5,
        temperature=4.0,
        dnn_soft_labels="full",
        pseudo_labels="soft_or_hard",
        k=5,
        min_samples_leaf=1,
        criterion="gini",
        max_depth=None,
        backend="auto",
        image_shape=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.teacher = teacher
        self.teacher_params = teacher_params
        self.alpha = alpha
        self.alpha_grid = alpha_grid
        self.alpha_selection = alpha_selection
        self.cv_soft_labels = cv_soft_labels
        self.val_size = val_size
        self.n_folds = n_folds
        self.n_repeats = n_repeats
        self.temperature = temperature
        self.dnn_soft_labels = dnn_soft_labels
        self.pseudo_labels = pseudo_labels
        self.k = k
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.max_depth = max_depth
        self.backend = backend
        self.image_shape = image_shape
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    _parameter_constraints = {
        "teacher": [
            StrOptions(set(FOREST_TEACHERS + DNN_TEACHERS)),
            HasMethods(["fit", "predict_proba"]),
        ],
        "alpha": [UNIT, StrOptions({"auto"})],
        "alpha_selection": [StrOptions(set(ALPHA_SELECTION))],
        "cv_soft_labels": [StrOptions(set(CV_SOFT_LABELS))],
        "val_size": [OPEN_UNIT],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "n_repeats": [POSITIVE_INT],
        "temperature": [POSITIVE],
        "dnn_soft_labels": [StrOptions({"full", "jackknife"})],
        "pseudo_labels": [StrOptions(set(PSEUDO_LABELS))],
        "k": [POSITIVE_INT],
        "min_samples_leaf": [POSITIVE_INT],
        "criterion": [StrOptions(set(CRITERIA))],
        "max_depth": [None, POSITIVE_INT],
        "backend": [StrOptions({"auto", "numba", "numpy"})],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "image_shape": "no_validation",
        "alpha_grid": "no_validation",
        "teacher_params": "no_validation",
    }

    def _check_params(self):
        """Return the alpha grid (single values: ``_parameter_constraints``)."""
        grid = DEFAULT_ALPHA_GRID if self.alpha_grid is None else tuple(self.alpha_grid)
        if not grid or any(not 0.0 <= float(a) <= 1.0 for a in grid):
            raise InvalidParameterError(
                f"alpha_grid must be non-empty values in [0, 1], got {self.alpha_grid!r}"
            )
        return grid

    # ------------------------------------------------------------------ soft labels

    def _threads(self):
        return None if self.n_jobs is None else int(self.n_jobs)

    def _make_teacher(self, seed):
        t = self.teacher
        if not isinstance(t, str):
            est = clone(t)
            if self.teacher_params:
                est.set_params(**self.teacher_params)
            if "random_state" in est.get_params():
                est.set_params(random_state=seed)
            return est
        if t in FOREST_TEACHERS:
            return forest_teacher(t, self.teacher_params, seed)
        kw = {
            "temperature": float(self.temperature),
            "image_shape": self.image_shape,
            "n_jobs": self.n_jobs,
            "verbose": self.verbose,
        }
        kw.update(self.teacher_params or {})
        return TorchTeacher(arch=t, random_state=seed, **kw)

    def soft_labels(self, X, y_codes, K, random_state, sample_weight=None, cv=None, units=None):
        """Teacher soft labels of the training samples (jackknife, or temperature for DNNs).

        ``cv=None`` returns ``S``. ``cv="shared"`` or ``"heldout"`` returns ``(S, folds, Scv)``: CV
        fold ids for selecting alpha and the soft labels of every CV training part (``Scv[v]`` for
        validation fold ``v``; ``None`` when they are ``S`` itself). Forest teachers' results are
        memoised (see ``_MEMO``); ``self.soft_labels_cached_`` says whether this call was a hit.
        ``units`` (a :class:`_Units`) holds the teacher fits a checkpoint already has.
        """
        self.soft_labels_cached_ = False
        memoise = (
            isinstance(self.teacher, str)
            and self.teacher in FOREST_TEACHERS
            and isinstance(self.random_state, Integral)  # a generator of its own, seeded
        )
        if not memoise:
            return self._soft_labels(X, y_codes, K, random_state, sample_weight, cv, units)
        from joblib import hash as joblib_hash

        key = joblib_hash(
            (
                X,
                y_codes,
                int(K),
                sample_weight,
                cv,
                self.teacher,
                self.teacher_params,
                int(self.n_folds),
                int(self.n_repeats),
                random_state.get_state(),
            )
        )
        hit = _memo_get(key)
        if hit is not None:
            value, state_after = hit
            random_state.set_state(state_after)
            self.soft_labels_cached_ = True
            return _copy(value)
        value = self._soft_labels(X, y_codes, K, random_state, sample_weight, cv, units)
        _memo_put(key, _copy(value), random_state.get_state())
        return value

    def _soft_labels(self, X, y_codes, K, random_state, sample_weight, cv, units=None):
        is_dnn = isinstance(self.teacher, str) and self.teacher in DNN_TEACHERS
        if is_dnn and self.dnn_soft_labels == "full":
            every = np.arange(len(y_codes))
            teachers = [self._make_teacher(random_state.randint(2**31 - 1))]
            names, rows = ["dnn/all"], [every]
            if cv is not None:
                kf = KFold(
                    int(self.n_folds), shuffle=True, random_state=random_state.randint(2**31 - 1)
                )
                folds = np.empty(len(y_codes), dtype=np.int64)
                for i, (_, te) in enumerate(kf.split(X)):
                    folds[te] = i
            if cv == "heldout":  # the teacher of fold v never sees fold v
                for v in range(int(self.n_folds)):
                    teachers.append(self._make_teacher(random_state.randint(2**31 - 1)))
                    names.append(f"dnn/without-fold-{v}")
                    rows.append(np.flatnonzero(folds != v))
            P = _run_units(  # one at a time: torch uses the threads itself
                units,
                names,
                [
                    partial(_fit_proba, t, X, y_codes, r, r, K, None)
                    for t, r in zip(teachers, rows, strict=True)
                ],
                1,
                "teacher fits (DNN)",
            )
            S = P[0]
            if cv is None:
                return S
            if cv == "shared":
                return S, folds, None
            Scv = np.zeros((int(self.n_folds), len(y_codes), K))
            for v, (r, Pv) in enumerate(zip(rows[1:], P[1:], strict=True)):
                Scv[v, r] = Pv
            return S, folds, Scv
        n_jobs = 1 if is_dnn else self._threads()  # torch uses the threads itself
        out = jackknife_soft_labels(
            self._make_teacher,
            X,
            y_codes,
            K,
            self.n_folds,
            self.n_repeats,
            random_state,
            n_jobs,
            sample_weight,
            return_folds=cv is not None,
            units=units,
        )
        if cv is None:
            return out
        S, folds = out
        if cv == "shared":
            return S, folds, None
        Scv = pair_heldout_soft_labels(
            self._make_teacher, X, y_codes, K, folds, random_state, n_jobs, sample_weight, units
        )
        return S, folds, Scv

    # ------------------------------------------------------------------ fit / predict

    def _grow(self, X, y_codes, S, alpha, K, sample_weight=None):
        Y = alpha * np.eye(K)[y_codes] + (1.0 - alpha) * S
        if self.pseudo_labels == "soft":
            pseudo = S.argmax(axis=1)
        elif self.pseudo_labels == "mixed":
            pseudo = Y.argmax(axis=1)
        else:  # pure in either column: soft pseudo-labels or hard labels
            pseudo = np.column_stack([S.argmax(axis=1), y_codes])
        return build_tree(
            X,
            Y,
            pseudo,
            k=int(self.k),
            min_samples_leaf=int(self.min_samples_leaf),
            criterion=self.criterion,
            max_depth=self.max_depth,
            backend=self.backend,
            sample_weight=sample_weight,
        )

    @_fit_context(prefer_skip_nested_validation=False)  # a teacher estimator is a parameter
    def fit(self, X, y, sample_weight=None):
        """Fit the teacher, relabel the rows with its soft labels and grow the soft-label tree."""
        grid = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float32, ensure_all_finite=True)
        check_classification_targets(y)
        enc = LabelEncoder()
        yc = enc.fit_transform(y)
        self.classes_ = enc.classes_
        K = len(self.classes_)
        sw = validate_sample_weight(sample_weight, X)
        if sw is not None:
            keep = sw > 0  # zero-weight samples are ignored, as in scikit-learn's trees
            X, yc, sw = X[keep], yc[keep], sw[keep]
        rs = check_random_state(self.random_state)
        ck = checkpoint.current()
        # only a seeded fit replays the draws that name its units
        resumable = ck is not None and isinstance(self.random_state, Integral)
        units = _Units(ck, checkpoint.identity(self, X, yc, sw)) if resumable else None

        use_cv = self.alpha == "auto" and self.alpha_selection == "cv"
        t0 = time.perf_counter()
        if use_cv:
            S, folds, Scv = self.soft_labels(X, yc, K, rs, sw, cv=self.cv_soft_labels, units=units)
        else:
            S = self.soft_labels(X, yc, K, rs, sw, units=units)
        teacher_s = time.perf_counter() - t0
        self.soft_labels_ = S

        t0 = time.perf_counter()
        info = {}
        if use_cv:
            alpha, scores = self._select_alpha_cv(X, yc, S, Scv, folds, K, grid, sw, units)
            info["alpha_val_accuracy"] = scores[alpha]
            self.alpha_scores_ = scores
        elif self.alpha == "auto":
            alpha, val_acc = self._select_alpha(X, yc, S, K, grid, rs, sw, units)
            info["alpha_val_accuracy"] = val_acc
        else:
            alpha = float(self.alpha)
        self.alpha_ = alpha
        self.tree_ = self._grow(X, yc, S, alpha, K, sw)
        tree_s = time.perf_counter() - t0
        self.n_nodes_ = self.tree_.node_count
        self.n_rules_ = self.tree_.n_leaves
        self.fit_info_ = {
            "alpha": alpha,
            **info,
            "n_nodes": int(self.n_nodes_),
            "n_rules": int(self.n_rules_),
            "teacher_oof_accuracy": float((S.argmax(axis=1) == yc).mean()),
            "teacher_seconds": teacher_s,
            "soft_labels_cached": bool(self.soft_labels_cached_),
            "tree_seconds": tree_s,
        }
        return self

    def _select_alpha(self, X, yc, S, K, grid, rs, sw, units=None):
        """Alpha with the best accuracy on a stratified validation split.

        First best in grid order.
        """
        idx = np.arange(len(yc))
        counts = np.bincount(yc, minlength=K)
        strat = yc if counts.min() >= 2 else None
        tr, va = train_test_split(
            idx, test_size=float(self.val_size), stratify=strat, random_state=rs.randint(2**31 - 1)
        )

        def score(a):
            tree = self._grow(X[tr], yc[tr], S[tr], float(a), K, None if sw is None else sw[tr])
            acc = float((tree.predict_value(X[va]).argmax(axis=1) == yc[va]).mean())
            if self.verbose:
                print(f"[redt] alpha={float(a):.2f} val_acc={acc:.4f} nodes={tree.node_count}")
            return acc

        accs = _run_units(
            units,
            [f"alpha-holdout/{j}" for j in range(len(grid))],
            [partial(score, a) for a in grid],
            1,
            "alpha candidates",
        )
        best_a, best_acc = None, -1.0
        for a, acc in zip(grid, accs, strict=True):
            if acc > best_acc:
                best_a, best_acc = float(a), acc
        return best_a, best_acc

    def _select_alpha_cv(self, X, yc, S, Scv, folds, K, grid, sw, units=None):
        """Alpha with the best cross-validated accuracy.

        Pooled over folds; first best in grid order.

        Returns ``(alpha, {alpha: accuracy})``. Fold ``v``'s trees are grown on the other folds with
        the soft labels ``Scv[v]`` (``S`` when ``Scv`` is None) and scored on fold ``v``.
        """

        def fold_correct(v):
            tr, va = np.flatnonzero(folds != v), np.flatnonzero(folds == v)
            Sv = S[tr] if Scv is None else Scv[v, tr]
            w = None if sw is None else sw[tr]
            correct = np.zeros(len(grid))
            for j, a in enumerate(grid):
                tree = self._grow(X[tr], yc[tr], Sv, float(a), K, w)
                correct[j] = (tree.predict_value(X[va]).argmax(axis=1) == yc[va]).sum()
            return correct

        M = int(folds.max()) + 1
        per_fold = _run_units(
            units,
            [f"alpha-cv/{v}" for v in range(M)],
            [partial(fold_correct, v) for v in range(M)],
            1,
            "alpha folds",
        )
        acc = np.sum(per_fold, axis=0) / len(yc)
        if self.verbose:
            for a, c in zip(grid, acc, strict=True):
                print(f"[redt] alpha={float(a):.2f} cv_acc={c:.4f}")
        best = int(np.argmax(acc))  # first maximum = smallest alpha among ties
        return float(grid[best]), {float(a): float(c) for a, c in zip(grid, acc, strict=True)}

    def predict_proba(self, X):
        """Return the class probabilities of the leaf each row of ``X`` reaches."""
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        V = self.tree_.value
        P = V / V.sum(axis=1, keepdims=True)  # per node, then gathered per row
        return P[self.tree_.apply(X)]

    def predict(self, X):
        """Return the majority class of the leaf each row of ``X`` reaches."""
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        V = self.tree_.value
        return self.classes_[V.argmax(axis=1)[self.tree_.apply(X)]]

    def size_report(self, X):
        """Return the size of the fitted tree (see :class:`~treebench.methods.base.SizeMixin`)."""
        check_is_fitted(self, "tree_")
        t = self.tree_
        X = validate_data(self, X, dtype=np.float32, reset=False)
        depth = node_depths(t.left, t.right)
        mean_depth = float(depth[t.apply(X)].mean()) if len(X) else 0.0
        return {
            "n_trees": 1,
            "n_splits": int(t.node_count - t.n_leaves),
            "n_leaves": int(t.n_leaves),
            "depth": int(depth.max()),
            "mean_depth": mean_depth,
            "split_evals": mean_depth,
        }

    def to_graph(self):
        """Return the soft-label CART as a :class:`treebench.inspect.GraphEnsemble`."""
        from treebench.methods.redt.export import redt_graph

        return redt_graph(self)
