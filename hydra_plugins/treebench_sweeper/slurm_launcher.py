"""SLURM launcher for treebench sweeps: hydra-submitit-launcher's, made to survive the cluster.

On top of ``submitit_slurm`` it

- writes a pending marker per submitted job (``treebench.slurm``), so a later sweep does not submit
  again the runs of a job still queued or running after this driver died;
- reads job states from ``squeue`` when ``sacct`` is unavailable (no accounting), with one warning
  instead of submitit's three per poll, and polls every ``poll_s`` seconds at most;
- records a job that ends without its records (scancel, time limit, out of memory) as ``failed``
  records saying so, and goes on waiting for the other jobs instead of stopping the sweep;
- in the job, turns SLURM's "time limit near" signal into timeout records for every unfinished run
  of the job, unless submitit requeues it (``max_num_timeout``); a preempted job is requeued (the
  launcher is submitit-Checkpointable: ``checkpoint()`` resubmits the same call) and starts again,
  skipping the runs already stored and resuming a fit that left a checkpoint
  (:mod:`treebench.methods.checkpoint`).
"""

import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence  # noqa: UP035 - plugin modules load without __future__

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

log = logging.getLogger(__name__)

#: Launcher keys of treebench's own, not passed on to submitit.
OWN_KEYS = ("poll_s",)


@dataclass
class TreebenchSlurmConf(SlurmQueueConf):
    """Config of the ``treebench_slurm`` launcher: submitit's SLURM settings and a poll interval."""

    _target_: str = "hydra_plugins.treebench_sweeper.slurm_launcher.TreebenchSlurmLauncher"
    poll_s: float = 10.0  # longest wait between two questions to the scheduler while jobs run


ConfigStore.instance().store(
    group="hydra/launcher", name="treebench_slurm", node=TreebenchSlurmConf, provider="treebench"
)

_WATCHER: Any = None


def squeue_watcher(poll_s: float):
    """Submitit's job-state watcher for SLURM, asking ``squeue`` once ``sacct`` has failed.

    Installed as ``SlurmJob.watcher`` (shared by every submitit SLURM job of the process).
    """
    global _WATCHER
    from submitit.slurm.slurm import SlurmInfoWatcher, SlurmJob

    from treebench import slurm

    if _WATCHER is not None:
        _WATCHER._delay_s = poll_s
        SlurmJob.watcher = _WATCHER
        return _WATCHER

    class SqueueWatcher(SlurmInfoWatcher):
        """Like submitit's, but states come from squeue when sacct fails, and it says so once."""

        use_sacct = True
        unreachable = slurm.Unreachable()

        def update(self) -> None:
            import subprocess

            to_check = self._registered - self._finished
            if not to_check:
                return
            self._num_calls += 1
            if self.use_sacct:
                try:
                    res = subprocess.run(
                        self._make_command(), capture_output=True, text=True, timeout=60
                    )
                    ok, why = res.returncode == 0, res.stderr.strip() or f"exit {res.returncode}"
                except (OSError, subprocess.SubprocessError) as exc:
                    ok, why = False, str(exc)
                if ok:
                    self._info_dict.update(self.read_info(res.stdout))
                else:
                    self.use_sacct = False
                    log.warning(f"sacct is not usable ({why}); SLURM job states come from squeue")
            if not self.use_sacct:
                states = slurm.squeue_states(to_check)
                if states is None:  # keep the last known states and wait; say so every minute
                    self.unreachable.missed(len(to_check))
                else:
                    self.unreachable.answered()
                for jid, st in (states or {}).items():
                    self._info_dict[jid] = {
                        "State": st.state,
                        "Reason": st.reason,
                        "TimeLimit": st.time_limit,
                        "Elapsed": st.elapsed,
                    }
            self._last_status_check = time.time()
            for jid in to_check:
                if self.is_done(jid, mode="cache"):
                    self._finished.add(jid)

        def is_done(self, job_id: str, mode: str = "standard") -> bool:
            state = self.get_state(job_id, mode=mode).split()[0].upper()
            return state not in slurm.ACTIVE_STATES and state not in ("UNKNOWN", "READY")

    _WATCHER = SlurmJob.watcher = SqueueWatcher(delay_s=poll_s)
    return _WATCHER


class TreebenchSlurmLauncher(SlurmLauncher):
    """``hydra/launcher=slurm``.

    Submitit's SLURM launcher with pending markers and lost-job records.

    The sweeper sets :attr:`job_runs` (the runs of each job's overrides) before launching; jobs
    whose overrides it lacks are tracked without their runs.
    """

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.job_runs: Dict[tuple, List[dict]] = {}  # noqa: UP006
        self.adopted: Dict[str, Any] = {}  # noqa: UP006 - job id -> state, jobs of earlier sweeps
        self._live: Dict[str, Any] = {}  # noqa: UP006 - job id -> submitit job, being waited for

    def __getstate__(self) -> Dict[str, Any]:  # noqa: UP006
        # every job's pickle holds the launcher: not the whole sweep's runs
        state = dict(self.__dict__)
        state["job_runs"], state["adopted"], state["_live"] = {}, {}, {}
        return state

    # ------------------------------------------------------------------ driver side

    def _store(self):
        from treebench.app import open_store

        return open_store(self.config)

    def _sweep_dir(self) -> Path:
        from treebench.app import _abspath

        return _abspath(str(self.config.hydra.sweep.dir))

    def _note_keys(self, keys: List[str]) -> None:  # noqa: UP006
        """Add run keys to ``<sweep>/_slurm/keys.json``.

        The sweep summary reads them even for jobs killed before writing their own ``keys.json``.
        """
        p = self._sweep_dir() / "_slurm" / "keys.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(p.read_text()) if p.exists() else []
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(list(dict.fromkeys(old + keys))))
        tmp.replace(p)

    def queue_counts(self) -> Optional[Dict[str, int]]:  # noqa: UP006, UP045
        """Queued and running jobs of this sweep, as the scheduler last reported them."""
        from treebench import slurm

        if _WATCHER is None and not self.adopted:
            return None
        out = {"queued": 0, "running": 0}
        try:  # called from the progress thread while the sweep's thread changes these
            live = list(self._live.values())
            adopted = list(self.adopted.values())
        except RuntimeError:
            return None
        states = [
            _WATCHER._info_dict.get(job.job_id, {}).get("State", "PENDING").split()[0]
            for job in live
            if not job.paths.result_pickle.exists()
        ]
        for st in states + [a.state for a in adopted]:
            if st in ("RUNNING", "COMPLETING"):
                out["running"] += 1
            elif st in slurm.ACTIVE_STATES:
                out["queued"] += 1
        return out

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        """Submit the jobs to SLURM and wait for their returns.

        :meth:`submit`, then :meth:`collect`.
        """
        return self.collect(self.submit(job_overrides, initial_job_idx))

    def submit(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> List[tuple]:  # noqa: UP006
        """Submit one SLURM job array (one task per job) and write the pending markers.

        Return handles for :meth:`collect`. The sweeper submits every resource group before waiting.
        """
        import submitit
        from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

        from treebench import slurm

        assert self.config is not None
        squeue_watcher(float(self.params.get("poll_s") or 10.0))
        params = {k: v for k, v in self.params.items() if k not in OWN_KEYS}
        delay, note = slurm.signal_delay(
            params.get("timeout_min"), params.get("signal_delay_s", 120)
        )
        if note:
            log.warning(note)
        params["signal_delay_s"] = delay
        init_keys = {"max_num_timeout", "submitit_folder"}
        init = (
            {"slurm_max_num_timeout": params["max_num_timeout"]}
            if "max_num_timeout" in params
            else {}
        )
        executor = submitit.AutoExecutor(
            cluster=self._EXECUTOR, folder=params["submitit_folder"], **init
        )
        baseparams = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(
            **{
                (k if k in baseparams else f"{self._EXECUTOR}_{k}"): v
                for k, v in params.items()
                if k not in init_keys
            }
        )
        sweep_dir = self._sweep_dir()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
        job_params = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            job_params.append(
                (
                    list(overrides),
                    "hydra.sweep.dir",
                    idx,
                    f"job_id_for_{idx}",
                    Singleton.get_state(),
                )
            )
        try:
            jobs = executor.map_array(self, *zip(*job_params, strict=True))
        except Exception as exc:  # sbatch refused: submitit's errors have no common base class
            why = " ".join(str(exc).split())[-300:]
            raise slurm.SubmitFailed(
                f"cannot submit {len(job_params)} job(s) to SLURM ({why}); check the controller "
                "(`sinfo`) and the launcher settings (partition, account, qos); nothing of this "
                "call was submitted"
            ) from None

        store_root = self._store().root
        handles = []
        for job, overrides in zip(jobs, job_overrides, strict=True):
            marker = slurm.write_marker(
                store_root,
                job.job_id,
                self.job_runs.get(tuple(overrides), []),
                sweep_dir=str(sweep_dir),
                timeout_min=params.get("timeout_min"),
                overrides=list(overrides),
                stderr=str(job.paths.stderr),
                stdout=str(job.paths.stdout),
            )
            handles.append((job, list(overrides), marker))
        self._note_keys([r["key"] for _, _, m in handles for r in m["runs"]])
        self._live.update((j.job_id, j) for j in jobs)
        log.info(f"submitted SLURM job(s) {', '.join(j.job_id for j in jobs)}")
        return handles

    def collect(self, handles: List[tuple]) -> List[JobReturn]:  # noqa: UP006
        """Wait for the jobs of :meth:`submit`; their JobReturns (records for lost ones)."""
        store, watcher = self._store(), squeue_watcher(float(self.params.get("poll_s") or 10.0))
        return [self._result(job, ov, marker, store, watcher) for job, ov, marker in handles]

    def _result(
        self,
        job,
        overrides,
        marker: dict,
        store,
        watcher,
        requeued: Optional[Any] = None,  # noqa: UP045
    ) -> JobReturn:
        """Wait for one job; its JobReturn, or records saying why it ended without one.

        ``requeued`` is the scheduler's last word on the job's requeued run (a
        :class:`~treebench.slurm.JobState`): the watcher's cache and the log's last stepd line
        still describe the run before the requeue.
        """
        from treebench import slurm

        job.wait()
        info = (
            watcher.get_info(job.job_id, mode="cache")
            if requeued is None
            else {
                "State": requeued.state,
                "Reason": requeued.reason,
                "TimeLimit": requeued.time_limit,
                "Elapsed": requeued.elapsed,
            }
        )
        state = info.get("State", slurm.GONE).split()[0]
        if state in ("COMPLETED", slurm.GONE, "UNKNOWN"):
            deadline = time.time() + 15  # a shared filesystem may show the result file late
            while not job.paths.result_pickle.exists() and time.time() < deadline:
                time.sleep(1)
        try:
            if job.paths.result_pickle.exists():
                return job.results()[0]
            st = slurm.JobState(
                job.job_id,
                state,
                info.get("Reason", ""),
                info.get("TimeLimit", ""),
                info.get("Elapsed", ""),
            )
            reason = ""
            for _ in range(20 if state not in (slurm.GONE, "UNKNOWN") else 1):
                # slurmstepd writes its "CANCELLED AT ..." line a moment after the state changes,
                # also for a job cancelled in its first second (elapsed 0:00); only a job cancelled
                # while pending never gets one, and costs this wait (10 s at most)
                reason = slurm.stepd_reason(job.paths.stderr, job.paths.stdout)
                if reason:
                    break
                time.sleep(0.5)
            if "DUE TO JOB REQUEUE" in reason:
                if requeued is None:
                    # preempted or at its time-limit signal, the job was requeued under the same
                    # id: not an end; submitit's watcher saw the old run stop, so follow the queue
                    last = _wait_requeued(job)
                    return self._result(job, overrides, marker, store, watcher, requeued=last)
                reason = ""  # the line of the run before the requeue: not why this one ended
            keys = slurm.record_lost(store, marker, st, reason)
            error, why = slurm.describe(st, marker, reason)
            log.warning(
                f"{error.split(':', 1)[0]}: SLURM job {job.job_id} {state} ({why}); "
                f"{len(keys)} run(s) recorded as failed, a rerun runs them again"
            )
            return JobReturn(
                overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=[]
            )
        finally:
            slurm.remove_marker(store.root, job.job_id)
            self._live.pop(job.job_id, None)

    def wait_adopted(self, markers: List[dict]) -> None:  # noqa: UP006
        """Wait for the jobs of an earlier sweep that still hold runs of this one.

        Then record any that ended without its records (their runs go to this sweep's summary).
        """
        from treebench import slurm

        store = self._store()
        ids = sorted({m["job_id"] for m in markers})
        self._note_keys([r["key"] for m in markers for r in m.get("runs", [])])
        poll = float(self.params.get("poll_s") or 10.0)
        unreachable = slurm.Unreachable()
        while True:
            states = slurm.squeue_states(ids)
            if states is None:  # the controller is down: say so every minute, keep waiting
                unreachable.missed(len(ids))
            else:
                unreachable.answered()
                self.adopted = states
                if not any(s.active for s in states.values()):
                    break
            time.sleep(min(poll, 2.0))
        slurm.reconcile(store)

    # ------------------------------------------------------------------ job side

    def __call__(
        self,
        sweep_overrides: List[str],  # noqa: UP006
        job_dir_key: str,
        job_num: int,
        job_id: str,
        singleton_state: Dict[type, Singleton],  # noqa: UP006
    ) -> JobReturn:
        """Run one job inside its SLURM task (the submitted callable).

        Keeping its marker up to date.
        """
        import submitit
        from submitit.slurm.slurm import SlurmJobEnvironment

        from treebench import slurm

        slurm_id = submitit.JobEnvironment().job_id
        sig = getattr(signal, "SIG" + SlurmJobEnvironment.USR_SIG)
        previous = signal.getsignal(sig)
        signal.signal(sig, _time_limit_handler(previous))
        try:
            ret = super().__call__(sweep_overrides, job_dir_key, job_num, job_id, singleton_state)
        except slurm.TimeLimitReached as exc:
            Singleton.set_state(singleton_state)
            store = self._store()
            marker = _read_marker(store.root, slurm_id)
            st = slurm.JobState(slurm_id, "TIMEOUT", "TimeLimit")
            keys = slurm.record_lost(store, marker, st, str(exc), by="job (time limit signal)")
            log.warning(f"time limit near: {len(keys)} run(s) recorded as timeout")
            ret = JobReturn(
                overrides=list(sweep_overrides), status=JobStatus.COMPLETED, _return_value=[]
            )
        finally:
            signal.signal(sig, previous)
        Singleton.set_state(singleton_state)
        slurm.remove_marker(self._store().root, slurm_id)  # ended: nothing of it is pending
        return ret


def _wait_requeued(job, poll: float = 2.0, grace: float = 60.0):
    """Wait until a requeued job's next run has ended.

    Its result file exists, or the scheduler no longer lists it as active (after ``grace`` seconds
    for it to show up again). Returns the scheduler's last :class:`~treebench.slurm.JobState` of it
    (``GONE`` when it never answered).
    """
    from treebench import slurm

    start, last = time.time(), slurm.JobState(job.job_id, slurm.GONE)
    while not job.paths.result_pickle.exists():
        st = (slurm.squeue_states([job.job_id]) or {}).get(job.job_id)
        last = st or last
        if st is not None and not st.active and time.time() - start > grace:
            break
        time.sleep(poll)
    return last


def _read_marker(store_root, job_id: str) -> dict:
    from treebench import slurm

    try:
        return json.loads(slurm.marker_path(store_root, job_id).read_text())
    except (OSError, json.JSONDecodeError):
        return {"job_id": job_id, "runs": []}


def _time_limit_handler(previous):
    """Return a handler of submitit's "time limit near / preempted" signal.

    It raises :class:`~treebench.slurm.TimeLimitReached` when submitit would not requeue the job
    (its timeouts are used up); otherwise submitit's own handler checkpoints and requeues it.
    """
    from treebench.slurm import TimeLimitReached

    def handler(signum, frame):
        sub = getattr(previous, "__self__", None)  # submitit's SignalHandler
        timed_out = sub.has_timed_out() if hasattr(sub, "has_timed_out") else True
        left = getattr(getattr(sub, "_delayed", None), "_timeout_countdown", 0) - int(timed_out)
        if timed_out and left < 0:
            raise TimeLimitReached(
                f"SLURM sent {signal.Signals(signum).name}: the job's time limit is near"
            )
        if callable(previous):
            previous(signum, frame)

    return handler
