"""Suites: named lists of datasets with their selection rule.

``treebench/conf/suite/<name>.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from treebench.errors import TreebenchError


class SuiteError(ValueError, TreebenchError):
    """An unknown suite or a suite file that cannot be used; the message names the fix."""


@dataclass(frozen=True)
class Suite:
    """A suite file: its datasets in run order and the ``dataset`` config they go into.

    ``dataset`` null: each name is a dataset config (``dataset=<name>``); else each name is given to
    that config (``dataset=pmlb dataset.name=<name>``). ``subset``: only the first that many of
    ``datasets`` run (the file lists them in a seeded random order), null = all.
    """

    name: str
    datasets: tuple[str, ...]
    dataset: str | None = None
    subset: int | None = None

    @property
    def members(self) -> tuple[str, ...]:
        """The datasets the suite runs: the first ``subset`` of ``datasets`` (all without one)."""
        return self.datasets if self.subset is None else self.datasets[: self.subset]

    def sliced(self, subset: int | None) -> Suite:
        """Return the suite running its first ``subset`` datasets instead (None: all)."""
        if subset is not None and subset < 1:
            raise SuiteError(f"suite.subset must be a positive count or null, got {subset}")
        return Suite(self.name, self.datasets, self.dataset, subset)

    def overrides(self, name: str) -> list[str]:
        """Return the overrides that select dataset ``name`` of the suite."""
        if self.dataset is None:
            return [f"dataset={name}"]
        return [f"dataset={self.dataset}", f"dataset.name={name}"]


def names(dirs) -> list[str]:
    """Every suite in the config directories ``dirs``, sorted."""
    return sorted({p.stem for d in dirs for p in (Path(d) / "suite").glob("*.yaml")})


@cache
def _load(name: str, dirs: tuple) -> Suite:
    import yaml

    for d in reversed(dirs):  # a user's directory (added later) wins
        path = Path(d) / "suite" / f"{name}.yaml"
        if path.is_file():
            conf = yaml.safe_load(path.read_text()) or {}
            break
    else:
        raise SuiteError(f"no suite {name!r}; the suites are: {', '.join(names(dirs))}")
    if not conf.get("datasets"):
        raise SuiteError(f"suite {name!r} ({path}) lists no datasets")
    subset = conf.get("subset")
    return Suite(
        name=name,
        datasets=tuple(str(n) for n in conf["datasets"]),
        dataset=conf.get("dataset"),
        subset=None if subset is None else int(subset),
    )


def load(name: str, dirs) -> Suite:
    """Return the suite ``name``.

    ``<dir>/suite/<name>.yaml`` of the config directories ``dirs``
    (:func:`treebench.config.search_dirs`: the package's, then ``hydra.searchpath`` ones).
    """
    return _load(str(name), tuple(str(d) for d in dirs))
