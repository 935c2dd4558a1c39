"""Paper reproduction reports.

Side-by-side tables, the paper's own layouts, figures, statistics, and the items and overview rows
``REPRODUCTION.md`` reads (written by :mod:`treebench.report.documents`).

Everything an experiment's report contains is declared in the paper files
(``treebench/conf/papers/*.yaml``): targets give the numbers, ``experiments.<name>.tables / figures
/ stats`` the layouts.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report import stats as st
from treebench.report.checks import (
    FAIL,
    INFO,
    PASS,
    SKIP,
    Availability,
    display_frame,
    fmt_num,
    run_checks,
)
from treebench.report.figures import make_figure
from treebench.report.select import (
    add_derived,
    core_time,
    counted,
    per_block_means,
    series_label,
)
from treebench.report.tables import summary_table
from treebench.report.targets import PaperSpec, Selector, for_experiment, item_label

# ----------------------------------------------------------------------------------------- writers


def _tex_escape(s) -> str:
    s = str(s)
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
    ):
        s = s.replace(a, b)
    return (
        s.replace("±", r"$\pm$")
        .replace("Δ", r"$\Delta$")
        .replace("≥", r"$\geq$")
        .replace("≤", r"$\leq$")
        .replace("–", "--")
        .replace("α", r"$\alpha$")
        .replace("χ²", r"$\chi^2$")
    )


def to_latex(df: pd.DataFrame, caption: str = "", label: str = "") -> str:
    """Return a booktabs table (escaped, pandas' ``Styler.to_latex``), captioned above."""
    align = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns)
    st = df.rename(columns=_tex_escape).style.hide(axis="index")
    st = st.format(lambda v: _tex_escape("" if v is None else v))
    st = st.set_table_styles([{"selector": "small", "props": ":;"}])  # \small
    return st.to_latex(
        column_format=align,
        position="ht",
        position_float="centering",
        hrules=True,
        caption=_tex_escape(caption) if caption else None,
        label=label or None,
    )


def to_markdown(df: pd.DataFrame) -> str:
    """Return ``df`` as a Markdown table (``_(empty)_`` when it has no rows)."""
    if df.empty:
        return "_(empty)_\n"
    return df.to_markdown(index=False) + "\n"


# ------------------------------------------------------------------------------------------ tables


def comparison_table(res: pd.DataFrame) -> pd.DataFrame:
    """All targets: paper number, ours (mean ± SD over n runs, profile), Δ, tolerance, status."""
    disp = display_frame(res)
    if disp.empty:
        return disp
    return disp[
        [
            "target",
            "source",
            "dataset",
            "method",
            "metric",
            "paper",
            "ours",
            "n",
            "profile",
            "Δ",
            "tolerance",
            "status",
            "note",
        ]
    ]


def layout_table(res: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """Return the paper's own layout.

    Rows = method labels, columns = dataset × metric, cells 'ours (paper)'.
    """
    tables = spec["table"] if isinstance(spec["table"], list) else [spec["table"]]
    sub = res[res["table"].isin(tables) & (res["kind"] == "value")]
    if spec.get("metrics"):
        sub = sub[sub["metric"].isin(spec["metrics"])]
    if sub.empty:
        return pd.DataFrame()
    metrics = spec.get("metrics") or list(dict.fromkeys(sub["metric"]))
    cols_key = spec.get("cols", "dataset")
    col_vals = list(dict.fromkeys(sub[cols_key]))
    rows = list(dict.fromkeys(sub["method"]))
    out = []
    for m in rows:
        row = {"model": m}
        for c in col_vals:
            for met in metrics:
                hit = sub[(sub["method"] == m) & (sub[cols_key] == c) & (sub["metric"] == met)]
                name = (
                    f"{c} {spec.get('metric_labels', {}).get(met, met)}"
                    if len(metrics) > 1
                    else str(c)
                )
                if hit.empty:
                    row[name] = ""
                    continue
                h = hit.iloc[0]
                ours = fmt_num(h["ours"], h["units"])
                if h["units"] != "count" and not np.isnan(h["ours_sd"]):
                    ours += f" ± {fmt_num(h['ours_sd'], h['units'])}"
                mark = {PASS: "", FAIL: " ✗", SKIP: "", INFO: ""}[h["status"]]
                row[name] = f"{ours} ({fmt_num(h['paper_value'], h['units'])}){mark}"
        out.append(row)
    lay = pd.DataFrame(out)
    empty = [c for c in lay.columns if (lay[c] == "").all()]
    return lay.drop(columns=empty)


def _groups_from_spec(df: pd.DataFrame, spec: dict, experiment: str) -> list[Selector]:
    """Selectors of a stats entry: given ``groups``, else every series present (``series`` keys)."""
    if spec.get("groups"):
        out = []
        for g in spec["groups"]:
            g = {"method": g} if isinstance(g, str) else dict(g)
            w = {(k if "." in k else f"param.{k}"): v for k, v in (g.get("where") or {}).items()}
            out.append(Selector(method=g["method"], where=w, experiment=experiment))
        return out
    keys = list(spec.get("series") or ["method"])
    ok = df[(df["experiment"] == experiment) & (df["status"] == "ok")] if not df.empty else df
    out, seen = [], set()
    for _, r in ok.iterrows():
        label = series_label(r, keys)
        if label in seen:
            continue
        seen.add(label)
        out.append(
            Selector(
                method=r["method"],
                where={k: r.get(k) for k in keys if k != "method"},
                experiment=experiment,
            )
        )
    return out


def stats_section(
    df: pd.DataFrame, spec: dict, experiment: str, out_dir: Path, formats=(".png", ".pdf")
) -> tuple[str, list[Path]]:
    """Run one declared test.

    Return a Markdown section (caption names the test, N and α) and files.
    """
    metric, alpha = spec["metric"], float(spec.get("alpha", 0.05))
    per = tuple(spec.get("per", ["dataset"]))
    higher = bool(spec.get("higher_is_better", not metric.endswith(("error", "rmse", "mae"))))
    name = spec.get("name", f"{spec['test']}_{metric}")
    files: list[Path] = []
    if spec["test"] == "friedman":
        groups = _groups_from_spec(df, spec, experiment)
        cols = {g.label(): per_block_means(df, g, metric, per, experiment) for g in groups}
        cols = {k: v for k, v in cols.items() if not v.empty}
        table = pd.concat(cols, axis=1).dropna() if cols else pd.DataFrame()
        if table.shape[1] < 3 or table.shape[0] < 2:
            return (
                f"### {name}\n\nNot computed: needs >= 3 methods on >= 2 common datasets "
                f"(have {table.shape[1]} methods × {table.shape[0]} datasets).\n",
                files,
            )
        fr = st.friedman(table)
        nem = st.nemenyi(table, alpha, higher_is_better=higher)
        files = st.cd_diagram(
            nem,
            out_dir / f"{name}_cd",
            formats=formats,
            title=(
                f"{metric}: Friedman p = {fr['p']:.3g}; Nemenyi post-hoc, N = {nem['n']} datasets, "
                f"k = {nem['k']}, α = {alpha}, CD = {nem['cd']:.2f}"
            ),
        )
        ranks = (
            nem["ranks"]
            .sort_values()
            .round(3)
            .rename("mean rank")
            .to_frame()
            .reset_index(names="method")
        )
        pv = nem["p_values"].round(4).reset_index(names="")
        text = (
            f"### {name}\n\n{st.caption(fr, metric, alpha)} {st.caption(nem, metric)}\n\n"
            f"Per-dataset means:\n\n{to_markdown(table.round(4).reset_index())}\n"
            f"Average ranks (1 = best):\n\n{to_markdown(ranks)}\n"
            f"Nemenyi p-values:\n\n{to_markdown(pv)}\n"
            f"![critical difference diagram]({files[0].name})\n"
        )
        return text, files
    lhs = _groups_from_spec(df, {"groups": [spec["lhs"]]}, experiment)[0]
    rhs = _groups_from_spec(df, {"groups": [spec["rhs"]]}, experiment)[0]
    both = pd.concat(
        {
            lhs.label(): per_block_means(df, lhs, metric, per, experiment),
            rhs.label(): per_block_means(df, rhs, metric, per, experiment),
        },
        axis=1,
    ).dropna()
    if len(both) < 2:
        return (
            f"### {name}\n\nNot computed: needs >= 2 paired datasets (have {len(both)}).\n",
            files,
        )
    res = st.wilcoxon(both.iloc[:, 0], both.iloc[:, 1])
    wins = (
        int((both.iloc[:, 0] > both.iloc[:, 1]).sum())
        if higher
        else int((both.iloc[:, 0] < both.iloc[:, 1]).sum())
    )
    return (
        f"### {name}\n\n{st.caption(res, metric, alpha)} {lhs.label()} better on "
        f"{wins}/{len(both)}; "
        f"{'significant' if res['p'] < alpha else 'not significant'} at α = {alpha}.\n\n"
        f"{to_markdown(both.round(4).reset_index())}",
        files,
    )


# ------------------------------------------------------------------------------------------ report


def report_experiment(
    df: pd.DataFrame,
    papers: list[PaperSpec],
    experiment: str,
    out_dir: str | Path,
    avail: Availability | None = None,
) -> dict:
    """Write everything declared for ``experiment`` under ``out_dir/<experiment>/``.

    Return paths and verdicts.
    """
    targets, spec, unavailable = for_experiment(papers, experiment)
    avail = avail or Availability()
    avail.unavailable.update(unavailable)
    out = Path(out_dir) / experiment
    out.mkdir(parents=True, exist_ok=True)
    exp_df = df[df["experiment"] == experiment] if not df.empty and "experiment" in df else df
    exp_df = add_derived(exp_df) if not exp_df.empty else exp_df
    res = run_checks(targets, df, avail)
    written: list[Path] = []
    title = spec.get("title", experiment)
    md = [
        f"# {title}\n",
        f"Experiment `{experiment}`; generated "
        f"{_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}.\n",
    ]
    if not exp_df.empty:
        prof = exp_df["profile"].value_counts().to_dict() if "profile" in exp_df else {}
        md.append(
            f"{counted(len(exp_df), 'record')} ({', '.join(f'{v} {k}' for k, v in prof.items())} "
            "profile); "
            f"methods: {', '.join(sorted(exp_df['method'].unique()))}; datasets: "
            f"{', '.join(sorted(exp_df['dataset'].unique()))}.\n"
        )
    if not res.empty:
        counts = res["status"].value_counts().to_dict()
        md.append(
            "Targets: "
            + ", ".join(f"{counts.get(s, 0)} {s}" for s in (PASS, FAIL, SKIP, INFO))
            + ".\n"
        )
        comp = comparison_table(res)
        (out / "comparison.md").write_text(to_markdown(comp))
        (out / "comparison.tex").write_text(
            to_latex(
                comp.drop(columns=["note"]),
                caption=f"{title}: ours (mean ± SD over n runs; profile) next to the paper. Δ = "
                "ours − paper "
                "in the paper's units.",
            )
        )
        written += [out / "comparison.md", out / "comparison.tex"]
        md.append(
            "## Ours vs the paper\n\nNumbers in the paper's units (metrics marked (%) in percent); "
            "ours = mean ± SD (ddof 1) over seeds × folds, n runs, and the profile that made them; "
            "Δ = ours − paper. Relations: the share of datasets where the claim holds; stats: "
            "p-values."
            "\n\n" + to_markdown(comp)
        )
    for tab in spec.get("tables") or []:
        lay = layout_table(res, tab)
        if lay.empty:
            continue
        cap = (
            tab.get("caption", str(tab["table"])) + " — cells: ours (paper); ✗ = outside tolerance."
        )
        (out / f"{tab['name']}.md").write_text(f"{cap}\n\n" + to_markdown(lay))
        (out / f"{tab['name']}.tex").write_text(
            to_latex(lay, caption=cap, label=f"tab:{tab['name']}")
        )
        written += [out / f"{tab['name']}.md", out / f"{tab['name']}.tex"]
        md.append(f"## {tab['name']} (paper layout)\n\n{cap}\n\n" + to_markdown(lay))
    if not exp_df.empty:
        summ = summary_table(exp_df, spec.get("metric"))
        if not summ.empty:
            (out / "summary.md").write_text(to_markdown(summ.round(4)))
            (out / "summary.tex").write_text(
                to_latex(summ.round(4), caption=f"{experiment}: mean and SD")
            )
            written += [out / "summary.md", out / "summary.tex"]
            md.append(
                f"## All results ({summ.attrs.get('metric', '')}, mean ± SD)\n\n"
                + to_markdown(summ.round(4))
            )
    figs = spec.get("figures") or []
    if figs:
        md.append("## Figures\n")
    for fspec in figs:
        paths = make_figure(exp_df, fspec, out / "figures", targets, experiment)
        written += paths
        if paths:
            md.append(
                f"![{fspec['name']}](figures/{paths[0].name})\n\n{fspec.get('caption', '')}\n"
            )
        else:
            md.append(f"- {fspec['name']}: no data ({fspec['y']} vs {fspec['x']})\n")
    stats_specs = spec.get("stats") or []
    if stats_specs:
        md.append("## Statistical tests\n")
    for sspec in stats_specs:
        text, files = stats_section(exp_df, sspec, experiment, out)
        md.append(text)
        written += files
    (out / "README.md").write_text("\n".join(md))
    written.append(out / "README.md")
    return {"dir": out, "files": written, "verdicts": res}


# ------------------------------------------------------------------------------------- reproduction


def _item(r: pd.Series) -> str:
    """Return the paper item (table, figure or in-text claim) a verdict row belongs to."""
    return item_label(r["table"], r["source"], r["experiment"])


def _ids(ids: pd.Series, at_most: int = 3) -> str:
    """Up to ``at_most`` target ids, then how many more ("a, b, c (+4)")."""
    ids = list(dict.fromkeys(ids))
    more = f" (+{len(ids) - at_most})" if len(ids) > at_most else ""
    return ", ".join(ids[:at_most]) + more


def paper_items(res: pd.DataFrame, declared: dict | None = None) -> pd.DataFrame:
    """Return a paper's items (tables, figures, in-text claims) with their experiments and verdicts.

    Each item has the experiments that check it, its verdict and what it lacks.

    An item is *reproduced* when it has a pass and no FAIL, skipped or reduced-protocol row; a
    competitor's number the paper only quotes (a skipped "reference only" row) is not the item's
    to reproduce, and a structural row (a check that could not have failed) is info, never its
    pass. Otherwise its verdict is the first of: *FAIL* (a number misses), *short* (a number lacks
    part of the paper's protocol: runs, configs, blocks, a profile), *missing data* (a number
    cannot run here), *structural only* (its only checks could not have failed), *not checked*
    (info only). ``declared`` is the paper file's ``items``: an item whose targets check only
    ``partly`` of it reads *partly* where it would read reproduced; an ``outside_paper`` item (not
    the paper's: column ``outside the paper`` says what it is) is kept out of the paper's count.
    """
    declared = declared or {}
    cols = [
        "item",
        "experiments",
        "verdict",
        PASS,
        FAIL,
        INFO,
        SKIP,
        "what keeps it from reproduced",
        "outside the paper",
    ]
    if res.empty:
        return pd.DataFrame(columns=cols)
    items = res.assign(item=res.apply(_item, axis=1), note=res["note"].fillna("").astype(str))
    structural = (
        items["structural"].fillna(False).astype(bool)
        if "structural" in items
        else pd.Series(False, index=items.index)
    )
    # a relation says its reduced protocol after its count
    reduced = items["note"].str.contains(r"(?:^|;\s*)reduced:") & ~structural
    quoted = items["note"].str.startswith("reference only:")
    missing = (items["status"] == SKIP) & ~quoted
    rows = []
    for name, it in items.groupby("item", sort=False):
        fails = it[it["status"] == FAIL]
        short = it[reduced.loc[it.index]]
        absent = it[missing.loc[it.index]]
        built = it[structural.loc[it.index] & (it["status"] == INFO)]
        why = []
        if len(fails):
            why.append(f"FAIL: {_ids(fails['id'])}")
        if len(short):
            what = short["note"].str.extract(r"reduced: ([^;]*)", expand=False).fillna("")
            why.append(f"short: {_ids(short['id'] + ' (' + what.str.strip() + ')', 2)}")
        if len(absent):
            reasons = absent["note"].str.split(";").str[0].str.split(":").str[0]
            why.append(
                f"missing data: {_ids(absent['id'], 2)} ({'; '.join(dict.fromkeys(reasons))})"
            )
        n = it["status"].value_counts()
        passed = n.get(PASS, 0)
        decl = declared.get(name) or {}
        if len(fails) or len(short) or len(absent):
            verdict = "FAIL" if len(fails) else "short" if len(short) else "missing data"
        elif passed:
            verdict = "partly" if decl.get("partly") else "reproduced"
        else:
            verdict = "structural only" if len(built) else "not checked"
        if not why and not passed:
            why.append(
                f"structural only: {_ids(built['id'])} could not have failed"
                if len(built)
                else "info only: no number of it is checked"
            )
        if decl.get("partly"):
            why.append(f"partly: {decl['partly'].strip()}")
        exps = ", ".join(dict.fromkeys(it["experiment"]))
        rows.append(
            [name, exps, verdict, passed, n.get(FAIL, 0), n.get(INFO, 0), n.get(SKIP, 0)]
            + ["; ".join(why), (decl.get("outside_paper") or "").strip()]
        )
    return pd.DataFrame(rows, columns=cols)


def paper_overview(
    p: PaperSpec, res: pd.DataFrame, n_records: int, hours: float = 0.0
) -> tuple[dict, list[str]]:
    """One overview row of a paper (items reproduced / total, verdict counts) and its deviations.

    Items and their verdicts are :func:`paper_items`'; only the paper's own items are counted (an
    ``outside_paper`` item is shown apart), a *partly* one beside the count. The deviations listed
    are those of the paper's FAIL and info rows.
    """
    counts = res["status"].value_counts().to_dict() if len(res) else {}
    items = paper_items(res, p.items)
    own = items[items["outside the paper"] == ""]
    done = int((own["verdict"] == "reproduced").sum())
    partly = int((own["verdict"] == "partly").sum())
    row = {
        "paper": p.paper,
        "items reproduced": f"{done} / {len(own)}" + (f" (+{partly} partly)" if partly else ""),
        "runs": p.runs if p.runs is not None else "not stated",
        "targets": len(res),
        PASS: counts.get(PASS, 0),
        FAIL: counts.get(FAIL, 0),
        INFO: counts.get(INFO, 0),
        SKIP: counts.get(SKIP, 0),
        "records": n_records,
        "core-h": round(hours, 1),
    }
    shown = set(res.loc[res["status"].isin([FAIL, INFO]), "id"]) if len(res) else set()
    devs = [t.deviation for t in p.targets if t.deviation and t.id in shown]
    return row, list(dict.fromkeys(devs))


def short_of_runs(res: pd.DataFrame) -> pd.DataFrame:
    """Return the cells of runs with fewer runs than the paper's, cheapest to finish first.

    A cell is the runs behind one mean (a selection, in one dataset or block), read by one or more
    targets; its cost to finish is the missing runs times the mean core time of its runs so far.
    Only cells under the paper's profile are listed (:func:`~treebench.report.checks.cell_short`).
    """
    if res.empty or "short_cells" not in res.columns:
        return pd.DataFrame()
    cells: dict[str, dict] = {}
    for _, r in res.iterrows():
        for c in r["short_cells"]:
            cell = cells.setdefault(c["cell"], {**c, "paper": r["paper"], "ids": []})
            cell["ids"].append(r["id"])
    if not cells:
        return pd.DataFrame()
    out = pd.DataFrame(cells.values())
    out["finish"] = (out["of"] - out["runs"]) * out["core_h"]
    out = out.sort_values(["finish", "paper", "cell"], kind="stable")
    return pd.DataFrame(
        {
            "paper": out["paper"],
            "cell": out["cell"],
            "targets": [
                ids[0] + (f" (+{len(ids) - 1})" if len(ids) > 1 else "") for ids in out["ids"]
            ],
            "runs": [f"{r} of {n}" for r, n in zip(out["runs"], out["of"], strict=True)],
            "a run": out["core_h"].map(core_time),
            "to finish": out["finish"].map(core_time),
        }
    ).reset_index(drop=True)


def short_otherwise(res: pd.DataFrame) -> pd.DataFrame:
    """Return the targets that lack part of the paper's protocol other than runs, one row each.

    A grid short of its configurations, a reduced profile, fewer blocks, a smaller size than the
    paper's: what they lack, as their notes say it.
    """
    if res.empty or "gaps" not in res.columns:
        return pd.DataFrame()
    has = res[res["gaps"].map(lambda g: isinstance(g, list) and len(g) > 0)]
    return pd.DataFrame(
        {"paper": has["paper"], "target": has["id"], "lacks": has["gaps"].map("; ".join)}
    ).reset_index(drop=True)
