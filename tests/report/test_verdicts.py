"""The verdicts the committed pages show are the evaluation's, unchanged by how they are rendered.

The snapshot (target id → verdict, item → verdict) was made from the evaluation before the pages
changed shape. A change of the evaluation rules regenerates it (after `treebench report
--reproduction`): ``cp docs/reproduction/verdicts.json tests/report/verdicts_snapshot.json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from tests.conftest import REPO

SNAPSHOT = json.loads((REPO / "tests" / "report" / "verdicts_snapshot.json").read_text())
PAGES = REPO / "docs" / "reproduction"
_NOTE = re.compile(r"^\d+\. <a id=\"n\d+\"></a>\*\*(\S+)\*\*(?: \(and ([^)]*)\))? — (\w+):", re.M)


def test_the_evaluations_verdicts_are_the_snapshots():
    now = json.loads((PAGES / "verdicts.json").read_text())  # written with the pages
    assert now["items"] == SNAPSHOT["items"]
    changed = {
        k: (v, now["targets"].get(k))
        for k, v in SNAPSHOT["targets"].items()
        if now["targets"].get(k) != v
    }
    assert changed == {} and now["targets"].keys() == SNAPSHOT["targets"].keys()


def test_the_index_shows_each_items_verdict():
    index = (REPO / "REPRODUCTION.md").read_text()
    shown = {}
    for paper, item, verdict in re.findall(
        # a paper's own items, and those outside it (after a paper column)
        r"^\|(?: [^|\[]+ \|)? \[([^\]]+)\]\(docs/reproduction/(\w+)\.md#[\w-]+\) \| \*\*([\w "
        r"]+)\*\* \|",
        index,
        re.M,
    ):
        shown[f"{item}: {paper}"] = verdict
    want = {k: v for k, v in SNAPSHOT["items"].items() if not k.startswith("ci:")}
    assert shown == want
    assert len(index.encode()) <= 60_000 and max(map(len, index.splitlines())) <= 400


def test_each_paper_page_shows_every_targets_verdict():
    by_paper: dict[str, dict[str, str]] = {}
    for key, status in SNAPSHOT["targets"].items():
        paper, target = key.split(":", 1)
        by_paper.setdefault(paper, {})[target] = status
    for paper, targets in by_paper.items():
        page = (PAGES / f"{paper}.md").read_text()
        noted = {}
        for first, also, status in _NOTE.findall(page):
            for t in [first, *(also.split(", ") if also else [])]:
                noted[t] = status
        assert noted == {t: s for t, s in targets.items() if s != "pass"}, paper
        rows = [line for line in page.splitlines() if line.startswith("| ")]
        marks = Counter(m for line in rows for m in re.findall(r"[✓✗ℹ∅]", line))
        assert marks["✓"] == Counter(targets.values())["pass"], paper
        cells = [c for line in rows for c in line.split(" | ")]
        assert max(map(len, cells)) <= 100, paper  # long texts live in the notes
