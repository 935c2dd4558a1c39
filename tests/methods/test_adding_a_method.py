"""README's "Adding a method": one package plus one YAML, picked up by the registry-wide tests.

A throwaway method package is written to a temporary directory that is put on the path of
``treebench.methods``; nothing else is edited. Registry discovery must find it, and the checks that
the contract, export and inspect tests run for every registered method must pass for it.
"""

from __future__ import annotations

import sys
import textwrap

import pytest
from sklearn.utils.estimator_checks import check_estimator

import treebench.methods as methods_pkg
from tests.inspect import test_inspect
from tests.methods import test_contract
from treebench.methods import base

NAME = "toy_cart"

ESTIMATOR = '''
"""A throwaway method: a depth-limited CART (the README's "Adding a method", tested)."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods.base import (
    CLASSIFICATION,
    Interval,
    SizeMixin,
    _fit_context,
    register,
    sklearn_tree_size,
)


@register("toy_cart", CLASSIFICATION, "Toy: a CART of depth max_depth")
class ToyCART(ClassifierMixin, SizeMixin, BaseEstimator):
    _parameter_constraints = {
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, max_depth=2, random_state=None):
        self.max_depth = max_depth
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, dtype=np.float32)
        check_classification_targets(y)
        tree = DecisionTreeClassifier(max_depth=self.max_depth, random_state=self.random_state)
        self.tree_model_ = tree.fit(X, y, sample_weight=sample_weight)
        self.classes_ = tree.classes_
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float32)
        return self.tree_model_.predict_proba(X)

    def predict(self, X):
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def size_report(self, X):
        return sklearn_tree_size(self.tree_model_, X)

    def to_graph(self):
        from treebench.methods.toy_cart.export import toy_graph

        return toy_graph(self)
'''

EXPORT = '''
"""The toy method's decision graph."""

from treebench.methods._export import (
    CAST32,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    sklearn_tree,
)


def toy_graph(est) -> GraphEnsemble:
    return GraphEnsemble(
        [sklearn_tree(est.tree_model_, K=len(est.classes_))],
        task="classification",
        classes=list(est.classes_),
        n_features=int(est.n_features_in_),
        transform=[CAST32],
        combine="mean",
        output="proba",
        meta=graph_meta(est),
        feature_names=feature_names_of(est),
    )
'''

YAML = """
name: toy_cart
description: "Toy: a CART of depth max_depth"
params:
  max_depth: 2
smoke_params: {}
"""


@pytest.fixture
def toy_method(tmp_path, monkeypatch):
    """Yield the package ``treebench.methods.toy_cart`` and its YAML.

    In temporary directories only.
    """
    pkg = tmp_path / "methods" / NAME
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        f'"""Toy method."""\n\nfrom treebench.methods.{NAME}.estimator import ToyCART\n\n'
        '__all__ = ["ToyCART"]\n'
    )
    (pkg / "estimator.py").write_text(textwrap.dedent(ESTIMATOR).lstrip())
    (pkg / "export.py").write_text(textwrap.dedent(EXPORT).lstrip())
    conf = tmp_path / "conf"
    (conf / "method").mkdir(parents=True)
    (conf / "method" / f"{NAME}.yaml").write_text(YAML.lstrip())

    monkeypatch.setattr(methods_pkg, "__path__", [*methods_pkg.__path__, str(tmp_path / "methods")])
    monkeypatch.setattr(base, "_DISCOVERED", False)  # discover() walks the packages again
    monkeypatch.setattr(test_contract, "CONF_DIR", str(conf))
    yield NAME
    base._REGISTRY.pop(NAME, None)
    for mod in [m for m in sys.modules if m.startswith(f"treebench.methods.{NAME}")]:
        del sys.modules[mod]


def test_a_new_package_is_discovered(toy_method):
    reg = base.discover()
    assert toy_method in reg and reg[toy_method].tasks == ("classification",)
    assert base.get_method(toy_method, "classification").__name__ == "ToyCART"
    assert toy_method in base.available_methods()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_registry_wide_checks_pass_for_the_new_method(toy_method, data):
    base.discover()
    task = "classification"
    # tests/methods/test_contract.py, every test parametrised over the registry
    test_contract.test_yaml_params_are_constructor_defaults(toy_method, task)
    test_contract.test_sklearn_contract(toy_method, task, data)
    test_contract.test_same_seed_same_model(toy_method, task, data)
    test_contract.test_string_labels(toy_method, data)
    test_contract.test_invalid_values_raise_invalid_parameter_error(toy_method, task, data)
    est = test_contract.smoke_estimator(toy_method, task)
    check_estimator(est, expected_failed_checks=base.expected_failed_checks(est))
    # tests/inspect/test_inspect.py: export, JSON round trip, importances
    test_inspect.test_every_method_exports()
    test_inspect.test_json_round_trip_predicts_identically(toy_method, task, data)


def test_plan_time_checks_read_the_new_constraints(toy_method):
    from omegaconf import OmegaConf

    from treebench.params import ParamError, check_params

    base.discover()
    cfg = OmegaConf.create(
        {
            "method": {"name": toy_method, "params": {"max_depth": 0}},
            "dataset": {"task": "classification"},
        }
    )
    with pytest.raises(ParamError, match="max_depth"):
        check_params(cfg)
    cfg.method.params = {"max_dept": 3}
    with pytest.raises(ParamError, match="Did you mean 'max_depth'"):
        check_params(cfg)
