"""Bad input fails before any work.

Parameter checks, misspelt names, unwritable outputs; failed sweeps exit non-zero; unreadable store
records are reported; written files respect the umask.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.conftest import run_cli
from treebench.config import compose
from treebench.files import OutputsError, apply_umask, check_outputs
from treebench.params import ParamError, check_params
from treebench.results import Store


def _env(tmp_path):
    return {"TREEBENCH_OUTPUTS": str(tmp_path / "out"), "TREEBENCH_LEDGER": "off"}


def _records(tmp_path) -> list:
    return list((tmp_path / "out").glob("store/*/*.json"))


def _launched(tmp_path) -> list:
    """Job directories of every sweep (a launched job writes its own directory)."""
    return [p for p in (tmp_path / "out").glob("multirun/*/*") if p.is_dir()]


# ----------------------------------------------------------------------------- (1) values


def test_invalid_value_in_sweep_fails_while_planning(tmp_path):
    args = ["run", "-m", "method=cart", "dataset=iris,wine", "method.params.max_depth=-3"]
    res = run_cli(args, tmp_path, _env(tmp_path))
    assert res.returncode == 2, res.stderr[-2000:]
    assert "method 'cart'" in res.stderr and "'max_depth' parameter" in res.stderr
    assert "must be an int in the range [1, inf) or None. Got -3" in res.stderr
    assert "in 2 of 2 jobs" in res.stderr and "no job launched" in res.stderr
    assert "Traceback" not in res.stderr
    assert not _records(tmp_path) and not _launched(tmp_path)


def test_wrong_type_in_single_run_fails_before_data(tmp_path):
    res = run_cli(
        ["run", "method=cart", "dataset=iris", "method.params.max_depth=abc"],
        tmp_path,
        _env(tmp_path),
    )
    assert res.returncode == 2
    assert "method 'cart'" in res.stderr and "Got 'abc' instead" in res.stderr
    assert "Traceback" not in res.stderr and not _records(tmp_path)


def test_single_run_without_its_data_files_names_the_fetch_and_writes_no_record(tmp_path):
    env = {
        **_env(tmp_path),
        "TREEBENCH_MIRROR": str(tmp_path / "empty_mirror"),
        "TREEBENCH_DATA_DIR": str(tmp_path / "empty_cache"),
    }
    res = run_cli(["run", "method=cart", "dataset=letter"], tmp_path, env)
    assert res.returncode == 2, res.stderr[-2000:]
    msg = " ".join(res.stderr.split())
    assert "dataset 'letter' needs uci/letter-recognition/letter-recognition.data" in msg
    assert f"not in the cache ({tmp_path / 'empty_cache'}) nor in the mirror" in msg
    assert "download it with `treebench fetch dataset=letter`" in msg
    assert "Traceback" not in res.stderr and not _records(tmp_path)


def test_check_params_uses_declared_constraints_only():
    with pytest.raises(ParamError, match="'n_estimators' parameter of GBDTClassifier"):
        check_params(compose(["method=gbdt", "dataset=iris", "method.params.n_estimators=0"]))
    # every treebench estimator declares its constraints: tnt's N1 is checked while planning
    with pytest.raises(ParamError, match="'N1' parameter of TnTClassifier"):
        check_params(compose(["method=tnt", "dataset=iris", "++method.params.N1=-3"]))
    # a parameter without a declared constraint is left to fit
    check_params(compose(["method=tnt", "dataset=iris", "++method.params.min_samples_leaf=-3"]))
    # a method without an estimator for the task is left to the runner (recorded as a skip)
    check_params(compose(["method=sdt", "dataset=diabetes"]))


# ----------------------------------------------------------------------------- (2) names


def test_misspelt_param_suggests_and_hides_hydra_advice(tmp_path):
    res = run_cli(
        ["run", "method=cart", "dataset=iris", "method.params.max_dept=3"],
        tmp_path,
        _env(tmp_path),
    )
    assert res.returncode == 2
    out = res.stdout + res.stderr
    assert "method 'cart' (CARTClassifier) has no parameter 'max_dept'" in out
    assert "Did you mean 'max_depth'?" in out
    assert "+method.params" not in out and "To append to your config" not in out
    assert not _records(tmp_path)


def test_sweep_over_methods_names_the_one_lacking_the_key(tmp_path):
    args = ["run", "-m", "method=cart,adaboost", "dataset=iris", "method.params.max_depth=3"]
    res = run_cli(args, tmp_path, _env(tmp_path))
    assert res.returncode == 2
    assert "method 'adaboost' (AdaBoostClassifier) has no parameter 'max_depth'" in res.stderr
    assert "method 'cart'" not in res.stderr
    assert "in 1 of 2 jobs, e.g. method=adaboost" in res.stderr
    assert not _records(tmp_path) and not _launched(tmp_path)


def test_any_estimator_parameter_can_be_set_without_plus(tmp_path):
    res = run_cli(
        ["run", "method=cart", "dataset=iris", "method.params.max_features=2"],
        tmp_path,
        _env(tmp_path),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (rec,) = (json.loads(p.read_text()) for p in _records(tmp_path))
    assert rec["status"] == "ok" and rec["params"]["max_features"] == 2


# ----------------------------------------------------------------------------- (3) exit status


def test_sweep_with_runtime_failures_exits_nonzero_after_all_jobs(tmp_path):
    # passes the declared constraints (array-like), fails in fit (iris has 4 features)
    args = ["run", "-m", "method=cart", "dataset=iris,wine", "method.params.monotonic_cst=[1]"]
    res = run_cli(args, tmp_path, _env(tmp_path))
    assert res.returncode == 1, res.stderr[-2000:]
    assert "2 run(s) of this sweep failed" in res.stderr
    assert len(list((tmp_path / "out").glob("multirun/*/results.csv"))) == 1  # summarised
    recs = [json.loads(p.read_text()) for p in _records(tmp_path)]
    assert sorted(r["status"] for r in recs) == ["failed", "failed"]


# ----------------------------------------------------------------------------- (4) outputs


def test_unwritable_outputs_is_one_paragraph(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"TREEBENCH_OUTPUTS": str(blocker / "out"), "TREEBENCH_LEDGER": "off"}
    for args in (["run", "method=cart", "dataset=iris"], ["run", "-m", "dataset=iris,wine"]):
        res = run_cli(args, tmp_path, env)
        assert res.returncode == 2
        text = " ".join(res.stderr.split())  # rich wraps lines
        assert f"{blocker / 'out'}" in text and "TREEBENCH_OUTPUTS" in text
        assert "is not a directory" in text and "Traceback" not in res.stderr
    assert blocker.is_file()


def test_store_checked_by_the_sweeper(tmp_path):
    """A store path composed from the config (not the command line) is checked while planning."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = run_cli(
        ["run", "-m", "dataset=iris,wine", f"paths.store={blocker}/${{method.name}}"],
        tmp_path,
        _env(tmp_path),
    )
    assert res.returncode == 2
    assert "Cannot write the store" in res.stderr and "TREEBENCH_OUTPUTS" in res.stderr
    assert "no job launched" in res.stderr and not _launched(tmp_path)


def test_check_outputs_permission(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as a non-root user would see it
    with pytest.raises(OutputsError, match="not writable by this user.*TREEBENCH_OUTPUTS"):
        check_outputs(tmp_path / "a" / "b")
    monkeypatch.undo()
    check_outputs(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()  # checking creates nothing


# ----------------------------------------------------------------------------- (5) store


def test_unreadable_records_are_reported(tmp_path):
    store = Store(tmp_path / "store")
    store.write({"key": "aa11", "status": "ok", "metrics": {"test_accuracy": 1.0}})
    bad = store.path("bb22")
    bad.parent.mkdir(parents=True)
    bad.write_text('{"key": "bb22", "sta')
    (bad.parent / ".tmp-xyz.json").write_text("{")  # a write in flight: neither read nor reported
    (bad.parent / "cc33.json").write_text("[1, 2]")
    assert [r["key"] for r in store.records()] == ["aa11"]
    reasons = {p.name: r for p, r in store.problems}
    assert set(reasons) == {"bb22.json", "cc33.json"}
    assert reasons["bb22.json"].startswith("not valid JSON")
    assert "not a record" in reasons["cc33.json"]


def test_status_and_collect_print_unreadable_records(tmp_path):
    bad = tmp_path / "out" / "store" / "ab" / "abcd.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{trunc")
    for cmd in ("status", "collect"):
        res = run_cli([cmd, "--no-ledger"], tmp_path, _env(tmp_path))
        assert res.returncode == 0, res.stderr[-2000:]
        assert "1 unreadable or invalid record(s)" in res.stderr
        assert f"{bad}: not valid JSON" in res.stderr


def test_status_lists_the_first_failures_and_counts_the_rest_by_reason(tmp_path):
    store = Store(tmp_path / "out" / "store")
    base = {"experiment": "x", "method": "cart", "seed": 0, "fold": 0, "status": "failed"}
    for i in range(70):  # 70 failures: 50 listed, 20 counted under their two reasons
        error = "DatasetUnavailableError: no file" if i % 2 else "ValueError: bad input"
        store.write({**base, "key": f"k{i:03d}", "dataset": f"d{i}", "error": error})
    res = run_cli(["status", "--no-ledger"], tmp_path, {**_env(tmp_path), "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert sum(ln.startswith("failed cart | d") for ln in lines) == 50
    assert "… and 20 more failed or skipped runs" in res.stdout
    assert "  10 x failed: DatasetUnavailableError: no file" in lines
    assert "  10 x failed: ValueError: bad input" in lines


# ----------------------------------------------------------------------------- (6) modes


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_respect_umask(tmp_path, umask, mode):
    from treebench.files import atomic_write_bytes
    from treebench.results import Ledger

    old = os.umask(umask)
    try:
        rec = {"key": "aa11", "status": "ok", "metrics": {"test_accuracy": 1.0}}
        rec_path = Store(tmp_path / "store").write(rec)
        (led_path,) = Ledger(tmp_path / "ledger")._write("exp", [{"key": "aa11", "status": "ok"}])
        model_path = atomic_write_bytes(tmp_path / "m" / "x.gz", b"data")
        tmp = tmp_path / "plain"
        tmp.write_text("")
        os.chmod(tmp, 0o600)
        apply_umask(tmp)
    finally:
        os.umask(old)
    for p in (rec_path, led_path, model_path, tmp):
        assert stat.S_IMODE(p.stat().st_mode) == mode, p


_NO_TORCH = """\
import sys


class _NoTorch:  # as if PyTorch were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")


sys.meta_path.insert(0, _NoTorch())
"""


def test_a_method_whose_optional_dependency_is_missing_says_how_to_install_it(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_NO_TORCH)
    env = {**_env(tmp_path), "PYTHONPATH": str(site), "COLUMNS": "300"}
    listed = run_cli(["list", "methods"], tmp_path, env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = {ln.split("│")[1].strip(): ln for ln in listed.stdout.splitlines() if ln.count("│") > 2}
    hint = "needs torch: pip install 'treebench[torch]'"
    assert hint in rows["sdt"] and hint in rows["onestage_joint"]  # inherited from onestage
    assert "needs" not in rows["cart"] and "needs" not in rows["tnt"]
    res = run_cli(["run", "-m", "method=cart,sdt", "dataset=iris"], tmp_path, env)
    assert res.returncode == 2
    assert (
        "method 'sdt' needs torch, which is not installed: pip install 'treebench[torch]'"
        in res.stderr
    )
    assert "no job launched" in res.stdout + res.stderr and not _records(tmp_path)


def test_check_outputs_where_access_says_yes_but_creating_fails(tmp_path, monkeypatch):
    """Root passes os.access everywhere; a read-only mount or /proc still refuses new entries."""

    def refuse(*a, **k):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("treebench.files.tempfile.mkdtemp", refuse)
    with pytest.raises(OutputsError, match="refuses new entries: Read-only file system"):
        check_outputs(tmp_path / "a")
    monkeypatch.undo()
    check_outputs(tmp_path / "a")
    assert list(tmp_path.iterdir()) == []  # the probe left nothing
