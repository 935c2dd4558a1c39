"""REPRODUCTION.md and the per-paper pages from one evaluation.

Toy paper; the committed files are tests/report/test_reproduction_file.py's.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.report.records import frame
from tests.report.test_report import PAPER, _records, toy  # noqa: F401 (a fixture)
from treebench.report.checks import Availability
from treebench.report.documents.evaluation import evaluate, ordered
from treebench.report.documents.markdown import write_reproduction
from treebench.report.documents.tables import first_clause, item_tables
from treebench.report.targets import load_paper
from treebench.results.table import core_hours

AVAIL = Availability(datasets={"d1"}, methods={"cart", "rf"})


def _write(tmp_path, df, papers):
    dest = tmp_path / "REPRODUCTION.md"
    write_reproduction(evaluate(df, papers, AVAIL), dest, draw=False)
    return dest.read_text(), (tmp_path / "docs" / "reproduction" / "toy.md").read_text()


def _missing_cart_d1(recs):
    for r in recs:  # CART at depth 4 on d1 six points short of the paper's 80 (tolerance 2)
        if (r["method"], r["dataset"], r["params"].get("max_depth")) == ("cart", "d1", 4):
            r["metrics"]["test_accuracy"] = 0.72
    return recs


def test_index_and_page_show_each_item_its_verdict_cells_and_notes(toy, tmp_path):  # noqa: F811
    index, page = _write(tmp_path, frame(_missing_cart_d1(_records())), [toy])
    # the index: one row per item, linking to its section of the paper's page
    row = next(line for line in index.splitlines() if line.startswith("| [Table 1]"))
    assert row.startswith("| [Table 1](docs/reproduction/toy.md#table-1) | **FAIL** | ")
    assert "c/d1" in row  # the reason names the first target that misses
    assert max(len(line) for line in index.splitlines()) <= 400
    # the page: the paper's layout (rows = methods, columns = dataset × metric), ours (paper)
    grid = page.split("## Table 1")[1].split("Notes to Table 1")[0]
    assert "|  | d1 test_accuracy | d1 n_splits | protein test_accuracy |" in grid
    assert "| cart[max_depth=4] | 72.00 ± 0.00 (80.00) ✗ [1](#n1) | 15 (15) ✓ |  |" in grid
    assert "| rf | 90.00 ± 0.00 (90.00) ✓ |" in grid
    notes = page.split("Notes to Table 1:")[1]
    assert "**c/d1** — FAIL: unexplained" in notes
    assert "**c/protein** — skipped: not in mirror: not in the mirror" in notes
    cells = [c for line in page.splitlines() if line.startswith("| ") for c in line.split(" | ")]
    assert max(map(len, cells)) <= 80


def test_pages_state_core_hours_per_experiment(toy, tmp_path):  # noqa: F811
    recs = _records()  # 50 runs of 0.1 s on one thread ...
    for r in recs[:10]:
        r["wall_seconds"], r["threads"] = 360.0, 2  # ... of which 10 took 0.2 core-hours each
    df = frame(recs)
    hours = core_hours(df)
    assert hours == pytest.approx((10 * 720 + 40 * 0.1) / 3600)
    assert core_hours(pd.concat([df, df])) == pytest.approx(hours)  # a run counts once
    _, page = _write(tmp_path, df, [toy])
    assert (
        "seeds 0, 1; 2.0 core-hours (wall-clock × threads: no run measured its CPU time)." in page
    )
    for r in recs[:10]:
        r["cpu_seconds"] = 540.0  # measured: the runs waited a quarter of the time for a core
    _, page = _write(tmp_path, frame(recs), [toy])
    assert "1.5 core-hours (1.5 core-hours of it measured CPU time, the rest wall-clock" in page
    for r in recs:
        r["cpu_seconds"] = r.get("cpu_seconds", 0.1)
    index, page = _write(tmp_path, frame(recs), [toy])
    assert "seeds 0, 1; 1.5 core-hours." in page
    assert (
        "| [toy](docs/reproduction/toy.md) | 0 / 1 | not stated | 5 | 4 | 0 | 0 | 1 | 50 | 1.5 |"
        in (index)
    )


def test_item_cells_within_tolerance_count_short_numbers(tmp_path):
    (tmp_path / "toy.yaml").write_text(PAPER.replace("size_rtol: 0.5}", "size_rtol: 0.5, runs: 5}"))
    paper = load_paper(tmp_path / "toy.yaml")
    recs = [r for r in _missing_cart_d1(_records()) if r["seed"] == 0]  # 1 of the paper's 5 runs
    (t1,) = item_tables(evaluate(frame(recs), [paper], AVAIL).papers[0])
    # every number is short of the runs (info); the one that misses is not counted as within
    assert t1.verdict == "short" and (t1.within, t1.cells_n) == (3, 4)
    rf = dict(t1.rows)["rf"][0]
    assert rf.status == "info" and rf.runs == "1/5 runs" and rf.note is not None


def test_papers_in_the_missions_order_guard_last(toy):  # noqa: F811
    names = ["tnt", "ci", "hinge", "zeta", "e2edt", "onestage", "redt"]
    papers = [type(toy)(**{**toy.__dict__, "paper": n}) for n in names]
    assert [p.paper for p in ordered(papers)] == [
        *("e2edt", "redt", "onestage", "hinge", "tnt", "zeta", "ci")
    ]


def test_first_clause_stops_at_a_top_level_semicolon():
    assert first_clause("a (b; c) d; e") == "a (b; c) d"
    assert first_clause("word " * 50).endswith(" …") and len(first_clause("word " * 50)) <= 152


def test_writing_the_documents_reports_its_progress(toy, tmp_path):  # noqa: F811
    from treebench.methods.progress import reporting

    seen = []
    with reporting(lambda *a: seen.append(a)):
        ev = evaluate(frame(_records()), [toy, toy], AVAIL)
        write_reproduction(ev, tmp_path / "REPRODUCTION.md", draw=False)
    n_exp = 2 * len(toy.experiments)
    assert [s for s in seen if s[0] == "papers checked"] == [
        ("papers checked", k, 2) for k in range(3)
    ]
    figures = [s for s in seen if s[0] == "experiments' figures"]
    assert figures == [("experiments' figures", k, n_exp) for k in range(n_exp + 1)]
    assert n_exp >= 2
