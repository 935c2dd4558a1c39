"""The record schema checked on every read: required fields per status and numeric metrics.

One place for what a stored record must hold (the store, its row cache, the ledger and ``collect``
all read through :func:`record_problem`), so a damaged, truncated or crafted file is reported
with its path and the reason instead of counting as done or entering a summary.
"""

from __future__ import annotations

from treebench.errors import TreebenchError

STATUSES = ("ok", "skipped", "failed")

#: fields every record holds, with their type (``int`` accepts no bool)
_COMMON = {"key": str, "status": str}
#: identity fields: of this type where present (the runner writes them all)
_IDENTITY = {"method": str, "dataset": str, "experiment": str, "seed": int, "fold": int}
#: fields a record of each status adds
_BY_STATUS = {
    "ok": {"metrics": dict},
    "skipped": {"reason": str},
    "failed": {"error": str},
}
#: optional numeric fields: a value there must be a number (or null)
_NUMERIC = ("wall_seconds", "cpu_seconds", "fit_seconds", "predict_seconds")


class RecordError(ValueError, TreebenchError):
    """A record that fails :func:`record_problem`; the message names the file and the reason."""


def _is_number(v) -> bool:
    """Return a JSON number (records are parsed JSON: int or float, and bool is no number)."""
    t = type(v)
    return t is float or t is int


def _type_ok(v, t) -> bool:
    return type(v) is int if t is int else isinstance(v, t)


def record_problem(rec, key: str | None = None) -> str | None:
    """Why ``rec`` is not a valid record, or None when it is.

    Parameters
    ----------
    rec : object
        The parsed JSON value of a record file or ledger line.
    key : str, optional
        The run key the record is stored under (its file name); the record's ``key`` must match.
    """
    if type(rec) is not dict:
        return f"not a record (a JSON {type(rec).__name__}, not an object)"
    if "key" not in rec:
        return "not a record (no 'key' field)"
    status = rec.get("status")
    need = _NEED.get(status) if isinstance(status, str) else None
    if need is None:
        return f"status {status!r} is not one of {', '.join(STATUSES)}"
    for f, t in need:
        if f not in rec:
            return f"{status} record without {', '.join(g for g, _ in need if g not in rec)}"
        if not _type_ok(rec[f], t):
            return _wrong(rec, f, t)
    for f, t in _IDENTITY_ITEMS:
        if f in rec and not _type_ok(rec[f], t):
            return _wrong(rec, f, t)
    if key is not None and rec["key"] != key:
        return f"its key {_short(rec['key'])} is not the run key {key} it is stored under"
    for f in _NUMERIC:
        v = rec.get(f)
        if v is not None and not _is_number(v):
            return f"field {f!r} is not a number: {_short(v)}"
    if status == "ok":
        metrics = rec["metrics"]
        if not metrics:
            return "ok record with no metrics"
        for name, v in metrics.items():
            t = type(v)
            if t is not float and t is not int:
                return f"metric {name!r} is not a number: {_short(v)}"
    return None


_NEED = {s: tuple({**_COMMON, **_BY_STATUS[s]}.items()) for s in STATUSES}
_IDENTITY_ITEMS = tuple(_IDENTITY.items())


def _wrong(rec: dict, f: str, t) -> str:
    return f"field {f!r} is {type(rec[f]).__name__} {_short(rec[f])}, not {t.__name__}"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
