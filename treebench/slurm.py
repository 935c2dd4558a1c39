"""SLURM bookkeeping of sweeps: pending markers next to the store, job states from the scheduler.

When a sweep submits a SLURM job, it writes a pending marker ``<store>/_slurm/<job id>.pending``
(JSON: the job id, the sweep directory, the time limit and every run the job covers, with the
identity fields of its record). The marker lives as long as the job may still write records: the
job deletes it when it ends, the driver when it sees the job gone. A later sweep asks the scheduler
about the markers it finds and does not submit again the runs of a job still queued or running,
so a driver killed while its jobs run loses nothing and duplicates nothing.

Job states come from ``squeue`` (``sacct`` needs accounting, which small clusters often lack);
``squeue`` keeps a finished job for the cluster's ``MinJobAge`` (300 s by default). A job that ends
without its records (cancelled, past its time limit, out of memory, node failure) leaves ``failed``
records that carry ``cluster`` (job id, state, reason, time limit) so ``treebench status`` can say
what happened and a rerun runs those runs again.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import treebench
from treebench.faults import SweepStopped
from treebench.results.store import DONE_STATUSES, JobBusyError, Store

log = logging.getLogger(__name__)

MARKER_DIR = "_slurm"  # inside the store root; records are */<key>.json, markers *.pending
MARKER_SUFFIX = ".pending"

#: States of a job that may still run and write records (``squeue --states=all`` names).
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SUSPENDED",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "PREEMPTED",  # requeued next, unless the cluster cancels preempted jobs
    }
)
#: A job that left the queue before ``squeue`` was asked about it (past ``MinJobAge``).
GONE = "GONE"
#: The stop signal (submitit's ``signal_delay_s`` before the time limit) comes at most this share
#: of the limit early: a longer delay would stop every job before it could work
SIGNAL_SHARE = 0.25
#: Seconds between two "cannot reach the controller" lines while a driver keeps waiting
UNREACHABLE_EVERY_S = 60.0
#: Why the last :func:`squeue_states` call got no answer ("" when it got one)
last_error = ""


class SubmitFailed(SweepStopped):
    """``sbatch`` refused the sweep's jobs (controller down, bad partition ...).

    One line, no job.
    """

    exit_code = 2


def signal_delay(timeout_min, delay_s) -> tuple[int, str]:
    """Return the stop signal's delay for a job of ``timeout_min`` minutes.

    ``delay_s`` capped to :data:`SIGNAL_SHARE` of the limit, and a note saying so when it was capped
    ("" otherwise).
    """
    delay = int(delay_s)
    if timeout_min is None:
        return delay, ""
    cap = max(1, int(float(timeout_min) * 60 * SIGNAL_SHARE))
    if delay <= cap:
        return delay, ""
    return cap, (
        f"signal_delay_s={delay} would stop jobs of timeout_min={timeout_min} "
        f"{'before they start' if delay >= float(timeout_min) * 60 else 'early'}; "
        f"the stop signal comes {cap} s before the limit instead"
    )


class Unreachable:
    """Says every :data:`UNREACHABLE_EVERY_S` seconds that the controller does not answer.

    Meanwhile the caller keeps waiting (the jobs are the scheduler's; nothing is decided without
    it).
    """

    def __init__(self, every: float = UNREACHABLE_EVERY_S, clock=None):
        import time

        self.every, self.clock = every, clock or time.monotonic
        self.since: float | None = None
        self._said = 0.0

    def answered(self) -> None:
        """Note that the controller answered (and say so if it had not)."""
        if self.since is not None:
            log.warning("the SLURM controller answers again")
        self.since = None

    def missed(self, n_jobs: int) -> None:
        """Note that the controller did not answer about ``n_jobs`` jobs; say so every ``every``."""
        now = self.clock()
        if self.since is None:
            self.since, self._said = now, now - self.every
        if now - self._said >= self.every:
            self._said = now
            log.warning(
                f"cannot reach the SLURM controller for {now - self.since:.0f} s "
                f"({last_error or 'squeue gives no answer'}); still waiting for {n_jobs} "
                "job(s) (Ctrl-C stops waiting; the jobs go on and a rerun picks them up)"
            )


class TimeLimitReached(BaseException):  # noqa: N818 - not an error of the run, like SystemExit
    """Raised in a job when SLURM signals that its time limit is near and it will not be requeued.

    A BaseException, so the runner's per-fold ``except Exception`` does not record it as a failure
    of the method: the job's launcher records every unfinished run as a timeout instead.
    """


@dataclass(frozen=True)
class JobState:
    """One SLURM job (or array task) as the scheduler reports it.

    Attributes
    ----------
    job_id : str
        ``<id>`` or ``<array id>_<task>``.
    state : str
        SLURM state (``PENDING``, ``RUNNING``, ``CANCELLED``, ``TIMEOUT``, ...) or ``GONE``.
    reason : str
        The scheduler's reason (why pending, ``TimeLimit``, ...); empty when it gives none.
    time_limit : str
        The job's time limit as SLURM prints it (``1:00``, ``4:00:00``).
    elapsed : str
        How long it ran (``0:00`` when it never started).
    """

    job_id: str
    state: str
    reason: str = ""
    time_limit: str = ""
    elapsed: str = ""

    @property
    def active(self) -> bool:
        """Return whether the job is pending or running."""
        return self.state in ACTIVE_STATES


def available() -> bool:
    """Whether the SLURM client commands are installed here."""
    return shutil.which("squeue") is not None


def squeue_states(job_ids: Iterable[str]) -> dict[str, JobState] | None:
    """States of ``job_ids`` from ``squeue``; an id the scheduler no longer knows is ``GONE``.

    Returns None when the scheduler cannot be asked (no ``squeue``, controller not answering), so a
    caller never mistakes "no answer" for "finished".
    """
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    if not available():
        return None
    cmd = ["squeue", "--noheader", "--states=all", "--array", "--format=%i|%T|%r|%l|%M"]
    cmd += ["--jobs", ",".join(ids)]
    global last_error
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        last_error = f"squeue: {exc}"
        return None
    if res.returncode != 0:
        if "Invalid job id" in res.stderr:  # every id asked about has left the queue
            last_error = ""
            return {j: JobState(j, GONE) for j in ids}
        last_error = (res.stderr.strip().splitlines() or [f"squeue exit {res.returncode}"])[-1]
        return None
    last_error = ""
    out: dict[str, JobState] = {}
    for line in res.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4:
            continue
        jid, state, reason, limit = parts[:4]
        reason = "" if reason == "None" else reason
        out[jid] = JobState(
            jid, state.split()[0], reason, limit, parts[4] if len(parts) > 4 else ""
        )
    return {j: out.get(j, JobState(j, GONE)) for j in ids}


# ----------------------------------------------------------------------------- pending markers


def marker_dir(store_root: os.PathLike) -> Path:
    """Return the directory of the SLURM job markers under ``store_root``."""
    return Path(store_root) / MARKER_DIR


def marker_path(store_root: os.PathLike, job_id: str) -> Path:
    """Return the marker file of job ``job_id``."""
    return marker_dir(store_root) / f"{job_id}{MARKER_SUFFIX}"


def write_marker(store_root: os.PathLike, job_id: str, runs: list[dict], **info) -> dict:
    """Write the pending marker of SLURM job ``job_id`` covering ``runs`` (atomically); return it.

    Parameters
    ----------
    store_root : path
        The store the job writes its records to.
    job_id : str
        The job's SLURM id (``<array id>_<task>`` for an array task).
    runs : list of dict
        One dict per run the job covers: its ``key`` and its record's identity fields
        (see :func:`job_runs`).
    **info
        Stored as is: ``sweep_dir``, ``timeout_min``, ``overrides``, ...
    """
    p = marker_path(store_root, job_id)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "job_id": job_id,
        "submitted_at": _now(),
        "host": socket.gethostname(),
        **info,
        "runs": runs,
    }
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, p)
    return data


def read_markers(store_root: os.PathLike) -> list[dict]:
    """Every pending marker of the store (unreadable ones are skipped)."""
    d = marker_dir(store_root)
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob(f"*{MARKER_SUFFIX}")):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return out


def remove_marker(store_root: os.PathLike, job_id: str) -> None:
    """Remove the marker of job ``job_id``."""
    marker_path(store_root, job_id).unlink(missing_ok=True)


def job_runs(cfg) -> list[dict]:
    """Return the runs (seed, fold) of a composed job config.

    Each run's key and record identity fields.
    """
    from treebench.runner import Job, base_record

    runs = []
    for job in Job.all_from_config(cfg):
        for fold in job.folds():
            rec = base_record(job, fold, job.key(fold))
            rec.pop("provenance", None)
            rec.pop("overrides", None)
            runs.append(rec)
    return runs


# ----------------------------------------------------------------------------- lost jobs


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


_STEPD_RE = re.compile(r"\*\*\* (JOB|STEP) \S+ ON \S+ (CANCELLED AT [^*]+?) \*\*\*")


def stepd_reason(*log_files: os.PathLike) -> str:
    """Return the scheduler's last word in a job's log.

    ``CANCELLED AT <time> DUE TO TIME LIMIT``...
    """
    found = ""
    for f in log_files:
        try:
            text = Path(f).read_text(errors="replace")[-20000:]
        except OSError:
            continue
        for m in _STEPD_RE.finditer(text):
            found = m.group(2).strip()
    return found


def describe(state: JobState, marker: dict, log_reason: str = "") -> tuple[str, str]:
    """(error line, reason) of a job that ended without its records, for its failed records."""
    jid, limit = state.job_id, marker.get("timeout_min")
    reason = log_reason or state.reason
    if state.state == "TIMEOUT" or "TIME LIMIT" in reason:
        lim = f"timeout_min={limit}" if limit is not None else f"time limit {state.time_limit}"
        return f"timeout: SLURM job {jid} reached its time limit ({lim}) before this run ended", (
            reason or "time limit"
        )
    if state.state == "CANCELLED":
        if not reason:  # no scheduler line in the log: say when, as far as squeue tells
            ran = state.elapsed and state.elapsed not in ("0:00", "00:00")
            when = (
                f"after running {state.elapsed}"
                if ran
                else "before it started or in its first second"
            )
            reason = f"scancel or an administrator, {when}" if state.elapsed else "scancel"
        return f"cancelled: SLURM job {jid} was cancelled ({reason})", reason
    if state.state == GONE:
        why = reason or "no result and no longer known to squeue; see the job's log"
        return f"lost: SLURM job {jid} left the queue without writing this run ({why})", why
    what = state.state.lower().replace("_", " ")
    return f"{what}: SLURM job {jid} ended {state.state} ({reason or 'no reason given'})", reason


def record_lost(
    store: Store,
    marker: dict,
    state: JobState,
    log_reason: str = "",
    by: str = "sweep driver",
) -> list[str]:
    """Write ``failed`` records for the runs of a job that ended without them; return their keys.

    A run already done, one whose record was written after the job's submission (the job got to
    it: its own record says more) and one whose key is locked by a running process are left alone.
    """
    error, reason = describe(state, marker, log_reason)
    cluster = {
        "scheduler": "slurm",
        "job_id": state.job_id,
        "state": state.state,
        "reason": reason,
        "timeout_min": marker.get("timeout_min"),
        "time_limit": state.time_limit or None,
        "sweep_dir": marker.get("sweep_dir"),
    }
    submitted = marker.get("submitted_at") or ""
    written = []
    for run in marker.get("runs", []):
        key = run["key"]
        old = store.get(key)
        if old is not None and (
            old.get("status") in DONE_STATUSES
            or (
                (old.get("provenance") or {}).get("finished_at", "") >= submitted
                and not old.get("cluster")
            )
        ):
            continue
        rec = {
            **run,
            "overrides": marker.get("overrides"),
            "status": "failed",
            "error": error,
            "cluster": cluster,
            "provenance": {
                "treebench_version": treebench.__version__,
                "host": socket.gethostname(),
                "recorded_by": by,
                "finished_at": _now(),
            },
        }
        try:
            with store.lock(key):
                if store.is_done(key):
                    continue
                store.write(rec)
                written.append(key)
        except JobBusyError:
            continue
    return written


def reconcile(store: Store, *, record: bool = True) -> dict[str, tuple[dict, JobState]]:
    """Ask the scheduler about the store's pending markers; return the runs still held.

    Returns ``{run key: (marker, state)}`` for the runs of jobs still queued or running. With
    ``record``, markers of jobs that have ended are removed, after writing the ``failed`` records of
    a job that ended without its runs (cancelled, timed out, ...). When the scheduler cannot be
    asked, nothing is held and nothing removed (a warning says so).
    """
    markers = read_markers(store.root)
    if not markers:
        return {}
    states = squeue_states(m["job_id"] for m in markers)
    if states is None:
        log.warning(
            f"{len(markers)} SLURM pending marker(s) in {marker_dir(store.root)} but squeue cannot "
            "be asked here; their runs are treated as not running"
        )
        return {}
    held: dict[str, tuple[dict, JobState]] = {}
    for m in markers:
        st = states[m["job_id"]]
        if st.active:
            for run in m.get("runs", []):
                held[run["key"]] = (m, st)
            continue
        if not record:
            continue
        if st.state not in ("COMPLETED", GONE):
            logs = [m[k] for k in ("stderr", "stdout") if m.get(k)]
            record_lost(store, m, st, stepd_reason(*logs), by="sweep (reconciling markers)")
        remove_marker(store.root, m["job_id"])
    return held


def pending_by_sweep(store_root: os.PathLike) -> dict[str, list[tuple[dict, JobState | None]]]:
    """Pending markers grouped by sweep directory, with each job's state (None: not asked)."""
    markers = read_markers(store_root)
    states = squeue_states(m["job_id"] for m in markers) if markers else {}
    out: dict[str, list[tuple[dict, JobState | None]]] = {}
    for m in markers:
        st = states.get(m["job_id"]) if states is not None else None
        out.setdefault(str(m.get("sweep_dir") or "?"), []).append((m, st))
    return out


def fix_hint(rec: dict) -> str:
    """Return what to do about a record a SLURM job left.

    Empty when there is nothing to suggest.
    """
    c = rec.get("cluster") or {}
    if c.get("state") == "TIMEOUT" or str(rec.get("error", "")).startswith("timeout:"):
        lim = c.get("timeout_min")
        more = (
            f"hydra.launcher.timeout_min={2 * int(lim)}" if lim else "hydra.launcher.timeout_min=…"
        )
        return (
            f"rerun with a longer limit, e.g. {more}, or raise resources.timeout_min "
            f"(per run) in treebench/conf/method/{rec.get('method')}.yaml"
        )
    if c.get("state") == "OUT_OF_MEMORY":
        return "rerun with more memory, e.g. hydra.launcher.mem_gb=<more>"
    if c:
        return "rerun the sweep: it runs these again"
    return ""
