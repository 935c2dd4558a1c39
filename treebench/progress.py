"""Live progress of a sweep and of a long step of one process.

A sweep's: jobs done / running / failed / skipped, read from the sweep dir and, on a cluster,
queued / running as the scheduler reports them. A step's (a fit, planning, writing a report): what
it reports (:mod:`treebench.methods.progress`).
"""

from __future__ import annotations

import json
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from treebench.results.store import Store
from treebench.term import make_console


def sweep_state(sweep_dir: Path, store: Store) -> dict[str, int]:
    """Return counts of started and finished jobs and of their records' statuses."""
    state = {"started": 0, "finished": 0, "ok": 0, "failed": 0, "skipped": 0}
    if not sweep_dir.exists():
        return state
    for job_dir in sweep_dir.iterdir():
        if not job_dir.is_dir() or not (job_dir / ".hydra").exists():
            continue
        state["started"] += 1
        keys_file = job_dir / "keys.json"
        if keys_file.exists():
            state["finished"] += 1
            for key in json.loads(keys_file.read_text()):
                rec = store.get(key)
                if rec is not None:
                    state[rec["status"]] = state.get(rec["status"], 0) + 1
    return state


class SweepProgress:
    """A background thread that renders a rich progress bar for a running sweep.

    ``queue``, if given, returns the scheduler's ``{"queued": n, "running": m}`` for the sweep's
    jobs (None while it knows nothing yet); the bar then shows those instead of the started jobs.
    """

    def __init__(
        self, sweep_dir: Path, store: Store, total: int, interval: float = 0.5, queue=None
    ):
        self.sweep_dir, self.store, self.total, self.interval = sweep_dir, store, total, interval
        self.queue = queue
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread that renders the bar."""
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the rendering thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        console = make_console(stderr=True)
        with Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as bar:
            task = bar.add_task("sweep", total=self.total, detail="")
            while True:
                stopping = self._stop.wait(self.interval)
                s = sweep_state(self.sweep_dir, self.store)
                q = self.queue() if self.queue is not None else None
                if q is not None:
                    jobs = f"queued {q['queued']}  running {q['running']}"
                else:
                    jobs = f"running {s['started'] - s['finished']}"
                detail = (
                    f"{jobs}  records ok {s['ok']}  failed {s['failed']}  skipped {s['skipped']}"
                )
                bar.update(task, completed=s["finished"], detail=detail)
                if stopping:
                    break


class FitProgress:
    """Renders the progress a method reports (:mod:`treebench.methods.progress`) for one job.

    On a terminal: a rich bar per phase (epochs, iterations, grow rounds, teacher fits), removed
    when the job ends, and the warnings of the fit printed once each after it. Off a terminal
    (nohup, SLURM, ``tee``): a plain line at most every ``every`` seconds, so a log shows a long fit
    moving without filling up.
    """

    def __init__(self, label: str, console=None, every: float = 30.0):
        import time

        self.label = label
        self.console = console or make_console(stderr=True)
        self.every = every
        self._time = time.monotonic
        self._last = self._time()
        self._start = self._last
        self._bar: Progress | None = None
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> FitProgress:
        if self.console.is_terminal:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            # warnings would break the live bar: held, then printed once each below it
            self._warnings = warnings.catch_warnings(record=True)
            self._caught = self._warnings.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._warnings.__exit__(*exc)
            seen = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in self._caught)
            for text in seen:
                self.console.print(f"[yellow]warning[/] {escape(text)}", highlight=False)

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        """Show that ``phase`` has reached ``done`` of ``total`` (None: unknown)."""
        if self._bar is not None:
            if phase not in self._tasks:
                self._tasks[phase] = self._bar.add_task(
                    escape(f"{self.label} {phase}"), total=total
                )
            self._bar.update(self._tasks[phase], completed=done, total=total)
            return
        now = self._time()
        if now - self._last >= self.every or (total is not None and done >= total):
            if now - self._start < self.every:  # a fit shorter than one interval says nothing
                return
            self._last = now
            of = f"/{total}" if total is not None else ""
            spent = now - self._start
            eta = ""
            if total and 0 < done < total:  # the rate so far, over the whole fit
                eta = f", about {spent * (total - done) / done:.0f} s left"
            self.console.print(
                f"{self.label} {phase} {done}{of} ({spent:.0f} s{eta})",
                highlight=False,
                markup=False,
            )


@contextmanager
def showing(label: str, every: float = 10.0):
    """Draw what the code inside the block reports, as :class:`FitProgress` does.

    The reports are :func:`treebench.methods.progress.report` calls, labelled ``label``: a bar per
    phase with the time left on a terminal, a line at most every ``every`` seconds elsewhere.
    """
    from treebench.methods.progress import reporting

    with FitProgress(label, every=every) as bar, reporting(bar):
        yield bar
