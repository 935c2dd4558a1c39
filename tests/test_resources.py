"""Cluster resource hints: merging method and dataset hints, command-line precedence, grouping."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from hydra_plugins.treebench_sweeper.sweeper import TreebenchSweeper
from tests.conftest import compose_config, run_cli
from treebench.resources import explicit_launcher_keys, group_by_resources, job_resources


def _cfg(method_res=None, dataset_res=None):
    m = {"name": "m", **({"resources": method_res} if method_res else {})}
    d = {"name": "d", **({"resources": dataset_res} if dataset_res else {})}
    return OmegaConf.create({"method": m, "dataset": d})


def test_larger_hint_wins_and_timeout_scales_with_runs():
    cfg = _cfg(
        {"timeout_min": 30, "cpus_per_task": 2, "mem_gb": 4}, {"mem_gb": 12, "timeout_min": 20}
    )
    assert job_resources(cfg) == {"timeout_min": 30, "cpus_per_task": 2, "mem_gb": 12}
    assert job_resources(cfg, n_runs=5)["timeout_min"] == 150


def test_no_hints_no_request():
    assert job_resources(_cfg()) == {}


def test_unknown_hint_names_the_allowed_keys():
    with pytest.raises(ValueError, match=r"unknown resource hint.*'memory'.*allowed: timeout_min"):
        job_resources(_cfg({"memory": 4}))


def test_command_line_launcher_keys_are_explicit():
    keys = explicit_launcher_keys(
        [
            "hydra.launcher.mem_gb=3",
            "+hydra.launcher.qos=high",
            "hydra/launcher=slurm",
            "hydra.sweeper.dry_run=true",
        ]
    )
    assert keys == {"mem_gb", "qos"}


def test_jobs_grouped_by_request_explicit_keys_dropped():
    jobs = [
        (["method=a"], {"timeout_min": 10, "mem_gb": 4}),
        (["method=b"], {"timeout_min": 30, "mem_gb": 4}),
        (["method=c"], {"timeout_min": 10, "mem_gb": 8}),
    ]
    groups = group_by_resources(jobs)
    assert [len(g[1]) for g in groups] == [1, 1, 1]
    groups = group_by_resources(jobs, explicit={"mem_gb"})
    assert groups == [
        ({"timeout_min": 10}, [["method=a"], ["method=c"]]),
        ({"timeout_min": 30}, [["method=b"]]),
    ]


def test_every_shipped_hint_is_valid():
    for method in ("cart", "tnt", "hinge_forest", "e2edf"):
        for dataset in ("iris", "mnist"):
            cfg = compose_config([f"method={method}", f"dataset={dataset}"])
            res = job_resources(cfg, n_runs=3)
            assert res["timeout_min"] > 0 and res["mem_gb"] > 0
    big = job_resources(compose_config(["method=cart", "dataset=mnist"]))
    small = job_resources(compose_config(["method=cart", "dataset=iris"]))
    assert big["mem_gb"] > small["mem_gb"]


class _FakeLauncher:
    def __init__(self):
        self.params = {"timeout_min": 240, "mem_gb": 16, "submitit_folder": "x"}


def test_launcher_params_set_per_group_then_restored():
    sw = object.__new__(TreebenchSweeper)  # no Hydra context needed for this part
    sw.launcher = _FakeLauncher()
    with sw._launcher_resources({"timeout_min": 10}):
        assert sw.launcher.params == {"timeout_min": 10, "mem_gb": 16, "submitit_folder": "x"}
    assert sw.launcher.params["timeout_min"] == 240


def test_dry_run_shows_each_jobs_resources(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    res = run_cli(
        [
            "run",
            "-m",
            "method=cart,rf",
            "dataset=iris",
            "seeds=[0,1,2]",
            "hydra/launcher=submitit_local",
            "--dry-run",
        ],
        tmp_path,
        env,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "resources" in res.stdout
    assert (
        "timeout_min=30" in res.stdout and "timeout_min=90" in res.stdout
    )  # 10 and 30 min x 3 seeds
