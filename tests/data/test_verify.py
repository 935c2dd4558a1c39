"""``verify_dataset`` and ``treebench fetch --verify`` on a small mirror written by the test."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from treebench.cli import app
from treebench.data.fetch import verify_dataset

ROWS = b"1,2,a\n3,4,b\n5,6,c\n7,8,a\n9,1,b\n2,3,c\n"


def _mirror(tmp_path: Path, data: bytes = ROWS) -> Path:
    root = tmp_path / "mirror"
    (root / "toy").mkdir(parents=True)
    (root / "toy" / "t.data").write_bytes(data)
    return root


def _cfg(sha: str | None = hashlib.sha256(ROWS).hexdigest(), n_samples=6, n_classes=3):
    return {
        "name": "toy",
        "task": "classification",
        "shape": {"n_samples": n_samples, "n_features": 2, "n_classes": n_classes},
        "loader": {
            "_target_": "treebench.data.sources.uci.load",
            "target": -1,
            "files": {
                "all": {"url": "https://example.invalid/t", "path": "toy/t.data", "sha256": sha}
            },
        },
        "split": {"_target_": "treebench.data.splits.Holdout", "test_size": 0.5},
        "preprocess": {"_target_": "treebench.data.preprocess.Preprocessor"},
    }


def test_a_correct_dataset_is_ok(tmp_path):
    r = verify_dataset(_cfg(), _mirror(tmp_path))
    assert (r.status, r.files, r.missing, r.problems) == ("ok", 1, [], [])


def test_checksum_mismatch_fails_and_names_both_digests(tmp_path):
    r = verify_dataset(_cfg(sha="0" * 64), _mirror(tmp_path))
    assert r.status == "failed"
    assert r.problems == [
        f"toy/t.data: sha256 {hashlib.sha256(ROWS).hexdigest()}, the config says {'0' * 64}"
    ]


def test_a_file_without_configured_sha256_fails(tmp_path):
    r = verify_dataset(_cfg(sha=None), _mirror(tmp_path))
    assert r.status == "failed" and "no sha256 in the config" in r.problems[0]


def test_absent_file_is_missing_not_failed(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    r = verify_dataset(_cfg(), root)
    assert (r.status, r.missing) == ("missing", ["toy/t.data"])


def test_shape_and_classes_are_compared_with_the_config(tmp_path):
    r = verify_dataset(_cfg(n_samples=7, n_classes=2), _mirror(tmp_path))
    assert r.status == "failed"
    text = "\n".join(r.problems)
    assert "class labels 0..2 outside 0..1" in text
    assert "shape (6, 2), the config says (7, 2)" in text


def test_rows_are_compared_with_the_manifest(tmp_path):
    root = _mirror(tmp_path)
    (root / "MANIFEST.csv").write_text("relative_path,n_rows,n_classes\ntoy/t.data,7,3\n")
    r = verify_dataset(_cfg(), root)
    assert r.problems == ["part all: 6 rows, MANIFEST.csv says 7"]


def test_a_dataset_without_mirror_files_is_skipped(tmp_path):
    cfg = {**_cfg(), "loader": {"_target_": "treebench.data.sources.bundled.load", "name": "iris"}}
    assert verify_dataset(cfg, tmp_path).status == "skipped"


def test_cli_verify_exits_1_on_a_corrupted_mirror_file(tmp_path, monkeypatch):
    root = tmp_path / "mirror"
    (root / "uci" / "iris").mkdir(parents=True)
    (root / "uci" / "iris" / "iris.data").write_bytes(ROWS)
    monkeypatch.setenv("TREEBENCH_MIRROR", str(root))
    monkeypatch.setenv("TREEBENCH_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(app, ["fetch", "--verify", "dataset=iris_uci,iris"])
    assert res.exit_code == 1, res.output
    assert "iris_uci: failed" in res.output and "iris: skipped" in res.output


def test_cli_verify_passes_on_the_mirror(mirror, monkeypatch, tmp_path):
    if not (mirror / "uci/iris/iris.data").is_file():
        pytest.skip("not in mirror: uci/iris/iris.data")
    monkeypatch.setenv("TREEBENCH_MIRROR", str(mirror))
    monkeypatch.setenv("TREEBENCH_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(app, ["fetch", "--verify", "dataset=iris_uci"])
    assert res.exit_code == 0, res.output
    assert "iris_uci: ok (1/1 files" in res.output
