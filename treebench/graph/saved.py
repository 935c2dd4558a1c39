"""Saved models of runs (``save_model=true``): the decision-graph JSON next to a run's record."""

from __future__ import annotations

from pathlib import Path

from treebench.files import atomic_write_bytes
from treebench.graph.export import export_graph

MODEL_SUFFIX = ".model.json.gz"


def model_path(store_root, key: str) -> Path:
    """Where the saved model of run ``key`` lives.

    Next to its record, ``<key>.model.json.gz`` (not matched by the store's ``*/*.json`` record
    glob).
    """
    return Path(store_root) / key[:2] / f"{key}{MODEL_SUFFIX}"


def name_graph(model, feature_names=None, class_names=None) -> None:
    """Give ``model`` the dataset's feature and class names where it has none and they fit."""
    if feature_names is not None and model.feature_names is None:
        if len(feature_names) == model.n_features:
            model.feature_names = list(feature_names)
    if class_names and model.classes is not None and model.class_names is None:
        if len(class_names) == len(model.classes):
            model.class_names = list(class_names)


def save_fitted_model(
    store_root, key: str, est, X=None, y=None, feature_names=None, class_names=None
) -> dict:
    """Export ``est`` next to the record of ``key``.

    The graph is annotated with its training data and labelled with the dataset's feature and
    class names.

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
    name_graph(model, feature_names, class_names)
    p = atomic_write_bytes(model_path(store_root, key), gzip.compress(model.to_json().encode()))
    return {"model_path": str(p)}
