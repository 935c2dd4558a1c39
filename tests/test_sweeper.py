"""The treebench sweeper's explicit rows (crossed with the sweep's params) and reduced profile."""

from __future__ import annotations

from tests.conftest import run_cli


def _plan(tmp_path, *args):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    # data.fetch=true: every job counts as runnable whatever data this machine has (a dry run
    # downloads nothing)
    return run_cli(["run", *args, "data.fetch=true", "--dry-run"], tmp_path, env)


def test_rows_cross_params(tmp_path):
    res = _plan(tmp_path, "experiment=tnt_table2", "profile=reduced")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 done, 8 to run" in res.stdout  # 4 rows x 2 seeds
    assert all(m in res.stdout for m in ("tnt_bagging", "bagged_cart", "tnt_adaboost"))


def test_profile_reduced_runs_the_experiments_reduced_plan(tmp_path):
    full = _plan(tmp_path, "experiment=tnt_table1")
    assert full.returncode == 0, full.stderr[-2000:]
    assert "0 done, 80 to run" in full.stdout and "dataset=digits " not in full.stdout
    reduced = _plan(tmp_path, "experiment=tnt_table1", "profile=reduced")
    assert reduced.returncode == 0, reduced.stderr[-2000:]
    assert "0 done, 4 to run" in reduced.stdout and "dataset=digits" in reduced.stdout


def test_row_and_sweep_params_setting_one_key_is_an_error(tmp_path):
    res = _plan(
        tmp_path,
        "-m",
        "experiment=tnt_table2",
        "profile=reduced",
        "+hydra.sweeper.reduced.params.method=cart",
    )
    assert res.returncode == 1
    assert "both set ['method']; set each key in one place" in res.stderr + res.stdout


def test_a_command_line_value_of_a_row_key_selects_rows(tmp_path):
    res = _plan(tmp_path, "experiment=rhf_table2", "profile=reduced", "dataset=madelon,iris")
    assert res.returncode == 0, res.stderr[-2000:]
    assert (
        "0 done, 33 to run" in res.stdout
    )  # madelon 3 + 1 + 1 + RF, iris 2 + RF + 2x2x2 x 3 seeds
    assert "dataset=abalone" not in res.stdout
    res = _plan(tmp_path, "experiment=rhf_table2", "profile=reduced", "method.params.max_depth=7")
    assert res.returncode == 0, res.stderr[-2000:]
    assert (
        "0 done, 10 to run" in res.stdout
    )  # abalone_reg's grid (2 x 4) and madelon (2) at depth 7
    res = _plan(tmp_path, "experiment=tnt_table2", "profile=reduced", "method=cart")
    assert res.returncode == 1
    assert "no row of the sweep has method=cart" in res.stderr + res.stdout


def test_a_command_line_value_of_a_swept_key_replaces_the_experiments_values(tmp_path):
    # e2edf_anneal sweeps steepness_inc 0,0.01,0.1 x epochs 15,30,45 over 3 rows
    res = _plan(
        tmp_path,
        "experiment=e2edf_anneal",
        "dataset=letter,usps",
        "method.params.steepness_inc=0,0.1",
        "method.params.epochs=15",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 done, 4 to run" in res.stdout  # 2 rows x 2 values x 1, not crossed with the 3 x 3
    assert "epochs=30" not in res.stdout and "steepness_inc=0.01" not in res.stdout


def test_a_row_with_several_values_is_one_job_per_value(tmp_path):
    rows = 'hydra.sweeper.rows=["method=cart,rf dataset=iris","method=gbdt dataset=iris,wine"]'
    res = _plan(tmp_path, "-m", rows, "seed=0,1")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 done, 8 to run" in res.stdout  # (2 + 2 rows) x 2 seeds
    assert "method=gbdt dataset=wine seed=1" in res.stdout


def test_named_lists_of_rows_are_crossed(tmp_path):
    rows = (
        "hydra.sweeper.rows={data:['dataset=iris','dataset=wine "
        "split=holdout'],model:['method=cart']}"
    )
    res = _plan(tmp_path, "-m", rows, "seed=0")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 done, 2 to run" in res.stdout
    assert "dataset=wine split=holdout method=cart seed=0" in res.stdout


def test_done_sweep_job_counts_in_a_second_experiment(tmp_path):
    from treebench.results import collect

    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = ["run", "-m", "method=cart", "dataset=iris"]
    first = run_cli([*args, "experiment_name=first"], tmp_path, env)
    assert first.returncode == 0, first.stderr[-2000:]
    again = run_cli([*args, "experiment_name=second"], tmp_path, env)
    assert again.returncode == 0 and "1 done already, 0 to launch" in again.stdout
    store = tmp_path / "out" / "store"
    (a,) = collect(store, experiment="first").to_dict("records")
    (b,) = collect(store, experiment="second").to_dict("records")
    assert a["key"] == b["key"]  # one fit, listed under both experiments


def test_a_full_sweep_holding_a_reduced_runs_job_counts_it_as_full(tmp_path):
    """A job the reduced profile ran that the full plan holds too (same key) is not fitted again.

    And from then on counts as the full protocol's in that experiment.
    """
    from treebench.results import collect

    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = ["run", "-m", "method=cart", "dataset=iris", "experiment_name=exp"]
    first = run_cli([*args, "profile=reduced"], tmp_path, env)
    assert first.returncode == 0, first.stderr[-2000:]
    store = tmp_path / "out" / "store"
    assert collect(store)["profile"].tolist() == ["reduced"]
    again = run_cli([*args, "profile=full"], tmp_path, env)
    assert again.returncode == 0 and "1 done already, 0 to launch" in again.stdout
    assert collect(store)["profile"].tolist() == ["full"]


def test_seed_jobs_share_a_composition_with_the_same_keys(tmp_path):
    """Jobs differing only in ``seed`` are planned from one composed config.

    Their run keys must still be the ones each launched job writes, so a rerun finds every job done.
    """
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    args = ["run", "-m", "method=cart", "dataset=iris", "seed=0,1,2", "method.params.max_depth=2,3"]
    first = run_cli(args, tmp_path, env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "0 done already, 6 to launch" in first.stdout
    again = run_cli(args, tmp_path, env)
    assert again.returncode == 0 and "6 done already, 0 to launch" in again.stdout
    more = run_cli([*args[:-2], "seed=2,3", "method.params.max_depth=3"], tmp_path, env)
    assert more.returncode == 0 and "1 done already, 1 to launch" in more.stdout


def test_jobs_planned_from_a_shared_composition_match_what_each_job_writes(tmp_path):
    """Jobs with the same config-group choices share one composition.

    Each job's value overrides applied and undone after it: a value set by one job (or an added key)
    must not leak into the next, and an interpolation must see the job's own values.
    """
    import json

    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    alpha = "method=cart dataset=iris ++method.params.ccp_alpha=0.01"
    common = ["seed=1,2", "method.params.max_depth=${seed}"]
    first = run_cli(["run", "-m", f'hydra.sweeper.rows=["{alpha}"]', *common], tmp_path, env)
    assert first.returncode == 0, first.stderr[-2000:]
    both = f'hydra.sweeper.rows=["{alpha}","method=cart dataset=iris"]'
    second = run_cli(["run", "-m", both, *common], tmp_path, env)
    assert second.returncode == 0, second.stderr[-2000:]
    # planned after the ccp_alpha jobs, the plain ones are not taken for them
    assert "2 done already, 2 to launch" in second.stdout
    recs = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("store/*/*.json")]
    got = sorted((r["params"]["ccp_alpha"], r["params"]["max_depth"], r["seed"]) for r in recs)
    assert got == [(0.0, 1, 1), (0.0, 2, 2), (0.01, 1, 1), (0.01, 2, 2)]
    again = run_cli(["run", "-m", both, *common], tmp_path, env)
    assert again.returncode == 0 and "4 done already, 0 to launch" in again.stdout


def test_order_runs_jobs_with_the_first_key_slowest(tmp_path):
    """``hydra.sweeper.order=[seed,dataset]``.

    Every method on one dataset and seed before the next, so a sweep stopped part-way leaves whole
    cells; without it, the planned (method-major) order.
    """
    args = ("-m", "method=cart,rf", "dataset=iris,wine", "seed=0,1")
    res = _plan(tmp_path, *args, "hydra.sweeper.order=[seed,dataset]")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [ln for ln in res.stdout.splitlines() if "method=" in ln]
    jobs = [
        tuple(w for w in ln.split() if w.startswith(("method=", "dataset=", "seed=")))
        for ln in lines
    ]
    assert [sorted(j) for j in jobs] == [
        sorted(j)
        for j in [
            ("method=cart", "dataset=iris", "seed=0"),
            ("method=rf", "dataset=iris", "seed=0"),
            ("method=cart", "dataset=wine", "seed=0"),
            ("method=rf", "dataset=wine", "seed=0"),
            ("method=cart", "dataset=iris", "seed=1"),
            ("method=rf", "dataset=iris", "seed=1"),
            ("method=cart", "dataset=wine", "seed=1"),
            ("method=rf", "dataset=wine", "seed=1"),
        ]
    ]
    plain = _plan(tmp_path, *args)
    first = [ln for ln in plain.stdout.splitlines() if "method=" in ln][:4]
    assert all("method=cart" in ln for ln in first)  # the planned order: method slowest


def test_jobs_whose_data_files_are_missing_are_named_with_the_fix_and_not_launched(tmp_path):
    env = {
        "TREEBENCH_OUTPUTS": str(tmp_path / "out"),
        "TREEBENCH_MIRROR": str(tmp_path / "empty_mirror"),
        "TREEBENCH_DATA_DIR": str(tmp_path / "empty_cache"),
    }
    args = ["run", "-m", "method=cart", "dataset=iris,letter", "seed=0"]
    plan = run_cli([*args, "--dry-run"], tmp_path, env)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "0 done, 1 to run" in plan.stdout and "no data" in plan.stdout
    assert "not launched: 1 job needs data files that are in neither the cache nor the mirror" in (
        " ".join(plan.stdout.split())  # rich wraps long lines
    )
    assert "`treebench fetch dataset=letter` downloads them" in " ".join(plan.stdout.split())

    run = run_cli(args, tmp_path, env)  # iris (bundled) runs; letter is not launched
    assert run.returncode == 0, run.stderr[-2000:]
    assert "sweep: 2 jobs, 0 done already, 1 to launch" in run.stdout
    assert "not launched: 1 job needs data files" in run.stdout
    records = list((tmp_path / "out" / "store").rglob("*.json"))
    assert [r for r in records if '"dataset": "letter"' in r.read_text()] == []
    assert len(records) == 1

    alone = run_cli(["run", "-m", "method=cart,rf", "dataset=letter"], tmp_path, env)
    assert alone.returncode == 2  # no job could run: an error before anything starts
    assert "error: 2 jobs need data files" in alone.stderr and "no job launched" in alone.stderr


def test_the_missing_data_note_keeps_a_loaders_own_fetch_command_apart():
    from hydra_plugins.treebench_sweeper.sweeper import _missing_note

    note = _missing_note(
        {"letter": 1, "openml_61": 2, "pendigits": 1},
        {"letter": ["uci/letter.data"], "openml_61": ["OpenML 61"], "pendigits": ["p.tra"]},
        {
            "letter": "treebench fetch dataset=letter",
            "openml_61": "treebench fetch dataset=openml dataset.data_id=61",
            "pendigits": "treebench fetch dataset=pendigits",
        },
    )
    assert note == (
        "4 jobs need data files that are in neither the cache nor the mirror (letter, 1 job: "
        "uci/letter.data; openml_61, 2 jobs: OpenML 61; pendigits, 1 job: p.tra); "
        "`treebench fetch dataset=letter,pendigits` and "
        "`treebench fetch dataset=openml dataset.data_id=61` download them"
    )
