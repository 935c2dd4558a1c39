"""Faults of the environment: a full disk, SIGTERM, what a killed process leaves behind."""

from __future__ import annotations

import os
import signal
import time

from tests.faults.conftest import records, temps, treebench

SWEEP = ["run", "-m", "method=cart", "dataset=iris", "seed=0,1,2,3", "threads=1"]


def test_full_store_ends_the_sweep_in_one_line_and_the_rerun_completes(tmp_path, faulty):
    out = tmp_path / "out"
    env = {"TREEBENCH_OUTPUTS": str(out), "TB_FULL_STORE": str(out / "store"), "TB_FULL_AFTER": "2"}
    args = [*SWEEP, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    res = treebench(args, tmp_path, env=env, site=faulty)
    assert res.returncode == 3, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert "no space left on the device" in last and str(out / "store") in last
    assert "paths.outputs=" in last and "records kept, rerun to resume" in last
    assert "Traceback" not in res.stderr and "Errno 28" not in res.stderr
    kept = records(out / "store")
    assert 2 <= len(kept) < 4 and all(r["status"] == "ok" for r in kept.values())
    assert not temps(out / "store")
    res = treebench(SWEEP, tmp_path, env={"TREEBENCH_OUTPUTS": str(out)})
    assert res.returncode == 0, res.stderr
    after = records(out / "store")
    assert len(after) == 4 and all(after[k] == r for k, r in kept.items())  # kept, not refitted


def test_sigterm_stops_a_sweep_as_ctrl_c_does_and_leaves_no_temp_file(tmp_path):
    out = tmp_path / "out"
    env = {"TREEBENCH_OUTPUTS": str(out)}
    args = ["run", "-m", "method=rf", "dataset=digits", "seed=range(0,40)", "threads=1"]
    proc = treebench(args, tmp_path, env=env, popen=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(records(out / "store")) < 1:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    n = len(records(out / "store"))
    assert f"terminated; {n} record" in err and "kept, rerun to resume" in err, err
    assert "Traceback" not in err
    assert not temps(out / "store")
    assert 1 <= n < 40


def test_stale_temp_files_are_removed_by_the_next_run(tmp_path):
    from treebench.faults import clean_stale_temps, temp_prefix

    store = tmp_path / "store"
    (store / "ab").mkdir(parents=True)
    dead = store / "ab" / f"{temp_prefix().rsplit('-', 2)[0]}-999999-x.json"  # a dead pid
    old = store / "ab" / ".tmp-abc.json"  # before pids were in the name: by age
    young = store / "ab" / ".tmp-def.json"  # a write in flight elsewhere
    mine = store / "ab" / f"{temp_prefix()}y.json"  # this process's
    for p in (dead, old, young, mine):
        p.write_text("")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert clean_stale_temps(store) == 2
    assert sorted(p.name for p in temps(store)) == sorted([young.name, mine.name])


def test_a_single_run_cleans_the_store_of_temp_files(tmp_path):
    out = tmp_path / "out"
    (out / "store" / "ab").mkdir(parents=True)
    stale = out / "store" / "ab" / ".tmp-abc.json"
    stale.write_text("")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    res = treebench(
        ["run", "method=cart", "dataset=iris"], tmp_path, env={"TREEBENCH_OUTPUTS": str(out)}
    )
    assert res.returncode == 0, res.stderr
    assert not stale.exists()
