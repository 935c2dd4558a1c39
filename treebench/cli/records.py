"""``treebench collect``, ``status`` and ``ledger add|show``: the local store and the ledger."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from treebench.cli._app import (
    LEDGER_OPT,
    OUTPUTS_OPT,
    app,
    console,
    err,
    fail,
    ledger_app,
    load_papers,
    open_ledger,
    outputs_dir,
    print_note,
    print_problems,
)


@app.command()
def collect(
    outputs: str = OUTPUTS_OPT,
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    status: str = typer.Option(None, help="only rows with this status (ok, failed, skipped)"),
    ledger: bool | None = LEDGER_OPT,
    csv: bool = typer.Option(
        True,
        "--csv/--no-csv",
        help="write the table as CSV beside the Parquet file (slow for the whole ledger)",
    ),
) -> None:
    """Merge the local store's records into one table (outputs/results/results*.{parquet,csv}).

    With --ledger or --experiment, the committed ledger's records too.
    """
    from treebench.report.console import print_summary
    from treebench.report.tables import summary_table
    from treebench.results import collect as do_collect
    from treebench.results.scope import ledger_note, listing_scope

    out, led, problems = outputs_dir(outputs), open_ledger(ledger), []
    scope = listing_scope(out / "store", led, ledger, experiment)
    df = do_collect(
        scope.store_dir,
        out / "results",
        experiment=experiment,
        status=status,
        ledger=scope.ledger,
        problems=problems,
        csv=csv,
    )
    stem = f"results-{experiment}" if experiment else "results"
    files = ", ".join(f"{stem}.{x}" for x in ("parquet", *(["csv"] if csv else [])))
    console.print(
        f"{len(df)} rows collected from the {scope.label} into {out / 'results'}: {files}"
    )
    print_problems(problems)
    if not df.empty:
        print_summary(summary_table(df), f"{scope.label}: {experiment or 'all experiments'}")
    if scope.ledger is None:
        print_note(ledger_note(led, "collect", experiment))


@app.command()
def status(
    outputs: str = OUTPUTS_OPT,
    experiment: str = typer.Option(None, help="only records of this experiment"),
    ledger: bool | None = LEDGER_OPT,
) -> None:
    """Summarise the local store (with --ledger or --experiment, the committed ledger too).

    Records per experiment, method and status, each failure's reason, the local records not yet in
    the ledger (``treebench ledger add`` moves them), and the SLURM jobs of sweeps still queued or
    running.
    """
    from treebench.results.scope import ledger_note, listing_scope
    from treebench.results.table import records_frame

    all_led = open_ledger(ledger)
    store_dir = outputs_dir(outputs) / "store"
    led = listing_scope(store_dir, all_led, ledger, experiment).ledger
    problems: list = []
    df = records_frame(store_dir, led, problems)  # a fit shared by experiments counts in each
    if experiment is not None and not df.empty:
        df = df[df["experiment"] == experiment]
    _print_counts(df, led, all_led)
    _print_failed_and_skipped(df, store_dir, led)
    note = ledger_note(all_led, "status", experiment) if led is None else None
    if note is not None:  # the one-line count read the ledger: its damaged lines are named too
        problems += [p for p in all_led.problems if p not in problems]
    print_problems(problems)
    _print_pending_slurm(store_dir)
    print_note(note)


def _print_counts(df, led, all_led) -> None:
    """``status``'s table: records per experiment, method, dataset and status."""
    from treebench.results.status import COUNTED, status_counts

    if df.empty:
        console.print("no records" if led is not None else "no local records (outputs/store/)")
        return
    counts = status_counts(df, all_led.keys() if all_led is not None else set())
    where = "ledger + store" if led is not None else "store"
    t = Table(title=f"{where}: {len(df)} records (local = done, not in the ledger yet)")
    for col in ("experiment", "method", "dataset", *COUNTED):
        t.add_column(col, justify="right" if col in COUNTED else "left")
    for (exp, m, d), c in counts.iterrows():
        t.add_row(exp, m, d, *(str(int(c[s])) for s in COUNTED))
    console.print(t)


def _print_failed_and_skipped(df, store_dir: Path, led) -> None:
    """Print one line per failed or skipped run, and fixes for SLURM jobs ended without their runs.

    The first runs only; the rest are counted by reason.
    """
    from treebench.results import Store
    from treebench.results.status import failed_and_skipped
    from treebench.slurm import fix_hint

    hints: dict[str, None] = {}
    store = Store(store_dir, ledger=led)
    listed, groups = failed_and_skipped(df)
    for row in listed.to_dict("records"):
        r = {**(store.get(row["key"]) or {}), **row}  # the full record: a SLURM job's details
        if r["status"] == "failed":
            label, error = "failed", r.get("error")
            if r.get("cluster"):  # a SLURM job ended without this run: "timeout: ...", ...
                label, error = str(error).split(": ", 1) if ": " in str(error) else (label, error)
                hints[fix_hint(r)] = None
            console.print(
                f"[red]{label}[/] {r['method']} | {r['dataset']} | seed {r['seed']} | "
                f"fold {r['fold']}: {error}  ({r['key']})"
            )
        else:
            console.print(f"[yellow]skipped[/] {r['method']} | {r['dataset']}: {r.get('reason')}")
    if groups is not None:
        console.print(
            f"… and {int(groups.sum())} more failed or skipped runs "
            "(`--experiment NAME` narrows the listing):",
            highlight=False,
        )
        for text, n in groups.head(10).items():
            console.print(f"  {n} x {text}", highlight=False)
        if len(groups) > 10:
            console.print(f"  {int(groups.iloc[10:].sum())} x other reasons", highlight=False)
    for hint in hints:
        if hint:
            console.print(f"  fix: {hint}", highlight=False)


def _print_pending_slurm(store_dir: Path) -> None:
    """Per sweep, the SLURM jobs whose pending markers are in the store, with their states."""
    from treebench.slurm import marker_dir, pending_by_sweep

    by_sweep = pending_by_sweep(store_dir)
    if not by_sweep:
        return
    console.print(f"SLURM jobs not finished yet (pending markers in {marker_dir(store_dir)}):")
    for sweep, jobs in sorted(by_sweep.items()):
        parts = []
        for m, st in sorted(jobs, key=lambda j: j[0]["job_id"]):
            if st is None:
                parts.append(f"{m['job_id']} (state unknown: squeue not available)")
            else:
                parts.append(f"{m['job_id']} {st.state}" + (f" ({st.reason})" if st.reason else ""))
        n_runs = sum(len(m.get("runs", [])) for m, _ in jobs)
        console.print(f"  sweep {sweep}: {', '.join(parts)}; {n_runs} runs", highlight=False)
    if any(st is not None and not st.active for jobs in by_sweep.values() for _, st in jobs):
        console.print("  (ended jobs are settled by the next run of their sweep)", highlight=False)


@ledger_app.command("add")
def ledger_add(
    experiment: str = typer.Option(
        None,
        help="only this experiment (default: every experiment with paper targets, headtohead "
        "and benchmark)",
    ),
    outputs: str = OUTPUTS_OPT,
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would be added, write nothing"),
) -> None:
    """Move the local store's done records into the committed ledger.

    The records of paper experiments, the head-to-head and the benchmark.

    A run key already in the ledger gains the record's experiment labels; one whose numbers differ
    is refused, with every such key listed, and nothing is written.
    """
    from treebench.report.benchmark import EXPERIMENT as BENCHMARK
    from treebench.report.headtohead import EXPERIMENT as HEADTOHEAD
    from treebench.report.targets import experiment_names
    from treebench.results import LedgerConflict, Store
    from treebench.results.ledger import labelled

    led = open_ledger(True)
    if led is None:
        fail("[red]TREEBENCH_LEDGER is off: no ledger to add to.[/]")
    wanted = (
        {experiment} if experiment else {*experiment_names(load_papers()), HEADTOHEAD, BENCHMARK}
    )
    recs = labelled(Store(outputs_dir(outputs) / "store").records(), wanted)
    try:
        res = led.add(recs, dry_run=dry_run)
    except LedgerConflict as exc:
        err.print(f"[red]Refused:[/] {exc}")
        raise typer.Exit(1) from exc
    verb = "would add" if dry_run else "added"
    per = ", ".join(f"{e} {n}" for e, n in sorted(res.added.items())) or "none"
    console.print(
        f"{verb} {res.n_added} records to {led.root} ({per}); {res.relabelled} gained a "
        f"plan label (another experiment, or a full profile), {res.unchanged} already there; "
        f"{res.not_done} failed records left out"
    )
    if not dry_run and (res.n_added or res.relabelled):
        console.print(f"ledger {led.content_hash()} ({len(led)} records)")


@ledger_app.command("show")
def ledger_show() -> None:
    """Files, record counts and content hash of the committed ledger."""
    led = open_ledger(True)
    if led is None or not led.files():
        console.print("no ledger records")
        return
    t = Table(title=f"ledger {led.root}: {len(led)} records, content hash {led.content_hash()}")
    for col in ("file", "records", "ok", "skipped", "KiB"):
        t.add_column(col, justify="left" if col == "file" else "right")
    for name, n, n_ok, n_other, kib in led.file_counts():
        t.add_row(name, str(n), str(n_ok), str(n_other), f"{kib:.0f}")
    console.print(t)
