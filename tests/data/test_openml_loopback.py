"""``dataset=openml dataset.data_id=<id>`` end to end against a stand-in for the OpenML REST API.

The ``http_server`` fixture (tests/data/conftest.py, 127.0.0.1 only) plays OpenML: it serves the
dataset description ``/api/v1/xml/data/<id>`` and the ARFF file the description's ``oml:url`` names
(no ``oml:parquet_url``, so ``openml`` takes the ARFF path and never asks MinIO). The loader is
pointed at it by ``TREEBENCH_OPENML_SERVER``. No request leaves the machine.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from sklearn.datasets import load_iris
from typer.testing import CliRunner

from tests.conftest import run_cli
from treebench.cli import app

DATA_ID = 61
ROWS = 120  # iris without every fifth row: a count neither the real iris nor sklearn's has
CLASSES = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
DESCRIPTION = f"""<oml:data_set_description xmlns:oml="http://openml.org/openml">
  <oml:id>{DATA_ID}</oml:id>
  <oml:name>iris</oml:name>
  <oml:version>1</oml:version>
  <oml:description>iris, 120 rows, served from 127.0.0.1</oml:description>
  <oml:format>ARFF</oml:format>
  <oml:upload_date>2014-04-06T23:23:39</oml:upload_date>
  <oml:licence>Public</oml:licence>
  <oml:url>{{base}}/data/v1/download/{DATA_ID}/iris.arff</oml:url>
  <oml:file_id>{DATA_ID}</oml:file_id>
  <oml:default_target_attribute>class</oml:default_target_attribute>
  <oml:visibility>public</oml:visibility>
  <oml:status>active</oml:status>
  <oml:md5_checksum>{{md5}}</oml:md5_checksum>
</oml:data_set_description>
"""


def iris_arff() -> bytes:
    """Iris as OpenML serves it (numeric features, nominal ``class``) plus a nominal feature."""
    X, y = load_iris(return_X_y=True)
    keep = np.arange(len(y)) % 5 != 4
    assert keep.sum() == ROWS
    lines = ["% iris for the loopback test", "@RELATION iris", ""]
    for name in ("sepallength", "sepalwidth", "petallength", "petalwidth"):
        lines.append(f"@ATTRIBUTE {name} REAL")
    lines.append("@ATTRIBUTE colour {red,blue}")
    lines.append(f"@ATTRIBUTE class {{{','.join(CLASSES)}}}")
    lines += ["", "@DATA"]
    for i in np.flatnonzero(keep):
        values = [f"{v:g}" for v in X[i]] + [("red", "blue")[i % 2], CLASSES[y[i]]]
        lines.append(",".join(values))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def fake_openml(http_server, tmp_path, monkeypatch):
    """Return the stand-in server, and the environment of a user pointing treebench at it."""
    srv, base = http_server
    arff = iris_arff()
    md5 = hashlib.md5(arff).hexdigest()
    srv.files[f"/api/v1/xml/data/{DATA_ID}"] = DESCRIPTION.format(base=base, md5=md5).encode()
    srv.files[f"/data/v1/download/{DATA_ID}/iris.arff"] = arff
    monkeypatch.setenv("TREEBENCH_OPENML_SERVER", f"{base}/api/v1/xml")
    monkeypatch.setenv("TREEBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path / "out"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # a proxy in the environment must not get these
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    return srv, base


def _records(out):
    return [json.loads(p.read_text()) for p in sorted((out / "store").rglob("*.json"))]


def test_fetch_then_run_offline_from_the_cache(fake_openml, tmp_path):
    srv, base = fake_openml
    run = ["run", "method=cart", "dataset=openml", f"dataset.data_id={DATA_ID}"]

    # before any fetch: the run stops before it starts (no record), downloads nothing and names
    # the fetch command that works
    res = run_cli(run, tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert _records(tmp_path / "out") == []
    text = " ".join(res.stderr.split())
    assert f"download it with `treebench fetch dataset=openml dataset.data_id={DATA_ID}`" in text
    assert "dataset=openml_61`" not in text
    assert srv.hits == {}

    # fetch: description, then the ARFF file it names, into the tmp data dir
    res = CliRunner().invoke(app, ["fetch", "dataset=openml", f"dataset.data_id={DATA_ID}"])
    assert res.exit_code == 0, res.output
    assert f"openml: ready (all {ROWS}; 5 features)" in res.output
    assert srv.hits == {
        f"/api/v1/xml/data/{DATA_ID}": 1,
        f"/data/v1/download/{DATA_ID}/iris.arff": 1,
    }
    port = base.rsplit(":", 1)[1]  # openml keeps one cache per server: its host name reversed
    cached = tmp_path / "data" / "openml" / f"1:{port}" / "0" / "0" / "127" / "datasets" / "61"
    assert (cached / "dataset.arff").read_bytes() == srv.files[
        f"/data/v1/download/{DATA_ID}/iris.arff"
    ]

    # the server gone (a request would now be refused), the run reads the cache
    srv.shutdown()
    srv.server_close()
    res = run_cli(run, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    (rec,) = [r for r in _records(tmp_path / "out") if r["status"] == "ok"]
    assert rec["dataset"] == f"openml_{DATA_ID}" and rec["method"] == "cart"
    assert rec["n_train"] + rec["n_val"] + rec["n_test"] == ROWS
    assert rec["n_classes"] == len(CLASSES)
    assert rec["metrics"]["test_accuracy"] > 0.8


def test_a_sweep_stops_before_launch_on_an_openml_dataset_not_cached(fake_openml, tmp_path):
    """Fetching off (the default) and OpenML 61 not cached.

    The plan marks its jobs "no data" and the sweep stops before launching, naming the fetch
    command; nothing asks the server, no record.
    """
    srv, _ = fake_openml
    sweep = ["run", "-m", "method=cart,rf", "dataset=openml", f"dataset.data_id={DATA_ID}"]
    fix = f"`treebench fetch dataset=openml dataset.data_id={DATA_ID}` downloads them"

    plan = run_cli([*sweep, "--dry-run"], tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    text = " ".join(plan.stdout.split())
    assert "no data" in text
    assert (
        f"2 jobs need data files that are in neither the cache nor the mirror (openml_{DATA_ID}, 2 "
        f"jobs: OpenML {DATA_ID})" in text
    )
    assert fix in text

    run = run_cli(sweep, tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    err = " ".join(run.stderr.split())
    assert "error: 2 jobs need data files" in err and "no job launched" in err and fix in err
    assert srv.hits == {}
    assert not (tmp_path / "out" / "store").exists() or _records(tmp_path / "out") == []
