"""REPRODUCTION.md is a pure function of the committed ledger and treebench/conf/: regenerating it changes nothing."""

from __future__ import annotations

import difflib

from tests.conftest import REPO, run_cli


def _regenerate(tmp_path, name: str, hash_seed: str):
    out = tmp_path / name / "REPRODUCTION.md"
    out.parent.mkdir()
    env = {
        "TREEBENCH_LEDGER": str(REPO / "results"),
        "TREEBENCH_OUTPUTS": str(tmp_path / "o"),
        "PYTHONHASHSEED": hash_seed,  # set iteration order must not reach the files
    }
    r = run_cli(["report", "--reproduction", "--out", str(out)], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    return out


def test_committed_reproduction_md_regenerates_byte_identical(tmp_path):
    a = _regenerate(tmp_path, "a", "1")
    committed = (REPO / "REPRODUCTION.md").read_text()
    if a.read_text() != committed:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), a.read_text().splitlines(True), "committed", "now"
                )
            )[:60]
        )
        raise AssertionError(
            "REPRODUCTION.md differs from what the ledger and treebench/conf/ give; run "
            "`treebench report --reproduction` and commit it:\n" + diff
        )
    b = _regenerate(tmp_path, "b", "2")
    figs = sorted(p.relative_to(a.parent) for p in a.parent.glob("docs/reproduction/*/*.png"))
    assert figs == sorted(
        p.relative_to(b.parent) for p in b.parent.glob("docs/reproduction/*/*.png")
    )
    for f in figs:  # the figures are deterministic too
        assert (a.parent / f).read_bytes() == (b.parent / f).read_bytes(), f
