"""The comparison with the authors' code without their code.

``compare.py all`` with no checkouts, and BENCHMARKS.md's section rendered from a small
``references.csv`` and kept on ``--update``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest

from treebench import bench
from treebench.bench import write
from treebench.bench.references import REFERENCE_COLUMNS, references_table
from treebench.config import PROJECT_DIR

SCRIPTS = PROJECT_DIR / "scripts" / "reference"


@pytest.fixture
def suite(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    return importlib.import_module("_suite")


def test_all_without_checkouts_lists_every_comparison_as_not_run(suite, tmp_path):
    refs, out = tmp_path / "refs", tmp_path / "r" / "references.csv"
    df = suite.run_all(str(refs), str(out), repeats=2, command="compare.py all", log=lambda _: 0)
    saved = pd.read_csv(out)
    assert list(saved.columns) == REFERENCE_COLUMNS
    assert list(saved["method"]) == ["tnt", "e2edt", "onestage", "hinge_forest"]
    assert list(saved["status"]) == [
        f"not run: checkout not found at {refs.resolve() / name}"
        for name in (
            "TnTDecisionGraph",
            "endtoenddecisiontrees",
            "One-Stage-Tree",
            "HingeTreeForTorch",
        )
    ]
    assert (saved["implementation"] == "reference").all() and saved["fit_cpu_s"].isna().all()
    assert (saved["command"] == "compare.py all").all() and len(df) == 4
    md = out.with_suffix(".md").read_text()
    assert md.count("not run: checkout not found at") == 4 and "nslay/HingeTreeForTorch" in md


def test_only_selects_by_method_or_module_name(suite, tmp_path):
    out = tmp_path / "r.csv"
    df = suite.run_all(str(tmp_path), str(out), only=["hinge", "tnt"], log=lambda _: 0)
    assert list(df["method"]) == ["tnt", "hinge_forest"]


def _rows():
    base = {
        "method": "tnt",
        "dataset": "letter",
        "setting": "C=5e-4",
        "treebench_commit": "abcdef0123",
        "reference_repo": "BingzhaoZhu/TnTDecisionGraph",
        "reference_commit": "9e645a4fff",
        "date": "2026-11-24 22:00 UTC",
        "load_avg": "2.50 2.40 2.30",
        "command": "python scripts/reference/compare.py all --refs /x",
        "status": "ok",
    }
    fits = [("treebench", 1.0, 0.80, 300), ("reference", 8.0, 0.79, 310)]
    fits += [("reference", 12.0, 0.79, 310), ("treebench", 3.0, 0.82, 302)]
    rows = [
        {**base, "implementation": i, "repeat": k // 2, "fit_cpu_s": c, "fit_wall_s": 2 * c}
        | {"accuracy": a, "size": s}
        for k, (i, c, a, s) in enumerate(fits)
    ]
    rows.append(
        {
            **base,
            "method": "hinge_forest",
            "setting": "1000 minibatches",
            "implementation": "reference",
            "reference_repo": "nslay/HingeTreeForTorch",
            "reference_commit": None,
            "status": "not run: checkout not found at /x/HingeTreeForTorch",
        }
    )
    return pd.DataFrame(rows).reindex(columns=REFERENCE_COLUMNS)


def test_table_has_medians_ratio_and_accuracies():
    t = references_table(_rows()).set_index("method")
    tnt = t.loc["tnt"]
    assert tnt["cpu_treebench"] == "2 [1, 3]" and tnt["cpu_reference"] == "10 [8, 12]"
    assert tnt["ratio"] == "0.2"  # median 2 s / median 10 s
    assert tnt["wall"] == "4 / 20" and tnt["acc"] == "81.00 / 79.00"
    assert tnt["size"] == "300–302 / 310" and tnt["runs"] == "2 / 2"
    assert tnt["reference"] == "BingzhaoZhu/TnTDecisionGraph @ 9e645a4" and tnt["status"] == "ok"
    hinge = t.loc["hinge_forest"]
    assert hinge["ratio"] == "-" and hinge["runs"] == "0 / 0"
    assert hinge["status"] == "not run: checkout not found at /x/HingeTreeForTorch"


def test_benchmarks_md_renders_the_csv_and_keeps_it_on_update(tmp_path):
    out = tmp_path / "out"
    d = out / "docs" / "bench"
    d.mkdir(parents=True)
    _rows().to_csv(d / "references.csv", index=False)
    before = (d / "references.csv").read_bytes()
    for _ in range(2):  # a write, then an --update that re-runs no section
        bench.run(methods=["cart"], sections=["none"], quick=True, out=out, update=True)
        md = (out / "BENCHMARKS.md").read_text()
        sec = md[md.index("## Comparison with the authors' code") :]
        assert "`python scripts/reference/compare.py all --refs /x`" in sec
        assert "treebench git `abcdef0`" in sec and "2026-11-24 22:00 UTC" in sec
        assert "2.50 2.40 2.30" in sec
        assert "| 2 [1, 3] " in sec and "| 10 [8, 12] " in sec and "| 0.2 " in sec
        assert "| 81.00 / 79.00 " in sec
        assert "not run: checkout not found at /x/HingeTreeForTorch" in sec
        assert (d / "references.csv").read_bytes() == before


def test_without_a_csv_the_section_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setattr(write, "PROJECT_DIR", tmp_path / "nowhere")
    out = tmp_path / "out"
    bench.run(methods=["cart"], sections=["none"], quick=True, out=out)
    md = (out / "BENCHMARKS.md").read_text()
    assert "Not measured yet" in md and "compare.py all --refs DIR" in md
    assert not (out / "docs" / "bench" / "references.csv").exists()


def test_a_fresh_output_directory_gets_the_committed_csv(tmp_path):
    committed = Path(PROJECT_DIR) / "docs" / "bench" / "references.csv"
    if not committed.exists():
        pytest.skip("no committed docs/bench/references.csv")
    out = tmp_path / "out"
    bench.run(methods=["cart"], sections=["none"], quick=True, out=out)
    assert (out / "docs" / "bench" / "references.csv").read_bytes() == committed.read_bytes()
    assert "## Comparison with the authors' code" in (out / "BENCHMARKS.md").read_text()
