"""REPRODUCTION.md (the short index) and one page per paper, docs/reproduction/<paper>.md."""

from __future__ import annotations

import json
from pathlib import Path

from treebench.report.checks import FAIL, INFO, PASS, SKIP
from treebench.report.documents.evaluation import GUARD, Evaluation, ExperimentResult, PaperResult
from treebench.report.documents.render import render
from treebench.report.documents.tables import (
    Figure,
    ItemTable,
    figure_list,
    item_tables,
    short_label,
)
from treebench.report.paper import short_of_runs, short_otherwise
from treebench.results.table import core_hours

#: the folder of the per-paper pages and their figures, relative to REPRODUCTION.md
PAGES = "docs/reproduction"


def measured_part(e: ExperimentResult) -> str:
    """Return what part of the experiment's core-hours the runs measured as CPU time.

    "" when all.
    """
    hours, cpu = e.hours, core_hours(e.rows, measured=True)
    if cpu >= hours:
        return ""
    if cpu == 0:
        return " (wall-clock × threads: no run measured its CPU time)"
    from treebench.report.select import core_time

    return f" ({core_time(cpu)} of it measured CPU time, the rest wall-clock × threads)"


def experiment_facts(e: ExperimentResult) -> dict:
    """Return what ran for an experiment and how close it came, as the pages state it."""
    rows, counts = e.rows, e.counts
    facts = {
        "name": e.name,
        "title": e.spec.get("title", e.name),
        "config": "" if e.config is None else "present" if e.config.exists() else "not written yet",
        "records": len(rows),
        "targets": len(e.res),
        "counts": ", ".join(f"{counts.get(s, 0)} {s}" for s in (PASS, FAIL, INFO, SKIP)),
        "close": "",
    }
    if len(rows):
        facts.update(
            ok=int((rows["status"] == "ok").sum()),
            profiles=", ".join(f"{k}: {v}" for k, v in rows["profile"].value_counts().items()),
            methods=", ".join(sorted(rows["method"].unique())),
            datasets=", ".join(sorted(rows["dataset"].unique())),
            seeds=", ".join(map(str, sorted(rows["seed"].unique()))),
            hours=e.hours,
            measured=measured_part(e),
        )
    val = (
        e.res[(e.res["kind"] == "value") & e.res["status"].isin([PASS, FAIL])]
        if len(e.res)
        else e.res
    )
    pct = val[val["units"] == "percent"] if len(val) else val
    if len(pct):
        d = 100 * pct["delta"].abs()
        facts["close"] = (
            f"; median |Δ| over {len(pct)} checked rates {d.median():.2f} points (max "
            f"{d.max():.2f})"
        )
    return facts


def _cell(c, numbers: bool = True) -> str:
    if not c.target:
        return ""
    bits = [c.text if numbers else "", c.mark]
    if c.runs:
        bits.append(c.runs)
    if c.note is not None:
        bits.append(f"[{c.note}](#n{c.note})")
    return " ".join(b for b in bits if b)


def _shape(t: ItemTable) -> tuple[ItemTable, list, list]:
    """Return an item with the Markdown rows of its grid and of its claims."""
    grid = [[label, *map(_cell, cells)] for label, cells in t.rows]
    claims = [[c.what, c.on, c.target, c.paper, c.ours, _cell(c.cell, False)] for c in t.claims]
    return t, grid, claims


def _link(p: PaperResult, t: ItemTable) -> str:
    return f"[{t.item}]({PAGES}/{p.name}.md#{t.anchor})"


def paper_page(p: PaperResult, tables: list[ItemTable], stamp: str) -> str:
    """docs/reproduction/<paper>.md: every item in the paper's layout, its notes, what ran."""
    runs = short_of_runs(p.res)
    if len(runs):
        runs["cell"] = runs["cell"].map(short_label)
    other = short_otherwise(p.res)
    return render(
        "paper.md.j2",
        p=p,
        stamp=stamp,
        tables=[_shape(t) for t in tables],
        experiments=[experiment_facts(e) for e in p.experiments],
        short_runs_header=[c for c in runs.columns if c != "paper"],
        short_runs=runs.drop(columns="paper").values.tolist() if len(runs) else [],
        short_other=other[["target", "lacks"]].values.tolist() if len(other) else [],
    )


def index_page(ev: Evaluation, tables: dict[str, list[ItemTable]]) -> str:
    """REPRODUCTION.md: the verdict words, the overview, one row per paper item, the CI guard."""
    papers = [p for p in ev.papers if p.name != GUARD]
    overview = [
        [f"[{p.short}]({PAGES}/{p.name}.md)", *(p.overview[k] for k in _OVERVIEW)] for p in papers
    ]

    def row(p: PaperResult, t: ItemTable) -> list[str]:
        return [_link(p, t), f"**{t.verdict}**", f"{t.within} of {t.cells_n}", t.why]

    rows = {p.name: [row(p, t) for t in tables[p.name] if not t.outside] for p in papers}
    outside = [
        [p.short, *row(p, t), t.outside] for p in papers for t in tables[p.name] if t.outside
    ]
    guard = next((p for p in ev.papers if p.name == GUARD), None)
    return render(
        "reproduction.md.j2",
        ev=ev,
        papers=papers,
        rows=rows,
        outside=outside,
        overview=overview,
        guard=guard,
    )


_OVERVIEW = ("items reproduced", "runs", "targets", PASS, FAIL, INFO, SKIP, "records", "core-h")


def paper_figures(ev: Evaluation, figures_dir: Path | None) -> dict[str, dict[str, list[Figure]]]:
    """Each paper's experiments' figures.

    With ``figures_dir`` drawn there (old PNGs removed: the folder is the pages' own). Reports
    ``experiments' figures`` (:mod:`treebench.methods.progress`).
    """
    from treebench.methods.progress import report

    if figures_dir is not None:
        for old in Path(figures_dir).glob("*/*.png"):
            old.unlink()
    n = sum(len(p.experiments) for p in ev.papers)
    out: dict[str, dict[str, list[Figure]]] = {}
    done = 0
    for p in ev.papers:
        out[p.name] = {}
        for e in p.experiments:
            report("experiments' figures", done, n)
            out[p.name][e.name] = figure_list(e, figures_dir)
            done += 1
    report("experiments' figures", n, n)
    return out


def write_reproduction(ev: Evaluation, dest: Path, draw: bool = True) -> list[Path]:
    """Write REPRODUCTION.md at ``dest`` and the per-paper pages; return the files.

    The pages, their figures and the verdict table (``verdicts.json``) go under
    ``dest.parent/docs/reproduction``.
    """
    pages = dest.parent / PAGES
    pages.mkdir(parents=True, exist_ok=True)
    figs = paper_figures(ev, pages if draw else None)
    tables = {p.name: item_tables(p, figs[p.name]) for p in ev.papers}
    written = []
    for p in ev.papers:
        path = pages / f"{p.name}.md"
        path.write_text(paper_page(p, tables[p.name], ev.stamp))
        written.append(path)
    verdicts = pages / "verdicts.json"
    verdicts.write_text(json.dumps(ev.verdicts(), indent=1, sort_keys=True) + "\n")
    dest.write_text(index_page(ev, tables))
    return [dest, *written, verdicts]
