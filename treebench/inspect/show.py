"""Saved models of runs (``save_model=true``), refitting a stored run, and the ``show`` report files."""

from __future__ import annotations

import ast
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from treebench.inspect.explain import feature_importances, importances_text, rules_text
from treebench.inspect.export import export_graph
from treebench.inspect.graph import GraphEnsemble
from treebench.inspect.render import plot_importances, render

MODEL_SUFFIX = ".model.json.gz"


def model_path(store_root, key: str) -> Path:
    """Where the saved model of run ``key`` lives: next to its record, ``<key>.model.json.gz``
    (not matched by the store's ``*/*.json`` record glob)."""
    return Path(store_root) / key[:2] / f"{key}{MODEL_SUFFIX}"


def _atomic_write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".gz")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_fitted_model(store_root, key: str, est, X=None, y=None) -> dict:
    """Export ``est`` (annotated with its training data) next to the record of ``key``.

    Returns the fields to add to the record: ``model_path`` or, when the estimator cannot be
    exported, ``model_error`` (the run itself is not failed).
    """
    import gzip

    if not hasattr(est, "to_graph"):
        return {"model_error": f"{type(est).__name__} has no to_graph()"}
    try:
        model = export_graph(est, X, y)
    except Exception as exc:  # recorded, never fails the run
        return {"model_error": f"{type(exc).__name__}: {exc}"}
    p = _atomic_write(model_path(store_root, key), gzip.compress(model.to_json().encode()))
    return {"model_path": str(p)}


# ----------------------------------------------------------------------------- targets


def find_record(target: str, outputs) -> tuple[dict | None, Path | None]:
    """The record named by ``target``: a record file, a saved-model file or a run key (prefix)."""
    from treebench.results.store import Store

    p = Path(target)
    if p.is_file():
        if p.name.endswith(MODEL_SUFFIX):
            rec_path = p.with_name(p.name[: -len(MODEL_SUFFIX)] + ".json")
            return (json.loads(rec_path.read_text()) if rec_path.exists() else None), p
        return json.loads(p.read_text()), None
    store = Store(Path(outputs) / "store")
    key = target
    if len(key) < 24:  # a unique prefix is enough
        hits = sorted(store.root.glob(f"{key[:2]}/{key}*.json")) if len(key) >= 2 else []
        hits = [h for h in hits if not h.name.startswith(".")]
        if len(hits) != 1:
            raise FileNotFoundError(
                f"run key {target!r} matches {len(hits)} records in {store.root}"
            )
        key = hits[0].stem
    rec = store.get(key)
    if rec is None:
        raise FileNotFoundError(f"no record {key!r} in {store.root}")
    return rec, None


def refit_record(rec: dict, threads: int = 1):
    """Refit the run of a record (same data, fold, preprocessing, parameters and seed).

    Returns ``(estimator, X_train, y_train, X_test, y_test, feature_names, image_shape)``.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import instantiate

    from treebench.app import CONF_DIR
    from treebench.data import DataContext, load_dataset
    from treebench.methods.base import get_method
    from treebench.runner import _set_context_params, derive_seed, eval_set_kwargs

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[f"dataset={rec['dataset']}"])
    GlobalHydra.instance().clear()
    split = ast.literal_eval(rec["split"]) if isinstance(rec["split"], str) else rec["split"]
    ctx = DataContext(data_dir=Path(cfg.paths.data), mirror=cfg.data.mirror, allow_fetch=False)
    ds = load_dataset(cfg.dataset, ctx)
    seed, fold_i = int(rec["seed"]), int(rec["fold"])
    (fold,) = list(instantiate(split).folds(ds, derive_seed(seed, rec["dataset"]), only=fold_i))
    pre = instantiate(cfg.dataset.preprocess)
    pre.fit(fold.train.X, fold.train.y, categorical=ds.categorical)
    X_tr, X_te = pre.transform(fold.train.X), pre.transform(fold.test.X)
    names = None
    try:
        names = [str(n).split("__", 1)[-1] for n in pre.transformer_.get_feature_names_out()]
    except Exception:  # numpy inputs without names
        names = None
    if names is not None and all(n.startswith("x") and n[1:].isdigit() for n in names):
        names = None
    cls = get_method(rec["method"], rec["task"])
    params = instantiate(rec.get("params") or {}, _convert_="all")
    est = cls(**params)
    method_seed = rec.get("method_seed") or derive_seed(seed, rec["dataset"], fold_i, rec["method"])
    _set_context_params(est, threads, int(method_seed), ds.image_shape)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        est.fit(X_tr, fold.train.y, **eval_set_kwargs(est, X_te, fold.test.y))  # as the runner
    return est, X_tr, fold.train.y, X_te, fold.test.y, names, ds.image_shape


# ----------------------------------------------------------------------------- report files


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
