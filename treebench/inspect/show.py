"""Finding and refitting a stored run, and the ``show`` report files.

Saved models are :mod:`treebench.graph.saved`'s.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from treebench.errors import TreebenchError
from treebench.graph.model import GraphEnsemble
from treebench.graph.saved import MODEL_SUFFIX
from treebench.inspect.explain import feature_importances, importances_text, rules_text
from treebench.inspect.render import plot_importances, render

# ----------------------------------------------------------------------------- targets


def find_record(target: str, store_root, ledger=None) -> tuple[dict | None, Path | None]:
    """Return the record named by ``target``, and its saved-model file when ``target`` is one.

    Parameters
    ----------
    target : str
        A record file, a saved-model file (``<key>.model.json.gz``), a run key or a unique prefix
        of one (at least 2 characters).
    store_root : path
        The store looked up for run keys (``<outputs>/store``).
    ledger : Ledger, optional
        The committed ledger, looked up after the store.

    Returns
    -------
    (dict or None, Path or None)
        The record (None for a saved model without its record) and the saved-model path, if any.
    """
    from treebench.results.store import Store

    p = Path(target)
    if p.is_file():
        if p.name.endswith(MODEL_SUFFIX):
            rec_path = p.with_name(p.name[: -len(MODEL_SUFFIX)] + ".json")
            return (json.loads(rec_path.read_text()) if rec_path.exists() else None), p
        return json.loads(p.read_text()), None
    store = Store(store_root, ledger)
    key = target
    where = f"{store.root}" + (f" or the ledger {ledger.root}" if ledger is not None else "")
    if len(key) < 24:  # a unique prefix is enough
        hits = sorted(store.root.glob(f"{key[:2]}/{key}*.json")) if len(key) >= 2 else []
        keys = {h.stem for h in hits if not h.name.startswith(".")}
        if ledger is not None and len(key) >= 2:
            keys |= {r["key"] for r in ledger.records() if r["key"].startswith(key)}
        if len(keys) != 1:
            raise FileNotFoundError(f"run key {target!r} matches {len(keys)} records in {where}")
        (key,) = keys
    rec = store.get(key)
    if rec is None:
        raise FileNotFoundError(f"no record {key!r} in {where}")
    return rec, None


# ----------------------------------------------------------------------------- refit


class RefitError(ValueError, TreebenchError):
    """A record cannot be refitted as the run that wrote it (its run key would differ)."""


# Overrides that never change a run's result: where data and outputs live, threads, model saving.
# The refit takes them from the current environment (TREEBENCH_MIRROR, TREEBENCH_DATA_DIR, ...).
_ENVIRONMENT_KEYS = ("threads", "save_model", "paths", "data", "ledger")
# Set from the record itself: a ``seeds=[...]`` job wrote one record per seed.
_PER_RECORD_KEYS = ("seed", "seeds", "fold")


def refit_overrides(overrides) -> list[str]:
    """Return the overrides of a record that compose its job's config again.

    Keeps the experiment, the sweep values and every method, dataset and split override; drops
    Hydra's own (``hydra.*``, ``hydra/launcher=...``), the environment ones (threads, paths, data
    location, ``save_model``) and ``seed``/``seeds``/``fold``, which the record fixes.

    Parameters
    ----------
    overrides : list of str
        The record's ``overrides`` (the Hydra job's composed task overrides).

    Returns
    -------
    list of str
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    kept = []
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        top = o.key_or_group.split(".", 1)[0].split("/", 1)[0]
        if top == "hydra" or top in _ENVIRONMENT_KEYS or top in _PER_RECORD_KEYS:
            continue
        kept.append(o.input_line)
    return kept


def _record_split(rec: dict):
    return ast.literal_eval(rec["split"]) if isinstance(rec["split"], str) else rec["split"]


def _experiment_files(name: str, profile: str) -> list[str]:
    """``treebench/conf/experiment`` files that run ``experiment_name: name`` at ``profile``.

    With ``profile=reduced`` appended where that is the file's ``reduced`` plan.
    """
    import yaml

    from treebench.config import CONF_DIR

    out = []
    for p in sorted((Path(CONF_DIR) / "experiment").glob("*.yaml")):
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError:
            continue
        if data.get("experiment_name") != name:
            continue
        reduced_plan = ((data.get("hydra") or {}).get("sweeper") or {}).get("reduced")
        if (data.get("profile") or "full") == profile:
            out.append(p.stem)
        elif profile == "reduced" and reduced_plan:
            out.append(f"{p.stem} profile=reduced")
    return out


def rerun_hint(rec: dict) -> str:
    """How to rerun the job of ``rec`` so that its new record carries the job's overrides."""
    exp = rec.get("experiment") or "adhoc"
    files = _experiment_files(exp, rec.get("profile") or "full") if exp != "adhoc" else []
    if files:
        cmd = " or ".join(f"`treebench run experiment={f} save_model=true`" for f in files)
    else:
        cmd = (
            f"`treebench run method={rec['method']} dataset={rec['dataset']} seed={rec['seed']} "
            f"fold={rec['fold']} save_model=true` with the overrides that run had "
            "(e.g. dataset.preprocess.*)"
        )
    key = rec["key"]
    return (
        f"delete its record ({key[:2]}/{key}.json in the store; a stored key counts as done), "
        f"then rerun its job: {cmd}"
    )


def _key_differences(rec: dict, job, fold: int) -> list[str]:
    """Return what of the recomposed ``job`` differs from the run that wrote ``rec``."""
    import treebench
    from treebench.runner import _plain, git_sha

    prov = rec.get("provenance") or {}
    pairs = [
        ("method", rec.get("method"), job.method),
        ("params", rec.get("params"), job.params),
        ("dataset", rec.get("dataset"), job.dataset),
        ("task", rec.get("task"), job.cfg.dataset.task),
        ("split", _record_split(rec), job.split),
        ("seed", rec.get("seed"), job.seed),
        ("fold", rec.get("fold"), fold),
        ("treebench version", prov.get("treebench_version"), treebench.__version__),
    ]
    diffs = [f"{name}: run {a!r}, now {b!r}" for name, a, b in pairs if a != b]
    if not diffs:  # the rest of the key: the dataset's loader/preprocess config and the metrics
        diffs.append(
            f"the dataset config (loader, preprocess) or the metrics list; now preprocess = "
            f"{_plain(job.cfg.dataset.preprocess)!r}, metrics = {_plain(job.cfg.metrics)!r}"
        )
    if prov.get("git_sha") and prov["git_sha"] != git_sha():
        diffs.append(f"(run at git {prov['git_sha'][:12]}, now {str(git_sha())[:12]})")
    return diffs


def known_targets() -> frozenset[str]:
    """Every ``_target_`` the shipped config files name: the only callables a refit may build."""
    import re

    from treebench.config import CONF_DIR

    pat = re.compile(r"""_target_\s*:\s*['"]?([\w.]+)""")
    return frozenset(
        m.group(1) for p in Path(CONF_DIR).rglob("*.yaml") for m in pat.finditer(p.read_text())
    )


def _targets(node, path: str = ""):
    """``(path, value)`` of every ``_target_`` in a nested dict/list."""
    if isinstance(node, dict):
        for k, v in node.items():
            where = f"{path}.{k}" if path else str(k)
            if k == "_target_":
                yield where, v
            else:
                yield from _targets(v, where)
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from _targets(v, f"{path}[{i}]")


def _known_only(rec: dict, composed: dict) -> None:
    """Raise :class:`RefitError` when the job of ``rec`` would build an unshipped callable.

    That is, a callable the shipped configs do not name (a crafted record's ``_target_``).
    """
    known = known_targets()
    bad = [(w, t) for w, t in _targets(composed) if t not in known]
    if bad:
        where, target = bad[0]
        raise RefitError(
            f"record {rec['key']} names {target!r} at {where}, which no treebench config names; "
            "refusing to build it (a record may only select configs and set parameter values)"
        )


def record_job(rec: dict):
    """Return the runner's job of a record, composed again and verified by its run key.

    A record with ``overrides`` is composed from them (experiment file, sweep values, dataset,
    method and split overrides; see :func:`refit_overrides`) at the record's seed. A record
    without them (written before records carried them, or outside a Hydra job) is composed from
    ``dataset=<name>`` with the recorded method, params and split.

    Parameters
    ----------
    rec : dict
        A stored record.

    Returns
    -------
    treebench.runner.Job
        The job; ``job.key(rec["fold"]) == rec["key"]``.

    Raises
    ------
    RefitError
        The overrides do not compose, or the composed job's run key is not the record's: refitting
        would fit something else than the run (other features, split, parameters or version).
    """
    from omegaconf import OmegaConf

    from treebench.config import compose as compose_config
    from treebench.params import ParamError, check_params
    from treebench.runner import Job

    seed, fold = int(rec["seed"]), int(rec["fold"])
    stored = rec.get("overrides")
    if stored is not None:
        overrides = [*refit_overrides(stored), f"seed={seed}"]
        try:
            cfg = compose_config(overrides)
        except Exception as exc:  # Hydra's composition errors have no common base class
            raise RefitError(
                f"record {rec['key']}: its overrides {overrides} do not compose any more: {exc}"
            ) from exc
        # nothing a record names is built unless the shipped configs name it too
        _known_only(rec, OmegaConf.to_container(cfg, resolve=False))
        try:
            check_params(cfg)  # the method's own parameter names and values only
        except ParamError as exc:
            raise RefitError(f"record {rec['key']}: {exc}") from None
        job = Job.from_config(cfg, seed)
    else:
        _known_only(rec, {"params": rec.get("params"), "split": _record_split(rec)})
        cfg = compose_config([f"dataset={rec['dataset']}", f"seed={seed}"])
        job = Job(
            cfg=cfg,
            method=rec["method"],
            params=rec.get("params") or {},
            dataset=rec["dataset"],
            split=_record_split(rec),
            seed=seed,
        )
    key = job.key(fold)
    if key == rec["key"]:
        return job
    diffs = "; ".join(_key_differences(rec, job, fold))
    if stored is None:
        raise RefitError(
            f"record {rec['key']} predates stored overrides: refitting it from "
            f"dataset={rec['dataset']} with its recorded method, params and split gives run key "
            f"{key}, so the run had overrides the record does not keep or the configs changed "
            f"since (differs: {diffs}). To refit it, {rerun_hint(rec)}."
        )
    raise RefitError(
        f"record {rec['key']}: its overrides {overrides} compose a job with run key {key}, not "
        f"the record's (differs: {diffs}); refusing to refit something else than the run."
    )


@dataclass
class Refit:
    """A record's run fitted again, with its data and the names to show it with."""

    est: Any
    X_train: Any
    y_train: Any
    X_test: Any
    y_test: Any
    feature_names: list | None  # after preprocessing (one-hot columns named by their value)
    class_names: list | None  # the dataset's label of each class index
    image_shape: tuple | None


def refit_record(rec: dict, threads: int | None = None) -> Refit:
    """Refit the run of a record: the same data, fold, preprocessing, parameters and seed.

    The job is composed from the record (:func:`record_job`, which checks its run key) and fitted
    by the runner's own :func:`treebench.runner.fit_fold`, so the runner-owned parameters are
    filled as in the run (``random_state`` = the record's ``method_seed``, ``n_jobs``,
    ``image_shape``).

    Parameters
    ----------
    rec : dict
        A stored ``ok`` record.
    threads : int, optional
        Threads (and ``n_jobs``) of the fit; default the record's ``threads``, else 1.

    Returns
    -------
    Refit

    Raises
    ------
    RefitError
        The record's job cannot be composed again with its run key, or the refit's data shape is
        not the record's.
    """
    from treebench.data import load_dataset
    from treebench.runner import data_context, display_names, fit_fold

    job = record_job(rec)
    ds = load_dataset(job.cfg.dataset, data_context(job.cfg, allow_fetch=False))
    fold = job.split_fold(ds, int(rec["fold"]))
    threads = int(threads or rec.get("threads") or 1)
    ff = fit_fold(job, fold, ds, threads)
    got = {
        "n_features": int(ff.X_train.shape[1]),
        "n_train": len(ff.y_train),
        "n_test": len(ff.y_test),
        "method_seed": ff.method_seed,
    }
    bad = {k: (rec[k], v) for k, v in got.items() if rec.get(k) is not None and rec[k] != v}
    if bad:  # same run key, other data: the data files or the preprocessing code changed
        raise RefitError(
            f"record {rec['key']}: the refit differs from the run in "
            + ", ".join(f"{k} (run {a}, refit {b})" for k, (a, b) in bad.items())
        )
    return Refit(
        ff.est, ff.X_train, ff.y_train, ff.X_test, ff.y_test, *display_names(ff, ds), ds.image_shape
    )


# ----------------------------------------------------------------------------- report files


def load_model(target: str, store_root, ledger=None, refit: bool = False):
    """``(model, record, how)`` of a run key, a record file or a saved model file.

    The saved model unless ``refit``, else the run refitted from its record and exported, its test
    metric rescored on the graph beside the record's (``how`` says which, in one line).

    Raises
    ------
    FileNotFoundError
        When no record or model matches ``target``.
    ValueError
        When the record is not ``ok`` (nothing was fitted).
    RefitError
        When refitting would fit something else than the run (see :func:`refit_record`).
    """
    from treebench.graph import export_graph
    from treebench.graph.saved import model_path, name_graph

    rec, saved = find_record(target, store_root, ledger)
    if saved is None and rec is not None and not refit:
        cand = model_path(store_root, rec["key"])
        saved = cand if cand.exists() else None
    if saved is not None and not refit:
        return GraphEnsemble.load(saved), rec, f"saved model {saved}"
    if rec is None:
        raise FileNotFoundError(f"no record for {target}")
    if rec.get("status") != "ok":
        raise ValueError(f"record {rec['key']} has status {rec.get('status')!r}, nothing to show")
    fit = refit_record(rec)
    X_tr, X_te, y_te = fit.X_train, fit.X_test, fit.y_test
    model = export_graph(fit.est, X_tr, fit.y_train)
    name_graph(model, fit.feature_names, fit.class_names)
    if model.image_shape is None and fit.image_shape is not None:
        model.image_shape = [int(v) for v in fit.image_shape]
    metric = "test_accuracy" if rec["task"] == "classification" else "test_r2"
    if rec["task"] == "classification":
        got = float(np.mean(model.predict(X_te) == y_te))
    else:
        from sklearn.metrics import r2_score

        got = float(r2_score(y_te, model.predict(X_te)))
    want = (rec.get("metrics") or {}).get(metric)
    how = f"refitted {rec['method']} on {rec['dataset']} (seed {rec['seed']}, fold {rec['fold']}, "
    how += f"{X_tr.shape[1]} features, run key verified): "
    how += f"exported graph {metric}={got:.4f}"
    if want is not None:
        how += f", record {metric}={want:.4f}"
    return model, rec, how


def write_report(
    model: GraphEnsemble,
    out_dir,
    max_graphs=3,
    max_depth=None,
    engine="auto",
    formats=("svg",),
    json_only=False,
) -> dict:
    """Write ``model.json``, DOT/SVG or PNG drawings, ``rules.txt`` and ``importances.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": model.save(out / "model.json")}
    if json_only:
        return files
    files["render"] = render(
        model,
        out,
        name="graph",
        max_graphs=max_graphs,
        max_depth=max_depth,
        engine=engine,
        formats=formats,
    )
    (out / "rules.txt").write_text(rules_text(model, max_graphs=max_graphs))
    files["rules"] = out / "rules.txt"
    try:
        (out / "importances.csv").write_text(importances_text(model))
        files["importances"] = out / "importances.csv"
        files["importances_plot"] = plot_importances(model, out / "importances.png")
        files["top"] = _top(model)
    except ValueError as exc:
        files["importances_error"] = str(exc)
    return files


def _top(model, k=5):
    imp, names = feature_importances(model)
    order = np.argsort(-imp, kind="stable")[:k]
    return [(names[j], float(imp[j])) for j in order]
