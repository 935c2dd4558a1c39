"""REPRODUCTION.md is a pure function of the committed ledger and conf/: regenerating it changes nothing."""

from __future__ import annotations

from tests.conftest import REPO, run_cli


def test_committed_reproduction_md_regenerates_byte_identical(tmp_path):
    out = tmp_path / "REPRODUCTION.md"
    env = {"TREEBENCH_LEDGER": str(REPO / "results"), "TREEBENCH_OUTPUTS": str(tmp_path / "o")}
    r = run_cli(["report", "--reproduction", "--out", str(out)], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    committed = (REPO / "REPRODUCTION.md").read_text()
    regenerated = out.read_text()
    if regenerated != committed:
        import difflib

        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), regenerated.splitlines(True), "committed", "now"
                )
            )[:60]
        )
        raise AssertionError(
            "REPRODUCTION.md differs from what the ledger and conf/ give; run "
            "`treebench report --reproduction` and commit it:\n" + diff
        )
