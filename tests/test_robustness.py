"""Crash safety and bad input: SIGKILL mid-sweep, concurrent runs of one job, unusable data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import REPO, compose_config
from treebench import runner
from treebench.data import DataContext
from treebench.data.base import Dataset, Part
from treebench.results.store import Store


def _cli(args, cwd, out):
    env = dict(os.environ, TREEBENCH_OUTPUTS=str(out), PYTHONPATH=str(REPO))
    return [sys.executable, "-m", "treebench.cli", *args], env


def _records(out):
    # pathlib's glob matches dotfiles: skip the .tmp-* file of a write still in flight
    return [json.loads(p.read_text()) for p in (out / "store").glob("*/[!.]*.json")]


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume(tmp_path):
    out = tmp_path / "out"
    args = [
        "run",
        "-m",
        "method=rf",
        "dataset=digits",
        "seed=0,1,2,3,4,5",
        "method.params.n_estimators=60",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    ]
    cmd, env = _cli(args, tmp_path, out)
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait(lambda: len(_records(out)) >= 2, 600)  # a condition; the deadline bounds a hang
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its workers, mid-sweep
    proc.wait()
    n_before = len(_records(out))
    assert 1 <= n_before < 6, "kill the sweep halfway"
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    recs = _records(out)
    assert len(recs) == 6 and len({r["key"] for r in recs}) == 6
    assert sorted(r["seed"] for r in recs) == [0, 1, 2, 3, 4, 5]
    assert all(r["status"] == "ok" for r in recs)
    assert not list((out / "store").glob("*/.tmp-*")), "no partial files"


def test_two_processes_same_job_one_record(tmp_path):
    out = tmp_path / "out"
    cmd, env = _cli(
        ["run", "method=rf", "dataset=digits", "method.params.n_estimators=50"], tmp_path, out
    )
    procs = [
        subprocess.Popen(
            cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    recs = _records(out)
    assert len(recs) == 1 and recs[0]["status"] == "ok"
    assert sum("test_accuracy=" in o for o in outs) == 1  # the other skipped it
    assert any("skipped" in o for o in outs)


def _run_with(dataset, tmp_path, overrides=("method=cart",)):
    cfg = compose_config([*overrides, "dataset=iris"])
    store = Store(tmp_path / "store")
    orig = runner.load_dataset
    runner.load_dataset = lambda *_a, **_k: dataset
    try:
        (rec,) = runner.run_job(cfg, store, DataContext(tmp_path, None, False), log=lambda *_: None)
    finally:
        runner.load_dataset = orig
    return rec


def test_nan_features_give_a_clear_failure(tmp_path):
    X = np.random.RandomState(0).rand(60, 3)
    X[5, 1] = np.nan
    y = np.arange(60) % 2
    rec = _run_with(Dataset("iris", "classification", {"all": Part(X, y)}), tmp_path)
    assert rec["status"] == "failed" and "NaN" in rec["error"] and "impute" in rec["error"]


def test_single_class_training_is_a_recorded_reason(tmp_path):
    X = np.random.RandomState(0).rand(60, 3)
    y = np.zeros(60, dtype=int)
    rec = _run_with(Dataset("iris", "classification", {"all": Part(X, y)}), tmp_path)
    assert rec["status"] == "failed" and "single class" in rec["error"]


def test_invalid_hyperparameter_names_the_parameter(tmp_path):
    cfg = compose_config(["method=rf", "dataset=iris", "method.params.n_estimators=-3"])
    (rec,) = runner.run_job(
        cfg, Store(tmp_path / "s"), DataContext(tmp_path, None, False), log=lambda *_: None
    )
    assert rec["status"] == "failed" and "InvalidParameterError" in rec["error"]
    assert "n_estimators" in rec["error"]


def _wait(condition, timeout_s: float) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (this test's own processes only)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:  # gone, or another user's process
            pass
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_driver_leaves_no_worker(tmp_path):
    out = tmp_path / "out"
    marker = f"TREEBENCH_TEST_MARK=orphans-{os.getpid()}-{tmp_path.name}"
    args = [
        "run",
        "-m",
        "method=cart",
        "dataset=iris",
        "seed=0,1,2,3",
        "dataset.loader._target_=tests.slurm_jobs.sleepy_load",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    ]
    cmd, env = _cli(args, tmp_path, out)
    sleeping = tmp_path / "sleeping"  # a file per job inside its sleep, past the lifeline's start
    env.update(
        TREEBENCH_TEST_SLEEP_S="600",
        TREEBENCH_LEDGER="off",
        TREEBENCH_TEST_SLEEP_MARK=str(sleeping),
    )
    env[marker.split("=")[0]] = marker.split("=")[1]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # conditions, not sleeps: the deadlines only bound a hang on a loaded machine
        assert _wait(lambda: len(list(sleeping.glob("*"))) >= 2, 300), "the jobs did not start"
        assert _wait(lambda: len(_marked(marker)) >= 3, 60), "driver and two workers"
        proc.kill()  # the driver alone: its workers must follow
        proc.wait()
        _wait(lambda: not _marked(marker), 120)
        left = _marked(marker)
    finally:
        for pid in _marked(marker):  # only this test's processes
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the killed sweep survived: {left}"
    assert _records(out) == []
    env["TREEBENCH_TEST_SLEEP_S"] = "0"
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    recs = _records(out)
    assert len(recs) == 4 and len({r["key"] for r in recs}) == 4
    assert all(r["status"] == "ok" for r in recs)
