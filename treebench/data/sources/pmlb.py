"""Penn ML Benchmarks ``.tsv.gz`` files: tab-separated, header row, target column ``target``,
categorical values integer-coded."""

from __future__ import annotations

from treebench.data.base import Dataset
from treebench.data.sources import uci


def load(
    files: dict,
    task: str,
    target: str = "target",
    categorical: list | str = (),
    drop: list = (),
    name: str = "pmlb",
    ctx=None,
) -> Dataset:
    """Load PMLB files (one per part, usually ``all``).

    ``categorical`` lists columns (or ``all``) the preprocessor should encode; PMLB stores them as
    integers, so without it they are treated as ordinal numbers.
    """
    return uci.load(
        files,
        task,
        target=target,
        sep="\t",
        header=True,
        categorical=categorical,
        drop=drop,
        na_values=["?", "nan", "NaN"],
        name=name,
        source="pmlb",
        ctx=ctx,
    )
