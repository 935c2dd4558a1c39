"""Penn ML Benchmarks ``.tsv.gz`` files and the index of the mirror's 259 PMLB datasets.

The files are tab-separated with a header row, the target column ``target`` and categorical
values integer-coded.
"""

from __future__ import annotations

import csv
import difflib
from functools import cache
from pathlib import Path

from treebench.data.base import Dataset
from treebench.data.sources import uci

#: one row per PMLB dataset of the mirror (``scripts/make_pmlb_index.py`` writes it from
#: MANIFEST.csv), shipped with the package's configs
INDEX_PATH = Path(__file__).resolve().parents[2] / "conf" / "suite" / "pmlb_index.csv"
_INTS = ("n_rows", "n_features", "n_classes")


@cache
def index() -> dict[str, dict]:
    """Return name -> ``{task, n_rows, n_features, n_classes, path, url, sha256}``.

    ``n_classes`` is None for regression; read from :data:`INDEX_PATH` once.
    """
    with open(INDEX_PATH, newline="") as f:
        rows = list(csv.DictReader(f))
    return {
        r["name"]: {k: (int(v) if v else None) if k in _INTS else v for k, v in r.items()}
        for r in rows
    }


def entry(name: str) -> dict:
    """Return the index row of PMLB dataset ``name``.

    An unknown name is an error naming the close ones.
    """
    rows = index()
    if name not in rows:
        close = difflib.get_close_matches(str(name), rows, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(
            f"no PMLB dataset {name!r} in the mirror's index ({len(rows)} datasets, "
            f"{INDEX_PATH}){hint}"
        )
    return rows[name]


def field(name: str, key: str):
    """``${pmlb:<name>,<key>}`` in a dataset config.

    One field of :func:`entry`, or a block made of them (``shape``, ``files``, ``description``), so
    that a config resolves few interpolations (a planned sweep resolves each job's).
    """
    e = entry(str(name))
    if key == "shape":
        return {k: e[f] for k, f in (("n_samples", "n_rows"), ("n_features", "n_features"))} | {
            "n_classes": e["n_classes"]
        }
    if key == "files":
        return {"all": {k: e[k] for k in ("url", "path", "sha256")}}
    if key == "description":
        return f"PMLB {name}, {e['n_rows']} x {e['n_features']}, {e['task']}"
    return e[str(key)]


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
