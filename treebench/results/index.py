"""A cache of the store's flattened rows in one Parquet file, so tables scale to 100k records.

``status``, ``collect`` and ``check`` need every record as one flat row, and parsing 100,000 JSON
files costs most of their time. ``<store>/.rows.parquet`` keeps each record's row with the file's
path, mtime and size; a read parses only the record files that are new or changed since, drops the
rows of removed files, and rewrites the cache when anything changed (an unwritable store just goes
without). Invariants:

* the rows equal those parsed from the JSON files, in the order of :meth:`Store.records` (object
  columns are stored as JSON text, so ``False`` stays ``False`` and ``0`` stays ``0``);
* the records stay the truth: deleting ``.rows.parquet`` changes nothing but the time taken;
* an unreadable record is never cached, so it is reported on every read.
"""

from __future__ import annotations

import gc
import json
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.files import apply_umask

CACHE_NAME = ".rows.parquet"
_FORMAT = 1  # bump when the row layout changes: older caches are rebuilt
_META_KEY = b"treebench.rows"
_FILE, _STAMP = "__file", "__stamp"  # the record's path in the store, "<mtime_ns>:<size>"


def listing(root: Path) -> dict[str, str]:
    """``{"<shard>/<name>": "<mtime_ns>:<size>"}`` of a store's record files, sorted by path."""
    out = {}
    if not root.exists():
        return out
    for shard in sorted(os.scandir(root), key=lambda e: e.name):
        if not shard.is_dir() or shard.name.startswith("."):
            continue
        with os.scandir(shard.path) as it:
            for e in sorted(it, key=lambda e: e.name):
                if e.name.endswith(".json") and not e.name.startswith("."):  # not .tmp-* writes
                    st = e.stat()
                    out[f"{shard.name}/{e.name}"] = f"{st.st_mtime_ns}:{st.st_size}"
    return out


def concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Row-bind frames and re-infer column types over all rows, as one constructor call over all
    rows would (ints in one part and absent from another give float64, not object)."""
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True).infer_objects()


def _read_cache(path: Path) -> pd.DataFrame | None:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[_META_KEY])
    except (OSError, KeyError, ValueError, TypeError):  # absent, partial or foreign: rebuild
        return None
    if meta.get("format") != _FORMAT:
        return None
    df = table.to_pandas()[meta["columns"]]
    for c in meta["object_columns"]:  # stored as categories: decode each distinct value once
        cat = df[c].astype("category").cat
        values = np.empty(len(cat.categories), dtype=object)
        for i, v in enumerate(cat.categories):
            values[i] = json.loads(v)
        df[c] = pd.Series(values[cat.codes.to_numpy()], index=df.index, dtype=object)
    return df


def _json_texts(values) -> list[str]:
    """``json.dumps`` of each value, each distinct hashable value encoded once (a column repeats a
    few values over many rows); keyed by type too, so ``False`` and ``0`` stay apart."""
    memo: dict = {}
    out = []
    for v in values:
        try:
            text = memo.get((type(v), v))
            if text is None:
                text = memo[(type(v), v)] = json.dumps(v)
        except TypeError:  # a list or dict
            text = json.dumps(v)
        out.append(text)
    return out


def _write_cache(path: Path, df: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    enc = df.copy()
    obj = [c for c in enc.columns if enc[c].dtype == object]
    for c in obj:  # Parquet needs one type per column; JSON text keeps each value's own type
        enc[c] = pd.Categorical(_json_texts(enc[c]))
    table = pa.Table.from_pandas(enc, preserve_index=False)
    meta = {"format": _FORMAT, "columns": list(df.columns), "object_columns": obj}
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode()}
    )
    tmp = path.with_name(f".tmp-{os.getpid()}{CACHE_NAME}")
    try:
        pq.write_table(table, tmp)
        apply_umask(tmp)
        os.replace(tmp, path)
    except OSError:  # a read-only shared store: parse the JSON files every time
        tmp.unlink(missing_ok=True)


#: record files parsed into one frame at a time: the parsed dicts of a whole store would take about
#: as much memory again as the table (parsing 100,000 records: peak 1.7 -> 1.1 GB, same CPU)
CHUNK = 5000


@contextmanager
def _collector_paused():
    """The cyclic collector off while records are parsed: JSON values hold no reference cycles,
    yet the collector would traverse the growing heap of parsed dicts again and again (~10 % of
    the parse's CPU at 100,000 records)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse(root: Path, rel: str, files: dict, flatten, problems: list) -> dict | None:
    """The flat row of the record file ``rel``, or None (and its reason in ``problems``)."""
    p = root / rel
    try:
        rec = json.loads(p.read_bytes())
    except json.JSONDecodeError as exc:
        problems.append((p, f"not valid JSON ({exc})"))
        return None
    except FileNotFoundError:  # removed meanwhile
        return None
    except OSError as exc:
        problems.append((p, f"unreadable ({exc.strerror or exc})"))
        return None
    if not isinstance(rec, dict) or "key" not in rec:
        problems.append((p, "not a record (no 'key' field)"))
        return None
    return {**flatten(rec), _FILE: rel, _STAMP: files[rel]}


def store_rows(root: Path, flatten, problems: list) -> pd.DataFrame:
    """Rows of every record in the store at ``root`` (``flatten`` maps a record to its row).

    Unreadable records are left out and appended to ``problems`` as ``(path, reason)``.
    """
    files = listing(root)
    cache = root / CACHE_NAME
    old = _read_cache(cache) if files else None
    if old is not None and not old.empty:
        current = pd.Series(files, dtype=object)
        keep = old[_STAMP].to_numpy() == current.reindex(old[_FILE]).to_numpy()
        old = old[keep]
        cached = set(old[_FILE])
        todo = [f for f in files if f not in cached]
    else:
        old, todo = None, list(files)
    parts = []
    with _collector_paused():
        for a in range(0, len(todo), CHUNK):
            rows = [
                r
                for rel in todo[a : a + CHUNK]
                if (r := _parse(root, rel, files, flatten, problems))
            ]
            if rows:  # values as parsed: types are inferred once over all rows, by concat()
                parts.append(pd.DataFrame(rows, dtype=object))
    if not parts and old is not None and len(old) == len(files):
        df = old  # nothing changed
    else:
        df = concat([old if old is not None else pd.DataFrame(), *parts])
        if not df.empty:
            df = df.sort_values(_FILE, kind="stable").reset_index(drop=True)
            for (
                c
            ) in df.columns:  # bookkeeping strings, mostly repeated: little memory as categories
                if c.startswith("__") and df[c].dtype != object:
                    df[c] = df[c].astype("category")
            _write_cache(cache, df)
    return df.drop(columns=[_FILE, _STAMP], errors="ignore").reset_index(drop=True)
