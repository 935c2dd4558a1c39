"""Structured-config schema of ``treebench/conf/config.yaml``.

Typos and wrong types fail at compose time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


class Profile(Enum):
    """full = the paper's protocol; reduced = fewer seeds/iterations for laptops and CI."""

    full = "full"
    reduced = "reduced"


@dataclass
class MetricsConf:
    """``metrics``: the scores recorded per task."""

    classification: list[str] = field(default_factory=lambda: ["accuracy"])
    regression: list[str] = field(default_factory=lambda: ["r2", "rmse"])


@dataclass
class PathsConf:
    """``paths``: where outputs, the store, the ledger and the data are."""

    outputs: str = MISSING
    store: str = MISSING
    results: str = MISSING
    data: str = MISSING


@dataclass
class DataConf:
    """``data``: the offline mirror and whether missing files are downloaded."""

    mirror: str | None = None
    fetch: bool = True


class Strategy(Enum):
    """How ``tune`` searches.

    Scikit-learn's ``HalvingRandomSearchCV``, ``RandomizedSearchCV`` or ``GridSearchCV`` (every
    combination of a search: block of lists).
    """

    halving_random = "halving_random"
    random = "random"
    grid = "grid"


@dataclass
class TuneConf:
    """``tune``: tuning on the training part (``treebench/conf/tune/``; null strategy = none)."""

    strategy: Strategy | None = None
    n_candidates: int | None = None
    cv: int | None = None
    factor: float | None = None


@dataclass
class TreebenchConf:
    """The root config: what one job runs."""

    method: Any = MISSING
    dataset: Any = MISSING
    split: Any = None
    tune: TuneConf = field(default_factory=TuneConf)
    reference: Any = None
    suite: Any = None
    seed: int = 0
    seeds: list[int] | None = None
    fold: int | None = None
    threads: int | None = None
    experiment_name: str = "adhoc"
    profile: Profile = Profile.full
    save_model: bool = False
    checkpoint_every: float | None = 120.0
    ledger: bool | None = None
    # an experiment's values for method defaults that scale with the data, by method family
    # (``${paper_default:e2edt.batch_size,auto}`` in a method file reads them)
    paper_defaults: dict[str, Any] = field(default_factory=dict)
    metrics: MetricsConf = field(default_factory=MetricsConf)
    paths: PathsConf = field(default_factory=PathsConf)
    data: DataConf = field(default_factory=DataConf)


def _file_sha256(path: str) -> str:
    from treebench.data.sources.local import file_sha256

    return file_sha256(path)


def _file_stem(path: str) -> str:
    from pathlib import Path

    name = Path(str(path)).name
    return name.split(".", 1)[0] or name


def _path_part(name) -> str:
    from treebench.files import path_part

    return path_part(name)


def _pmlb(name, key):
    """``${pmlb:<name>,<field>}``.

    A field of the mirror's PMLB index (task, n_rows, url, sha256 ...).
    """
    from treebench.data.sources.pmlb import field

    return field(name, key)


def _by_profile(full, reduced, *, _root_):
    """``${by_profile:<full>,<reduced>}``.

    A method's value under ``profile=full`` or ``reduced``.
    """
    profile = _root_.get("profile")
    return reduced if getattr(profile, "value", profile) == "reduced" else full


def _paper_default(path, default, *, _root_):
    """``${paper_default:<family>.<param>,<default>}``.

    The value an experiment states under ``paper_defaults`` (the paper's setting its runs were made
    with), else the method's own default.
    """
    stated = _root_.get("paper_defaults") or {}
    family, _, param = str(path).partition(".")
    values = stated.get(family) or {}
    return values[param] if param in values else default


def register_schema() -> None:
    """Store the schema as ``treebench_schema`` and register the resolvers configs use.

    The schema is the first entry of the config's defaults list. The resolvers: ``file_stem``,
    ``file_sha256`` of a user's file, ``path_part`` for a name that becomes a directory
    (``dataset.name=../..`` stays inside), ``pmlb`` for a field of the PMLB index, ``by_profile``
    for a method's cheaper setting under ``profile=reduced``, and ``paper_default`` for a paper's
    value an experiment states in place of a data-scaled default.
    """
    ConfigStore.instance().store(name="treebench_schema", node=TreebenchConf)
    for name, fn in (
        ("file_sha256", _file_sha256),
        ("file_stem", _file_stem),
        ("path_part", _path_part),
    ):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn, use_cache=True)
    if not OmegaConf.has_resolver(
        "pmlb"
    ):  # not cached: a planned sweep changes dataset.name in place
        OmegaConf.register_new_resolver("pmlb", _pmlb)
    if not OmegaConf.has_resolver("by_profile"):
        OmegaConf.register_new_resolver("by_profile", _by_profile)
    if not OmegaConf.has_resolver("paper_default"):
        OmegaConf.register_new_resolver("paper_default", _paper_default)
