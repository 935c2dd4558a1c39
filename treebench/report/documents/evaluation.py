"""One evaluation of every paper's targets against the records, shared by every document.

The verdict rows are :func:`~treebench.report.checks.run_checks`' and the items
:func:`~treebench.report.paper.paper_items`'; nothing here decides a verdict, so a change of the
evaluation rules reaches every page unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from treebench.report.checks import Availability, run_checks
from treebench.report.paper import paper_items, paper_overview
from treebench.report.targets import PaperSpec, Target
from treebench.results.table import core_hours

#: the order the papers are read in (the mission's) and the names they go by; paper files not
#: named come after, by name
PAPER_ORDER = {
    "e2edt": "E2EDT",
    "redt": "ReDT",
    "onestage": "One-Stage",
    "hinge": "RHF",
    "tnt": "TnT",
}
#: the paper file of the CI guards: on its own page, after the papers
GUARD = "ci"


@dataclass
class ExperimentResult:
    """The targets of one paper's experiment, their verdict rows and the records behind them."""

    name: str
    spec: dict
    targets: list[Target]
    res: pd.DataFrame
    rows: pd.DataFrame
    config: Path | None = None

    @property
    def counts(self) -> dict:
        """Return the number of targets per status."""
        return self.res["status"].value_counts().to_dict() if len(self.res) else {}

    @property
    def hours(self) -> float:
        """Return the core-hours of the runs behind the results."""
        return core_hours(self.rows)


@dataclass
class PaperResult:
    """One paper's experiments, every verdict row, its items and its overview row."""

    spec: PaperSpec
    experiments: list[ExperimentResult]
    res: pd.DataFrame
    items: pd.DataFrame
    overview: dict
    deviations: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Return the paper's name."""
        return self.spec.paper

    @property
    def title(self) -> str:
        """Return the paper's title."""
        return self.spec.title

    @property
    def notes(self) -> str:
        """Return the paper file's notes."""
        return (self.spec.notes or "").strip()

    @property
    def short(self) -> str:
        """The name the paper goes by (E2EDT, ..., CI guard)."""
        return PAPER_ORDER.get(self.name, "CI guard" if self.name == GUARD else self.name)

    def targets(self) -> dict[str, Target]:
        """Return the paper's targets by id."""
        return {t.id: t for t in self.spec.targets}


@dataclass
class Evaluation:
    """Every paper's results, papers in :data:`PAPER_ORDER` and the CI guards last."""

    papers: list[PaperResult]
    records: pd.DataFrame
    stamp: str

    def paper(self, name: str) -> PaperResult:
        """Return the result of paper ``name``."""
        return next(p for p in self.papers if p.name == name)

    def verdicts(self) -> dict:
        """Return ``{"targets": {id: status}, "items": {"paper: item": verdict}}`` (sorted keys).

        It is the snapshot a rendering change must leave as it is.
        """
        targets, items = {}, {}
        for p in self.papers:
            for _, r in p.res.iterrows():
                targets[f"{p.name}:{r['id']}"] = r["status"]
            for _, r in p.items.iterrows():
                items[f"{p.name}: {r['item']}"] = r["verdict"]
        return {"targets": dict(sorted(targets.items())), "items": dict(sorted(items.items()))}


def ordered(papers: list[PaperSpec]) -> list[PaperSpec]:
    """Papers in :data:`PAPER_ORDER`, the rest by name, the CI guards last."""

    def key(p: PaperSpec):
        if p.paper == GUARD:
            return (2, 0, p.paper)
        if p.paper in PAPER_ORDER:
            return (0, list(PAPER_ORDER).index(p.paper), p.paper)
        return (1, 0, p.paper)

    return sorted(papers, key=key)


def _availability(avail: Availability | None, p: PaperSpec) -> Availability:
    return Availability(
        getattr(avail, "datasets", None),
        getattr(avail, "methods", None),
        {**(getattr(avail, "unavailable", {}) or {}), **p.unavailable},
        getattr(avail, "plans", None),
    )


def evaluate(
    df: pd.DataFrame,
    papers: list[PaperSpec],
    avail: Availability | None = None,
    conf_dir: str | Path | None = None,
    stamp: str = "the given records",
) -> Evaluation:
    """Check every paper's targets against ``df`` once (per paper and experiment).

    Reports ``papers checked`` (:mod:`treebench.methods.progress`).
    """
    from treebench.methods.progress import report

    out = []
    todo = ordered(papers)
    for i, p in enumerate(todo):
        report("papers checked", i, len(todo))
        a = _availability(avail, p)
        exps = []
        for exp in dict.fromkeys([*p.experiments, *(t.experiment for t in p.targets)]):
            ts = p.for_experiment(exp)
            rows = (
                df[df["experiment"] == exp]
                if not df.empty and "experiment" in df
                else pd.DataFrame()
            )
            cfg = Path(conf_dir) / "experiment" / f"{exp}.yaml" if conf_dir else None
            exps.append(
                ExperimentResult(
                    exp, p.experiments.get(exp, {}), ts, run_checks(ts, df, a), rows, cfg
                )
            )
        res = pd.concat([e.res for e in exps], ignore_index=True) if exps else pd.DataFrame()
        ran = pd.concat([e.rows for e in exps]) if exps else pd.DataFrame()
        n_runs = ran["key"].nunique() if len(ran) else 0
        row, devs = paper_overview(p, res, n_runs, core_hours(ran))
        out.append(PaperResult(p, exps, res, paper_items(res, p.items), row, devs))
    report("papers checked", len(todo), len(todo))
    return Evaluation(out, df, stamp)
