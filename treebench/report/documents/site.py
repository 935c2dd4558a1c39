"""The offline results site (``treebench site`` → ``outputs/site/``).

Papers, methods, datasets, the head-to-head and a ledger explorer, from one evaluation and the
ledger's records.

Works from ``file://`` with no network: Plotly's bundled ``plotly.min.js`` and itables' offline
DataTables bundle are copied once into ``assets/``; every page is a pure function of its inputs
(sorted keys, no clock), so two builds of the same ledger are byte-identical.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report.documents.evaluation import GUARD, Evaluation
from treebench.report.documents.markdown import experiment_facts, paper_figures
from treebench.report.documents.render import render
from treebench.report.documents.tables import Figure, ItemTable, item_tables
from treebench.report.figures import (
    figure_points,
    figure_rows,
    method_color,
    paper_points,
    series_styles,
)

#: ledger explorer columns: (record field or frame column, heading)
LEDGER_COLUMNS = (
    ("experiment", "experiment"),
    ("method", "method"),
    ("dataset", "dataset"),
    ("seed", "seed"),
    ("fold", "fold"),
    ("profile", "profile"),
    ("status", "status"),
    ("score", "test score"),
    ("n_splits", "#splits"),
    ("key", "run key"),
)
_MAX_HOVER_PARAMS = 6
#: matplotlib line styles and markers (:func:`~treebench.report.figures.series_styles`) in
#: Plotly's words
_DASH = {"-": "solid", "--": "dash", ":": "dot", "-.": "dashdot"}
_SYMBOL = {
    "o": "circle",
    "s": "square",
    "^": "triangle-up",
    "D": "diamond",
    "v": "triangle-down",
    "P": "cross",
    "X": "x",
    "*": "star",
}


def _assets(out: Path) -> dict[str, int]:
    """Copy the vendored libraries and the site's own CSS/JS into ``assets/``; their sizes."""
    try:
        import itables
        import plotly
    except ImportError as exc:
        raise ImportError(f"the site needs plotly and itables ({exc.name} is missing)") from exc

    a = out / "assets"
    a.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(
        Path(plotly.__file__).parent / "package_data" / "plotly.min.js", a / "plotly.min.js"
    )
    dt = Path(itables.__file__).parent / "html" / "dt_bundle.js"
    # the bundle is an ES module, which file:// pages cannot load by <script type=module src>:
    # a classic script holds its text, imported through a blob URL (as itables' offline mode does)
    (a / "datatables.js").write_text(
        "window.TREEBENCH_DT_SRC = " + json.dumps(dt.read_text(encoding="utf-8")) + ";\n"
    )
    shutil.copyfile(dt.with_suffix(".css"), a / "datatables.css")
    here = Path(__file__).with_name("templates")
    for name in ("site.css", "site.js"):
        shutil.copyfile(here / name, a / name)
    return {p.name: p.stat().st_size for p in sorted(a.iterdir())}


def _num(v):
    """Return a JSON-safe number (None for NaN), rounded to keep pages small and stable."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else round(f, 6)


def _params(r: pd.Series) -> str:
    items = [
        f"{c.split('.', 1)[1]}={r[c]}"
        for c in sorted(r.index)
        if c.startswith("param.")
        and r[c] is not None
        and not (isinstance(r[c], float) and math.isnan(r[c]))
    ]
    more = f" (+{len(items) - _MAX_HOVER_PARAMS})" if len(items) > _MAX_HOVER_PARAMS else ""
    return ", ".join(items[:_MAX_HOVER_PARAMS]) + more


def _scale(spec: dict) -> float:
    return 100.0 if spec.get("percent", spec["y"].endswith(("accuracy", "error"))) else 1.0


def figure_data(rows: pd.DataFrame, f: Figure, targets) -> list[dict]:
    """One interactive panel per facet of a declared figure.

    The means (lines, ± SD), every run (points; hover: seed, params, run key) and the paper's
    numbers (x).
    """
    spec = f.spec
    if spec.get("cd") or not len(rows):
        return []
    pts = figure_points(rows, spec)
    runs = figure_rows(rows, spec)
    ref = paper_points(list(targets), spec) if spec.get("paper_points", True) else pd.DataFrame()
    scale = _scale(spec)
    labels = spec.get("labels") or {}
    by_method = list(spec.get("series") or ["method"])[0] == "method"
    styles = series_styles(pts["series"], by_method) if len(pts) else {}
    panels = []
    for facet in sorted(pts["facet"].unique()) if len(pts) else []:
        traces = []
        for s, g in pts[pts["facet"] == facet].groupby("series", sort=True):
            style = styles[s]
            color = style["color"] if by_method else None
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": labels.get(s, s),
                    "x": [_num(v) for v in g["x"]],
                    "y": [_num(scale * v) for v in g["y"]],
                    "error_y": {"type": "data", "array": [_num(scale * v) or 0 for v in g["sd"]]},
                    "text": [f"mean of {int(n)} runs" for n in g["n"]],
                    "line": {"dash": _DASH[style["ls"]], **({"color": color} if color else {})},
                    "marker": {"symbol": _SYMBOL[style["marker"]]},
                    "legendgroup": s,
                }
            )
            r = runs[(runs["_facet"] == facet) & (runs["_series"] == s)]
            r = r.sort_values(["_x", "seed", "key"], kind="stable")
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{labels.get(s, s)}: runs",
                    "showlegend": False,
                    "legendgroup": s,
                    "opacity": 0.45,
                    "marker": {"size": 5, **({"color": color} if color else {})},
                    "x": [_num(v) for v in r["_x"]],
                    "y": [_num(scale * v) for v in r[spec["y"]]],
                    "customdata": [
                        [int(row["seed"]), _params(row), row["key"]] for _, row in r.iterrows()
                    ],
                    "hovertemplate": "seed %{customdata[0]}<br>%{customdata[1]}<br>"
                    "run %{customdata[2]}<br>x %{x}, y %{y:.4g}<extra></extra>",
                }
            )
        if len(ref):
            rr = ref[ref["facet"].isin([facet, ""])].sort_values(["series", "x"])
            if len(rr):
                traces.append(
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "name": "paper",
                        "marker": {"symbol": "x", "size": 10, "color": "black"},
                        "x": [_num(v) for v in rr["x"]],
                        "y": [_num(scale * v) for v in rr["y"]],
                        "text": [f"{labels.get(s, s)} (paper)" for s in rr["series"]],
                    }
                )
        panels.append(
            {
                "title": str(facet or spec.get("title", spec["name"])),
                "traces": traces,
                "xlabel": spec.get("xlabel", spec["x"].split(".", 1)[-1]),
                "ylabel": spec.get(
                    "ylabel", spec["y"].split(".", 1)[-1] + (" (%)" if scale == 100 else "")
                ),
                "xlog": spec.get("xscale") == "log",
            }
        )
    return panels


def _page(out: Path, rel: str, template: str, **context) -> None:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    root = "../" * rel.count("/")
    path.write_text(render(template, root=root, **context))


def _records(ledger) -> list[dict]:
    return sorted(ledger.records(), key=lambda r: (r["key"], r.get("experiment", "")))


def _score(r: dict):
    m = r.get("metrics") or {}
    return m.get("test_accuracy", m.get("test_r2"))


def _dataset_source(conf_dir: Path, name: str) -> dict:
    """Return a dataset config's description and files (url, mirror path, sha256)."""
    import yaml

    p = conf_dir / "dataset" / f"{name}.yaml"
    if not p.exists():
        return {"description": "", "files": []}
    cfg = yaml.safe_load(p.read_text()) or {}
    files = ((cfg.get("loader") or {}).get("files")) or {}
    return {
        "description": cfg.get("description", ""),
        "note": cfg.get("notes", "") or cfg.get("papers", ""),
        "files": [
            {
                "part": k,
                "url": v.get("url", ""),
                "path": v.get("path", ""),
                "sha256": v.get("sha256", ""),
            }
            for k, v in sorted(files.items())
            if isinstance(v, dict)
        ],
    }


def _cell_dict(c) -> dict:
    return {
        "text": c.text,
        "status": c.status,
        "mark": c.mark,
        "target": c.target,
        "runs": c.runs,
        "note": c.note,
        "reason": c.reason,
    }


def _table_dict(t: ItemTable, figs: dict[str, list[dict]]) -> dict:
    return {
        "item": t.item,
        "anchor": t.anchor,
        "verdict": t.verdict,
        "css": t.css,
        "within": t.within,
        "cells_n": t.cells_n,
        "why": t.why,
        "experiments": t.experiments,
        "caption": t.caption,
        "columns": t.columns,
        "rows": [(label, [_cell_dict(c) for c in cells]) for label, cells in t.rows],
        "claims": [
            {
                "what": c.what,
                "on": c.on,
                "target": c.target,
                "paper": c.paper,
                "ours": c.ours,
                "cell": _cell_dict(c.cell),
            }
            for c in t.claims
        ],
        "figures": [
            {
                "caption": f.caption,
                "png": f.png,
                "id": f"fig-{f.experiment}-{f.spec['name']}",
                "panels": figs.get(f"{f.experiment}/{f.spec['name']}", []),
            }
            for f in t.figures
        ],
        "notes": [
            {
                "number": n.number,
                "target": n.target,
                "also": n.also,
                "status": n.status,
                "text": n.text,
                "evidence": n.evidence,
            }
            for n in t.notes
        ],
    }


def build_site(
    ev: Evaluation,
    ledger,
    out: str | Path,
    repo: str | Path,
    conf_dir: str | Path,
) -> dict:
    """Write the site under ``out`` (emptied first); return its pages, files and bytes.

    ``ev`` is the evaluation the Markdown pages read; ``ledger`` the records behind it (the
    explorer and the per-record JSON); ``repo`` the checkout holding docs/ (model drawings, the
    benchmark CSV, the figures and CD diagrams of the committed pages).
    """
    out, repo, conf_dir = Path(out), Path(repo), Path(conf_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    assets = _assets(out)
    nav = [(p.name, p.short) for p in ev.papers]  # the papers in every page's navigation bar

    def page(rel: str, template: str, **context) -> None:
        _page(out, rel, template, nav=nav, stamp=ev.stamp, **context)

    records = _records(ledger)
    df = ev.records

    # ---------------------------------------------------------------- papers (tables, figures)
    figs = paper_figures(ev, None)
    papers = []
    for p in ev.papers:
        tables = item_tables(p, figs[p.name])
        panels = {}
        for e in p.experiments:
            for f in figs[p.name][e.name]:
                panels[f"{e.name}/{f.spec['name']}"] = figure_data(e.rows, f, e.targets)
        info = {
            "name": p.name,
            "short": p.short,
            "title": p.title,
            "notes": p.notes,
            "overview": p.overview,
            "guard": p.name == GUARD,
            "tables": [_table_dict(t, panels) for t in tables],
            "experiments": [experiment_facts(e) for e in p.experiments],
        }
        papers.append(info)
        page(f"paper/{p.name}.html", "site_paper.html.j2", p=info)

    # ---------------------------------------------------------------- head-to-head
    h2h = _headtohead(df, repo, out)
    page("headtohead.html", "site_headtohead.html.j2", h=h2h)

    # ---------------------------------------------------------------- methods and datasets
    methods = sorted(df["method"].unique()) if len(df) else []
    datasets = sorted(df["dataset"].unique()) if len(df) else []
    bench = _bench(repo)
    for m in methods:
        page(f"method/{m}.html", "site_method.html.j2", **_method(m, df, ev, repo, out, bench))
    for d in datasets:
        page(f"dataset/{d}.html", "site_dataset.html.j2", **_dataset(d, df, conf_dir))

    # ---------------------------------------------------------------- ledger explorer + records
    rec_dir = out / "records"
    rec_dir.mkdir()
    rows = []
    for r in records:
        path = rec_dir / f"{r['key']}.json"
        if not path.exists():
            path.write_text(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n")
        size = r.get("size") or {}
        rows.append(
            [
                r.get("experiment", ""),
                r.get("method", ""),
                r.get("dataset", ""),
                r.get("seed"),
                r.get("fold"),
                r.get("profile", ""),
                r.get("status", ""),
                _num(_score(r)),
                _num(size.get("n_splits")),
                r["key"],
            ]
        )
    page("ledger.html", "site_ledger.html.j2", columns=[h for _, h in LEDGER_COLUMNS], rows=rows)
    (out / "verdicts.json").write_text(json.dumps(ev.verdicts(), indent=1, sort_keys=True) + "\n")
    page(
        "index.html",
        "site_index.html.j2",
        papers=papers,
        h=h2h,
        methods=methods,
        datasets=datasets,
        n_records=len(records),
    )
    files = sorted(p for p in out.rglob("*") if p.is_file())
    return {
        "pages": sorted(str(p.relative_to(out)) for p in files if p.suffix == ".html"),
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "assets": assets,
    }


def _bench(repo: Path) -> pd.DataFrame:
    p = repo / "docs" / "bench" / "bench_summary.csv"
    return pd.read_csv(p) if p.exists() else pd.DataFrame()


def _summary(rows: pd.DataFrame) -> list[list]:
    """Per (experiment, dataset): runs, mean test score ± SD, mean #splits (ok runs)."""
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        return []
    score = ok["test_accuracy"] if "test_accuracy" in ok else pd.Series(np.nan, index=ok.index)
    if "test_r2" in ok:
        score = score.fillna(ok["test_r2"])
    ok = ok.assign(_score=score, _splits=ok.get("n_splits"))
    out = []
    for (exp, ds), g in ok.groupby(["experiment", "dataset"], sort=True):
        out.append(
            [
                exp,
                ds,
                int(g["key"].nunique()),
                _num(g["_score"].mean()),
                _num(g["_score"].std(ddof=1)),
                _num(g["_splits"].mean() if "_splits" in g else None),
            ]
        )
    return out


def _method(m: str, df: pd.DataFrame, ev: Evaluation, repo: Path, out: Path, bench) -> dict:
    rows = df[df["method"] == m]
    drawings = []
    src = repo / "docs" / "inspect" / m
    if src.is_dir():
        for png in sorted(src.glob("*.png")):
            dest = out / "inspect" / m / png.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, dest)
            drawings.append(f"inspect/{m}/{png.name}")
        rules = src / "rules.txt"
        if rules.exists():
            drawings.append(rules.read_text()[:4000])
    speed = []
    if len(bench) and "method" in bench:
        b = bench[bench["method"] == m].sort_values("dataset")
        cols = [
            c
            for c in (
                "dataset",
                "status",
                "n_train",
                "fit_s_median",
                "fit_ratio_cart",
                "predict_sps_median",
                "peak_rss_mb",
                "n_splits",
                "accuracy",
            )
            if c in b
        ]
        speed = [
            cols,
            [[_num(v) if isinstance(v, float) else v for v in r] for r in b[cols].values.tolist()],
        ]
    targets = []
    for p in ev.papers:
        for _, r in p.res.iterrows():
            if str(r["method"]).split("[", 1)[0] == m:
                targets.append([p.name, r["id"], r["status"]])
    return {
        "m": m,
        "summary": _summary(rows),
        "drawings": drawings,
        "speed": speed,
        "targets": targets,
    }


def _dataset(d: str, df: pd.DataFrame, conf_dir: Path) -> dict:
    rows = df[(df["dataset"] == d) & (df["status"] == "ok")]
    score = (
        rows["test_accuracy"] if "test_accuracy" in rows else pd.Series(np.nan, index=rows.index)
    )
    if "test_r2" in rows:
        score = score.fillna(rows["test_r2"])
    rows = rows.assign(_score=score)
    table, traces = [], []
    for m, g in rows.groupby("method", sort=True):
        table.append(
            [
                m,
                int(g["key"].nunique()),
                ", ".join(sorted(g["experiment"].unique())),
                _num(g["_score"].mean()),
                _num(g["_score"].max()),
                _num(g["n_splits"].median() if "n_splits" in g else None),
            ]
        )
        g = g[g["_score"].notna()].sort_values(["key", "experiment"])
        if "n_splits" in g:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": m,
                    "marker": {"size": 5, "color": method_color(m)},
                    "x": [_num(max(v, 0) + 1) for v in g["n_splits"].fillna(0)],
                    "y": [_num(v) for v in g["_score"]],
                    "customdata": [
                        [int(r["seed"]), r["experiment"], r["key"]] for _, r in g.iterrows()
                    ],
                    "hovertemplate": f"{m}<br>seed %{{customdata[0]}} · %{{customdata[1]}}"
                    "<br>run %{customdata[2]}<extra></extra>",
                }
            )
    panels = (
        [
            {
                "title": f"{d}: test score vs size",
                "traces": traces,
                "xlabel": "#splits + 1",
                "ylabel": "test accuracy / R²",
                "xlog": True,
            }
        ]
        if traces
        else []
    )
    return {"d": d, "table": table, "panels": panels, "source": _dataset_source(conf_dir, d)}


def _headtohead(df: pd.DataFrame, repo: Path, out: Path) -> dict:
    """Return the head-to-head's headline setting.

    Wins/ties/losses against same-size CART, per-dataset cell means with interactive Pareto plots
    (score vs leaves), and the committed CD diagrams.
    """
    from treebench.report.headtohead import (
        cell_means,
        headline_setting,
        outcomes,
        score_rows,
        wtl_counts,
    )

    rows = score_rows(df)
    setting = headline_setting(rows) if len(rows) else None
    result = {"setting": setting, "wtl": [], "datasets": [], "cd": []}
    if setting is None:
        return result
    profile, tune = setting
    main = rows[(rows["profile"] == profile) & (rows["tune"] == tune) & (rows["status"] == "ok")]
    wtl = wtl_counts(outcomes(main))
    result["wtl"] = [list(wtl.columns), wtl.values.tolist()]
    cells = cell_means(main)
    for ds, g in cells.groupby("dataset", sort=True):
        raw = main[main["dataset"] == ds].sort_values(["method", "seed"])
        traces = []
        for m, gm in raw.groupby("method", sort=True):
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": m,
                    "marker": {"size": 6, "color": method_color(m)},
                    "x": [_num(v) for v in gm["n_leaves"]],
                    "y": [_num(v) for v in gm["score"]],
                    "customdata": [[int(s), m] for s in gm["seed"]],
                    "hovertemplate": "%{customdata[1]} seed %{customdata[0]}<br>"
                    "leaves %{x}, score %{y:.4f}<extra></extra>",
                }
            )
        table = [
            [
                r["method"],
                int(r["n"]),
                _num(r["score"]),
                _num(r["score_sd"]),
                _num(r["ref_score"]),
                _num(r["n_leaves"]),
                _num(r["fit_seconds"]),
            ]
            for _, r in g.sort_values("score", ascending=False).iterrows()
        ]
        result["datasets"].append(
            {
                "name": ds,
                "task": g["task"].iloc[0],
                "table": table,
                "panels": [
                    {
                        "title": f"{ds}: score vs leaves (every run)",
                        "traces": traces,
                        "xlabel": "leaves",
                        "ylabel": "test score",
                        "xlog": True,
                    }
                ],
            }
        )
    for png in sorted((repo / "docs" / "headtohead").glob("cd_*.png")):
        dest = out / "headtohead" / png.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, dest)
        result["cd"].append(f"headtohead/{png.name}")
    return result
