"""``treebench show`` and ``treebench export``: a trained model's drawings, rules and JSON."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from treebench.cli._app import (
    OUTPUTS_OPT,
    REFIT_OPT,
    TARGET_ARG,
    app,
    console,
    err,
    fail,
    open_ledger,
    outputs_dir,
)


def _model(target: str, outputs: str | None, refit: bool):
    """(model, record, how it was obtained) of ``target``; exit 1 when a refit is refused."""
    from treebench.inspect.show import RefitError, load_model

    try:
        return load_model(target, outputs_dir(outputs) / "store", open_ledger(True), refit)
    except RefitError as exc:  # would fit something else than the run: say what and stop
        err.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from exc


@app.command()
def show(
    target: str = TARGET_ARG,
    out: str = typer.Option(
        None, "--out", "-o", help="output directory (default: <outputs>/inspect/<key>)"
    ),
    outputs: str = OUTPUTS_OPT,
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
    refit: bool = REFIT_OPT,
) -> None:
    """Render a trained model: DOT + SVG/PNG drawings, rules.txt, importances.csv/.png, model.json.

    Loads the model saved with save_model=true, or refits the run from its record (composed from
    the record's overrides; refused when that would not give back the record's run key).
    """
    from treebench.inspect.render import DrawingTooLarge
    from treebench.inspect.show import write_report

    model, rec, how = _model(target, outputs, refit)
    key = rec["key"] if rec else Path(target).name.split(".")[0]
    dest = Path(out) if out else outputs_dir(outputs) / "inspect" / key
    depth = None if full else (max_depth if max_depth is not None else "auto")
    try:
        files = write_report(model, dest, max_graphs=max_graphs, max_depth=depth, engine=engine)
    except DrawingTooLarge as exc:
        fail(str(exc), plain=True)
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
    target: str = TARGET_ARG,
    out: str = typer.Option(..., "--out", "-o", help="JSON file to write (.json or .json.gz)"),
    outputs: str = OUTPUTS_OPT,
    refit: bool = REFIT_OPT,
) -> None:
    """Write a trained model's decision graph(s) as JSON.

    Loadable with treebench.inspect.load_graph.
    """
    model, _rec, how = _model(target, outputs, refit)
    path = model.save(out)
    console.print(how, soft_wrap=True)  # one line, for scripts
    console.print(f"wrote {path} ({len(model.graphs)} graph(s))")
