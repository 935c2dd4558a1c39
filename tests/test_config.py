"""Every config file composes; typos fail at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from tests.conftest import compose_config
from treebench.config import CONF_DIR
from treebench.methods import available_methods


def _names(group):
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


@pytest.mark.parametrize("name", _names("method"))
def test_method_configs_compose(name):
    cfg = compose_config([f"method={name}"])
    assert cfg.method.name in available_methods(), f"{name}.yaml names an unregistered method"
    assert isinstance(OmegaConf.to_container(cfg.method.params), dict)
    assert cfg.method.description


@pytest.mark.parametrize("name", _names("dataset"))
def test_dataset_configs_compose(name):
    cfg = compose_config([f"dataset={name}"])
    assert cfg.dataset.name == name
    assert cfg.dataset.task in ("classification", "regression")
    for key in ("loader", "split", "preprocess"):
        assert "_target_" in cfg.dataset[key], f"dataset {name}: {key} needs a _target_"


@pytest.mark.parametrize("name", _names("experiment"))
def test_experiment_configs_compose(name):
    cfg = compose_config([f"experiment={name}"], hydra_cfg=True)
    assert cfg.experiment_name
    params = cfg.hydra.sweeper.params or {}
    for group in ("method", "dataset"):
        for v in str(params.get(group, "")).split(","):
            v = v.strip()
            if v:
                assert v in _names(group), f"experiment {name}: unknown {group} {v!r}"


@pytest.mark.parametrize("name", _names("split"))
def test_split_configs_compose(name):
    cfg = compose_config([f"split={name}"])
    assert "_target_" in cfg.split


def test_every_registered_method_has_a_config():
    names = {compose_config([f"method={n}"]).method.name for n in _names("method")}
    assert set(available_methods()) <= names


@pytest.mark.parametrize(
    "override",
    ["seeed=1", "method.paramz.x=1", "method.params.max_dept=3", "seed=abc", "profile=fast"],
)
def test_typos_fail_at_compose_time(override):
    with pytest.raises(ConfigCompositionException):
        compose_config([override])


@pytest.mark.parametrize("launcher", ["joblib", "slurm", "submitit_local"])
def test_launchers_compose(launcher):
    cfg = compose_config([f"hydra/launcher={launcher}"], hydra_cfg=True)
    assert "_target_" in cfg.hydra.launcher


def test_unknown_group_option_lists_choices():
    with pytest.raises(Exception, match="Available options"):
        compose_config(["method=nope"])
