"""SLURM bookkeeping without a cluster: squeue parsing, pending markers, lost-job records, status.

A fake ``squeue`` on PATH answers from ``$FAKE_SQUEUE`` (lines ``<id>|<state>|<reason>|<limit>``).
"""

from __future__ import annotations

import stat

import pytest
from typer.testing import CliRunner

from treebench import slurm
from treebench.cli import app
from treebench.results.store import Store

FAKE = """#!/bin/sh
if [ -n "$FAKE_SQUEUE_FAIL" ]; then echo "$FAKE_SQUEUE_FAIL" >&2; exit 1; fi
printf '%b' "$FAKE_SQUEUE"
"""


@pytest.fixture
def fake_squeue(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "squeue"
    exe.write_text(FAKE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")

    def answer(*lines: str, fail: str = "") -> None:
        monkeypatch.setenv("FAKE_SQUEUE", "".join(f"{ln}\\n" for ln in lines))
        monkeypatch.setenv("FAKE_SQUEUE_FAIL", fail)

    return answer


def _run(key: str, dataset: str = "iris") -> dict:
    return {"key": key, "method": "cart", "dataset": dataset, "seed": 0, "fold": 0}


def _marker(store: Store, job_id: str, *keys: str, **info) -> dict:
    return slurm.write_marker(
        store.root, job_id, [_run(k) for k in keys], sweep_dir="/s/sweep1", timeout_min=10, **info
    )


def test_squeue_states_parse_and_gone(fake_squeue):
    fake_squeue("7_0|RUNNING|None|10:00", "7_1|PENDING|Resources|10:00")
    got = slurm.squeue_states(["7_0", "7_1", "5"])
    assert got["7_0"] == slurm.JobState("7_0", "RUNNING", "", "10:00")
    assert got["7_1"].reason == "Resources" and got["7_1"].active
    assert got["5"].state == slurm.GONE and not got["5"].active
    fake_squeue(fail="slurm_load_jobs error: Invalid job id specified")
    assert slurm.squeue_states(["5"]) == {"5": slurm.JobState("5", slurm.GONE)}
    fake_squeue(fail="slurm_load_jobs error: Unable to contact slurm controller")
    assert slurm.squeue_states(["5"]) is None  # no answer is not "finished"


def test_reconcile_holds_active_runs_and_records_cancelled_ones(tmp_path, fake_squeue):
    store = Store(tmp_path / "store")
    _marker(store, "7_0", "aa1")
    _marker(store, "7_1", "bb1", "bb2")
    _marker(store, "8", "cc1")
    store.write({**_run("bb2"), "status": "ok", "metrics": {"test_accuracy": 1.0}})
    fake_squeue("7_0|PENDING|Priority|10:00", "7_1|CANCELLED|None|10:00", "8|COMPLETED|None|10:00")
    held = slurm.reconcile(store)
    assert set(held) == {"aa1"} and held["aa1"][1].state == "PENDING"
    assert [m["job_id"] for m in slurm.read_markers(store.root)] == ["7_0"]
    rec = store.get("bb1")
    assert rec["status"] == "failed" and rec["error"].startswith("cancelled: SLURM job 7_1")
    assert rec["cluster"]["state"] == "CANCELLED" and rec["dataset"] == "iris"
    assert store.get("bb2")["status"] == "ok"  # a done run is left alone
    assert store.get("cc1") is None  # completed: the job wrote (or failed) its records itself
    assert list(store.records())  # markers are not records
    assert all("job_id" not in r for r in store.records())


def test_reconcile_without_scheduler_holds_nothing_and_keeps_markers(tmp_path, fake_squeue):
    store = Store(tmp_path / "store")
    _marker(store, "9", "dd1")
    fake_squeue(fail="slurm_load_jobs error: Socket timed out")
    assert slurm.reconcile(store) == {}
    assert len(slurm.read_markers(store.root)) == 1


def test_lost_record_keeps_a_newer_failure_of_the_job_itself(tmp_path):
    store = Store(tmp_path / "store")
    m = _marker(store, "3", "ee1", "ee2")
    own = {**_run("ee1"), "status": "failed", "error": "ValueError: bad"}
    own["provenance"] = {"finished_at": "9999-01-01T00:00:00+00:00"}
    store.write(own)
    old = {**_run("ee2"), "status": "failed", "error": "ValueError: older"}
    old["provenance"] = {"finished_at": "2000-01-01T00:00:00+00:00"}
    store.write(old)
    written = slurm.record_lost(store, m, slurm.JobState("3", "TIMEOUT", "TimeLimit", "10:00"))
    assert written == ["ee2"]
    assert store.get("ee1")["error"] == "ValueError: bad"
    assert store.get("ee2")["error"].startswith("timeout: SLURM job 3 reached its time limit")
    assert "timeout_min=10" in store.get("ee2")["error"]
    assert "hydra.launcher.timeout_min=20" in slurm.fix_hint(store.get("ee2"))


def test_stepd_reason_reads_the_last_scheduler_line(tmp_path):
    err = tmp_path / "x.err"
    err.write_text(
        "noise\nslurmstepd-vm: error: *** JOB 5 ON vm CANCELLED AT 2026-01-01T10:00:00 ***\n"
        "slurmstepd-vm: error: *** JOB 5 ON vm CANCELLED AT 2026-01-01T11:00:00 DUE TO TIME LIMIT "
        "***\n"
    )
    assert slurm.stepd_reason(err, tmp_path / "missing") == (
        "CANCELLED AT 2026-01-01T11:00:00 DUE TO TIME LIMIT"
    )


def test_status_lists_pending_jobs_per_sweep(tmp_path, fake_squeue):
    store = Store(tmp_path / "out" / "store")
    _marker(store, "7_0", "aa1")
    _marker(store, "7_1", "aa2")
    fake_squeue("7_0|RUNNING|None|10:00", "7_1|PENDING|Resources|10:00")
    r = CliRunner().invoke(app, ["status", "--no-ledger", "--outputs", str(tmp_path / "out")])
    said = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "sweep /s/sweep1: 7_0 RUNNING, 7_1 PENDING (Resources); 2 runs" in said
