"""The committed results ledger: every record behind REPRODUCTION.md.

One gzip'd JSONL file per experiment.

Invariants
----------
* A run key appears once in the whole ledger, in the file of its record's ``experiment`` label; the
  other experiments that share the fit are listed in the record's ``also_experiments``.
* Only done records (``ok`` or ``skipped``) enter; a failed run is not a result.
* A key is never rewritten with other numbers: adding a record whose key exists with different
  metrics, size or status is refused as a whole (:class:`LedgerConflict`), nothing written.
* Files are byte-deterministic for their content (lines sorted by key, canonical JSON, gzip without
  a timestamp), so the ledger's :meth:`Ledger.content_hash` names exactly what a report was made
  from.
* An experiment whose file would pass :data:`MAX_FILE_BYTES` is written as 16 shards
  ``<experiment>.<first hex digit of the key>.jsonl.gz`` instead: files stay small enough to commit,
  and reading the files in name order still gives each experiment's records sorted by key.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from treebench.errors import TreebenchError
from treebench.files import atomic_write_bytes
from treebench.results.record import (
    DONE_STATUSES,
    LOCAL_FIELDS,
    RESULT_FIELDS,
    Record,
    profile_of_record,
)
from treebench.results.store import parse_record

SUFFIX = ".jsonl.gz"
#: an experiment's file larger than this (compressed) is split into shards by the key's first digit
MAX_FILE_BYTES = 900_000


class LedgerConflict(ValueError, TreebenchError):
    """Records whose key is in the ledger with other results; the message lists every one."""


class LedgerFileError(ValueError, TreebenchError):
    """A ledger file that cannot be read whole; the message names the file, the line and the fix."""


def read_lines(path: Path) -> tuple[list[Record], list[tuple[str, str]]]:
    """Return the valid records of one ledger file and the problems of its other lines.

    A problem is ``("<file>, line <n>", reason)`` of a line that is not a record (not JSON, fails
    :func:`~treebench.results.validate.record_problem`: the reason says how to get the committed
    file back); a file that is not gzip or is cut short yields the lines before the damage and
    names where it stopped.
    """
    recs: list[Record] = []
    problems: list[tuple[str, str]] = []
    n = 0
    try:
        with gzip.open(path, "rb") as f:
            for n, raw in enumerate(f, start=1):  # noqa: B007 - n names where a damage stopped
                if not raw.strip():
                    continue
                rec, why = parse_record(raw)
                if why is None:
                    recs.append(rec)
                else:
                    problems.append((f"{path}, line {n}", _with_fix(why, path)))
    except (OSError, EOFError, zlib.error) as exc:
        what = "cut short" if isinstance(exc, EOFError) else f"not readable ({exc})"
        problems.append(
            (f"{path}, line {n + 1}", f"the gzip file is {what}; the lines from here are lost")
        )
    return recs, problems


def _with_fix(why: str, path: Path) -> str:
    """Return a ledger line's problem with its fix.

    The fix: the committed file is in git (a record of a newer format says to upgrade instead).
    """
    return (
        why if "upgrade" in why else f"{why} (`git checkout -- {path}` restores the committed file)"
    )


def _line(rec: dict) -> str:
    return json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _same_result(a: Record, b: Record) -> bool:
    return all(_line(a.get(f)) == _line(b.get(f)) for f in RESULT_FIELDS)


def merge_labels(rec: Record, other: Record) -> Record:
    """``rec`` with ``other``'s plan labels added.

    Its experiments go to ``also_experiments`` (first label kept), and its ``full_plan_of`` too
    (:func:`~treebench.results.store.with_label`).
    """
    labels = [other.get("experiment"), *(other.get("also_experiments") or [])]
    also = list(rec.get("also_experiments") or [])
    for lab in labels:
        if lab and lab != rec.get("experiment") and lab not in also:
            also.append(lab)
    out = {**rec, "also_experiments": sorted(also)} if also else rec
    full = {*(rec.get("full_plan_of") or []), *(other.get("full_plan_of") or [])}
    if profile_of_record(other) == "full" and other.get("experiment"):
        full.add(other["experiment"])  # another record of the key made under a full plan
    if profile_of_record(rec) == "full":
        full.discard(rec.get("experiment"))  # its own label says so already
    return {**out, "full_plan_of": sorted(full)} if full else out


@dataclass
class AddResult:
    """What :meth:`Ledger.add` did (or, with ``dry_run``, would do), per experiment file."""

    added: dict[str, int] = field(default_factory=dict)
    relabelled: int = 0  # records already in the ledger that gained a plan label
    unchanged: int = 0
    not_done: int = 0  # failed records, never added

    @property
    def n_added(self) -> int:
        """Number of records added, over all experiment files."""
        return sum(self.added.values())


class Ledger:
    """A directory of ``<experiment>[.<shard>].jsonl.gz`` files (see the module's invariants)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        #: ``(where, reason)`` of each damaged line met while reading (those lines are left out)
        self.problems: list[tuple[str, str]] = []
        self._damaged: set[Path] = set()

    def files(self) -> list[Path]:
        """Return the ledger's files sorted by name; none when :attr:`root` is not a directory."""
        return sorted(self.root.glob(f"*{SUFFIX}")) if self.root.is_dir() else []

    def read_file(self, path: Path) -> list[Record]:
        """Return the valid records of one file.

        Damaged lines are left out and listed in :attr:`problems` (once per file).
        """
        recs, problems = read_lines(path)
        if problems and path not in self._damaged:
            self._damaged.add(path)
            self.problems.extend(problems)
        return recs

    def records(self) -> Iterator[Record]:
        """Every valid ledger record, file by file (sorted by experiment), each sorted by key.

        See :meth:`read_file` for damaged lines.
        """
        for p in self.files():
            yield from self.read_file(p)

    def _refuse_damaged(self, experiment: str) -> None:
        """Refuse to rewrite a damaged file of ``experiment``, naming its unreadable lines.

        Rewriting a damaged file would drop its unreadable lines for good.
        """
        bad = [p for p in self._damaged if experiment_of(p) == experiment]
        if bad:
            lines = [f"{w}: {why}" for w, why in self.problems if any(str(p) in w for p in bad)]
            raise LedgerFileError(
                f"the ledger file(s) of {experiment!r} are damaged; restore them first "
                f"(`git checkout -- {' '.join(str(p) for p in bad)}`), nothing was written:\n  "
                + "\n  ".join(lines)
            )

    @cached_property
    def _by_key(self) -> dict[str, Record]:
        return {r["key"]: r for r in self.records()}

    def get(self, key: str) -> Record | None:
        """Return the ledger's record of ``key``, or None."""
        return self._by_key.get(key)

    def keys(self) -> set[str]:
        """Return the run keys in the ledger."""
        return set(self._by_key)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def content_hash(self) -> str:
        """sha256 (first 16 hex digits) over the files' names and decompressed contents."""
        h = hashlib.sha256()
        for p in self.files():
            h.update(p.name.encode() + b"\0")
            with gzip.open(p, "rb") as f:
                h.update(f.read())
        return h.hexdigest()[:16]

    def file_counts(self) -> list[tuple[str, int, int, int, float]]:
        """Per ledger file: its name, records, ``ok`` records, the others, and its size in KiB."""
        rows = []
        for p in self.files():
            recs = self.read_file(p)
            n_ok = sum(r["status"] == "ok" for r in recs)
            rows.append((p.name, len(recs), n_ok, len(recs) - n_ok, p.stat().st_size / 1024))
        return rows

    def add(self, records: Iterable[Record], dry_run: bool = False) -> AddResult:
        """Add done records; merge experiment labels of known keys; refuse conflicting results.

        Raises
        ------
        LedgerConflict
            If any record's key is in the ledger (or twice in ``records``) with a different status,
            metrics or size. Nothing is written then.
        """
        current = dict(self._by_key)
        res = AddResult()
        conflicts: list[str] = []
        touched: set[str] = set()  # experiment files to rewrite
        for rec in records:
            if rec.get("status") not in DONE_STATUSES:
                res.not_done += 1
                continue
            rec = {k: v for k, v in rec.items() if k not in LOCAL_FIELDS}
            old = current.get(rec["key"])
            if old is None:
                current[rec["key"]] = rec
                touched.add(rec["experiment"])
                res.added[rec["experiment"]] = res.added.get(rec["experiment"], 0) + 1
                continue
            if not _same_result(old, rec):
                conflicts.append(
                    f"{rec['key']} ({rec['method']} | {rec['dataset']} | seed {rec['seed']} | "
                    f"fold {rec['fold']}): ledger {old.get('status')} {old.get('metrics')} vs "
                    f"new {rec.get('status')} {rec.get('metrics')}"
                )
                continue
            merged = merge_labels(old, rec)
            if merged == old:
                res.unchanged += 1
            else:
                current[rec["key"]] = merged
                touched.add(old["experiment"])
                res.relabelled += 1
        if conflicts:
            raise LedgerConflict(
                f"{len(conflicts)} record(s) already in the ledger with other results; a run key "
                "must always give the same numbers (nothing was written):\n  "
                + "\n  ".join(conflicts)
            )
        if not dry_run and touched:
            for exp in sorted(touched):
                self._refuse_damaged(exp)
            for exp in sorted(touched):
                self._write(exp, [r for r in current.values() if r["experiment"] == exp])
            self.__dict__.pop("_by_key", None)
        return res

    def _write(self, experiment: str, records: list[dict]) -> list[Path]:
        """Write one experiment's records atomically, lines sorted by key, gzip without timestamp.

        One file, or shards by the key's first digit when one would pass :data:`MAX_FILE_BYTES`;
        files of the experiment's other layout are removed after.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        recs = sorted(records, key=lambda r: r["key"])
        whole = _gzip(recs)
        if len(whole) <= MAX_FILE_BYTES:
            parts = {f"{experiment}{SUFFIX}": whole}
        else:
            digits = sorted({r["key"][0] for r in recs})
            parts = {
                f"{experiment}.{d}{SUFFIX}": _gzip([r for r in recs if r["key"][0] == d])
                for d in digits
            }
        written = [atomic_write_bytes(self.root / name, data) for name, data in parts.items()]
        for p in self.files():
            if experiment_of(p) == experiment and p.name not in parts:
                p.unlink()
        return written


def experiment_of(path: Path) -> str:
    """Return the experiment a ledger file holds.

    E.g. ``rhf_table2`` for both ``rhf_table2.jsonl.gz`` and ``rhf_table2.3.jsonl.gz``.
    """
    return path.name[: -len(SUFFIX)].split(".", 1)[0]


def _gzip(records: list[dict]) -> bytes:
    body = "".join(_line(r) + "\n" for r in records)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(body.encode("utf-8"))
    return buf.getvalue()


def records_hash(records: Iterable[dict]) -> str:
    """sha256 (first 16 hex digits) of records as the ledger writes them.

    The records are hashed as canonical JSON lines sorted by key; the hash names a subset of the
    ledger, e.g. one experiment's records, whatever files they are in.
    """
    h = hashlib.sha256()
    for rec in sorted(records, key=lambda r: r["key"]):
        h.update((_line(rec) + "\n").encode("utf-8"))
    return h.hexdigest()[:16]


def combined_records(store_records: Iterable[Record], ledger: Ledger | None) -> Iterator[Record]:
    """Ledger records plus the local store's, one record per run key.

    A key in both keeps the store's record (the newer run: a regression check must see it) with the
    experiment labels of both; ``treebench ledger add`` refuses it if its numbers differ.
    """
    local: dict[str, dict] = {}
    for rec in store_records:
        local[rec["key"]] = rec
    if ledger is not None:
        for rec in ledger.records():
            mine = local.pop(rec["key"], None)
            if mine is None:
                yield rec
            elif mine.get("status") in DONE_STATUSES:
                yield merge_labels(mine, rec)
            else:  # a failed rerun does not hide the committed result
                yield rec
    yield from local.values()


def open_ledger() -> Ledger | None:
    """Return the ledger at :func:`treebench.config.ledger_dir` (the checkout's ``results/``).

    Return None when ``TREEBENCH_LEDGER`` turns it off.
    """
    from treebench.config import ledger_dir

    d = ledger_dir()
    return Ledger(d) if d is not None else None


def labelled(records: Iterable[Record], wanted: set[str]) -> list[Record]:
    """Return the records with a label in ``wanted``, each filed under its first such label.

    That label is the experiment ``ledger add`` files it under; its other labels are kept in
    ``also_experiments``.
    """
    out = []
    for rec in records:
        labels = [rec.get("experiment"), *(rec.get("also_experiments") or [])]
        hits = [lab for lab in labels if lab in wanted]
        if not hits:
            continue
        if rec.get("experiment") in wanted:
            out.append(rec)
            continue
        also = sorted({lab for lab in labels if lab and lab != hits[0]})
        out.append({**rec, "experiment": hits[0], "also_experiments": also})
    return out
