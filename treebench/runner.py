"""One job: data → split → preprocess → fit → predict → metrics, time, size; one record per fold."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import socket
import subprocess
import time
import traceback
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import instantiate
from omegaconf import Container, DictConfig, OmegaConf

import treebench
from treebench.cputime import CpuClock
from treebench.data import DataContext, load_dataset
from treebench.faults import raise_env_fault
from treebench.methods._threads import thread_limit
from treebench.methods.base import UnsupportedTaskError, get_entry, get_method
from treebench.methods.checkpoint import DEFAULT_EVERY, Checkpoint, checkpointing
from treebench.methods.progress import report
from treebench.metrics import LOWER_IS_BETTER, METRICS  # noqa: F401 - re-exported
from treebench.results.record import FORMAT_FIELD, RECORD_FORMAT, Record
from treebench.results.store import JobBusyError, Store, run_key

_RECORDED_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "torch", "hydra-core", "numba")


def stable_int(text: str) -> int:
    """Return a platform-independent 32-bit integer from a string (Python's hash() is salted)."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def derive_seed(seed: int, *names: str | int) -> int:
    """Seed for a component, derived from the run seed and names (dataset, fold, method)."""
    keys = tuple(n if isinstance(n, int) else stable_int(str(n)) for n in names)
    return int(np.random.SeedSequence(int(seed), spawn_key=keys).generate_state(1)[0] & 0x7FFFFFFF)


@cache
def git_sha() -> str | None:
    """Return the git commit of the treebench source tree, if it is a checkout."""
    root = Path(treebench.__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


@cache
def package_versions() -> dict[str, str]:
    """Return the versions of the packages a record states (those installed)."""
    out = {}
    for name in _RECORDED_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def _plain(node) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def _resolved(node) -> Any:
    """Return a config value as plain Python.

    Mappings and lists converted, interpolations resolved.
    """
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, Container) else node


def tune_settings(cfg: DictConfig) -> dict | None:
    """Return the job's ``tune`` config with the method's ``search:`` block, or None without tuning.

    The block goes under ``search``; None when tuning is off (no ``tune`` or a null
    ``tune.strategy``).
    """
    node = cfg.get("tune")
    tune = OmegaConf.to_container(node, resolve=True, enum_to_str=True) if node else {}
    if not tune.get("strategy"):
        return None
    return {**tune, "search": _plain(cfg.method.get("search")) or {}}


def reference_settings(cfg: DictConfig) -> dict | None:
    """Return the job's ``reference`` (a size-matched baseline fitted beside the method), or None.

    ``{"method": name, "params": {...}, "match": {param: size_field}}``: on each fold the
    reference method is fitted on the same preprocessed training part with each ``param`` set to
    the fitted model's ``size[size_field]`` (e.g. CART's ``max_leaf_nodes`` to the model's
    ``n_leaves``: best-first CART of the same size). With ``grow: {measure: match}`` instead of
    ``match``, the match is the one of the method's own ``size_measure`` (its method file), and
    a method without one (an ensemble) gets no reference.
    """
    node = cfg.get("reference")
    if not node:
        return None
    ref = OmegaConf.to_container(node, resolve=True)
    get_entry(ref["method"])  # unknown method → error listing the choices
    out = {"method": ref["method"], "params": ref.get("params") or {}}
    if ref.get("grow") is None:
        return {**out, "match": ref["match"]}
    # ``grow: {measure: match}``: the reference is grown to the method's own ``size_measure``
    # (its method file); a method without one (an ensemble) gets no same-size reference
    measure = cfg.method.get("size_measure")
    if measure is None:
        return None
    if measure not in ref["grow"]:
        raise ValueError(
            f"method {cfg.method.name}'s size_measure {measure!r} is not in reference.grow "
            f"(it has: {', '.join(ref['grow'])}); add how the reference grows to it"
        )
    return {**out, "match": ref["grow"][measure], "measure": measure}


def _size_value(size: dict, expr: str) -> int:
    """Return a ``reference.match`` value.

    A size field (``n_leaves``) or a field plus a count (``n_splits + 1``: a CART of s splits has s
    + 1 leaves).
    """
    field, _, plus = str(expr).partition("+")
    return int(size[field.strip()]) + int(plus or 0)


@dataclass
class Job:
    """A resolved job: everything that identifies its records, and the config it came from."""

    cfg: DictConfig
    method: str
    params: dict
    dataset: str
    split: dict
    seed: int
    tune: dict | None = None  # :func:`tune_settings`; None = no tuning
    reference: dict | None = None  # :func:`reference_settings`; None = no reference fit

    @classmethod
    def from_config(cls, cfg: DictConfig, seed: int | None = None) -> Job:
        """Return the job of a composed config (``seed`` overrides the config's)."""
        get_entry(cfg.method.name)  # unknown method → error listing the choices
        split = cfg.get("split") or cfg.dataset.split
        return cls(
            cfg=cfg,
            method=cfg.method.name,
            params=_plain(cfg.method.params) or {},
            dataset=cfg.dataset.name,
            split=_plain(split),
            seed=int(cfg.seed if seed is None else seed),
            tune=tune_settings(cfg),
            reference=reference_settings(cfg),
        )

    @classmethod
    def all_from_config(cls, cfg: DictConfig) -> list[Job]:
        """One job per seed: ``seeds`` (a list, looped inside one process) or else ``seed``."""
        seeds = cfg.get("seeds")
        return [cls.from_config(cfg, s) for s in (seeds if seeds else [cfg.seed])]

    @property
    def n_folds(self) -> int:
        """Return the number of folds of the job's split protocol."""
        return _n_folds(json.dumps(self.split, sort_keys=True))

    def folds(self) -> list[int]:
        """Return the folds the job runs: ``fold`` when set, else all of them."""
        only = self.cfg.get("fold")
        return [int(only)] if only is not None else list(range(self.n_folds))

    def split_fold(self, ds, fold: int):
        """Fold ``fold`` of ``ds`` under this job's split protocol.

        Seeded by seed and dataset only.
        """
        (f,) = instantiate(self.split).folds(ds, derive_seed(self.seed, self.dataset), only=fold)
        return f

    def key(self, fold: int) -> str:
        """Return the run key of fold ``fold``."""
        return run_key({**self._identity, "fold": fold})

    @cached_property
    def _identity(self) -> dict:
        """What identifies the job's records besides the fold.

        Resolved once per job: planning a sweep of thousands of jobs keys every fold of each.
        """
        ds = self.cfg.dataset
        spec = {
            "method": self.method,
            "params": self.params,
            "dataset": {k: _resolved(ds.get(k)) for k in ("name", "loader", "preprocess", "task")},
            "split": self.split,
            "seed": self.seed,
            "metrics": _plain(self.cfg.metrics),
            "version": treebench.__version__,
        }
        if self.tune:  # only then, so untuned keys stay what they were
            spec["tune"] = self.tune
        if self.reference:  # likewise
            spec["reference"] = self.reference
        return spec


@cache
def _n_folds(split: str) -> int:
    """Folds of a split protocol (its config as JSON): planning a sweep asks once per protocol."""
    return instantiate(json.loads(split)).n_folds


def resolve_threads(cfg: DictConfig, parallel: int = 1) -> int:
    """Threads for one job.

    The config value, else all cores shared among ``parallel`` local jobs.
    """
    if cfg.get("threads"):
        return int(cfg.threads)
    return max(1, (os.cpu_count() or 1) // max(1, parallel))


def _set_context_params(est, threads: int, random_state: int, image_shape) -> None:
    """Fill runner-owned parameters the config left unset: random_state, n_jobs, image_shape."""
    names = est.get_params(deep=False)
    upd = {}
    if "random_state" in names and names["random_state"] is None:
        upd["random_state"] = random_state
    if "n_jobs" in names and names["n_jobs"] is None:
        upd["n_jobs"] = threads
    if "image_shape" in names and names["image_shape"] is None and image_shape is not None:
        upd["image_shape"] = tuple(image_shape)
    est.set_params(**upd)


def _metrics(names, y_true, y_pred, prefix) -> dict[str, float]:
    return {f"{prefix}_{n}": METRICS[n](y_true, y_pred) for n in names}


def job_overrides() -> list[str] | None:
    """Return the running Hydra job's composed overrides: composing them again gives its config.

    ``experiment=…``, sweep values, dataset overrides such as
    ``dataset.preprocess.categorical=ordinal``.
    """
    from hydra.core.hydra_config import HydraConfig

    try:
        return [str(o) for o in HydraConfig.get().overrides.task]
    except ValueError:  # not inside a Hydra job (api, bench, tests)
        return None


def plan_profile(cfg: DictConfig) -> str:
    """Return the sweep profile (``full`` or ``reduced``) whose plan the config's job belongs to."""
    return getattr(cfg.get("profile"), "value", cfg.get("profile")) or "full"


def base_record(job: Job, fold: int, key: str) -> dict:
    """Identity and provenance fields shared by ok, skipped and failed records.

    See :mod:`treebench.results.record` for the fields of each status.
    """
    return {
        "key": key,
        FORMAT_FIELD: RECORD_FORMAT,
        "experiment": job.cfg.get("experiment_name") or "adhoc",
        "profile": plan_profile(job.cfg),
        "method": job.method,
        "dataset": job.dataset,
        "task": job.cfg.dataset.task,
        "seed": job.seed,
        "fold": fold,
        "params": job.params,
        "split": str(job.split),
        "overrides": job_overrides(),
        "provenance": {
            "treebench_version": treebench.__version__,
            "git_sha": git_sha(),
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "packages": package_versions(),
            "started_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        },
    }


class Skip(Exception):
    """A job that cannot run for a recorded reason (wrong task type, unusable data)."""


def data_context(cfg: DictConfig, mirror: str | None = None, allow_fetch: bool | None = None):
    """Where a composed config's data live.

    ``paths.data``, ``data.mirror`` and ``data.fetch`` (``mirror`` and ``allow_fetch``, when given,
    replace the config's).
    """
    return DataContext(
        Path(cfg.paths.data),
        cfg.data.mirror if mirror is None else mirror,
        bool(cfg.data.fetch) if allow_fetch is None else bool(allow_fetch),
    )


@dataclass
class PreparedFold:
    """One fold of a dataset, split and preprocessed as the runner does it.

    Attributes
    ----------
    ds : Dataset
        The loaded dataset (``image_shape``, ``categorical`` ...).
    fold : Fold
        The split's fold (``index``, ``split_id``, ``train``, ``test``, ``val``).
    preprocessor : Preprocessor
        The dataset's preprocessing, fitted on the fold's train part.
    X_train, y_train, X_test, y_test : array
        The fold's parts after preprocessing.
    """

    ds: Any
    fold: Any
    preprocessor: Any
    X_train: Any
    y_train: Any
    X_test: Any
    y_test: Any


def preprocess_fold(cfg: DictConfig, fold, ds) -> PreparedFold:
    """Fit the dataset's preprocessing on the fold's train part and transform both parts."""
    pre = instantiate(cfg.dataset.preprocess)
    pre.fit(fold.train.X, fold.train.y, categorical=ds.categorical)
    X_tr, X_te = pre.transform(fold.train.X), pre.transform(fold.test.X)
    return PreparedFold(ds, fold, pre, X_tr, fold.train.y, X_te, fold.test.y)


def prepare_fold(job: Job, fold: int, data_ctx: DataContext | None = None, ds=None) -> PreparedFold:
    """Load (unless ``ds`` is given), split and preprocess fold ``fold`` of the job's dataset.

    The data path of the runner, of :func:`treebench.api.load_fold` and of refitting a record.
    """
    if ds is None:
        ds = load_dataset(job.cfg.dataset, data_ctx or data_context(job.cfg))
    return preprocess_fold(job.cfg, job.split_fold(ds, fold), ds)


def build_estimator(
    method: str,
    task: str,
    params: dict | None,
    *,
    threads: int = 1,
    random_state: int | None = None,
    image_shape=None,
):
    """Return the estimator of a registered method, as the runner builds it.

    ``params`` (a method config's ``params``, ``_target_`` nodes included) are instantiated and
    passed to the method's class for ``task``; the runner-owned parameters the config leaves unset
    (``random_state``, ``n_jobs``, ``image_shape``) are filled from the other arguments.

    Raises
    ------
    UnsupportedTaskError
        The method has no estimator for ``task``.
    """
    cls = get_method(method, task)
    kwargs = instantiate(params, _convert_="all") if params else {}
    est = cls(**kwargs)
    _set_context_params(est, threads, random_state, image_shape)
    return est


def eval_set_kwargs(est, X_te, y_te) -> dict:
    """``fit`` keyword giving the test part to a method that asks for it (``wants_eval_set()``).

    Only for an explicitly labelled protocol such as the RHF paper's "best test error over model
    states"; records say so in ``eval_set_in_fit``.
    """
    wants = getattr(est, "wants_eval_set", None)
    return {"eval_set": (X_te, y_te)} if callable(wants) and wants() else {}


@dataclass
class FittedFold:
    """One fold's estimator as the runner fits it, with the arrays it was fitted and tested on.

    Attributes
    ----------
    est : estimator
        The fitted estimator.
    preprocessor : Preprocessor
        The dataset's preprocessing, fitted on the fold's train part.
    X_train, y_train, X_test, y_test : array
        The fold's parts after preprocessing.
    method_seed : int
        The ``random_state`` the runner fills in when the config leaves it unset.
    eval_set_in_fit : bool
        Whether ``fit`` was given the test part (see :func:`eval_set_kwargs`; never when tuning).
    fit_seconds : float
        Wall time of ``fit``; when tuning, of the chosen configuration's refit on the whole
        training part (the search's time is ``tuning["seconds"]``).
    tuning : dict or None
        The record's ``tuning`` field (:func:`treebench.tuning.tune_fit`); None without tuning.
    compile_seconds : float
        The part of ``fit_seconds`` spent compiling numba kernels or loading them from the
        on-disk cache (a process's first fit of a method; :mod:`treebench.compiletime`).
    """

    est: Any
    preprocessor: Any
    X_train: Any
    y_train: Any
    X_test: Any
    y_test: Any
    method_seed: int
    eval_set_in_fit: bool
    fit_seconds: float
    tuning: dict | None = None
    compile_seconds: float = 0.0


def fit_fold(job: Job, fold, ds, threads: int) -> FittedFold:
    """Preprocess fold ``fold`` of ``ds`` and fit the job's estimator on it.

    The one fitting path of the runner (:func:`run_fold`) and of refitting a stored run
    (:func:`treebench.inspect.show.refit_record`), so a refit is the recorded fit. With ``tune``
    on, the search (:func:`treebench.tuning.tune_fit`) sees the training part only: its candidates
    fit one thread each, ``threads`` of them in parallel, and the best is refitted.

    Raises
    ------
    Skip
        The method does not support the dataset's task, or the train part has one class.
    """
    task = job.cfg.dataset.task
    report("preprocessing, importing the method", 0, 1)
    try:
        get_method(job.method, task)
    except UnsupportedTaskError as exc:
        raise Skip(str(exc)) from exc
    if task == "classification" and np.unique(fold.train.y).size < 2:
        raise Skip("training data has a single class")

    pf = preprocess_fold(job.cfg, fold, ds)
    X_tr, y_tr, X_te, y_te = pf.X_train, pf.y_train, pf.X_test, pf.y_test
    method_seed = derive_seed(job.seed, job.dataset, fold.index, job.method)
    est = build_estimator(
        job.method,
        task,
        job.params,
        threads=1 if job.tune else threads,  # tuning: parallel candidates, not nested threads
        random_state=method_seed,
        image_shape=ds.image_shape,
    )
    parts = (pf.preprocessor, X_tr, y_tr, X_te, y_te, method_seed)  # of every FittedFold below
    report("preprocessing, importing the method", 1, 1)
    if job.tune:
        from treebench.tuning import tune_fit

        with thread_limit(threads):
            tuned = tune_fit(
                est,
                X_tr,
                y_tr,
                job.tune,
                task=task,
                metric=job.cfg.metrics[task][0],
                random_state=method_seed,
                n_jobs=threads,
            )
        return FittedFold(
            tuned.est,
            *parts,
            eval_set_in_fit=False,
            fit_seconds=tuned.refit_seconds,
            tuning=tuned.record,
        )
    fit_kw = eval_set_kwargs(est, X_te, y_te)

    from treebench.compiletime import compile_clock

    with thread_limit(threads), compile_clock() as compiled:
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr, **fit_kw)
        fit_s = time.perf_counter() - t0
    return FittedFold(
        est, *parts, bool(fit_kw), fit_s, compile_seconds=min(compiled.seconds, fit_s)
    )


def run_fold(job: Job, fold, ds, threads: int, on_fit=None) -> dict:
    """Fit and evaluate one fold; return the measured fields of the record.

    ``on_fit(fitted_fold, ds)``, if given, runs after fitting and returns extra record fields
    (used to save the model when ``save_model=true``).
    """
    task = job.cfg.dataset.task
    names = list(job.cfg.metrics[task])
    unknown = [n for n in names if n not in METRICS]
    if unknown:  # before the fit, which may be long
        raise ValueError(f"unknown metrics {unknown}; choices: {', '.join(METRICS)}")

    ff = fit_fold(job, fold, ds, threads)
    est, X_tr, y_tr, X_te, y_te = ff.est, ff.X_train, ff.y_train, ff.X_test, ff.y_test
    with thread_limit(threads):
        t0 = time.perf_counter()
        p_te = est.predict(X_te)
        predict_s = time.perf_counter() - t0
        p_tr = est.predict(X_tr)
        size = est.size_report(X_te) if hasattr(est, "size_report") else {}

    out = {
        "split_id": fold.split_id,
        "n_train": int(len(y_tr)),
        "n_test": int(len(y_te)),
        "n_val": int(len(fold.val)) if getattr(fold, "val", None) is not None else 0,
        "n_features": int(X_tr.shape[1]),
        "n_classes": int(np.unique(y_tr).size) if task == "classification" else None,
        "fit_seconds": ff.fit_seconds,
        "compile_seconds": round(ff.compile_seconds, 4),
        "predict_seconds": predict_s,
        "threads": threads,
        "method_seed": ff.method_seed,
        "eval_set_in_fit": ff.eval_set_in_fit,
        "metrics": {**_metrics(names, y_tr, p_tr, "train"), **_metrics(names, y_te, p_te, "test")},
        "size": size,
        "info": dict(getattr(est, "fit_info_", {}) or {}),
        "resolved_params": {k: repr(v) for k, v in est.get_params(deep=False).items()},
    }
    if ff.tuning is not None:
        out["tuning"] = ff.tuning
    if job.reference is not None:
        out["reference"] = fit_reference(job, ff, size, names, threads)
    if on_fit is not None:
        out.update(on_fit(ff, ds))
    return out


def fit_reference(job: Job, ff: FittedFold, size: dict, names, threads: int) -> dict:
    """Fit the job's reference on the method's fold and measure it as the method is measured.

    The reference is :func:`reference_settings`'s; the result is the record's ``reference`` field.
    """
    ref = job.reference
    missing = [f for f in ref["match"].values() if str(f).partition("+")[0].strip() not in size]
    if missing:
        raise ValueError(
            f"reference.match names size fields {missing} that {job.method}'s size report lacks "
            f"(it has: {', '.join(size) or 'none'})"
        )
    matched = {p: max(2, _size_value(size, f)) for p, f in ref["match"].items()}
    est = build_estimator(
        ref["method"],
        job.cfg.dataset.task,
        {**ref["params"], **matched},
        threads=threads,
        random_state=ff.method_seed,
    )
    with thread_limit(threads):
        t0 = time.perf_counter()
        est.fit(ff.X_train, ff.y_train)
        fit_s = time.perf_counter() - t0
        metrics = {
            **_metrics(names, ff.y_train, est.predict(ff.X_train), "train"),
            **_metrics(names, ff.y_test, est.predict(ff.X_test), "test"),
        }
        ref_size = est.size_report(ff.X_test) if hasattr(est, "size_report") else {}
    return {
        "method": ref["method"],
        "match": ref["match"],
        **({"measure": ref["measure"]} if "measure" in ref else {}),
        "params": {**ref["params"], **matched},
        "metrics": metrics,
        "size": ref_size,
        "fit_seconds": fit_s,
    }


def display_names(ff: FittedFold, ds) -> tuple[list | None, list | None]:
    """(feature names after preprocessing, class names by class index) to show a fitted model with.

    Features: the preprocessor's output names (one-hot columns named by their value), else the
    dataset's own names when the columns kept their count (numpy inputs come out as x0, x1, ...).
    Classes: the dataset's names for its labels (``setosa``), else its original labels.
    """
    try:
        names = [
            str(n).split("__", 1)[-1] for n in ff.preprocessor.transformer_.get_feature_names_out()
        ]
    except Exception:  # numpy inputs without names
        names = None
    if names is None or all(n.startswith("x") and n[1:].isdigit() for n in names):
        own = ds.meta.get("feature_names") or []
        names = [str(n) for n in own] if len(own) == ff.X_train.shape[1] else None
    classes = ds.meta.get("class_names") or ds.meta.get("classes")
    return names, ([str(c) for c in classes] if ds.task == "classification" and classes else None)


def job_keys(cfg: DictConfig) -> list[str]:
    """Run keys of every (seed, fold) a config's job covers."""
    return [job.key(f) for job in Job.all_from_config(cfg) for f in job.folds()]


def recompute_keys(records) -> dict[str, str]:
    """Return the run key composed from each record's ``overrides`` (by stored key).

    One composition per override set minus ``seed=``, in one Hydra context (what proves a config
    change kept the ledger's keys).
    """
    from collections import defaultdict

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from treebench.config import CONF_DIR
    from treebench.schema import register_schema

    groups: dict[tuple, list[dict]] = defaultdict(list)
    for rec in records:
        groups[tuple(o for o in rec["overrides"] if not o.startswith("seed="))].append(rec)
    if not groups:
        return {}
    register_schema()
    GlobalHydra.instance().clear()
    out = {}
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            for overrides, recs in groups.items():
                cfg = compose("config", overrides=list(overrides))
                for rec in recs:
                    out[rec["key"]] = Job.from_config(cfg, rec["seed"]).key(rec["fold"])
    finally:
        GlobalHydra.instance().clear()
    return out


def run_job(
    cfg: DictConfig, store: Store, data_ctx: DataContext, log=print, parallel: int = 1
) -> list[dict]:
    """Run every (seed, fold) of one config that is not stored yet; return the records written.

    Folds whose record is done are skipped (printed as "skipped, done"); a fold locked by another
    process is left to it. A failure writes a ``failed`` record with the traceback and goes on.
    """
    threads = resolve_threads(cfg, parallel)
    written: list[dict] = []
    for job in Job.all_from_config(cfg):
        written += _run_seed(job, store, data_ctx, log, threads)
    return written


def _run_seed(job: Job, store: Store, data_ctx: DataContext, log, threads: int) -> list[dict]:
    cfg = job.cfg
    todo = [(f, job.key(f)) for f in job.folds()]
    pending = [(f, k) for f, k in todo if not store.is_done(k)]
    experiment = cfg.get("experiment_name") or "adhoc"
    profile = plan_profile(cfg)
    for f, k in todo:
        if (f, k) not in pending:
            # a fit shared with another experiment or profile counts in each plan that holds it
            store.add_experiment(k, experiment, profile)
            where = "" if store.path(k).exists() else ", in the committed ledger"
            log(
                f"[{job.method} | {job.dataset} | seed {job.seed} | fold {f}] skipped, done "
                f"({k}{where})"
            )
    if not pending:
        return []

    written = []
    ds = None
    for f, k in pending:
        tag = f"[{job.method} | {job.dataset} | seed {job.seed} | fold {f}]"
        try:
            with store.lock(k):
                if store.is_done(k):  # finished by another process meanwhile
                    log(f"{tag} skipped, done ({k})")
                    continue
                rec = base_record(job, f, k)
                t0, clock = time.perf_counter(), CpuClock()
                ck = run_checkpoint(
                    cfg,
                    store,
                    k,
                    spent=lambda t0=t0, clock=clock: {
                        "cpu_seconds": clock.seconds(),
                        "wall_seconds": time.perf_counter() - t0,
                    },
                )
                try:
                    if ds is None:  # the phases before a fit's own bar (a single run shows them)
                        report("loading the data", 0, 1)
                        ds = load_dataset(cfg.dataset, data_ctx)
                        report("loading the data", 1, 1)
                    fold = job.split_fold(ds, f)
                    with checkpointing(ck):
                        rec.update(run_fold(job, fold, ds, threads, _model_saver(cfg, store, k)))
                    rec["status"] = "ok"
                except Skip as exc:
                    rec.update(status="skipped", reason=str(exc))
                except Exception as exc:  # recorded, the sweep goes on
                    raise_env_fault(exc)  # a full disk is no result of the method: stop
                    rec.update(
                        status="failed",
                        error=f"{type(exc).__name__}: {exc}",
                        traceback=traceback.format_exc(),
                    )
                rec["wall_seconds"] = time.perf_counter() - t0
                rec["cpu_seconds"] = clock.seconds()
                rec["provenance"]["finished_at"] = _dt.datetime.now(_dt.UTC).isoformat(
                    timespec="seconds"
                )
                if ck is not None and ck.resumed_from:
                    # where the fit went on from; the times count the earlier attempts up to that
                    # save too (what the result took; work an attempt did after its last save is
                    # redone and counted once, in the attempt that kept it)
                    rec["resumed"] = {"from": ck.resumed_from}
                    if ck.earlier:
                        rec["resumed"]["earlier"] = ck.earlier
                        for t in ("cpu_seconds", "wall_seconds"):
                            rec[t] += ck.earlier.get(t, 0.0)
                if ck is not None and ck.n_saves:
                    rec["checkpoints"] = {"saves": ck.n_saves, "seconds": ck.save_seconds}
                try:
                    store.write(rec)
                except OSError as exc:
                    raise_env_fault(exc, store.path(k))
                    raise
                if ck is not None:
                    ck.clear()  # the record is the result: a rerun never resumes it
                written.append(rec)
                log(f"{tag} {summary_line(rec)}")
        except JobBusyError:
            log(f"{tag} skipped, running in another process ({k})")
    return written


def run_checkpoint(cfg: DictConfig, store: Store, key: str, spent=None) -> Checkpoint | None:
    """Return the checkpoint of run ``key``, or None when ``checkpoint_every`` is null.

    ``<store>/_checkpoints/<key>.pt``, which resumable methods save to every ``checkpoint_every``
    seconds, with the seconds ``spent()`` says the run has used
    (:class:`~treebench.methods.checkpoint.Checkpoint`).
    """
    every = cfg.get("checkpoint_every", DEFAULT_EVERY)
    if every is None:
        return None
    return Checkpoint(store.root / "_checkpoints" / f"{key}.pt", every=float(every), spent=spent)


def _model_saver(cfg: DictConfig, store: Store, key: str):
    """With ``save_model=true``.

    A hook writing the fitted model's decision-graph JSON next to the record (models without
    ``to_graph`` get a ``model_error`` field instead).
    """
    if not cfg.get("save_model"):
        return None
    from treebench.graph.saved import save_fitted_model

    return lambda ff, ds: save_fitted_model(
        store.root, key, ff.est, ff.X_train, ff.y_train, *display_names(ff, ds)
    )


def summary_line(rec: Record) -> str:
    """One human line for a record: status and the headline test metric."""
    if rec["status"] == "skipped":
        return f"skipped: {rec['reason']}"
    if rec["status"] == "failed":
        return f"FAILED: {rec['error']}"
    m = rec["metrics"]
    head = ", ".join(f"{k}={v:.4f}" for k, v in m.items() if k.startswith("test_"))
    size = rec.get("size") or {}
    return (
        f"{head}  splits={size.get('n_splits', '-')}  fit={rec['fit_seconds']:.2f}s  "
        f"key={rec['key']}"
    )
