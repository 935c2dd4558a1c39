"""Sweeps through ``hydra/launcher=slurm`` on a real SLURM scheduler.

``scripts/slurm_local.sh start``.

Skipped, saying why, when no SLURM node answers idle. The jobs are tiny (cart/rf on iris/wine);
``tests.slurm_jobs.sleepy_load`` keeps a job queued or running for a while without using CPU.
All of them run on one xdist worker (the cluster has few slots).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli


def _no_cluster() -> str | None:
    """Why the SLURM tests cannot run here (None: a node answers idle)."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return (
            "no SLURM client (sinfo/sbatch); `scripts/slurm_local.sh start` sets up a local cluster"
        )
    try:
        res = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"sinfo failed: {exc}"
    if res.returncode != 0:
        return (
            f"SLURM controller not answering ({res.stderr.strip()}); scripts/slurm_local.sh start"
        )
    states = res.stdout.split()
    if not any(s.startswith(("idle", "mixed")) for s in states):
        return f"no idle SLURM node (sinfo: {', '.join(states) or 'no nodes'})"
    return None


NO_CLUSTER = _no_cluster()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.xdist_group("slurm"),
    pytest.mark.skipif(NO_CLUSTER is not None, reason=f"SLURM tests skipped: {NO_CLUSTER}"),
]

# small requests fit any node; jobs' state is polled every second
LAUNCHER = [
    "hydra/launcher=slurm",
    "hydra.launcher.mem_gb=1",
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.poll_s=1",
    "threads=1",
]
SLEEPY = "dataset.loader._target_=tests.slurm_jobs.sleepy_load"


def _env(tmp_path, sleep_s: float = 0) -> dict:
    return {"TREEBENCH_OUTPUTS": str(tmp_path / "out"), "TREEBENCH_TEST_SLEEP_S": str(sleep_s)}


def _start(args, tmp_path, env) -> subprocess.Popen:
    """Return a sweep driver in the background (stdout and stderr to ``driver.log``)."""
    e = {
        **os.environ,
        **env,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    log = open(tmp_path / "driver.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "treebench.cli", *args],
        cwd=tmp_path,
        env=e,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _markers(tmp_path) -> list[dict]:
    d = tmp_path / "out" / "store" / "_slurm"
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.pending"))] if d.is_dir() else []


def _records(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (tmp_path / "out" / "store").glob("*/[!.]*.json")]


def _squeue(job_ids) -> dict[str, str]:
    res = subprocess.run(
        ["squeue", "-h", "-t", "all", "-r", "-o", "%i %T", "-j", ",".join(job_ids)],
        capture_output=True,
        text=True,
    )
    return dict(line.split() for line in res.stdout.splitlines() if line.strip())


def _wait_for(cond, timeout: float, what: str):
    end = time.time() + timeout
    while time.time() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _out(res) -> str:
    return res.stdout + res.stderr


def test_sweep_gives_the_expected_records_and_a_rerun_submits_nothing(tmp_path):
    env = _env(tmp_path)
    args = ["run", "-m", "method=cart,rf", "dataset=iris,wine", "seeds=[0,1]", *LAUNCHER]
    res = run_cli(args, tmp_path, env, timeout=300)
    out = _out(res)
    assert res.returncode == 0, out[-3000:]
    assert "0 done already, 4 to launch" in out
    # cart and rf hint different time limits: two arrays, both queued before waiting on either
    assert len(re.findall(r"submitted SLURM job\(s\) \d+", out)) == 2
    assert out.count("sacct is not usable") <= 1  # said once, not on every poll
    recs = _records(tmp_path)
    got = sorted((r["method"], r["dataset"], r["seed"], r["status"]) for r in recs)
    want = sorted((m, d, s, "ok") for m in ("cart", "rf") for d in ("iris", "wine") for s in (0, 1))
    assert got == want
    assert not _markers(tmp_path)  # every job ended: nothing pending
    again = run_cli(args, tmp_path, env, timeout=300)
    assert again.returncode == 0, _out(again)[-3000:]
    assert "4 done already, 0 to launch" in _out(again)
    assert "submitted SLURM job" not in _out(again)
    assert len(_records(tmp_path)) == 8


def test_scancel_is_recorded_with_its_reason_and_a_rerun_runs_only_that_job(tmp_path):
    args = ["run", "-m", "method=cart", "dataset=iris,wine", SLEEPY, *LAUNCHER]
    driver = _start(args, tmp_path, _env(tmp_path, sleep_s=8))
    try:
        markers = _wait_for(lambda: len(_markers(tmp_path)) == 2 and _markers(tmp_path), 60, "jobs")
        iris = next(m for m in markers if "dataset=iris" in m["overrides"])["job_id"]
        _wait_for(lambda: _squeue([iris]).get(iris) == "RUNNING", 60, f"job {iris} running")
        subprocess.run(["scancel", iris], check=True)
        assert driver.wait(timeout=120) == 1  # the sweep finishes, then says a run failed
    finally:
        if driver.poll() is None:
            driver.kill()
    log = (tmp_path / "driver.log").read_text()
    assert f"cancelled: SLURM job {iris} CANCELLED" in log
    (failed,) = [r for r in _records(tmp_path) if r["status"] == "failed"]
    assert failed["dataset"] == "iris" and failed["cluster"]["job_id"] == iris
    assert failed["cluster"]["state"] == "CANCELLED"

    env = _env(tmp_path)
    status = run_cli(["status", "--no-ledger"], tmp_path, env)
    text = " ".join(status.stdout.split())  # rich wraps long lines
    assert f"cancelled cart | iris | seed 0 | fold 0: SLURM job {iris} was cancelled" in text
    assert "CANCELLED AT" in text  # the scheduler's reason, with its time

    again = run_cli(args, tmp_path, env, timeout=300)
    out = _out(again)
    assert again.returncode == 0, out[-3000:]
    assert "1 done already, 1 to launch" in out and "dataset=wine" not in out.split("sweep:")[1]
    recs = _records(tmp_path)
    assert sorted((r["dataset"], r["status"]) for r in recs) == [("iris", "ok"), ("wine", "ok")]


def test_killed_driver_jobs_finish_and_a_rerun_resubmits_nothing_still_queued(tmp_path):
    args = ["run", "-m", "method=cart,rf", "dataset=iris,wine", "seeds=[0,1]", SLEEPY, *LAUNCHER]
    driver = _start(args, tmp_path, _env(tmp_path, sleep_s=8))
    try:
        markers = _wait_for(lambda: len(_markers(tmp_path)) == 4 and _markers(tmp_path), 60, "jobs")
        ids = sorted(m["job_id"] for m in markers)
        before = _squeue(ids)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert all(s in ("PENDING", "RUNNING") for s in before.values()), before
    n_before = len(_records(tmp_path))
    # the rerun finds every job still queued or running: it waits for them, submits nothing
    again = run_cli(args, tmp_path, _env(tmp_path), timeout=300)
    out = _out(again)
    assert again.returncode == 0, out[-3000:]
    assert "4 still queued or running on SLURM" in out and "0 to launch" in out
    assert "submitted SLURM job" not in out
    recs = _records(tmp_path)
    assert n_before < 8 and len(recs) == 8 and all(r["status"] == "ok" for r in recs)
    assert not _markers(tmp_path)
    # each run ran once: one result line per run key in the jobs' logs
    lines = [
        ln
        for p in (tmp_path / "out" / "multirun").glob("*/*/*.log")
        for ln in p.read_text().splitlines()
        if "test_accuracy=" in ln
    ]
    assert len(lines) == 8 and len({ln.split("key=")[1] for ln in lines}) == 8
    print(f"kill-and-resume: jobs {before} at SIGKILL; records {n_before} -> {len(recs)}")


def test_job_past_its_time_limit_records_timeout_and_status_suggests_the_fix(tmp_path):
    args = ["run", "-m", "method=cart", "dataset=iris", SLEEPY, *LAUNCHER]
    args += ["hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=30"]
    res = run_cli(args, tmp_path, _env(tmp_path, sleep_s=600), timeout=400)
    assert res.returncode == 1, _out(res)[-3000:]  # a timed-out run is a failed run of the sweep
    assert "1 run(s) of this sweep failed" in _out(res)
    (rec,) = _records(tmp_path)
    assert rec["status"] == "failed" and rec["error"].startswith("timeout:"), rec.get("error")
    assert "timeout_min=1" in rec["error"]
    assert rec["cluster"]["state"] == "TIMEOUT" and rec["cluster"]["timeout_min"] == 1
    status = run_cli(["status", "--no-ledger"], tmp_path, _env(tmp_path))
    text = " ".join(status.stdout.split())
    assert "timeout cart | iris" in text
    assert "hydra.launcher.timeout_min=2" in text and "treebench/conf/method/cart.yaml" in text
    assert Path(tmp_path / "out" / "store" / "_slurm").exists() and not _markers(tmp_path)
