"""SLURM under faults.

A stop signal that would not fit the limit, a controller that does not answer, a sweep that cannot
submit. The real-cluster test runs against ``scripts/slurm_local.sh start``.
"""

from __future__ import annotations

import logging
import stat

import pytest

from tests.faults.conftest import records, treebench
from tests.test_slurm import LAUNCHER, NO_CLUSTER, SLEEPY
from treebench import slurm


def test_the_stop_signal_is_capped_to_a_share_of_the_limit():
    assert slurm.signal_delay(240, 120) == (120, "")  # fits: left as set
    delay, note = slurm.signal_delay(1, 120)  # the default would come before the job starts
    assert delay == 15 and "signal_delay_s=120" in note and "before they start" in note
    assert slurm.signal_delay(2, 120)[0] == 30  # what `status` advises after a timeout works
    assert slurm.signal_delay(None, 120) == (120, "")


def test_a_driver_says_every_minute_that_the_controller_does_not_answer(caplog, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(
        slurm, "last_error", "slurm_load_jobs error: Unable to contact slurm controller"
    )
    u = slurm.Unreachable(clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="treebench.slurm"):
        for t in range(0, 185, 5):  # three minutes of polls every 5 s
            now[0] = float(t)
            u.missed(3)
        u.answered()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 5 and lines[-1] == "the SLURM controller answers again"
    assert all("Unable to contact slurm controller" in m for m in lines[:4])
    assert (
        "for 0 s" in lines[0] and "for 180 s" in lines[3] and "still waiting for 3 job" in lines[0]
    )


def _fake_slurm(tmp_path):
    """``sbatch``, ``squeue`` and ``sacct`` that answer as when slurmctld is down."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("sbatch", "squeue", "sacct", "sinfo", "scontrol"):
        p = bindir / name
        p.write_text(
            "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Unable to contact "
            "slurm controller (connect failure)' >&2\nexit 1\n"
        )
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return bindir


def test_a_sweep_that_cannot_submit_says_so_in_one_line(tmp_path):
    import os

    env = {
        "TREEBENCH_OUTPUTS": str(tmp_path / "out"),
        "PATH": f"{_fake_slurm(tmp_path)}{os.pathsep}{os.environ['PATH']}",
    }
    args = ["run", "-m", "method=cart", "dataset=iris", *LAUNCHER]
    res = treebench(args, tmp_path, env=env)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert "cannot submit 1 job(s) to SLURM" in last and "Unable to contact" in last
    assert "0 records kept" in last
    assert not records(tmp_path / "out" / "store")


@pytest.mark.slurm
@pytest.mark.xdist_group("slurm")
@pytest.mark.skipif(NO_CLUSTER is not None, reason=f"SLURM tests skipped: {NO_CLUSTER}")
def test_a_two_minute_limit_runs_a_30_s_job_instead_of_timing_it_out(tmp_path):
    """A short job's stop signal comes 30 s before its limit, not at its start.

    The default signal_delay_s=120 signalled a timeout_min=2 job at its start (what `status`
    advised after a 1-minute timeout); capped, the signal comes 30 s before the limit.
    """
    args = [
        "run",
        "-m",
        "method=cart",
        "dataset=iris",
        *LAUNCHER,
        SLEEPY,
        "hydra.launcher.timeout_min=2",
    ]
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out"), "TREEBENCH_TEST_SLEEP_S": "30"}
    res = treebench(args, tmp_path, env=env, timeout=400)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "the stop signal comes 30 s before the limit" in out
    recs = records(tmp_path / "out" / "store")
    assert [r["status"] for r in recs.values()] == ["ok"], [r.get("error") for r in recs.values()]
