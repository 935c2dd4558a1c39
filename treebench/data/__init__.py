"""Datasets: sources (one module each), cache, split protocols and preprocessing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hydra.utils import instantiate
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
    """

    data_dir: Path
    mirror: str | None = None
    allow_fetch: bool = True


def load_dataset(cfg: DictConfig, ctx: DataContext) -> Dataset:
    """Load the dataset described by a ``conf/dataset`` node through its ``loader._target_``."""
    loader = OmegaConf.to_container(cfg.loader, resolve=True)
    ds = instantiate(loader, task=cfg.task, ctx=ctx, _convert_="all")
    if not isinstance(ds, Dataset):
        raise TypeError(f"loader {loader['_target_']} returned {type(ds).__name__}, not a Dataset")
    ds.name = cfg.name
    return ds
