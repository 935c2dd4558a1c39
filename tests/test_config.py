"""Every config file composes; typos fail at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from tests.conftest import compose_config
from treebench.config import CONF_DIR, load_yaml, plan_configs, plan_values, sweep_plan
from treebench.methods import available_methods


def _names(group):
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


@pytest.mark.parametrize("name", _names("method"))
def test_method_configs_compose(name):
    cfg = compose_config([f"method={name}"])
    assert cfg.method.name in available_methods(), f"{name}.yaml names an unregistered method"
    assert isinstance(OmegaConf.to_container(cfg.method.params), dict)
    assert cfg.method.description


#: configs with a required setting (the user's own data, a PMLB set by name), composed with it
TEMPLATES = {
    "csv": ["dataset.path=flowers.csv", "dataset.target=species"],
    "openml": ["dataset.data_id=61"],
    "pmlb": ["dataset.name=iris"],
}


@pytest.mark.parametrize("name", _names("dataset"))
def test_dataset_configs_compose(name):
    cfg = compose_config([f"dataset={name}", *TEMPLATES.get(name, [])])
    assert cfg.dataset.name == {"csv": "flowers", "openml": "openml_61", "pmlb": "iris"}.get(
        name, name
    )
    assert cfg.dataset.task in ("classification", "regression")
    for key in ("loader", "split", "preprocess"):
        assert "_target_" in cfg.dataset[key], f"dataset {name}: {key} needs a _target_"


@pytest.mark.parametrize("name", _names("experiment"))
def test_experiment_configs_compose(name):
    cfg = compose_config([f"experiment={name}"], hydra_cfg=True)
    assert cfg.experiment_name
    for profile in ("full", "reduced"):
        plan = sweep_plan(cfg.hydra.sweeper, profile)
        for group in ("method", "dataset"):
            for v in plan_values(plan, group):
                assert v in _names(group), f"experiment {name}: unknown {group} {v!r}"


def test_plan_configs_are_the_grid_a_plan_sweeps_for_a_dataset_and_method():
    """What a best-of-configs check compares with.

    RHF Table 2's full plan sweeps the paper's 20 (trees, depth) configs per dataset; its reduced
    plan a few (its 4 000-minibatch CI corner is not the paper's 40 000, which ``where`` states).
    """
    raw = load_yaml((Path(CONF_DIR) / "experiment" / "rhf_table2.yaml").read_text())
    cols, where = ["n_estimators", "max_depth"], {"weight_init": "bleak", "n_iterations": 40000}
    full, reduced = (sweep_plan(raw["hydra"]["sweeper"], p) for p in ("full", "reduced"))
    for ds in ("abalone", "abalone_reg", "madelon", "iris"):
        grid = plan_configs(full, ds, "hinge_fern", cols, where)
        assert len(grid) == 20 and ("100", "10") in grid
    assert plan_configs(reduced, "madelon", "hinge_forest", cols, where) == {
        ("10", "3"),
        ("50", "3"),
        ("100", "3"),
        ("50", "7"),
    }
    assert plan_configs(reduced, "abalone", "hinge_forest", cols, where) == {("50", "1")}
    assert plan_configs(full, "abalone", "cart", cols, where) is None  # no row runs it
    crossed = {  # named lists of rows are crossed; a {...} value is one value
        "params": {"method": "m"},
        "rows": {
            "data": ["dataset=a", "dataset=b method.params.depth=9"],
            "grid": [
                "method.params.depth=1,2 method.params.est={x:1,y:2}",
                "method.params.depth=3",
            ],
        },
    }
    assert plan_configs(crossed, "a", "m", ["depth", "est"]) == {
        ("1", "{x:1,y:2}"),
        ("2", "{x:1,y:2}"),
        ("3", None),
    }
    assert plan_configs(crossed, "a", "m", ["depth"], {"depth": [2, 3]}) == {("2",), ("3",)}


def test_one_experiment_file_per_experiment():
    """A paper table or figure is one file.

    Its shards are rows, its laptop/CI plan the reduced profile.
    """
    names = [compose_config([f"experiment={n}"]).experiment_name for n in _names("experiment")]
    assert len(names) == len(set(names)) and not any(n.endswith("_reduced") for n in names)


def _method_yaml(name: str) -> dict:
    return yaml.safe_load((Path(CONF_DIR) / "method" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", [n for n in _names("method") if "defaults" in _method_yaml(n)])
def test_method_variants_extend_their_base_and_state_only_what_differs(name):
    raw = _method_yaml(name)
    base_name = raw["defaults"][0]
    assert raw["defaults"] == [base_name, "_self_"] and "defaults" not in _method_yaml(base_name)
    base = compose_config([f"method={base_name}"]).method.params
    variant = compose_config([f"method={name}"]).method.params
    for key, value in (raw.get("params") or {}).items():
        assert key not in base or base[key] != value, f"{name}.yaml restates {key}={value!r}"
    assert set(base) <= set(variant)


@pytest.mark.parametrize("name", _names("method"))
def test_no_method_config_knows_dataset_names(name):
    text = (Path(CONF_DIR) / "method" / f"{name}.yaml").read_text()
    assert "by_dataset" not in text and "${dataset" not in text and "oc.select" not in text


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
