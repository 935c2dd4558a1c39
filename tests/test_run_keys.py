"""Every committed ledger record's run key is reproduced by composing the overrides it records.

A config change that alters a ledger job's resolved parameters (or a renamed config file its overrides
name) fails here, listing the records concerned. Records written with config names that no longer
exist are rewritten by :mod:`treebench.results.migrate`, which keeps the run keys.
"""

from __future__ import annotations

import pytest

from treebench.config import PROJECT_DIR
from treebench.results.ledger import Ledger
from treebench.results.migrate import MigrationError, recompute_keys, rewrite

pytestmark = pytest.mark.slow

LEDGER = Ledger(PROJECT_DIR / "results")


def test_every_ledger_key_recomputes_from_its_overrides():
    records = list(LEDGER.records())
    assert len(records) > 1000, "the committed ledger is missing"
    assert all(r.get("overrides") for r in records), "records without overrides"
    keys = recompute_keys(records)
    wrong = [
        f"{r['experiment']}: {' '.join(r['overrides'])} fold {r['fold']}: {r['key']} -> {keys[r['key']]}"
        for r in records
        if keys[r["key"]] != r["key"]
    ]
    assert not wrong, f"{len(wrong)} of {len(records)} ledger keys changed:\n" + "\n".join(
        wrong[:20]
    )


def test_the_ledger_names_only_existing_configs():
    """``treebench ledger migrate`` has run: no record's overrides would be rewritten again."""
    stale = [r["key"] for r in LEDGER.records() if rewrite(r["overrides"]) != r["overrides"]]
    assert not stale, f"{len(stale)} records name removed configs; run `treebench ledger migrate`"


def _old_layout(rec: dict, old_method: str, new_method: list[str]) -> dict:
    """``rec`` as a checkout of the old layout wrote it (``method=<old file>``)."""
    ov = rec["overrides"]
    i = ov.index(new_method[0])
    assert ov[i : i + len(new_method)] == new_method
    return {**rec, "overrides": [*ov[:i], f"method={old_method}", *ov[i + len(new_method) :]]}


def test_ledger_add_migrates_an_old_layout_record_and_refuses_a_changed_key(tmp_path):
    (rec,) = [
        r
        for r in LEDGER.records()
        if r["experiment"] == "ci" and r["method"] == "onestage" and r["dataset"] == "iris"
        if r["seed"] == 0
    ]
    old = _old_layout(rec, "onestage_reduced", ["method=onestage", "method.params.max_epochs=30"])
    led = Ledger(tmp_path)
    led.add([old])
    (stored,) = led.records()
    assert stored["overrides"] == rec["overrides"]
    assert led.add([old]).unchanged == 1  # idempotent

    wrong = {
        **old,
        "overrides": [
            o.replace("onestage_reduced", "onestage_joint_reduced") for o in old["overrides"]
        ],
    }
    with pytest.raises(MigrationError, match="give another run key"):
        Ledger(tmp_path / "other").add([wrong])
