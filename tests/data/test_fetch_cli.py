"""``treebench fetch`` through the CLI, offline against the mirror."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from treebench.cli import app


def test_fetch_dataset_and_experiment(tmp_path, mirror, monkeypatch):
    monkeypatch.setenv("TREEBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TREEBENCH_MIRROR", str(mirror))
    if not (mirror / "uci/letter-recognition/letter-recognition.data").is_file():
        pytest.skip("not in mirror: letter-recognition.data")
    res = CliRunner().invoke(app, ["fetch", "dataset=letter,iris"])
    assert res.exit_code == 0, res.output
    assert "letter: ready (all 20000; 16 features)" in res.output
    assert "iris: ready" in res.output
    assert list((tmp_path / "data" / "parsed").glob("letter-*.npz"))
    res = CliRunner().invoke(app, ["fetch", "experiment=demo"])
    assert res.exit_code == 0, res.output
    assert "digits: ready" in res.output


def test_fetch_unknown_dataset_lists_choices():
    res = CliRunner().invoke(app, ["fetch", "dataset=lettr"])
    assert res.exit_code == 2


def test_sweep_datasets_reads_params_and_rows():
    from omegaconf import OmegaConf

    from treebench.data.fetch import sweep_datasets

    cfg = OmegaConf.create(
        {
            "dataset": {"name": "digits"},
            "hydra": {
                "sweeper": {
                    "params": {"dataset": "iris,wine", "seed": "0,1"},
                    "rows": ["dataset=letter method=tnt", "method=cart dataset=iris", "method=rf"],
                }
            },
        }
    )
    assert sweep_datasets(cfg) == ["iris", "wine", "letter"]
    assert sweep_datasets(OmegaConf.create({"dataset": {"name": "digits"}})) == ["digits"]
