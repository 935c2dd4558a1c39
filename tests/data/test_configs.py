"""The dataset configs: required names and keys, real URLs, checksums equal to MANIFEST.csv."""

from __future__ import annotations

import pytest
import yaml

from tests.data.tb_data_helpers import REPO, manifest

CONF = REPO / "treebench" / "conf" / "dataset"
REQUIRED = (
    "mnist fashion_mnist usps letter letter_libsvm connect4 pendigits optdigits satimage dna "
    "protein sensit adult crx eeg bank german cmc landcover isolet abalone abalone_reg har "
    "madelon poker ionosphere pima spectf hepatitis wine_red wine_white bike spambase magic04 "
    "yeast ecoli glass housing airfoil fertility messidor megawatt1 credit_default fri586 "
    "fri589 fri620 iris digits wine breast_cancer diabetes"
).split()
IMAGES = {"mnist": [28, 28], "fashion_mnist": [28, 28], "usps": [16, 16], "optdigits": [8, 8]}
ALL = sorted(p.stem for p in CONF.glob("*.yaml"))
#: configs with a required ``???`` setting: the user's own data (a file, an OpenML id, no shape)
#: and any PMLB set by name (its shape, files and checksums from the PMLB index:
#: tests/data/test_pmlb.py)
TEMPLATES = ["csv", "openml", "pmlb"]
DATASETS = [n for n in ALL if n not in TEMPLATES]


def _load(name):
    return yaml.safe_load((CONF / f"{name}.yaml").read_text())


def _specs(node):
    if isinstance(node, dict):
        if "url" in node and "path" in node:
            yield node
        else:
            for v in node.values():
                yield from _specs(v)


def test_every_required_dataset_has_a_config():
    assert not set(REQUIRED) - set(ALL)


def test_templates_are_the_configs_with_required_settings():
    assert [n for n in ALL if "???" in _load(n).values()] == TEMPLATES


@pytest.mark.parametrize("name", DATASETS)
def test_config_keys(name):
    cfg = _load(name)
    assert cfg["name"] == name
    for key in ("description", "task", "shape", "loader", "split", "preprocess"):
        assert key in cfg, key
    assert cfg["task"] in ("classification", "regression")
    assert set(cfg["shape"]) == {"n_samples", "n_features", "n_classes"}
    assert (cfg["shape"]["n_classes"] is None) == (cfg["task"] == "regression")
    if name in IMAGES:
        assert cfg["image_shape"] == IMAGES[name]
    assert cfg["split"]["_target_"].startswith("treebench.data.splits.")


@pytest.mark.parametrize("name", DATASETS)
def test_file_specs_have_real_urls_and_manifest_checksums(name):
    cfg = _load(name)
    specs = list(_specs(cfg["loader"]))
    if cfg["loader"]["_target_"].endswith(("bundled.load", "openml.load")):
        assert not specs
        return
    assert specs
    man = manifest()
    for s in specs:
        assert set(s) >= {"url", "path", "sha256"}
        assert s["url"].startswith(("https://", "http://")) and "127.0.0.1" not in s["url"]
        row = man.get(s["path"])
        if row is not None:
            assert s["sha256"] == row["sha256"], s["path"]
            assert s["url"] == row["upstream_url"], s["path"]
        elif man:
            assert s["sha256"] is None, f"{s['path']} is not in the mirror; its checksum is unknown"


def test_openml_offline_names_fetch_command(tmp_path):
    from omegaconf import OmegaConf

    from treebench.data import DataContext, DatasetUnavailableError, load_dataset

    cfg = OmegaConf.load(CONF / "isolet_openml.yaml")
    with pytest.raises(DatasetUnavailableError, match="treebench fetch dataset=isolet_openml"):
        load_dataset(cfg, DataContext(tmp_path, None, allow_fetch=False))


def test_openml_loader_converts_frames(tmp_path, monkeypatch):
    """The OpenML loader with a stand-in for openml.datasets.get_dataset (no network)."""
    import numpy as np
    import openml
    import pandas as pd

    from treebench.data import DataContext
    from treebench.data.sources import openml as src

    class Fake:
        default_target_attribute = "class"

        def get_data(self, target, dataset_format):
            X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": pd.Categorical(["x", None, "y"])})
            return X, pd.Series(["p", "n", "p"]), [False, True], ["a", "c"]

    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *a, **k: Fake())
    ctx = DataContext(tmp_path, None, allow_fetch=True, dataset="toy")
    ds = src.load(42, "classification", ctx=ctx)
    assert ds.categorical == ["c"] and ds.meta["classes"] == ["n", "p"]
    assert ds.parts["all"].y.tolist() == [1, 0, 1]
    ds = src.load(42, "classification", categorical="none", ctx=ctx)
    assert isinstance(ds.parts["all"].X, np.ndarray) and np.isnan(ds.parts["all"].X[1, 1])
    assert str(tmp_path / "openml") in str(openml.config.get_cache_directory())
