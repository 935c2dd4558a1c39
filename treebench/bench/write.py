"""Bench outputs: ``BENCHMARKS.md`` from ``templates/BENCHMARKS.md``, CSVs, JSON and plots."""

from __future__ import annotations

import json
import re
import shutil
from functools import cache
from pathlib import Path
from string import Template

import numpy as np
import pandas as pd

from treebench.bench.config import FIRST_CALL_ROWS
from treebench.bench.plots import plot_overview, plot_scaling, plot_store
from treebench.bench.references import provenance, read_references, references_markdown
from treebench.bench.startup import FLOOR, HEAVY, startup_frame
from treebench.bench.store import store_frame
from treebench.bench.summary import (
    RAW_COLUMNS,
    SUMMARY_COLUMNS,
    scaling_summary,
    small_slopes,
    small_summary,
    summarize,
)
from treebench.config import PROJECT_DIR

TEMPLATE = Path(__file__).with_name("templates") / "BENCHMARKS.md"

#: (column, header) of the tables
MAIN_COLUMNS = {
    "method": "method",
    "fit": "fit s (median [min, max])",
    "fit_ratio_cart": "fit × CART",
    "fit_wall_s_median": "fit wall s",
    "pred": "predict/s (median [min, max])",
    "predict_ratio_cart": "predict × CART",
    "peak_rss_mb": "peak RSS MB",
    "peak_traced_mb": "traced MB",
    "split_evals": "split evals",
    "n_splits": "splits",
    "accuracy": "test acc",
}
THREAD_COLUMNS = {
    "method": "method",
    "threads": "threads",
    "fit_s": "fit s",
    "fit_cpu_s": "fit CPU s (this process)",
    "fit_speedup": "fit speedup",
    "predict_sps": "predict/s",
    "predict_speedup": "predict speedup",
}
SCALING_COLUMNS = ["method", "axis", "model", "points", "range", "fit_s_range", "slope"]
SCALING_COLUMNS += ["expected", "flag"]


@cache
def templates() -> dict[str, Template]:
    """Return the parts of the template file by name (a part starts at a ``@@ name`` line)."""
    parts = re.split(r"^@@ (\w+)\n", TEMPLATE.read_text(), flags=re.M)[1:]
    return {name: Template(text) for name, text in zip(parts[::2], parts[1::2], strict=True)}


def _machine_load(runs: dict, cores) -> str:
    """How busy the machine was, from the 1-minute load averages the runs recorded."""
    loads = []
    for r in runs.values():
        for k in ("load_start", "load_end"):
            try:
                loads.append(float(str(r.get(k)).split(",")[0]))
            except ValueError:
                continue
    if not loads:
        return "load not recorded"
    top = max(loads)
    if top > float(cores):
        return (
            f"shared with other work while this ran (1-minute load average up to {top:.2f}, above "
            "the core count): absolute seconds are noisy"
        )
    return (
        f"1-minute load average at most {top:.2f} while this ran (at or below the core count: "
        "little other work)"
    )


def fill(part: str, **fields) -> str:
    """Return template part ``part`` with ``fields`` substituted."""
    return templates()[part].substitute(**fields)


def fmt(v, nd=3) -> str:
    """Return a table cell.

    ``-`` for missing, integers as such, floats to ``nd`` significant digits.
    """
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e5:
        return f"{v:.3g}"
    return f"{v:.{nd}g}"


def md_table(df: pd.DataFrame, columns) -> str:
    """``df``'s ``columns`` (a list, or a dict column → header) as a Markdown table."""
    headers = columns if isinstance(columns, dict) else {c: c for c in columns}
    t = df[list(headers)].astype(object).map(fmt).rename(columns=headers)
    return t.to_markdown(index=False, disable_numparse=True)


def _range(median, lo, hi, status, missing):
    return [
        f"{fmt(a)} [{fmt(b)}, {fmt(c)}]" if r == "ok" else (r if missing is None else missing)
        for a, b, c, r in zip(median, lo, hi, status, strict=True)
    ]


def _main(summary: pd.DataFrame) -> str:
    out = [fill("main")]
    for ds, g in summary.groupby("dataset", sort=False):
        g = g.copy()
        g["fit"] = _range(g["fit_s_median"], g["fit_s_min"], g["fit_s_max"], g["status"], None)
        g["pred"] = _range(
            g["predict_sps_median"], g["predict_sps_min"], g["predict_sps_max"], g["status"], "-"
        )
        r0 = g.iloc[0]
        out.append(
            fill(
                "main_dataset",
                dataset=ds,
                n_train=r0["n_train"],
                n_test=r0["n_test"],
                n_features=r0["n_features"],
                table=md_table(g, MAIN_COLUMNS),
            )
        )
    out.append(fill("main_figure"))
    return "".join(out)


def _inference(bench, raw: pd.DataFrame, d: Path) -> str:
    ic = bench.cfg["inference"]
    inf = raw[raw["section"] == "inference"].copy()
    ref = inf[(inf["method"] == bench.ref) & (inf["status"] == "ok")]
    P = bench.PRED
    base = float(ref[P].iloc[0]) if len(ref) else float("nan")
    RP = "ref_cpu_samples_per_s" if bench.basis == "cpu" else "ref_samples_per_s"
    if RP not in inf:
        inf[RP] = np.nan
    adj = inf[RP].astype(float)
    inf["ratio"] = inf[P].astype(float) / adj.where(adj.notna(), base)
    inf["target"] = [
        "met" if s == "ok" and v >= float(ic["target"]) else ("below" if s == "ok" else s)
        for s, v in zip(inf["status"], inf[P], strict=True)
    ]
    inf.to_csv(d / "inference.csv", index=False)
    columns = {
        "method": "method",
        "depth": "depth",
        "n_splits": "splits",
        "split_evals": "split evals",
        P: f"samples/s ({bench.basis})",
        "predict_samples_per_s": "samples/s (wall)",
        RP: "CART samples/s (adjacent)",
        "ratio": "× CART",
        "target": "≥ target",
    }
    text = fill(
        "inference",
        dataset=ic["dataset"],
        n_train=inf["n_train"].iloc[0],
        n_samples=ic["n_samples"],
        basis=bench.basis,
        target=f"{float(ic['target']):.0f}",
        table=md_table(inf, columns),
    )
    if bench.profiles:
        text += fill("profiles", ratio=ic.get("profile_below_ratio", 0.5))
        for m, prof in bench.profiles.items():
            text += fill("profile", method=m, profile=prof)
    return text


def _threads(bench, raw: pd.DataFrame, d: Path) -> str:
    thr = raw[(raw["section"] == "threads") & (raw["status"] == "ok")]
    rows = []
    for m, g in thr.groupby("method", sort=False):
        g = g.set_index("threads")
        one = g.loc[g.index.min()]
        for t, r in g.iterrows():
            rows.append(
                {
                    "method": m,
                    "threads": t,
                    "fit_s": r["fit_s"],
                    "fit_cpu_s": r["fit_cpu_s"],
                    "fit_speedup": one["fit_s"] / r["fit_s"],
                    "predict_sps": r["predict_samples_per_s"],
                    "predict_speedup": r["predict_samples_per_s"] / one["predict_samples_per_s"],
                }
            )
    tt = pd.DataFrame(rows)
    tt.to_csv(d / "threads.csv", index=False)
    return fill(
        "threads",
        dataset=bench.cfg["threading"]["dataset"],
        n_train=thr["n_train"].iloc[0],
        n_test=thr["n_test"].iloc[0],
        table=md_table(tt, THREAD_COLUMNS),
    )


def _scaling(bench, raw: pd.DataFrame, d: Path, files: dict) -> str:
    slopes = scaling_summary(raw, bench.cfg, bench.settings, bench.basis)
    slopes.to_csv(d / "scaling.csv", index=False)
    plot_scaling(raw, slopes, d / "scaling.png", bench.FIT)
    files["scaling"] = d / "scaling.png"
    sc, ps = bench.cfg["scaling"], bench.cfg["param_scaling"]
    return fill(
        "scaling",
        dataset=sc["dataset"],
        sizes=sc["sizes"],
        param_dataset=ps["dataset"],
        param_rows=ps.get("max_train"),
        tolerance=sc.get("tolerance", 0.3),
        caps=_caps(bench),
        table=md_table(slopes, SCALING_COLUMNS),
    )


def _small(bench, raw: pd.DataFrame, d: Path) -> str:
    """Return the small section.

    ``small.csv`` (per method and measurement), ``small_slope.csv`` and a table with a column pair
    (seconds, × CART) per dataset and for the tune job.
    """
    sm = small_summary(raw, bench.ref, bench.basis)
    sm.to_csv(d / "small.csv", index=False)
    slopes = small_slopes(raw, bench.basis)
    slopes.to_csv(d / "small_slope.csv", index=False)
    sc = bench.cfg.get("small") or {}
    wide = pd.DataFrame({"method": list(dict.fromkeys(sm["method"]))}) if len(sm) else None
    columns = {"method": "method"}
    for (measure, ds), g in sm.groupby(["measure", "dataset"], sort=False) if len(sm) else []:
        g = g.set_index("method")
        head = f"{ds} ({g['n_rows'].iloc[0]} rows)"
        if measure != "fit":
            head = f"{measure} on {ds} ({g['n_rows'].iloc[0]} rows)"
        cell = [
            (fmt(g.at[m, "fit_s_median"]) if g.at[m, "status"] == "ok" else g.at[m, "status"])
            if m in g.index
            else "-"
            for m in wide["method"]
        ]
        if measure != "fit":  # the number of fits a job makes, next to its seconds
            cell = [
                f"{c} ({fmt(g.at[m, 'fits'])} fits)"
                if m in g.index and pd.notna(g.at[m, "fits"])
                else c
                for c, m in zip(cell, wide["method"], strict=True)
            ]
        key = f"{measure}:{ds}"
        wide[key] = cell
        wide[key + ":ratio"] = [
            g.at[m, "ratio_cart"] if m in g.index else None for m in wide["method"]
        ]
        columns[key] = f"{head}: s"
        columns[key + ":ratio"] = "× CART"
    sl = sc.get("slope") or {}
    return fill(
        "small",
        datasets=", ".join(f"{k} ({v} rows)" for k, v in (sc.get("datasets") or {}).items()),
        tune=(sc.get("tune") or {}).get("tune", "-"),
        tune_dataset=(sc.get("tune") or {}).get("dataset", "-"),
        repeats=sc.get("repeats", 3),
        settings="its own default settings (the method config as `treebench run method=<name>` "
        "fits it, not the bench profiles above)"
        if sc.get("params", "defaults") == "defaults"
        else "its bench profile (`methods:` in bench.yaml; a smoke run of the section, not its "
        "defaults)",
        basis=bench.basis,
        table=md_table(wide, columns) if wide is not None else "(no rows)",
        slope_method=sl.get("method", "-"),
        slope_features=sl.get("n_features", "-"),
        slope_params=", ".join(f"{k}={v}" for k, v in (sl.get("params") or {}).items())
        or "defaults",
        slope_table=md_table(slopes, ["method", "variant", "points", "rows", "fit_s", "slope"])
        if len(slopes)
        else "(no rows)",
    )


def _caps(bench) -> str:
    """Return the scaling series' time caps in words: the sections' and the methods' own."""
    sc, ps = bench.cfg["scaling"], bench.cfg["param_scaling"]
    same = sc.get("time_cap", 6) == ps.get("time_cap", 6)
    text = (
        f"{sc.get('time_cap', 6):g} s"
        if same
        else f"n_samples {sc.get('time_cap', 6):g} s, parameter {ps.get('time_cap', 6):g} s"
    )
    own = [f"{m} {s['time_cap']:g} s" for m, s in bench.settings.items() if s.get("time_cap")]
    if own:
        text += "; a method's own in bench.yaml: " + ", ".join(own)
    return text


def _store(bench, d: Path, files: dict) -> str:
    """Return the store section: ``store.csv``, ``store.png`` and a table per command."""
    sc = bench.cfg.get("store") or {}
    target = float(sc.get("target_seconds", 10))
    target_n = int(sc.get("target_records", 100000))
    st = store_frame(bench.store_rows)
    st.to_csv(d / "store.csv", index=False)
    plot_store(st, d / "store.png", target)
    files["store"] = d / "store.png"
    wide = st.pivot_table(
        index=["records", "command"],
        columns="cache",
        values=["wall_s", "peak_rss_mb", "returncode"],
        aggfunc="max",
    )
    wide.columns = [f"{v}_{c}" for v, c in wide.columns]
    wide = wide.reset_index()
    for c in [
        f"{v}_{k}" for v in ("wall_s", "peak_rss_mb", "returncode") for k in ("cold", "warm")
    ]:
        if c not in wide:
            wide[c] = np.nan
    columns = {
        "records": "records",
        "command": "command",
        "wall_s_cold": "s (cold)",
        "wall_s_warm": "s (warm)",
        "peak_rss_mb_cold": "peak RSS MB (cold)",
        "peak_rss_mb_warm": "peak RSS MB (warm)",
        "exit": "exit code",
    }
    for c in ("peak_rss_mb_cold", "peak_rss_mb_warm"):  # whole MB, not 1.8e+03
        wide[c] = [f"{v:.0f}" if pd.notna(v) else "-" for v in wide[c]]
    order = {c: i for i, c in enumerate(dict.fromkeys(st["command"]))}  # as run, not a-z
    wide = wide.sort_values(
        ["records", "command"], key=lambda s: s.map(order) if s.name == "command" else s
    )
    wide["exit"] = [
        "/".join(sorted({str(int(v)) for v in (a, b) if pd.notna(v)}))
        for a, b in zip(wide["returncode_cold"], wide["returncode_warm"], strict=True)
    ]
    at = st[st["records"] >= target_n]
    if not len(at):
        verdict = f"not measured here (largest store: {int(st['records'].max())} records)"
    else:
        missed = at[at["meets_target"].astype("boolean") == False]  # noqa: E712 - nullable
        verdict = (
            "**met** by every command, cold and warm"
            if not len(missed)
            else "**MISSED** by "
            + ", ".join(f"{r.command} ({r.cache}, {r.wall_s:.1f} s)" for r in missed.itertuples())
        )
    return fill(
        "store",
        sizes=", ".join(str(int(n)) for n in sorted(st["records"].unique())),
        target=f"{target:g}",
        target_n=target_n,
        verdict=verdict,
        plan_jobs=int(sc.get("plan_jobs", 10000)),
        plan_target=f"{float(sc.get('plan_target_seconds', 30)):g}",
        table=md_table(wide, columns),
    )


def _startup(bench, d: Path) -> str:
    """Return the startup section: ``startup.csv`` and its table."""
    sc = bench.cfg.get("startup") or {}
    target = float(sc.get("target_seconds", 1.0))
    st = startup_frame(bench.startup_rows)
    st.to_csv(d / "startup.csv", index=False)
    st = st.assign(
        heavy_imports=[str(v or "").replace(",", ", ") or "none" for v in st["heavy_imports"]],
        meets_target=["yes" if v in (True, "True") else "**no**" for v in st["meets_target"]],
    )
    columns = {
        "command": "command",
        "wall_s_min": "wall s (min)",
        "wall_s_median": "wall s (median)",
        "cpu_s_min": "CPU s (min)",
        "first_work_wall_s_min": "first fit: wall s (min)",
        "first_work_cpu_s_min": "first fit: CPU s (min)",
        "runs": "runs",
        "returncode": "exit code",
        "meets_target": f"≤ {target:g} s",
        "heavy_imports": "heavy libraries imported",
    }
    missed = [
        c
        for c, ok in zip(st["command"], st["meets_target"], strict=True)
        if ok != "yes" and c != FLOOR  # the yardstick is not a treebench command
    ]
    floor = st.loc[st["command"] == FLOOR, "wall_s_min"]
    first = st.set_index("command")["first_work_wall_s_min"]

    def missed_by(c):  # a run's share of scikit-learn's import, which it cannot skip
        if not len(floor) or pd.isna(first.get(c)):
            return f"`{c}`"
        f, x = float(floor.iloc[0]), float(first[c])
        return (
            f"`{c}` (fit at {x:.3g} s: the yardstick, scikit-learn's import alone, takes {f:.3g} s "
            f"of it, treebench's own start-up {x - f:.2g} s)"
        )

    verdict = (
        "**met** by every command"
        if not missed
        else "**MISSED** by " + ", ".join(missed_by(c) for c in missed)
    )
    if len(floor) and float(floor.iloc[0]) > target:
        verdict += (
            "; the yardstick alone is above the target on this machine "
            f"({float(floor.iloc[0]):.3g} s)"
        )
    return fill(
        "startup",
        target=f"{target:g}",
        heavy=", ".join(HEAVY),
        verdict=verdict,
        table=md_table(st, columns),
    )


def _references(d: Path) -> str:
    """Return the comparison with the authors' code, never measured here.

    From ``references.csv`` in ``d``, or else the committed one (copied to ``d``);
    ``scripts/reference/compare.py all`` writes it.
    """
    path = d / "references.csv"
    committed = PROJECT_DIR / "docs" / "bench" / "references.csv"
    if not path.exists() and committed.exists():
        shutil.copyfile(committed, path)
    if not path.exists():
        return fill("references_missing")
    df = read_references(path)
    return fill("references", **provenance(df), table=references_markdown(df))


def _workers_note(bench) -> str:
    """How the run used its workers (the quick profile keeps one per method; see bench.yaml)."""
    cfg = bench.cfg
    if not cfg.get("reuse_workers"):
        note = "one per method and dataset, or per series"
    else:
        note = "one per method, kept for every section: peak RSS is not from a fresh worker"
    if cfg.get("first_call"):
        note += (
            f"; a new worker first fits and predicts {FIRST_CALL_ROWS} rows, untraced and not "
            "recorded (the new workers of a section side by side)"
        )
    if getattr(bench, "aside_runs", None):
        note += f"; the {' and '.join(bench.aside_runs)} section(s) ran beside the other sections"
    return note


def _run_line(section: str, run: dict) -> str:
    """Return a section's run as a line.

    A run of some methods only also names the earlier run(s) that measured the others.
    """
    line = fill("run", section=section, **{**run, "git_sha": str(run.get("git_sha"))[:7]})
    while run.get("others_from"):
        earlier = run["others_from"]
        line = line.rstrip("\n") + fill(
            "run_others",
            methods=run["methods"],
            **{**earlier, "git_sha": str(earlier.get("git_sha"))[:7]},
        )
        run = earlier
    return line


def write_outputs(bench, out: Path, meta: dict) -> dict[str, Path]:
    """Write BENCHMARKS.md, CSVs and PNGs under ``out`` (plots and CSVs in ``out/docs/bench``)."""
    out = Path(out)
    d = out / "docs" / "bench"
    d.mkdir(parents=True, exist_ok=True)
    raw = pd.DataFrame(bench.rows, columns=RAW_COLUMNS)
    files = {
        "raw": d / "bench_raw.csv",
        "summary": d / "bench_summary.csv",
        "md": out / "BENCHMARKS.md",
    }
    raw.to_csv(files["raw"], index=False)
    summary = (
        summarize(raw, bench.ref, bench.basis)
        if (raw["section"] == "main").any()
        else pd.DataFrame(columns=SUMMARY_COLUMNS)
    )
    summary.to_csv(files["summary"], index=False)
    (d / "runs.json").write_text(json.dumps(bench.runs, indent=1))
    (d / "profiles.json").write_text(json.dumps(bench.profiles, indent=1))

    runs = "".join(_run_line(sec, r) for sec, r in bench.runs.items())
    md = [
        fill(
            "head",
            runs=runs.rstrip("\n"),
            cores=meta["cores"],
            cpu=meta["cpu"],
            machine_load=_machine_load(bench.runs, meta["cores"]),
            host=meta["host"],
            python=meta["python"],
            git_sha=meta["git_sha"],
            packages=", ".join(f"{k} {v}" for k, v in meta["packages"].items()),
            timeout=f"{bench.timeout:g}",
            workers=_workers_note(bench),
            threads=bench.threads,
            repeats=bench.runs.get("main", meta)["repeats"],
            basis=bench.basis,
            basis_note=fill(f"basis_{bench.basis}").strip(),
            predict_min_seconds=bench.cfg.get("predict_min_seconds"),
        )
    ]
    if len(summary):
        md.append(_main(summary))
        plot_overview(summary, d / "overview.png")
        files["overview"] = d / "overview.png"
    if (raw["section"] == "inference").any():
        md.append(_inference(bench, raw, d))
    if ((raw["section"] == "threads") & (raw["status"] == "ok")).any():
        md.append(_threads(bench, raw, d))
    if raw["section"].isin(["scaling_n", "scaling_param"]).any():
        md.append(_scaling(bench, raw, d, files))
    if raw["section"].isin(["small", "small_tune", "small_slope"]).any():
        md.append(_small(bench, raw, d))
    if getattr(bench, "store_rows", None):
        md.append(_store(bench, d, files))
    if getattr(bench, "startup_rows", None):
        md.append(_startup(bench, d))
    md.append(_references(d))
    md.append(fill("method_targets"))
    md.append(fill("footer"))
    files["md"].write_text("".join(md))
    return files
