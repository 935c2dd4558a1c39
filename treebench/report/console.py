"""Terminal output with rich.

Summary tables (of a sweep, ``collect``, ``report``), plans and checks.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from rich import box
from rich.markup import escape
from rich.table import Table

from treebench.results.console import fmt as _fmt
from treebench.results.store import Store
from treebench.results.table import to_frame
from treebench.term import make_console

console = make_console()


def _num(v) -> str:
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return _fmt(v)


def print_summary(df, title: str) -> None:
    """Print a :func:`summary_table` with rich: mean ± sd in one column, sizes rounded."""
    if df.empty:
        console.print(f"[yellow]{title}: no results[/]")
        return
    metric = "test" if "metric" in df.columns else df.attrs.get("metric", "metric")
    t = Table(title=title)
    cols = [c for c in ("dataset", "method", "config", "metric", "n") if c in df.columns]
    if "config" in cols and not df["config"].astype(bool).any():
        cols.remove("config")  # every method ran one configuration per dataset
    for c in cols:
        # text columns fold when the terminal is narrow, so a config is never squeezed out
        t.add_column(
            c,
            justify="left" if c != "n" else "right",
            no_wrap=c == "n",
            overflow="fold",
        )
    extra = [c for c in ("n_splits", "split_evals", "fit_s", "compile_s") if c in df.columns]
    extra += [c for c in ("failed", "skipped") if c in df.columns and df[c].sum() > 0]
    if "mean" in df.columns:
        t.add_column(metric, justify="right", no_wrap=True)
    for c in extra:
        t.add_column(c, justify="right", no_wrap=True)
    configs = Footnotes(_INLINE_CHARS + 8)
    for _, row in df.iterrows():
        cells = [  # escaped: a config such as redt[teacher=rf] is text, not rich markup
            escape(
                _fmt(row[c]).removeprefix("test_")
                if c == "metric"
                else configs.cell(_fmt(row[c]))
                if c == "config"
                else _fmt(row[c])
            )
            for c in cols
        ]
        if "mean" in df.columns:
            sd = row["sd"]
            cells.append(f"{row['mean']:.4f} ± {0.0 if math.isnan(sd) else sd:.4f}")
        for c in extra:
            v = row[c]
            cells.append(_num(v))
        t.add_row(*cells)
    console.print(t)  # piped output (sweep logs, CI) is full width, see treebench.term
    configs.print("configurations (the parameters that differ among a method's runs)")


def _job_state(job) -> str:
    overrides, n, done, *res = job
    if len(res) > 1:  # left out of the launch
        return res[1]
    return "done" if done == n else ("partial" if done else "to run")


def _job_method(overrides) -> str:
    return next((o.split("=", 1)[1] for o in overrides if o.startswith("method=")), "(default)")


def _plan_by_method(plan, estimates) -> Table:
    """One row per method of the plan: its jobs, records done and to run, and core time."""
    from treebench.report.select import core_time

    groups: dict[str, dict] = {}
    for job, est in zip(plan, estimates, strict=True):
        g = groups.setdefault(
            _job_method(job[0]), {"jobs": 0, "n": 0, "done": 0, "states": {}, "est": [], "none": 0}
        )
        g["jobs"] += 1
        g["n"] += job[1]
        g["done"] += job[2]
        state = _job_state(job)
        g["states"][state] = g["states"].get(state, 0) + 1
        if est is not None:
            g["est"].append(est)
        elif state in ("to run", "partial"):
            g["none"] += 1
    t = Table(title=f"sweep plan: {len(plan):,} jobs by method")
    for name, justify in (("method", "left"), ("jobs", "right"), ("records done", "right")):
        t.add_column(name, justify=justify)
    t.add_column("states")
    t.add_column("core time to run", justify="right")
    for method, g in groups.items():
        est = core_time(sum(g["est"]) / 3600) if g["est"] else ""
        if g["none"] and g["est"]:
            est += f" (+{g['none']} unknown)"
        states = ", ".join(f"{n:,} {s}" for s, n in g["states"].items())
        t.add_row(escape(method), f"{g['jobs']:,}", f"{g['done']:,}/{g['n']:,}", states, est)
    return t


def print_plan(plan, estimates=None, missing: str = "", limit: int | None = None) -> None:
    """Print a sweep's jobs (their overrides) with how many of their records are done.

    Where ``estimates`` has one, also the core-seconds their runs still to do will take; a job whose
    plan entry ends in a state ("no data") is not launched, and ``missing`` says why.

    A plan of more than ``limit`` jobs (None: no limit; the sweeper's ``plan_rows``) is summarised
    per method, then its first
    ``limit`` jobs are listed and the rest counted (``treebench run ... --dry-run --all`` lists
    them all).
    """
    from treebench.report.select import core_time

    estimates = estimates or [None] * len(plan)
    shown = plan if limit is None or len(plan) <= limit else plan[:limit]
    if len(shown) < len(plan):
        console.print(_plan_by_method(plan, estimates))
    title = f"sweep plan: {len(plan)} jobs"
    if len(shown) < len(plan):
        title = f"sweep plan: the first {len(shown)} of {len(plan):,} jobs"
    t = Table(title=title)
    t.add_column("#", justify="right")
    t.add_column("job")
    t.add_column("records done", justify="right")
    t.add_column("state")
    with_res = any(len(p) > 3 and p[3] for p in shown)
    if with_res:
        t.add_column("resources")
    with_est = any(e is not None for e in estimates[: len(shown)])
    if with_est:
        t.add_column("core time to run", justify="right")
    for i, ((overrides, n, done, *res), est) in enumerate(zip(shown, estimates, strict=False)):
        row = [
            str(i),
            escape(" ".join(overrides)),
            f"{done}/{n}",
            _job_state((overrides, n, done, *res)),
        ]
        if with_res:
            req = res[0] if res and done < n else {}
            row.append(" ".join(f"{k}={v}" for k, v in req.items()))
        if with_est:
            row.append("" if est is None else core_time(est / 3600))
        t.add_row(*row)
    console.print(t)
    if len(shown) < len(plan):
        console.print(
            f"{len(plan) - len(shown):,} more jobs not listed (add --all to the command to list "
            "every job)"
        )
    left_out = sum(1 for p in plan if len(p) > 4)
    todo = sum(1 for _, n, d, *_ in plan if d < n) - left_out
    console.print(
        f"{len(plan) - todo - left_out:,} done, {todo:,} to run (dry run: nothing launched)"
    )
    if missing:
        console.print(f"not launched: {escape(missing)}")
    known = [e for e in estimates if e is not None]
    if known:
        total = core_time(sum(known) / 3600)
        rest = todo - len(known)
        console.print(
            f"{len(known):,} of them take {'' if total.startswith('under') else 'about '}{total}"
            " (the mean core time of the done runs of jobs that differ only in seeds; without"
            " one, the ledger's runs of the method fitted against training rows and features)"
            + (f"; {rest:,} have nothing to go by" if rest else "")
        )


def summarize_sweep(sweep_dir: os.PathLike, store_dir: os.PathLike, ledger=None) -> None:
    """Collect the records of every job of a sweep (by its ``keys.json`` files) and summarise them.

    Only the sweep's own run keys count, each once (as one row, under the record's first
    experiment), even if the record is shared with other experiments; a job done in the committed
    ``ledger`` shows its ledger record.
    """
    sweep = Path(sweep_dir)
    keys = []
    for p in sorted(sweep.glob("*/keys.json")):
        keys.extend(json.loads(p.read_text()))
    store = Store(store_dir, ledger)
    recs = [r for r in (store.get(k) for k in dict.fromkeys(keys)) if r is not None]
    df = to_frame(recs)
    if not df.empty:  # to_frame repeats a record under each experiment it belongs to
        df = df.drop_duplicates("key").reset_index(drop=True)
    from treebench.report.tables import summary_table  # paper targets' schema: not for one run

    table = summary_table(df)
    print_summary(table, f"sweep {sweep.name}: {len(recs)} records")
    if not df.empty:
        df.to_csv(sweep / "results.csv", index=False)
        table.to_csv(sweep / "summary.csv", index=False)
        (sweep / "summary.md").write_text(table.to_markdown(index=False))
        console.print(f"written: {sweep / 'summary.csv'}, {sweep / 'results.csv'}")


_WIDE_CHECKS = 160  # columns from which `print_checks` shows the method beside the target id
_INLINE_CHARS = 32  # a longer note or configuration goes below its table as a numbered footnote
_STATUS_STYLE = {"pass": "green", "FAIL": "bold red", "skipped": "yellow", "info": "dim"}


def print_checks(res, title: str) -> None:
    """Print target verdicts (target, ours, paper, Δ, tolerance, status) with rich."""
    from treebench.report.checks import display_frame

    if res.empty:
        console.print(f"[yellow]{title}: no targets[/]")
        return
    disp = display_frame(res)
    # no vertical rules, only the names fold, long notes below: one line per target at a
    # terminal's width; a narrow terminal drops the method column (the target id names it) and a
    # profile shared by every row moves to the title
    cols = ["target", "method", "metric", "expected", "ours", "Δ", "tolerance", "n", "profile"]
    profiles = set(disp["profile"].astype(str))
    if len(profiles) == 1:
        cols.remove("profile")
        title += f" (profile {profiles.pop() or 'unset'})"
    if console.width < _WIDE_CHECKS:
        cols.remove("method")
    t = Table(title=title, title_justify="left", show_lines=False, box=box.SIMPLE_HEAD)
    for c in (*cols, "status", "note"):
        t.add_column(
            c,
            justify="right" if c in ("expected", "ours", "Δ", "n") else "left",
            overflow="fold",
            no_wrap=c not in ("target", "method"),
        )
    notes = Footnotes()
    for _, r in disp.iterrows():
        style = _STATUS_STYLE.get(r["status"], "")
        cells = {
            "method": f"{r['method']} on {r['dataset']}" if r["dataset"] else r["method"],
            "metric": str(r["metric"]).removeprefix("test_"),
            "expected": r["paper"],
        }
        t.add_row(  # data cells escaped: redt[teacher=rf] is text, not rich markup
            *[escape(str(cells.get(c, r.get(c)))) for c in cols],
            f"[{style}]{r['status']}[/]",
            escape(notes.cell(str(r["note"]))),
        )
    console.print(t)
    notes.print("notes")


class Footnotes:
    """Long cell texts moved below a table.

    The cell shows ``[k]``, the text is printed after the table once per distinct text, so a table
    keeps its width and its rows one line each.
    """

    def __init__(self, inline: int = _INLINE_CHARS):
        self.inline = inline
        self.texts: dict[str, int] = {}

    def cell(self, text: str) -> str:
        """Return ``text``, or a footnote mark when it is longer than ``inline``."""
        if len(text) <= self.inline:
            return text
        return f"[{self.texts.setdefault(text, len(self.texts) + 1)}]"

    def print(self, title: str) -> None:
        """Print the footnotes under ``title``."""
        if self.texts:
            console.print(f"{title}:", highlight=False)
        for text, k in self.texts.items():
            console.print(f"  [{k}] {escape(text)}", highlight=False, soft_wrap=True)
