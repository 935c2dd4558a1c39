"""A user's own table: one local CSV/TSV or Parquet file, one column of which is the target."""

from __future__ import annotations

import difflib
import logging
from pathlib import Path

import numpy as np
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


#: a text column with at most this share of cells that are not numbers is taken for a numeric
#: column with typos, reported instead of being made categorical
MOSTLY_NUMERIC = 0.95
log = logging.getLogger(__name__)


def _reader(p: Path):
    suffixes = [s for s in p.suffixes if s not in (".gz", ".bz2", ".xz", ".zip", ".zst")]
    reader = READERS.get(suffixes[-1].lower() if suffixes else "")
    if reader is None:
        raise DataError(
            f"{p}: cannot tell the format from the suffix; use one of {', '.join(READERS)}"
        )
    if not p.is_file():
        raise DataError(f"no file {p}; set dataset.path=<your .csv or .parquet file>")
    return reader


def _not_utf8(p: Path, exc: UnicodeDecodeError) -> DataError:
    """Return the error naming the line of the first byte that is not UTF-8.

    Of the decompressed text.
    """
    from treebench.data.sources._common import read_bytes

    data = read_bytes(p)
    try:
        data.decode("utf-8")
        at = exc.start
    except UnicodeDecodeError as e:
        at = e.start
    line = data.count(b"\n", 0, at) + 1
    return DataError(
        f"{p}, line {line}: byte 0x{data[at]:02x} is not UTF-8 text; save the file as UTF-8 "
        f"(e.g. `iconv -f latin1 -t utf-8 {p.name} > fixed{''.join(p.suffixes)}`)"
    )


def read_table(path: str | Path) -> pd.DataFrame:
    """Read ``path`` by its suffix (gzip/bz2/xz/zip-compressed CSVs too, e.g. ``data.csv.gz``).

    Text that is not UTF-8 fails naming the file and line.
    """
    p = Path(path).expanduser()
    reader = _reader(p)
    try:
        return reader(p)
    except UnicodeDecodeError as exc:
        raise _not_utf8(p, exc) from None


def header(path: str | Path) -> list[str]:
    """Return the column names as the file has them (duplicates kept), reading no data rows."""
    p = Path(path).expanduser()
    reader = _reader(p)
    if reader in (pd.read_parquet,):
        import pyarrow.parquet as pq

        return list(pq.read_schema(p).names)
    sep = "\t" if reader is READERS[".tsv"] else None if reader is READERS[".txt"] else ","
    try:
        kw = {"sep": sep, "engine": "python"} if sep is None else {"sep": sep}
        row = pd.read_csv(p, header=None, nrows=1, dtype=str, **kw)
    except UnicodeDecodeError as exc:
        raise _not_utf8(p, exc) from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{p}: empty file") from None
    return [str(c) for c in row.iloc[0].tolist()] if len(row) else []


def _duplicates(p: Path, names: list[str]) -> list[str]:
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def check_config(path: str, target: str, drop: list[str] | None = None, **_) -> None:
    """Check what planning can tell without parsing the file.

    It is UTF-8 text (else the line that is not), the target and the dropped columns exist (a
    did-you-mean otherwise); duplicate column names are warned about.
    """
    p = Path(path).expanduser()
    names = header(p)
    if _reader(p) is not pd.read_parquet:  # the whole text is UTF-8 (planning reads it for sha256)
        from treebench.data.sources._common import read_bytes

        try:
            read_bytes(p).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(p, exc) from None
    dup = _duplicates(p, names)
    if dup:
        log.warning(
            f"{p}: duplicate column names {dup}; they are read as {dup[0]!r}, {dup[0]}.1, ... "
            "(rename them in the file to say which is which)"
        )
    _check_columns(p, names, target, drop)


def _check_columns(p: Path, names, target, drop) -> None:
    if str(target) not in names:
        close = difflib.get_close_matches(str(target), names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise DataError(
            f"{p} has no column {target!r} for dataset.target.{hint} Columns: "
            + ", ".join(map(str, names[:30]))
        )
    unknown = [c for c in drop or [] if c not in names]
    if unknown:
        raise DataError(f"{p}: dataset.drop names columns it does not have: {unknown}")


def _rows(p: Path, where) -> str:
    """Line numbers (header = line 1) and values of some rows, for a message."""
    items = list(where.items())
    shown = ", ".join(f"line {int(i) + 2} ({v!r})" for i, v in items[:8])
    return shown + (f" and {len(items) - 8} more" if len(items) > 8 else "")


def _check_target(p: Path, y: pd.Series, target: str, task: str) -> None:
    """Check that a classification target holds class labels: no missing, infinite or NaN values."""
    if y.isna().any():
        raise DataError(
            f"{p}: column {target!r} has {int(y.isna().sum())} missing targets: "
            f"{_rows(p, y[y.isna()])}"
        )
    if task != "classification":
        return
    if pd.api.types.is_numeric_dtype(y):
        bad = ~np.isfinite(y.to_numpy(dtype=float))
    else:  # "inf", "nan" as text; other text labels are classes
        text = y.astype(str).str.strip().str.lower()
        bad = text.isin(["inf", "+inf", "-inf", "infinity", "-infinity", "nan"]).to_numpy()
    if bad.any():
        raise DataError(
            f"{p}: classification target {target!r} has infinite or NaN values, which are no "
            f"class: {_rows(p, y[bad])}; fix or drop those rows"
        )


def _mostly_numeric(p: Path, X: pd.DataFrame, cats: list) -> None:
    """Check that no text column is numbers with typos.

    A text column whose cells are nearly all numbers has typos, not categories: say where.
    """
    for c in cats:
        col = X[c]
        present = col.dropna()
        if present.empty:
            continue
        num = pd.to_numeric(present, errors="coerce")
        text = present[num.isna()]
        if 0 < len(text) <= (1 - MOSTLY_NUMERIC) * len(present):
            raise DataError(
                f"{p}: column {c!r} holds numbers but for {len(text)} of {len(present)} cells: "
                f"{_rows(p, text)}; fix those cells (or leave them empty for missing), or list "
                f"the column in dataset.categorical to treat it as categories"
            )


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
    _check_columns(p, [str(c) for c in df.columns], target, drop)
    y = df.pop(target)
    _check_target(p, y, target, task)
    X = df.drop(columns=list(drop or []))
    if task == "regression":
        y = pd.to_numeric(y, errors="raise").to_numpy(dtype=float)
    else:
        y = y.to_numpy()
    if categorical == "auto":
        cats = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        _mostly_numeric(p, X, cats)
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
