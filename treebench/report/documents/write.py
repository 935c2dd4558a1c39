"""The committed documents written from the ledger, each stamped with the records it read.

``treebench report --reproduction``, ``--headtohead``, ``--benchmark`` and ``treebench site``.
"""

from __future__ import annotations

from pathlib import Path

from treebench.config import CONF_DIR, PROJECT_DIR


def evaluation(led, store_dir: Path | None, papers=None):
    """Check every paper's targets once against the ledger; stamp them with the records' hash.

    ``papers`` defaults to every paper file; with ``store_dir``, the local store is read too. The
    stamp is the records' content hash.
    """
    from treebench.report.checks import Availability
    from treebench.report.documents.evaluation import evaluate
    from treebench.report.targets import load_all
    from treebench.results import collect

    df = collect(store_dir, ledger=led)
    stamp = f"ledger `results/` {led.content_hash()} ({len(led)} records)"
    if store_dir is not None:
        stamp += " + the local store (not committed)"
    papers = load_all(CONF_DIR) if papers is None else papers
    return evaluate(df, papers, Availability.local(), CONF_DIR, stamp=stamp)


def write_reproduction(led, store_dir: Path | None, out: str | None, papers=None) -> str:
    """REPRODUCTION.md and docs/reproduction/ (or at ``out``); returns the line that says so."""
    from treebench.progress import showing
    from treebench.report.documents.markdown import write_reproduction as write

    with showing("report --reproduction"):
        ev = evaluation(led, store_dir, papers)
        dest = Path(out) if out else PROJECT_DIR / "REPRODUCTION.md"
        files = write(ev, dest)
    return (
        f"written: {dest} and {len(files) - 1} files under {dest.parent / 'docs' / 'reproduction'} "
        f"({len(ev.records)} records, {len(ev.papers)} paper files; {ev.stamp})"
    )


def _experiment_stamp(led, experiment: str, store_dir: Path | None) -> tuple[list[dict], str]:
    """Return the ledger's records of ``experiment`` (any label) and the stamp naming their hash."""
    from treebench.results.ledger import records_hash

    mine = [
        r
        for r in led.records()
        if experiment in [r.get("experiment"), *(r.get("also_experiments") or [])]
    ]
    stamp = (
        f"the ledger's `{experiment}` records ({len(mine)} records, content hash "
        f"{records_hash(mine)})"
    )
    if store_dir is not None:
        stamp += " + the local store (not committed)"
    return mine, stamp


def write_headtohead(led, store_dir: Path | None, out: str | None, papers=None) -> str:
    """Write docs/headtohead.md and docs/headtohead/*.png from the ledger; return the stamp line.

    With ``store_dir``, the local store is read too; the pages are stamped with the hash of the
    records read, and the returned line says so (``papers`` is not read: the page has its own
    targets).
    """
    from treebench.report.headtohead import EXPERIMENT, headtohead_markdown
    from treebench.results import collect

    df = collect(store_dir, ledger=led, experiment=EXPERIMENT)
    _, stamp = _experiment_stamp(led, EXPERIMENT, store_dir)
    dest = Path(out) if out else PROJECT_DIR / "docs" / "headtohead.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = headtohead_markdown(
        df, CONF_DIR, stamp=stamp, figures_dir=dest.parent / dest.stem, figures_link=dest.stem
    )
    dest.write_text(text)
    return f"written: {dest} ({len(df)} records; {stamp})"


def write_benchmark(led, store_dir: Path | None, out: str | None, papers=None) -> str:
    """Write docs/benchmark.md, docs/benchmark/datasets.md and the CD diagrams from the ledger.

    From its ``benchmark`` records (and with ``store_dir``, the local store's); returns the line
    that says so (``papers`` is not read).
    """
    from treebench.report.benchmark import EXPERIMENT, benchmark_markdown, evaluate, suite_plan
    from treebench.results import collect
    from treebench.results.store import Store

    df = collect(store_dir, ledger=led, experiment=EXPERIMENT)
    mine, stamp = _experiment_stamp(led, EXPERIMENT, store_dir)
    records = list(mine)
    if store_dir is not None:
        records += [r for r in Store(store_dir).records() if r.get("experiment") == EXPERIMENT]
    dest = Path(out) if out else PROJECT_DIR / "docs" / "benchmark.md"
    pages = benchmark_markdown(
        evaluate(df, records, suite_plan(CONF_DIR)),
        stamp,
        figures_dir=dest.parent / dest.stem,
        figures_link=dest.stem,
    )
    for rel, text in pages.items():
        path = dest if rel == "benchmark.md" else dest.parent / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return f"written: {dest} and {dest.parent / dest.stem}/ ({len(df)} records; {stamp})"
