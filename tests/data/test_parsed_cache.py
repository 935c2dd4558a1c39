"""Loading a mirrored dataset twice reuses the parsed cache.

Whole-mirror checks: ``fetch --verify``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from tests.data.tb_data_helpers import REPO
from treebench.data import DataContext, load_dataset

CONF = REPO / "treebench" / "conf" / "dataset"


def test_parsed_cache_is_reused(tmp_path, mirror, monkeypatch):
    cfg = OmegaConf.load(CONF / "letter.yaml")
    ctx = DataContext(tmp_path, str(mirror), allow_fetch=False)
    ds1 = load_dataset(cfg, ctx)
    import treebench.data.sources.uci as uci

    def boom(*a, **k):
        raise AssertionError("parsed again instead of using the cache")

    monkeypatch.setattr(uci, "parse_file", boom)
    ds2 = load_dataset(cfg, ctx)
    np.testing.assert_array_equal(ds1.pooled().X, ds2.pooled().X)
    assert list(Path(tmp_path, "parsed").glob("letter-*.npz"))
