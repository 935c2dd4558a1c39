"""Record check on every read and write: the fields of :mod:`treebench.results.record` by version.

One place for what a stored record must hold (the store, its row cache, the ledger and ``collect``
all read through :func:`record_problem`, and :meth:`~treebench.results.store.Store.write` checks
what it writes), so a damaged, truncated or crafted file is reported with its path and the reason
instead of counting as done or entering a summary. The checks are compiled once from the
TypedDicts' annotations; a write checks every field, a read the fields tables and counts use
(reading the whole ledger, ~9,000 records, spends ~30 ms here of ~500 ms).
"""

from __future__ import annotations

import types
import typing
from typing import Any

from treebench.errors import TreebenchError
from treebench.results.record import (
    BY_STATUS,
    FORMAT_FIELD,
    IDENTITY_FIELDS,
    READ_CHECKED,
    RECORD_FORMAT,
    STATUSES,
    VERSION1_RESULT,
)


class RecordError(ValueError, TreebenchError):
    """A record that fails :func:`record_problem`; the message names the file and the reason."""


# A value's check is ``(allowed, part)``: its exact type must be one of ``allowed`` (bool is no int;
# an int is a float; empty: anything), and ``part`` checks inside a dict or list: the
# :class:`_Spec` of a nested TypedDict, or the allowed types of a dict's values or a list's items.
_NUMBER = (int, float)
_ABSENT = object()


def _compile(tp) -> tuple[tuple[type, ...], Any]:
    """Return the check of a value annotated ``tp`` (see above)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return (), None
    if origin in (typing.Union, types.UnionType):
        allowed, parts = [], []
        for arg in typing.get_args(tp):
            a, p = _compile(arg)
            allowed += a
            parts.append(p)
        parts = [p for p in parts if p is not None]
        return tuple(dict.fromkeys(allowed)), (parts[0] if parts else None)
    if origin is typing.Literal:
        return tuple({type(a) for a in typing.get_args(tp)}), None
    if tp is type(None):
        return (type(None),), None
    if tp is float:
        return _NUMBER, None
    if isinstance(tp, type) and typing.is_typeddict(tp):
        return (dict,), _Spec(tp)
    if origin in (dict, list):
        allowed, _ = _compile(typing.get_args(tp)[-1])
        return (origin,), (frozenset(allowed) if allowed else None)
    return (tp,), None


class _Spec:
    """The compiled check of one TypedDict (of its fields in ``only``, when given).

    It holds its fields' types and parts, and its required fields.
    """

    def __init__(self, td, only: tuple[str, ...] | None = None, not_null=frozenset()):
        hints = typing.get_type_hints(td)
        checks = {f: _compile(t) for f, t in hints.items() if only is None or f in only}
        self.types = tuple((f, a) for f, (a, _) in checks.items() if a)
        # version 1 (not ``strict``): null passes, except in the fields of ``not_null``
        none = (type(None),)
        self.types_v1 = tuple((f, a if f in not_null else a + none) for f, a in self.types)
        self.nested = tuple((f, p) for f, (_, p) in checks.items() if isinstance(p, _Spec))
        self.values = tuple((f, p) for f, (_, p) in checks.items() if isinstance(p, frozenset))
        self.required = frozenset(td.__required_keys__)

    def problem(self, rec: dict, strict: bool) -> str | None:
        """Why the fields of ``rec`` present are not of their types, or None.

        With ``strict``, also why a nested part lacks a required field.
        """
        get = rec.get
        for f, allowed in self.types if strict else self.types_v1:
            v = get(f, _ABSENT)
            if type(v) not in allowed and v is not _ABSENT:
                allowed = tuple(t for t in allowed if t is not type(None)) or allowed
                return f"field {f!r} is {type(v).__name__} {_short(v)}, not {_names(allowed)}"
        for f, allowed in self.values:
            v = rec.get(f)
            if v is not None and not allowed.issuperset(
                map(type, v.values() if type(v) is dict else v)
            ):
                return _item_problem(f, v, allowed)
        for f, spec in self.nested:
            v = rec.get(f)
            if type(v) is dict:
                if strict and not spec.required <= v.keys():
                    return f"{f}: no {', '.join(sorted(spec.required - v.keys()))}"
                why = spec.problem(v, strict)
                if why is not None:
                    return f"{f}: {why}"
        return None


def _item_problem(f: str, v, allowed: frozenset) -> str:
    for name, item in v.items() if type(v) is dict else enumerate(v):
        if type(item) not in allowed:
            return f"{f}[{name!r}] is not {_names(tuple(allowed))}: {_short(item)}"
    return f"{f} has an item of another type"  # not reached: some item failed the superset test


_BY_STATUS = {s: _Spec(td) for s, td in BY_STATUS.items()}
#: what a read checks; a version-1 record's identity and result were never null
_READ_BY_STATUS = {
    s: _Spec(td, READ_CHECKED, not_null={*IDENTITY_FIELDS, *VERSION1_RESULT.values()})
    for s, td in BY_STATUS.items()
}


def record_problem(rec, key: str | None = None, full: bool = False) -> str | None:
    """Why ``rec`` is not a valid record, or None when it is.

    A record is checked by its format version (:mod:`treebench.results.record`): one without
    ``record_format`` is version 1 and needs its key, status and its status's result, and the
    fields of :data:`~treebench.results.record.READ_CHECKED` present are of their types or
    null; a version-2 record needs every field its status requires, and those fields are of
    their types (not null). With ``full`` (what :meth:`~treebench.results.store.Store.write`
    asks before writing), every declared field is checked, nested parts and items included; a
    read checks the fields above, which costs about as much as parsing a tenth of the record.

    Parameters
    ----------
    rec : object
        The parsed JSON value of a record file or ledger line.
    key : str, optional
        The run key the record is stored under (its file name); the record's ``key`` must match.
    full : bool
        Check every declared field (a record about to be written), not only those read.
    """
    if type(rec) is not dict:
        return f"not a record (a JSON {type(rec).__name__}, not an object)"
    if "key" not in rec:
        return "not a record (no 'key' field)"
    status = rec.get("status")
    spec = _BY_STATUS.get(status) if type(status) is str else None
    if spec is None:
        return f"status {status!r} is not one of {', '.join(STATUSES)}"
    version = rec.get(FORMAT_FIELD, 1)
    if version == 1 and FORMAT_FIELD not in rec:
        need = ("key", VERSION1_RESULT[status])
        missing = [f for f in need if f not in rec]
        spec, strict = (spec if full else _READ_BY_STATUS[status]), False
    elif type(version) is int and 1 < version <= RECORD_FORMAT:
        missing = sorted(spec.required - rec.keys()) if not spec.required <= rec.keys() else []
        spec, strict = (spec if full else _READ_BY_STATUS[status]), True
    elif type(version) is int and version > RECORD_FORMAT:
        return (
            f"record format {version} is newer than this treebench reads (1 to {RECORD_FORMAT}); "
            "upgrade treebench (pip install -U treebench, or git pull in a checkout) to read it"
        )
    else:
        return (
            f"field {FORMAT_FIELD!r} is {_short(version)}, not a format version "
            f"(1 to {RECORD_FORMAT})"
        )
    if missing:
        return f"{status} record without {', '.join(missing)}"
    why = spec.problem(rec, strict)
    if why is not None:
        return why
    if key is not None and rec["key"] != key:
        return f"its key {_short(rec['key'])} is not the run key {key} it is stored under"
    if status == "ok" and not rec["metrics"]:
        return "ok record with no metrics"
    return None


def _names(allowed: tuple[type, ...]) -> str:
    names = ["null" if t is type(None) else t.__name__ for t in allowed]
    return "a number" if set(allowed) == set(_NUMBER) else " or ".join(names)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
