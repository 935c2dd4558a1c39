"""Helpers shared by the data tests: where the offline mirror is and what its manifest says."""

from __future__ import annotations

import csv
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def find_mirror() -> Path | None:
    """TREEBENCH_MIRROR.

    Else a ``shared/data`` directory next to the repository (or one level up).
    """
    env = os.environ.get("TREEBENCH_MIRROR")
    if env and "://" not in env and Path(env).is_dir():
        return Path(env)
    for base in (REPO.parent, REPO.parent.parent):
        cand = base / "shared" / "data"
        if (cand / "MANIFEST.csv").is_file():
            return cand
    return None


MIRROR = find_mirror()


def manifest() -> dict[str, dict]:
    if MIRROR is None or not (MIRROR / "MANIFEST.csv").is_file():
        return {}
    with open(MIRROR / "MANIFEST.csv", newline="") as fh:
        return {r["relative_path"]: r for r in csv.DictReader(fh)}
