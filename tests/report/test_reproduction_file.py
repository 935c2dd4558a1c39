"""The generated reports are pure functions of the committed ledger and treebench/conf/: regenerating
REPRODUCTION.md (``report --reproduction``), docs/headtohead.md (``report --headtohead``) or
docs/benchmark.md (``report --benchmark``) changes nothing, figures included."""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import REPO, run_cli

#: (report flag, the committed file, its figures relative to the file's folder)
REPORTS = {
    "reproduction": ("--reproduction", "REPRODUCTION.md", "docs/reproduction/*/*.png"),
    "headtohead": ("--headtohead", "docs/headtohead.md", "headtohead/*.png"),
    "benchmark": ("--benchmark", "docs/benchmark.md", "benchmark/*"),  # + its per-dataset page
}


def _regenerate(tmp_path, name: str, hash_seed: str, flag: str, rel: str):
    out = tmp_path / name / rel
    out.parent.mkdir(parents=True)
    env = {
        "TREEBENCH_LEDGER": str(REPO / "results"),
        "TREEBENCH_OUTPUTS": str(tmp_path / "o"),
        "PYTHONHASHSEED": hash_seed,  # set iteration order must not reach the files
    }
    r = run_cli(["report", flag, "--out", str(out)], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    return out


@pytest.mark.parametrize("report", list(REPORTS))
def test_committed_report_regenerates_byte_identical(tmp_path, report):
    flag, rel, figures = REPORTS[report]
    a = _regenerate(tmp_path, "a", "1", flag, rel)
    committed = (REPO / rel).read_text()
    if a.read_text() != committed:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), a.read_text().splitlines(True), "committed", "now"
                )
            )[:60]
        )
        raise AssertionError(
            f"{rel} differs from what the ledger and treebench/conf/ give; run "
            f"`treebench report {flag}` and commit it:\n" + diff
        )
    b = _regenerate(tmp_path, "b", "2", flag, rel)
    figs = sorted(p.relative_to(a.parent) for p in a.parent.glob(figures))
    assert figs == sorted(p.relative_to(b.parent) for p in b.parent.glob(figures))
    assert figs == sorted(
        p.relative_to((REPO / rel).parent) for p in (REPO / rel).parent.glob(figures)
    ), f"the committed figures of {rel} are not the ones it draws"
    for f in figs:  # the figures are deterministic too
        assert (a.parent / f).read_bytes() == (b.parent / f).read_bytes(), f
        if f.suffix == ".md":  # a page of the report beside it: as committed
            assert (a.parent / f).read_text() == ((REPO / rel).parent / f).read_text(), f
