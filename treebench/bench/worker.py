"""Forked worker processes: one measurement at a time, peak memory per job, killed on timeout.

A job over its timeout is killed with its worker, so one method's memory, thread pools or a crash
never reach the next. Peak memory: before every job the kernel's peak-RSS counter is reset
(``/proc/self/clear_refs``); ``peak_rss_mb`` = VmHWM − VmRSS at the job's start. In a fresh worker
this is exact; later jobs may reuse heap the allocator kept, so they can read lower.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from typing import Any


def _status_kb() -> dict[str, int]:
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":")
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


DATA: dict[tuple, Any] = {}  # BenchData by key, filled by the parent before it forks workers


def _run_job(fn, args, kw) -> dict:
    """One job inside a worker: peak-RSS counter reset, run, peak growth, errors as a status."""
    try:
        _reset_peak()
        base = _status_kb().get("VmRSS")
        out = fn(*args, **kw)
        hwm = _status_kb().get("VmHWM")
        if base is not None and hwm is not None:
            # the kernel batches RSS counts per thread, so a job that grows nothing can read a few
            # pages below its start (CI once saw -0.08 MB): growth is never negative
            out.setdefault("peak_rss_mb", max(0.0, (hwm - base) / 1024.0))
        out.setdefault("status", "ok")
    except Exception as exc:  # reported to the parent, which goes on with the next job
        out = {
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    return out


def _worker_loop(conn, parent: int) -> None:
    while True:
        try:
            # a worker's pipe stays open in the workers forked after it: the parent's death is
            # seen by polling, so that no worker outlives a killed bench
            if not conn.poll(1.0):
                if os.getppid() != parent:
                    break
                continue
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        fn, args, kw = msg
        conn.send(_run_job(fn, args, kw))
    conn.close()


class Worker:
    """A forked child process that runs jobs one at a time; killed when a job exceeds its timeout.

    Forked after the parent loaded the data (:data:`DATA`), so jobs name their data by key. The
    first job of a fresh worker pays the lazy imports and first-call costs: benches send a warm-up
    job first. Not a daemon process, so joblib may start its own workers (n_jobs > 1) inside it.
    """

    def __init__(self):
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_loop, args=(child, os.getpid()), daemon=False)
        self.proc.start()
        child.close()
        self.alive = True
        self.keys = set(DATA)  # the data this worker inherited

    def call(self, fn, args=(), kw=None, timeout: float | None = 300) -> dict:
        """Run ``fn(*args, **kw)`` in the worker and return its result dict (``status`` added)."""
        if not self.alive:
            return {"status": "failed", "error": "worker is gone after an earlier failure"}
        self.submit(fn, args, kw)
        return self.result(timeout)

    def submit(self, fn, args=(), kw=None) -> None:
        """Start ``fn(*args, **kw)`` in the worker; :meth:`result` waits for it."""
        self.conn.send((fn, args, kw or {}))

    def result(self, timeout: float | None = 300) -> dict:
        """Return the submitted job's result.

        The worker is killed after ``timeout`` wall seconds (None: no limit).
        """
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                self.proc.join(1)
                self.alive = False
                return {"status": "failed", "error": f"child died (exit code {self.proc.exitcode})"}
        self.kill()
        return {"status": "timeout", "error": f"no result within {timeout:.0f} s"}

    def kill(self) -> None:
        """Kill the worker process and wait for it."""
        self.alive = False
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def close(self) -> None:
        """Ask the worker to exit and wait for it (kill it if it does not)."""
        if self.alive:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.alive = False
