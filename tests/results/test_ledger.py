"""The committed ledger.

Deterministic files, dedup by run key, refused conflicts, read with the store.
"""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from tests.report.records import make_record
from treebench.cli import app
from treebench.results import Ledger, LedgerConflict, Store, collect
from treebench.results.ledger import combined_records


def _recs(n=3, experiment="exp", acc=0.9, method="cart"):
    return [make_record(method, "digits", seed=s, acc=acc, experiment=experiment) for s in range(n)]


def test_add_writes_one_sorted_deterministic_file_per_experiment(tmp_path):
    recs = _recs(3) + _recs(2, experiment="other")
    a, b = Ledger(tmp_path / "a"), Ledger(tmp_path / "b")
    a.add(recs)
    b.add(list(reversed(recs)))
    assert [p.name for p in a.files()] == ["exp.jsonl.gz", "other.jsonl.gz"]
    for p in a.files():  # same content → same bytes (no gzip timestamp, sorted lines)
        assert p.read_bytes() == (b.root / p.name).read_bytes()
    lines = gzip.decompress((a.root / "exp.jsonl.gz").read_bytes()).decode().splitlines()
    keys = [json.loads(ln)["key"] for ln in lines]
    assert keys == sorted(r["key"] for r in recs[:3])
    assert a.content_hash() == b.content_hash() and len(a) == 5


def test_add_dedups_by_key_merges_labels_and_leaves_failed_out(tmp_path):
    led = Ledger(tmp_path)
    recs = _recs(2)
    res = led.add(recs)
    assert res.added == {"exp": 2}
    h = led.content_hash()
    res = led.add(recs)  # the same records again: nothing changes
    assert res.n_added == 0 and res.unchanged == 2 and led.content_hash() == h
    shared = {**recs[0], "experiment": "exp2"}  # the same fit, used by a second experiment
    failed = make_record("cart", "digits", seed=9, status="failed", error="boom")
    res = Ledger(tmp_path).add([shared, failed])
    assert res.relabelled == 1 and res.not_done == 1 and res.n_added == 0
    again = Ledger(tmp_path)
    assert again.get(recs[0]["key"])["also_experiments"] == ["exp2"]
    assert again.get(failed["key"]) is None and [p.name for p in again.files()] == ["exp.jsonl.gz"]


def test_a_large_experiment_is_written_in_shards_by_key_digit(tmp_path, monkeypatch):
    """Past MAX_FILE_BYTES an experiment's file splits by the key's first digit, and joins again.

    The shards are committable files; the records, their order and the reading are unchanged.
    """
    import treebench.results.ledger as ledger_mod

    recs = _recs(12)
    Ledger(tmp_path / "one").add(recs)
    monkeypatch.setattr(ledger_mod, "MAX_FILE_BYTES", 10)
    led = Ledger(tmp_path / "led")
    led.add(recs)
    names = [p.name for p in led.files()]
    digits = sorted({r["key"][0] for r in recs})
    assert names == [f"exp.{d}.jsonl.gz" for d in digits] and len(names) > 1
    one = Ledger(tmp_path / "one")
    assert list(Ledger(tmp_path / "led").records()) == list(one.records())
    monkeypatch.setattr(ledger_mod, "MAX_FILE_BYTES", 10**9)
    Ledger(tmp_path / "led").add([make_record("rf", "digits", seed=99)])
    assert [p.name for p in Ledger(tmp_path / "led").files()] == ["exp.jsonl.gz"]
    assert len(Ledger(tmp_path / "led")) == 13


def test_add_refuses_a_key_with_other_numbers_and_writes_nothing(tmp_path):
    led = Ledger(tmp_path)
    recs = _recs(2)
    led.add(recs)
    before = (tmp_path / "exp.jsonl.gz").read_bytes()
    changed = {**recs[1], "metrics": {**recs[1]["metrics"], "test_accuracy": 0.1}}
    new = make_record("cart", "digits", seed=5)
    with pytest.raises(LedgerConflict, match=recs[1]["key"]) as exc:
        led.add([new, changed])
    assert "1 record(s) already in the ledger with other results" in str(exc.value)
    assert (tmp_path / "exp.jsonl.gz").read_bytes() == before
    assert Ledger(tmp_path).get(new["key"]) is None


def test_local_records_are_not_committed_machine_paths(tmp_path):
    rec = {**_recs(1)[0], "model_path": "/somewhere/on/a/machine.json.gz"}
    Ledger(tmp_path).add([rec])
    assert "model_path" not in Ledger(tmp_path).get(rec["key"])


def test_combined_records_one_per_key_store_wins_failed_rerun_does_not(tmp_path):
    led = Ledger(tmp_path / "led")
    recs = _recs(3)
    led.add(recs)
    rerun = {**recs[0], "experiment": "exp2", "metrics": {"test_accuracy": 0.5}}
    failed = {**recs[1], "status": "failed", "error": "boom"}
    local_only = make_record("rf", "digits", seed=0)
    out = {r["key"]: r for r in combined_records([rerun, failed, local_only], led)}
    assert len(out) == 4
    assert out[recs[0]["key"]]["metrics"] == {"test_accuracy": 0.5}  # the newer run
    assert out[recs[0]["key"]]["also_experiments"] == ["exp"]
    assert out[recs[1]["key"]]["status"] == "ok"  # the committed result stays visible
    df = collect(None, ledger=led)
    assert len(df) == 3 and set(df["experiment"]) == {"exp"}


def test_store_over_ledger_counts_ledger_keys_done_and_relabels_locally(tmp_path):
    led = Ledger(tmp_path / "led")
    rec = _recs(1)[0]
    led.add([rec])
    store = Store(tmp_path / "store", led)
    assert store.is_done(rec["key"]) and not Store(tmp_path / "store").is_done(rec["key"])
    assert list(store.records()) == []  # records() is the local store only
    assert store.add_experiment(rec["key"], "exp2")
    local = Store(tmp_path / "store").get(rec["key"])
    assert local["also_experiments"] == ["exp2"]
    assert Ledger(tmp_path / "led").add([local]).relabelled == 1


def test_a_full_plan_label_on_a_ledger_record_is_merged_back(tmp_path):
    led = Ledger(tmp_path / "led")
    rec = {**_recs(1)[0], "profile": "reduced"}
    led.add([rec])
    assert collect(None, ledger=Ledger(tmp_path / "led"))["profile"].tolist() == ["reduced"]
    store = Store(tmp_path / "store", led)
    assert store.add_experiment(rec["key"], rec["experiment"], "full")
    # the local copy already counts as full before it is merged back
    df = collect(tmp_path / "store", ledger=Ledger(tmp_path / "led"))
    assert df["profile"].tolist() == ["full"] and len(df) == 1
    local = Store(tmp_path / "store").get(rec["key"])
    res = Ledger(tmp_path / "led").add([local])
    assert res.relabelled == 1 and res.unchanged == 0
    merged = Ledger(tmp_path / "led").get(rec["key"])
    assert merged["full_plan_of"] == [rec["experiment"]] and merged["profile"] == "reduced"
    assert Ledger(tmp_path / "led").add([local]).unchanged == 1
    assert collect(None, ledger=Ledger(tmp_path / "led"))["profile"].tolist() == ["full"]


def test_cli_ledger_add_moves_paper_records_and_refuses_conflicts(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "ledger"))
    store = Store(tmp_path / "out" / "store")
    paper = _recs(2, experiment="tnt_table1")
    for r in [*paper, *_recs(1, experiment="adhoc")]:
        store.write(r)
    r = CliRunner().invoke(app, ["ledger", "add", "--outputs", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())  # rich wraps lines off a terminal
    assert "added 2 records" in said and "(tnt_table1 2)" in said
    assert {x["key"] for x in Ledger(tmp_path / "ledger").records()} == {p["key"] for p in paper}
    r = CliRunner().invoke(app, ["status", "--outputs", str(tmp_path / "out")])
    said = " ".join(r.output.split())  # the local store first, the ledger in a line
    assert r.exit_code == 0 and "store: 3 records" in said and "ledger +" not in said
    assert "committed ledger: 2 records of 1 experiments, not shown" in said
    assert "`treebench status --ledger` adds them" in said
    r = CliRunner().invoke(app, ["status", "--outputs", str(tmp_path / "out"), "--ledger"])
    assert r.exit_code == 0 and "ledger + store: 3 records" in " ".join(r.output.split())
    store.write({**paper[0], "metrics": {"test_accuracy": 0.01}})
    r = CliRunner().invoke(app, ["ledger", "add", "--outputs", str(tmp_path / "out")])
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "Refused" in said and paper[0]["key"] in said


def test_cli_ledger_add_files_an_adhoc_run_under_the_paper_plan_that_holds_it(
    tmp_path, monkeypatch
):
    """An ad hoc run that a paper's full plan holds is filed under that paper's experiment.

    A job first run ad hoc under a reduced profile, then found done by tnt_table1's full plan and by
    another experiment's, is filed under tnt_table1 and counts as the full protocol's in both plans,
    not in the ad hoc one.
    """
    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "ledger"))
    store = Store(tmp_path / "out" / "store")
    rec = {**_recs(1, experiment="adhoc")[0], "profile": "reduced"}
    store.write(rec)
    assert store.add_experiment(rec["key"], "tnt_table1", "full")
    assert store.add_experiment(rec["key"], "other", "full")
    r = CliRunner().invoke(app, ["ledger", "add", "--outputs", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    filed = Ledger(tmp_path / "ledger").get(rec["key"])
    assert filed["experiment"] == "tnt_table1" and filed["also_experiments"] == ["adhoc", "other"]
    df = collect(None, ledger=Ledger(tmp_path / "ledger"))
    assert dict(zip(df["experiment"], df["profile"], strict=True)) == {
        "tnt_table1": "full",
        "adhoc": "reduced",
        "other": "full",
    }


def test_worsened_result_in_a_ledger_copy_turns_rows_into_fail(tmp_path, monkeypatch):
    from treebench.report.checks import FAIL, PASS, run_checks
    from treebench.report.targets import load_paper

    path = tmp_path / "p.yaml"
    path.write_text(
        "paper: toy\nunits: percent\ndefaults: {metric: test_accuracy, tolerance: 1.0, runs: 3}\n"
        "targets:\n  - {id: a, experiment: exp, dataset: digits, method: cart, value: 90.0}\n"
    )
    led = Ledger(tmp_path / "led")
    led.add(_recs(3, acc=0.90))
    (t,) = load_paper(path).targets
    assert run_checks([t], collect(None, ledger=led)).iloc[0]["status"] == PASS
    broken = [  # a run with a broken hyperparameter lands in the ledger
        make_record("cart", "digits", seed=s, acc=0.2, params={"max_depth": 1}) for s in range(3)
    ]
    led.add(broken)
    r = run_checks([t], collect(None, ledger=Ledger(tmp_path / "led"))).iloc[0]
    assert r["status"] == FAIL and r["n"] == 6
    assert r["note"] == "unexplained; pools max_depth in {1, unset}"  # the mixed-in runs are named


def test_a_ledger_record_refits_on_a_machine_without_the_store(tmp_path):
    import shutil

    from tests.conftest import run_cli

    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out"), "TREEBENCH_LEDGER": str(tmp_path / "led")}
    r = run_cli(["run", "method=cart", "dataset=iris", "method.params.max_depth=2"], tmp_path, env)
    assert r.returncode == 0, r.stderr
    (rec,) = Store(tmp_path / "out" / "store").records()
    r = run_cli(["ledger", "add", "--experiment", "adhoc"], tmp_path, env)
    assert r.returncode == 0 and "added 1 records" in " ".join(r.stdout.split()), r.stdout
    shutil.rmtree(tmp_path / "out")
    r = run_cli(["export", rec["key"][:8], "-o", str(tmp_path / "m.json")], tmp_path, env)
    assert r.returncode == 0, r.stderr + r.stdout
    said = " ".join(r.stdout.split())
    assert (
        "run key verified" in said
        and f"test_accuracy={rec['metrics']['test_accuracy']:.4f}" in said
    )
    args = ["run", "method=cart", "dataset=iris", "method.params.max_depth=2"]
    r = run_cli([*args, "ledger=true"], tmp_path, env)
    assert "skipped, done" in r.stdout and "in the committed ledger" in r.stdout
    assert not (tmp_path / "out" / "store").exists()
    r = run_cli(args, tmp_path, env)  # an ad-hoc run fits here by default (ledger=null)
    assert "skipped" not in r.stdout and len(list(Store(tmp_path / "out" / "store").records())) == 1


def test_a_demo_sized_store_prints_a_screenful_beside_a_large_ledger(tmp_path, monkeypatch):
    """A demo-sized store prints a screenful beside a large ledger.

    After `make demo` (21 local records) with thousands of committed ones, status, collect and
    report show the local records in under 60 lines and the ledger in one line.
    """
    monkeypatch.setenv("TREEBENCH_LEDGER", str(tmp_path / "ledger"))
    many = [
        make_record(m, d, seed=s, acc=0.8, experiment=f"paper{k}", params={"max_depth": k + s})
        for k in range(6)
        for m in ("cart", "rf", "tnt")
        for d in ("iris", "wine", "digits", "letter")
        for s in range(10)
    ]
    Ledger(tmp_path / "ledger").add(many)
    store = Store(tmp_path / "out" / "store")
    for m in ("tnt", "e2edt", "cart", "rf", "bagged_cart", "gbdt", "adaboost"):
        for s in range(3):
            store.write(make_record(m, "digits", seed=s, acc=0.8, experiment="demo"))
    monkeypatch.setenv("COLUMNS", "120")
    for cmd in ("status", "collect", "report"):
        r = CliRunner().invoke(app, [cmd, "--outputs", str(tmp_path / "out")])
        assert r.exit_code == 0, r.output
        lines = r.output.splitlines()
        assert len(lines) < 60, f"{cmd}: {len(lines)} lines\n{r.output}"
        assert max(len(ln) for ln in lines) <= 120, f"{cmd} is wider than the terminal"
        said = " ".join(r.output.split())
        assert f"committed ledger: {len(many):,} records of 6 experiments, not shown" in said
        assert "tnt" in said and "e2edt" in said and "letter" not in said
    r = CliRunner().invoke(app, ["status", "--outputs", str(tmp_path / "out"), "--ledger"])
    assert "letter" in r.output  # the ledger on request
