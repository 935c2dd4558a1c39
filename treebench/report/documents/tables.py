"""A paper's items as tables in the paper's own layout: cells, claims, figures and notes.

Built from an :class:`~treebench.report.documents.evaluation.PaperResult` (verdict rows and items as
the evaluation made them) and rendered by the Markdown pages and the HTML site alike.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report.checks import FAIL, INFO, PASS, SKIP, display_frame, fmt_num
from treebench.report.documents.evaluation import ExperimentResult, PaperResult
from treebench.report.paper import _item

#: the mark after a cell's numbers, by verdict
MARKS = {PASS: "✓", FAIL: "✗", INFO: "ℹ", SKIP: "∅"}
#: an item verdict's colour class (site) and word (pages)
ITEM_CLASS = {
    "reproduced": "pass",
    "FAIL": "fail",
    "short": "short",
    "missing data": "missing",
    "partly": "short",
    "structural only": "info",
    "not checked": "info",
}
_RUNS = re.compile(r"(\d+) of (\d+) runs")
_REDUCED = re.compile(r"(?:^|;\s*)reduced:")
_EVIDENCE = re.compile(r"docs/methods/[\w.-]+\.md")


@dataclass
class Cell:
    """One number of ours beside the paper's: ``text`` "ours ± SD (paper)", its verdict and note."""

    text: str = ""
    status: str = ""
    target: str = ""
    runs: str = ""  # "3/5 runs" when short of the paper's runs
    note: int | None = None  # the number of its note, if it has one
    reason: str = ""  # the note's text (the site shows it on hover)

    @property
    def mark(self) -> str:
        """Return the mark of the cell's status."""
        return MARKS.get(self.status, "")


@dataclass
class Claim:
    """A relation, a statistical test or a value outside the item's grid, one row each."""

    target: str
    what: str
    on: str  # the blocks and metric: "letter · test_accuracy"
    paper: str
    ours: str
    cell: Cell


@dataclass
class Note:
    """Why a cell is not a plain pass: its target, verdict, the row's note and the evidence."""

    number: int
    target: str
    status: str
    text: str
    evidence: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)  # further targets with the same note


@dataclass
class Figure:
    """A declared figure of an experiment, drawn beside the item whose numbers it shows."""

    experiment: str
    spec: dict
    caption: str
    png: str = ""  # path relative to the figures folder (<experiment>/<name>.png)


@dataclass
class ItemTable:
    """One paper item (table, figure or in-text claim) shaped like the paper's."""

    paper: str
    item: str
    anchor: str
    verdict: str
    within: int
    cells_n: int
    passed: int
    experiments: list[str]
    why: str
    reason: str
    outside: str = ""  # what the item is when it is not the paper's own (kept out of its count)
    caption: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def css(self) -> str:
        """Return the CSS class of the item's verdict."""
        return ITEM_CLASS.get(self.verdict, "info")

    def cells(self) -> list[Cell]:
        """Return every cell of the item that checks a target."""
        return [c for _, cs in self.rows for c in cs if c.target] + [c.cell for c in self.claims]


def anchor(text: str) -> str:
    """Return a GitHub-style heading anchor: lower case, spaces to '-', punctuation dropped."""
    s = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return s.replace(" ", "-")


def _within(r: pd.Series) -> bool | None:
    """Whether ours is within the tolerance (None: not a number of ours the paper checks)."""
    if r["status"] == PASS:
        return True
    if r["status"] == FAIL:
        return False
    if r["status"] != INFO or str(r["note"]).startswith("set by config"):
        return None
    if not _REDUCED.search(str(r["note"])):
        return None  # a quoted number (check: false)
    ours, paper = r["ours"], r["paper_value"]
    if not isinstance(ours, float) or math.isnan(ours) or paper is None:
        return None
    if r["kind"] == "relation":
        return bool(ours >= paper - 1e-12)
    if r["kind"] != "value" or math.isnan(r["tol"]):
        return None
    d, tol, op = ours - paper, r["tol"], r["op"]
    if op == "~":
        return abs(d) <= tol + 1e-12
    return d >= -tol - 1e-12 if op in (">=", ">") else d <= tol + 1e-12


def _runs(note: str) -> str:
    m = _RUNS.search(note or "")
    return f"{m.group(1)}/{m.group(2)} runs" if m else ""


def _value_text(r: pd.Series) -> str:
    u = r["units"]
    ours = fmt_num(r["ours"], u)
    if u != "count" and isinstance(r["ours_sd"], float) and not np.isnan(r["ours_sd"]):
        ours += f" ± {fmt_num(r['ours_sd'], u)}"
    return f"{ours} ({fmt_num(r['paper_value'], u)})"


def short_label(label: str, at_most: int = 80) -> str:
    """Return a selection's label without its best-of clause (the note and the paper file state it).

    Past ``at_most`` characters its settings read "[…]" (the target id names them).
    """
    label = re.sub(r",? ?best [\w/]+ by \w+ [\w.]+", "", label).replace("[]", "")
    return re.sub(r"\[[^\]]*\]", "[…]", label) if len(label) > at_most else label


def _row_label(r: pd.Series, first_exp: str) -> str:
    label = short_label(str(r["method"]))
    if r["experiment"] != first_exp:
        label += f" ({r['experiment']})"
    return label


def _layout(exps: list[ExperimentResult], item: str) -> dict:
    """Return the declared layout (``experiments.<name>.tables``) whose ``table`` is this item.

    Else columns by dataset.
    """
    for e in exps:
        for tab in e.spec.get("tables") or []:
            tables = tab["table"] if isinstance(tab["table"], list) else [tab["table"]]
            if item in tables:
                return tab
    return {"cols": "dataset"}


def _sentence(verdict: str, it: pd.DataFrame, reason: str = "") -> str:
    """One sentence of why an item is not reproduced, for the index (the notes say it all)."""
    if verdict == "reproduced":
        return ""
    note = it["note"].fillna("").astype(str)
    if verdict == "FAIL":
        first = it[it["status"] == FAIL].iloc[0]
        n = int((it["status"] == FAIL).sum())
        lead = f"{n} cell{'s' if n > 1 else ''} outside the tolerance"
    elif verdict == "short":
        first = it[note.str.contains(_REDUCED)].iloc[0]
        reduced = str(first["note"])[_REDUCED.search(str(first["note"])).end() :]
        return f"short of the paper's protocol; {first['id']}: {first_clause(reduced)}"
    elif verdict == "missing data":
        first = it[(it["status"] == SKIP) & ~note.str.startswith("reference only:")].iloc[0]
        lead = "a number cannot run here"
    elif verdict in ("partly", "structural only"):
        return (
            f"{verdict}: {first_clause(reason.split(f'{verdict}: ', 1)[-1])}" if reason else verdict
        )
    else:
        return "info only: no number of it is checked."
    why = first_clause(str(first["note"])) or "unexplained"
    return f"{lead}; {first['id']}: {why}"


def first_clause(text: str, at_most: int = 150) -> str:
    """Return the text up to its first top-level ';' (outside parentheses), cut at ``at_most``.

    The cut is at a word past ``at_most`` characters ("…").
    """
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth <= 0:
            text = text[:i]
            break
    text = text.strip()
    if len(text) > at_most:
        text = text[:at_most].rsplit(" ", 1)[0].rstrip(",:;(") + " …"
    return text


def item_tables(p: PaperResult, figures: dict[str, list[Figure]] | None = None) -> list[ItemTable]:
    """Every item of the paper, in the paper file's order, with its cells numbered into notes."""
    if p.res.empty:
        return []
    res = p.res.assign(item=p.res.apply(_item, axis=1))
    shown = display_frame(p.res).set_index(p.res.index)
    items = p.items.set_index("item")
    exps = {e.name: e for e in p.experiments}
    placed: set[tuple[str, str]] = set()
    out: list[ItemTable] = []
    number = 0
    for name, it in res.groupby("item", sort=False):
        row = items.loc[name]
        within = [w for w in (_within(r) for _, r in it.iterrows()) if w is not None]
        exp_names = list(dict.fromkeys(it["experiment"]))
        tab = ItemTable(
            paper=p.name,
            item=str(name),
            anchor=anchor(str(name)),
            verdict=row["verdict"],
            within=sum(within),
            cells_n=len(within),
            passed=int(row[PASS]),
            experiments=exp_names,
            why=_sentence(row["verdict"], it, str(row["what keeps it from reproduced"])),
            reason=str(row["what keeps it from reproduced"]),
            outside=str(row.get("outside the paper", "") or ""),
        )
        lay = _layout([exps[e] for e in exp_names], str(name))
        tab.caption = lay.get("caption", "")
        cols_key = lay.get("cols", "dataset")
        grid = it[it["kind"] == "value"]
        metrics = list(dict.fromkeys([*(lay.get("metrics") or []), *grid["metric"]]))
        labels = lay.get("metric_labels") or {}
        col_vals = list(dict.fromkeys(grid[cols_key].fillna("all"))) if len(grid) else []

        def col_name(c, met, metrics=metrics, labels=labels):
            return f"{c} {labels.get(met, met)}" if len(metrics) > 1 else str(c)

        columns = [col_name(c, m) for c in col_vals for m in metrics]
        cells: dict[str, dict[str, Cell]] = {}
        for idx, r in it.iterrows():
            note = str(r["note"] or "")
            cell = Cell(status=r["status"], target=r["id"], runs=_runs(note), reason=note)
            if r["status"] != PASS:
                same = next(
                    (n for n in tab.notes if (n.text, n.status) == (note, r["status"])), None
                )
                if same is None:
                    number += 1
                    evidence = sorted(set(_EVIDENCE.findall(note)))
                    same = Note(number, r["id"], r["status"], note, evidence)
                    tab.notes.append(same)
                else:
                    same.also.append(r["id"])
                cell.note = same.number
            if idx in grid.index:
                cell.text = _value_text(r)
                label = _row_label(r, exp_names[0])
                cname = col_name(
                    r[cols_key] if isinstance(r[cols_key], str) else "all", r["metric"]
                )
                if cname in cells.get(label, {}):  # a second number in one place: its own row
                    label = f"{label} ({r['id']})"
                cells.setdefault(label, {})[cname] = cell
            else:
                s = shown.loc[idx]
                cell.text = s["ours"]
                on = f"{s['dataset']} · {s['metric']}" if s["dataset"] else s["metric"]
                tab.claims.append(
                    Claim(r["id"], short_label(s["method"]), on, s["paper"], s["ours"], cell)
                )
        used = [c for c in columns if any(c in row for row in cells.values())]
        tab.columns = used
        tab.rows = [(label, [row.get(c, Cell()) for c in used]) for label, row in cells.items()]
        for e in exp_names:
            for f in (figures or {}).get(e, []):
                key = (e, f.spec["name"])
                title = f"{f.spec.get('title', '')} {f.caption}"
                if key not in placed and re.search(rf"\b{re.escape(str(name))}\b", title):
                    tab.figures.append(f)
                    placed.add(key)
        out.append(tab)
    for e in p.experiments:  # a figure naming no item sits beside its experiment's first item
        for f in (figures or {}).get(e.name, []):
            if (e.name, f.spec["name"]) not in placed:
                first = next((t for t in out if e.name in t.experiments), None)
                if first is not None:
                    first.figures.append(f)
                    placed.add((e.name, f.spec["name"]))
    return out


def figure_list(e: ExperimentResult, out: Path | None) -> list[Figure]:
    """Return the experiment's declared figures and critical-difference diagrams.

    With ``out``, drawn there as PNGs (``<out>/<experiment>/<name>.png``).
    """
    from treebench.report.figures import make_figure
    from treebench.report.paper import stats_section
    from treebench.report.select import add_derived

    figs = []
    rows = add_derived(e.rows) if len(e.rows) else e.rows
    for fspec in e.spec.get("figures") or []:
        cap = fspec.get("caption") or fspec.get("title") or fspec["name"]
        png = ""
        if out is not None and len(rows):
            paths = make_figure(
                rows, fspec, out / e.name, e.targets, e.name, formats=("png",), points_csv=False
            )
            png = f"{e.name}/{paths[0].name}" if paths else ""
        if png or out is None:
            figs.append(Figure(e.name, fspec, cap, png))
    for sspec in e.spec.get("stats") or []:
        if sspec.get("test") != "friedman" or out is None or not len(rows):
            continue
        _, files = stats_section(rows, sspec, e.name, out / e.name, formats=(".png",))
        if files:
            cap = f"critical-difference diagram, {sspec.get('name', '')}"
            figs.append(
                Figure(
                    e.name,
                    {"name": sspec.get("name", ""), "cd": True},
                    cap,
                    f"{e.name}/{files[0].name}",
                )
            )
    return figs
