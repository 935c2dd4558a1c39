"""``treebench fetch``: fill the data cache for datasets or for every dataset of an experiment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from treebench.data.cache import Progress


class RichProgress(Progress):
    """Download progress bars (one per file) on a rich console."""

    def __init__(self, console=None):
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.progress import Progress as _P

        self._bar = _P(
            TextColumn("[bold blue]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, int] = {}

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc):
        self._bar.stop()

    def start(self, name, total):
        self._tasks[name] = self._bar.add_task(name, total=total)

    def advance(self, name, n):
        if name in self._tasks:
            self._bar.update(self._tasks[name], advance=n)

    def done(self, name):
        tid = self._tasks.pop(name, None)
        if tid is not None:
            self._bar.stop_task(tid)


def sweep_datasets(cfg) -> list[str]:
    """Dataset names of a composed config: the ``dataset`` values of its sweep plan (``params`` and
    ``rows``; with ``profile=reduced``, the ``reduced`` plan where there is one), else ``dataset.name``."""
    from treebench.config import plan_values, sweep_plan

    try:
        sweeper = cfg.hydra.sweeper
    except Exception:  # no hydra node
        sweeper = {}
    return plan_values(sweep_plan(sweeper, cfg.get("profile")), "dataset") or [
        str(cfg.dataset.name)
    ]


def fetch_datasets(
    names: Iterable[str],
    dataset_cfg: Callable[[str], object],
    data_dir: Path,
    mirror: str | None,
    console=None,
) -> list[tuple[str, str | None]]:
    """Download (or verify) and parse each dataset; return ``(name, error or None)`` per dataset."""
    from treebench.data import DataContext, load_dataset

    results = []
    with RichProgress(console) as progress:
        for name in names:
            ctx = DataContext(
                Path(data_dir),
                mirror,
                allow_fetch=True,
                progress=progress,
                log=(console.print if console is not None else None),
            )
            try:
                ds = load_dataset(dataset_cfg(name), ctx)
            except Exception as exc:  # reported per dataset; the others still run
                results.append((name, f"{type(exc).__name__}: {exc}"))
                if console is not None:
                    console.print(f"[red]{name}[/]: {type(exc).__name__}: {exc}")
                continue
            sizes = ", ".join(f"{k} {len(p)}" for k, p in ds.parts.items())
            width = ds.pooled().X.shape[1]
            if console is not None:
                console.print(f"[green]{name}[/]: ready ({sizes}; {width} features)")
            results.append((name, None))
    return results
