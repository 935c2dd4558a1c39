"""Result store: one JSON record per run key, written atomically, with a per-key lock."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from treebench.errors import TreebenchError
from treebench.faults import raise_env_fault, temp_prefix
from treebench.files import apply_umask
from treebench.results.record import DONE_STATUSES, Record, profile_of_record
from treebench.results.validate import RecordError, record_problem


def with_label(rec: Record, experiment: str, profile: str | None = None) -> Record:
    """``rec`` labelled as a job of ``experiment``'s plan under ``profile``.

    ``rec`` itself is returned when it already carries that label.

    A record keeps the label it was made under (``experiment``, ``profile``). Another experiment's
    plan that holds the same run key is listed in ``also_experiments``; a ``full`` plan that holds a
    job first run under a reduced profile is listed in ``full_plan_of``, so the job counts as the
    full protocol's in that experiment (the same fit, the same key) without running again.
    """
    out = rec
    if experiment != rec.get("experiment") and experiment not in (
        rec.get("also_experiments") or []
    ):
        out = {**out, "also_experiments": [*(rec.get("also_experiments") or []), experiment]}
    own_full = experiment == rec.get("experiment") and profile_of_record(rec) == "full"
    if profile == "full" and not own_full and experiment not in (rec.get("full_plan_of") or []):
        out = {**out, "full_plan_of": sorted([*(rec.get("full_plan_of") or []), experiment])}
    return out


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def run_key(spec: dict) -> str:
    """Stable hash of a job's identity (method, params, dataset, split, seed, fold, version)."""
    return hashlib.sha256(_canonical(spec).encode()).hexdigest()[:24]


class JobBusyError(RuntimeError, TreebenchError):
    """Another process holds the lock of this run key."""


class Store:
    """A directory of records ``<root>/<key[:2]>/<key>.json``, over an optional committed ledger.

    A record whose ``status`` is ``ok`` or ``skipped`` marks its job done; a ``failed`` record
    does not, and is replaced when the job runs again. With a ``ledger``
    (:class:`~treebench.results.ledger.Ledger`), a key it holds is done too: :meth:`get` falls back
    to the ledger's record, while :meth:`records` yields the local records only.
    """

    def __init__(self, root: str | os.PathLike, ledger=None):
        self.root = Path(root)
        self.ledger = ledger
        # (path, reason) of each unreadable record met by the last :meth:`records` pass
        self.problems: list[tuple[Path, str]] = []
        #: path -> reason of each invalid record :meth:`get` met (counted as absent: rerun)
        self.invalid: dict[Path, str] = {}

    def path(self, key: str) -> Path:
        """Return the path of the record of ``key``: ``<root>/<key[:2]>/<key>.json``."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Record | None:
        """Return the local record of ``key``, else the ledger's, else None.

        A local record that cannot be read or fails the schema (:func:`read_record`) is absent:
        its job is not done and a rerun replaces it (the reason is kept in :attr:`invalid`).
        """
        p = self.path(key)
        rec, why = read_record(p, key)
        if why is None:
            return rec
        if why != "absent":
            self.invalid[p] = why
        return self.ledger.get(key) if self.ledger is not None else None

    def is_done(self, key: str) -> bool:
        """Return whether the record of ``key`` (see :meth:`get`) is ``ok`` or ``skipped``."""
        rec = self.get(key)
        return rec is not None and rec.get("status") in DONE_STATUSES

    def write(self, record: Record) -> Path:
        """Write ``record`` (which holds its ``key``) atomically: temp file, fsync, ``os.replace``.

        Raises
        ------
        RecordError
            The record as written would fail the read check
            (:func:`~treebench.results.validate.record_problem`); nothing is written.
        """
        p = self.path(record["key"])
        text = json.dumps(record, indent=1, sort_keys=True, default=str)
        why = record_problem(json.loads(text), record["key"], full=True)  # what a reader gets
        if why is not None:
            raise RecordError(
                f"record {record['key']} not written to {p}: {why}; the code that built it "
                "(the runner, or the method's size_report / fit_info_) must give that field "
                "its declared type (treebench/results/record.py)"
            )
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=temp_prefix(), suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            apply_umask(tmp)  # mkstemp makes 0600: teammates sharing the store could not read it
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return p

    def add_experiment(self, key: str, experiment: str, profile: str | None = None) -> bool:
        """Label the done record ``key`` as a job of ``experiment`` (run under ``profile``).

        Returns True if the record changed.

        Run keys do not include the experiment's name or profile, so a fit several plans share runs
        once; the other plans that found it done are added as :func:`with_label` states (under the
        key's lock; a busy key is left alone and False returned). A ledger record gains the label in
        a local copy, which ``treebench ledger add`` merges back.
        """
        rec = self.get(key)  # most done keys already carry the label: no lock file for them
        if rec is None or with_label(rec, experiment, profile) is rec:
            return False
        try:
            with self.lock(key):
                rec = self.get(key)
                if rec is None or rec.get("status") not in DONE_STATUSES:
                    return False
                new = with_label(rec, experiment, profile)
                if new is rec:
                    return False
                self.write(new)
                return True
        except JobBusyError:
            return False

    @contextmanager
    def lock(self, key: str):
        """Hold the key's lock while a job runs; raise :class:`JobBusyError` if another holds it."""
        p = self.path(key).with_suffix(".lock")
        lk = FileLock(str(p), timeout=0)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            lk.acquire()
        except Timeout as exc:
            raise JobBusyError(f"job {key} is running in another process") from exc
        except OSError as exc:  # a read-only or full store: one line, the sweep ends
            raise_env_fault(exc, p)
            raise
        try:
            yield
        finally:
            lk.release()

    def records(self) -> Iterator[Record]:
        """Every stored record (ok, skipped and failed).

        A record that cannot be read or parsed is left out and listed in :attr:`problems`
        (path and reason) for the caller to report.
        """
        self.problems = []
        if not self.root.exists():
            return
        # [!.]: not the .tmp-* file of a write in flight (pathlib's glob matches dotfiles)
        for p in sorted(self.root.glob("*/[!.]*.json")):
            rec, why = read_record(p, p.stem)
            if why is None:
                yield rec
            elif why != "absent":
                self.problems.append((p, why))


def parse_record(data: bytes, key: str | None = None) -> tuple[Record | None, str | None]:
    """``(record, None)`` from a record file's bytes, or ``(None, reason)``.

    The reason is given when the bytes are not valid UTF-8 JSON or fail the schema
    (:func:`~treebench.results.validate.record_problem`).
    """
    try:
        rec = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start}); the file is damaged"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc})"
    why = record_problem(rec, key)
    return (None, why) if why is not None else (rec, None)


def read_record(path: Path, key: str | None = None) -> tuple[Record | None, str | None]:
    """:func:`parse_record` of the file at ``path``; ``(None, "absent")`` when there is none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    return parse_record(data, key)
