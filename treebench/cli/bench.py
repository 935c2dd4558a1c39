"""``treebench bench``: fit/predict speed, memory and scaling of every method against CART."""

from __future__ import annotations

import sys

import typer

from treebench.cli._app import app, console, fail


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
        "main,inference,threads,scaling,small,store,startup",
        help="which parts: main, inference, threads, scaling, small (every method at its defaults "
        "on 150-5,000 rows, a tune=small job, One-Stage's slope in rows), store (result store "
        "scale), "
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
    """Benchmark every method's fit/predict speed, memory and scaling against CART.

    The results are BENCHMARKS.md's.
    """
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
        fail(f"[red]{exc}[/]")
    console.print("written: " + ", ".join(str(f) for f in files.values()))
