"""Feature-engineering benchmark CSV + JSON pairs as redistributed by the DIFER repository.

The layout the One-Stage Tree code reads: headerless CSV, label last, and a JSON of column types
(``num``/``cat``) with the task (``C``/``R``).
"""

from __future__ import annotations

import json

from treebench.data.base import DataError, Dataset
from treebench.data.sources import uci
from treebench.data.sources._common import decode, read_bytes, resolve


def load(files: dict, types: dict, task: str, name: str = "difer", ctx=None) -> Dataset:
    """Load ``files`` (part → csv spec) using the column types in the ``types`` json spec."""
    rf, path = resolve(types, ctx)
    try:
        meta = json.loads(decode(read_bytes(path)))
    except json.JSONDecodeError as exc:
        raise DataError(f"{rf.path}: not valid JSON ({exc})") from exc
    kinds = {int(k): v for k, v in meta.items() if k.isdigit()}
    want = {"C": "classification", "R": "regression"}.get(meta.get("task"))
    if want and want != task:
        raise DataError(f"{rf.path} declares task {meta.get('task')!r} but the config says {task}")
    cats = [str(k) for k, v in sorted(kinds.items()) if v == "cat"]
    return uci.load(
        files, task, target=-1, sep=",", categorical=cats, name=name, source="difer", ctx=ctx
    )
