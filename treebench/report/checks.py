"""Compare collected results with paper targets: one verdict row per target.

Statuses: ``pass``, ``FAIL`` (a regression: ``treebench check`` exits non-zero), ``skipped`` (no
usable data: not run, dataset not in the mirror, method not implemented yet) and ``info`` (a number
shown in reports but not checked: a baseline from another paper, a value the config sets, a
structural check that could not have failed (the target's ``structural`` reason), or a number made
without the paper's full protocol -- a reduced profile or fewer runs -- which never passes).

Every FAIL, info and skipped row says why: the target's ``deviation`` (FAIL/info) or ``why``
(skipped) from the paper file, else "unexplained" / the missing data.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from pathlib import Path

import numpy as np
import pandas as pd

from treebench.report.select import (
    add_derived,
    aggregate,
    core_time,
    counted,
    curve_points,
    exact_mean,
    n_runs,
    norm,
    per_block,
    per_block_means,
    prefer_full,
    profile_of,
    run_cost,
    select,
)
from treebench.report.targets import Selector, Target

PASS, FAIL, SKIP, INFO = "pass", "FAIL", "skipped", "info"
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}

COLUMNS = [
    "id",
    "paper",
    "experiment",
    "kind",
    "source",
    "table",
    "dataset",
    "method",
    "metric",
    "units",
    "op",
    "paper_value",
    "paper_sd",
    "ours",
    "ours_sd",
    "n",
    "profile",
    "delta",
    "tol",
    "status",
    "note",
    "short_cells",  # the cells of runs behind ours with fewer runs than the paper's (cell_short)
    "gaps",  # what else ours lacks of the paper's protocol: a profile, configs, blocks, a size
    "structural",  # the check could not have failed (the target's ``structural``): info, not a pass
]


class Availability:
    """What exists locally, to say *why* a target has no data (all optional)."""

    def __init__(self, datasets=None, methods=None, unavailable: dict | None = None, plans=None):
        self.datasets = set(datasets) if datasets is not None else None
        self.methods = set(methods) if methods is not None else None
        self.unavailable = dict(unavailable or {})
        # experiment -> the sweep plan of its full profile, to see whether a best-of-configs
        # number chose among the whole grid (:func:`missing_configs`)
        self.plans = dict(plans or {})

    @classmethod
    def local(cls) -> Availability:
        """Return what is known locally, read without importing the methods (seconds).

        The packaged dataset configs, the registered methods and the method configs' names, and each
        experiment's full plan.
        """
        from treebench.catalog import full_plans, method_config_names
        from treebench.config import CONF_DIR
        from treebench.methods._catalog import method_names

        datasets = [p.stem for p in (Path(CONF_DIR) / "dataset").glob("*.yaml")]
        methods = set(method_names()) | method_config_names()
        return cls(datasets=datasets, methods=methods, plans=full_plans())

    def grid(self, sel: Selector) -> set[tuple[str, ...]] | None:
        """Return the configs of ``sel.best_over`` the full plan of ``sel.experiment`` sweeps.

        For its dataset and method (:func:`~treebench.config.plan_configs`, values
        :func:`norm`'d).
        """
        from treebench.config import plan_configs

        plan = self.plans.get(sel.experiment)
        if plan is None or sel.dataset is None or not sel.best_over:
            return None
        params = [c.split(".", 1)[1] for c in sel.best_over if c.startswith("param.")]
        if len(params) != len(sel.best_over):
            return None
        where = {k.split(".", 1)[1]: v for k, v in sel.where.items() if k.startswith("param.")}
        grid = plan_configs(plan, sel.dataset, sel.method, params, where)
        if grid is None or any(v is None for c in grid for v in c):  # a default: value unknown here
            return None
        return {tuple(norm(v) for v in c) for c in grid}

    def reason(self, sel: Selector | None, experiment: str) -> str:
        """Return why ``sel``'s rows are missing (data not in the mirror, or not in the plan).

        Or ``""``.
        """
        if sel is not None and sel.dataset is not None:
            if sel.dataset in self.unavailable:
                return f"not in mirror: {self.unavailable[sel.dataset]}"
            if self.datasets is not None and sel.dataset not in self.datasets:
                return f"no dataset config {sel.dataset!r} yet"
        if sel is not None and self.methods is not None and sel.method not in self.methods:
            return f"method {sel.method!r} not implemented yet"
        return f"not run (experiment {experiment})"


def _row(t: Target, **kw) -> dict:
    sel = t.select or t.lhs
    base = {
        "id": t.id,
        "paper": t.paper,
        "experiment": t.experiment,
        "kind": t.kind,
        "source": t.source,
        "table": t.table,
        "dataset": sel.dataset if sel else None,
        "method": sel.label() if sel else "",
        "metric": t.metric,
        "units": t.units,
        "op": t.op,
        "paper_value": t.value,
        "paper_sd": t.sd,
        "ours": float("nan"),
        "ours_sd": float("nan"),
        "n": 0,
        "profile": "",
        "delta": float("nan"),
        "tol": float("nan"),
        "status": SKIP,
        "note": t.note,
        "short_cells": [],
        "gaps": [],
        "structural": bool(t.structural),
    }
    if t.kind == "relation":
        base.update(units="share", paper_value=t.require)
    elif t.kind == "stat":
        base.update(units="p", paper_value=t.paper_p, op=f"expect {t.expect} at α={t.alpha}")
    base.update(kw)
    return base


def shortfall(
    t: Target, profile: str, n: int | None = None, configs: str = "", cost: float | None = None
) -> str:
    """Return what the numbers lack of the paper's protocol ("" when they have it all).

    ``configs`` is :func:`missing_configs`'s gap, ``cost`` the core-hours of one run
    (:func:`run_cost`), shown beside missing runs so that a reader sees what the rest would take.
    """
    gaps = profile_gap(t, profile)
    if t.runs is not None and n is not None and n < t.runs:
        each = f" ({core_time(cost)} a run)" if cost is not None and profile == t.profile else ""
        gaps.append(f"{n} of {t.runs} runs{each}")
    if configs:
        gaps.append(configs)
    return f"reduced: {', '.join(gaps)}" if gaps else ""


def profile_gap(t: Target, profile: str) -> list[str]:
    """``["reduced profile"]`` when ours ran (in part) under another profile than the paper's."""
    other = [p for p in profile.split("+") if p and p != t.profile]
    return [f"{'+'.join(other)} profile"] if other else []


def missing_configs(sel: Selector, present, avail: Availability) -> str:
    """Return "k of N configs" when a best-of-configs number chose among fewer configs.

    Fewer ``present`` configs (tuples of :func:`norm` values) than the experiment's full plan
    sweeps; "" when it had them all, or the plan is not known.
    """
    grid = avail.grid(sel) if present is not None else None
    if not grid:
        return ""
    have = len(grid & set(present))
    return f"{have} of {len(grid)} configs" if have < len(grid) else ""


def _blocks_short_of_grid(df: pd.DataFrame, sel: Selector, t: Target, blocks, avail) -> list[str]:
    """Return the blocks in which a relation side's ``best_over`` chose among too few configs.

    Fewer configs than the experiment's full plan sweeps for that block's dataset (a depth whose
    epoch grid ran in part).
    """
    if not sel.best_over or not t.per:
        return []
    rows = select(df, dataclasses.replace(sel, best_over=()), t.experiment)
    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    if t.metric in ok.columns:
        ok = ok[ok[t.metric].notna()]
    if ok.empty or any(c not in ok.columns for c in (*sel.best_over, *t.per)):
        return []
    keys = ok[list(t.per)].map(norm)
    configs = ok[list(sel.best_over)].map(norm)
    short = []
    for k in blocks:
        key = k if isinstance(k, tuple) else (k,)
        at = dict(zip(t.per, key, strict=True))
        grid = avail.grid(dataclasses.replace(sel, dataset=at.get("dataset", sel.dataset)))
        if not grid:
            continue
        m = np.ones(len(ok), dtype=bool)
        for c, v in at.items():
            m &= (keys[c] == norm(v)).to_numpy()
        if not grid <= set(configs[m].itertuples(index=False, name=None)):
            short.append(_block_name(k))
    return short


def _side_configs(df: pd.DataFrame, sel: Selector, t: Target) -> set | None:
    """Return the configs a relation side's ``best_over`` chooses among.

    As :func:`aggregate` has them.
    """
    if not sel.best_over:
        return None
    rows = select(df, dataclasses.replace(sel, best_over=()), t.experiment)
    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    if t.metric in ok.columns:
        ok = ok[ok[t.metric].notna()]
    if ok.empty or any(c not in ok.columns for c in sel.best_over):
        return None
    ok = prefer_full(ok)
    return set(ok[list(sel.best_over)].map(norm).itertuples(index=False, name=None))


def cell_short(t: Target, cell: str, runs: int, cost: float | None, profile: str) -> list[dict]:
    """Return ``[{cell, runs, of, core_h}]`` of the cells with fewer runs than the paper's.

    The cells of runs under the paper's profile (``core_h``: one run's core-hours, the mean of
    those so far); ``[]`` when there is none.
    """
    if t.runs is None or runs >= t.runs or cost is None or profile != t.profile:
        return []
    return [{"cell": cell, "runs": int(runs), "of": int(t.runs), "core_h": float(cost)}]


def block_cells_short(t: Target, df: pd.DataFrame, sides, blocks, profile: str) -> list[dict]:
    """:func:`cell_short` of every side in every block of a comparison."""
    if t.runs is None or not len(blocks):
        return []
    out = []
    for s in sides:
        runs = per_block(df, s, t.metric, t.per, n_runs, t.experiment).reindex(blocks)
        cost = per_block(df, s, t.metric, t.per, run_cost, t.experiment).reindex(blocks)
        for k in blocks[runs < t.runs]:
            at = dict(zip(t.per, k if isinstance(k, tuple) else (k,), strict=True))
            ds = norm(at.pop("dataset", s.dataset) or "")
            more = {c.split(".", 1)[-1]: norm(v) for c, v in at.items()}
            cell = f"{dataclasses.replace(s, where={**s.where, **more}).label()} · {ds}"
            c = cost[k]
            out += cell_short(t, cell, runs[k], None if pd.isna(c) else float(c), profile)
    return out


def block_shortfall(t: Target, df: pd.DataFrame, sides, blocks, profile: str) -> str:
    """:func:`shortfall` of a comparison over ``blocks``.

    Its profile, and the fewest runs behind a mean of any side in any block, naming the blocks below
    the paper's runs.
    """
    if t.runs is None or not len(blocks):
        return shortfall(t, profile)
    runs = pd.concat(
        [per_block(df, s, t.metric, t.per, n_runs, t.experiment).reindex(blocks) for s in sides],
        axis=1,
    ).min(axis=1)
    reduced = shortfall(t, profile, int(runs.min()))
    short = [_block_name(k) for k in blocks[runs < t.runs]]
    return f"{reduced} ({', '.join(short)})" if short and reduced else reduced


def verdict(t: Target, holds: bool, reduced: str) -> tuple[str, str]:
    """Status and the reason shown beside it.

    A config-set value, a structural check (one that could not have failed) or a reduced protocol is
    info.
    """
    if t.fixed:
        return INFO, f"set by config: {t.fixed}"
    if t.structural:
        return INFO, f"structural ({'holds' if holds else 'does not hold'}): {t.structural}"
    if not t.check:
        return INFO, t.deviation
    if reduced:
        return INFO, _join(reduced, t.deviation)
    if holds:
        return PASS, ""
    return FAIL, t.deviation or "unexplained"


def _within(t: Target, ours: float, tol: float) -> bool:
    if t.op == "~":
        return abs(ours - t.value) <= tol + 1e-12
    if t.op in (">=", ">"):
        return _OPS[t.op](ours, t.value - tol - (1e-12 if t.op == ">=" else 0))
    return _OPS[t.op](ours, t.value + tol + (1e-12 if t.op == "<=" else 0))


def check_value(t: Target, df: pd.DataFrame, avail: Availability) -> dict:
    """Check value target ``t`` against the records ``df``; return its result row."""
    rows = select(df, t.select, t.experiment)
    if (
        rows.empty
        and not t.check
        and avail.methods is not None
        and t.select.method not in avail.methods
    ):
        # a competitor's number the paper quotes beside its own (check: false): nothing to run here
        why = (
            f"reference only: {t.source}, quoted beside the paper's ({t.select.method} is not a "
            "method here)"
        )
        return _row(t, note=_join(t.why or why, t.note))
    if rows.empty:
        return _row(t, note=_join(t.why or _why_empty(t.select, df, t.experiment, avail), t.note))
    agg = aggregate(rows, t.metric, t.best_over, t.best, t.best_metric, t.nearest)
    if agg["n"] == 0:
        statuses = rows["status"].value_counts().to_dict()
        if statuses.get("failed"):
            err = rows.loc[rows["status"] == "failed", "error"].iloc[0] if "error" in rows else ""
            return _row(
                t,
                status=FAIL if t.check and not t.fixed and not t.structural else INFO,
                profile=agg["profile"],
                note=_join(f"all {counted(statuses['failed'], 'run')} failed: {err}", t.deviation),
            )
        if statuses.get("skipped"):
            why = (
                rows.loc[rows["status"] == "skipped", "reason"].iloc[0] if "reason" in rows else ""
            )
            return _row(t, profile=agg["profile"], note=f"runs skipped: {why}")
        return _row(t, profile=agg["profile"], note=_join(agg["note"], t.note))
    profile = agg["profile"]
    tol = t.tolerance_abs()
    ours = agg["mean"]
    chose = dataclasses.replace(t.select, best_over=tuple(t.best_over))
    grid_gap = missing_configs(chose, agg.get("configs"), avail)
    cost = run_cost(prefer_full(rows))
    reduced = shortfall(t, profile, agg["runs"], grid_gap, cost)
    status, why = verdict(t, _within(t, ours, tol), reduced)
    note = _join(
        why,
        agg["note"],
        f"{counted(agg['n_failed'], 'run')} failed" if agg["n_failed"] else "",
        t.note,
    )
    return _row(
        t,
        ours=ours,
        ours_sd=agg["sd"],
        n=agg["n"],
        profile=profile,
        delta=ours - t.value,
        tol=tol,
        status=status,
        note=note,
        short_cells=cell_short(
            t, f"{t.select.label()} · {t.select.dataset}", agg["runs"], cost, profile
        ),
        gaps=profile_gap(t, profile) + ([grid_gap] if grid_gap else []),
    )


def _largest_run_short_of(t: Target, df: pd.DataFrame) -> tuple[Target, float, float] | None:
    """Return ``t`` with its sides' ``short_of`` value lowered to a size that has run.

    The ``short_of`` value (the paper's size) is lowered to the largest smaller one the lhs has ok
    rows of; returned with that size and the paper's. None when it has none.
    """
    col, lhs = t.short_of, t.lhs
    want = float(lhs.where[col])
    rest = {k: v for k, v in lhs.where.items() if k != col}
    rows = select(df, dataclasses.replace(lhs, where=rest), t.experiment)
    if "status" in rows.columns:
        rows = rows[rows["status"] == "ok"]
    if col not in rows.columns or t.metric not in rows.columns:
        return None
    sizes = pd.to_numeric(rows.loc[rows[t.metric].notna(), col], errors="coerce")
    sizes = sizes[sizes < want]
    if sizes.empty:
        return None
    have = float(sizes.max())
    have = int(have) if have.is_integer() else have

    def lowered(sel):
        if sel is None or col not in sel.where or float(sel.where[col]) != want:
            return sel
        return dataclasses.replace(sel, where={**sel.where, col: have})

    return dataclasses.replace(t, lhs=lowered(lhs), rhs=lowered(t.rhs), short_of=None), have, want


def check_relation(t: Target, df: pd.DataFrame, avail: Availability, short: str = "") -> dict:
    """Check relation target ``t`` (left side against right) against ``df``; return its row."""
    if t.at:
        return check_curves(t, df, avail)
    left = per_block_means(df, t.lhs, t.metric, t.per, t.experiment)
    if t.short_of and not len(left):  # the paper's size has not run: the largest that has
        fell = _largest_run_short_of(t, df)
        if fell is not None:
            low, have, want = fell
            what = f"at {have:g} of the paper's {want:g} {t.short_of.split('.', 1)[-1]}"
            return check_relation(low, df, avail, short=f"{what} (the largest run)")
    if t.rhs is None:  # a constant
        right = pd.Series(t.rhs_value, index=left.index, dtype=float)
        rlabel = t.rhs_label or f"{t.rhs_value:g}"
    else:
        right = per_block_means(df, t.rhs, t.metric, t.per, t.experiment)
        rlabel = t.rhs.label()
    both = (
        pd.concat({"lhs": left, "rhs": right}, axis=1).dropna()
        if len(left) and len(right)
        else None
    )
    label = f"{t.lhs.label()} {t.op} {rlabel}"
    if both is None or both.empty:
        missing = t.lhs if not len(left) else t.rhs
        return _row(
            t, method=label, note=_join(t.why or avail.reason(missing, t.experiment), t.claim)
        )
    op = _OPS[t.op]
    slack = t.margin if t.op in (">=", ">") else -t.margin
    holds = op(both["lhs"] + slack, both["rhs"])
    bad = [_block_name(k) for k in both.index[~holds]]
    sides = [s for s in (t.lhs, t.rhs) if s is not None]
    profile = "+".join(sorted({p for s in sides for p in _profile_of(df, s, t).split("+") if p}))
    reduced = block_shortfall(t, df, sides, both.index, profile)
    gaps = profile_gap(t, profile)
    for s in sides:  # a side that is a best-of-configs over part of the plan's grid
        gap = missing_configs(s, _side_configs(df, s, t), avail)
        short_blocks = _blocks_short_of_grid(df, s, t, both.index, avail)
        if short_blocks and not (gap and len(short_blocks) == len(both)):  # else gap says it
            names = "/".join(c.split(".", 1)[-1] for c in s.best_over)
            what = (
                f"{len(short_blocks)} {'/'.join(t.per)} chose among fewer {names} "
                f"({', '.join(short_blocks)})"
            )
            gap = f"{gap}, {what}" if gap else what
        if gap:
            reduced = f"{reduced}, {gap}" if reduced else f"reduced: {gap}"
            gaps.append(gap)
    if t.blocks is not None and len(both) < t.blocks:  # the paper's claim spans more blocks
        what = f"{len(both)} of {t.blocks} {'/'.join(t.per) or 'block'}"
        reduced = f"{reduced}, {what}" if reduced else f"reduced: {what}"
        gaps.append(what)
    if short:
        reduced = f"{reduced}, {short}" if reduced else f"reduced: {short}"
        gaps.append(short)
    lhs = ""  # one block: the compared numbers themselves
    if len(both) == 1 and (not t.per or t.rhs is None):
        lhs = f"; lhs {both['lhs'].iloc[0]:.4g}" + (
            f", rhs {t.rhs_value:.4g}" if t.rhs is None else ""
        )
    cells = block_cells_short(t, df, sides, both.index, profile)
    return _share_row(
        t, label, holds, "/".join(t.per) or "block", reduced, profile, bad, lhs, cells, gaps
    )


def _share_row(
    t: Target,
    label: str,
    holds,
    what: str,
    reduced: str,
    profile: str,
    bad,
    extra="",
    cells=(),
    gaps=(),
):
    """Return a relation's verdict row.

    The share of ``holds`` (one per compared ``what``) against the share the claim requires, the
    failing ones named (``bad``), ``extra`` after the count; ``cells`` = :func:`block_cells_short`,
    ``gaps`` the rest of what ``reduced`` says.
    """
    holds = np.asarray(holds, dtype=bool)
    share = float(holds.mean())
    status, why = verdict(t, share >= t.require - 1e-12, reduced)
    need = "all" if t.require >= 1 else need_text(t.require)
    return _row(
        t,
        method=label,
        units="share",
        paper_value=t.require,
        ours=share,
        n=len(holds),
        profile=profile,
        delta=share - t.require,
        tol=0.0,
        status=status,
        short_cells=list(cells),
        gaps=list(gaps),
        note=_join(
            f"{int(holds.sum())}/{len(holds)} {what} hold (need {need}){extra}",
            why,
            t.claim,
            t.note,
            f"fails on: {', '.join(bad)}" if bad else "",
        ),
    )


def _block_name(k) -> str:
    """Return a block's key as its readers write it: ``connect4/5``, not ``connect4/5.0``."""
    return "/".join(map(norm, k)) if isinstance(k, tuple) else norm(k)


def check_curves(t: Target, df: pd.DataFrame, avail: Availability) -> dict:
    """Return a relation at equal size (``at``), as a figure of a metric against size is read.

    In each block, every rhs config's mean against the lhs curve at that config's mean size (linear
    in log size between the two lhs configs around it). An rhs size outside the lhs's range is not
    compared (the lhs is not extrapolated) and the note counts it.
    """
    per = tuple(t.per)
    left = curve_points(df, t.lhs, t.metric, t.at, per, t.experiment)
    right = curve_points(df, t.rhs, t.metric, t.at, per, t.experiment)
    label = f"{t.lhs.label()} {t.op} {t.rhs.label()} at equal {t.at}"
    if left.empty or right.empty:
        missing = t.lhs if left.empty else t.rhs
        return _row(
            t, method=label, note=_join(t.why or avail.reason(missing, t.experiment), t.claim)
        )
    for side in (left, right):  # each point's block key, as per_block_means has them
        keys = list(side[list(per)].itertuples(index=False, name=None)) if per else []
        side["_b"] = [k[0] if len(k) == 1 else k for k in keys] if per else "all"
    pairs, outside = [], 0
    for b, r in right.groupby("_b", sort=False):
        # on either side, configs of one size (a saturated C range, say) are one point: their mean
        r = r.groupby("x", as_index=False)["y"].agg(exact_mean)
        ln = left[left["_b"] == b].groupby("x")["y"].agg(exact_mean)
        if ln.empty:
            continue
        lx = np.log(ln.index.to_numpy(dtype=float))
        inside = (r["x"] >= ln.index.min()) & (r["x"] <= ln.index.max())
        outside += int((~inside).sum())
        for x, y in r.loc[inside, ["x", "y"]].itertuples(index=False):
            pairs.append((b, x, float(np.interp(np.log(x), lx, ln.to_numpy())), y))
    if not pairs:
        return _row(
            t,
            method=label,
            note=_join(f"no {t.rhs.label()} {t.at} within the range of {t.lhs.label()}'s", t.claim),
        )
    lhs = np.array([p[2] for p in pairs])
    rhs = np.array([p[3] for p in pairs])
    slack = t.margin if t.op in (">=", ">") else -t.margin
    holds = _OPS[t.op](lhs + slack, rhs)
    blocks = pd.Index(list(dict.fromkeys(p[0] for p in pairs)))
    profile = "+".join(
        sorted({p for s in (t.lhs, t.rhs) for p in _profile_of(df, s, t).split("+") if p})
    )
    # a curve has as many runs as its least-run point: the fewest over both sides, per block
    runs = pd.concat([left, right]).groupby("_b", sort=False)["runs"].min().reindex(blocks)
    reduced = shortfall(t, profile, int(runs.min()))
    short = [_block_name(b) for b in blocks[(runs < t.runs).to_numpy()]] if t.runs else []
    if short and reduced:
        reduced = f"{reduced} ({', '.join(short)})"
    gaps = [g for s in (t.lhs, t.rhs) for g in _curve_config_gaps(t, df, s, blocks, avail)]
    if t.blocks is not None and len(blocks) < t.blocks:
        gaps.append(f"{len(blocks)} of {t.blocks} {'/'.join(per) or 'block'}")
    if gaps:
        reduced = f"{reduced}, {', '.join(gaps)}" if reduced else f"reduced: {', '.join(gaps)}"
    gaps = profile_gap(t, profile) + gaps
    bad = [
        f"{_block_name(b)} at {x:.4g}"
        for (b, x, _, _), h in zip(pairs, holds, strict=True)
        if not h
    ]
    extra = f"; {outside} outside {t.lhs.label()}'s {t.at} range, not compared" if outside else ""
    cells = []
    for sel, side in ((t.lhs, left), (t.rhs, right)):  # each point of a compared block
        for _, pt in side[side["_b"].isin(blocks)].iterrows():
            at = {c: norm(pt[c]) for c in per}
            where = "/".join(v for v in [at.pop("dataset", sel.dataset), *at.values()] if v)
            name = sel.label() + (f" at {pt['config']}" if pt["config"] else "")
            cost = None if pd.isna(pt["core_h"]) else float(pt["core_h"])
            cells += cell_short(t, f"{name} · {where}", pt["runs"], cost, profile)
    return _share_row(
        t, label, holds, f"{t.rhs.label()} sizes", reduced, profile, bad, extra, cells, gaps
    )


def _curve_config_gaps(t: Target, df: pd.DataFrame, sel: Selector, blocks, avail) -> list[str]:
    """Return, per dataset block, a curve side running fewer configs than the full plan there.

    Configs are its varying params: "mnist tnt 7 of 10 configs".
    """
    if "dataset" not in t.per:
        return []
    rows = select(df, sel, t.experiment, largest_per=tuple(t.per))
    if rows.empty or t.metric not in rows.columns:
        return []
    ok = rows[(rows["status"] == "ok") & rows[t.metric].notna()]
    params = [c for c in ok.columns if c.startswith("param.") and ok[c].map(norm).nunique() > 1]
    out = []
    for b in blocks:
        ds = b[list(t.per).index("dataset")] if isinstance(b, tuple) else b
        part = ok[ok["dataset"] == ds]
        present = set(part[params].map(norm).itertuples(index=False, name=None))
        chose = dataclasses.replace(sel, dataset=ds, best_over=tuple(params))
        gap = missing_configs(chose, present, avail) if params else ""
        if gap:
            out.append(f"{_block_name(b)} {sel.method} {gap}")
    return out


def check_trend(t: Target, df: pd.DataFrame, avail: Availability) -> dict:
    """Return a Spearman trend over blocks.

    Per block, the ``best_of`` value with the best mean metric against the block's mean ``x`` (e.g.
    the best validation share against the feature count).
    """
    from scipy.stats import spearmanr

    label = f"spearman({t.x}, best {t.best_of} of {t.lhs.label()})"
    rows = select(df, t.lhs, t.experiment)
    rows = rows[rows["status"] == "ok"] if "status" in rows else rows
    need = [t.metric, t.x, t.best_of, *t.per]
    if rows.empty or any(c not in rows.columns for c in need):
        return _row(t, method=label, note=t.why or avail.reason(t.lhs, t.experiment))
    rows = rows.dropna(subset=[t.metric, t.best_of])
    higher = not t.metric.endswith(("error", "rmse", "mae"))
    cells = rows.groupby([*t.per, t.best_of])[t.metric]
    means, runs = cells.agg(exact_mean), cells.size()
    by_block = means.groupby(level=list(range(len(t.per))))
    pick = by_block.idxmax() if higher else by_block.idxmin()
    y = pd.Series([k[-1] for k in pick], index=pick.index, dtype=float)
    x = rows.groupby(list(t.per))[t.x].agg(exact_mean).reindex(y.index)
    if len(y) < 3:
        return _row(t, method=label, note=f"needs >= 3 {'/'.join(t.per)}, got {len(y)}")
    rho, p = spearmanr(x, y)
    rho, p = float(rho), float(p)
    holds = not math.isnan(rho) and (rho < 0 if t.sign == "negative" else rho > 0)
    if t.expect == "significant":
        holds = holds and p < t.alpha
    profile = _profile_of(df, t.lhs, t)
    reduced = shortfall(t, profile, int(runs.min()))  # the thinnest (block, value) cell
    per_block = runs.groupby(level=list(range(len(t.per)))).size()  # values measured per block
    gaps = []
    short = _trend_grid_gaps(t, rows, y.index, avail)
    if short:  # blocks whose best value was chosen among fewer values than the plan sweeps
        fewest = min(short, key=lambda s: s[0] / s[1])
        gaps.append(
            f"{len(short)} {'/'.join(t.per)} chose among fewer {t.best_of.split('.', 1)[-1]}"
            f" values than planned (fewest {fewest[0]} of {fewest[1]})"
        )
    elif per_block.min() < per_block.max():
        gaps.append(f"{int((per_block < per_block.max()).sum())} {'/'.join(t.per)} lack values")
    if t.blocks is not None and len(y) < t.blocks:
        gaps.append(f"{len(y)} of {t.blocks} {'/'.join(t.per)}")
    if gaps:
        reduced = ", ".join([reduced or "reduced:", *gaps]).replace("reduced:,", "reduced:")
    status, why = verdict(t, holds, reduced)
    short_cells = []
    for key, part in rows.groupby([*t.per, t.best_of]):  # each (block, value) mean the pick reads
        *block, value = key
        at = dict(zip(t.per, block, strict=True))
        ds = norm(at.pop("dataset", t.lhs.dataset) or "")
        where = {**t.lhs.where, **{c: norm(v) for c, v in at.items()}, t.best_of: norm(value)}
        cell = f"{dataclasses.replace(t.lhs, where=where).label()} · {ds}"
        short_cells += cell_short(t, cell, n_runs(part), run_cost(part), profile)
    wanted = f"ρ {'<' if t.sign == 'negative' else '>'} 0"
    return _row(
        t,
        method=label,
        units="rho",
        ours=rho,
        n=len(y),
        op=wanted + (f", p < {t.alpha:g}" if t.expect == "significant" else ""),
        profile=profile,
        status=status,
        short_cells=short_cells,
        gaps=profile_gap(t, profile) + gaps,
        note=_join(why, f"ours: ρ {rho:+.3f} (p={p:.3g}), N={len(y)}", t.claim, t.note),
    )


def _trend_grid_gaps(t: Target, rows: pd.DataFrame, blocks, avail: Availability) -> list:
    """Return the (measured, planned) counts of ``t.best_of`` values of the short dataset blocks.

    For each dataset block that has fewer values than the experiment's full plan sweeps for it;
    empty when blocks are not datasets, ``best_of`` is not a param, or the plan is not known.
    """
    if tuple(t.per) != ("dataset",) or not t.best_of.startswith("param."):
        return []
    short = []
    for block in blocks:
        sel = dataclasses.replace(
            t.lhs, dataset=block, experiment=t.experiment, best_over=(t.best_of,)
        )
        grid = avail.grid(sel)
        if not grid:
            continue
        have = {(norm(v),) for v in rows.loc[rows["dataset"] == block, t.best_of]}
        if len(grid & have) < len(grid):
            short.append((len(grid & have), len(grid)))
    return short


def check_stat(t: Target, df: pd.DataFrame, avail: Availability) -> dict:
    """Check statistical-test target ``t`` against ``df``; return its result row."""
    from treebench.report import stats

    if t.test == "spearman":
        return check_trend(t, df, avail)
    if t.test in ("friedman", "nemenyi"):
        cols = {g.label(): per_block_means(df, g, t.metric, t.per, t.experiment) for g in t.groups}
        missing = [g for g in t.groups if cols[g.label()].empty]
        label = f"{t.test}(" + ", ".join(cols) + ")"
        if t.test == "nemenyi":
            label = (
                f"nemenyi({t.lhs.label()} vs each of "
                + ", ".join(c for c in cols if c != t.lhs.label())
                + ")"
            )
        if missing:
            reasons = [avail.reason(g, t.experiment) for g in missing]
            informative = [r for r in reasons if not r.startswith("not run")]
            return _row(t, method=label, note=t.why or (informative or reasons)[0])
        table = pd.concat(cols, axis=1).dropna()
        blocks = table.index
        if len(table) < 2:
            return _row(
                t, method=label, note=f"needs >= 2 complete {'/'.join(t.per)}, got {len(table)}"
            )
        if t.test == "friedman":
            res = stats.friedman(table)
        else:  # the largest pairwise p of lhs against the others: all significant iff it is
            higher = not t.metric.endswith(("error", "rmse", "mae"))
            nem = stats.nemenyi(table, t.alpha, higher_is_better=higher)
            others = [c for c in table.columns if c != t.lhs.label()]
            pv = nem["p_values"].loc[t.lhs.label(), others].astype(float)
            res = {
                "statistic": float(nem["ranks"][t.lhs.label()]),
                "p": float(pv.max()),
                "n": nem["n"],
            }
    else:
        left = per_block_means(df, t.lhs, t.metric, t.per, t.experiment)
        right = per_block_means(df, t.rhs, t.metric, t.per, t.experiment)
        label = f"wilcoxon({t.lhs.label()}, {t.rhs.label()})"
        if left.empty or right.empty:
            return _row(
                t,
                method=label,
                note=t.why or avail.reason(t.lhs if left.empty else t.rhs, t.experiment),
            )
        both = pd.concat({"lhs": left, "rhs": right}, axis=1).dropna()
        blocks = both.index
        if len(both) < 2:
            return _row(
                t, method=label, note=f"needs >= 2 paired {'/'.join(t.per)}, got {len(both)}"
            )
        res = stats.wilcoxon(both["lhs"], both["rhs"])
    significant = res["p"] < t.alpha
    sides = list(t.groups) or [t.lhs, t.rhs]
    profile = "+".join(sorted({p for s in sides for p in _profile_of(df, s, t).split("+") if p}))
    reduced = block_shortfall(t, df, sides, blocks, profile)
    status, why = verdict(t, significant == (t.expect == "significant"), reduced)
    paper = (
        f"paper: stat {t.paper_statistic:g}, p={t.paper_p:g}; "
        if t.paper_statistic is not None and t.paper_p is not None
        else ""
    )
    return _row(
        t,
        method=label,
        units="p",
        paper_value=t.paper_p,
        ours=res["p"],
        n=res["n"],
        tol=t.alpha,
        op=f"expect {t.expect} at α={t.alpha}",
        profile=profile,
        status=status,
        short_cells=block_cells_short(t, df, sides, blocks, profile),
        gaps=profile_gap(t, profile),
        note=_join(
            why,
            f"{paper}ours: {'mean rank' if t.test == 'nemenyi' else 'stat'} "
            f"{res['statistic']:.4g}, N={res['n']}",
            t.claim,
            t.note,
        ),
    )


def need_text(require: float) -> str:
    """How a relation's required share reads: ``most`` is a strict majority, as the code checks."""
    return "most (> 50%)" if 0.5 < require < 0.5 + 1e-6 else f">= {require:.0%}"


def _profile_of(df: pd.DataFrame, sel: Selector, t: Target) -> str:
    """Profiles of the ok rows a selector uses (full preferred, as the aggregation does)."""
    rows = select(df, sel, t.experiment)
    if rows.empty or "status" not in rows:
        return ""
    return profile_of(prefer_full(rows[rows["status"] == "ok"]))


def _why_empty(sel: Selector, df: pd.DataFrame, experiment: str, avail: Availability) -> str:
    """Why a selector matches nothing; names a ``where`` mismatch (e.g. a renamed parameter)."""
    if sel.where:
        loose = select(df, Selector(sel.method, sel.dataset, {}, sel.experiment), experiment)
        if len(loose):
            missing = [c for c in sel.where if c not in loose.columns]
            found = f"{counted(len(loose), 'record')} of {sel.method}"
            if missing:  # a parameter the records lack: a renamed or misspelt one
                return f"{found} but none match where {sel.where}: columns {missing} not recorded"
            have = "; ".join(f"{c} has {sorted(set(loose[c].map(norm)))}" for c in sel.where)
            return f"{avail.reason(sel, experiment)}: {found} at other settings ({have})"
    return avail.reason(sel, experiment)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def run_checks(
    targets: list[Target], df: pd.DataFrame, avail: Availability | None = None
) -> pd.DataFrame:
    """One verdict row per target (see :data:`COLUMNS`)."""
    avail = avail or Availability()
    df = add_derived(df) if not df.empty else df
    if df.empty:
        df = pd.DataFrame(columns=["experiment", "method", "dataset", "status"])
    out = []
    for t in targets:
        fn = {"value": check_value, "relation": check_relation, "stat": check_stat}[t.kind]
        row = fn(t, df, avail)
        if t.lowered:  # a loosened guard says why, first
            row["note"] = _join(t.lowered_note(), row["note"])
        out.append(row)
    res = pd.DataFrame(out, columns=COLUMNS)
    return res


def n_failed(res: pd.DataFrame) -> int:
    """Return the number of failed targets in the results ``res``."""
    return int((res["status"] == FAIL).sum()) if not res.empty else 0


def fmt_num(v, units: str, digits: int | None = None) -> str:
    """Return a record-unit value in the target's printed units.

    Percent ×100, counts as integers.
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if units == "percent":
        return f"{100 * v:.{2 if digits is None else digits}f}"
    if units == "count":
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    if units == "share":
        return f"{v:.0%}"
    if units == "p":
        return f"{v:.3g}"
    return f"{v:.{4 if digits is None else digits}f}"


def display_frame(res: pd.DataFrame) -> pd.DataFrame:
    """Verdicts with numbers formatted in the paper's units: paper, ours (mean ± sd), Δ, tol."""
    rows = []
    for _, r in res.iterrows():
        u = r["units"]
        paper = fmt_num(r["paper_value"], u)
        if (
            r["kind"] == "value"
            and isinstance(r["paper_sd"], float)
            and not np.isnan(r["paper_sd"])
        ):
            paper += f" ± {fmt_num(r['paper_sd'], u)}"
        if r["kind"] == "relation":
            paper = f"{r['op']} in {fmt_num(r['paper_value'], 'share')}"
        ours = fmt_num(r["ours"], u)
        if isinstance(r["ours_sd"], float) and not np.isnan(r["ours_sd"]) and r["kind"] == "value":
            ours += f" ± {fmt_num(r['ours_sd'], u)}"
        tol = (
            "–"
            if r["kind"] != "value" or np.isnan(r["tol"])
            else (("±" if r["op"] == "~" else r["op"]) + " " + fmt_num(r["tol"], u))
        )
        if r["kind"] == "stat":
            tol = r["op"]
        rows.append(
            {
                "target": r["id"],
                "source": r["source"],
                "dataset": r["dataset"] if isinstance(r["dataset"], str) else "",
                "method": r["method"],
                "metric": r["metric"] + (" (%)" if u == "percent" else ""),
                "paper": paper,
                "ours": ours,
                "n": int(r["n"]),
                "profile": r["profile"],
                "Δ": "–"
                if np.isnan(r["delta"])
                else (f"{100 * r['delta']:+.2f}" if u == "percent" else f"{r['delta']:+.3g}"),
                "tolerance": tol,
                "status": r["status"],
                "note": r["note"],
            }
        )
    return pd.DataFrame(rows)
