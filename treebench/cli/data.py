"""``treebench fetch``: filling the data cache, or checking the mirror with ``--verify``."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from treebench.cli._app import app, console, err
from treebench.cli.run import checked_args, complete


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def fetch(
    ctx: typer.Context,
    overrides: list[str] = typer.Argument(
        None, help="dataset=… or experiment=…", autocompletion=complete
    ),
    verify: bool = typer.Option(
        False,
        "--verify",
        help="check the mirror instead of fetching: files, sha256, parsed shape and classes",
    ),
) -> None:
    """Fill the data cache.

    ``treebench fetch dataset=letter`` or ``treebench fetch experiment=NAME``.

    Files are verified by sha256; a mirror (``TREEBENCH_MIRROR`` or ``data.mirror=DIR_OR_URL``) is
    tried before the upstream URL. ``dataset=a,b`` fetches several datasets.

    ``treebench fetch --verify`` downloads nothing: it checks every dataset (or those given by
    ``dataset=a,b`` or ``experiment=NAME``) in the local mirror, or in the data cache when the
    mirror is not a local directory: each configured file present with its sha256, each part parsed
    to the configured features and classes (row counts from the mirror's MANIFEST.csv), the whole
    dataset to the configured shape. Exit status 1 when a present file is wrong; absent files are
    listed only.
    """
    from treebench.catalog import group_choices, needs_settings
    from treebench.config import compose
    from treebench.data.fetch import fetch_datasets, sweep_datasets

    args = checked_args(overrides, ctx.args)
    datasets = [a for a in args if a.startswith("dataset=")]
    settings = [a for a in args if a.startswith("dataset.")]  # e.g. dataset.data_id=61
    others = [a for a in args if not a.startswith(("dataset=", "dataset."))]
    searchpath = [a for a in others if a.lstrip("+").startswith("hydra.searchpath=")]
    cfg = compose(others, return_hydra_config=True)
    if datasets:
        names = [n.strip() for a in datasets for n in a.split("=", 1)[1].split(",") if n.strip()]
    elif verify and not any(a.startswith("experiment=") for a in others):
        # every dataset config but those for the user's own data (a required ``???`` setting)
        names = sorted(n for n in group_choices("dataset", others) if not needs_settings(n))
    else:
        names = sweep_datasets(cfg)
    data_dir = Path(cfg.paths.data).expanduser().resolve()

    def compose_dataset(n):
        return compose([*searchpath, f"dataset={n}", *settings])

    if verify:
        _verify_datasets(names, cfg, data_dir, compose_dataset)
        return
    console.print(
        f"data cache: {data_dir}" + (f"; mirror: {cfg.data.mirror}" if cfg.data.mirror else "")
    )
    results = fetch_datasets(
        names, lambda n: compose_dataset(n).dataset, data_dir, cfg.data.mirror, console=console
    )
    failed = [n for n, e in results if e]
    if failed:
        err.print(
            f"[red]{len(failed)} of {len(results)} datasets not available:[/] {', '.join(failed)}"
        )
        raise typer.Exit(1)


def _verify_datasets(names, cfg, data_dir: Path, compose_dataset) -> None:
    """``treebench fetch --verify``: one line per dataset, exit 1 when any is wrong."""
    from treebench.catalog import dataset_node
    from treebench.data.cache import _local_dir
    from treebench.data.fetch import read_manifest, verify_dataset

    root = _local_dir(cfg.data.mirror) or data_dir
    console.print(f"verifying {len(names)} datasets in {root}")
    manifest = read_manifest(root)
    t0 = time.perf_counter()
    results = []
    for name in names:
        r = verify_dataset(dataset_node(name, compose_dataset), root, manifest)
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
