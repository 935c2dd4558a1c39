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
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from treebench.files import apply_umask
from treebench.results.store import parse_record
from treebench.results.validate import record_problem

CACHE_NAME = ".rows.parquet"
_FORMAT = 3  # bump when the row layout changes: older caches are rebuilt
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
    """Row-bind frames and re-infer column types over all rows, as one constructor call would.

    Ints in one part and absent from another give float64, not object.
    """
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    # column by column: DataFrame.infer_objects leaves a column of a split object block as object
    return pd.DataFrame({c: s.infer_objects() if s.dtype == object else s for c, s in df.items()})


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


def _json_texts(values) -> np.ndarray:
    """``json.dumps`` of each value.

    None and NaN (most cells of a sparse column) set at once, each other distinct value encoded once
    (a column repeats a few values over many rows), keyed by type too so that ``False`` and ``0``
    stay apart; a list of plain values is keyed as a tuple.
    """
    arr = pd.Series(values, dtype=object).to_numpy()  # lists stay cells, never a 2-D array
    out = np.empty(len(arr), dtype=object)
    none = arr == None  # noqa: E711 (elementwise: True where the value is None)
    nan = pd.isna(arr) & ~none
    out[none], out[nan] = "null", "NaN"
    rest = np.flatnonzero(~(none | nan))
    memo: dict = {}
    texts = []
    for v in arr[rest]:
        t = type(v)
        key = (t, tuple(v) if t is list else v)
        try:
            text = memo.get(key)
            if text is None:
                text = memo[key] = json.dumps(v)
        except TypeError:  # a dict, or a list holding one
            text = json.dumps(v)
        texts.append(text)
    out[rest] = texts
    return out


def _write_cache(path: Path, df: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    enc = df.copy(deep=False)  # object columns are replaced below, never written into
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


_writing: list[threading.Thread] = []  # cache writes in flight, see _write_cache_soon


def _write_cache_soon(path: Path, df: pd.DataFrame) -> None:
    """Run :func:`_write_cache` in a thread, so the command goes on with the rows meanwhile.

    Most of a Parquet write is Arrow's, outside the GIL; the interpreter waits for it at exit.
    """
    t = threading.Thread(target=_write_cache, args=(path, df), name="treebench-row-cache")
    t.start()
    _writing.append(t)


def flush() -> None:
    """Wait for the row cache writes in flight (before reading a cache, or copying a store)."""
    while _writing:
        _writing.pop().join()


#: record files parsed into one frame by one task: the parsed dicts of a whole store would take
#: about as much memory again as the table (parsing 100,000 records: peak 1.7 -> 1.1 GB, same CPU)
CHUNK = 5000
#: at least this many files to parse go to worker processes (one per core)
PARALLEL_MIN = 2 * CHUNK


@contextmanager
def _collector_paused():
    """Yield the cyclic collector off while records are parsed.

    JSON values hold no reference cycles, yet the collector would traverse the growing heap of
    parsed dicts again and again (~10 % of the parse's CPU at 100,000 records).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse(root: Path, rel: str, stamp: str, flatten, problems: list) -> dict | None:
    """Return the flat row of the record file ``rel``, or None (and its reason in ``problems``)."""
    p = root / rel
    try:
        data = p.read_bytes()
    except FileNotFoundError:  # removed meanwhile
        return None
    except OSError as exc:
        problems.append((p, f"unreadable ({exc.strerror or exc})"))
        return None
    try:
        rec = orjson.loads(data)  # ~2x faster than json; it refuses NaN, bad UTF-8 ...
    except orjson.JSONDecodeError:
        rec, why = parse_record(data, p.stem)  # ... which parse_record reads or names
    else:
        why = record_problem(rec, p.stem)
    if why is not None:
        problems.append((p, why))
        return None
    return {**flatten(rec), _FILE: rel, _STAMP: stamp}


#: :func:`pandas.api.types.infer_dtype` kinds (missing values counted) whose values a typed column
#: gives back unchanged; typing any other kind may lose a value's type (ints with NaN read as
#: floats, None as NaN), which matters where the column holds other types in other chunks
_LOSSLESS = frozenset({"integer", "floating", "boolean", "string"})
#: the largest magnitude up to which every integer is a float64 exactly
_EXACT_INT = 2**53


def _lossless(s: pd.Series, t: pd.Series) -> bool | str:
    """Whether the typed column ``t`` gives back the parsed values ``s``.

    True, ``"ints"`` when :func:`_ints` rebuilds them from ``t`` (ints with missing values typed as
    exact floats), or False (``s`` itself must be kept).
    """
    from pandas.api.types import infer_dtype

    kind = infer_dtype(s, skipna=False)
    if kind in _LOSSLESS:
        return True
    values = s.to_numpy()
    if kind == "integer-na":  # ints and NaN (absent keys), no None
        return "ints" if np.nanmax(np.abs(t.to_numpy())) <= _EXACT_INT else False
    # texts with gaps: a str column's missing value is NaN, so it is lossless without None
    return bool(
        kind == "mixed"
        and t.dtype != object
        and infer_dtype(s.dropna(), skipna=False) == "string"
        and not np.equal(values, None).any()
    )


def _ints(t: pd.Series) -> pd.Series:
    """Return the parsed values of a column :func:`_lossless` typed as ``"ints"``.

    Python ints, NaN where missing.
    """
    out = np.full(len(t), np.nan, dtype=object)
    have = t.notna().to_numpy()
    out[have] = t.to_numpy()[have].astype(np.int64).tolist()
    return pd.Series(out, index=t.index, dtype=object)


def _parse_chunk(root: Path, rels: list[str], stamps: list[str], flatten):
    """Return the rows of the record files ``rels`` as ``(typed, raw, problems)``.

    Typed column by column here (in the worker): ``raw`` keeps the values as parsed of the columns
    whose typing lost something (for :func:`_merge_chunks`; a column of ints with gaps as the name
    ``"ints"`` in ``raw.attrs``, its values being exact in ``typed``), ``problems`` the ``(path,
    reason)`` of each unreadable file.
    """
    problems: list = []
    with _collector_paused():
        rows = [
            r
            for rel, stamp in zip(rels, stamps, strict=True)
            if (r := _parse(root, rel, stamp, flatten, problems))
        ]
        frame = pd.DataFrame(rows, dtype=object)
    typed, raw, ints = {}, {}, []
    for c, s in frame.items():
        typed[c] = t = s.infer_objects()
        if t.dtype != object and (how := _lossless(s, t)) is not True:
            if how == "ints":
                ints.append(c)
            else:
                raw[c] = s
    raw = pd.DataFrame(raw, index=frame.index)
    raw.attrs["ints"] = ints
    return pd.DataFrame(typed, index=frame.index), raw, problems


def _merge_chunks(chunks: list[tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """Row-bind the ``(typed, raw)`` chunks of :func:`_parse_chunk` into one frame.

    The frame one inference over all rows gives (:func:`concat` of the parsed values).

    Typed columns bind as one inference would type their values together (ints and floats give
    floats, any other mix gives objects), and a typed value turns back into the same Python
    value; only a column that comes out as objects and was typed with a loss in some chunk is
    rebuilt from the parsed values. Object columns are then inferred over all rows.
    """
    chunks = [(t, r) for t, r in chunks if not t.empty]
    if not chunks:
        return pd.DataFrame()
    typed = pd.concat([t for t, _ in chunks], ignore_index=True)
    lossy = set().union(
        *(r.columns for _, r in chunks), *(r.attrs.get("ints", ()) for _, r in chunks)
    )

    def parsed(t, r, c):
        if c in r:
            return r[c]
        if c in r.attrs.get("ints", ()):
            return _ints(t[c])
        if c in t:
            return t[c].astype(object)
        return pd.Series(np.nan, index=t.index, dtype=object)

    for c in [c for c, dtype in typed.dtypes.items() if dtype == np.dtype(object)]:
        s = typed[c]
        if c in lossy:
            s = pd.concat([parsed(t, r, c) for t, r in chunks], ignore_index=True)
        # column by column: DataFrame.infer_objects leaves a column of a split block as object
        typed[c] = s.infer_objects()
    return typed


def _parsed_chunks(root: Path, todo: list[str], files: dict, flatten):
    """Yield :func:`_parse_chunk`'s ``(typed, raw, problems)`` per :data:`CHUNK` files of ``todo``.

    In order; on every core when there are :data:`PARALLEL_MIN` files or more (``flatten`` must then
    be a module-level function, which pickles by name).
    """
    tasks = [
        (root, todo[a : a + CHUNK], [files[r] for r in todo[a : a + CHUNK]], flatten)
        for a in range(0, len(todo), CHUNK)
    ]
    if len(todo) < PARALLEL_MIN:
        yield from (_parse_chunk(*t) for t in tasks)
        return
    import multiprocessing

    from joblib import cpu_count

    n = min(cpu_count(), len(tasks))  # cores this process may use (affinity, cgroup quota)
    if (
        n < 2
        or "fork" not in multiprocessing.get_all_start_methods()
        or multiprocessing.current_process().daemon  # a pool's worker may not start processes
    ):
        yield from (_parse_chunk(*t) for t in tasks)
        return
    # forked workers start at once, with this process's imports, and need no resource tracker
    # (which would outlive the command); they only parse JSON and build frames. Leaving the
    # block ends and reaps them.
    with multiprocessing.get_context("fork").Pool(n) as pool:
        yield from pool.imap(_parse_task, tasks)


def _parse_task(task: tuple):
    return _parse_chunk(*task)


def store_rows(root: Path, flatten, problems: list) -> pd.DataFrame:
    """Rows of every record in the store at ``root`` (``flatten`` maps a record to its row).

    Unreadable records are left out and appended to ``problems`` as ``(path, reason)``.
    """
    flush()  # a cache this process is still writing
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
    chunks = [(old, pd.DataFrame(index=old.index))] if old is not None else []
    for typed, raw, probs in _parsed_chunks(root, todo, files, flatten):
        problems.extend(probs)
        if not typed.empty:
            chunks.append((typed, raw))
    if old is not None and len(chunks) == 1 and len(old) == len(files):
        df = old  # nothing changed
    else:
        df = _merge_chunks(chunks)
        if not df.empty:
            if not df[_FILE].is_monotonic_increasing:  # cached rows, then new ones
                df = df.sort_values(_FILE, kind="stable").reset_index(drop=True)
            for (
                c
            ) in df.columns:  # bookkeeping strings, mostly repeated: little memory as categories
                if c.startswith("__") and df[c].dtype != object:
                    df[c] = df[c].astype("category")
            _write_cache_soon(cache, df)
    return df.drop(columns=[_FILE, _STAMP], errors="ignore").reset_index(drop=True)
