"""Datasets: sources (one module each), cache, split protocols and preprocessing."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import get_method
from omegaconf import DictConfig, OmegaConf

from treebench.data.base import DataError, Dataset, DatasetUnavailableError, Part

__all__ = [
    "DataContext",
    "DataError",
    "Dataset",
    "DatasetUnavailableError",
    "Part",
    "load_dataset",
]


@dataclass
class DataContext:
    """Where data lives and whether loaders may download.

    Parameters
    ----------
    data_dir : Path
        The download cache (``TREEBENCH_DATA_DIR``).
    mirror : str or None
        A directory or URL that mirrors the upstream files by relative path (``TREEBENCH_MIRROR``).
    allow_fetch : bool
        Loaders may fetch missing files; otherwise they raise with the exact fetch command.
    dataset : str, optional
        The dataset being loaded (set by :func:`load_dataset`; used in messages and cache names).
    progress : treebench.data.cache.Progress, optional
        Download progress callbacks (the CLI's ``fetch`` shows a progress bar).
    parse_cache : bool
        Keep parsed arrays under ``<data_dir>/parsed`` keyed by the files' sha256.
    log : callable, optional
        Where warnings go (e.g. a corrupted cached file being refetched); default ``warnings``.
    """

    data_dir: Path
    mirror: str | None = None
    allow_fetch: bool = True
    dataset: str | None = None
    progress: Any = None
    parse_cache: bool = True
    log: Any = None

    def __post_init__(self):
        self.data_dir = Path(self.data_dir)
        if self.mirror is not None and str(self.mirror) in ("", "null", "None"):
            self.mirror = None


def load_dataset(cfg: DictConfig, ctx: DataContext) -> Dataset:
    """Load the dataset of a ``treebench/conf/dataset`` node through its ``loader._target_``."""
    loader = OmegaConf.to_container(cfg.loader, resolve=True)
    target = loader.pop("_target_")
    ctx = dataclasses.replace(ctx, dataset=str(cfg.name))
    # called directly (not through hydra's instantiate, which would turn ctx into a dict)
    ds = get_method(target)(**loader, task=cfg.task, ctx=ctx)
    if not isinstance(ds, Dataset):
        raise TypeError(f"loader {target} returned {type(ds).__name__}, not a Dataset")
    ds.name = cfg.name
    return ds
