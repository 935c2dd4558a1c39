"""Every committed ledger record's run key is reproduced by composing the overrides it records.

A config change that alters a ledger job's resolved parameters (or a renamed config file its overrides
name) fails here, listing the records concerned.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from treebench.config import PROJECT_DIR
from treebench.results.ledger import Ledger

pytestmark = pytest.mark.slow

LEDGER = Ledger(PROJECT_DIR / "results")


def recomputed_keys(records: list[dict]) -> dict[str, str]:
    """The key recomputed for each record (by stored key); one composition per override set minus seed."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from treebench.config import CONF_DIR
    from treebench.runner import Job
    from treebench.schema import register_schema

    groups: dict[tuple, list[dict]] = defaultdict(list)
    for rec in records:
        groups[tuple(o for o in rec["overrides"] if not o.startswith("seed="))].append(rec)
    register_schema()
    GlobalHydra.instance().clear()
    out = {}
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for overrides, recs in groups.items():
            cfg = compose("config", overrides=list(overrides))
            for rec in recs:
                out[rec["key"]] = Job.from_config(cfg, rec["seed"]).key(rec["fold"])
    GlobalHydra.instance().clear()
    return out


def test_every_ledger_key_recomputes_from_its_overrides():
    records = list(LEDGER.records())
    assert len(records) > 1000, "the committed ledger is missing"
    assert all(r.get("overrides") for r in records), "records without overrides"
    keys = recomputed_keys(records)
    wrong = [
        f"{r['experiment']}: {' '.join(r['overrides'])} fold {r['fold']}: {r['key']} -> {keys[r['key']]}"
        for r in records
        if keys[r["key"]] != r["key"]
    ]
    assert not wrong, f"{len(wrong)} of {len(records)} ledger keys changed:\n" + "\n".join(
        wrong[:20]
    )
