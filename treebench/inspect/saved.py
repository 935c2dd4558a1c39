"""Saved models of runs (``save_model=true``): the decision-graph JSON next to a run's record."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from treebench.files import apply_umask
from treebench.inspect.export import export_graph

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
        apply_umask(tmp)  # mkstemp makes 0600
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
