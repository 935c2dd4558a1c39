"""``treebench run`` and ``treebench list``: checking a run's arguments, then Hydra; the configs."""

from __future__ import annotations

import os
import re

import typer
from rich.markup import escape
from rich.table import Table

from treebench.cli._app import app, console, fail

# ``method.params.<name>=v``: forced (``++``), so a name missing from the method's YAML is added and
# checked against the estimator's parameters while the job is planned (with a did-you-mean)
_PARAM_RE = re.compile(r"^method\.params\.[A-Za-z_]\w*=")
_NO_WRITE_FLAGS = ("--cfg", "-c", "--help", "-h", "--info", "-i", "--resolve", "--dry-run")


def complete(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of ``run``/``fetch`` arguments (:func:`treebench.catalog.complete`)."""
    from treebench.catalog import complete as complete_

    return complete_(incomplete)


OVERRIDES_ARG = typer.Argument(None, help="Hydra overrides", autocompletion=complete)


def checked_args(overrides, extra) -> list[str]:
    """Return the command's arguments with ``~`` expanded; exit 2 on an unknown name or setting.

    An unknown config name, or a setting no config has.
    """
    from treebench.catalog import UnknownChoiceError, check_choices
    from treebench.overrides import OverrideError, check_new_keys, expand_home

    args = expand_home([*(overrides or []), *extra])
    try:
        check_choices(args)
    except UnknownChoiceError as exc:
        fail(str(exc))
    try:
        check_new_keys(args)
    except OverrideError as exc:
        fail(str(exc), plain=True)
    return args


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
        fail(str(exc), plain=True)


def hydra_args(args: list[str]) -> list[str]:
    """Return ``run``'s own flags (``--dry-run``, ``-v``) as the Hydra overrides that do them."""
    args = [f"++{a}" if _PARAM_RE.match(a) else a for a in args]
    if "--dry-run" in args:  # --all: every job of a large plan listed
        every = ["hydra.sweeper.plan_rows=null"] if "--all" in args else []
        args = [a for a in args if a not in ("--dry-run", "--all")]
        args += ["hydra.sweeper.dry_run=true", *every]
        if "-m" not in args and "--multirun" not in args:
            args.insert(0, "-m")
    if "-v" in args or "--verbose" in args:
        args = [a for a in args if a not in ("-v", "--verbose")] + ["hydra.verbose=[hydra_plugins]"]
    return args


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
def run(ctx: typer.Context, overrides: list[str] = OVERRIDES_ARG) -> None:
    """Run experiments: Hydra overrides as arguments (``-m`` sweeps)."""
    from treebench.launch import launch

    args = checked_args(overrides, ctx.args)
    if not any(a in _NO_WRITE_FLAGS for a in args):
        check_writable(args)
    code = launch(hydra_args(args))
    if code:
        raise typer.Exit(code)


@app.command("list")
def list_(
    what: str = typer.Argument("all", help="methods, datasets, experiments, splits, tunes or all"),
) -> None:
    """List the config choices with one-line descriptions.

    Methods, datasets, experiments, split protocols and tuning budgets.
    """
    from treebench.catalog import GROUPS, group_choices, method_listing

    wanted = [g for g in GROUPS if what in ("all", g, g + "s")]
    if not wanted:
        fail(
            f"[red]Unknown listing {what!r}.[/] Choices: methods, datasets, experiments, splits, "
            "tunes, all"
        )
    for group in wanted:
        t = Table(title=f"{group}s", title_justify="left")
        t.add_column("name", style="bold")
        if group == "method":
            t.add_column("tasks")
        t.add_column("description")
        for name, desc in group_choices(group).items():
            if group != "method":
                t.add_row(name, desc)
                continue
            tasks, hint = method_listing(name)
            if hint:  # listed, with the one line that makes it usable
                desc = f"[yellow]{escape(hint)}[/] {desc}"
            t.add_row(name, tasks, desc)
        console.print(t)
