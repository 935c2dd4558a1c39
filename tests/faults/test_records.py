"""Damaged, truncated and crafted records in the store and the ledger.

Reported with their path and the reason, counted as not done (the rerun replaces them), never
crashing a command or entering a summary.
"""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import compose_config
from tests.faults.conftest import records, treebench
from treebench.data import DataContext
from treebench.results import Store, collect
from treebench.results.ledger import Ledger
from treebench.results.table import records_frame
from treebench.runner import job_keys, run_job


def _sweep(store_dir, seeds=(0, 1)):
    """Run cart on iris for ``seeds`` into ``store_dir``; the store and its keys."""
    store = Store(store_dir)
    keys = []
    for s in seeds:
        cfg = compose_config(["method=cart", "dataset=iris", f"seed={s}", "threads=1"])
        run_job(cfg, store, DataContext(store_dir.parent / "data", None, True), log=lambda m: None)
        keys += job_keys(cfg)
    return store, keys


@pytest.fixture
def swept(tmp_path):
    return _sweep(tmp_path / "store")


DAMAGES = {
    "not UTF-8": (lambda rec: b'{"key": "\xff\xfe', "not UTF-8"),
    "a JSON list": (lambda rec: json.dumps([rec]).encode(), "not a record"),
    "cut down to key and status": (
        lambda rec: json.dumps({"key": rec["key"], "status": "ok"}).encode(),
        "ok record without metrics",
    ),
    "a metric that is text": (
        lambda rec: json.dumps({**rec, "metrics": {"test_accuracy": "0.99"}}).encode(),
        "metrics['test_accuracy'] is not a number",
    ),
    "another key's record": (
        lambda rec: json.dumps({**rec, "key": "0" * 24}).encode(),
        "is not the run key",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_record_is_reported_not_done_and_replaced_by_the_rerun(swept, damage):
    store, keys = swept
    before = {k: r["metrics"] for k, r in records(store.root).items()}
    make, reason = DAMAGES[damage]
    bad = store.path(keys[1])
    good = json.loads(bad.read_text())
    bad.write_bytes(make(good))
    problems: list = []
    df = records_frame(store.root, problems=problems)  # status, collect, check read this
    assert list(df["key"]) == [keys[0]]  # never in a table or summary
    assert [p for p, _ in problems] == [bad] and reason in problems[0][1]
    fresh = Store(store.root)
    assert not fresh.is_done(keys[1]) and fresh.is_done(keys[0])  # a rerun runs it again
    assert reason in fresh.invalid[bad]
    _sweep(store.root)  # the rerun replaces it with the same result
    assert {k: r["metrics"] for k, r in records(store.root).items()} == before
    assert len(collect(store.root)) == 2


def test_status_and_collect_name_a_damaged_record_and_do_not_crash(tmp_path):
    store, keys = _sweep(tmp_path / "out" / "store")
    bad = store.path(keys[1])
    bad.write_bytes(b"\x80\x81 not utf-8")
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    for cmd in ("status", "collect"):
        res = treebench([cmd], tmp_path, env=env)
        assert res.returncode == 0, res.stderr
        assert str(bad) in res.stderr and "not UTF-8" in res.stderr
        assert "Traceback" not in res.stderr


def _ledger_file(tmp_path, recs) -> Ledger:
    led = Ledger(tmp_path / "results")
    led.add(recs)
    return Ledger(led.root)


def test_a_truncated_ledger_file_is_named_with_the_line(swept, tmp_path):
    from treebench.results.ledger import LedgerFileError

    store, keys = swept
    led = _ledger_file(tmp_path, list(store.records()))
    (path,) = led.files()
    path.write_bytes(path.read_bytes()[:-20])  # cut short
    recs = list(led.records())
    assert len(recs) < 2
    ((where, why),) = led.problems
    assert where.startswith(f"{path}, line ") and "cut short" in why
    with pytest.raises(LedgerFileError, match="restore them first"):
        led.add([{**store.get(keys[0]), "key": "f" * 24}])  # would drop the lost lines


def test_a_broken_ledger_line_is_named_and_left_out(swept, tmp_path):
    store, keys = swept
    led = _ledger_file(tmp_path, list(store.records()))
    (path,) = led.files()
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines[1] = lines[1].replace('"status":"ok"', '"status":"done"')
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert [r["key"] for r in led.records()] == [json.loads(lines[0])["key"]]
    assert led.problems == [
        (
            f"{path}, line 2",
            "status 'done' is not one of ok, skipped, failed "
            f"(`git checkout -- {path}` restores the committed file)",
        )
    ]


def test_check_names_a_garbage_ledger_file(tmp_path):
    (tmp_path / "results").mkdir()
    bad = tmp_path / "results" / "ci.jsonl.gz"
    bad.write_bytes(b"this is not gzip")
    env = {
        "TREEBENCH_OUTPUTS": str(tmp_path / "out"),
        "TREEBENCH_LEDGER": str(tmp_path / "results"),
    }
    res = treebench(["status"], tmp_path, env={**env})
    assert "Traceback" not in res.stderr and "Aborted" not in res.stderr
    assert f"{bad}, line 1" in res.stderr, res.stderr
