"""Hyperparameter tuning of one fold's estimator on its training part: search spaces and search CVs.

A method config declares what is worth tuning in a ``search:`` block beside ``params:`` (its
grammar, the budgets and the record: ``docs/tuning.md``); the ``tune`` config group
(``treebench/conf/tune/``) says how (``tune=small``). :func:`search_space` turns the block into the
``param_distributions`` of scikit-learn's search CVs: lists of choices stay lists, ranges become
:mod:`scipy.stats` distributions drawing plain Python numbers.

:func:`tune_fit` runs ``HalvingRandomSearchCV`` (``strategy: halving_random``) or
``RandomizedSearchCV`` (``strategy: random``) with ``n_candidates`` sampled configurations, or
``GridSearchCV`` (``strategy: grid``) over every combination of a block of lists, an inner
stratified (classification) or plain (regression) shuffled K-fold over the training part only,
scoring by the task's first metric and ``refit=True``; the test part is never passed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from treebench.errors import TreebenchError

_RANGE_KEYS = {"low", "high", "log", "int"}


class SearchSpaceError(ValueError, TreebenchError):
    """A ``search:`` dimension outside the grammar of ``docs/tuning.md``."""


class _Dimension:
    """A :mod:`scipy.stats` distribution whose draws are plain Python numbers.

    As JSON records and torch sizes need; ``int`` dimensions floor a continuous draw on
    [low, high + 1).
    """

    def __init__(self, dist, integer: bool, spec: dict):
        self.dist, self.integer, self.spec = dist, integer, spec

    def rvs(self, random_state=None):
        v = float(self.dist.rvs(random_state=random_state))
        return min(int(math.floor(v)), int(self.spec["high"])) if self.integer else v

    def __repr__(self) -> str:
        return f"Dimension({self.spec})"


def dimension(name: str, spec) -> list | _Dimension:
    """One ``search:`` entry as a list of choices or a distribution with ``rvs``.

    Raises
    ------
    SearchSpaceError
        For anything outside the grammar (``docs/tuning.md``), naming ``name``.
    """
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise SearchSpaceError(f"search.{name}: an empty list of choices")
        return list(spec)
    if not isinstance(spec, dict):
        raise SearchSpaceError(
            f"search.{name}: {spec!r} is not a dimension; give a list of choices or "
            f"{{low:, high:}} (one fixed value belongs in params:)"
        )
    unknown = set(spec) - _RANGE_KEYS
    if unknown or not {"low", "high"} <= set(spec):
        raise SearchSpaceError(
            f"search.{name}: a range needs low and high, and takes only "
            f"{sorted(_RANGE_KEYS)}; got {sorted(spec)}"
        )
    low, high = spec["low"], spec["high"]
    integer, log = bool(spec.get("int", False)), bool(spec.get("log", False))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        raise SearchSpaceError(
            f"search.{name}: low and high must be numbers, got {low!r}, {high!r}"
        )
    if integer and not (float(low).is_integer() and float(high).is_integer()):
        raise SearchSpaceError(f"search.{name}: an int range needs integer low and high")
    if not low < high:
        raise SearchSpaceError(f"search.{name}: low {low} must be below high {high}")
    if log and low <= 0:
        raise SearchSpaceError(f"search.{name}: a log range needs low > 0, got {low}")
    top = high + 1 if integer else high  # floor of a draw on [low, high + 1) reaches high
    dist = stats.loguniform(low, top) if log else stats.uniform(low, top - low)
    return _Dimension(dist, integer, {"low": low, "high": high, "int": integer, "log": log})


def search_space(search: dict | None) -> dict[str, list | _Dimension]:
    """Return the ``param_distributions`` of a method's ``search:`` block.

    ``null`` dimensions dropped.
    """
    return {k: dimension(k, v) for k, v in (search or {}).items() if v is not None}


def grid_size(space: dict) -> int:
    """Return the number of configurations in the grid of ``space``.

    A range is not a grid, so it raises.

    Raises
    ------
    SearchSpaceError
        Naming the first range dimension.
    """
    n = 1
    for name, dim in space.items():
        if not isinstance(dim, list):
            raise SearchSpaceError(
                f"search.{name}: tune.strategy=grid needs a list of choices, got the range "
                f"{dim.spec}; list the values to try, or use tune=small"
            )
        n *= len(dim)
    return n


def dimension_values(dim) -> list:
    """Values a dimension can take at its edges: its choices, or low and high (for checks)."""
    if isinstance(dim, list):
        return list(dim)
    cast = int if dim.integer else float
    return [cast(dim.spec["low"]), cast(dim.spec["high"])]


def scorer(metric: str):
    """Return a scikit-learn scorer for one of :data:`treebench.metrics.METRICS`.

    Negated where lower is better, as scikit-learn maximises.
    """
    from sklearn.metrics import make_scorer

    from treebench.metrics import LOWER_IS_BETTER, METRICS

    return make_scorer(METRICS[metric], greater_is_better=metric not in LOWER_IS_BETTER)


def inner_cv(task: str, n_splits: int, random_state: int):
    """Return the inner CV over the training part.

    Stratified K-fold for classification, K-fold else, shuffled with ``random_state``.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    cls = StratifiedKFold if task == "classification" else KFold
    return cls(n_splits=int(n_splits), shuffle=True, random_state=int(random_state))


def make_search(
    est, space: dict, tune: dict, *, task: str, metric: str, random_state: int, n_jobs: int
):
    """Return the search CV of ``tune`` over ``space`` for the unfitted estimator ``est``.

    ``tune`` is a ``tune`` config (``strategy``, ``n_candidates``, ``cv``, ``factor``);
    ``refit=True``.
    """
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401 - enables the import
    from sklearn.model_selection import GridSearchCV, HalvingRandomSearchCV, RandomizedSearchCV

    common = dict(
        scoring=scorer(metric),
        cv=inner_cv(task, tune["cv"], random_state),
        refit=True,
        n_jobs=int(n_jobs),
        random_state=int(random_state),
    )
    strategy = tune["strategy"]
    if strategy == "halving_random":
        return HalvingRandomSearchCV(
            est,
            space,
            n_candidates=int(tune["n_candidates"]),
            factor=tune["factor"],
            min_resources="exhaust",  # the last round fits on (almost) the whole training part
            **common,
        )
    if strategy == "random":
        return RandomizedSearchCV(est, space, n_iter=int(tune["n_candidates"]), **common)
    if strategy == "grid":
        grid_size(space)
        common.pop("random_state")  # a grid draws nothing
        return GridSearchCV(est, space, **common)
    from treebench.schema import Strategy

    raise ValueError(f"tune.strategy {strategy!r}; choices: {', '.join(s.value for s in Strategy)}")


def fit_equivalents(tune: dict) -> float:
    """Return what a search costs in fits on the whole training part (for cluster timeouts).

    A fit's time is taken as linear in its rows: every candidate, round and inner fold, plus the
    refit.

    Successive halving keeps ``ceil(n / factor)`` candidates a round, on ``factor`` times the rows,
    the last round on the whole training part (``min_resources="exhaust"``).
    """
    if tune["strategy"] == "grid":
        c = grid_size(search_space(tune["search"]))
    else:
        c = int(tune["n_candidates"])
    k = int(tune["cv"])
    per_fold = (k - 1) / k  # an inner fit sees this share of the rows it is given
    if tune["strategy"] != "halving_random":
        return c * k * per_fold + 1
    f = float(tune["factor"])
    last = int(math.floor(math.log(c) / math.log(f) + 1e-9))  # rounds - 1
    n, total = c, 0.0
    for i in range(last + 1):
        total += n * k * per_fold * f ** (i - last)
        n = math.ceil(n / f)
    return total + 1


def _py(v):
    """Return a JSON-friendly plain value (numpy scalars → Python; NaN → None)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


@dataclass
class Tuned:
    """A tuned and refitted estimator.

    Attributes
    ----------
    est : estimator
        The chosen configuration refitted on the whole training part (``best_estimator_``).
    refit_seconds : float
        Wall time of that refit (scikit-learn's ``refit_time_``).
    record : dict
        The record's ``tuning`` field (see :func:`tune_fit`).
    """

    est: Any
    refit_seconds: float
    record: dict


class CandidateProgress:
    """A scikit-learn fit callback for a search CV.

    Reports ``candidates`` k of n to the progress callback active where the search starts
    (:mod:`treebench.methods.progress`), one phase per halving round (``round 2 candidates``).

    Candidate fits may run in joblib workers; scikit-learn's callback transport sends each finished
    (candidate, inner fold) fit back to this process, where ``k`` is the candidates whose every
    inner fold is done. Only the listener's handle travels to the workers.

    The final refit of the best candidate on the whole training part (in this process) is phase
    :data:`REFIT` (0 of 1, then 1 of 1), and what the method reports during it reaches the
    callback as ``refit <phase>`` (``refit epochs``); the candidates' own phases never do.
    """

    #: the phase of the final refit
    REFIT = "refit on the training part"

    def __init__(self, callback, n_splits: int, halving: bool):
        self._callback, self.n_splits, self.halving = callback, int(n_splits), halving
        self._handle = None
        self._refit = None  # the reporting context of the refit while it runs

    def __getstate__(self):  # a worker's copy only sends (the bar stays in this process)
        return {**self.__dict__, "_callback": None}

    def setup(self, estimator, context):
        """Open the listener that receives the finished fits from the workers."""
        from sklearn.callback._transport import open_listener

        rounds: dict[tuple, int] = {}  # a round's context path -> fits finished
        order: list[tuple] = []

        def finished(message):
            parent, max_subtasks = tuple(message[0]), int(message[1])
            if parent not in rounds:
                rounds[parent] = 0
                order.append(parent)
            rounds[parent] += 1
            phase = f"round {order.index(parent) + 1} candidates" if self.halving else "candidates"
            self._callback(phase, rounds[parent] // self.n_splits, max_subtasks // self.n_splits)

        self._handle = open_listener(finished)

    def on_fit_task_begin(self, estimator, context, **kwargs):
        """Start reporting the refit's progress when the refit begins."""
        from treebench.methods.progress import reporting

        if context.task_name == "refit-with-best-params" and self._callback is not None:
            cb = self._callback
            cb(self.REFIT, 0, 1)
            self._refit = reporting(lambda phase, done, total: cb(f"refit {phase}", done, total))
            self._refit.__enter__()  # left in on_fit_task_end (the search's ``reporting`` resets
            # the context anyway if the refit raises)

    def on_fit_task_end(self, estimator, context, **kwargs):
        """Count a finished candidate fit (or end the refit's phase) and report it."""
        from sklearn.callback._callback_context import get_context_path
        from sklearn.callback._transport import send

        if context.task_name == "refit-with-best-params" and self._refit is not None:
            self._refit.__exit__(None, None, None)
            self._refit = None
            self._callback(self.REFIT, 1, 1)
            return
        if context.task_name == "candidate-split-evaluation" and context.parent is not None:
            path = [c.task_id for c in get_context_path(context.parent)]
            send(self._handle, (path, context.parent.max_subtasks))

    def teardown(self, estimator, context):
        """Close the listener."""
        from sklearn.callback._transport import close_listener

        close_listener(self._handle)


def tune_fit(
    est, X, y, tune: dict, *, task: str, metric: str, random_state: int, n_jobs: int
) -> Tuned:
    """Tune ``est`` on ``(X, y)`` (a training part; nothing else is seen) and refit the best.

    Parameters
    ----------
    est : estimator
        The unfitted estimator with its config's parameters; searched ones are replaced.
    X, y : array-like
        The training part.
    tune : dict
        The ``tune`` config (``strategy``, ``n_candidates``, ``cv``, ``factor``) with the method's
        ``search:`` block under ``search`` (:func:`treebench.runner.tune_settings`).
    task : str
        ``classification`` (stratified inner folds) or ``regression``.
    metric : str
        The score to maximise (a name of :data:`treebench.metrics.METRICS`; the task's first).
    random_state : int
        Seeds the candidate sampler, the halving subsamples and the inner folds.
    n_jobs : int
        Candidate fits run in parallel.

    Returns
    -------
    Tuned
        ``record`` holds ``strategy``, ``search_cv``, ``n_candidates`` (the budget), ``factor``,
        ``cv`` (the inner scheme), ``scoring``, ``space``, ``best_params``, ``best_score`` (mean
        inner score in the metric's own units), ``candidates`` (columns ``params``, ``mean``,
        ``std`` and, for halving, ``iter`` and ``n_resources``: one entry per candidate and
        round), ``n_failed`` and ``seconds`` (search wall time, the refit included).
    """
    from treebench.methods.checkpoint import checkpointing
    from treebench.methods.progress import current, reporting
    from treebench.metrics import LOWER_IS_BETTER

    space = search_space(tune["search"])
    sc = make_search(
        est, space, tune, task=task, metric=metric, random_state=random_state, n_jobs=n_jobs
    )
    progress = current()
    if progress is not None and hasattr(sc, "set_callbacks"):  # scikit-learn >= 1.9's callbacks
        sc.set_callbacks(
            CandidateProgress(progress, tune["cv"], tune["strategy"] == "halving_random")
        )
    t0 = time.perf_counter()
    # candidate fits must not save or resume the run's checkpoint, nor draw their own bars (the
    # bar counts candidates instead of restarting its epochs with each)
    with checkpointing(None), reporting(None):
        sc.fit(X, y)
    seconds = time.perf_counter() - t0

    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    res = sc.cv_results_
    mean = [_py(sign * v) for v in res["mean_test_score"]]
    cand = {
        "params": [{k: _py(v) for k, v in p.items()} for p in res["params"]],
        "mean": mean,
        "std": [_py(v) for v in res["std_test_score"]],
    }
    if "iter" in res:  # successive halving: the round and its training-set size
        cand["iter"] = [int(v) for v in res["iter"]]
        cand["n_resources"] = [int(v) for v in res["n_resources"]]
    folds = sc.cv
    grid = tune["strategy"] == "grid"
    record = {
        "strategy": tune["strategy"],
        "search_cv": type(sc).__name__,
        "n_candidates": grid_size(space) if grid else int(tune["n_candidates"]),
        "factor": tune["factor"] if tune["strategy"] == "halving_random" else None,
        "cv": {
            "splitter": type(folds).__name__,
            "n_splits": folds.n_splits,
            "shuffle": folds.shuffle,
            "random_state": folds.random_state,
            "on": "training part",
        },
        "scoring": metric,
        "space": {
            k: [_py(c) for c in v] if isinstance(v, list) else dict(v.spec)
            for k, v in space.items()
        },
        "best_params": {k: _py(v) for k, v in sc.best_params_.items()},
        "best_score": _py(sign * sc.best_score_),
        "candidates": cand,
        "n_failed": int(sum(m is None for m in mean)),
        "seconds": seconds,
    }
    return Tuned(sc.best_estimator_, float(sc.refit_time_), record)
