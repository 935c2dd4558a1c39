"""The ``treebench`` command line (Typer).

One module per command group, each command parsing its options and calling the library (``run`` and
``list``; ``collect``, ``status`` and ``ledger``; ``report``, ``site`` and ``check``; ``fetch``;
``show`` and ``export``; ``bench``).
"""

from __future__ import annotations

import importlib
import sys

from treebench.cli._app import app, ledger_app

# importing a command module adds its commands; in this order, the order of ``treebench --help``
for _module in ("run", "records", "reports", "data", "models", "bench"):
    importlib.import_module(f"treebench.cli.{_module}")
app.add_typer(ledger_app, name="ledger")

from treebench.cli.run import complete  # noqa: E402 - shell completion, for tests and scripts

__all__ = ["app", "complete", "main"]


def main() -> None:
    """Console-script entry point.

    ``run`` starts with the cyclic garbage collector paused until the job's work begins
    (:mod:`treebench.gcpause`: a CART run on iris spends a third of its CPU collecting nothing).
    """
    if sys.argv[1:2] == ["run"]:
        from treebench import gcpause

        gcpause.pause()
    app()
