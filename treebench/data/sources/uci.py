"""UCI repository raw files (.data/.csv/.arff/.zip members/.Z) with per-dataset parsing rules.

A dataset config gives the files per part and the rules: separator, header, column names, target
column, columns to drop, categorical columns, missing-value markers, value maps and target bins.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from treebench.data.base import DataError, Dataset
from treebench.data.sources._common import (
    assemble,
    cached,
    read_arff,
    read_bytes,
    read_table,
    resolve,
    to_xy,
)


def parse_file(
    path,
    label: str,
    *,
    format: str = "csv",
    sep: str = ",",
    header: bool = False,
    names: Sequence[str] | None = None,
    skiprows: int = 0,
    comment: str | None = None,
    member: str | None = None,
    quotechar: str = '"',
    string_cols: Sequence | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Read one file into a table of strings; return it and the ARFF nominal attributes (if any)."""
    data = read_bytes(path, member)
    if format == "arff":
        df, attrs = read_arff(data, label)
        return df, [a for a, v in attrs.items() if v is not None]
    if format != "csv":
        raise ValueError(f"format must be 'csv' or 'arff', got {format!r}")
    df = read_table(
        data,
        label,
        sep=sep,
        header=header,
        names=names,
        skiprows=skiprows,
        comment=comment,
        quotechar=quotechar,
        string_cols=string_cols,
    )
    return df, []


def load(
    files: dict,
    task: str,
    target,
    format: str = "csv",
    sep: str = ",",
    header: bool = False,
    names: list[str] | None = None,
    skiprows: int | dict = 0,
    comment: str | None = None,
    drop: list = (),
    categorical: list | str = (),
    na_values: list[str] = ("?",),
    value_maps: dict | None = None,
    label_strip: str = "",
    target_bins: list[float] | None = None,
    labels: dict | None = None,
    image_shape: list[int] | None = None,
    quotechar: str = '"',
    name: str = "uci",
    source: str = "uci",
    ctx=None,
) -> Dataset:
    """Load a tabular dataset from one file per part (``all`` or ``train``/``val``/``test``).

    Parameters
    ----------
    files : dict of part to file spec ``{url, path, sha256[, member]}``
        A spec may add ``zip_member`` to read one member of a zip kept as distributed.
    target : str or int
        Target column (name, or position; negative counts from the end).
    sep : str
        Field separator; ``whitespace`` for runs of blanks.
    header : bool
        The first (non-skipped) line holds column names.
    names : list of str, optional
        Column names (for files without a header).
    skiprows : int or dict of part to int
        Lines to skip before the header/data (e.g. the first line of adult.test).
    drop : list
        Columns to drop (ids, sequence names, leaky columns).
    categorical : list or "all"
        Columns kept as strings and encoded by the preprocessor (``all`` = every feature).
    na_values : list of str
        Missing-value markers.
    value_maps : dict of column to {value: number}
        Map a column's values to numbers in the loader (e.g. abalone sex → 0/1/2).
    label_strip : str
        Characters stripped from the end of labels (``"."`` for adult.test).
    target_bins : list of float, optional
        Turn a numeric target into classes: class = number of edges <= value.
    labels : dict of part to file spec, optional
        Labels in a separate file (one per line), e.g. madelon; then ``target`` is ignored.
    """
    resolved = {k: resolve(v, ctx) for k, v in files.items()}
    lab_resolved = {k: resolve(v, ctx) for k, v in (labels or {}).items()}
    params = {
        k: v
        for k, v in locals().items()
        if k not in ("ctx", "resolved", "lab_resolved", "files", "labels")
    }
    params["files"] = {k: rf.path for k, (rf, _) in resolved.items()}
    params["labels"] = {k: rf.path for k, (rf, _) in lab_resolved.items()}
    params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}

    def build():
        parts = {}
        cats: list = []
        for part, (rf, path) in resolved.items():
            spec = files[part]
            zmember = spec.get("zip_member") if hasattr(spec, "get") else None
            skip = skiprows.get(part, 0) if isinstance(skiprows, dict) else skiprows
            # fast float parse of the columns that must be numbers (falls back to the checked parse)
            string_cols = None
            if categorical != "all":
                string_cols = [target, *drop, *categorical, *(value_maps or {})]
            df, nominal = parse_file(
                path,
                rf.path + (f"[{zmember}]" if zmember else ""),
                format=format,
                sep=sep,
                header=header,
                names=names,
                skiprows=skip,
                comment=comment,
                member=zmember,
                quotechar=quotechar,
                string_cols=string_cols,
            )
            tgt = target
            if part in lab_resolved:
                lrf, lpath = lab_resolved[part]
                ldf = read_table(read_bytes(lpath), lrf.path, sep="whitespace")
                if len(ldf) != len(df):
                    raise DataError(
                        f"{lrf.path} has {len(ldf)} labels but {rf.path} has {len(df)} rows"
                    )
                df = df.copy()
                df["__target__"] = ldf.iloc[:, 0].to_numpy()
                tgt = "__target__"
            if categorical == "all":
                tname = df.columns[int(tgt)] if isinstance(tgt, int) else tgt
                cat_cols = [c for c in df.columns if c != tname and c not in set(map(str, drop))]
            else:
                cat_cols = list(categorical)
                if format == "arff":
                    tname = df.columns[int(tgt)] if isinstance(tgt, int) else tgt
                    cat_cols += [a for a in nominal if a != tname and a not in cat_cols]
            X, y, cats = to_xy(
                df,
                rf.path,
                target=tgt,
                task=task,
                drop=drop,
                categorical=cat_cols,
                na_values=na_values,
                value_maps=value_maps,
                label_strip=label_strip,
                target_bins=target_bins,
            )
            parts[part] = (X, y)
        if task == "classification" and target_bins is None:
            parts = {k: (X, _numeric_labels(y)) for k, (X, y) in parts.items()}
        return assemble(
            name,
            task,
            parts,
            categorical=cats,
            image_shape=image_shape,
            meta={"source": source, "files": [rf.url for rf, _ in resolved.values()]},
        )

    paths = [p for _, p in resolved.values()] + [p for _, p in lab_resolved.values()]
    return cached(ctx, source, params, paths, build)


def _numeric_labels(y: np.ndarray) -> np.ndarray:
    """Labels that are all numbers become numbers (so 1, 2, 10 sort numerically), else strings."""
    num = pd.to_numeric(pd.Series(y), errors="coerce")
    if not num.isna().any():
        v = num.to_numpy(dtype=np.float64)
        return v.astype(np.int64) if np.all(v == np.round(v)) else v
    return np.asarray(y, dtype=str)
