"""Bench figures: fit and predict per method (overview) and fit time against size (scaling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def plot_overview(summary: pd.DataFrame, path: Path) -> None:
    """Draw the overview figure into ``path``: median fit and predict seconds per method, ranges."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary[summary["status"] == "ok"]
    methods = list(dict.fromkeys(s["method"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * len(methods) + 2), sharey=True)
    ypos = {m: i for i, m in enumerate(methods)}
    for ds, g in s.groupby("dataset", sort=False):
        y = [ypos[m] for m in g["method"]]
        axes[0].errorbar(
            g["fit_s_median"],
            y,
            xerr=[g["fit_s_median"] - g["fit_s_min"], g["fit_s_max"] - g["fit_s_median"]],
            fmt="o",
            label=ds,
            capsize=2,
        )
        axes[1].errorbar(
            g["predict_sps_median"],
            y,
            xerr=[
                g["predict_sps_median"] - g["predict_sps_min"],
                g["predict_sps_max"] - g["predict_sps_median"],
            ],
            fmt="o",
            label=ds,
            capsize=2,
        )
    for ax, t in zip(
        axes, ["fit seconds (median, min-max)", "predict samples/s (test part)"], strict=True
    ):
        ax.set_xscale("log")
        ax.set_xlabel(t)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_yticks(range(len(methods)), methods)
    axes[0].invert_yaxis()
    axes[1].legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_scaling(
    raw: pd.DataFrame, slopes: pd.DataFrame, path: Path, fit_col: str = "fit_s"
) -> None:
    """Draw the scaling figures into ``path``: ``fit_col`` against rows and each swept parameter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from treebench.report.figures import method_color

    secs = [("scaling_n", "n_samples (log)")]
    params = raw.loc[raw["section"] == "scaling_param", "param"].dropna().unique().tolist()
    secs += [("scaling_param", p) for p in params]
    fig, axes = plt.subplots(1, len(secs), figsize=(6 * len(secs), 4.5), squeeze=False)
    for ax, (sec, p) in zip(axes[0], secs, strict=True):
        d = raw[(raw["section"] == sec) & (raw["status"] == "ok")]
        if sec == "scaling_param":
            d = d[d["param"] == p]
        for m, g in d.groupby("method", sort=False):
            sl = slopes[
                (slopes["method"] == m)
                & (slopes["axis"] == (p if sec != "scaling_n" else "n_samples"))
            ]
            lab = m + (
                f" ({sl['slope'].iloc[0]:.2f})"
                if len(sl) and np.isfinite(sl["slope"].iloc[0])
                else ""
            )
            ax.plot(
                g["value"].astype(float),
                g[fit_col].astype(float),
                "o-",
                color=method_color(m),
                label=lab,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(p.split(" ")[0])
        ax.set_ylabel("fit seconds")
        ax.set_title(f"fit time vs {p.split(' ')[0]} (slope)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_store(store: pd.DataFrame, path: Path, target_s: float | None = None) -> None:
    """Wall seconds (left) and peak RSS (right) of the store commands against records, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for (cmd, cache), g in store.groupby(["command", "cache"], sort=False):
        g = g.sort_values("records")
        style = "o-" if cache == "warm" else "s--"
        for ax, col in zip(axes, ("wall_s", "peak_rss_mb"), strict=True):
            ax.plot(
                g["records"].astype(float), g[col].astype(float), style, label=f"{cmd} ({cache})"
            )
    if target_s:
        axes[0].axhline(target_s, color="red", lw=1, ls=":", label=f"target {target_s:g} s")
    for ax, ylab in zip(axes, ("wall seconds", "peak RSS MB"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("records in the store")
        ax.set_ylabel(ylab)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title("store commands: wall time vs records")
    axes[1].set_title("store commands: peak memory vs records")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
