"""OpenML datasets through the ``openml`` package, cached inside treebench's data directory.

Used by ``dataset=openml dataset.data_id=<id>`` and where the mirror holds no file for a dataset
(configs keep the real OpenML id). The package's cache is pointed at ``<data_dir>/openml``; with
``allow_fetch`` off and the dataset not in that cache, loading raises
:class:`DatasetUnavailableError` with the fetch command.

The REST API is ``https://www.openml.org/api/v1/xml`` unless ``TREEBENCH_OPENML_SERVER`` names
another one (an OpenML mirror or test server, a local stand-in). ``openml`` keeps one cache per
server, under ``<data_dir>/openml/<host name reversed>`` (``org/openml/www`` for the default), so
runs must see the same ``TREEBENCH_OPENML_SERVER`` as the ``treebench fetch`` that filled it.
With ``download_qualities`` and ``download_features_meta_data`` off, a download asks for the
dataset description ``<server>/data/<id>`` and then the file it names: the parquet file of
``oml:parquet_url`` when present (falling back to ARFF when that fails), else the ARFF file of
``oml:url``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from treebench.data.base import DataError, Dataset, DatasetUnavailableError
from treebench.data.sources._common import assemble

DEFAULT_SERVER = "https://www.openml.org/api/v1/xml"
SERVER_ENV = "TREEBENCH_OPENML_SERVER"


def server() -> str:
    """Return the OpenML REST API to download from.

    ``$TREEBENCH_OPENML_SERVER``, else OpenML's own.
    """
    return os.environ.get(SERVER_ENV) or DEFAULT_SERVER


def cache_dir(ctx) -> Path:
    """Return treebench's OpenML cache directory under the data directory."""
    return Path(ctx.data_dir) / "openml"


def server_cache_dir(ctx) -> Path:
    """``openml``'s cache for :func:`server` (its rule: the host name's parts reversed)."""
    return cache_dir(ctx).joinpath(*urlparse(server()).netloc.split(".")[::-1])


def fetch_command(dataset: str, data_id: int, **_) -> str:
    """Return the ``treebench fetch`` that downloads this dataset.

    By config name for a shipped config (``dataset=isolet_openml``), else through the generic one
    (``dataset=openml_61`` is no config).
    """
    from treebench.config import CONF_DIR

    if (Path(CONF_DIR) / "dataset" / f"{dataset}.yaml").is_file():
        return f"treebench fetch dataset={dataset}"
    return f"treebench fetch dataset=openml dataset.data_id={int(data_id)}"


def missing(ctx, data_id: int, **_) -> list[str]:
    """Return what a run with fetching off could not get.

    ``["OpenML <id>"]`` when the dataset is not in the OpenML cache (the sweeper and ``run`` stop
    before launching, naming :func:`fetch_command`).
    """
    return [] if is_cached(ctx, data_id) else [f"OpenML {int(data_id)}"]


def is_cached(ctx, data_id: int) -> bool:
    """Return whether the dataset's data file is in the OpenML cache (no network needed)."""
    d = server_cache_dir(ctx) / "datasets" / str(int(data_id))
    return d.is_dir() and any(p.suffix in (".arff", ".pq", ".pkl", ".parquet") for p in d.iterdir())


def load(
    data_id: int,
    task: str,
    target: str | None = None,
    categorical: str = "auto",
    image_shape: list[int] | None = None,
    name: str = "openml",
    ctx=None,
) -> Dataset:
    """Load OpenML dataset ``data_id`` as a single ``all`` part.

    Parameters
    ----------
    target : str, optional
        Target attribute (default: the dataset's default target).
    categorical : {"auto", "none"}
        ``auto`` keeps OpenML's nominal features as categorical columns for the preprocessor;
        ``none`` turns them into their integer codes.
    """
    dataset = getattr(ctx, "dataset", None) or name
    if not getattr(ctx, "allow_fetch", True) and not is_cached(ctx, data_id):
        raise DatasetUnavailableError(
            f"dataset {dataset!r} (OpenML {data_id}) is not in the OpenML cache under "
            f"{cache_dir(ctx)}; download it with `{fetch_command(dataset, data_id)}`"
        )
    import openml

    cache_dir(ctx).mkdir(parents=True, exist_ok=True)
    openml.config.set_root_cache_directory(str(cache_dir(ctx)))
    openml.config.server = server()
    try:
        od = openml.datasets.get_dataset(
            int(data_id),
            download_data=True,
            download_qualities=False,
            download_features_meta_data=False,
        )
        X, y, cat_mask, names = od.get_data(
            target=target or od.default_target_attribute, dataset_format="dataframe"
        )
    except Exception as exc:  # network, server or format errors from the openml package
        raise DatasetUnavailableError(
            f"dataset {dataset!r}: OpenML {data_id} could not be loaded "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    if y is None:
        raise DataError(f"OpenML {data_id} has no default target; set loader.target")
    X = pd.DataFrame(X)
    cats = [c for c, m in zip(X.columns, cat_mask, strict=False) if m]
    for c in X.columns:
        if c in cats:
            X[c] = (
                X[c].astype("object").where(X[c].notna(), np.nan)
                if categorical == "auto"
                else X[c].cat.codes.astype(np.float64).replace(-1, np.nan)
            )
        else:
            X[c] = pd.to_numeric(X[c], errors="coerce").astype(np.float64)
    yv = np.asarray(y.astype(str) if task == "classification" else y.astype(np.float64))
    keep = cats if categorical == "auto" else []
    Xout = X if keep else X.to_numpy(dtype=np.float64)
    return assemble(
        name,
        task,
        {"all": (Xout, yv)},
        categorical=keep,
        image_shape=image_shape,
        meta={
            "source": "openml",
            "openml_id": int(data_id),
            "files": [f"{server().split('/api')[0]}/d/{int(data_id)}"],
        },
    )
