"""The command line: listing, single runs, sweeps through the joblib launcher, collect, errors."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tests.conftest import run_cli
from treebench.cli import app

runner = CliRunner()


def test_help_on_every_command():
    for cmd in ([], ["run"], ["list"], ["collect"], ["report"], ["fetch"]):
        res = runner.invoke(app, [*cmd, "--help"])
        assert res.exit_code == 0, res.output
        assert "Usage" in res.output


def test_list_shows_methods_and_datasets():
    res = runner.invoke(app, ["list"])
    assert res.exit_code == 0
    for word in ("cart", "gbdt", "digits", "diabetes", "demo", "regression"):
        assert word in res.output


def test_unknown_method_lists_choices_and_suggests():
    res = runner.invoke(app, ["run", "method=cartt", "dataset=iris"])
    assert res.exit_code == 2
    assert "Unknown method 'cartt'" in res.output and "Did you mean 'cart'" in res.output
    assert "rf" in res.output


def test_unknown_dataset_lists_choices():
    res = runner.invoke(app, ["run", "-m", "method=cart", "dataset=iris,irsi"])
    assert res.exit_code == 2 and "Unknown dataset 'irsi'" in res.output


def test_single_run_prints_record_then_skips(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    res = run_cli(["run", "method=cart", "dataset=iris"], tmp_path, env)
    assert res.returncode == 0, res.stderr
    assert "test_accuracy" in res.stdout and "status" in res.stdout
    again = run_cli(["run", "method=cart", "dataset=iris"], tmp_path, env)
    assert again.returncode == 0 and "skipped, done" in again.stdout


def test_cfg_job_passthrough(tmp_path):
    res = run_cli(
        ["run", "method=rf", "method.params.n_estimators=7", "--cfg", "job"],
        tmp_path,
        {"TREEBENCH_OUTPUTS": str(tmp_path / "out")},
    )
    assert res.returncode == 0, res.stderr
    assert "n_estimators: 7" in res.stdout


def test_failed_single_run_exits_nonzero(tmp_path):
    # a value its constraints allow but fit rejects (iris has 4 features); -2 fails while planning
    res = run_cli(
        ["run", "method=cart", "dataset=iris", "method.params.monotonic_cst=[1]"],
        tmp_path,
        {"TREEBENCH_OUTPUTS": str(tmp_path / "out")},
    )
    assert res.returncode == 1 and "FAILED" in res.stdout


@pytest.mark.slow
def test_joblib_sweep_collect_and_resume(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = [
        "run",
        "-m",
        "method=cart,gbdt",
        "dataset=iris,wine",
        "seed=0,1",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    ]
    res = run_cli(args, tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "8 records" in res.stdout
    col = run_cli(["collect"], tmp_path, env)
    assert col.returncode == 0 and "8 rows collected" in col.stdout
    sweeps = sorted((tmp_path / "out" / "multirun").iterdir())
    keys = [json.loads(p.read_text()) for p in sweeps[0].glob("*/keys.json")]
    assert len(keys) == 8
    plan = run_cli([*args, "--dry-run"], tmp_path, env)
    assert plan.returncode == 0 and "8 done, 0 to run" in plan.stdout
    again = run_cli(args, tmp_path, env)  # nothing is launched again
    assert again.returncode == 0 and "8 done already, 0 to launch" in again.stdout
    assert "8 records" in again.stdout


def test_dry_run_lists_jobs_and_launches_nothing(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    res = run_cli(["run", "method=cart,rf", "dataset=iris", "--dry-run"], tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "sweep plan: 2 jobs" in res.stdout and "0 done, 2 to run" in res.stdout
    assert not (tmp_path / "out" / "store").exists()


def test_a_large_dry_run_prints_a_summary_its_first_jobs_and_how_to_see_all(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = ["run", "method=cart,rf", "dataset=iris,wine", "seed=0,1", "--dry-run"]
    res = run_cli([*args, "hydra.sweeper.plan_rows=3"], tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert "sweep plan: 8 jobs by method" in out and "the first 3 of 8 jobs" in out
    rows = [
        ln.split("│")[1:5]
        for ln in out.splitlines()
        if ln.startswith("│ cart") or ln.startswith("│ rf")
    ]
    assert [[c.strip() for c in r] for r in rows] == [
        ["cart", "4", "0/4", "4 to run"],
        ["rf", "4", "0/4", "4 to run"],
    ]
    assert len(re.findall(r"^│ +\d+ │", out, flags=re.M)) == 3  # jobs 0, 1, 2 listed
    assert "5 more jobs not listed (add --all to the command to list every job)" in out
    assert "0 done, 8 to run" in out
    every = run_cli([*args, "--all", "hydra.sweeper.plan_rows=3"], tmp_path, env)
    assert every.returncode == 0, every.stderr[-2000:]
    assert "sweep plan: 8 jobs" in every.stdout and "by method" not in every.stdout
    assert len(re.findall(r"^│ +\d+ │", every.stdout, flags=re.M)) == 8


def test_a_plan_of_thousands_of_jobs_fits_a_screen():
    from treebench.report import console as rc

    plan = [([f"method=m{i % 3}", f"dataset=d{i}", "seed=0"], 1, i % 2) for i in range(7000)]
    with rc.console.capture() as cap:
        rc.print_plan(plan, [None if i % 2 else 60.0 for i in range(7000)], limit=20)
    text = cap.get()
    assert len(text.splitlines()) < 60
    assert "sweep plan: 7,000 jobs by method" in text and "6,980 more jobs not listed" in text
    m0 = next(ln for ln in text.splitlines() if ln.startswith("│ m0"))
    # m0: jobs 0, 3, 6, ...: 2,334 jobs, every other one done; the rest a core-minute each
    assert [c.strip() for c in m0.split("│")[1:5]] == [
        "m0",
        "2,334",
        "1,167/2,334",
        "1,167 to run, 1,167 done",
    ]
    assert "3,500 done, 3,500 to run" in text


def test_seeds_list_runs_inside_one_job(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    res = run_cli(["run", "method=cart", "dataset=iris", "seeds=[0,1,2]"], tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.count("test_accuracy=") == 3
    col = run_cli(["collect"], tmp_path, env)
    assert "3 rows collected" in col.stdout


@pytest.mark.slow
def test_submitit_local_sweep_then_nothing_submitted(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = ["run", "-m", "method=cart,adaboost", "dataset=iris", "hydra/launcher=submitit_local"]
    res = run_cli(args, tmp_path, env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "2 records" in res.stdout
    # cart and adaboost hint different resources: two submitit launches
    assert len(list((tmp_path / "out" / "multirun").glob("*/.submitit/[0-9]*"))) == 2
    again = run_cli(args, tmp_path, env, timeout=600)
    assert again.returncode == 0 and "2 done already, 0 to launch" in again.stdout


def test_shell_completion_offers_config_names():
    from treebench.cli import complete

    assert ("method=", "") in complete("me")
    names = [n for n, _ in complete("method=cart,tn")]
    assert "method=cart,tnt" in names and all(n.startswith("method=cart,tn") for n in names)
    assert any(n == "dataset=iris" for n, _ in complete("dataset=ir"))
    assert complete("nosuchgroup=x") == []


def test_ctrl_c_while_run_imports_prints_the_one_line(tmp_path, monkeypatch):
    """A Ctrl-C before the job starts (heavy imports) gets the exit and line of one during it."""
    import treebench.lifeline

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(treebench.lifeline, "mark_driver", interrupted)
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path / "out"))
    res = runner.invoke(app, ["run", "method=cart", "dataset=iris"])
    assert res.exit_code == 130, res.output
    assert res.output.strip().splitlines()[-1] == "interrupted; 0 records kept, rerun to resume"


def test_dry_run_estimates_core_time_from_done_seeds(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    done = run_cli(["run", "method=cart", "dataset=iris", "seed=0"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
    rec = json.loads(next((tmp_path / "out" / "store").rglob("*.json")).read_text())
    rec["wall_seconds"], rec["threads"], rec["cpu_seconds"] = 1200.0, 2, 1800.0  # 30 core-minutes
    next((tmp_path / "out" / "store").rglob("*.json")).write_text(json.dumps(rec))
    args = ["run", "-m", "method=cart,rf", "dataset=iris", "seed=0,1,2", "--dry-run"]
    plan = run_cli(args, tmp_path, env)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "1 done, 5 to run" in plan.stdout
    # cart's seeds 1 and 2 take what its seed 0 took; rf has no done seed
    assert "2 of them take about 1.0 core-hours" in plan.stdout
    assert "3 have nothing to go by" in plan.stdout
    assert plan.stdout.count("30 core-minutes") == 2
