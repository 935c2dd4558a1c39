"""The parsed-dataset cache on disk.

Arrays in ``.npz`` (read with ``allow_pickle=False``), the rest in JSON, both verified against the
hash of their inputs and of their content before use.

A cache entry ``<stem>-<key>.npz`` + ``<stem>-<key>.json`` holds one :class:`Dataset`. The JSON
names the inputs it was parsed from (loader kind, parameters, raw files' sha256, parser version)
and the sha256 of the ``.npz``; an entry whose inputs or content differ (a flipped bit, a permuted
label array, a file from another parse) is rebuilt with a warning. Nothing in an entry can run
code: numpy refuses object arrays without pickle, and JSON is data. A dataset whose parts cannot
be held so (object arrays of non-text values, extension dtypes) is simply not cached.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.data.base import Dataset, Part
from treebench.files import apply_umask

_FORMAT = 2  # 1 was a pickle of the Dataset, never read again


class _Unstorable(Exception):
    """A value the cache cannot hold without pickle: the dataset is not cached."""


def _plain_array(a: np.ndarray, name: str, arrays: dict) -> dict:
    if a.dtype.kind == "O":
        return _text_array(a, name, arrays)
    if a.dtype.kind not in "biufUS":
        raise _Unstorable(f"{name}: dtype {a.dtype}")
    arrays[name] = a
    return {"kind": "array"}


def _text_array(a, name: str, arrays: dict) -> dict:
    """Return an object array of strings with missing values (None or NaN) as text plus a mask."""
    values = np.asarray(a, dtype=object)
    missing = pd.isna(values)
    present = values[~missing]
    if not all(isinstance(v, str) for v in present):
        raise _Unstorable(f"{name}: object values that are not text")
    text = np.where(missing, "", values).astype(str) if len(values) else np.array([], dtype="U1")
    arrays[name], arrays[name + ".missing"] = text, missing
    return {"kind": "text", "nan": bool(any(v is not None for v in values[missing]))}


def _encode_x(X, name: str, arrays: dict) -> dict:
    if isinstance(X, np.ndarray):
        return _plain_array(X, name, arrays)
    if hasattr(X, "tocsr"):  # scipy sparse
        m = X.tocsr()
        for part in ("data", "indices", "indptr"):
            _plain_array(getattr(m, part), f"{name}.{part}", arrays)
        return {"kind": "csr", "shape": list(m.shape)}
    if isinstance(X, pd.DataFrame):
        cols = []
        for i, c in enumerate(X.columns):
            if not isinstance(c, str | int) or isinstance(c, bool):
                raise _Unstorable(f"{name}: column name {c!r}")
            s = X[c] if X.columns.is_unique else X.iloc[:, i]
            if not isinstance(s.dtype, np.dtype):  # category, nullable Int64, ...
                raise _Unstorable(f"{name}: column {c!r} of dtype {s.dtype}")
            cols.append({"name": c, **_plain_array(s.to_numpy(), f"{name}.{i}", arrays)})
        return {"kind": "frame", "columns": cols}
    raise _Unstorable(f"{name}: {type(X).__name__}")


def _decode_array(desc: dict, name: str, arrays) -> np.ndarray:
    if desc["kind"] == "text":
        text, missing = arrays[name], arrays[name + ".missing"]
        out = text.astype(object)
        out[missing] = np.nan if desc.get("nan") else None
        return out
    return arrays[name]


def _decode_x(desc: dict, name: str, arrays):
    if desc["kind"] == "csr":
        import scipy.sparse as sp

        parts = (arrays[f"{name}.{p}"] for p in ("data", "indices", "indptr"))
        return sp.csr_matrix(tuple(parts), shape=tuple(desc["shape"]))
    if desc["kind"] == "frame":
        cols = desc["columns"]
        return pd.DataFrame(
            {i: _decode_array(c, f"{name}.{i}", arrays) for i, c in enumerate(cols)}
        ).set_axis([c["name"] for c in cols], axis=1)
    return _decode_array(desc, name, arrays)


def _json_exact(value):
    """``value`` when JSON gives it back unchanged (no tuples, numpy scalars ...), else raise."""
    text = json.dumps(value, allow_nan=True)
    if json.loads(text) != value:
        raise _Unstorable("metadata JSON does not give back")
    return value


def encode(ds: Dataset) -> tuple[bytes, dict]:
    """(``.npz`` bytes, JSON-able description) of ``ds``; raises :class:`_Unstorable`."""
    arrays: dict[str, np.ndarray] = {}
    parts = {}
    for k, part in ds.parts.items():
        parts[k] = {
            "X": _encode_x(part.X, f"{k}.X", arrays),
            "y": _plain_array(np.asarray(part.y), f"{k}.y", arrays),
        }
    desc = {
        "name": ds.name,
        "task": ds.task,
        "categorical": _json_exact(list(ds.categorical)),
        "image_shape": list(ds.image_shape) if ds.image_shape else None,
        "meta": _json_exact(ds.meta),
        "parts": parts,
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue(), desc


def decode(data: bytes, desc: dict) -> Dataset:
    """Return the dataset that :func:`encode` wrote as ``data`` and ``desc``."""
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    parts = {
        k: Part(_decode_x(p["X"], f"{k}.X", arrays), _decode_array(p["y"], f"{k}.y", arrays))
        for k, p in desc["parts"].items()
    }
    return Dataset(
        name=desc["name"],
        task=desc["task"],
        parts=parts,
        categorical=list(desc["categorical"]),
        image_shape=tuple(desc["image_shape"]) if desc["image_shape"] else None,
        meta=desc["meta"],
    )


def _with(stem: Path, suffix: str) -> Path:
    return stem.parent / (stem.name + suffix)  # not with_suffix: dataset names may hold dots


def load(stem: Path, inputs: dict) -> Dataset | None:
    """Return the dataset cached at ``stem`` (``.npz`` + ``.json``), or None when there is none.

    Only an entry parsed from ``inputs`` whose content is intact counts. A damaged or mismatched
    entry is removed with a warning (the caller rebuilds it).
    """
    meta_p, data_p = _with(stem, ".json"), _with(stem, ".npz")
    if not meta_p.exists():
        return None
    why = None
    try:
        head = json.loads(meta_p.read_text(encoding="utf-8"))
        data = data_p.read_bytes()
        if not isinstance(head, dict) or head.get("format") != _FORMAT:
            why = "written by another treebench version"
        elif head.get("inputs") != inputs:
            why = "parsed from other inputs"
        elif head.get("content_sha256") != hashlib.sha256(data).hexdigest():
            why = "its arrays do not match their recorded sha256 (changed or damaged)"
        else:
            return decode(data, head["dataset"])
    except (OSError, ValueError, KeyError, TypeError) as exc:  # torn, foreign or crafted entry
        why = f"unreadable ({type(exc).__name__}: {exc})"
    warnings.warn(f"parsed-data cache {data_p} {why}; parsing the raw files again", stacklevel=3)
    for p in (meta_p, data_p):
        p.unlink(missing_ok=True)
    return None


def save(stem: Path, inputs: dict, ds: Dataset) -> bool:
    """Cache ``ds`` at ``stem`` (atomically, the JSON last).

    False when it cannot be held without pickle or the cache directory refuses it (the cache only
    saves time).
    """
    try:
        data, desc = encode(ds)
    except _Unstorable:
        return False
    head = {
        "format": _FORMAT,
        "inputs": inputs,
        "content_sha256": hashlib.sha256(data).hexdigest(),
        "dataset": desc,
    }
    tmps = []
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        for suffix, blob in ((".npz", data), (".json", json.dumps(head).encode())):
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=stem.parent)
            tmps.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            apply_umask(tmp)  # mkstemp makes 0600
            os.replace(tmp, _with(stem, suffix))
            tmps.remove(tmp)
    except OSError:  # a read-only or full cache only costs time
        for tmp in tmps:
            Path(tmp).unlink(missing_ok=True)
        return False
    return True
