"""The generated reports are pure functions of the committed ledger and treebench/conf/.

Regenerating REPRODUCTION.md with its per-paper pages (``report --reproduction``),
docs/headtohead.md (``report --headtohead``) or docs/benchmark.md with its per-dataset page
(``report --benchmark``) changes nothing, figures included.
"""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import REPO, run_cli

#: (report flag, the committed files, their figures (paths relative to the repository), whether
#: the figures are compared with the committed ones' bytes, else with a second run's)
REPORTS = {
    "reproduction": (
        "--reproduction",
        "REPRODUCTION.md",
        ("docs/reproduction/*.md", "docs/reproduction/verdicts.json"),
        "docs/reproduction/*/*.png",
        True,
    ),
    "headtohead": ("--headtohead", "docs/headtohead.md", (), "docs/headtohead/*.png", False),
    "benchmark": (
        "--benchmark",
        "docs/benchmark.md",
        ("docs/benchmark/*.md",),
        "docs/benchmark/*.png",
        False,
    ),
}


def _regenerate(tmp_path, flag: str, rel: str, hash_seed: str = "1"):
    """One run of the report into a copy of the repository's layout.

    The committed files were made under another hash seed, so equal bytes also say no set order
    reaches them.
    """
    out = tmp_path / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {
        "TREEBENCH_LEDGER": str(REPO / "results"),
        "TREEBENCH_OUTPUTS": str(tmp_path / "o"),
        "PYTHONHASHSEED": hash_seed,
    }
    # no timeout: on a loaded machine the regeneration takes minutes, and a hang is CI's to end
    r = run_cli(["report", flag, "--out", str(out)], cwd=tmp_path, env=env, timeout=None)
    assert r.returncode == 0, r.stderr + r.stdout
    return out


def _diff(committed: str, now: str) -> str:
    return "".join(
        list(
            difflib.unified_diff(
                committed.splitlines(True), now.splitlines(True), "committed", "now"
            )
        )[:60]
    )


@pytest.mark.slow
@pytest.mark.parametrize("report", list(REPORTS))
def test_committed_report_regenerates_byte_identical(tmp_path, report):
    flag, rel, pages, figures, as_committed = REPORTS[report]
    _regenerate(tmp_path, flag, rel)
    files = [rel] + sorted(
        str(p.relative_to(REPO)) for pattern in pages for p in REPO.glob(pattern)
    )
    made = sorted(str(p.relative_to(tmp_path)) for pattern in pages for p in tmp_path.glob(pattern))
    assert sorted(files[1:]) == made, "the committed pages are not the ones the report writes"
    for f in files:
        committed, now = (REPO / f).read_text(), (tmp_path / f).read_text()
        if now != committed:
            raise AssertionError(
                f"{f} differs from what the ledger and treebench/conf/ give; run "
                f"`treebench report {flag}` and commit it:\n" + _diff(committed, now)
            )
    figs = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob(figures))
    assert figs == sorted(str(p.relative_to(REPO)) for p in REPO.glob(figures)), (
        f"the committed figures of {rel} are not the ones it draws"
    )
    other = REPO
    if not as_committed:  # a second run, under another hash seed
        other = tmp_path / "b"
        _regenerate(other, flag, rel, "2")
    for f in figs:  # the figures are deterministic too
        assert (tmp_path / f).read_bytes() == (other / f).read_bytes(), f
