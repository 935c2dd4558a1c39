"""The store's row cache: the same table as parsing every record, kept current as records change."""

from __future__ import annotations

import gzip
import json
import os

import pandas as pd
import pytest

from treebench.config import PROJECT_DIR
from treebench.results import Ledger, Store
from treebench.results.index import CACHE_NAME, flush
from treebench.results.ledger import combined_records
from treebench.results.table import records_frame, to_frame

LEDGER = PROJECT_DIR / "results"

_M = {"test_accuracy": 1.0}  # an ok record holds its metrics (results/validate.py)


def _ledger_records(n=None):
    recs = []
    for p in sorted(LEDGER.glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            recs += [json.loads(ln) for ln in f]
    return recs[:n]


def _direct(store_dir, ledger=None):
    """Return the table without the cache: every record parsed, as before the cache existed."""
    return to_frame(combined_records(Store(store_dir).records(), ledger))


def _mixed_store(root, n=300):
    """Return store records cloned from the committed ledger, with mixed-type values.

    Every method's params and info fields, mixed-type values (verbose False/0), also_experiments
    labels and a failed record.
    """
    s = Store(root)
    recs = _ledger_records()
    step = max(1, len(recs) // n)
    for i, rec in enumerate(recs[::step][:n]):
        rec = {**rec, "key": f"{i:02x}{rec['key'][2:]}"}
        if i % 7 == 0:
            rec["params"] = {**rec["params"], "verbose": [False, 0, None][i % 3]}
        if i % 11 == 0:
            rec["also_experiments"] = ["other"]
        if i % 13 == 0:
            rec = {**rec, "status": "failed", "error": "boom", "metrics": {}}
        s.write(rec)
    return s


def _assert_same(a: pd.DataFrame, b: pd.DataFrame):
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


@pytest.mark.skipif(not LEDGER.is_dir(), reason="no committed ledger in this checkout")
def test_cached_rows_equal_parsed_rows(tmp_path):
    s = _mixed_store(tmp_path / "store")
    first = records_frame(s.root)  # builds the cache, in a thread
    flush()
    assert (s.root / CACHE_NAME).is_file()
    _assert_same(first, _direct(s.root))
    _assert_same(records_frame(s.root), first)  # read from the cache


@pytest.mark.skipif(not LEDGER.is_dir(), reason="no committed ledger in this checkout")
def test_store_over_ledger_equals_combined_records(tmp_path):
    led = Ledger(tmp_path / "ledger")
    recs = _ledger_records(120)
    led.add(recs)
    s = Store(tmp_path / "store")
    s.write({**recs[0], "experiment": "rerun"})  # same key, done: the store's record, both labels
    s.write({**recs[1], "status": "failed", "error": "x"})  # failed rerun: the ledger's record
    s.write({**recs[2], "key": "ff" + recs[2]["key"][2:]})  # local only
    _assert_same(records_frame(s.root, led), _direct(s.root, led))
    _assert_same(records_frame(s.root, led), _direct(s.root, led))


def test_cache_follows_written_replaced_and_removed_records(tmp_path):
    s = Store(tmp_path / "store")
    for i in range(5):
        s.write(
            {
                "key": f"k{i}",
                "status": "ok",
                "experiment": "e",
                "metrics": _M,
                "seed": i,
                "params": {"a": i},
            }
        )
    assert len(records_frame(s.root)) == 5
    s.write(
        {
            "key": "k9",
            "status": "ok",
            "experiment": "e",
            "metrics": _M,
            "seed": 9,
            "params": {"b": "new"},
        }
    )
    rec = s.get("k0")
    s.write({**rec, "status": "failed", "error": "again"})
    os.remove(s.path("k1"))
    df = records_frame(s.root)
    _assert_same(df, _direct(s.root))
    assert sorted(df["key"]) == ["k0", "k2", "k3", "k4", "k9"]
    assert df.set_index("key").loc["k0", "status"] == "failed"


def test_unreadable_record_is_reported_every_time(tmp_path):
    s = Store(tmp_path / "store")
    s.write({"key": "aa1", "status": "ok", "experiment": "e", "metrics": _M})
    bad = s.root / "aa" / "aa2.json"
    bad.write_text("{not json")
    for _ in range(2):
        problems: list = []
        df = records_frame(s.root, problems=problems)
        assert list(df["key"]) == ["aa1"]
        assert [p for p, _ in problems] == [bad] and "not valid JSON" in problems[0][1]


def test_unwritable_store_works_without_cache(tmp_path, monkeypatch):
    s = Store(tmp_path / "store")
    s.write({"key": "ab1", "status": "ok", "experiment": "e", "metrics": _M})

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr("treebench.results.index.os.replace", refuse)  # a shared read-only store
    assert list(records_frame(s.root)["key"]) == ["ab1"]
    flush()
    assert not (s.root / CACHE_NAME).exists()
    assert not list(s.root.glob(".tmp-*")), "no temporary cache left behind"


def test_corrupt_cache_is_rebuilt(tmp_path):
    s = Store(tmp_path / "store")
    s.write({"key": "ac1", "status": "ok", "experiment": "e", "metrics": _M})
    records_frame(s.root)
    flush()
    (s.root / CACHE_NAME).write_bytes(b"garbage")
    assert list(records_frame(s.root)["key"]) == ["ac1"]


@pytest.mark.skipif(not LEDGER.is_dir(), reason="no committed ledger in this checkout")
@pytest.mark.parametrize(
    ("chunk", "parallel_min", "bad_text", "reason"),
    [
        (7, 10**9, "[1, 2]", "not a record"),  # chunks parsed in this process
        (11, 22, "{not json", "not valid JSON"),  # chunks parsed by forked workers
    ],
)
def test_rows_parsed_in_chunks_equal_one_parse(
    tmp_path, monkeypatch, chunk, parallel_min, bad_text, reason
):
    """Chunks of a few records, typed apart, give the table of one parse.

    Typed apart here or in worker processes; an unreadable record is reported wherever it was
    parsed; the collector is re-enabled.
    """
    import gc

    monkeypatch.setattr("treebench.results.index.CHUNK", chunk)
    monkeypatch.setattr("treebench.results.index.PARALLEL_MIN", parallel_min)
    s = _mixed_store(tmp_path / "store", n=120)
    bad = s.root / "fe" / "febad.json"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text(bad_text)
    problems: list = []
    _assert_same(records_frame(s.root, problems=problems), _direct(s.root))
    assert [(p, r.split(" (")[0]) for p, r in problems] == [(bad, reason)]
    assert gc.isenabled()


def test_chunks_typed_apart_bind_as_one_inference(tmp_path, monkeypatch):
    """Chunked typing keeps every value one inference over all rows keeps.

    Ints with gaps typed as floats in one chunk keep their int values where another chunk makes the
    column mixed; ints and floats alone give floats, as one inference over all rows does. Texts
    with gaps, None and ints too large for a float keep their values too.
    """
    s = Store(tmp_path / "store")
    values = [1, None, 2, False, 0, "x", 3.5]
    big = 2**60 + 1  # not a float64 exactly
    texts = ["t", ..., big, ..., None, "u", 7]  # ...: absent
    for i, v in enumerate(values):  # chunk of 2: (1, absent), (2, False), (0, "x"), (3.5,)
        rec = {
            "key": f"{i:02x}k",
            "status": "ok",
            "metrics": _M,
            "params": {} if v is None else {"a": v},
        }
        rec["params"]["b"] = i if i % 3 else float(i)
        if texts[i] is not ...:
            rec["params"]["c"] = texts[i]
        s.write(rec)
    for chunk in (2, 100):
        monkeypatch.setattr("treebench.results.index.CHUNK", chunk)
        (s.root / CACHE_NAME).unlink(missing_ok=True)
        got = records_frame(s.root)
        _assert_same(got, _direct(s.root))
        assert [type(v).__name__ for v in got["param.a"]] == [
            "int",
            "float",
            "int",
            "bool",
            "int",
            "str",
            "float",
        ]
        assert got["param.b"].dtype == "float64"
        c = list(got["param.c"])
        assert [type(v).__name__ for v in c] == [
            "str",
            "float",
            "int",
            "float",
            "NoneType",
            "str",
            "int",
        ]
        assert c[2] == big
