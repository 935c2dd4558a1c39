"""Output off a terminal (nohup, SLURM, ``tee``).

Full-width plain tables, one sweep line, Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

SWEEP = ["run", "-m", "method=cart,rf", "dataset=iris", "seed=0,1", "hydra/launcher=joblib"]


def _env(tmp_path, **kw) -> dict:
    env = dict(os.environ, TREEBENCH_OUTPUTS=str(tmp_path / "out"), TREEBENCH_LEDGER="off", **kw)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("COLUMNS", None)  # an explicit width would win
    return env


def _cli(args, tmp_path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "treebench.cli", *args],
        cwd=tmp_path,
        env=_env(tmp_path, **kw),
        capture_output=True,  # a pipe, not a terminal
        text=True,
        timeout=300,
    )


def test_piped_tables_are_not_cut(tmp_path):
    res = _cli(["list", "methods"], tmp_path)
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if "│ adaboost " in line)
    assert "classification, regression" in row and "decision stumps" in row  # one line, uncut
    assert "\x1b[" not in res.stdout  # no colour codes


def test_piped_sweep_one_summary_line_and_full_rows(tmp_path):
    res = _cli([*SWEEP, "hydra.launcher.n_jobs=2"], tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "Joblib.Parallel(" not in out and "#0 :" not in out and "Launching jobs" not in out
    summary = [line for line in out.splitlines() if line.startswith("sweep:")]
    assert len(summary) == 1 and "4 jobs, 0 done already, 4 to launch" in summary[0]
    header = next(line for line in res.stdout.splitlines() if "dataset" in line and "┃" in line)
    for col in ("method", "test_accuracy", "n_splits", "split_evals", "fit_s"):
        assert col in header
    rows = [line for line in res.stdout.splitlines() if line.startswith("│ iris")]
    assert len(rows) == 2 and all("±" in r for r in rows)
    assert any("│ cart " in r for r in rows) and any("│ rf " in r for r in rows)


def test_verbose_lists_the_jobs(tmp_path):
    res = _cli(
        ["run", "-v", "-m", "method=cart", "dataset=iris", "hydra/launcher=joblib"], tmp_path
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "#0 : method=cart dataset=iris" in res.stdout + res.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_prints_one_line(tmp_path):
    args = ["run", "method=cart", "dataset=iris"]
    args.append("dataset.loader._target_=tests.slurm_jobs.sleepy_load")
    proc = subprocess.Popen(
        [sys.executable, "-m", "treebench.cli", *args],
        cwd=tmp_path,
        env=_env(
            tmp_path,
            TREEBENCH_TEST_SLEEP_S="600",
            TREEBENCH_TEST_SLEEP_MARK=str(tmp_path / "sleeping"),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal: a runner started in the background of a script ignores SIGINT,
        # and its children would inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.time() + 600  # bounds a hang; the loop ends once the loader sleeps
        while time.time() < deadline and not list((tmp_path / "sleeping").glob("*")):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in out + err
    assert err.strip().splitlines()[-1] == "interrupted; 0 records kept, rerun to resume"
