"""The result store: atomic writes, locks, done/failed semantics, collect."""

from __future__ import annotations

import pandas as pd
import pytest

from treebench.results import JobBusyError, Store, collect, run_key


def _rec(key, status="ok", **kw):
    return {
        "key": key,
        "status": status,
        "experiment": "e",
        "dataset": "d",
        "method": "m",
        "seed": 0,
        "fold": 0,
        "params": {"a": 1},
        "metrics": {"test_accuracy": 0.5},
        "size": {"n_splits": 3},
        **(
            {"reason": "r"} if status == "skipped" else {"error": "e"} if status == "failed" else {}
        ),
        **kw,
    }


def test_write_is_atomic_and_readable(tmp_path):
    s = Store(tmp_path)
    p = s.write(_rec("abc123"))
    assert p.name == "abc123.json" and s.get("abc123")["status"] == "ok"
    assert not list(p.parent.glob(".tmp-*")), "no temporary file left behind"


def test_records_skip_a_write_in_flight(tmp_path):
    s = Store(tmp_path)
    p = s.write(_rec("abc123"))
    (p.parent / ".tmp-x1.json").write_text("")  # mkstemp'd, not yet written
    (p.parent / ".tmp-x2.json").write_text(p.read_text())  # written, not yet replaced
    assert [r["key"] for r in s.records()] == ["abc123"]


def test_failed_is_not_done(tmp_path):
    s = Store(tmp_path)
    s.write(_rec("k1", "failed"))
    s.write(_rec("k2", "skipped"))
    assert not s.is_done("k1") and s.is_done("k2") and not s.is_done("k3")


def test_lock_excludes_second_holder(tmp_path):
    s = Store(tmp_path)
    with s.lock("k"), pytest.raises(JobBusyError), s.lock("k"):
        pass
    with s.lock("k"):  # released
        pass


def test_run_key_is_canonical():
    assert run_key({"a": 1, "b": [1, 2]}) == run_key({"b": [1, 2], "a": 1})
    assert run_key({"a": 1}) != run_key({"a": 2})


def test_collect_flattens(tmp_path):
    s = Store(tmp_path / "store")
    s.write(_rec("k1"))
    s.write(_rec("k2", seed=1))
    df = collect(tmp_path / "store", tmp_path / "results")
    assert len(df) == 2 and {"param.a", "test_accuracy", "n_splits"} <= set(df.columns)
    assert (tmp_path / "results" / "results.parquet").exists()
    assert not (tmp_path / "results" / "results.csv").exists()  # CSV on request only
    collect(tmp_path / "store", tmp_path / "results", csv=True)
    assert len(pd.read_csv(tmp_path / "results" / "results.csv")) == 2


def test_collect_writes_parquet_with_mixed_param_types(tmp_path):
    s = Store(tmp_path / "store")
    s.write(_rec("k1", params={"verbose": False}))
    s.write(_rec("k2", params={"verbose": 0}))
    df = collect(tmp_path / "store", tmp_path / "results")
    assert list(df["param.verbose"]) in ([False, 0], [0, False])
    assert (tmp_path / "results" / "results.parquet").exists()


def test_shared_record_counts_in_every_experiment(tmp_path):
    s = Store(tmp_path / "store")
    s.write(_rec("k1"))
    s.write(_rec("k2", "failed"))
    assert s.add_experiment("k1", "f") and not s.add_experiment("k1", "f")  # listed once
    assert not s.add_experiment("k1", "e")  # its own label
    assert not s.add_experiment("k2", "f")  # not done: the job will run and label itself
    assert s.get("k1")["also_experiments"] == ["f"]
    assert len(collect(tmp_path / "store", experiment="e", status="ok")) == 1
    (row,) = collect(tmp_path / "store", experiment="f").to_dict("records")
    assert row["key"] == "k1" and "also_experiments" not in row
    assert sorted(collect(tmp_path / "store")["experiment"]) == ["e", "e", "f"]
    with s.lock("k1"):  # a busy key is left alone
        assert not s.add_experiment("k1", "g")


def test_a_full_plan_that_holds_a_reduced_run_counts_it_as_full(tmp_path):
    """The same run key is the same fit.

    A full plan finding a reduced-profile job done makes the row full in that experiment only, and a
    reduced plan changes nothing.
    """
    s = Store(tmp_path / "store")
    s.write(_rec("k1", profile="reduced"))
    s.write(_rec("k2", profile="full"))
    assert not s.add_experiment("k1", "e", "reduced")  # its own label
    assert not s.add_experiment("k2", "e", "full")
    rows = collect(tmp_path / "store").set_index("key")
    assert rows["profile"].to_dict() == {"k1": "reduced", "k2": "full"}

    assert s.add_experiment("k1", "e", "full") and not s.add_experiment("k1", "e", "full")
    assert s.get("k1")["full_plan_of"] == ["e"] and s.get("k1")["profile"] == "reduced"
    assert s.add_experiment("k1", "f", "reduced")  # another experiment's reduced plan
    assert s.get("k1")["also_experiments"] == ["f"] and s.get("k1")["full_plan_of"] == ["e"]
    df = collect(tmp_path / "store")
    got = sorted(zip(df["key"], df["experiment"], df["profile"], strict=True))
    assert got == [("k1", "e", "full"), ("k1", "f", "reduced"), ("k2", "e", "full")]
    assert "full_plan_of" not in df.columns
    assert s.add_experiment("k1", "f", "full")
    (row,) = collect(tmp_path / "store", experiment="f").to_dict("records")
    assert row["profile"] == "full"
