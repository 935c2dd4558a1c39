"""A preempted SLURM job resumes its fit from the run's checkpoint (real scheduler; see test_slurm).

A Random Hinge Forest job on iris saves a checkpoint every second; once one exists the job gets
SLURM's preemption signal (``scancel --signal=USR2``, what the scheduler sends before preempting or
at the time limit). submitit checkpoints the job (our launcher is Checkpointable) and requeues it;
the requeued job finds the run's record missing, resumes the fit from the checkpoint and records
``resumed``, with the metrics of an uninterrupted fit. (slurmctld holds a requeued job back ~2 min
before it may start again; the test lets it start 5 s later with ``scontrol update
StartTime=now+5``.)
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.test_slurm import (
    LAUNCHER,
    NO_CLUSTER,
    _env,
    _markers,
    _records,
    _squeue,
    _start,
    _wait_for,
)

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.xdist_group("slurm"),
    pytest.mark.skipif(NO_CLUSTER is not None, reason=f"SLURM tests skipped: {NO_CLUSTER}"),
]

#: ~7 s of training (28 us a step): long enough to be preempted mid-fit
HINGE = [
    "method=hinge_forest",
    "dataset=iris",
    "method.params.n_estimators=5",
    "method.params.max_depth=3",
    "method.params.n_features=8",
    "method.params.n_iterations=250000",
    "method.params.snapshot_every=2000",
]


def test_preempted_job_is_requeued_and_resumes_its_fit(tmp_path):
    from tests.conftest import compose_config
    from treebench.data import DataContext
    from treebench.results.store import Store
    from treebench.runner import run_job

    t0 = time.time()
    args = ["run", "-m", *HINGE, "checkpoint_every=1", *LAUNCHER]
    driver = _start(args, tmp_path, _env(tmp_path))
    ck_dir = tmp_path / "out" / "store" / "_checkpoints"
    try:
        (marker,) = _wait_for(lambda: _markers(tmp_path), 60, "the job's marker")
        job = marker["job_id"]
        _wait_for(lambda: ck_dir.is_dir() and list(ck_dir.glob("*.pt")), 90, "a checkpoint")
        subprocess.run(["scancel", "--signal=USR2", job], check=True)
        # slurmctld holds a requeued job back ~2 min (BeginTime) so that its new credential
        # postdates the old one's revocation; slurmd refuses a credential from the second of the
        # revocation ("Job credential revoked", the job FAILS), so let it start a few s later
        _wait_for(lambda: _squeue([job]).get(job) == "PENDING", 60, f"job {job} requeued")
        subprocess.run(["scontrol", "update", f"jobid={job}", "StartTime=now+5"], check=False)
        assert driver.wait(timeout=150) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
    (rec,) = _records(tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["resumed"]["from"]["iterations"] > 0, rec.get("resumed")
    # the preempted attempt's seconds up to its checkpoint count in the record's
    assert rec["wall_seconds"] > rec["resumed"]["earlier"]["wall_seconds"] > 0
    assert not list(ck_dir.glob("*.pt"))  # removed with the record written
    assert not _markers(tmp_path)
    logs = "".join(p.read_text() for p in (tmp_path / "out").rglob(f"{job}_*_log.*"))
    assert "this job is preempted" in logs and "Requeued job" in logs
    print(
        f"job {job}: preempted at a checkpoint, requeued, resumed from {rec['resumed']['from']}, "
        f"record ok after {time.time() - t0:.0f} s"
    )

    # the same run, uninterrupted, here: the same record fields
    cfg = compose_config([*HINGE, "threads=1", "checkpoint_every=null"])
    ctx = DataContext(tmp_path / "out" / "data", None, False)
    (ref,) = run_job(cfg, Store(tmp_path / "ref"), ctx, log=lambda s: 0)
    assert ref["key"] == rec["key"]
    assert rec["metrics"] == ref["metrics"]
    times = ("train_seconds", "seconds_per_1000_iterations")
    assert {k: v for k, v in rec["info"].items() if k not in times} == {
        k: v for k, v in ref["info"].items() if k not in times
    }
