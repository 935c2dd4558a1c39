"""Parse every mirror file a dataset config uses and compare with MANIFEST.csv and the config.

Each part (train/val/test/all) is loaded on its own, so a dataset whose other parts are missing
from the mirror (isolet, poker) still has its mirrored files checked; absent files skip with the
reason "not in mirror". Big files are marked slow.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.data.tb_data_helpers import MIRROR, REPO, manifest
from treebench.data import DataContext, DatasetUnavailableError, load_dataset

CONF = REPO / "treebench" / "conf" / "dataset"
MANIFEST = manifest()
SLOW = {"mnist", "fashion_mnist", "connect4"}


def _configs():
    out = []
    for p in sorted(CONF.glob("*.yaml")):
        cfg = OmegaConf.to_container(OmegaConf.load(p), resolve=True)
        if "files" in cfg["loader"]:
            out.append(cfg)
    return out


CONFIGS = _configs()


def _file_specs(node):
    """Every {url, path, sha256} spec under a loader's files/labels/types node."""
    if isinstance(node, dict):
        if "path" in node and "url" in node:
            yield node
        else:
            for v in node.values():
                yield from _file_specs(v)


def _part_cases():
    for cfg in CONFIGS:
        for part in cfg["loader"]["files"]:
            marks = [pytest.mark.slow] if cfg["name"] in SLOW else []
            yield pytest.param(cfg, part, id=f"{cfg['name']}-{part}", marks=marks)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


def _ctx(data_dir):
    return DataContext(data_dir, str(MIRROR) if MIRROR else None, allow_fetch=False)


@pytest.mark.parametrize(("cfg", "part"), list(_part_cases()))
def test_mirror_file_parses_like_the_manifest(cfg, part, data_dir):
    loader = copy.deepcopy(cfg["loader"])
    specs = list(_file_specs(loader["files"][part]))
    if "labels" in loader:
        specs += list(_file_specs(loader["labels"].get(part, {})))
        loader["labels"] = {part: loader["labels"][part]} if part in loader["labels"] else {}
    if "types" in loader:
        specs += list(_file_specs(loader["types"]))
    missing = [s["path"] for s in specs if MIRROR is None or not (MIRROR / s["path"]).is_file()]
    if missing:
        pytest.skip(f"not in mirror: {', '.join(missing)}")
    loader["files"] = {part: loader["files"][part]}
    one = {**cfg, "loader": loader}
    ds = load_dataset(OmegaConf.create(one), _ctx(data_dir))
    got = ds.parts[part]
    # rows: the manifest's count for the data file of this part
    data_spec = specs[0]
    row = MANIFEST.get(data_spec["path"])
    if row and row["n_rows"]:
        assert len(got) == int(row["n_rows"]), data_spec["path"]
    # features: the config's raw feature count
    assert got.X.shape[1] == cfg["shape"]["n_features"]
    if cfg["task"] == "classification":
        classes = np.unique(got.y)
        assert classes.min() >= 0 and classes.max() < (cfg["shape"]["n_classes"])
        bins = "target_bins" in loader
        if row and row["n_classes"] and not bins:
            assert classes.size == int(row["n_classes"]), data_spec["path"]
    else:
        assert np.all(np.isfinite(got.y))
    if ds.image_shape:
        assert int(np.prod(ds.image_shape)) == got.X.shape[1]


def _dataset_cases():
    for cfg in CONFIGS:
        marks = [pytest.mark.slow] if cfg["name"] in SLOW else []
        yield pytest.param(cfg, id=cfg["name"], marks=marks)


@pytest.mark.parametrize("cfg", list(_dataset_cases()))
def test_dataset_shape_matches_config(cfg, data_dir):
    specs = list(_file_specs(cfg["loader"]))
    missing = [s["path"] for s in specs if MIRROR is None or not (MIRROR / s["path"]).is_file()]
    if missing:
        with pytest.raises(DatasetUnavailableError, match=f"treebench fetch dataset={cfg['name']}"):
            load_dataset(OmegaConf.create(cfg), _ctx(data_dir))
        pytest.skip(f"not in mirror: {', '.join(missing)}")
    ds = load_dataset(OmegaConf.create(cfg), _ctx(data_dir))
    pooled = ds.pooled()
    shape = cfg["shape"]
    assert (len(pooled), pooled.X.shape[1]) == (shape["n_samples"], shape["n_features"])
    if cfg["task"] == "classification":
        assert np.unique(pooled.y).size == shape["n_classes"]
        assert len(ds.meta["classes"]) == shape["n_classes"]
    assert tuple(ds.image_shape or ()) == tuple(cfg.get("image_shape") or ())
    # the default split and preprocessing run and give finite features
    from hydra.utils import instantiate

    split = instantiate(cfg["split"])
    fold = next(split.folds(ds, seed=0, only=0))
    pre = instantiate(cfg["preprocess"])
    pre.fit(fold.train.X, fold.train.y, categorical=ds.categorical)
    Xt = pre.transform(fold.test.X)
    assert Xt.shape[0] == len(fold.test) and np.isfinite(Xt).all()


def test_parsed_cache_is_reused(data_dir, mirror, monkeypatch):
    cfg = OmegaConf.load(CONF / "letter.yaml")
    ds1 = load_dataset(cfg, _ctx(data_dir))
    import treebench.data.sources.uci as uci

    def boom(*a, **k):
        raise AssertionError("parsed again instead of using the cache")

    monkeypatch.setattr(uci, "parse_file", boom)
    ds2 = load_dataset(cfg, _ctx(data_dir))
    np.testing.assert_array_equal(ds1.pooled().X, ds2.pooled().X)
    assert list(Path(data_dir, "parsed").glob("letter-*.pkl"))


def test_connect4_onehot_gives_libsvm_width(data_dir, mirror):
    """PMLB connect-4's 42 integer-coded cells one-hot encode to LIBSVM's 126 features."""
    cfg = OmegaConf.load(CONF / "connect4.yaml")
    if not (mirror / cfg.loader.files.all.path).is_file():
        pytest.skip("not in mirror: connect_4.tsv.gz")
    pytest.importorskip("pandas")
    ds = load_dataset(cfg, _ctx(data_dir))
    from hydra.utils import instantiate

    pre = instantiate(cfg.preprocess)
    X = ds.pooled().X
    pre.fit(X, categorical=ds.categorical)
    assert pre.transform(X.iloc[:100]).shape == (100, 126)


test_connect4_onehot_gives_libsvm_width = pytest.mark.slow(test_connect4_onehot_gives_libsvm_width)
