"""Generic line figures declared per experiment (no method names in code).

A figure spec (``experiments.<name>.figures[]`` in a paper file)::

    name: acc_vs_depth          # file stem
    x: param.max_depth          # a param or a size/metric column (n_splits, split_evals, ...)
    y: test_accuracy            # a metric column (derived ones too: test_error, n_nodes) or
    info.<key> series: [method, param.teacher]   # one line per distinct value (default [method])
    facet: dataset              # one panel per value (default dataset; null = one panel) xscale:
    log                 # optional: linear/log/symlog where: {param.N2: 5}        # optional row
    filter title: "..."                # optional paper_points: true          # overlay value
    targets whose where pins x (default true)

When ``x`` is a param, points are grouped by series and x. When ``x`` is a measured column (e.g. the
number of splits), points are grouped by series and every other param that varies, and both x and y
are averaged over seeds and folds. Error bars are ±1 SD of y.

Colours: every registered method has one fixed colour in all figures (:func:`method_colors`); series
of one method (``series: [method, param.teacher]``) share it and differ in marker and line style.
"""

from __future__ import annotations

import ast
import functools
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report.select import add_derived, keep_best, norm, prefer_full, series_label
from treebench.report.targets import Target


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: line styles and markers of the series of one method within a figure
_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: colours of names that are no registered method (none of them is in the palette)
_UNKNOWN = ("#000000", "#3b3b3b", "#5e3c1b", "#1b3b5e")
#: a series legend goes below the panels (one for the figure) above this many series
_MAX_PANEL_LEGEND = 8


@functools.cache
def palette() -> tuple[str, ...]:
    """Return distinct colours.

    Tab20's dark shades, then its light ones (both without grey), tab20b, tab20c.
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    t20 = [to_hex(c) for c in colormaps["tab20"].colors]
    t20 = [c for i, c in enumerate(t20) if i not in (14, 15)]  # the grey pair reads as "no method"
    rest = [to_hex(c) for name in ("tab20b", "tab20c") for c in colormaps[name].colors]
    return tuple(dict.fromkeys(t20[0::2] + t20[1::2] + rest))


@functools.cache
def _method_colors() -> tuple[tuple[str, str], ...]:
    from treebench.methods import available_methods

    pal = palette()
    names = sorted(available_methods())
    if len(names) > len(pal):
        raise ValueError(f"{len(names)} registered methods but only {len(pal)} distinct colours")
    return tuple((m, pal[i]) for i, m in enumerate(names))


def method_colors() -> dict[str, str]:
    """One colour per registered method: the sorted method names over :func:`palette`.

    Returns
    -------
    dict
        Method name → hex colour; no two methods share one, and every figure uses this map.
    """
    return dict(_method_colors())


def method_color(name: str) -> str:
    """Return the colour of method ``name``.

    A name that is no registered method gets a dark neutral one.
    """
    colors = method_colors()
    if name in colors:
        return colors[name]
    return _UNKNOWN[zlib.crc32(name.encode()) % len(_UNKNOWN)]


def label_method(label: str) -> str:
    """Return the method of a series or selector label (``redt[teacher=rf]`` → ``redt``)."""
    return label.split("[", 1)[0]


def series_styles(labels, by_method: bool = True) -> dict[str, dict]:
    """Matplotlib style (``color``, ``marker``, ``ls``) per series label of one figure.

    Parameters
    ----------
    labels : iterable of str
        The figure's series labels.
    by_method : bool
        Labels start with the method (the figure's ``series`` starts with ``method``): colour by
        method, and tell a method's series apart by marker and line style. Otherwise one colour
        per label from the default cycle.

    Returns
    -------
    dict
        Label → keyword arguments for ``errorbar``/``plot``.
    """
    labels = sorted(set(labels))
    out, seen = {}, {}
    for i, s in enumerate(labels):
        if not by_method:
            out[s] = {"color": f"C{i % 10}", "marker": "o", "ls": "-"}
            continue
        m = label_method(s)
        k = seen[m] = seen.get(m, -1) + 1
        out[s] = {
            "color": method_color(m),
            "marker": _MARKERS[k % len(_MARKERS)],
            "ls": _STYLES[k % len(_STYLES)],
        }
    return out


def _numeric(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s.map(lambda v: np.nan if norm(v) == "null" else norm(v)), errors="coerce")


def _short(v) -> str:
    """Return a setting as a legend shows it.

    An estimator spec by its settings, not its class path.
    """
    if isinstance(v, str) and v.startswith("{"):  # a spec as the frame holds it
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return v
    if isinstance(v, dict) and "_target_" in v:
        return " ".join(f"{k}={norm(w)}" for k, w in v.items() if k != "_target_") or "default"
    return norm(v)


def figure_rows(df: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """Return the records a figure draws, one row per run.

    Ok, with its y, x numeric (``_x``), its panel (``_facet``) and series label (``_series``);
    full-profile rows where both exist.
    """
    df = add_derived(df)
    x, y = spec["x"], spec["y"]
    series = list(spec.get("series") or ["method"])
    facet = spec.get("facet", "dataset")
    if df.empty or x not in df.columns or y not in df.columns:
        return pd.DataFrame(columns=[*df.columns, "_facet", "_x", "_series"])
    ok = df[(df["status"] == "ok") & df[y].notna()].copy()
    for col, want in (spec.get("where") or {}).items():
        col = col if "." in col or col in ("method", "dataset", "profile") else f"param.{col}"
        wanted = {norm(w) for w in (want if isinstance(want, list) else [want])}
        ok = ok[ok[col].map(norm).isin(wanted)] if col in ok.columns else ok.iloc[0:0]
    for c in series:
        if c not in ok.columns:
            ok[c] = None
    ok = prefer_full(ok)
    ok["_facet"] = ok[facet].astype(str) if facet and facet in ok.columns else ""
    ok["_x"] = _numeric(ok[x])
    ok = ok[ok["_x"].notna()]
    ok["_series"] = ok.apply(lambda r: series_label(r, series), axis=1) if len(ok) else ""
    return ok


def figure_points(df: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """Return the aggregated points of a figure: facet, series, x, y mean, y sd, n."""
    x, y = spec["x"], spec["y"]
    series = list(spec.get("series") or ["method"])
    ok = figure_rows(df, spec)
    if ok.empty:
        return pd.DataFrame(columns=["facet", "series", "x", "y", "sd", "n"])
    best_over = tuple(c if "." in c else f"param.{c}" for c in spec.get("best_over") or ())
    if best_over:  # per point, the config the paper would pick (e.g. epochs on validation)
        by = spec.get("best_by", y)
        # series that do not record ``by`` (a baseline without a validation score) stay whole
        scored = (
            ok.groupby("_series")[by].transform(lambda v: v.notna().any()).astype(bool)
            if by in ok.columns
            else pd.Series(False, index=ok.index)
        )
        chosen = keep_best(
            ok[scored], best_over, by, spec.get("best", "max"), ("_facet", "_series", "_x")
        )
        ok = pd.concat([chosen, ok[~scored]])
    if x.startswith("param."):
        # a point's mean and SD are over runs (seeds x folds): where two runs of one seed at a
        # point differ in a setting, they are distinct configurations, each drawn as a point of
        # its own labelled with that setting (settings that differ only between seeds are a cell's
        # stated pooling, as in its target)
        run = [c for c in ("seed", "fold") if c in ok.columns]
        point = ["_facet", "_series", "_x"]
        params = [c for c in ok.columns if c.startswith("param.") and c not in (x, *series)]
        configs = ok[params].map(norm).astype(str).agg("|".join, axis=1) if params else ""
        pooled = (
            configs.groupby([ok[c] for c in point + run], dropna=False).transform("nunique") > 1
            if params
            else pd.Series(False, index=ok.index)
        )
        pooled = pooled.groupby([ok[c] for c in point], dropna=False).transform("any")
        for _, grp in ok[pooled].groupby(point, dropna=False):
            by_run = grp.groupby(run, dropna=False) if run else [(None, grp)]
            differ = [c for c in params if any(g[c].map(norm).nunique() > 1 for _, g in by_run)]
            ok.loc[grp.index, "_series"] = [
                f"{s}[{', '.join(f'{c.split(chr(46), 1)[-1]}={_short(v)}' for c, v in r.items())}]"
                for s, (_, r) in zip(grp["_series"], grp[differ].iterrows(), strict=True)
            ]
        keys = ["_facet", "_series", "_x"]
    else:
        varying = [
            c
            for c in ok.columns
            if c.startswith("param.") and c not in series and ok[c].map(norm).nunique() > 1
        ]
        for c in varying:
            ok[c] = ok[c].map(norm)
        keys = ["_facet", "_series", *varying]
    g = ok.groupby(keys, dropna=False)
    pts = pd.DataFrame(
        {"x": g["_x"].mean(), "y": g[y].mean(), "sd": g[y].std(ddof=1), "n": g[y].size()}
    ).reset_index()
    pts = pts.rename(columns={"_facet": "facet", "_series": "series"})
    return pts[["facet", "series", "x", "y", "sd", "n"]].sort_values(["facet", "series", "x"])


def paper_points(targets: list[Target], spec: dict) -> pd.DataFrame:
    """Value targets that sit on this figure: same y metric and a ``where`` that pins x."""
    x, y = spec["x"], spec["y"]
    facet = spec.get("facet", "dataset")
    rows = []
    for t in targets:
        if t.kind != "value" or t.metric != y or t.select is None or x not in t.select.where:
            continue
        xv = pd.to_numeric(norm(t.select.where[x]), errors="coerce")
        if np.isnan(xv):
            continue
        rows.append(
            {
                "facet": (t.select.dataset or "") if facet == "dataset" else "",
                "series": t.select.method,
                "x": float(xv),
                "y": t.value,
            }
        )
    return pd.DataFrame(rows, columns=["facet", "series", "x", "y"])


def make_figure(
    df: pd.DataFrame,
    spec: dict,
    out_dir: str | Path,
    targets: list[Target] = (),
    experiment: str = "",
    formats: tuple = ("png", "pdf"),
    points_csv: bool = True,
) -> list[Path]:
    """Draw one declared figure.

    Write ``<name>.<format>`` (and the points as ``<name>.csv``); return the image paths ([] if no
    data). PNGs carry no software stamp, so equal data give equal files on one machine.
    """
    pts = figure_points(df, spec)
    ref = paper_points(list(targets), spec) if spec.get("paper_points", True) else pd.DataFrame()
    if pts.empty:
        return []
    plt = _mpl()
    facets = sorted(pts["facet"].unique())
    ncol = min(3, len(facets))
    nrow = int(np.ceil(len(facets) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.3 * nrow), squeeze=False)
    scale = 100.0 if spec.get("percent", spec["y"].endswith(("accuracy", "error"))) else 1.0
    by_method = list(spec.get("series") or ["method"])[0] == "method"
    styles = series_styles(pts["series"], by_method)
    labels = spec.get("labels") or {}
    panel_legend = len(styles) <= _MAX_PANEL_LEGEND
    for i, f in enumerate(facets):
        ax = axes[i // ncol][i % ncol]
        for s, grp in pts[pts["facet"] == f].groupby("series"):
            ax.errorbar(
                grp["x"],
                scale * grp["y"],
                yerr=scale * grp["sd"].fillna(0),
                ms=3,
                capsize=2,
                lw=1.2,
                label=labels.get(s, s),
                **styles[s],
            )
        if not ref.empty:  # the paper's numbers: an x in the colour of the method they belong to
            r = ref[ref["facet"].isin([f, ""])]
            for s, grp in r.groupby("series"):
                ax.scatter(
                    grp["x"],
                    scale * grp["y"],
                    marker="x",
                    s=36,
                    lw=1.6,
                    color=method_color(s) if by_method else "k",
                    label=f"{labels.get(s, s)} (paper)",
                    zorder=3,
                )
        ax.set_title(f or spec.get("title", ""), fontsize=9)
        ax.set_xlabel(spec.get("xlabel", spec["x"].split(".", 1)[-1]))
        ax.set_ylabel(
            spec.get("ylabel", spec["y"].split(".", 1)[-1] + (" (%)" if scale == 100 else ""))
        )
        if spec.get("xscale"):
            ax.set_xscale(spec["xscale"])
            if spec["xscale"] == "log":  # a narrow range would label its minor ticks 1.005×10³
                ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.grid(alpha=0.3)
        if panel_legend:
            ax.legend(fontsize=7)
    for j in range(len(facets), nrow * ncol):
        axes[j // ncol][j % ncol].axis("off")
    n = int(pts["n"].max())
    fig.suptitle(
        spec.get("title", f"{experiment}: {spec['y']} vs {spec['x']}")
        + f"  (mean ± SD over ≤{n} runs)",
        fontsize=10,
    )
    bottom = 0.0
    if not panel_legend:  # one legend for all panels, below them
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        width = max(len(lab) for lab in handles) + 6  # characters of a legend entry
        ncols = max(1, min(6, len(handles), int(fig.get_figwidth() * 14 / width)))
        rows = -(-len(handles) // ncols)
        fig.set_figheight(fig.get_figheight() + 0.22 * rows + 0.2)
        bottom = (0.22 * rows + 0.2) / fig.get_figheight()
        fig.legend(
            list(handles.values()), list(handles), loc="lower center", ncols=ncols, fontsize=7
        )
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.4 / fig.get_figheight()))  # room for the suptitle
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in formats:
        p = out / f"{spec['name']}.{ext}"
        fig.savefig(p, dpi=130, metadata={"Software": None} if ext == "png" else None)
        paths.append(p)
    plt.close(fig)
    if points_csv:
        pts.to_csv(out / f"{spec['name']}.csv", index=False)
    return paths
