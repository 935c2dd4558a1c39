"""Installation: a non-editable install carries the configs.

A user's own configs join through Hydra's ``hydra.searchpath`` (run, sweep and compose alike).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, compose_config, run_cli

USER_DATASET = """\
name: mydata
description: my own copy of iris
task: classification
shape: {n_samples: 150, n_features: 4, n_classes: 3}
loader:
  _target_: treebench.data.sources.bundled.load
  name: iris
split:
  _target_: treebench.data.splits.Holdout
preprocess:
  _target_: treebench.data.preprocess.Preprocessor
"""


@pytest.fixture
def user_conf(tmp_path) -> Path:
    """Return a user's config directory holding one dataset the package does not ship."""
    d = tmp_path / "myconf"
    (d / "dataset").mkdir(parents=True)
    (d / "dataset" / "mydata.yaml").write_text(USER_DATASET)
    return d


@pytest.mark.slow
def test_non_editable_install_ships_the_configs(tmp_path):
    src = tmp_path / "src"  # a copy: pip builds in the source tree (build/, *.egg-info)
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("treebench", "hydra_plugins"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=ignore)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    res = subprocess.run(
        [*pip, "--target", str(site), str(src)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (site / "treebench" / "conf" / "config.yaml").is_file()
    assert (site / "treebench" / "bench" / "templates" / "BENCHMARKS.md").is_file()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREEBENCH_CONF")}
    env.update(PYTHONPATH=str(site), TREEBENCH_OUTPUTS=str(tmp_path / "out"))
    code = (
        "from treebench.config import CONF_DIR, compose\n"
        "cfg = compose(['method=tnt', 'dataset=letter'])\n"
        "print(CONF_DIR, cfg.method.name, cfg.dataset.name)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-3000:]
    conf_dir, method, dataset = res.stdout.split()
    assert Path(conf_dir) == site / "treebench" / "conf"
    assert (method, dataset) == ("tnt", "letter")
    res = subprocess.run(
        [sys.executable, "-m", "treebench.cli", "list", "datasets"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "letter" in res.stdout and "mnist" in res.stdout


def test_user_configs_compose_through_the_searchpath(user_conf):
    cfg = compose_config([f"hydra.searchpath=[file://{user_conf}]", "dataset=mydata"])
    assert cfg.dataset.name == "mydata" and cfg.method.name == "cart"


def test_user_configs_run_and_sweep_through_the_searchpath(tmp_path, user_conf):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    sp = f"hydra.searchpath=[file://{user_conf}]"
    res = run_cli(["run", sp, "dataset=mydata", "method=cart"], tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "mydata" in res.stdout
    res = run_cli(
        ["run", "-m", sp, "dataset=mydata,iris", "method=cart", "--dry-run"], tmp_path, env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "1 done, 1 to run" in res.stdout
    res = run_cli(["run", "dataset=mydata"], tmp_path, env)  # without the searchpath: unknown
    assert res.returncode == 2 and "Unknown dataset 'mydata'" in res.stderr


def test_a_script_beside_a_clone_named_treebench_imports_the_package(tmp_path):
    # from the folder that holds the clone, the clone's root is a namespace package `treebench`
    # candidate; its data/ (the download cache) and results/ (the ledger) must not shadow the
    # package's treebench.data and treebench.results (an editable install by finder let them)
    (tmp_path / "treebench").symlink_to(REPO, target_is_directory=True)
    script = tmp_path / "mine.py"
    script.write_text(
        "import treebench, treebench.data, treebench.results\n"
        "from treebench.data import DataContext\n"
        "from treebench.results import Store\n"
        "print(treebench.__file__, treebench.data.__file__, treebench.results.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for argv in ([sys.executable, script.name], [sys.executable, "-c", script.read_text()]):
        res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr + "\n(an older editable install? `make install`)"
        pkg, data, results = (Path(f) for f in res.stdout.split())
        assert pkg.is_file() and pkg.name == "__init__.py"  # the package, not a namespace
        assert data == pkg.parent / "data" / "__init__.py"
        assert results == pkg.parent / "results" / "__init__.py"
