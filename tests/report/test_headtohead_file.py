"""docs/headtohead.md is a pure function of the committed ledger and treebench/conf/: regenerating it changes nothing."""

from __future__ import annotations

import difflib

from tests.conftest import REPO, run_cli


def _regenerate(tmp_path, name: str, hash_seed: str):
    out = tmp_path / name / "docs" / "headtohead.md"
    out.parent.mkdir(parents=True)
    env = {
        "TREEBENCH_LEDGER": str(REPO / "results"),
        "TREEBENCH_OUTPUTS": str(tmp_path / "o"),
        "PYTHONHASHSEED": hash_seed,  # set iteration order must not reach the files
    }
    r = run_cli(["report", "--headtohead", "--out", str(out)], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    return out


def test_committed_headtohead_md_regenerates_byte_identical(tmp_path):
    a = _regenerate(tmp_path, "a", "1")
    committed = (REPO / "docs" / "headtohead.md").read_text()
    if a.read_text() != committed:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), a.read_text().splitlines(True), "committed", "now"
                )
            )[:60]
        )
        raise AssertionError(
            "docs/headtohead.md differs from what the ledger and treebench/conf/ give; run "
            "`treebench report --headtohead` and commit it:\n" + diff
        )
    b = _regenerate(tmp_path, "b", "2")
    figs = sorted(p.name for p in a.parent.glob("headtohead/*.png"))
    assert figs == sorted(p.name for p in b.parent.glob("headtohead/*.png"))
    committed_figs = sorted(p.name for p in (REPO / "docs" / "headtohead").glob("*.png"))
    assert figs == committed_figs, "docs/headtohead/ holds other figures than the report draws"
    for f in figs:  # the figures are deterministic too
        assert (a.parent / "headtohead" / f).read_bytes() == (
            b.parent / "headtohead" / f
        ).read_bytes(), f
