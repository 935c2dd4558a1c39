"""``treebench report``, ``site`` and ``check``: tables, documents and verdicts from the records."""

from __future__ import annotations

from pathlib import Path

import typer

from treebench.cli._app import (
    LEDGER_OPT,
    OUTPUTS_OPT,
    WITH_STORE_OPT,
    app,
    console,
    err,
    fail,
    load_papers,
    open_ledger,
    outputs_dir,
    print_note,
    print_problems,
)

_DOCUMENTS = ("reproduction", "headtohead", "benchmark")


@app.command()
def report(
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    outputs: str = OUTPUTS_OPT,
    reproduction: bool = typer.Option(
        False, "--reproduction", help="write REPRODUCTION.md: every paper table, ours vs the paper"
    ),
    headtohead: bool = typer.Option(
        False,
        "--headtohead",
        help="write docs/headtohead.md: every method tuned at one budget beside same-size CART",
    ),
    benchmark: bool = typer.Option(
        False,
        "--benchmark",
        help="write docs/benchmark.md (+ docs/benchmark/): the PMLB suites, ranks and tests",
    ),
    out: str = typer.Option(
        None,
        help="REPRODUCTION.md path (default: the repository root); with --headtohead or "
        "--benchmark, the page's (default: docs/)",
    ),
    ledger: bool | None = LEDGER_OPT,
    with_store: bool = typer.Option(
        False,
        "--with-store",
        help="--reproduction, --headtohead, --experiment of a paper experiment: add the local "
        "store's records (by default these read the committed ledger only, so local runs never "
        "move its verdicts)",
    ),
) -> None:
    """Write Markdown/LaTeX tables, figures and statistical tests under outputs/reports/.

    The tables show ours next to the paper.
    """
    from treebench.report.documents import write
    from treebench.report.targets import experiment_names

    outp, papers, led = outputs_dir(outputs), load_papers(), open_ledger(ledger)
    documents = [
        d for d, on in zip(_DOCUMENTS, (reproduction, headtohead, benchmark), strict=True) if on
    ]
    if documents and led is None:
        fail(
            "[red]--reproduction, --headtohead and --benchmark are made from the committed "
            "ledger; drop --no-ledger[/]"
        )
    if len(documents) > 1:
        fail("[red]--reproduction, --headtohead and --benchmark write different files: pass one[/]")
    if documents:
        writer = getattr(write, f"write_{documents[0]}")
        console.print(writer(led, outp / "store" if with_store else None, out, papers))
    elif experiment and experiment in experiment_names(papers):
        _report_paper_experiment(outp, papers, led, experiment, with_store)
    else:
        _report_summary(outp, led, ledger, experiment)


def _report_paper_experiment(outp: Path, papers, led, experiment: str, with_store: bool) -> None:
    """``report --experiment`` of a paper experiment: its tables beside the paper's, checked."""
    from treebench.report.checks import Availability
    from treebench.report.console import print_checks
    from treebench.report.paper import report_experiment
    from treebench.results import collect
    from treebench.results.scope import unread_local_note, verdict_scope

    rep = outp / "reports"
    scope = verdict_scope(outp / "store", led, with_store)
    df = collect(scope.store_dir, experiment=experiment, ledger=scope.ledger)
    rep.mkdir(parents=True, exist_ok=True)
    res = report_experiment(df, papers, experiment, rep, Availability.local())
    print_checks(res["verdicts"], f"{experiment}: ours ({scope.label}) vs the paper")
    console.print(f"written: {len(res['files'])} files under {res['dir']} (see README.md there)")
    print_note(unread_local_note(scope, outp / "store", experiment, df, "report"))


def _report_summary(outp: Path, led, ledger: bool | None, experiment: str | None) -> None:
    """``report`` otherwise: the summary table of the records as Markdown and LaTeX."""
    from treebench.report.console import print_summary
    from treebench.report.tables import summary_table
    from treebench.results import collect
    from treebench.results.scope import ledger_note, listing_scope

    rep = outp / "reports"
    scope = listing_scope(outp / "store", led, ledger, experiment)
    df = collect(scope.store_dir, experiment=experiment, ledger=scope.ledger)
    if df.empty:
        err.print(f"[yellow]no results ({scope.label}); run jobs first (treebench run ...)[/]")
        if scope.ledger is None:
            print_note(ledger_note(led, "report", experiment))
        raise typer.Exit(1)
    rep.mkdir(parents=True, exist_ok=True)
    table = summary_table(df)
    stem = experiment or "all"
    (rep / f"{stem}.md").write_text(table.to_markdown(index=False) + "\n")
    (rep / f"{stem}.tex").write_text(table.to_latex(index=False, float_format="%.4f"))
    print_summary(table, f"{scope.label}: {stem}")
    console.print(f"written: {rep / (stem + '.md')}, {rep / (stem + '.tex')}")
    if scope.ledger is None:
        print_note(ledger_note(led, "report", experiment))


@app.command()
def site(
    out: str = typer.Option(None, help="site folder (default: <outputs>/site)"),
    outputs: str = OUTPUTS_OPT,
    open_: bool = typer.Option(False, "--open", help="open the index in a web browser"),
) -> None:
    """Build the offline results site from the committed ledger.

    Papers, methods, datasets, the head-to-head and a ledger explorer (works from file://, no
    network).
    """
    from treebench.config import CONF_DIR, PROJECT_DIR
    from treebench.report.documents.write import evaluation

    try:
        from treebench.report.documents.site import build_site
    except ImportError as exc:  # pragma: no cover - the site extra is missing
        fail(f"[red]{exc}: install the site extra (pip install 'treebench[site]')[/]")
    led = open_ledger(True)
    dest = Path(out) if out else outputs_dir(outputs) / "site"
    info = build_site(evaluation(led, None, load_papers()), led, dest, PROJECT_DIR, CONF_DIR)
    console.print(
        f"written: {dest / 'index.html'} ({len(info['pages'])} pages, {info['files']} files, "
        f"{info['bytes'] / 1e6:.1f} MB)"
    )
    if open_:
        import webbrowser

        webbrowser.open((dest / "index.html").resolve().as_uri())


@app.command()
def check(
    experiment: str = typer.Option(
        ..., help="experiment whose targets to check (e.g. ci, tnt_table1)"
    ),
    outputs: str = OUTPUTS_OPT,
    strict: bool = typer.Option(
        False, help="also fail when a checked target has no data (skipped)"
    ),
    problems_only: bool = typer.Option(
        False, "--problems-only", help="print only FAIL and skipped rows"
    ),
    fail_on_errors: bool = typer.Option(
        False, "--fail-on-errors", help="also fail when any run of the experiment failed"
    ),
    ledger: bool | None = LEDGER_OPT,
    with_store: bool = WITH_STORE_OPT,
) -> None:
    """Compare the committed ledger's results with the paper/CI targets; exit 1 on any FAIL.

    With --with-store, the local store's results too; without a ledger, the store's.
    """
    from treebench.report.checks import Availability, run_checks
    from treebench.report.console import print_checks
    from treebench.report.targets import for_experiment
    from treebench.results import collect
    from treebench.results.scope import unread_local_note, verdict_scope

    papers = load_papers()
    _known_experiment(papers, experiment)
    targets, _, unavailable = for_experiment(papers, experiment)
    avail = Availability.local()
    avail.unavailable.update(unavailable)
    store_dir = outputs_dir(outputs) / "store"
    scope = verdict_scope(store_dir, open_ledger(ledger), with_store)
    problems: list = []
    df = collect(scope.store_dir, experiment=experiment, ledger=scope.ledger, problems=problems)
    print_problems(problems)
    res = run_checks(targets, df, avail)
    shown = res[~res["status"].isin(["pass", "info"])] if problems_only else res
    print_checks(
        shown, f"check {experiment}: {len(df)} records ({scope.label}), {len(targets)} targets"
    )
    print_note(unread_local_note(scope, store_dir, experiment, df, "check"))
    if _verdict(res, df, experiment, strict, fail_on_errors):
        raise typer.Exit(1)


def _known_experiment(papers, experiment: str) -> None:
    """Exit 2, with the nearest name, when no paper file has targets for ``experiment``."""
    from treebench.methods.base import suggest
    from treebench.report.targets import experiment_names

    names = experiment_names(papers)
    if experiment not in names:
        fail(
            f"[red]No targets for experiment {experiment!r}.[/]{suggest(experiment, names)}\n"
            f"Experiments with targets: {', '.join(names)}"
        )


def _verdict(res, df, experiment: str, strict: bool, fail_on_errors: bool) -> bool:
    """Print ``check``'s last line (and the failed runs); whether it is a regression."""
    from treebench.report.checks import FAIL, SKIP

    counts = res["status"].value_counts().to_dict()
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("pass", FAIL, SKIP, "info"))
    bad = counts.get(FAIL, 0) + (counts.get(SKIP, 0) if strict else 0)
    failed = df[df["status"] == "failed"] if not df.empty else df
    if len(failed):
        err.print(f"[yellow]{len(failed)} failed runs in {experiment}:[/]")
        for (m, d), g in failed.groupby(["method", "dataset"]):
            err.print(f"  {m} on {d}: {len(g)} × {str(g['error'].iloc[0])[:160]}")
        bad += len(failed) if fail_on_errors else 0
        summary += f"; {len(failed)} failed runs"
    (err if bad else console).print(("[red]REGRESSION[/]: " if bad else "[green]OK[/]: ") + summary)
    return bool(bad)
