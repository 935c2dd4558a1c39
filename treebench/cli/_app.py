"""The Typer application, its consoles and the options and output helpers the commands share."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.markup import escape

from treebench.term import make_console

app = typer.Typer(
    help="Train and compare non-greedy and differentiable decision trees; reproduce paper tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
ledger_app = typer.Typer(
    help="The committed results ledger (results/<experiment>.jsonl.gz, in shards past 900 kB): "
    "every record behind "
    "REPRODUCTION.md.",
    no_args_is_help=True,
)
console = make_console()
err = make_console(stderr=True)

OUTPUTS_OPT = typer.Option(None, help="outputs directory (default: $TREEBENCH_OUTPUTS or outputs)")
LEDGER_OPT = typer.Option(
    None,
    "--ledger/--no-ledger",
    help="read the committed ledger (results/) with the local store (default: only with "
    "--experiment)",
)
WITH_STORE_OPT = typer.Option(
    False,
    "--with-store",
    help="compare the local store's records too (by default paper targets read the committed "
    "ledger, so local runs never move its verdicts)",
)
REFIT_OPT = typer.Option(False, help="refit even when a saved model exists")
TARGET_ARG = typer.Argument(..., help="run key (or unique prefix), record file or saved model file")


def outputs_dir(path: str | None) -> Path:
    """Return the outputs directory.

    ``--outputs``, else ``$TREEBENCH_OUTPUTS``, else ``outputs``.
    """
    return Path(path or os.environ.get("TREEBENCH_OUTPUTS") or "outputs")


def open_ledger(use: bool | None = True):
    """Return the committed ledger; None with ``use`` False (``--no-ledger``) or the ledger off."""
    from treebench.results.ledger import open_ledger as open_

    return open_() if use is not False else None


def fail(message: str, code: int = 2, plain: bool = False):
    """Print ``message`` on stderr and exit with ``code``.

    ``plain``: no markup, an ``error:`` prefix, for messages that quote user input.
    """
    if plain:
        err.print(f"[red]error:[/] {escape(message)}", highlight=False)
    else:
        err.print(message)
    raise typer.Exit(code)


def print_note(line: str | None) -> None:
    """Print a dim one-line note (which records a listing read), when there is one."""
    if line:
        console.print(f"[dim]{escape(line)}[/]", highlight=False)


def print_problems(problems: list) -> None:
    """Report the records that could not be read or are invalid (left out of counts and tables)."""
    if not problems:
        return
    err.print(f"[red]{len(problems)} unreadable or invalid record(s), left out (not done):[/]")
    for path, reason in problems:
        err.print(f"  {path}: {reason}", highlight=False, soft_wrap=True)


def load_papers():
    """Every paper target file, or exit 2 naming the bad one."""
    from treebench.config import CONF_DIR
    from treebench.report.targets import TargetError, load_all

    try:
        return load_all(CONF_DIR)
    except TargetError as exc:
        err.print(f"[red]Bad paper target file:[/] {exc}")
        raise typer.Exit(2) from exc
