"""The ``treebench`` command line (Typer): run, list, collect, report, fetch."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import typer
import yaml
from rich.console import Console
from rich.table import Table

from treebench.app import CONF_DIR

app = typer.Typer(
    help="Train and compare non-greedy and differentiable decision trees; reproduce paper tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

GROUPS = ("method", "dataset", "experiment", "split")
_CHOICE_RE = re.compile(r"^(method|dataset|experiment|split)=(.+)$")


def group_choices(group: str) -> dict[str, str]:
    """Config names of a group with their one-line descriptions (``description`` or first comment)."""
    out = {}
    for p in sorted((Path(CONF_DIR) / group).glob("*.yaml")):
        text = p.read_text()
        desc = ""
        try:
            data = yaml.safe_load(text) or {}
            desc = data.get("description", "") if isinstance(data, dict) else ""
        except yaml.YAMLError:
            pass
        if not desc:
            comments = [ln[1:].strip() for ln in text.splitlines()
                        if ln.startswith("#") and "@package" not in ln]
            desc = comments[0] if comments else ""
        out[p.stem] = desc
    return out


def check_choices(args: list[str]) -> None:
    """Fail early, with the choices and the nearest name, on an unknown method/dataset/experiment."""
    from treebench.methods.base import suggest

    for a in args:
        m = _CHOICE_RE.match(a)
        if not m:
            continue
        group, values = m.groups()
        choices = group_choices(group)
        for v in values.split(","):
            v = v.strip()
            if v in ("null", "") or v in choices or v.startswith(("choice(", "range(", "glob(")):
                continue
            names = sorted(choices)
            err.print(f"[red]Unknown {group} {v!r}.[/]{suggest(v, names)}\n"
                      f"Choices: {', '.join(names)}\n(see `treebench list {group}s`)")
            raise typer.Exit(2)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help=(
        "Run jobs; every argument goes to Hydra. Examples:\n\n"
        "  treebench run method=tnt dataset=letter\n\n"
        "  treebench run -m method=cart,rf dataset=iris,digits seed=0,1,2 hydra/launcher=joblib\n\n"
        "  treebench run experiment=demo      treebench run method=cart --cfg job\n\n"
        "Hyperparameters: method.params.<name>=value. Finished jobs are skipped."
    ),
)
def run(ctx: typer.Context) -> None:
    args = list(ctx.args)
    check_choices(args)
    os.environ.setdefault("TREEBENCH_OUTPUTS", str(Path("outputs").resolve()))
    from treebench import app as task

    sys.argv = ["treebench run", *args]
    task.main()


@app.command("list")
def list_(what: str = typer.Argument("all", help="methods, datasets, experiments, splits or all")) -> None:
    """List methods, datasets, experiments and split protocols with one-line descriptions."""
    from treebench.methods import get_entry

    wanted = [g for g in GROUPS if what in ("all", g, g + "s")]
    if not wanted:
        err.print(f"[red]Unknown listing {what!r}.[/] Choices: methods, datasets, experiments, splits, all")
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
                    tasks = ", ".join(get_entry(yaml.safe_load(
                        (Path(CONF_DIR) / "method" / f"{name}.yaml").read_text())["name"]).tasks)
                except KeyError:
                    tasks = "?"
                t.add_row(name, tasks, desc)
            else:
                t.add_row(name, desc)
        console.print(t)


def _outputs(path: str | None) -> Path:
    return Path(path or os.environ.get("TREEBENCH_OUTPUTS") or "outputs")


@app.command()
def collect(
    outputs: str = typer.Option(None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"),
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    status: str = typer.Option(None, help="only rows with this status (ok, failed, skipped)"),
) -> None:
    """Merge stored records into one table (outputs/results/results*.parquet and .csv)."""
    from treebench.report.console import print_summary
    from treebench.report.tables import summary_table
    from treebench.results import collect as do_collect

    out = _outputs(outputs)
    df = do_collect(out / "store", out / "results", experiment=experiment, status=status)
    console.print(f"{len(df)} rows collected into {out / 'results'}")
    if not df.empty:
        print_summary(summary_table(df), experiment or "all experiments")


@app.command()
def report(
    experiment: str = typer.Option(None, help="only rows of this experiment"),
    outputs: str = typer.Option(None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)"),
) -> None:
    """Write Markdown and LaTeX tables (mean ± sd per dataset × method) under outputs/reports/."""
    from treebench.report.console import print_summary
    from treebench.report.tables import summary_table
    from treebench.results import collect as do_collect

    out = _outputs(outputs)
    df = do_collect(out / "store", experiment=experiment)
    if df.empty:
        err.print("[yellow]no results; run jobs first (treebench run ...)[/]")
        raise typer.Exit(1)
    table = summary_table(df)
    rep = out / "reports"
    rep.mkdir(parents=True, exist_ok=True)
    stem = experiment or "all"
    (rep / f"{stem}.md").write_text(table.to_markdown(index=False) + "\n")
    (rep / f"{stem}.tex").write_text(table.to_latex(index=False, float_format="%.4f"))
    print_summary(table, stem)
    console.print(f"written: {rep / (stem + '.md')}, {rep / (stem + '.tex')}")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def fetch(ctx: typer.Context) -> None:
    """Fill the data cache: ``treebench fetch dataset=letter`` or ``treebench fetch experiment=NAME``.

    Files are verified by sha256; a mirror (``TREEBENCH_MIRROR`` or ``data.mirror=DIR_OR_URL``) is
    tried before the upstream URL. ``dataset=a,b`` fetches several datasets.
    """
    from hydra import compose, initialize_config_dir

    from treebench.data.fetch import fetch_datasets, sweep_datasets

    args = list(ctx.args)
    check_choices(args)
    datasets = [a for a in args if a.startswith("dataset=")]
    others = [a for a in args if not a.startswith("dataset=")]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=others, return_hydra_config=True)
        if datasets:
            names = [n.strip() for a in datasets for n in a.split("=", 1)[1].split(",") if n.strip()]
        else:
            names = sweep_datasets(cfg)
        data_dir = Path(cfg.paths.data).expanduser().resolve()
        console.print(f"data cache: {data_dir}" + (f"; mirror: {cfg.data.mirror}" if cfg.data.mirror
                                                   else ""))
        results = fetch_datasets(
            names, lambda n: compose("config", overrides=[f"dataset={n}"]).dataset,
            data_dir, cfg.data.mirror, console=console)
    failed = [n for n, e in results if e]
    if failed:
        err.print(f"[red]{len(failed)} of {len(results)} datasets not available:[/] {', '.join(failed)}")
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
