"""Every method config's ``search:`` block, as Hydra composes it (variants inherit).

Samples values its estimator accepts; checked for every method file and task of the registry.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf
from sklearn.base import clone
from sklearn.model_selection import ParameterSampler
from sklearn.utils._param_validation import validate_parameter_constraints

from tests.conftest import compose_config
from treebench.config import CONF_DIR
from treebench.methods.base import discover
from treebench.params import ParamError, check_params
from treebench.tuning import search_space

_DATASET = {"classification": "iris", "regression": "diabetes"}
_FILES = sorted(p.stem for p in (Path(CONF_DIR) / "method").glob("*.yaml"))


def _name(stem: str) -> str:
    """Return the registered method a config file runs (``redt_dt`` runs ``cart``)."""
    raw = yaml.safe_load((Path(CONF_DIR) / "method" / f"{stem}.yaml").read_text())
    return raw.get("name") or _name(raw["defaults"][0])


CASES = sorted((stem, task) for stem in _FILES for task in discover()[_name(stem)].classes)


def test_every_registered_method_and_task_has_a_config_with_a_search_block():
    covered = {(_name(stem), task) for stem, task in CASES}
    assert covered == {(n, t) for n, e in discover().items() for t in e.classes}


@pytest.mark.parametrize(("stem", "task"), CASES)
def test_search_space_samples_accepted_values(stem, task):
    over = [f"method={stem}", f"dataset={_DATASET[task]}"]
    try:
        check_params(compose_config(over))
    except ParamError as exc:  # e.g. redt_dt's Gini criterion: a classification-only config
        pytest.skip(f"{stem}.yaml's params do not fit {task}: {exc}")
    cfg = compose_config([*over, "tune=small"])
    check_params(cfg)  # the plan-time check of tune= passes
    cls = discover()[cfg.method.name].classes[task]
    space = search_space(OmegaConf.to_container(cfg.method.search, resolve=True))
    assert space, f"{stem}.yaml has no search dimensions"
    assert set(space) <= set(cls._get_param_names())
    constraints = cls._parameter_constraints
    est = cls(**OmegaConf.to_container(cfg.method.params, resolve=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a grid smaller than n_iter is drawn whole
        draws = list(ParameterSampler(space, n_iter=40, random_state=0))
    assert len(draws) > 1
    for params in draws:
        validate_parameter_constraints(
            {k: constraints[k] for k in params}, params, caller_name=cls.__name__
        )
        got = clone(est).set_params(**params).get_params()
        assert {k: got[k] for k in params} == params
    for name, dim in space.items():  # draws are the choices, or within the range, of its type
        got = [p[name] for p in draws]
        if isinstance(dim, list):
            assert set(map(repr, got)) <= set(map(repr, dim))
        else:
            assert all(dim.spec["low"] <= v <= dim.spec["high"] for v in got)
            assert all(isinstance(v, int) == dim.integer for v in got)


def test_variants_state_only_what_differs():
    def search(stem):
        cfg = compose_config([f"method={stem}", "dataset=iris"])
        return OmegaConf.to_container(cfg.method.search, resolve=True)

    assert search("tnt_finetune") == search("tnt") and search("redt_dt") == search("cart")
    assert search("onestage_joint") == search("onestage") == search("onestage_gumbel")
    cnn, e2edt = search("e2edt_cnn"), search("e2edt")
    assert cnn["max_depth"] is None and e2edt["max_depth"]  # best-first: leaves, not depth
    assert set(search_space(cnn)) == {"max_leaves", "batch_size", "learning_rate"}
