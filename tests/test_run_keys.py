"""Every committed ledger record's run key is reproduced by composing the overrides it records.

A config change that alters a ledger job's resolved parameters (or a renamed config file its
overrides name) fails here, listing the records concerned.
"""

from __future__ import annotations

import pytest

from treebench.config import PROJECT_DIR
from treebench.results.ledger import Ledger
from treebench.runner import recompute_keys

pytestmark = pytest.mark.slow

LEDGER = Ledger(PROJECT_DIR / "results")


def test_every_ledger_key_recomputes_from_its_overrides():
    records = list(LEDGER.records())
    assert len(records) > 1000, "the committed ledger is missing"
    assert all(r.get("overrides") for r in records), "records without overrides"
    keys = recompute_keys(records)
    wrong = [
        f"{r['experiment']}: {' '.join(r['overrides'])} fold {r['fold']}: {r['key']} -> "
        f"{keys[r['key']]}"
        for r in records
        if keys[r["key"]] != r["key"]
    ]
    assert not wrong, f"{len(wrong)} of {len(records)} ledger keys changed:\n" + "\n".join(
        wrong[:20]
    )
