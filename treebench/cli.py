"""The ``treebench`` command line (Typer): run, list, collect, report, site, check, fetch, show, export."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from treebench.config import CONF_DIR, PROJECT_DIR, load_yaml
from treebench.term import make_console

app = typer.Typer(
    help="Train and compare non-greedy and differentiable decision trees; reproduce paper tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = make_console()
err = make_console(stderr=True)

GROUPS = ("method", "dataset", "experiment", "split", "tune")
_CHOICE_RE = re.compile(r"^(method|dataset|experiment|split|tune)=(.+)$")
# ``method.params.<name>=v``: forced (``++``), so a name missing from the method's YAML is added and
# checked against the estimator's parameters while the job is planned (with a did-you-mean)
_PARAM_RE = re.compile(r"^method\.params\.[A-Za-z_]\w*=")
_NO_WRITE_FLAGS = ("--cfg", "-c", "--help", "-h", "--info", "-i", "--resolve", "--dry-run")


def complete(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of ``run``/``fetch`` arguments: ``method=``, ``dataset=`` … and their config
    names with descriptions (``treebench --install-completion`` sets it up)."""
    if "=" not in incomplete:
        keys = [f"{g}=" for g in GROUPS] + ["seed=", "seeds=", "split=", "profile=", "-m"]
        return [(k, "") for k in keys if k.startswith(incomplete)]
    group, value = incomplete.split("=", 1)
    if group not in GROUPS:
        return []
    head, _, last = value.rpartition(",")  # method=cart,t → method=cart,tnt …
    prefix = f"{group}={head + ',' if head else ''}"
    return [
        (prefix + name, desc[:60])
        for name, desc in group_choices(group).items()
        if name.startswith(last)
    ]


def group_names(group: str, args=()) -> list[str]:
    """Config names of a group (file stems), without reading the files: what
    :func:`check_choices` needs before every ``run`` (parsing every YAML for its description
    costs a noticeable part of a second)."""
    from treebench.config import search_dirs

    return sorted({p.stem for d in search_dirs(args) for p in (d / group).glob("*.yaml")})


def group_choices(group: str, args=()) -> dict[str, str]:
    """Config names of a group with their one-line descriptions (``description`` or first comment);
    with ``args``, also those of the directories their ``hydra.searchpath`` adds."""
    from treebench.config import search_dirs

    out = {}
    files = [p for d in search_dirs(args) for p in sorted((d / group).glob("*.yaml"))]
    for p in files:
        if p.stem in out:
            continue
        text = p.read_text()
        desc = ""
        try:
            data = load_yaml(text) or {}
            desc = data.get("description", "") if isinstance(data, dict) else ""
        except yaml.YAMLError:
            pass
        if not desc:
            comments = [
                ln[1:].strip()
                for ln in text.splitlines()
                if ln.startswith("#") and "@package" not in ln
            ]
            desc = comments[0] if comments else ""
        out[p.stem] = desc
    return out


def check_choices(args: list[str]) -> None:
    """Fail early, with the choices and the nearest name, on an unknown method/dataset/experiment/
    split/tune."""
    from treebench.methods.base import suggest

    for a in args:
        m = _CHOICE_RE.match(a)
        if not m:
            continue
        group, values = m.groups()
        choices = group_names(group, args)
        for v in values.split(","):
            v = v.strip()
            if v in ("null", "") or v in choices or v.startswith(("choice(", "range(", "glob(")):
                continue
            names = sorted(choices)
            err.print(
                f"[red]Unknown {group} {v!r}.[/]{suggest(v, names)}\n"
                f"Choices: {', '.join(names)}\n(see `treebench list {group}s`)"
            )
            raise typer.Exit(2)


def check_writable(args: list[str]) -> None:
    """Fail early, in one paragraph, when the outputs directory (or the store) cannot be written."""
    from treebench.files import OutputsError, check_outputs

    def last(prefix: str) -> str | None:
        vals = [a.split("=", 1)[1] for a in args if a.lstrip("+").startswith(prefix + "=")]
        return vals[-1] if vals else None

    outputs = last("paths.outputs") or os.environ.get("TREEBENCH_OUTPUTS") or "outputs"
    store = last("paths.store")
    try:
        if "${" not in outputs:  # an interpolation is checked once composed
            check_outputs(outputs)
        if store and "${" not in store:
            check_outputs(store, "store")
    except OutputsError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help=(
        "Run jobs; every argument goes to Hydra. Examples:\n\n"
        "  treebench run method=tnt dataset=letter\n\n"
        "  treebench run -m method=cart,rf dataset=iris,digits seed=0,1,2 hydra/launcher=joblib\n\n"
        "  treebench run experiment=demo      treebench run method=cart --cfg job\n\n"
        "Hyperparameters: method.params.<name>=value. Finished jobs are skipped (before launch in\n"
        "sweeps). --dry-run lists a sweep's jobs and which are done, launching nothing (a large\n"
        "sweep: a summary per method and its first jobs; --dry-run --all lists every job).\n"
        "-v / --verbose lists every launched job (hydra.verbose=[hydra_plugins])."
    ),
)
def run(
    ctx: typer.Context,
    overrides: list[str] = typer.Argument(
        None, help="Hydra overrides", autocompletion=lambda incomplete: complete(incomplete)
    ),
) -> None:
    from treebench.overrides import OverrideError, check_new_keys, expand_home

    args = expand_home([*(overrides or []), *ctx.args])
    check_choices(args)
    try:
        check_new_keys(args)
    except OverrideError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None
    args = [f"++{a}" if _PARAM_RE.match(a) else a for a in args]
    if not any(a in _NO_WRITE_FLAGS for a in args):
        check_writable(args)
    if "--dry-run" in args:  # --all: every job of a large plan listed
        every = ["hydra.sweeper.plan_rows=null"] if "--all" in args else []
        args = [a for a in args if a not in ("--dry-run", "--all")]
        args += ["hydra.sweeper.dry_run=true", *every]
        if "-m" not in args and "--multirun" not in args:
            args.insert(0, "-m")
    if "-v" in args or "--verbose" in args:
        args = [a for a in args if a not in ("-v", "--verbose")] + ["hydra.verbose=[hydra_plugins]"]
    os.environ.setdefault("TREEBENCH_OUTPUTS", str(Path("outputs").resolve()))
    started = time.time()
    sys.argv = ["treebench run", *args]
    from treebench import faults

    faults.terminate_on_sigterm()  # SIGTERM stops the sweep as Ctrl-C does
    try:  # from the imports on: a Ctrl-C while they load gets the same one line
        from treebench import app as task
        from treebench.lifeline import mark_driver

        mark_driver()  # sweep workers die with this process
        task.main()
    except (KeyboardInterrupt, faults.SweepStopped) as exc:
        store = _store_dir(args)
        faults.clean_stale_temps(store)  # what the stopped workers left
        n = _records_since(store, started)
        kept = f"{n} record" + ("" if n == 1 else "s")
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        err.print(f"{what}; {kept} kept, rerun to resume", highlight=False, soft_wrap=True)
        code = getattr(exc, "exit_code", 130)
        raise typer.Exit(code) from None
    finally:  # a run that ended before its work began (--cfg, an error) leaves no paused collector
        from treebench import gcpause

        gcpause.resume()


def _store_dir(args: list[str]) -> Path:
    """The store a ``run`` writes to, from its ``paths.*`` overrides or ``$TREEBENCH_OUTPUTS``."""
    opts = dict(a.lstrip("+").split("=", 1) for a in args if "=" in a)
    if "paths.store" in opts:
        return Path(opts["paths.store"])
    return Path(opts.get("paths.outputs") or os.environ["TREEBENCH_OUTPUTS"]) / "store"


def _records_since(store: Path, t0: float) -> int:
    """Records written to ``store`` since ``t0`` (not the ``.tmp-*`` file of a write in flight)."""
    n = 0
    for p in store.glob("*/[!.]*.json"):
        try:
            n += p.stat().st_mtime >= t0
        except OSError:
            pass
    return n


def _method_requires(name: str) -> list[str]:
    """A method config's ``requires``, its own or from the config it extends (``defaults:``)."""
    data = load_yaml((Path(CONF_DIR) / "method" / f"{name}.yaml").read_text()) or {}
    if data.get("requires") is not None:
        return list(data["requires"])
    parents = [d for d in data.get("defaults") or [] if isinstance(d, str) and d != "_self_"]
    return [m for parent in parents for m in _method_requires(parent)]


@app.command("list")
def list_(
    what: str = typer.Argument("all", help="methods, datasets, experiments, splits, tunes or all"),
) -> None:
    """List methods, datasets, experiments, split protocols and tuning budgets with one-line
    descriptions."""
    # the tasks come from the registering decorators' source: importing every method package
    # to fill the registry costs seconds (PyTorch, numba)
    from rich.markup import escape

    from treebench.methods._catalog import method_tasks
    from treebench.methods._requires import install_hint, missing_requirements

    wanted = [g for g in GROUPS if what in ("all", g, g + "s")]
    if not wanted:
        err.print(
            f"[red]Unknown listing {what!r}.[/] Choices: methods, datasets, experiments, splits, tunes, all"
        )
        raise typer.Exit(2)
    for group in wanted:
        t = Table(title=f"{group}s", title_justify="left")
        t.add_column("name", style="bold")
        if group == "method":
            t.add_column("tasks")
        t.add_column("description")
        for name, desc in group_choices(group).items():
            if group == "method":
                try:
                    tasks = ", ".join(
                        method_tasks(
                            load_yaml((Path(CONF_DIR) / "method" / f"{name}.yaml").read_text())[
                                "name"
                            ]
                        )
                    )
                except KeyError:
                    tasks = "?"
                missing = missing_requirements({"requires": _method_requires(name)})
                if missing:  # listed, with the one line that makes it usable
                    hint = escape(f"needs {', '.join(missing)}: {install_hint(missing)}")
                    desc = f"[yellow]{hint}[/] {desc}"
                t.add_row(name, tasks, desc)
            else:
                t.add_row(name, desc)
        console.print(t)


def _outputs(path: str | None) -> Path:
    return Path(path or os.environ.get("TREEBENCH_OUTPUTS") or "outputs")


_LEDGER_OPT = typer.Option(
    None,
    "--ledger/--no-ledger",
    help="read the committed ledger (results/) with the local store (default: only with "
    "--experiment)",
)
_WITH_STORE_OPT = typer.Option(
    False,
    "--with-store",
    help="compare the local store's records too (by default paper targets read the committed "
    "ledger, so local runs never move its verdicts)",
)


def _ledger(use: bool | None = True):
    from treebench.results.ledger import open_ledger

    return open_ledger() if use is not False else None


def _print_note(line: str | None) -> None:
    if line:
        console.print(f"[dim]{escape(line)}[/]", highlight=False)


@app.command()
def collect(
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    status: str = typer.Option(None, help="only rows with this status (ok, failed, skipped)"),
    ledger: bool | None = _LEDGER_OPT,
    csv: bool = typer.Option(
        True,
        "--csv/--no-csv",
        help="write the table as CSV beside the Parquet file (slow for the whole ledger)",
    ),
) -> None:
    """Merge the local store's records (with --ledger or --experiment, the committed ledger's
    too) into one table (outputs/results/results*.{parquet,csv})."""
    from treebench.report.console import print_summary
    from treebench.report.tables import summary_table
    from treebench.results import collect as do_collect
    from treebench.results.scope import ledger_note, listing_scope

    out = _outputs(outputs)
    led = _ledger(ledger)
    scope = listing_scope(out / "store", led, ledger, experiment)
    problems: list = []
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
    _print_problems(problems)
    if not df.empty:
        print_summary(summary_table(df), f"{scope.label}: {experiment or 'all experiments'}")
    if scope.ledger is None:
        _print_note(ledger_note(led, "collect", experiment))


def _availability():
    """Local dataset configs and registered methods, to say why a target has no data."""
    from treebench.methods._catalog import method_names  # not importing every method (seconds)
    from treebench.report.checks import Availability

    datasets = [p.stem for p in (Path(CONF_DIR) / "dataset").glob("*.yaml")]
    methods = set(method_names())
    for p in (Path(CONF_DIR) / "method").glob("*.yaml"):
        try:
            methods.add(load_yaml(p.read_text())["name"])
        except (KeyError, TypeError, yaml.YAMLError):
            continue
    return Availability(datasets=datasets, methods=methods, plans=_full_plans())


def _full_plans() -> dict:
    """Each experiment's full-profile sweep plan (``hydra.sweeper`` of its config file)."""
    from treebench.config import sweep_plan

    plans = {}
    for p in sorted((Path(CONF_DIR) / "experiment").glob("*.yaml")):
        try:
            cfg = load_yaml(p.read_text()) or {}
            sweeper = (cfg.get("hydra") or {}).get("sweeper")
        except (AttributeError, yaml.YAMLError):
            continue
        if sweeper:
            plans[cfg.get("experiment_name") or p.stem] = sweep_plan(sweeper, "full")
    return plans


def _load_papers():
    from treebench.report.targets import TargetError, load_all

    try:
        return load_all(CONF_DIR)
    except TargetError as exc:
        err.print(f"[red]Bad paper target file:[/] {exc}")
        raise typer.Exit(2) from exc


@app.command()
def status(
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    experiment: str = typer.Option(None, help="only records of this experiment"),
    ledger: bool | None = _LEDGER_OPT,
) -> None:
    """Summarise the local store (with --ledger or --experiment, the committed ledger too):
    records per experiment, method and status, each failure's reason, the local records not yet
    in the ledger (``treebench ledger add`` moves them), and the SLURM jobs of sweeps still
    queued or running."""
    import pandas as pd

    from treebench.results import Store
    from treebench.results.scope import ledger_note, listing_scope
    from treebench.results.table import records_frame
    from treebench.slurm import fix_hint

    all_led = _ledger(ledger)
    store_dir = _outputs(outputs) / "store"
    led = listing_scope(store_dir, all_led, ledger, experiment).ledger
    problems: list = []
    df = records_frame(store_dir, led, problems)  # a fit shared by experiments counts in each
    if experiment is not None and not df.empty:
        df = df[df["experiment"] == experiment]
    if df.empty:
        console.print("no records" if led is not None else "no local records (outputs/store/)")
    else:
        v = df[["experiment", "method", "dataset", "status", "key"]]  # what the counts need
        in_led = all_led.keys() if all_led is not None else set()
        v = v.assign(local=(v["status"] != "failed") & ~v["key"].isin(in_led))
        counts = pd.crosstab([v["experiment"].astype(str), v["method"], v["dataset"]], v["status"])
        counts["local"] = v.groupby([v["experiment"].astype(str), "method", "dataset"])[
            "local"
        ].sum()
        cols = ("ok", "skipped", "failed", "local")
        where = "ledger + store" if led is not None else "store"
        t = Table(title=f"{where}: {len(df)} records (local = done, not in the ledger yet)")
        for col in ("experiment", "method", "dataset", *cols):
            t.add_column(col, justify="right" if col in cols else "left")
        for (exp, m, d), c in counts.sort_index().iterrows():
            t.add_row(exp, m, d, *(str(int(c.get(s, 0))) for s in cols))
        console.print(t)
    hints: dict[str, None] = {}
    store = Store(store_dir, ledger=led)
    listed = df[df["status"].isin(["failed", "skipped"])] if len(df) else df
    if len(listed) > _LISTED_RUNS:  # the rest as counts per reason: thousands of lines help nobody
        rest = listed.iloc[_LISTED_RUNS:]
        listed = listed.iloc[:_LISTED_RUNS]
        why = rest["error"] if "error" in rest else pd.Series(None, index=rest.index)
        if "reason" in rest:
            why = why.fillna(rest["reason"])
        groups = (rest["status"] + ": " + why.astype(str).str.slice(0, 160)).value_counts()
    else:
        groups = None
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
    note = ledger_note(all_led, "status", experiment) if led is None else None
    if note is not None:  # the one-line count read the ledger: its damaged lines are named too
        problems += [p for p in all_led.problems if p not in problems]
    _print_problems(problems)
    _print_pending_slurm(store_dir)
    _print_note(note)


_LISTED_RUNS = 50  # failed/skipped runs `status` lists one per line; the rest are counted by reason


def _print_problems(problems: list) -> None:
    """Report the records that could not be read or are invalid (left out of counts and tables)."""
    if not problems:
        return
    err.print(f"[red]{len(problems)} unreadable or invalid record(s), left out (not done):[/]")
    for path, reason in problems:
        err.print(f"  {path}: {reason}", highlight=False, soft_wrap=True)


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


@app.command()
def report(
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
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
    ledger: bool | None = _LEDGER_OPT,
    with_store: bool = typer.Option(
        False,
        "--with-store",
        help="--reproduction, --headtohead, --experiment of a paper experiment: add the local "
        "store's records (by default these read the committed ledger only, so local runs never "
        "move its verdicts)",
    ),
) -> None:
    """Markdown/LaTeX tables (ours next to the paper), figures and statistical tests under outputs/reports/."""
    from treebench.report.console import print_summary
    from treebench.report.paper import report_experiment
    from treebench.report.tables import summary_table
    from treebench.report.targets import experiment_names
    from treebench.results import collect as do_collect

    outp = _outputs(outputs)
    papers = _load_papers()
    led = _ledger(ledger)
    if headtohead or reproduction or benchmark:
        if led is None:
            err.print(
                "[red]--reproduction, --headtohead and --benchmark are made from the committed "
                "ledger; drop --no-ledger[/]"
            )
            raise typer.Exit(2)
        if headtohead + reproduction + benchmark > 1:
            err.print(
                "[red]--reproduction, --headtohead and --benchmark write different files: pass one[/]"
            )
            raise typer.Exit(2)
    if benchmark:
        _report_benchmark(led, outp / "store" if with_store else None, out)
        return
    if headtohead:
        _report_headtohead(led, outp / "store" if with_store else None, out)
        return
    if reproduction:
        from treebench.progress import showing
        from treebench.report.documents.markdown import write_reproduction

        with showing("report --reproduction"):
            ev = _evaluation(led, outp / "store" if with_store else None)
            dest = Path(out) if out else PROJECT_DIR / "REPRODUCTION.md"
            files = write_reproduction(ev, dest)
        console.print(
            f"written: {dest} and {len(files) - 1} files under {dest.parent / 'docs' / 'reproduction'} "
            f"({len(ev.records)} records, {len(ev.papers)} paper files; {ev.stamp})"
        )
        return
    from treebench.results.scope import (
        ledger_note,
        listing_scope,
        unread_local_note,
        verdict_scope,
    )

    rep = outp / "reports"
    if experiment and experiment in experiment_names(papers):
        scope = verdict_scope(outp / "store", led, with_store)
        df = do_collect(scope.store_dir, experiment=experiment, ledger=scope.ledger)
        rep.mkdir(parents=True, exist_ok=True)
        res = report_experiment(df, papers, experiment, rep, _availability())
        from treebench.report.console import print_checks

        print_checks(res["verdicts"], f"{experiment}: ours ({scope.label}) vs the paper")
        console.print(
            f"written: {len(res['files'])} files under {res['dir']} (see README.md there)"
        )
        _print_note(unread_local_note(scope, outp / "store", experiment, df, "report"))
        return
    scope = listing_scope(outp / "store", led, ledger, experiment)
    df = do_collect(scope.store_dir, experiment=experiment, ledger=scope.ledger)
    if df.empty:
        err.print(f"[yellow]no results ({scope.label}); run jobs first (treebench run ...)[/]")
        if scope.ledger is None:
            _print_note(ledger_note(led, "report", experiment))
        raise typer.Exit(1)
    rep.mkdir(parents=True, exist_ok=True)
    table = summary_table(df)
    stem = experiment or "all"
    (rep / f"{stem}.md").write_text(table.to_markdown(index=False) + "\n")
    (rep / f"{stem}.tex").write_text(table.to_latex(index=False, float_format="%.4f"))
    print_summary(table, f"{scope.label}: {stem}")
    console.print(f"written: {rep / (stem + '.md')}, {rep / (stem + '.tex')}")
    if scope.ledger is None:
        _print_note(ledger_note(led, "report", experiment))


def _evaluation(led, store_dir: Path | None):
    """Every paper's targets checked once against the ledger (and with ``store_dir``, the local
    store), stamped with the records' content hash."""
    from treebench.report.documents.evaluation import evaluate
    from treebench.results import collect as do_collect

    df = do_collect(store_dir, ledger=led)
    stamp = f"ledger `results/` {led.content_hash()} ({len(led)} records)"
    if store_dir is not None:
        stamp += " + the local store (not committed)"
    return evaluate(df, _load_papers(), _availability(), CONF_DIR, stamp=stamp)


def _report_headtohead(led, store_dir: Path | None, out: str | None) -> None:
    """``report --headtohead``: docs/headtohead.md and docs/headtohead/*.png from the ledger (and
    with ``store_dir``, the local store), stamped with the hash of the records it reads."""
    from treebench.report.headtohead import EXPERIMENT, headtohead_markdown
    from treebench.results import collect as do_collect
    from treebench.results.ledger import records_hash

    df = do_collect(store_dir, ledger=led, experiment=EXPERIMENT)
    mine = [
        r
        for r in led.records()
        if EXPERIMENT in [r.get("experiment"), *(r.get("also_experiments") or [])]
    ]
    stamp = f"the ledger's `{EXPERIMENT}` records ({len(mine)} records, content hash {records_hash(mine)})"
    if store_dir is not None:
        stamp += " + the local store (not committed)"
    dest = Path(out) if out else PROJECT_DIR / "docs" / "headtohead.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = headtohead_markdown(
        df, CONF_DIR, stamp=stamp, figures_dir=dest.parent / dest.stem, figures_link=dest.stem
    )
    dest.write_text(text)
    console.print(f"written: {dest} ({len(df)} records; {stamp})")


def _report_benchmark(led, store_dir: Path | None, out: str | None) -> None:
    """``report --benchmark``: docs/benchmark.md, docs/benchmark/datasets.md and the CD diagrams
    from the ledger's ``benchmark`` records (and with ``store_dir``, the local store's)."""
    from treebench.report.benchmark import EXPERIMENT, benchmark_markdown, evaluate, suite_plan
    from treebench.results import collect as do_collect
    from treebench.results.ledger import records_hash

    df = do_collect(store_dir, ledger=led, experiment=EXPERIMENT)
    mine = [
        r
        for r in led.records()
        if EXPERIMENT in [r.get("experiment"), *(r.get("also_experiments") or [])]
    ]
    records = list(mine)
    if store_dir is not None:
        from treebench.results.store import Store

        records += [r for r in Store(store_dir).records() if r.get("experiment") == EXPERIMENT]
    stamp = f"the ledger's `{EXPERIMENT}` records ({len(mine)} records, content hash {records_hash(mine)})"
    if store_dir is not None:
        stamp += " + the local store (not committed)"
    dest = Path(out) if out else PROJECT_DIR / "docs" / "benchmark.md"
    pages = benchmark_markdown(
        evaluate(df, records, suite_plan(CONF_DIR)),
        stamp,
        figures_dir=dest.parent / dest.stem,
        figures_link=dest.stem,
    )
    for rel, text in pages.items():
        path = dest if rel == "benchmark.md" else dest.parent / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    console.print(f"written: {dest} and {dest.parent / dest.stem}/ ({len(df)} records; {stamp})")


@app.command()
def site(
    out: str = typer.Option(None, help="site folder (default: <outputs>/site)"),
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    open_: bool = typer.Option(False, "--open", help="open the index in a web browser"),
) -> None:
    """The offline results site from the committed ledger: papers, methods, datasets, the
    head-to-head and a ledger explorer (works from file://, no network)."""
    try:
        from treebench.report.documents.site import build_site
    except ImportError as exc:  # pragma: no cover - the site extra is missing
        err.print(f"[red]{exc}: install the site extra (pip install 'treebench[site]')[/]")
        raise typer.Exit(2) from exc
    led = _ledger(True)
    dest = Path(out) if out else _outputs(outputs) / "site"
    info = build_site(_evaluation(led, None), led, dest, PROJECT_DIR, CONF_DIR)
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
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    strict: bool = typer.Option(
        False, help="also fail when a checked target has no data (skipped)"
    ),
    problems_only: bool = typer.Option(
        False, "--problems-only", help="print only FAIL and skipped rows"
    ),
    fail_on_errors: bool = typer.Option(
        False, "--fail-on-errors", help="also fail when any run of the experiment failed"
    ),
    ledger: bool | None = _LEDGER_OPT,
    with_store: bool = _WITH_STORE_OPT,
) -> None:
    """Compare the committed ledger's results (with --with-store, the local store's too; without
    a ledger, the store's) with the paper/CI targets; exit 1 on any regression (FAIL)."""
    from treebench.report.checks import FAIL, SKIP, run_checks
    from treebench.report.console import print_checks
    from treebench.report.targets import experiment_names, for_experiment
    from treebench.results import collect as do_collect

    papers = _load_papers()
    if experiment not in experiment_names(papers):
        from treebench.methods.base import suggest

        names = experiment_names(papers)
        err.print(
            f"[red]No targets for experiment {experiment!r}.[/]{suggest(experiment, names)}\n"
            f"Experiments with targets: {', '.join(names)}"
        )
        raise typer.Exit(2)
    targets, _, unavailable = for_experiment(papers, experiment)
    avail = _availability()
    avail.unavailable.update(unavailable)
    from treebench.results.scope import unread_local_note, verdict_scope

    store_dir = _outputs(outputs) / "store"
    scope = verdict_scope(store_dir, _ledger(ledger), with_store)
    problems: list = []
    df = do_collect(scope.store_dir, experiment=experiment, ledger=scope.ledger, problems=problems)
    _print_problems(problems)
    res = run_checks(targets, df, avail)
    shown = res[~res["status"].isin(["pass", "info"])] if problems_only else res
    print_checks(
        shown, f"check {experiment}: {len(df)} records ({scope.label}), {len(targets)} targets"
    )
    _print_note(unread_local_note(scope, store_dir, experiment, df, "check"))
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
    if bad:
        raise typer.Exit(1)


ledger_app = typer.Typer(
    help="The committed results ledger (results/<experiment>.jsonl.gz, in shards past 900 kB): every record behind "
    "REPRODUCTION.md.",
    no_args_is_help=True,
)
app.add_typer(ledger_app, name="ledger")


def _paper_labelled(rec: dict, wanted: set[str]) -> dict | None:
    """``rec`` filed under its first label in ``wanted`` (None if it has none)."""
    labels = [rec.get("experiment"), *(rec.get("also_experiments") or [])]
    hits = [lab for lab in labels if lab in wanted]
    if not hits:
        return None
    if rec.get("experiment") in wanted:
        return rec
    also = sorted({lab for lab in labels if lab and lab != hits[0]})
    return {**rec, "experiment": hits[0], "also_experiments": also}


@ledger_app.command("add")
def ledger_add(
    experiment: str = typer.Option(
        None,
        help="only this experiment (default: every experiment with paper targets, headtohead "
        "and benchmark)",
    ),
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would be added, write nothing"),
) -> None:
    """Move the local store's done records of paper experiments, the head-to-head and the
    benchmark into the committed ledger.

    A run key already in the ledger gains the record's experiment labels; one whose numbers differ
    is refused, with every such key listed, and nothing is written.
    """
    from treebench.report.benchmark import EXPERIMENT as BENCHMARK
    from treebench.report.headtohead import EXPERIMENT as HEADTOHEAD
    from treebench.report.targets import experiment_names
    from treebench.results import LedgerConflict, Store

    led = _ledger(True)
    if led is None:
        err.print("[red]TREEBENCH_LEDGER is off: no ledger to add to.[/]")
        raise typer.Exit(2)
    wanted = (
        {experiment} if experiment else {*experiment_names(_load_papers()), HEADTOHEAD, BENCHMARK}
    )
    store = Store(_outputs(outputs) / "store")
    recs = [r for r in (_paper_labelled(rec, wanted) for rec in store.records()) if r is not None]
    try:
        res = led.add(recs, dry_run=dry_run)
    except LedgerConflict as exc:
        err.print(f"[red]Refused:[/] {exc}")
        raise typer.Exit(1) from exc
    verb = "would add" if dry_run else "added"
    per = ", ".join(f"{e} {n}" for e, n in sorted(res.added.items())) or "none"
    console.print(
        f"{verb} {res.n_added} records to {led.root} ({per}); {res.relabelled} gained a "
        f"plan label (another experiment, or a full profile), {res.unchanged} already there; {res.not_done} failed records left out"
    )
    if not dry_run and (res.n_added or res.relabelled):
        console.print(f"ledger {led.content_hash()} ({len(led)} records)")


@ledger_app.command("migrate")
def ledger_migrate(
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would change, write nothing"),
) -> None:
    """Rewrite old config names in the ledger records' overrides (one-time after #27; idempotent).

    Each rewritten record's overrides must compose to its stored run key; if any does not, nothing
    is written.
    """
    from treebench.results.migrate import MigrationError

    led = _ledger(True)
    if led is None:
        err.print("[red]TREEBENCH_LEDGER is off: no ledger to migrate.[/]")
        raise typer.Exit(2)
    try:
        n, files = led.migrate(dry_run=dry_run)
    except MigrationError as exc:
        err.print(f"[red]Refused:[/] {exc}")
        raise typer.Exit(1) from exc
    verb = "would rewrite" if dry_run else "rewrote"
    console.print(
        f"{verb} the overrides of {n} of {len(led)} records, run keys unchanged "
        f"({', '.join(files) or 'no file changed'})"
    )


@ledger_app.command("show")
def ledger_show() -> None:
    """Files, record counts and content hash of the committed ledger."""
    led = _ledger(True)
    if led is None or not led.files():
        console.print("no ledger records")
        return
    t = Table(title=f"ledger {led.root}: {len(led)} records, content hash {led.content_hash()}")
    for col in ("file", "records", "ok", "skipped", "KiB"):
        t.add_column(col, justify="left" if col == "file" else "right")
    for p in led.files():
        recs = led.read_file(p)
        n_ok = sum(r["status"] == "ok" for r in recs)
        t.add_row(
            p.name,
            str(len(recs)),
            str(n_ok),
            str(len(recs) - n_ok),
            f"{p.stat().st_size / 1024:.0f}",
        )
    console.print(t)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def fetch(
    ctx: typer.Context,
    overrides: list[str] = typer.Argument(
        None,
        help="dataset=… or experiment=…",
        autocompletion=lambda incomplete: complete(incomplete),
    ),
    verify: bool = typer.Option(
        False,
        "--verify",
        help="check the mirror instead of fetching: files, sha256, parsed shape and classes",
    ),
) -> None:
    """Fill the data cache: ``treebench fetch dataset=letter`` or ``treebench fetch experiment=NAME``.

    Files are verified by sha256; a mirror (``TREEBENCH_MIRROR`` or ``data.mirror=DIR_OR_URL``) is
    tried before the upstream URL. ``dataset=a,b`` fetches several datasets.

    ``treebench fetch --verify`` downloads nothing: it checks every dataset (or those given by
    ``dataset=a,b`` or ``experiment=NAME``) in the local mirror, or in the data cache when the mirror
    is not a local directory: each configured file present with its sha256, each part parsed to the
    configured features and classes (row counts from the mirror's MANIFEST.csv), the whole dataset to
    the configured shape. Exit status 1 when a present file is wrong; absent files are listed only.
    """
    from treebench.config import compose
    from treebench.data.fetch import fetch_datasets, sweep_datasets
    from treebench.overrides import OverrideError, check_new_keys, expand_home

    args = expand_home([*(overrides or []), *ctx.args])
    check_choices(args)
    try:
        check_new_keys(args)
    except OverrideError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None
    datasets = [a for a in args if a.startswith("dataset=")]
    settings = [a for a in args if a.startswith("dataset.")]  # e.g. dataset.data_id=61
    others = [a for a in args if not a.startswith(("dataset=", "dataset."))]
    searchpath = [a for a in others if a.lstrip("+").startswith("hydra.searchpath=")]
    cfg = compose(others, return_hydra_config=True)
    if datasets:
        names = [n.strip() for a in datasets for n in a.split("=", 1)[1].split(",") if n.strip()]
    elif verify and not any(a.startswith("experiment=") for a in others):
        # every dataset config but those for the user's own data (a required ``???`` setting)
        names = sorted(n for n in group_choices("dataset", others) if not _needs_settings(n))
    else:
        names = sweep_datasets(cfg)
    data_dir = Path(cfg.paths.data).expanduser().resolve()
    if verify:
        _verify_datasets(
            names, cfg, data_dir, lambda n: compose([*searchpath, f"dataset={n}", *settings])
        )
        return
    console.print(
        f"data cache: {data_dir}" + (f"; mirror: {cfg.data.mirror}" if cfg.data.mirror else "")
    )
    results = fetch_datasets(
        names,
        lambda n: compose([*searchpath, f"dataset={n}", *settings]).dataset,
        data_dir,
        cfg.data.mirror,
        console=console,
    )
    failed = [n for n, e in results if e]
    if failed:
        err.print(
            f"[red]{len(failed)} of {len(results)} datasets not available:[/] {', '.join(failed)}"
        )
        raise typer.Exit(1)


def _needs_settings(name: str) -> bool:
    """A dataset config with a required setting (``dataset=csv`` needs ``dataset.path``)."""
    path = Path(CONF_DIR) / "dataset" / f"{name}.yaml"
    return path.is_file() and "???" in (load_yaml(path.read_text()) or {}).values()


def _dataset_node(name: str, compose_dataset):
    """A dataset's config node: its YAML read directly when it is self-contained (composing
    through Hydra costs ~0.3 s per dataset), else composed."""
    from omegaconf import OmegaConf

    path = Path(CONF_DIR) / "dataset" / f"{name}.yaml"
    if path.is_file():
        node = OmegaConf.load(path)
        if "defaults" not in node and not any(OmegaConf.is_missing(node, k) for k in node):
            return node
    return compose_dataset(name).dataset


def _verify_datasets(names, cfg, data_dir: Path, compose_dataset) -> None:
    """``treebench fetch --verify``: one line per dataset, exit 1 when any is wrong."""
    import time

    from treebench.data.cache import _local_dir
    from treebench.data.fetch import read_manifest, verify_dataset

    root = _local_dir(cfg.data.mirror) or data_dir
    console.print(f"verifying {len(names)} datasets in {root}")
    manifest = read_manifest(root)
    t0 = time.perf_counter()
    results = []
    for name in names:
        r = verify_dataset(_dataset_node(name, compose_dataset), root, manifest)
        results.append(r)
        colour = {"ok": "green", "missing": "yellow", "failed": "red", "skipped": "dim"}[r.status]
        have = r.files - len(r.missing)
        console.print(
            f"[{colour}]{name}[/]: {r.status} ({have}/{r.files} files, {r.seconds:.1f} s)"
            + (f"; not in the mirror: {', '.join(r.missing)}" if r.missing else "")
        )
        for p in r.problems:
            console.print(f"    [red]{p}[/]")
    failed = [r.name for r in results if r.status == "failed"]
    n = {s: sum(r.status == s for r in results) for s in ("ok", "missing", "skipped")}
    console.print(
        f"{n['ok']} ok, {n['missing']} with files missing, {len(failed)} failed, {n['skipped']} "
        f"without mirror files; {time.perf_counter() - t0:.0f} s"
    )
    if failed:
        err.print(f"[red]verify failed:[/] {', '.join(failed)}")
        raise typer.Exit(1)


def _inspect_model(target: str, outputs: str | None, refit: bool):
    """(model, record, how it was obtained) of a run key, a record file or a saved model file."""
    import numpy as np

    from treebench.inspect import export_graph
    from treebench.inspect.graph import GraphEnsemble
    from treebench.inspect.saved import name_graph
    from treebench.inspect.show import RefitError, find_record, model_path, refit_record

    out = _outputs(outputs)
    rec, saved = find_record(target, out / "store", _ledger(True))
    if saved is None and rec is not None and not refit:
        cand = model_path(out / "store", rec["key"])
        saved = cand if cand.exists() else None
    if saved is not None and not refit:
        return GraphEnsemble.load(saved), rec, f"saved model {saved}"
    if rec is None:
        raise FileNotFoundError(f"no record for {target}")
    if rec.get("status") != "ok":
        raise ValueError(f"record {rec['key']} has status {rec.get('status')!r}, nothing to show")
    try:
        fit = refit_record(rec)
    except RefitError as exc:  # would fit something else than the run: say what and stop
        err.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    X_tr, X_te, y_te = fit.X_train, fit.X_test, fit.y_test
    model = export_graph(fit.est, X_tr, fit.y_train)
    name_graph(model, fit.feature_names, fit.class_names)
    if model.image_shape is None and fit.image_shape is not None:
        model.image_shape = [int(v) for v in fit.image_shape]
    metric = "test_accuracy" if rec["task"] == "classification" else "test_r2"
    got = None
    if rec["task"] == "classification":
        got = float(np.mean(model.predict(X_te) == y_te))
    else:
        from sklearn.metrics import r2_score

        got = float(r2_score(y_te, model.predict(X_te)))
    want = (rec.get("metrics") or {}).get(metric)
    how = f"refitted {rec['method']} on {rec['dataset']} (seed {rec['seed']}, fold {rec['fold']}, "
    how += f"{X_tr.shape[1]} features, run key verified): "
    how += f"exported graph {metric}={got:.4f}"
    if want is not None:
        how += f", record {metric}={want:.4f}"
    return model, rec, how


@app.command()
def show(
    target: str = typer.Argument(
        ..., help="run key (or unique prefix), record file or saved model file"
    ),
    out: str = typer.Option(
        None, "--out", "-o", help="output directory (default: <outputs>/inspect/<key>)"
    ),
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    max_graphs: int = typer.Option(3, help="draw and list at most this many graphs of an ensemble"),
    max_depth: int = typer.Option(
        None,
        help="draw at most this many levels (default: the levels that keep the picture readable, "
        "about 60 nodes; the picture says where it is cut)",
    ),
    full: bool = typer.Option(False, "--full", help="draw every node of a large model"),
    engine: str = typer.Option(
        "auto", help="auto (Graphviz dot if installed, else matplotlib), dot, matplotlib"
    ),
    refit: bool = typer.Option(False, help="refit even when a saved model exists"),
) -> None:
    """Render a trained model: DOT + SVG/PNG drawings, rules.txt, importances.csv/.png, model.json.

    Loads the model saved with save_model=true, or refits the run from its record (composed from
    the record's overrides; refused when that would not give back the record's run key)."""
    from treebench.inspect.show import write_report

    model, rec, how = _inspect_model(target, outputs, refit)
    key = rec["key"] if rec else Path(target).name.split(".")[0]
    dest = Path(out) if out else _outputs(outputs) / "inspect" / key
    from treebench.inspect.render import DrawingTooLarge

    depth = None if full else (max_depth if max_depth is not None else "auto")
    try:
        files = write_report(model, dest, max_graphs=max_graphs, max_depth=depth, engine=engine)
    except DrawingTooLarge as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None
    console.print(how, soft_wrap=True)  # one line, for scripts
    console.print(
        f"wrote {dest}: model.json, rules.txt, "
        + ", ".join(p.name for p in files["render"]["dot"] + files["render"]["images"])
        + (", importances.csv/.png" if "importances" in files else "")
    )
    for line in files["render"]["cut"]:
        console.print(escape(line), highlight=False)
    if files["render"]["hint"]:
        console.print(files["render"]["hint"])
    if "top" in files:
        console.print("top features: " + ", ".join(f"{n} {v:.3f}" for n, v in files["top"]))


@app.command()
def export(
    target: str = typer.Argument(
        ..., help="run key (or unique prefix), record file or saved model file"
    ),
    out: str = typer.Option(..., "--out", "-o", help="JSON file to write (.json or .json.gz)"),
    outputs: str = typer.Option(
        None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"
    ),
    refit: bool = typer.Option(False, help="refit even when a saved model exists"),
) -> None:
    """Write a trained model's decision graph(s) as JSON (loadable with treebench.inspect.load_graph)."""
    model, _rec, how = _inspect_model(target, outputs, refit)
    path = model.save(out)
    console.print(how, soft_wrap=True)  # one line, for scripts
    console.print(f"wrote {path} ({len(model.graphs)} graph(s))")


@app.command()
def bench(
    methods: str = typer.Option(
        None,
        help="comma-separated methods (default: every registered "
        "classifier; CART, the reference, is always added)",
    ),
    datasets: str = typer.Option(
        None, help="comma-separated datasets (default: treebench/conf/bench/bench.yaml)"
    ),
    repeats: int = typer.Option(
        None, help="timed repeats after the warm-up (default: the config's)"
    ),
    quick: bool = typer.Option(False, "--quick", help="tiny sizes and one repeat (CI, tests)"),
    out: str = typer.Option(
        None,
        help="directory for BENCHMARKS.md, CSVs and plots in OUT/docs/bench (default: "
        "$TREEBENCH_OUTPUTS/bench; the committed files in . only with --update)",
    ),
    sections: str = typer.Option(
        "main,inference,threads,scaling,store,startup",
        help="which parts: main, inference, threads, scaling, store (result store scale), "
        "startup (seconds to first useful work of --help, list, status, a CART run); "
        "none + --update: rewrite only",
    ),
    timeout: float = typer.Option(None, help="seconds per measurement before the child is killed"),
    update: bool = typer.Option(
        False,
        "--update",
        help="write the committed BENCHMARKS.md and docs/bench (unless --out), keeping the "
        "other sections' results and re-running only --sections",
    ),
) -> None:
    """Benchmark fit/predict speed, memory and scaling of every method against CART (BENCHMARKS.md)."""
    from treebench import bench as tb_bench

    def split(s):
        return [x.strip() for x in s.split(",") if x.strip()] if s else None

    try:
        files = tb_bench.run(
            methods=split(methods),
            datasets=split(datasets),
            repeats=repeats,
            quick=quick,
            out=out,
            sections=split(sections),
            timeout=timeout,
            log=console.print,
            command="treebench bench " + " ".join(sys.argv[2:]),
            update=update,
        )
    except ValueError as exc:
        err.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from exc
    console.print("written: " + ", ".join(str(f) for f in files.values()))


def main() -> None:
    """Console-script entry point.

    ``run`` starts with the cyclic garbage collector paused until the job's work begins
    (:mod:`treebench.gcpause`: a CART run on iris spends a third of its CPU collecting nothing).
    """
    if sys.argv[1:2] == ["run"]:
        from treebench import gcpause

        gcpause.pause()
    app()


if __name__ == "__main__":
    main()
