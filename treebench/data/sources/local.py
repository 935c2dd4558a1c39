"""A user's own table: one local CSV/TSV or Parquet file, one column of which is the target."""

from __future__ import annotations

import difflib
from pathlib import Path

import pandas as pd

from treebench.data.base import DataError, Dataset
from treebench.data.cache import sha256_file
from treebench.data.sources._common import assemble

READERS = {
    ".csv": pd.read_csv,
    ".tsv": lambda p: pd.read_csv(p, sep="\t"),
    ".txt": lambda p: pd.read_csv(p, sep=None, engine="python"),
    ".parquet": pd.read_parquet,
    ".pq": pd.read_parquet,
}


def read_table(path: str | Path) -> pd.DataFrame:
    """Read ``path`` by its suffix (gzip/bz2/xz/zip-compressed CSVs too, e.g. ``data.csv.gz``)."""
    p = Path(path).expanduser()
    suffixes = [s for s in p.suffixes if s not in (".gz", ".bz2", ".xz", ".zip", ".zst")]
    reader = READERS.get(suffixes[-1].lower() if suffixes else "")
    if reader is None:
        raise DataError(
            f"{p}: cannot tell the format from the suffix; use one of {', '.join(READERS)}"
        )
    if not p.is_file():
        raise DataError(f"no file {p}; set dataset.path=<your .csv or .parquet file>")
    return reader(p)


def file_sha256(path: str) -> str:
    """sha256 of a local file, for the config (so the run key changes when the file does)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"no file {p}; set dataset.path=<your .csv or .parquet file>")
    return sha256_file(p)


def load(
    path: str,
    target: str,
    task: str,
    sha256: str | None = None,
    drop: list[str] | None = None,
    categorical: list[str] | str = "auto",
    ctx=None,
) -> Dataset:
    """Load a local table as a single ``all`` part.

    Parameters
    ----------
    path : str
        A ``.csv``, ``.tsv``, ``.txt`` (delimiter sniffed) or ``.parquet`` file, optionally
        compressed (``.csv.gz``).
    target : str
        The column to predict; every other column (except ``drop``) is a feature.
    sha256 : str, optional
        Expected checksum of the file (the config fills it in from the file, so that the run key
        changes with the data).
    drop : list of str, optional
        Columns that are not features (ids, leaks).
    categorical : "auto" or list of str
        ``auto``: text and category columns are categorical (the preprocessor encodes them).
    """
    p = Path(path).expanduser()
    name = getattr(ctx, "dataset", None) or p.stem
    if sha256 is not None and p.is_file() and sha256_file(p) != sha256:
        raise DataError(f"{p} changed since the job was planned (sha256 differs); plan it again")
    df = read_table(p)
    if target not in df.columns:
        close = difflib.get_close_matches(str(target), [str(c) for c in df.columns], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise DataError(
            f"{p} has no column {target!r} for dataset.target.{hint} Columns: "
            + ", ".join(map(str, df.columns[:30]))
        )
    unknown = [c for c in drop or [] if c not in df.columns]
    if unknown:
        raise DataError(f"{p}: dataset.drop names columns it does not have: {unknown}")
    y = df.pop(target)
    if y.isna().any():
        raise DataError(f"{p}: column {target!r} has {int(y.isna().sum())} missing targets")
    X = df.drop(columns=list(drop or []))
    if task == "regression":
        y = pd.to_numeric(y, errors="raise").to_numpy(dtype=float)
    else:
        y = y.to_numpy()
    if categorical == "auto":
        cats = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    else:
        cats = list(categorical)
    for c in cats:
        X[c] = X[c].astype("object").where(X[c].notna(), None)
    return assemble(
        name,
        task,
        {"all": (X, y)},
        categorical=cats,
        meta={
            "source": str(p),
            "sha256": sha256 or sha256_file(p),
            "feature_names": list(X.columns),
        },
    )
