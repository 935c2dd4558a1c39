"""PMLB by name (``dataset=pmlb dataset.name=<name>``) from the committed index, and the suites."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO, compose_config, run_cli
from treebench import api
from treebench.config import search_dirs
from treebench.data.sources import pmlb
from treebench.suites import SuiteError
from treebench.suites import load as _load


def test_the_index_lists_every_pmlb_file_of_the_mirror_as_the_script_writes_it(mirror):
    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_pmlb_index.py"),
            "--mirror",
            str(mirror),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    rows = pmlb.index()
    assert len(rows) == 259
    assert sum(r["task"] == "regression" for r in rows.values()) == 106
    assert all((mirror / r["path"]).is_file() for r in rows.values())


def test_a_pmlb_config_knows_task_shape_and_files_before_loading():
    cfg = compose_config(["dataset=pmlb", "dataset.name=analcatdata_boxing1"])
    ds = cfg.dataset
    shape = ds.shape
    assert (ds.task, shape["n_samples"], shape["n_features"], shape["n_classes"]) == (
        "classification",
        120,
        3,
        2,
    )
    f = ds.loader.files["all"]
    assert f["path"] == "pmlb/analcatdata_boxing1/analcatdata_boxing1.tsv.gz"
    assert f["url"].startswith("https://github.com/EpistasisLab/pmlb/") and len(f["sha256"]) == 64
    reg = compose_config(["dataset=pmlb", "dataset.name=1027_ESL"]).dataset
    assert reg.task == "regression" and reg.shape["n_classes"] is None


def test_an_unknown_name_is_an_error_naming_close_ones():
    with pytest.raises(KeyError, match="did you mean analcatdata_boxing"):
        pmlb.entry("analcatdata_boxin")


def test_a_pmlb_dataset_loads_from_the_mirror_with_its_indexed_shape(mirror):
    fold = api.load_fold("pmlb", overrides=["dataset.name=analcatdata_boxing1"], mirror=str(mirror))
    assert len(fold.y_train) + len(fold.y_test) == 120 and fold.X_train.shape[1] == 3


def test_a_repeated_header_name_means_its_first_column_as_pandas_and_pmlb_read_it(mirror):
    # schizo's header names `target` twice: PMLB's loader (pandas) takes the first, 3 classes, and
    # the last becomes the feature `target.1`, as the mirror's MANIFEST counts
    # (14 features, 3 classes)
    import gzip

    import pandas as pd

    fold = api.load_fold("pmlb", overrides=["dataset.name=schizo"], mirror=str(mirror))
    ref = pd.read_csv(gzip.open(mirror / "pmlb/schizo/schizo.tsv.gz"), sep="\t")
    n = len(fold.y_train) + len(fold.y_test)
    assert (n, fold.X_train.shape[1], len(set(fold.y_train))) == (340, 14, 3)
    assert sorted(ref["target"].unique()) == [0, 1, 2] and "target.1" in ref.columns


def test_a_mirror_file_with_another_checksum_is_refused(mirror, tmp_path):
    rel = pmlb.entry("analcatdata_boxing1")["path"]
    bad = tmp_path / "mirror" / rel
    bad.parent.mkdir(parents=True)
    shutil.copyfile(mirror / rel, bad)
    bad.write_bytes(bad.read_bytes() + b"\0")
    with pytest.raises(Exception, match="checksum mismatch"):
        api.load_fold(
            "pmlb",
            overrides=["dataset.name=analcatdata_boxing1", f"paths.data={tmp_path / 'cache'}"],
            mirror=str(tmp_path / "mirror"),
        )


def test_suites_state_their_rule_and_run_a_seeded_random_prefix():
    rows = pmlb.index()
    cls = load("pmlb_classification")
    rule = [
        n
        for n, r in rows.items()
        if r["task"] == "classification" and 100 <= r["n_rows"] <= 20000 and r["n_features"] <= 500
    ]
    assert sorted(cls.datasets) == sorted(rule)  # every set the rule selects, each once
    assert list(cls.datasets) != sorted(rule)  # in a random order
    assert cls.members == cls.datasets[: cls.subset] and cls.subset == 50
    assert cls.overrides("iris") == ["dataset=pmlb", "dataset.name=iris"]
    h2h = load("headtohead")
    assert len(h2h.members) == 15 and h2h.overrides("dna") == ["dataset=dna"]
    assert load("pmlb_regression").sliced(3).members == load("pmlb_regression").datasets[:3]
    with pytest.raises(SuiteError, match="the suites are: headtohead"):
        load("nope")


def load(name):
    return _load(name, search_dirs())


def _plan(tmp_path, *args):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    return run_cli(["run", "-m", *args, "data.fetch=true", "--dry-run"], tmp_path, env)


def test_a_suite_sweep_is_one_job_per_dataset_in_the_suites_order(tmp_path):
    res = _plan(tmp_path, "suite=pmlb_classification", "suite.subset=3", "method=cart,tnt")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 done, 6 to run" in res.stdout
    first = list(load("pmlb_classification").datasets[:3])
    assert re.findall(r"dataset\.name=(\S+)", res.stdout) == first * 2  # per method, in order
    h2h = _plan(tmp_path, "suite=headtohead", "method=cart")
    assert (
        h2h.returncode == 0 and "0 done, 15 to run" in h2h.stdout and "dataset=bike" in h2h.stdout
    )
    clash = _plan(tmp_path, "suite=headtohead", "dataset=iris", "method=cart")
    assert clash.returncode == 2 and "both choose datasets" in clash.stderr
    unknown = _plan(tmp_path, "suite=nope", "method=cart")
    assert unknown.returncode != 0 and "nope" in unknown.stderr + unknown.stdout


def test_a_suite_outside_a_sweep_is_an_error_naming_the_sweep(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    res = run_cli(["run", "suite=headtohead", "method=cart"], tmp_path, env)
    assert res.returncode == 2 and "treebench run -m suite=headtohead" in res.stderr
    assert not (tmp_path / "out" / "store").exists()
